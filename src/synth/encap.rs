//! `mixed-encap`: every framing a RoCE analyzer meets in one trace: RC over 802.1Q with a
//! priority, RC over IPv6 (flow label as ECMP entropy), RoCE v1 (EtherType 0x8915 + GRH
//! whose GIDs are IPv4-mapped), UD SEND Only (with immediate) carrying a DETH, and XRC
//! requests carrying an XRCETH with the responder's RC-style ACKs.
//!
//! Guarantees: each encapsulation appears in the first round whatever `--packets` is;
//! UD PSNs advance by one per datagram and are never acknowledged.

use super::frame::{Encap, Link, Path, Pkt, Vlan};
use super::out::{Mark, Out};
use super::rc::{Conn, Fault};
use super::rng::Rng;
use super::traffic::{conn, path, random_op, v4};
use dissectors::{BthRepr, DethRepr, ImmDtRepr, Opcode, PKey, Psn, Qpn};
use std::io;
use std::net::{IpAddr, Ipv6Addr};

/// A UD QP sending datagrams to one remote UD QP.
struct Ud {
    path: Path,
    src_qp: u32,
    dest_qp: u32,
    qkey: u32,
    psn: Psn,
}

impl Ud {
    fn send(&mut self, out: &mut Out, rng: &mut Rng) -> io::Result<()> {
        let imm = rng.chance(1, 3);
        let pkt = Pkt {
            bth: BthRepr {
                opcode: Opcode(if imm { 0x65 } else { 0x64 }),
                pkey: PKey(0xffff),
                dest_qp: Qpn::new(self.dest_qp),
                psn: self.psn,
                se: imm,
                ..Default::default()
            },
            deth: Some(DethRepr {
                qkey: self.qkey,
                src_qp: Qpn::new(self.src_qp),
            }),
            immdt: imm.then(|| ImmDtRepr {
                data: rng.next_u64() as u32,
            }),
            payload_len: rng.range(16, 1024) as u32,
            fill: 0x0d,
            ..Default::default()
        };
        self.psn = self.psn.next();
        let ts = out.now + 200;
        out.roce(ts, &self.path, self.path.ecn, &pkt, Mark::default())?;
        out.now += rng.range(300, 2_000);
        Ok(())
    }
}

pub fn mixed_encap(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    // RC on VLAN 100, priority 3.
    let mut vlan = conn(
        rng,
        v4(198, 18, 0, 1),
        v4(198, 18, 0, 2),
        0x000201,
        0x000101,
        4096,
    );
    for p in [&mut vlan.req, &mut vlan.resp] {
        p.link = Link::Ethernet {
            vlan: Some(Vlan { vid: 100, pcp: 3 }),
        };
    }
    // RC over IPv6.
    let a6 = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 0, 1));
    let b6 = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 0, 2));
    let v6 = conn(rng, a6, b6, 0x0004d6, 0x0003c5, 4096);
    // RoCE v1: the same RC model, framed by a GRH instead of IP/UDP.
    let mut v1 = conn(
        rng,
        v4(198, 51, 100, 10),
        v4(198, 51, 100, 20),
        0x000a11,
        0x000b22,
        1024,
    );
    for p in [&mut v1.req, &mut v1.resp] {
        p.encap = Encap::V1;
    }
    // XRC: requests to the target QP name the XRC SRQ.
    let mut xrc = conn(
        rng,
        v4(203, 0, 113, 5),
        v4(203, 0, 113, 6),
        0x000c01,
        0x000d01,
        2048,
    );
    xrc.xrc_srq = Some(0x000e01);
    let mut ud = Ud {
        path: path(v4(192, 0, 2, 10), v4(192, 0, 2, 20), 0xc0de),
        src_qp: 0x000051,
        dest_qp: 0x000061,
        qkey: 0x1111_1111,
        psn: Psn::new(rng.below(1 << 24) as u32),
    };
    out.fact(
        "vlan",
        serde_json::json!({"vid": 100, "pcp": 3, "qp": "0x000101"}),
    );
    out.fact("ipv6_qps", serde_json::json!(["0x0004d6", "0x0003c5"]));
    out.fact("roce_v1_qps", serde_json::json!(["0x000a11", "0x000b22"]));
    out.fact(
        "xrc",
        serde_json::json!({"target_qp": "0x000d01", "srq": "0x000e01", "initiator_qp": "0x000c01"}),
    );
    out.fact(
        "ud",
        serde_json::json!({"src_qp": "0x000051", "dest_qp": "0x000061", "q_key": "0x11111111"}),
    );
    let mut conns: Vec<Conn> = vec![vlan, v6, v1, xrc];
    let mut round = 0u64;
    while out.frames() < target {
        for c in &mut conns {
            let op = if round == 0 {
                // First round: a multi-packet WRITE, so First/Middle/Last appear in each.
                super::rc::Op::Write {
                    len: 3 * c.pmtu,
                    imm: Some(1),
                }
            } else {
                random_op(rng, c)
            };
            c.exchange(out, rng, op, Fault::None)?;
            out.now += rng.range(400, 3_000);
        }
        for _ in 0..rng.range(1, 3) {
            ud.send(out, rng)?;
        }
        round += 1;
    }
    for c in &mut conns {
        c.finish(out)?;
    }
    Ok(())
}
