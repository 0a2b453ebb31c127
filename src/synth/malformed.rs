//! `malformed`: damaged frames of every header kind among good RoCE traffic, for the
//! decoder's "never panic, say where and why" contract. Each damage comes in the forms
//! that occur in practice: cut by the capture (snaplen: captured < wire length, so
//! *truncated*), a frame physically shorter than its headers say, or length / code
//! fields that contradict the protocol (both *malformed*).
//!
//! Guarantees: every case is built from a correct frame (made by [`super::frame`]) by one
//! documented change, and decodes to the stop kind and layer listed with it (a unit test
//! holds the decoder to that list); every case is shorter than the smallest snaplen, so
//! no `--snaplen` can turn a malformed frame into a merely truncated one. All cases
//! appear at least once whatever `--packets` is.

use super::frame::{self, Layout, Link, Path, Pkt, Vlan};
use super::out::Out;
use super::rc::{Fault, Op};
use super::rng::Rng;
use super::traffic::{conn, path, v4};
use dissectors::ip::ipv4_checksum;
use dissectors::{
    AethRepr, ArpOp, ArpRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, DethRepr, Ecn, IethRepr,
    ImmDtRepr, Layer, Msn, Opcode, PKey, PauseRepr, Psn, Qpn, RethRepr, StopKind, XrcethRepr,
};
use std::io;
use std::net::Ipv4Addr;

/// One damaged frame and what the decoder must say about it.
pub struct Case {
    pub what: &'static str,
    pub data: Vec<u8>,
    pub orig_len: usize,
    pub kind: StopKind,
    pub layer: Layer,
}

/// A correct frame and where its parts are.
struct Base {
    f: Vec<u8>,
    lay: Layout,
}

impl Base {
    fn new(path: &Path, pkt: Pkt) -> Base {
        let mut f = Vec::new();
        let lay = frame::roce(&mut f, path, path.ecn, &pkt);
        Base { f, lay }
    }

    /// The first `n` bytes, captured as a frame that really was that short.
    fn short(&self, n: usize) -> (Vec<u8>, usize) {
        (self.f[..n].to_vec(), n)
    }

    /// The first `n` bytes of the full frame, as a snaplen cut leaves them.
    fn cut(&self, n: usize) -> (Vec<u8>, usize) {
        (self.f[..n].to_vec(), self.f.len())
    }

    /// The frame re-framed so that BTH..end is `tlen` bytes, with the IPv4 total length,
    /// UDP length and IPv4 checksum (or the GRH payload length) saying so.
    fn relen(&self, tlen: usize) -> (Vec<u8>, usize) {
        let mut f = self.f.clone();
        f.resize(self.lay.bth + tlen, 0);
        if f[12] == 0x89 && f[13] == 0x15 {
            let grh = self.lay.net;
            f[grh + 4..grh + 6].copy_from_slice(&(tlen as u16).to_be_bytes());
        } else {
            let ip = self.lay.net;
            let udp = self.lay.bth - 8;
            f[udp + 4..udp + 6].copy_from_slice(&((8 + tlen) as u16).to_be_bytes());
            f[ip + 2..ip + 4].copy_from_slice(&((28 + tlen) as u16).to_be_bytes());
            fix_ipv4(&mut f, ip);
        }
        let n = f.len();
        (f, n)
    }
}

fn fix_ipv4(f: &mut [u8], ip: usize) {
    f[ip + 10] = 0;
    f[ip + 11] = 0;
    let c = ipv4_checksum(&f[ip..ip + 20]);
    f[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
}

fn bth(op: u8, qp: u32, psn: u32) -> BthRepr {
    BthRepr {
        opcode: Opcode(op),
        pkey: PKey(0xffff),
        dest_qp: Qpn(qp),
        psn: Psn(psn),
        ack_req: true,
        ..Default::default()
    }
}

/// Every damaged frame of the scenario, in order.
pub fn cases() -> Vec<Case> {
    let p = path(v4(198, 18, 0, 1), v4(198, 18, 0, 2), 0xc001);
    let r = path(v4(198, 18, 0, 2), v4(198, 18, 0, 1), 0xc002);
    let reth = Some(RethRepr {
        va: 0x7f00_0000_0000,
        rkey: 0x2222,
        dma_len: 16,
    });
    let aeth = Some(AethRepr {
        syndrome: 0x1f,
        msn: Msn(1),
    });
    let pl = |b: BthRepr| Pkt {
        bth: b,
        payload_len: 16,
        fill: 0x42,
        ..Default::default()
    };
    let write_first = Base::new(
        &p,
        Pkt {
            reth,
            ..pl(bth(0x06, 0x101, 10))
        },
    );
    let write_imm = Base::new(
        &p,
        Pkt {
            reth,
            immdt: Some(ImmDtRepr { data: 9 }),
            ..pl(bth(0x0B, 0x101, 11))
        },
    );
    let ack = Base::new(
        &r,
        Pkt {
            aeth,
            ..Default::default()
        }
        .with(bth(0x11, 0x201, 11)),
    );
    let send_inv = Base::new(
        &p,
        Pkt {
            ieth: Some(IethRepr { rkey: 5 }),
            ..pl(bth(0x17, 0x101, 12))
        },
    );
    let read = Base::new(
        &p,
        Pkt {
            reth,
            ..Default::default()
        }
        .with(bth(0x0C, 0x101, 13)),
    );
    let fadd = Base::new(
        &p,
        Pkt {
            atomic_eth: Some(AtomicEthRepr {
                va: 0x1000,
                rkey: 0x2222,
                swap_add: 1,
                compare: 0,
            }),
            ..Default::default()
        }
        .with(bth(0x14, 0x101, 14)),
    );
    let aack = Base::new(
        &r,
        Pkt {
            aeth,
            atomic_ack_eth: Some(AtomicAckEthRepr { orig_rem_data: 3 }),
            ..Default::default()
        }
        .with(bth(0x12, 0x201, 14)),
    );
    let ud = Base::new(
        &p,
        Pkt {
            deth: Some(DethRepr {
                qkey: 0x1111_1111,
                src_qp: Qpn(0x51),
            }),
            ..pl(bth(0x64, 0x61, 1))
        },
    );
    let xrc = Base::new(
        &p,
        Pkt {
            xrceth: Some(XrcethRepr {
                xrc_srq: Qpn(0xe01),
            }),
            ..pl(bth(0xA4, 0xd01, 2))
        },
    );
    let mut cp = r;
    cp.dscp = 48;
    cp.ecn = Ecn::NotEct;
    let cnp = Base::new(
        &cp,
        Pkt::default().with(BthRepr {
            opcode: Opcode::CNP,
            pkey: PKey(0xffff),
            becn: true,
            dest_qp: Qpn(0x201),
            ..Default::default()
        }),
    );
    let mut vp = p;
    vp.link = Link::Ethernet {
        vlan: Some(Vlan { vid: 100, pcp: 3 }),
    };
    let vlan = Base::new(
        &vp,
        Pkt {
            reth,
            ..pl(bth(0x0A, 0x101, 15))
        },
    );
    let mut v1p = path(v4(198, 51, 100, 10), v4(198, 51, 100, 20), 0);
    v1p.encap = frame::Encap::V1;
    let v1 = Base::new(
        &v1p,
        Pkt {
            reth,
            ..pl(bth(0x0A, 0xa11, 16))
        },
    );
    let mut arp = Vec::new();
    let a = ArpRepr::ethernet(
        ArpOp::Request,
        frame::mac_for(p.src),
        Ipv4Addr::new(198, 18, 0, 1),
        [0; 6],
        Ipv4Addr::new(198, 18, 0, 2),
    );
    frame::arp(
        &mut arp,
        p.src_mac,
        frame::BROADCAST,
        &Link::Ethernet { vlan: None },
        &a,
        true,
    );
    let mut pfc = Vec::new();
    let pq = PauseRepr::Pfc {
        enable: 0x08,
        quanta: [0, 0, 0, 0xffff, 0, 0, 0, 0],
    };
    frame::pause(&mut pfc, p.dst_mac, &pq);

    let net = write_first.lay.net;
    let udp = write_first.lay.bth - 8;
    let b = |x: &Base| x.lay.bth;
    use Layer as L;
    use StopKind::{Malformed as M, Truncated as T};
    let mut v: Vec<Case> = Vec::new();
    let mut add = |what, (data, orig_len): (Vec<u8>, usize), kind, layer| {
        v.push(Case {
            what,
            data,
            orig_len,
            kind,
            layer,
        })
    };
    let edit = |x: &Base, f: &dyn Fn(&mut Vec<u8>)| {
        let mut d = x.f.clone();
        f(&mut d);
        let n = d.len();
        (d, n)
    };

    add(
        "Ethernet header cut by the capture",
        write_first.cut(10),
        T,
        L::Ethernet,
    );
    add(
        "frame shorter than an Ethernet header",
        ack.short(10),
        M,
        L::Ethernet,
    );
    add("802.1Q tag cut by the capture", vlan.cut(16), T, L::Vlan);
    add("IP version 7", edit(&ack, &|d| d[net] = 0x75), M, L::Ip);
    add(
        "IPv4 header length 12 bytes (IHL 3)",
        edit(&ack, &|d| {
            d[net] = 0x43;
            fix_ipv4(d, net);
        }),
        M,
        L::Ip,
    );
    add(
        "frame ends inside the IPv4 header",
        ack.short(net + 12),
        M,
        L::Ip,
    );
    add(
        "IPv4 header cut by the capture",
        ack.cut(net + 12),
        T,
        L::Ip,
    );
    add(
        "IPv4 total length beyond the end of the frame",
        edit(&ack, &|d| {
            let tl = u16::from_be_bytes([d[net + 2], d[net + 3]]) + 40;
            d[net + 2..net + 4].copy_from_slice(&tl.to_be_bytes());
            let ul = u16::from_be_bytes([d[udp + 4], d[udp + 5]]) + 40;
            d[udp + 4..udp + 6].copy_from_slice(&ul.to_be_bytes());
            fix_ipv4(d, net);
        }),
        M,
        L::Payload,
    );
    add(
        "UDP length 4, shorter than its header",
        edit(&ack, &|d| d[udp + 5] = 4),
        M,
        L::Udp,
    );
    add(
        "UDP length beyond the IP payload",
        edit(&ack, &|d| {
            let ul = u16::from_be_bytes([d[udp + 4], d[udp + 5]]) + 100;
            d[udp + 4..udp + 6].copy_from_slice(&ul.to_be_bytes());
        }),
        M,
        L::Udp,
    );
    add(
        "IPv4 total length leaves 4 bytes for the UDP header",
        edit(&ack, &|d| {
            d.truncate(udp + 4);
            d[net + 2..net + 4].copy_from_slice(&24u16.to_be_bytes());
            fix_ipv4(d, net);
        }),
        M,
        L::Udp,
    );
    add("UDP header cut by the capture", ack.cut(udp + 4), T, L::Udp);
    add("lengths leave 6 bytes for the BTH", ack.relen(6), M, L::Bth);
    add("BTH cut by the capture", ack.cut(b(&ack) + 6), T, L::Bth);
    add(
        "no room for the ICRC after the BTH",
        ack.relen(14),
        M,
        L::Icrc,
    );
    add(
        "BTH PadCnt 3 on an ACK, which has no payload",
        edit(&ack, &|d| d[b(&ack) + 1] |= 0x30),
        M,
        L::Payload,
    );
    add(
        "RDMA READ Request carrying 8 payload bytes",
        read.relen(read.f.len() - b(&read) + 8),
        M,
        L::Payload,
    );
    add(
        "lengths too short for the RETH",
        write_first.relen(12 + 8 + 4),
        M,
        L::Reth,
    );
    add(
        "RETH cut by the capture",
        write_first.cut(b(&write_first) + 20),
        T,
        L::Reth,
    );
    add(
        "frame ends inside the AETH, its IP length claiming the whole packet (a capture that recorded no wire length)",
        ack.short(b(&ack) + 14),
        T,
        L::Aeth,
    );
    add("AETH cut by the capture", ack.cut(b(&ack) + 14), T, L::Aeth);
    add(
        "lengths too short for the ImmDt",
        write_imm.relen(12 + 16 + 3),
        M,
        L::ImmDt,
    );
    add(
        "ImmDt cut by the capture",
        write_imm.cut(b(&write_imm) + 30),
        T,
        L::ImmDt,
    );
    add(
        "frame ends inside the IETH, its IP length claiming the whole packet (a capture that recorded no wire length)",
        send_inv.short(b(&send_inv) + 14),
        T,
        L::Ieth,
    );
    add(
        "IETH cut by the capture",
        send_inv.cut(b(&send_inv) + 14),
        T,
        L::Ieth,
    );
    add(
        "lengths too short for the AtomicETH",
        fadd.relen(12 + 14 + 4),
        M,
        L::AtomicEth,
    );
    add(
        "AtomicETH cut by the capture",
        fadd.cut(b(&fadd) + 26),
        T,
        L::AtomicEth,
    );
    add(
        "lengths too short for the AtomicAckETH",
        aack.relen(12 + 4 + 4),
        M,
        L::AtomicAckEth,
    );
    add(
        "AtomicAckETH cut by the capture",
        aack.cut(b(&aack) + 20),
        T,
        L::AtomicAckEth,
    );
    add(
        "lengths too short for the DETH",
        ud.relen(12 + 4),
        M,
        L::Deth,
    );
    add("DETH cut by the capture", ud.cut(b(&ud) + 16), T, L::Deth);
    add(
        "frame ends inside the XRCETH, its IP length claiming the whole packet (a capture that recorded no wire length)",
        xrc.short(b(&xrc) + 14),
        T,
        L::Xrceth,
    );
    add(
        "XRCETH cut by the capture",
        xrc.cut(b(&xrc) + 14),
        T,
        L::Xrceth,
    );
    add(
        "lengths too short for the CNP body",
        cnp.relen(12 + 8 + 4),
        M,
        L::Cnp,
    );
    add(
        "CNP body cut by the capture",
        cnp.cut(b(&cnp) + 20),
        T,
        L::Cnp,
    );
    add(
        "frame ends inside the GRH",
        v1.short(v1.lay.net + 20),
        M,
        L::Grh,
    );
    add("GRH cut by the capture", v1.cut(v1.lay.net + 20), T, L::Grh);
    add(
        "GRH payload length too short for a BTH",
        v1.relen(8),
        M,
        L::Bth,
    );
    add(
        "GRH payload length beyond the end of the frame (as a capture that recorded no wire length leaves it)",
        edit(&v1, &|d| {
            let g = v1.lay.net;
            let pl = u16::from_be_bytes([d[g + 4], d[g + 5]]) + 200;
            d[g + 4..g + 6].copy_from_slice(&pl.to_be_bytes());
        }),
        T,
        L::Payload,
    );
    let arp_len = arp.len();
    add(
        "ARP hardware address length 21",
        {
            let mut d = arp.clone();
            d[14 + 4] = 21;
            (d, arp_len)
        },
        M,
        L::Arp,
    );
    add(
        "frame ends inside the ARP message",
        (arp[..34].to_vec(), 34),
        M,
        L::Arp,
    );
    add(
        "ARP message cut by the capture",
        (arp[..34].to_vec(), arp_len),
        T,
        L::Arp,
    );
    add(
        "frame ends inside the PFC frame",
        (pfc[..24].to_vec(), 24),
        M,
        L::MacControl,
    );
    add(
        "PFC frame cut by the capture",
        (pfc[..24].to_vec(), pfc.len()),
        T,
        L::MacControl,
    );
    v
}

/// `Pkt { aeth, ..Default::default() }.with(bth)`: a header-only template and its BTH.
trait With {
    fn with(self, bth: BthRepr) -> Self;
}

impl With for Pkt {
    fn with(self, bth: BthRepr) -> Pkt {
        Pkt { bth, ..self }
    }
}

pub fn malformed(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let cases = cases();
    let mut good = conn(
        rng,
        v4(198, 18, 0, 1),
        v4(198, 18, 0, 2),
        0x000201,
        0x000101,
        1024,
    );
    out.fact(
        "damaged_frames",
        cases
            .iter()
            .map(|c| format!("{}: {} at {}", c.what, c.kind.name(), c.layer.name()))
            .collect::<Vec<_>>(),
    );
    out.notes.push(
        "Damaged frames carry a pcapng comment (with --pcapng) saying what was done to \
         them. Cut frames (captured length < wire length) are 'truncated'; frames whose \
         bytes contradict the protocol are 'malformed'. The protocol counters (NAKs, \
         CE marks, per-opcode counts) count the undamaged frames only, and CNPs also the \
         cut ones whose BTH survived. A cut frame whose BTH survived is each time on a \
         QP of its own with the next PSN of that QP: its PSN counts (as it does on a real \
         stack), and the catalogue must not look like loss on a connection."
            .into(),
    );
    // Per case: where its BTH lies when it is a cut frame that keeps one (its QP and PSN
    // are set at each emission), and whether it is a CNP.
    let bth_of: Vec<Option<(usize, bool)>> = cases
        .iter()
        .map(|c| {
            let d = dissectors::decode(
                dissectors::LinkType::Ethernet,
                &c.data,
                c.orig_len as u32,
                &dissectors::Config::default(),
            );
            d.roce.filter(|_| c.kind == StopKind::Truncated).map(|r| {
                (
                    r.bth_offset as usize,
                    r.operation == Some(dissectors::Operation::Cnp),
                )
            })
        })
        .collect();
    let mut emitted = vec![0u32; cases.len()];
    let mut data = Vec::new();
    let mut next = 0usize;
    while next < cases.len() || out.frames() < target {
        let len = *rng.pick(&[16u32, 200, 1024, 2500]);
        let op = if rng.chance(1, 2) {
            Op::Write { len, imm: None }
        } else {
            Op::Send {
                len,
                imm: None,
                inv: None,
            }
        };
        good.exchange(out, rng, op, Fault::None)?;
        for _ in 0..2 {
            let i = next % cases.len();
            let c = &cases[i];
            next += 1;
            let ts = out.now + rng.range(500, 2_000);
            data.clear();
            data.extend_from_slice(&c.data);
            if let Some((at, is_cnp)) = bth_of[i] {
                let qp = 0x30_0000 + i as u32;
                data[at + 5..at + 8].copy_from_slice(&qp.to_be_bytes()[1..]);
                data[at + 9..at + 12].copy_from_slice(&emitted[i].to_be_bytes()[1..]);
                emitted[i] += 1;
                if is_cnp {
                    out.obs.cnp += 1;
                }
            }
            out.damaged(ts, &data, c.orig_len, c.kind == StopKind::Truncated, c.what)?;
        }
        out.now += rng.range(500, 3_000);
    }
    good.finish(out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dissectors::{decode, Config, LinkType};

    #[test]
    fn every_case_decodes_to_its_listed_stop() {
        let cfg = Config::default();
        let cs = cases();
        assert!(cs.len() >= 40);
        for c in &cs {
            assert!(
                c.data.len() <= super::super::MIN_SNAPLEN as usize,
                "{}",
                c.what
            );
            let d = decode(LinkType::Ethernet, &c.data, c.orig_len as u32, &cfg);
            assert_eq!(
                (d.stop.kind, d.stop.layer),
                (c.kind, c.layer),
                "{}: {} ({})",
                c.what,
                d.stop,
                d.stop.why
            );
            // A frame the capture cut is never "malformed"; a malformed one was whole.
            if c.data.len() < c.orig_len {
                assert_eq!(c.kind, StopKind::Truncated, "{}", c.what);
            }
            if c.kind == StopKind::Malformed {
                assert_eq!(c.data.len(), c.orig_len, "{}", c.what);
            }
        }
    }
}
