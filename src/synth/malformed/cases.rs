//! The damaged frames: each built from a correct frame (made by `super::super::frame`)
//! by one documented change, with the stop kind and layer the decoder must give it.

use crate::synth::frame::{self, Layout, Link, Path, Pkt, Vlan};
use crate::synth::traffic::{path, v4};
use dissectors::ip::ipv4_checksum;
use dissectors::{
    AethRepr, ArpOp, ArpRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, DethRepr, Ecn, IethRepr,
    ImmDtRepr, Layer, Msn, Opcode, PKey, PauseRepr, Psn, Qpn, RethRepr, StopKind, XrcethRepr,
};
use std::net::Ipv4Addr;
use Layer as L;
use StopKind::{Malformed as M, Truncated as T};

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
    let rc = RcFrames::new(&p, &r);
    let other = OtherFrames::new(&p, &r);
    let mut v = Cases(Vec::new());
    link_ip_udp(&mut v, &rc, &other);
    transport(&mut v, &rc);
    more_transport(&mut v, &rc, &other);
    grh_arp_pfc(&mut v, &other);
    v.0
}

/// The payload-carrying template with BTH `b`.
fn with_payload(b: BthRepr) -> Pkt {
    Pkt {
        bth: b,
        payload_len: 16,
        fill: 0x42,
        ..Default::default()
    }
}

const RETH: Option<RethRepr> = Some(RethRepr {
    va: 0x7f00_0000_0000,
    rkey: 0x2222,
    dma_len: 16,
});

const AETH: Option<AethRepr> = Some(AethRepr {
    syndrome: 0x1f,
    msn: Msn(1),
});

/// Correct RC frames: the requests and responses every header kind is damaged in.
struct RcFrames {
    write_first: Base,
    write_imm: Base,
    ack: Base,
    send_inv: Base,
    read: Base,
    fadd: Base,
    aack: Base,
}

impl RcFrames {
    fn new(p: &Path, r: &Path) -> Self {
        let (p, r) = (*p, *r);
        let (reth, aeth, pl) = (RETH, AETH, with_payload);
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
        RcFrames {
            write_first,
            write_imm,
            ack,
            send_inv,
            read,
            fadd,
            aack,
        }
    }
}

/// Correct frames of the other kinds: UD, XRC, CNP, 802.1Q, RoCE v1, ARP and PFC.
struct OtherFrames {
    ud: Base,
    xrc: Base,
    cnp: Base,
    vlan: Base,
    v1: Base,
    arp: Vec<u8>,
    pfc: Vec<u8>,
}

impl OtherFrames {
    fn new(p: &Path, r: &Path) -> Self {
        let (p, r) = (*p, *r);
        let (reth, pl) = (RETH, with_payload);
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

        OtherFrames {
            ud,
            xrc,
            cnp,
            vlan,
            v1,
            arp,
            pfc,
        }
    }
}

/// The cases, as they are added.
struct Cases(Vec<Case>);

impl Cases {
    fn add(
        &mut self,
        what: &'static str,
        (data, orig_len): (Vec<u8>, usize),
        kind: StopKind,
        layer: Layer,
    ) {
        self.0.push(Case {
            what,
            data,
            orig_len,
            kind,
            layer,
        })
    }
}

/// `x` with one change, as a frame that really was that long.
fn edit(x: &Base, f: &dyn Fn(&mut Vec<u8>)) -> (Vec<u8>, usize) {
    let mut d = x.f.clone();
    f(&mut d);
    let n = d.len();
    (d, n)
}

/// Where `x`'s BTH starts.
fn b(x: &Base) -> usize {
    x.lay.bth
}

/// Ethernet, 802.1Q, IPv4 and UDP damaged.
fn link_ip_udp(v: &mut Cases, rc: &RcFrames, other: &OtherFrames) {
    let (ack, write_first, vlan) = (&rc.ack, &rc.write_first, &other.vlan);
    let net = write_first.lay.net;
    let udp = write_first.lay.bth - 8;
    v.add(
        "Ethernet header cut by the capture",
        write_first.cut(10),
        T,
        L::Ethernet,
    );
    v.add(
        "frame shorter than an Ethernet header",
        ack.short(10),
        M,
        L::Ethernet,
    );
    v.add("802.1Q tag cut by the capture", vlan.cut(16), T, L::Vlan);
    v.add("IP version 7", edit(ack, &|d| d[net] = 0x75), M, L::Ip);
    v.add(
        "IPv4 header length 12 bytes (IHL 3)",
        edit(ack, &|d| {
            d[net] = 0x43;
            fix_ipv4(d, net);
        }),
        M,
        L::Ip,
    );
    v.add(
        "frame ends inside the IPv4 header",
        ack.short(net + 12),
        M,
        L::Ip,
    );
    v.add(
        "IPv4 header cut by the capture",
        ack.cut(net + 12),
        T,
        L::Ip,
    );
    v.add(
        "IPv4 total length beyond the end of the frame",
        edit(ack, &|d| {
            let tl = u16::from_be_bytes([d[net + 2], d[net + 3]]) + 40;
            d[net + 2..net + 4].copy_from_slice(&tl.to_be_bytes());
            let ul = u16::from_be_bytes([d[udp + 4], d[udp + 5]]) + 40;
            d[udp + 4..udp + 6].copy_from_slice(&ul.to_be_bytes());
            fix_ipv4(d, net);
        }),
        M,
        L::Payload,
    );
    v.add(
        "UDP length 4, shorter than its header",
        edit(ack, &|d| d[udp + 5] = 4),
        M,
        L::Udp,
    );
    v.add(
        "UDP length beyond the IP payload",
        edit(ack, &|d| {
            let ul = u16::from_be_bytes([d[udp + 4], d[udp + 5]]) + 100;
            d[udp + 4..udp + 6].copy_from_slice(&ul.to_be_bytes());
        }),
        M,
        L::Udp,
    );
    v.add(
        "IPv4 total length leaves 4 bytes for the UDP header",
        edit(ack, &|d| {
            d.truncate(udp + 4);
            d[net + 2..net + 4].copy_from_slice(&24u16.to_be_bytes());
            fix_ipv4(d, net);
        }),
        M,
        L::Udp,
    );
    v.add("UDP header cut by the capture", ack.cut(udp + 4), T, L::Udp);
}

/// The BTH, the payload, the RETH and the AETH damaged.
fn transport(v: &mut Cases, rc: &RcFrames) {
    let (write_first, ack, read) = (&rc.write_first, &rc.ack, &rc.read);
    v.add("lengths leave 6 bytes for the BTH", ack.relen(6), M, L::Bth);
    v.add("BTH cut by the capture", ack.cut(b(ack) + 6), T, L::Bth);
    v.add(
        "no room for the ICRC after the BTH",
        ack.relen(14),
        M,
        L::Icrc,
    );
    v.add(
        "BTH PadCnt 3 on an ACK, which has no payload",
        edit(ack, &|d| d[b(ack) + 1] |= 0x30),
        M,
        L::Payload,
    );
    v.add(
        "RDMA READ Request carrying 8 payload bytes",
        read.relen(read.f.len() - b(read) + 8),
        M,
        L::Payload,
    );
    v.add(
        "lengths too short for the RETH",
        write_first.relen(12 + 8 + 4),
        M,
        L::Reth,
    );
    v.add(
        "RETH cut by the capture",
        write_first.cut(b(write_first) + 20),
        T,
        L::Reth,
    );
    v.add(
        "frame ends inside the AETH, its IP length claiming the whole packet (a capture that recorded no wire length)",
        ack.short(b(ack) + 14),
        T,
        L::Aeth,
    );
    v.add("AETH cut by the capture", ack.cut(b(ack) + 14), T, L::Aeth);
}

/// The ImmDt, IETH, atomic, DETH, XRCETH and CNP headers damaged.
fn more_transport(v: &mut Cases, rc: &RcFrames, other: &OtherFrames) {
    let (write_imm, send_inv, fadd, aack) = (&rc.write_imm, &rc.send_inv, &rc.fadd, &rc.aack);
    let (ud, xrc, cnp) = (&other.ud, &other.xrc, &other.cnp);
    v.add(
        "lengths too short for the ImmDt",
        write_imm.relen(12 + 16 + 3),
        M,
        L::ImmDt,
    );
    v.add(
        "ImmDt cut by the capture",
        write_imm.cut(b(write_imm) + 30),
        T,
        L::ImmDt,
    );
    v.add(
        "frame ends inside the IETH, its IP length claiming the whole packet (a capture that recorded no wire length)",
        send_inv.short(b(send_inv) + 14),
        T,
        L::Ieth,
    );
    v.add(
        "IETH cut by the capture",
        send_inv.cut(b(send_inv) + 14),
        T,
        L::Ieth,
    );
    v.add(
        "lengths too short for the AtomicETH",
        fadd.relen(12 + 14 + 4),
        M,
        L::AtomicEth,
    );
    v.add(
        "AtomicETH cut by the capture",
        fadd.cut(b(fadd) + 26),
        T,
        L::AtomicEth,
    );
    v.add(
        "lengths too short for the AtomicAckETH",
        aack.relen(12 + 4 + 4),
        M,
        L::AtomicAckEth,
    );
    v.add(
        "AtomicAckETH cut by the capture",
        aack.cut(b(aack) + 20),
        T,
        L::AtomicAckEth,
    );
    v.add(
        "lengths too short for the DETH",
        ud.relen(12 + 4),
        M,
        L::Deth,
    );
    v.add("DETH cut by the capture", ud.cut(b(ud) + 16), T, L::Deth);
    v.add(
        "frame ends inside the XRCETH, its IP length claiming the whole packet (a capture that recorded no wire length)",
        xrc.short(b(xrc) + 14),
        T,
        L::Xrceth,
    );
    v.add(
        "XRCETH cut by the capture",
        xrc.cut(b(xrc) + 14),
        T,
        L::Xrceth,
    );
    v.add(
        "lengths too short for the CNP body",
        cnp.relen(12 + 8 + 4),
        M,
        L::Cnp,
    );
    v.add(
        "CNP body cut by the capture",
        cnp.cut(b(cnp) + 20),
        T,
        L::Cnp,
    );
}

/// The GRH (RoCE v1), ARP and PFC damaged.
fn grh_arp_pfc(v: &mut Cases, other: &OtherFrames) {
    let (v1, arp, pfc) = (&other.v1, &other.arp, &other.pfc);
    v.add(
        "frame ends inside the GRH",
        v1.short(v1.lay.net + 20),
        M,
        L::Grh,
    );
    v.add("GRH cut by the capture", v1.cut(v1.lay.net + 20), T, L::Grh);
    v.add(
        "GRH payload length too short for a BTH",
        v1.relen(8),
        M,
        L::Bth,
    );
    v.add(
        "GRH payload length beyond the end of the frame (as a capture that recorded no wire length leaves it)",
        edit(v1, &|d| {
            let g = v1.lay.net;
            let pl = u16::from_be_bytes([d[g + 4], d[g + 5]]) + 200;
            d[g + 4..g + 6].copy_from_slice(&pl.to_be_bytes());
        }),
        T,
        L::Payload,
    );
    let arp_len = arp.len();
    v.add(
        "ARP hardware address length 21",
        {
            let mut d = arp.clone();
            d[14 + 4] = 21;
            (d, arp_len)
        },
        M,
        L::Arp,
    );
    v.add(
        "frame ends inside the ARP message",
        (arp[..34].to_vec(), 34),
        M,
        L::Arp,
    );
    v.add(
        "ARP message cut by the capture",
        (arp[..34].to_vec(), arp_len),
        T,
        L::Arp,
    );
    v.add(
        "frame ends inside the PFC frame",
        (pfc[..24].to_vec(), 24),
        M,
        L::MacControl,
    );
    v.add(
        "PFC frame cut by the capture",
        (pfc[..24].to_vec(), pfc.len()),
        T,
        L::MacControl,
    );
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
