//! Fuzz target: the analyzer on arbitrary sequences of RoCE frames between two hosts —
//! requests, READ responses, ACKs, NAKs, RNR NAKs and CNPs on a few QPs, with PSNs,
//! AETH syndromes, ECN marks and timestamps (backwards and huge included) chosen by the
//! fuzzer, some frames cut short. It must never panic, and the report must stay
//! consistent: every frame counted once, every RoCE packet in exactly one flow, gaps and
//! retries within what was seen, the
//! JSON writer byte for byte serde_json's.
#![no_main]

use dissectors::{
    AethRepr, BthRepr, Config as DecodeConfig, DethRepr, Ecn, LinkType, Msn, Opcode, PKey, Psn,
    Qpn, RethRepr,
};
use libfuzzer_sys::fuzz_target;
use rocetap::analysis::{Analyzer, Config};
use rocetap::synth::frame::{roce, Encap, Link, Path, Pkt};
use std::net::{IpAddr, Ipv4Addr};

/// Opcodes the analyzer treats differently (RC, UD SEND, CNP) plus any byte.
const OPCODES: [u8; 15] = [
    0x00, 0x01, 0x02, 0x04, 0x06, 0x07, 0x08, 0x0a, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x64,
];
const RECORD: usize = 10;

fn path(fwd: bool) -> Path {
    let a = IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1));
    let b = IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2));
    let (src, dst) = if fwd { (a, b) } else { (b, a) };
    Path {
        src_mac: [2, 0, 0, 0, 0, u8::from(fwd)],
        dst_mac: [2, 0, 0, 0, 0, u8::from(!fwd)],
        link: Link::Ethernet { vlan: None },
        src,
        dst,
        encap: Encap::V2 { sport: 0xc000 },
        dscp: 26,
        ecn: Ecn::Ect0,
        ttl: 64,
        flow_label: 0,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut an = Analyzer::new(Config {
        max_events: 64,
        max_flow_summaries: 1_000,
        ..Config::default()
    });
    let dcfg = DecodeConfig::default();
    let mut buf = Vec::new();
    let mut ts: u64 = 1_000_000;
    let mut fed = 0u64;
    for r in data.chunks_exact(RECORD) {
        // r[0]: opcode selector, r[1]: direction, QP, ECN, cut; r[2..5]: PSN;
        // r[5]: AETH syndrome; r[6..10]: timestamp step (top bit: jump anywhere).
        let opcode = match r[0] {
            x if (x as usize) < OPCODES.len() * 16 => OPCODES[x as usize % OPCODES.len()],
            0xff => 0x81,
            x => x,
        };
        let fwd = r[1] & 1 == 0;
        let qp = 0x100 + u32::from((r[1] >> 1) & 3);
        let psn = u32::from_be_bytes([0, r[2], r[3], r[4]]);
        let step = u32::from_be_bytes([r[6], r[7], r[8], r[9]]);
        ts = if step & 0x8000_0000 != 0 {
            u64::from(step) << 32 | u64::from(psn)
        } else {
            ts.wrapping_add(u64::from(step))
        };
        let needs_reth = matches!(opcode, 0x06 | 0x0a | 0x0c);
        let needs_aeth = matches!(opcode, 0x0d | 0x0f | 0x10 | 0x11);
        let pkt = Pkt {
            bth: BthRepr {
                opcode: Opcode(opcode),
                pkey: PKey(0xffff),
                dest_qp: Qpn(qp),
                ack_req: r[5] & 0x80 != 0,
                psn: Psn(psn),
                ..Default::default()
            },
            reth: needs_reth.then_some(RethRepr {
                va: 0x1000,
                rkey: 7,
                dma_len: u32::from(r[5]) << 8,
            }),
            aeth: needs_aeth.then_some(AethRepr {
                syndrome: r[5],
                msn: Msn(psn),
            }),
            deth: (opcode == 0x64).then_some(DethRepr {
                qkey: 0x1111,
                src_qp: Qpn(qp),
            }),
            payload_len: if opcode == 0x81 {
                16
            } else {
                u32::from(r[5] & 0x3f) * 64
            },
            ..Default::default()
        };
        let ecn = match (r[1] >> 3) & 3 {
            0 => Ecn::Ce,
            _ => Ecn::Ect0,
        };
        buf.clear();
        let lay = roce(&mut buf, &path(fwd), ecn, &pkt);
        let len = if r[1] & 0x80 != 0 {
            (usize::from(r[5]) % lay.len.max(1)).max(1)
        } else {
            lay.len
        };
        let d = dissectors::decode(LinkType::Ethernet, &buf[..len], lay.len as u32, &dcfg);
        an.ingest(ts, 0, &d);
        fed += 1;
    }
    let rep = an.finish();
    let t = &rep.totals;
    assert_eq!(t.frames, fed, "frames counted");
    assert!(t.roce_packets <= t.frames);
    if t.flow_summaries_dropped == 0 {
        let in_flows: u64 = rep.flows.iter().map(|f| f.packets).sum();
        assert_eq!(in_flows, t.roce_packets, "every RoCE packet in one flow");
    }
    assert!(t.capture_loss_gap_events <= t.unrecovered_gap_events);
    assert!(t.retransmitted_packets <= t.roce_packets);
    assert!(t.duplicate_packets + t.reordered_packets <= t.roce_packets);
    let mut ours = Vec::new();
    let mut w = rocetap::report::pretty_json::ObjectWriter::new(&mut ours);
    w.list_field("flows", &rep.flows).unwrap();
    w.finish().unwrap();
    let theirs = serde_json::to_vec_pretty(&serde_json::json!({ "flows": &rep.flows })).unwrap();
    assert!(
        ours == theirs,
        "the document's writer differs from serde_json"
    );
});
