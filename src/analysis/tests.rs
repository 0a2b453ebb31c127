//! Analyzer scenarios built from dissectors Reprs: each one is the wire pattern
//! `docs/ROCE.md` describes for a kind of loss or recovery, fed as decoded frames.

use super::*;
use crate::report::findings::{message, seen};
use dissectors::{Addr, IcrcStatus, Operation, Psn, Roce};
use dissectors::{
    AethRepr, ArpOp, ArpRepr, BthRepr, EthernetRepr, IpRepr, Layer, LinkType, Msn, Opcode, PKey,
    PauseRepr, Qpn, RethRepr, RoceVersion, Stop, UdpRepr, VlanRepr,
};
use flow::{Flow, FlowKey};
use report::Severity;
use std::net::{IpAddr, Ipv4Addr};

/// Issue 39: counts over days.
mod days;

const A: [u8; 4] = [198, 18, 0, 1];
const B: [u8; 4] = [198, 18, 0, 2];
/// QP numbers: A's QP 0x11 talks to B's QP 0x22.
const QA: u32 = 0x11;
const QB: u32 = 0x22;

const SEND_ONLY: u8 = 0x04;
const WRITE_FIRST: u8 = 0x06;
const WRITE_MIDDLE: u8 = 0x07;
const WRITE_LAST: u8 = 0x08;
const READ_REQ: u8 = 0x0C;
const READ_FIRST: u8 = 0x0D;
const READ_MIDDLE: u8 = 0x0E;
const READ_LAST: u8 = 0x0F;
const ACK: u8 = 0x11;
const UD_SEND: u8 = 0x64;
const CNP: u8 = 0x81;

fn frame() -> Decoded {
    Decoded {
        link: LinkType::Ethernet,
        cap_len: 1100,
        orig_len: 1100,
        erf: None,
        sll: None,
        eth: Some(EthernetRepr {
            dst: [2; 6],
            src: [1; 6],
            ethertype: 0x0800,
        }),
        vlans: [None; 2],
        ethertype: Some(0x0800),
        lrh: None,
        grh: None,
        ip: None,
        udp: None,
        roce: None,
        arp: None,
        pause: None,
        tunnel: None,
        stop: Stop {
            kind: dissectors::StopKind::Complete,
            layer: Layer::Icrc,
            offset: 0,
            why: "",
        },
    }
}

/// A RoCE v2 packet `src -> dst` to `qp` with an opcode and PSN; a First/Middle packet
/// carries 1024 bytes (so the PMTU is 1024).
fn pkt(src: [u8; 4], dst: [u8; 4], qp: u32, opcode: u8, psn: u32) -> Decoded {
    let op = Opcode(opcode);
    let mut d = frame();
    d.ip = Some(IpRepr {
        src: IpAddr::V4(Ipv4Addr::from(src)),
        dst: IpAddr::V4(Ipv4Addr::from(dst)),
        dscp: 26,
        ecn: Ecn::Ect0,
        ttl: 64,
        flow_label: 0,
        ident: 0,
        protocol: 17,
        header_len: 20,
        total_len: 1080,
        fragmented: false,
    });
    d.udp = Some(UdpRepr {
        src_port: 49152,
        dst_port: 4791,
        length: 1060,
        checksum: 0,
    });
    let operation = op.operation();
    let payload_len = match operation {
        Some(
            Operation::WriteFirst
            | Operation::WriteMiddle
            | Operation::ReadResponseFirst
            | Operation::ReadResponseMiddle,
        ) => 1024,
        _ => 100,
    };
    d.roce = Some(Roce {
        version: RoceVersion::V2,
        bth: BthRepr {
            opcode: op,
            se: false,
            mig_req: false,
            pad_cnt: 0,
            tver: 0,
            pkey: PKey(0xffff),
            fecn: false,
            becn: opcode == CNP,
            dest_qp: Qpn(qp),
            ack_req: false,
            psn: Psn(psn),
        },
        operation,
        rdeth: None,
        deth: None,
        xrceth: None,
        feth: None,
        reth: None,
        atomic_eth: None,
        aeth: None,
        atomic_ack_eth: None,
        immdt: None,
        ieth: None,
        cnp: None,
        mad: None,
        bth_offset: 42,
        payload_offset: 54,
        payload_len,
        icrc: IcrcStatus::Ok,
        icrc_stored: None,
        icrc_computed: None,
    });
    d
}

fn with(mut d: Decoded, f: impl FnOnce(&mut Roce)) -> Decoded {
    f(d.roce.as_mut().unwrap());
    d
}

/// A request A -> B (to B's QP).
fn req(opcode: u8, psn: u32) -> Decoded {
    pkt(A, B, QB, opcode, psn)
}

/// A request with AckReq set.
fn req_a(opcode: u8, psn: u32) -> Decoded {
    with(req(opcode, psn), |r| r.bth.ack_req = true)
}

/// A response B -> A (to A's QP) with an AETH syndrome.
fn resp(opcode: u8, psn: u32, syndrome: u8) -> Decoded {
    with(pkt(B, A, QA, opcode, psn), |r| {
        r.aeth = Some(AethRepr {
            syndrome,
            msn: Msn(0),
        });
    })
}

fn ack(psn: u32) -> Decoded {
    resp(ACK, psn, 0x1f)
}

fn read_req(psn: u32, va: u64, len: u32) -> Decoded {
    with(req_a(READ_REQ, psn), |r| {
        r.reth = Some(RethRepr {
            va,
            rkey: 7,
            dma_len: len,
        });
    })
}

/// Runs frames 1 µs apart (or at the given times) and returns the report.
fn run(frames: &[Decoded]) -> Report {
    let mut a = Analyzer::new(Config::default());
    for (i, d) in frames.iter().enumerate() {
        a.ingest(1_000_000 + i as u64 * 1000, 0, d);
    }
    a.finish()
}

fn run_at(frames: &[(u64, Decoded)]) -> Report {
    let mut a = Analyzer::new(Config::default());
    for (t, d) in frames {
        a.ingest(*t, 0, d);
    }
    a.finish()
}

fn at(us: u64, d: Decoded) -> (u64, Decoded) {
    (1_000_000 + us * 1000, d)
}

/// A request with an IPv4 identification (real senders vary it per packet).
fn req_id(opcode: u8, psn: u32, ident: u16) -> Decoded {
    let mut d = req(opcode, psn);
    d.ip.as_mut().unwrap().ident = ident;
    d
}

/// SEND Onlys of `psns` as a counting sender sends them: PSN p at p µs, identification
/// p + 1.
fn in_order(psns: impl IntoIterator<Item = u32>) -> Vec<(u64, Decoded)> {
    psns.into_iter()
        .map(|p| at(u64::from(p), req_id(SEND_ONLY, p, p as u16 + 1)))
        .collect()
}

mod arp;
mod flow_cap;
mod invariants;
mod recovery;
mod rxe;
mod state;
mod story;

/// Issue 40: no import cycle among the analyzer's modules.
mod imports;

/// A request stream's sent-PSN records stay 16 bytes each (named fields, as small as the
/// tuple they replaced): 32 of them are 512 bytes, eight cache lines.
#[test]
fn a_sent_psn_record_is_16_bytes() {
    assert_eq!(std::mem::size_of::<flow::SentPsn>(), 16);
}
