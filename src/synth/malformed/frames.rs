//! The correct frames the cases start from: one of every header kind, RC and other.

use crate::synth::frame::{self, Layout, Link, Path, Pkt, Vlan};
use crate::synth::traffic::{path, v4};
use dissectors::ip::ipv4_checksum;
use dissectors::{
    AethRepr, ArpOp, ArpRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, DethRepr, Ecn, IethRepr,
    ImmDtRepr, Msn, Opcode, PKey, PauseRepr, Psn, Qpn, RethRepr, XrcethRepr,
};
use std::net::Ipv4Addr;

/// A correct frame and where its parts are.
pub(super) struct Base {
    pub(super) f: Vec<u8>,
    pub(super) lay: Layout,
}

impl Base {
    pub(super) fn new(path: &Path, pkt: Pkt) -> Base {
        let mut f = Vec::new();
        let lay = frame::roce(&mut f, path, path.ecn, &pkt);
        Base { f, lay }
    }

    /// The first `n` bytes, captured as a frame that really was that short.
    pub(super) fn short(&self, n: usize) -> (Vec<u8>, usize) {
        (self.f[..n].to_vec(), n)
    }

    /// The first `n` bytes of the full frame, as a snaplen cut leaves them.
    pub(super) fn cut(&self, n: usize) -> (Vec<u8>, usize) {
        (self.f[..n].to_vec(), self.f.len())
    }

    /// The frame re-framed so that BTH..end is `tlen` bytes, with the IPv4 total length,
    /// UDP length and IPv4 checksum (or the GRH payload length) saying so.
    pub(super) fn relen(&self, tlen: usize) -> (Vec<u8>, usize) {
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
pub(super) struct RcFrames {
    pub(super) write_first: Base,
    pub(super) write_imm: Base,
    pub(super) ack: Base,
    pub(super) send_inv: Base,
    pub(super) read: Base,
    pub(super) fadd: Base,
    pub(super) aack: Base,
}

impl RcFrames {
    pub(super) fn new(p: &Path, r: &Path) -> Self {
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
pub(super) struct OtherFrames {
    pub(super) ud: Base,
    pub(super) xrc: Base,
    pub(super) cnp: Base,
    pub(super) vlan: Base,
    pub(super) v1: Base,
    pub(super) arp: Vec<u8>,
    pub(super) pfc: Vec<u8>,
}

impl OtherFrames {
    pub(super) fn new(p: &Path, r: &Path) -> Self {
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

/// `Pkt { aeth, ..Default::default() }.with(bth)`: a header-only template and its BTH.
trait With {
    fn with(self, bth: BthRepr) -> Self;
}

impl With for Pkt {
    fn with(self, bth: BthRepr) -> Pkt {
        Pkt { bth, ..self }
    }
}

pub(super) fn fix_ipv4(f: &mut [u8], ip: usize) {
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
