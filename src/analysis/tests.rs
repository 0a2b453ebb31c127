//! Analyzer scenarios built from dissectors Reprs: each one is the wire pattern
//! `docs/ROCE.md` describes for a kind of loss or recovery, fed as decoded frames.

use super::*;
use crate::report::findings::{message, seen};
use dissectors::{Addr, IcrcStatus, Psn};
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

#[test]
fn clean_rc_pairs_directions_and_measures_ack_latency() {
    let r = run(&[
        req(WRITE_FIRST, 100),
        req(WRITE_MIDDLE, 101),
        req_a(WRITE_LAST, 102),
        ack(102),
        req_a(SEND_ONLY, 103),
        ack(103),
    ]);
    let t = r.totals;
    assert_eq!(t.flows, 2);
    assert_eq!(t.connections, 1);
    assert_eq!(
        (
            t.psn_gap_events,
            t.retransmitted_packets,
            t.nak_psn_seq,
            t.unrecovered_gap_events
        ),
        (0, 0, 0, 0)
    );
    let f = &r.flows[0];
    assert_eq!(f.messages, 2);
    assert_eq!(f.pmtu, Some(1024));
    assert_eq!(f.peer, Some(1));
    assert_eq!(f.ack_latency.count, 2);
    assert_eq!(f.ack_latency.min_ns, Some(1000));
    assert!(r.findings.is_empty(), "{:?}", r.findings);
}

#[test]
fn upstream_loss_is_a_gap_filled_by_a_nak_triggered_resend() {
    // 3 is lost before the tap: gap, NAK naming 3, go-back-N resend 3, 4, 5.
    let r = run(&[
        req(WRITE_FIRST, 1),
        req(WRITE_MIDDLE, 2),
        req(WRITE_MIDDLE, 4),
        resp(ACK, 3, 0x60),
        req(WRITE_MIDDLE, 5),
        req(WRITE_MIDDLE, 3),
        req(WRITE_MIDDLE, 4),
        req_a(WRITE_LAST, 5),
        ack(5),
        req_a(SEND_ONLY, 6),
    ]);
    let t = r.totals;
    assert_eq!(t.psn_gap_events, 1);
    assert_eq!(t.missing_psns, 1);
    assert_eq!(t.recovered_gap_events, 1);
    assert_eq!(t.unrecovered_gap_events, 0);
    assert_eq!(t.nak_psn_seq, 1);
    assert_eq!(t.retransmitted_packets, 3);
    assert_eq!(t.nak_retransmissions, 3);
    assert_eq!(t.retransmission_episodes, 1);
    assert_eq!(r.flows[0].nak_to_resend.min_ns, Some(2000));
}

#[test]
fn downstream_loss_shows_every_packet_then_nak_then_duplicates() {
    let r = run(&[
        req(WRITE_FIRST, 10),
        req(WRITE_MIDDLE, 11),
        req(WRITE_MIDDLE, 12),
        req_a(WRITE_LAST, 13),
        resp(ACK, 11, 0x60),
        req(WRITE_MIDDLE, 11),
        req(WRITE_MIDDLE, 12),
        req_a(WRITE_LAST, 13),
        ack(13),
    ]);
    let t = r.totals;
    assert_eq!(t.psn_gap_events, 0);
    assert_eq!(t.retransmitted_packets, 3);
    assert_eq!(t.nak_retransmissions, 3);
    assert_eq!(t.timeout_retransmissions, 0);
}

#[test]
fn tail_loss_is_a_timeout_retransmission() {
    let r = run_at(&[
        (1_000, req_a(SEND_ONLY, 7)),
        (2_000, ack(7)),
        (3_000, req_a(SEND_ONLY, 8)),
        // No ACK, no NAK: resent after the transport timer.
        (540_000, req_a(SEND_ONLY, 8)),
        (541_000, ack(8)),
    ]);
    let t = r.totals;
    assert_eq!(t.retransmitted_packets, 1);
    assert_eq!(t.timeout_retransmissions, 1);
    assert_eq!(t.nak_psn_seq, 0);
    assert_eq!(r.flows[0].timeout_observed.min_ns, Some(537_000));
    assert!(r
        .findings
        .iter()
        .any(|f| f.code() == "timeout_retransmissions"));
}

#[test]
fn rnr_nak_then_resend_after_the_wait() {
    let r = run_at(&[
        (1_000, req_a(SEND_ONLY, 50)),
        (2_000, resp(ACK, 50, 0x20 | 4)), // RNR, timer code 4 = 40 µs
        (43_000, req_a(SEND_ONLY, 50)),
        (44_000, ack(50)),
    ]);
    let t = r.totals;
    assert_eq!(t.rnr_nak, 1);
    assert_eq!(t.rnr_retransmissions, 1);
    assert_eq!(t.retransmitted_packets, 1);
    let f = &r.flows[0];
    assert_eq!(f.rnr_wait.min_ns, Some(41_000));
    assert_eq!(f.rnr_requested_us_mean, Some(40.0));
    assert_eq!(r.flows[1].rnr_timers.get(&4), Some(&1));
}

#[test]
fn capture_loss_is_an_unrecovered_gap_without_nak_or_resend() {
    let r = run(&[
        req(WRITE_FIRST, 0),
        req(WRITE_MIDDLE, 1),
        req(WRITE_MIDDLE, 5),
        req_a(WRITE_LAST, 6),
        ack(6),
    ]);
    let t = r.totals;
    assert_eq!(t.psn_gap_events, 1);
    assert_eq!(t.missing_psns, 3);
    assert_eq!(t.unrecovered_gap_events, 1);
    assert_eq!(t.capture_loss_gap_events, 1);
    assert_eq!(t.retransmitted_packets, 0);
    assert!(r.findings.iter().any(|f| f.code() == "capture_loss"));
}

#[test]
fn psn_wraparound_is_not_a_gap() {
    let r = run(&[
        req(WRITE_FIRST, 0xff_fffe),
        req(WRITE_MIDDLE, 0xff_ffff),
        req(WRITE_MIDDLE, 0),
        req_a(WRITE_LAST, 1),
        ack(1),
    ]);
    assert_eq!(r.totals.psn_gap_events, 0);
    assert_eq!(r.totals.retransmitted_packets, 0);
    assert_eq!(r.flows[0].ack_latency.count, 1);
}

#[test]
fn read_response_gap_rerequest_and_resent_responses() {
    // PMTU 1024 is known from the WRITE; a 3 KiB READ uses PSNs 21..=23. The Middle
    // response (22) is lost before the tap; the requester re-issues the READ at 22.
    let r = run(&[
        req(WRITE_FIRST, 19),
        req_a(WRITE_LAST, 20),
        ack(20),
        read_req(21, 0x1000, 3072),
        req_a(SEND_ONLY, 24),
        resp(READ_FIRST, 21, 0x1f),
        resp(READ_LAST, 23, 0x1f),
        read_req(22, 0x1400, 2048),
        resp(READ_MIDDLE, 22, 0x1f),
        resp(READ_LAST, 23, 0x1f),
        ack(24),
    ]);
    let t = r.totals;
    assert_eq!(t.read_rerequests, 1);
    assert_eq!(t.psn_gap_events, 1, "the missing response, not the request");
    assert_eq!(t.recovered_gap_events, 1);
    // The re-issued READ Request and the 2 responses sent again (issue 38, item 4).
    assert_eq!(t.retransmitted_packets, 3);
    assert_eq!(t.read_retransmissions, 3);
    assert_eq!(r.flows[0].counters.reads, 1);
    assert_eq!(t.read_missing_responses, 1);
    assert_eq!(t.read_responses_resent, 2);
}

#[test]
fn read_span_is_learned_when_the_pmtu_is_unknown() {
    // 5000 bytes: 2 PSNs at PMTU 4096; the next request at 12 is not a gap.
    let r = run(&[read_req(10, 0, 5000), req_a(SEND_ONLY, 12), ack(12)]);
    assert_eq!(r.totals.psn_gap_events, 0);
}

#[test]
fn ce_marks_pair_with_the_cnp_sent_back() {
    let ce = |p| {
        let mut d = req(WRITE_MIDDLE, p);
        d.ip.as_mut().unwrap().ecn = Ecn::Ce;
        d
    };
    let r = run(&[
        req(WRITE_FIRST, 1),
        ce(2),
        ce(3),
        resp(ACK, 2, 0x1f),
        pkt(B, A, QA, CNP, 0),
        ce(4),
        // a CNP to a QP with no CE-marked traffic
        pkt(A, B, QB, CNP, 0),
    ]);
    let t = r.totals;
    assert_eq!(t.ce_marked, 3);
    assert_eq!(t.cnp, 2);
    assert_eq!(t.ce_without_cnp, 1);
    assert_eq!(t.cnp_without_ce, 1);
    let f = &r.flows[0];
    assert_eq!(f.counters.cnp_received, 1);
    assert_eq!(f.ce_to_cnp.min_ns, Some(3000));
}

#[test]
fn nak_codes_are_counted_apart() {
    let r = run(&[
        req_a(SEND_ONLY, 1),
        resp(ACK, 1, 0x61),
        req_a(SEND_ONLY, 2),
        resp(ACK, 2, 0x62),
        req_a(SEND_ONLY, 3),
        resp(ACK, 3, 0x63),
        resp(ACK, 3, 0x64),
    ]);
    let t = r.totals;
    assert_eq!(
        (
            t.nak_psn_seq,
            t.nak_invalid_request,
            t.nak_remote_access,
            t.nak_remote_operational,
            t.nak_invalid_rd_request
        ),
        (0, 1, 1, 1, 1)
    );
    assert!(r.findings.iter().any(|f| f.code() == "nak_remote_access"));
}

#[test]
fn responses_pair_with_the_qp_whose_psns_they_answer() {
    // Two QPs from A to B with far-apart PSNs; the NAK must reach the right one.
    let r = run(&[
        pkt(A, B, 0x22, SEND_ONLY, 1000),
        pkt(A, B, 0x23, SEND_ONLY, 500_000),
        pkt(A, B, 0x23, SEND_ONLY, 500_001),
        pkt(B, A, 0x12, ACK, 500_001),
        with(pkt(B, A, 0x12, ACK, 500_001), |r| {
            r.aeth = Some(AethRepr {
                syndrome: 0x60,
                msn: Msn(0),
            });
        }),
        pkt(A, B, 0x23, SEND_ONLY, 500_001),
    ]);
    let f23 = r.flows.iter().find(|f| f.qp == Qpn(0x23)).unwrap();
    assert_eq!(f23.counters.nak_retransmissions, 1);
    assert!(f23.peer.is_some());
    let f22 = r.flows.iter().find(|f| f.qp == Qpn(0x22)).unwrap();
    assert_eq!(f22.peer, None);
}

#[test]
fn ud_psn_jumps_are_not_gaps() {
    let r = run(&[
        pkt(A, B, 0x400, UD_SEND, 5),
        pkt(A, B, 0x400, UD_SEND, 9),
        pkt(A, B, 0x400, UD_SEND, 3),
    ]);
    assert_eq!(r.totals.psn_gap_events, 0);
    assert_eq!(r.totals.retransmitted_packets, 0);
}

#[test]
fn every_icrc_failing_is_one_finding_about_the_capture() {
    let frames: Vec<Decoded> = (0..50)
        .map(|i| with(req(SEND_ONLY, i), |r| r.icrc = IcrcStatus::Bad))
        .collect();
    let r = run(&frames);
    let icrc: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.code().starts_with("icrc"))
        .collect();
    assert_eq!(icrc.len(), 1);
    assert_eq!(icrc[0].code(), "icrc_not_preserved");
    assert_eq!(r.totals.icrc_bad, 50);
}

#[test]
fn idle_flows_are_summarised_and_forgotten() {
    let mut a = Analyzer::new(Config {
        idle_timeout_ns: 1_000_000,
        ..Config::default()
    });
    a.ingest(0, 0, &pkt(A, B, 0x99, SEND_ONLY, 1));
    for i in 0..SWEEP_EVERY {
        a.ingest(10_000_000 + i, 0, &req(SEND_ONLY, i as u32));
    }
    assert_eq!(a.flows.indexed(), 1, "the idle flow was retired");
    let r = a.finish();
    assert_eq!(r.totals.flows, 2);
    assert_eq!(r.flows[0].packets, 1);
    assert_eq!(r.flows[1].packets, SWEEP_EVERY);
}

#[test]
fn pfc_pause_counts_and_stalls_flows_of_that_priority() {
    let tagged = |p| {
        let mut d = req(SEND_ONLY, p);
        d.vlans[0] = Some(VlanRepr {
            tpid: 0x8100,
            pcp: 3,
            dei: false,
            vid: 100,
            ethertype: 0x0800,
        });
        d
    };
    let mut pause = frame();
    pause.pause = Some(PauseRepr::Pfc {
        enable: 1 << 3,
        quanta: [0, 0, 0, 0xffff, 0, 0, 0, 0],
    });
    let r = run_at(&[(1_000, tagged(1)), (2_000, pause), (400_000, tagged(2))]);
    assert_eq!(r.totals.pfc_pause_frames, 1);
    assert_eq!(r.totals.pfc_stalls, 1);
    assert_eq!(r.flows[0].counters.pfc_stall_ns, 398_000);
    let p = &r.pfc[0].per_priority[0];
    assert_eq!((p.priority, p.quanta), (3, 0xffff));
    // 65535 quanta * 512 bit times at 100 Gb/s
    assert_eq!(p.pause_ns, 335_539);
}

#[test]
fn arp_unanswered_and_cross_subnet_requests() {
    let arp = |op, s: [u8; 4], t: [u8; 4]| {
        let mut d = frame();
        d.arp = Some(ArpRepr::ethernet(
            op,
            [0xee; 6],
            Ipv4Addr::from(s),
            [0; 6],
            Ipv4Addr::from(t),
        ));
        d
    };
    let r = run(&[
        arp(ArpOp::Request, [198, 19, 8, 1], [198, 18, 1, 5]),
        arp(ArpOp::Request, [198, 19, 8, 1], [198, 18, 1, 5]),
        arp(ArpOp::Request, [198, 19, 8, 1], [198, 18, 1, 5]),
        arp(ArpOp::Request, [10, 0, 0, 1], [10, 0, 0, 2]),
        arp(ArpOp::Reply, [10, 0, 0, 2], [10, 0, 0, 1]),
    ]);
    let t = r.totals;
    assert_eq!(t.arp_requests, 4);
    assert_eq!(t.arp_replies, 1);
    assert_eq!(t.arp_unanswered, 3);
    assert_eq!(t.arp_cross_subnet, 1);
    assert_eq!(t.arp_cross_subnet_unanswered, 1);
    assert!(r
        .findings
        .iter()
        .any(|f| f.code() == "arp_cross_subnet_unanswered" && f.severity == Severity::Error));
}

/// An ARP frame from `mac` (sender `s`, target `t`).
fn arp_from(op: ArpOp, mac: [u8; 6], s: [u8; 4], t: [u8; 4]) -> Decoded {
    let mut d = frame();
    d.ethertype = Some(0x0806);
    d.arp = Some(ArpRepr::ethernet(
        op,
        mac,
        Ipv4Addr::from(s),
        [0; 6],
        Ipv4Addr::from(t),
    ));
    d
}

/// A plain IPv4 (ICMP) packet `src -> dst`.
fn icmp(src: [u8; 4], dst: [u8; 4]) -> Decoded {
    let mut d = frame();
    d.ip = Some(IpRepr {
        src: IpAddr::V4(Ipv4Addr::from(src)),
        dst: IpAddr::V4(Ipv4Addr::from(dst)),
        dscp: 0,
        ecn: Ecn::NotEct,
        ttl: 64,
        flow_label: 0,
        ident: 0,
        protocol: 1,
        header_len: 20,
        total_len: 84,
        fragmented: false,
    });
    d.stop.kind = dissectors::StopKind::Unsupported;
    d
}

/// Feeds (time, interface, frame), naming interfaces 1.. as `if1`, `if2`, ...
fn run_ifaces(frames: &[(u64, u32, Decoded)]) -> Report {
    let mut a = Analyzer::new(Config::default());
    for i in 1..=4 {
        a.name_iface(i, format!("if{i}"));
    }
    for (t, i, d) in frames {
        a.ingest(*t, *i, d);
    }
    a.finish()
}

const HOST_MAC: [u8; 6] = [0xee; 6];
const POD_MAC: [u8; 6] = [0x0a, 0x58, 0, 0, 0, 5];
const VF_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
/// A pod address (/32 behind a veth), the host's address in another /24, a link-local
/// gateway.
const POD: [u8; 4] = [10, 40, 1, 5];
const HOST: [u8; 4] = [10, 77, 3, 1];
const GW: [u8; 4] = [169, 254, 1, 1];

fn arp_findings(r: &Report) -> Vec<(&'static str, Severity)> {
    r.findings
        .iter()
        .filter(|f| f.code().starts_with("arp"))
        .map(|f| (f.code(), f.severity))
        .collect()
}

#[test]
fn link_local_gateway_is_never_cross_subnet() {
    let r = run_ifaces(&[
        (1_000, 1, arp_from(ArpOp::Request, POD_MAC, POD, GW)),
        (2_000, 1, arp_from(ArpOp::Reply, HOST_MAC, GW, POD)),
        // and not when it is left unanswered either
        (3_000, 2, arp_from(ArpOp::Request, POD_MAC, POD, GW)),
        (4_000, 2, arp_from(ArpOp::Request, HOST_MAC, GW, POD)),
    ]);
    let t = r.totals;
    assert_eq!(t.arp_requests, 3);
    assert_eq!(t.arp_cross_subnet, 0);
    assert_eq!(t.arp_cross_subnet_unanswered, 0);
    assert!(!r.findings.iter().any(|f| f.code().contains("cross_subnet")));
}

#[test]
fn unanswered_cross_subnet_ask_is_an_error_and_an_answered_one_info() {
    let mut frames = Vec::new();
    // if1: the host asks for the pod from another subnet three times, no reply.
    for k in 0..3 {
        frames.push((
            1_000_000_000 * k,
            1,
            arp_from(ArpOp::Request, HOST_MAC, HOST, POD),
        ));
    }
    // if2: the same question, answered.
    frames.push((
        5_000_000_000,
        2,
        arp_from(ArpOp::Request, HOST_MAC, HOST, POD),
    ));
    frames.push((5_000_100_000, 2, arp_from(ArpOp::Reply, POD_MAC, POD, HOST)));
    let r = run_ifaces(&frames);
    let t = r.totals;
    assert_eq!(t.arp_cross_subnet, 2);
    assert_eq!(t.arp_cross_subnet_unanswered, 1);
    assert_eq!(t.arp_reply_path_mismatch, 0);
    assert_eq!(
        arp_findings(&r),
        [
            ("arp_cross_subnet_unanswered", Severity::Error),
            ("arp_unanswered", Severity::Warning),
            ("arp_cross_subnet", Severity::Info),
        ]
    );
    let e = &message(&r.findings[0], &r);
    assert!(
        e.contains("who-has 10.40.1.5")
            && e.contains("10.77.3.1")
            && e.contains("if1")
            && e.contains("x3")
            && e.contains("sbr"),
        "{e}"
    );
    let s = &r.arp_symptoms[0];
    assert_eq!(
        (s.kind().code(), s.iface.as_str(), s.count),
        ("arp_cross_subnet_unanswered", "if1", 3)
    );
    assert_eq!(s.evidence[1].t_ns, 2_000_000_000, "last retry");
    let per_iface: Vec<(u64, u64)> = r
        .arp
        .iter()
        .map(|a| (a.cross_subnet_requests, a.cross_subnet_unanswered))
        .collect();
    assert_eq!(per_iface, [(1, 1), (1, 0)]);
}

#[test]
fn an_answered_cross_subnet_ask_retried_without_reply_is_unanswered_again() {
    let mut frames = vec![
        (1_000, 1, arp_from(ArpOp::Request, HOST_MAC, HOST, POD)),
        (2_000, 1, arp_from(ArpOp::Reply, POD_MAC, POD, HOST)),
    ];
    // Two unanswered re-probes are ordinary; the third makes it a symptom.
    for (k, expect) in [(0u64, 0u64), (1, 0), (2, 1)] {
        frames.push((10_000 + k, 1, arp_from(ArpOp::Request, HOST_MAC, HOST, POD)));
        let r = run_ifaces(&frames);
        assert_eq!(
            r.totals.arp_cross_subnet_unanswered,
            expect,
            "after {} retries",
            k + 1
        );
        assert_eq!(r.totals.arp_unanswered, 0, "the ask was answered once");
    }
}

/// The loose-rp_filter pattern: the pod answers the host's ARP and receives its echo
/// requests on if1, but its own traffic to the host leaves if2 (and asks there).
fn loose_reply_path() -> Vec<(u64, u32, Decoded)> {
    let mut f = vec![
        (1_000, 1, arp_from(ArpOp::Request, HOST_MAC, HOST, POD)),
        (2_000, 1, arp_from(ArpOp::Reply, POD_MAC, POD, HOST)),
    ];
    for k in 0..3u64 {
        let t = 10_000 + k * 1_000_000_000;
        f.push((t, 1, icmp(HOST, POD)));
        f.push((t + 100, 2, arp_from(ArpOp::Request, VF_MAC, POD, HOST)));
    }
    f
}

#[test]
fn replies_leaving_another_interface_are_a_reply_path_mismatch() {
    let r = run_ifaces(&loose_reply_path());
    let t = r.totals;
    assert_eq!(t.arp_reply_path_mismatch, 1);
    assert_eq!(
        t.arp_duplicate_address, 0,
        "two interfaces, two MACs: no conflict"
    );
    let f = r
        .findings
        .iter()
        .find(|f| f.code() == "arp_reply_path_mismatch")
        .expect("finding");
    assert_eq!(f.severity, Severity::Error);
    let m = message(f, &r);
    assert!(
        m.starts_with("replies to 10.77.3.1 leave if2 instead of if1"),
        "{m}"
    );
    let s = r
        .arp_symptoms
        .iter()
        .find(|s| s.kind() == ArpSymptomKind::ReplyPathMismatch)
        .unwrap();
    assert_eq!(s.other_iface.as_deref(), Some("if1"));
    assert_eq!(s.t_ns, 10_100, "the first frame that left the wrong way");
    assert!(seen(&s.evidence[1].seen).contains("who-has 10.77.3.1 tell 10.40.1.5 x3"));
    assert!(r
        .events
        .iter()
        .any(|e| e.kind == EventKind::ArpReplyPathMismatch && e.iface == Some(2)));
}

#[test]
fn replies_by_the_same_interface_or_a_mirrored_capture_are_no_mismatch() {
    // Fixed: the pod answers and replies on if1; its RDMA interface talks on if2 from
    // its own address only.
    let mut fixed = vec![
        (1_000, 1, arp_from(ArpOp::Request, HOST_MAC, HOST, POD)),
        (2_000, 1, arp_from(ArpOp::Reply, POD_MAC, POD, HOST)),
        (3_000, 1, icmp(HOST, POD)),
        (4_000, 1, icmp(POD, HOST)),
    ];
    let vf = [10, 77, 3, 11];
    fixed.push((5_000, 2, arp_from(ArpOp::Request, VF_MAC, vf, HOST)));
    fixed.push((6_000, 2, arp_from(ArpOp::Reply, HOST_MAC, HOST, vf)));
    fixed.push((7_000, 2, icmp(vf, HOST)));
    fixed.push((8_000, 2, icmp(HOST, vf)));
    let r = run_ifaces(&fixed);
    assert_eq!(r.totals.arp_reply_path_mismatch, 0);
    assert_eq!(arp_findings(&r), [("arp_cross_subnet", Severity::Info)]);
    // The broken pattern captured twice on the request side (pod veth and host veth)
    // is still one mismatch, and the same link seen twice is none.
    let mut twice = Vec::new();
    for (t, i, d) in loose_reply_path() {
        if i == 1 {
            twice.push((t, 3, d));
        }
        twice.push((t, i, d));
    }
    assert_eq!(run_ifaces(&twice).totals.arp_reply_path_mismatch, 1);
    let mut mirrored = Vec::new();
    for (t, _, d) in fixed.iter().take(4) {
        mirrored.push((*t, 1, *d));
        mirrored.push((*t, 3, *d));
    }
    assert_eq!(run_ifaces(&mirrored).totals.arp_reply_path_mismatch, 0);
}

#[test]
fn plain_ip_without_arp_state_is_not_followed() {
    // No ARP: IP frames alone never create state (they stay cheap).
    let r = run_ifaces(&[(1_000, 1, icmp(HOST, POD)), (2_000, 2, icmp(POD, HOST))]);
    assert_eq!(r.totals.arp_reply_path_mismatch, 0);
    assert_eq!(r.totals.arp_state_dropped, 0);
}

#[test]
fn an_address_claimed_by_two_macs_on_one_interface_is_a_duplicate() {
    let other: [u8; 6] = [0x02, 0xde, 0xad, 0, 0, 1];
    let r = run_ifaces(&[
        (1_000, 1, arp_from(ArpOp::Request, HOST_MAC, HOST, POD)),
        (2_000, 1, arp_from(ArpOp::Reply, POD_MAC, POD, HOST)),
        (3_000, 1, arp_from(ArpOp::Reply, other, POD, HOST)),
        // again: still one conflict
        (4_000, 1, arp_from(ArpOp::Reply, other, POD, HOST)),
        // gratuitous, on another interface: a different segment, no conflict
        (5_000, 2, arp_from(ArpOp::Request, VF_MAC, POD, POD)),
    ]);
    assert_eq!(r.totals.arp_duplicate_address, 1);
    let f = r
        .findings
        .iter()
        .find(|f| f.code() == "arp_duplicate_address")
        .expect("finding");
    assert_eq!(f.severity, Severity::Warning);
    let m = message(f, &r);
    assert!(
        m.contains("0a:58:00:00:00:05") && m.contains("02:de:ad:00:00:01"),
        "{m}"
    );
    assert!(m.contains("10.40.1.5") && m.contains("if1"));
}

#[test]
fn arp_tables_are_capped_and_what_does_not_fit_is_counted() {
    let mut a = Analyzer::new(Config::default());
    let n = 6_000u32;
    for i in 0..n {
        let t = [10, 9, (i >> 8) as u8, i as u8];
        a.ingest(
            u64::from(i),
            1,
            &arp_from(ArpOp::Request, HOST_MAC, [10, 9, 255, 1], t),
        );
    }
    // IP to the addresses ARP showed still works through the table that exists.
    a.ingest(1 << 40, 1, &icmp([10, 9, 0, 1], [10, 9, 255, 1]));
    let r = a.finish();
    assert_eq!(r.totals.arp_requests, u64::from(n));
    assert_eq!(r.totals.arp_unanswered, u64::from(n), "asks fit");
    assert!(
        r.totals.arp_state_dropped > 0,
        "address pairs did not all fit"
    );
}

#[test]
fn a_whole_message_resent_after_a_timeout_is_all_timeout() {
    // A 40-packet WRITE whose last packet is lost after the tap: no ACK, the requester
    // resends the whole message from its first PSN, further back than the send ring.
    let mut frames = vec![(1_000u64, req(WRITE_FIRST, 100))];
    for i in 1..39 {
        frames.push((1_000 + i * 100, req(WRITE_MIDDLE, 100 + i as u32)));
    }
    frames.push((5_000, req_a(WRITE_LAST, 139)));
    let t0 = 600_000;
    frames.push((t0, req(WRITE_FIRST, 100)));
    for i in 1..39 {
        frames.push((t0 + i * 100, req(WRITE_MIDDLE, 100 + i as u32)));
    }
    frames.push((t0 + 5_000, req_a(WRITE_LAST, 139)));
    frames.push((t0 + 6_000, ack(139)));
    let r = run_at(&frames);
    assert_eq!(r.totals.timeout_retransmissions, 40);
    assert_eq!(r.totals.retransmission_episodes, 1);
    assert_eq!(r.totals.unknown_retransmissions, 0);
    // PSN 100 left the send ring: when it was last sent is unknown, so is how long the
    // timer took (the time since the last new request would only be a lower bound, a
    // few µs on Soft-RoCE, and reading it as the timeout misled).
    assert_eq!(r.flows[0].timeout_observed.min_ns, None);
}

mod properties {
    use super::*;
    use proptest::prelude::{any, prop, prop_assert, prop_assert_eq, proptest, Strategy};

    fn any_frame() -> impl Strategy<Value = (u64, Decoded)> {
        let ops = prop::sample::select(vec![
            SEND_ONLY,
            WRITE_FIRST,
            WRITE_MIDDLE,
            WRITE_LAST,
            READ_REQ,
            READ_FIRST,
            READ_MIDDLE,
            READ_LAST,
            ACK,
            UD_SEND,
            CNP,
        ]);
        let syndromes = prop::sample::select(vec![0x1f, 0x00, 0x24, 0x60, 0x61, 0x62]);
        (
            0u64..5_000,
            any::<bool>(),
            ops,
            0u32..64,
            syndromes,
            0u32..20_000,
        )
            .prop_map(|(dt, dir, op, psn, syn, len)| {
                // PSNs near the wrap point, so serial arithmetic is exercised too.
                let psn = psn.wrapping_add(0xff_ffe0) & 0xff_ffff;
                let d = if dir {
                    pkt(A, B, QB, op, psn)
                } else {
                    pkt(B, A, QA, op, psn)
                };
                let d = with(d, |r| {
                    if r.operation.is_some_and(dissectors::Operation::is_response) {
                        r.aeth = Some(AethRepr {
                            syndrome: syn,
                            msn: Msn(0),
                        });
                    }
                    if op == READ_REQ {
                        r.reth = Some(RethRepr {
                            va: 0,
                            rkey: 1,
                            dma_len: len,
                        });
                    }
                });
                (dt, d)
            })
    }

    proptest! {
        #[test]
        fn arbitrary_traffic_never_breaks_the_bookkeeping(
            frames in prop::collection::vec(any_frame(), 1..300)
        ) {
            let mut a = Analyzer::new(Config {
                idle_timeout_ns: 50_000,
                ..Config::default()
            });
            let mut t = 0;
            for (dt, d) in &frames {
                t += dt;
                a.ingest(t, 0, d);
            }
            let r = a.finish();
            let x = r.totals;
            prop_assert_eq!(x.frames, frames.len() as u64);
            prop_assert!(x.recovered_gap_events + x.unrecovered_gap_events <= x.psn_gap_events);
            prop_assert!(x.capture_loss_gap_events <= x.unrecovered_gap_events);
            prop_assert_eq!(
                x.retransmitted_packets,
                x.nak_retransmissions + x.rnr_retransmissions + x.timeout_retransmissions
                    + x.read_retransmissions + x.unknown_retransmissions
            );
            prop_assert!(x.missing_psns >= x.psn_gap_events);
            let packets: u64 = r.flows.iter().map(|f| f.packets).sum();
            prop_assert_eq!(packets, x.roce_packets);
        }
    }
}

#[test]
fn a_malformed_frame_does_not_move_psn_state() {
    let mut bad = req(SEND_ONLY, 0x55_5555);
    bad.stop.kind = dissectors::StopKind::Malformed;
    let r = run(&[req_a(SEND_ONLY, 1), bad, req_a(SEND_ONLY, 2), ack(2)]);
    assert_eq!(r.totals.malformed, 1);
    assert_eq!(r.totals.psn_gap_events, 0);
    assert_eq!(r.totals.retransmitted_packets, 0);
    assert_eq!(r.flows[0].packets, 3);
}

#[test]
fn a_wrong_first_pairing_is_corrected_by_later_responses() {
    // Two QPs A -> B whose PSNs both start at 0: the first ACK fits either.
    const QA2: u32 = 0x12;
    const QB2: u32 = 0x23;
    let mut frames = vec![
        pkt(A, B, QB, SEND_ONLY, 0),
        pkt(A, B, QB, SEND_ONLY, 1),
        pkt(A, B, QB, SEND_ONLY, 2),
        pkt(A, B, QB2, SEND_ONLY, 0),
        pkt(B, A, QA, ACK, 0), // answers QB's stream, but QB2's next (1) is closer
    ];
    for p in 3..10 {
        frames.push(pkt(A, B, QB, SEND_ONLY, p));
    }
    frames.push(pkt(B, A, QA, ACK, 9)); // only QB's stream reaches 9
    frames.push(pkt(B, A, QA2, ACK, 0));
    let r = run(&frames);
    let label = |f: &FlowSummary| (f.dst, f.qp);
    let by = |qp: u32| r.flows.iter().find(|f| f.qp == Qpn(qp)).unwrap();
    assert_eq!(by(0x11).peer, Some(by(0x22).id), "{:?}", label(by(0x11)));
    assert_eq!(by(0x12).peer, Some(by(0x23).id));
    assert_eq!(r.totals.connections, 2);
}

#[test]
fn totals_stay_exact_beyond_the_kept_flow_summaries() {
    let mut a = Analyzer::new(Config {
        max_flow_summaries: 1,
        ..Config::default()
    });
    for (i, qp) in [0x30u32, 0x31, 0x32].iter().enumerate() {
        // each flow has one gap
        a.ingest(i as u64 * 10, 0, &pkt(A, B, *qp, SEND_ONLY, 1));
        a.ingest(i as u64 * 10 + 1, 0, &pkt(A, B, *qp, SEND_ONLY, 3));
    }
    let r = a.finish();
    assert_eq!(r.flows.len(), 1);
    assert_eq!(r.totals.flows, 3);
    assert_eq!(r.totals.flow_summaries_dropped, 2);
    assert_eq!(r.totals.psn_gap_events, 3);
    assert_eq!(r.totals.unrecovered_gap_events, 3);
}

/// A snapshot taken at the end agrees with the finished report on everything that does
/// not depend on settling open gaps, and its events start where asked.
#[test]
fn snapshot_matches_finish() {
    let path =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples/loss-upstream.pcap");
    let dcfg = dissectors::Config {
        roce_port: 4791,
        check_icrc: true,
    };
    let mut an = Analyzer::new(Config::default());
    crate::capture::input::for_each_frame_of(&[path], true, |f| {
        let d = dissectors::decode(f.link, f.data, f.orig_len, &dcfg);
        an.ingest(f.ts_ns, f.iface, &d);
        std::ops::ControlFlow::Continue(())
    })
    .unwrap();
    let s = an.snapshot(0);
    let s3 = an.snapshot(3);
    assert_eq!(s3.events.len(), s.events.len() - 3);
    assert_eq!(an.events_recorded(), s.events.len());
    let r = an.finish();
    assert_eq!(s.totals.frames, r.totals.frames);
    assert_eq!(s.totals.nak_psn_seq, r.totals.nak_psn_seq);
    assert_eq!(
        s.totals.retransmitted_packets,
        r.totals.retransmitted_packets
    );
    assert_eq!(s.totals.psn_gap_events, r.totals.psn_gap_events);
    assert_eq!(s.flows.len(), r.flows.len());
    assert_eq!(s.connections.len(), r.connections.len());
    for (a, b) in s.flows.iter().zip(&r.flows) {
        assert_eq!(
            (a.id, a.packets, a.bytes, a.peer),
            (b.id, b.packets, b.bytes, b.peer)
        );
    }
}

// ---- Real-stack behaviour (Linux Soft-RoCE in lab/rxe): each test below is a wire
// pattern read off a lab capture, and failed before the analyzer followed rewinds.

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

#[test]
fn a_nak_arriving_during_a_resend_run_belongs_to_the_rewind_it_causes() {
    // 0..=9 sent, 3 lost before the tap; NAK(3); the rewind resends 3..=9 but 6 is lost
    // again, and the responder's NAK(6) arrives while the run is still going; a few ms
    // later the requester rewinds to 6. Two retries, both started by a NAK (rxe's
    // completer_retry_err = 2), no timeout.
    let mut f = vec![];
    let mut id = 0u16;
    let mut send = |f: &mut Vec<(u64, Decoded)>, t: u64, p: u32| {
        id += 1;
        f.push(at(t, req_id(SEND_ONLY, p, id)));
    };
    for p in [0, 1, 2, 4, 5, 6, 7, 8, 9] {
        send(&mut f, u64::from(p), p);
    }
    f.push(at(20, resp(ACK, 3, 0x60)));
    for (i, p) in [3, 4, 5].into_iter().enumerate() {
        send(&mut f, 3000 + i as u64, p);
    }
    f.push(at(3010, resp(ACK, 6, 0x60)));
    for (i, p) in [7, 8, 9].into_iter().enumerate() {
        send(&mut f, 3020 + i as u64, p);
    }
    for (i, p) in [6, 7, 8, 9, 10].into_iter().enumerate() {
        send(&mut f, 9000 + i as u64, p);
    }
    f.push(at(9100, ack(10)));
    let t = run_at(&f).totals;
    assert_eq!(t.nak_psn_seq, 2);
    assert_eq!(t.retransmission_episodes, 2);
    assert_eq!(t.nak_retransmission_episodes, 2);
    assert_eq!(t.timeout_retransmission_episodes, 0);
    assert_eq!(t.timeout_retransmissions, 0);
    // 3,4,5,7,8,9 then 6,7,8,9: ten packets sent again.
    assert_eq!(t.retransmitted_packets, 10);
    assert_eq!(t.recovered_gap_events, 1);
}

#[test]
fn an_original_overtaken_by_the_resend_of_its_psn_is_reordered_not_resent() {
    // lab reorder: 0..=9 sent (identifications 1..=10), 3's original delayed on the way;
    // NAK(3); the rewind resends 3..=9 (11..=17); then 3's original (identification 4)
    // arrives, after its own resend. rxe sent 3 twice, once new: seven packets sent
    // again, and the late one is a reordered original (this read 8 retransmissions).
    let mut f = in_order([0u32, 1, 2, 4, 5, 6, 7, 8, 9]);
    f.push(at(20, resp(ACK, 3, 0x60)));
    for (i, p) in (3u32..=9).enumerate() {
        f.push(at(3000 + i as u64, req_id(SEND_ONLY, p, 11 + i as u16)));
    }
    f.push(at(3100, req_id(SEND_ONLY, 3, 4)));
    f.push(at(3200, ack(9)));
    let t = run_at(&f).totals;
    assert_eq!(t.retransmitted_packets, 7);
    assert_eq!(t.nak_retransmissions, 7);
    assert_eq!(t.retransmission_episodes, 1);
    assert_eq!(t.reordered_packets, 1);
    assert_eq!(t.duplicate_packets, 0);
    assert_eq!((t.recovered_gap_events, t.unrecovered_gap_events), (1, 0));
    // A resend of 3 overtaken by a later resend of it (the original had passed) is still
    // a retransmission: 3 new (4), a rewind to 3 (11) lost to a second one (21) that
    // arrives first.
    let mut f = in_order(0u32..=9);
    f.push(at(5000, req_id(SEND_ONLY, 3, 21)));
    f.push(at(5001, req_id(SEND_ONLY, 4, 22)));
    f.push(at(5002, req_id(SEND_ONLY, 3, 11)));
    f.push(at(5100, ack(9)));
    let t = run_at(&f).totals;
    assert_eq!((t.retransmitted_packets, t.reordered_packets), (3, 0));
}

#[test]
fn a_flows_first_packet_overtaken_by_the_next_ones_is_reordered_not_resent() {
    // lab reorder (CI, stop 28's run): the first WRITE's First packet (PSN 0,
    // identification 1) delayed on the way, its Middle and Last (1..=3, identifications
    // 2..=4) reach the tap first and start the flow; then the First arrives. Nothing was
    // sent twice (this read 1 retransmission, 0 reordered: no gap was open before the
    // flow's first packet).
    let mut f = in_order(1u32..=3);
    f.push(at(4, req_id(SEND_ONLY, 0, 1)));
    f.push(at(100, ack(3)));
    let t = run_at(&f).totals;
    assert_eq!((t.retransmitted_packets, t.reordered_packets), (0, 1));
    assert_eq!(t.retransmission_episodes, 0);
    assert_eq!(t.duplicate_packets, 0);
    // Once the identifications are the send order (12 packets in), the same by them: sent
    // before the flow's first packet, an original late; sent after, the requester going
    // back (a retransmission).
    for (ident, want) in [(1u16, (0, 1)), (14, (1, 0))] {
        let mut f = in_order(1u32..=12);
        f.push(at(13, req_id(SEND_ONLY, 0, ident)));
        f.push(at(14, req_id(SEND_ONLY, 13, 15)));
        let t = run_at(&f).totals;
        assert_eq!(
            (t.retransmitted_packets, t.reordered_packets),
            want,
            "{ident}"
        );
    }
    // Before the identifications tell, PSN 0 followed by 1 again is a rewind, not a late
    // original.
    let mut f = in_order(1u32..=3);
    for p in 0u32..=3 {
        f.push(at(10 + u64::from(p), req_id(SEND_ONLY, p, p as u16 + 5)));
    }
    let t = run_at(&f).totals;
    assert_eq!((t.retransmitted_packets, t.reordered_packets), (4, 0));
}

#[test]
fn originals_that_arrive_after_their_resends_were_taken_for_new_are_reordered() {
    // lab reorder: 0..=14 sent (identifications 1..=15) but 10..=14 delayed on the way;
    // the requester's timer resends 10..=14 (21..=25), which reach the tap first and move
    // the stream on; then the originals arrive. Five packets sent again, and five late
    // originals (this read 0 reordered: the originals were taken for the resends).
    let mut f = in_order(0u32..10);
    for p in 10u32..15 {
        f.push(at(5000 + u64::from(p), req_id(SEND_ONLY, p, p as u16 + 11)));
    }
    for p in 10u32..15 {
        f.push(at(5100 + u64::from(p), req_id(SEND_ONLY, p, p as u16 + 1)));
    }
    f.push(at(5200, ack(14)));
    let t = run_at(&f).totals;
    assert_eq!((t.retransmitted_packets, t.reordered_packets), (5, 5));
    assert_eq!(t.duplicate_packets, 0);
}

#[test]
fn a_resend_run_delivered_in_reverse_is_one_retry_not_one_per_packet() {
    // lab reorder: netem delivered a whole resend run last packet first. 0..=39 sent
    // (identifications 1..=40), NAK(10), the rewind resends 10..=39 (41..=70), which
    // arrive 70 first, 41 last: one retry of 30 packets. (Each late packet counted
    // against the identification being the send order, which then no longer held: 24
    // single-packet "timeouts".)
    let mut f = in_order(0u32..=39);
    f.push(at(50, resp(ACK, 10, 0x60)));
    for (i, p) in (10u32..=39).rev().enumerate() {
        f.push(at(3000 + i as u64, req_id(SEND_ONLY, p, p as u16 + 31)));
    }
    f.push(at(3100, ack(39)));
    let t = run_at(&f).totals;
    assert_eq!(t.retransmission_episodes, 1);
    assert_eq!(t.nak_retransmission_episodes, 1);
    assert_eq!(t.retransmitted_packets, 30);
    assert_eq!(t.timeout_retransmissions, 0);
    // A random identification is not an order, however many packets come after.
    let mut f = vec![];
    let mut x = 0x2545_u16;
    for p in 0u32..200 {
        x = x.wrapping_mul(25173).wrapping_add(13849);
        f.push(at(u64::from(p), req_id(SEND_ONLY, p, x)));
    }
    // A PSN again, with an identification below the latest: without an order it is a
    // lone packet behind the stream (a retransmission), not a late original.
    f.push(at(500, req_id(SEND_ONLY, 100, x.wrapping_sub(5000))));
    f.push(at(600, ack(199)));
    let t = run_at(&f).totals;
    assert_eq!((t.retransmitted_packets, t.reordered_packets), (1, 0));
}

#[test]
fn rnr_then_sequence_nak_is_one_rnr_retry_after_the_wait_the_wire_shows() {
    // rxe: RNR NAK(8), then a PSN-sequence NAK(8) for the packets that followed; the
    // requester waits and rewinds to 8 some 14 ms later: one retry, by the RNR NAK.
    let mut f = in_order(0..8u32);
    f.push(at(10, ack(7)));
    for p in 8..12u32 {
        f.push(at(10 + u64::from(p), req_id(SEND_ONLY, p, p as u16 + 1)));
    }
    f.push(at(30, resp(ACK, 8, 0x20 | 12)));
    f.push(at(31, resp(ACK, 8, 0x60)));
    for p in 8..12u32 {
        f.push(at(
            14_030 + u64::from(p),
            req_id(SEND_ONLY, p, p as u16 + 100),
        ));
    }
    f.push(at(14_100, ack(11)));
    let r = run_at(&f);
    let t = r.totals;
    assert_eq!(t.rnr_nak, 1);
    assert_eq!(t.retransmission_episodes, 1);
    assert_eq!(t.rnr_retransmission_episodes, 1);
    assert_eq!(t.nak_retransmission_episodes, 0);
    assert_eq!(t.rnr_retransmissions, 4);
    let w = r.flows[0].rnr_wait.min_ns.unwrap();
    assert!((14_000_000..14_100_000).contains(&w), "wait {w} ns");
}

#[test]
fn read_response_loss_beyond_sixteen_outstanding_reads_is_found_and_refilled() {
    // 24 READs of 4 KiB (4 PSNs at PMTU 1024) outstanding; the Middle response of the
    // 20th is lost before the tap (requester side). The requester asks again for the
    // rest of that READ and for the READs after it; the responses come again.
    let mut f = vec![at(0, req(WRITE_FIRST, 0)), at(1, req_a(WRITE_LAST, 1))];
    f.push(at(2, ack(1)));
    let first = 2u32;
    for i in 0..24u32 {
        f.push(at(
            10 + u64::from(i),
            read_req(first + 4 * i, 0x1_0000 * u64::from(i), 4096),
        ));
    }
    // The responses of READ `i` from its `from`-th PSN on, one µs apart from `t`.
    fn respond(f: &mut Vec<(u64, Decoded)>, t: &mut u64, s: u32, from: u32) {
        for p in s + from..s + 4 {
            let op = match p - s {
                0 => READ_FIRST,
                3 => READ_LAST,
                _ => READ_MIDDLE,
            };
            f.push(at(*t, resp(op, p, 0x1f)));
            *t += 1;
        }
    }
    let mut t = 100;
    let s19 = first + 4 * 19;
    for i in 0..24 {
        if i == 19 {
            // PSN s19 + 1 is lost.
            f.push(at(t, resp(READ_FIRST, s19, 0x1f)));
            f.push(at(t + 1, resp(READ_MIDDLE, s19 + 2, 0x1f)));
            f.push(at(t + 2, resp(READ_LAST, s19 + 3, 0x1f)));
            t += 3;
        } else {
            respond(&mut f, &mut t, first + 4 * i, 0);
        }
    }
    // The re-request for the rest of READ 19, then READs 20.. with their own PSNs.
    f.push(at(t + 10, read_req(s19 + 1, 0x1_0000 * 19 + 1024, 3072)));
    for i in 20..24u32 {
        f.push(at(
            t + 11 + u64::from(i),
            read_req(first + 4 * i, 0x1_0000 * u64::from(i), 4096),
        ));
    }
    t += 100;
    respond(&mut f, &mut t, s19, 1);
    for i in 20..24 {
        respond(&mut f, &mut t, first + 4 * i, 0);
    }
    let r = run_at(&f);
    let x = r.totals;
    assert_eq!(x.reads, 24);
    assert_eq!(x.psn_gap_events, 1);
    assert_eq!(x.recovered_gap_events, 1);
    assert_eq!(x.unrecovered_gap_events, 0);
    assert_eq!(x.capture_loss_gap_events, 0);
    assert_eq!(x.read_rerequests, 1);
    assert_eq!(x.retransmission_episodes, 1);
    assert_eq!(x.read_retransmission_episodes, 1);
    assert_eq!(x.timeout_retransmission_episodes, 0);
    // 3 responses for the rest of READ 19 and 4 for each of the 4 READs after it.
    assert_eq!(x.read_responses_resent, 3 + 16);
    // The READ Requests sent again with their own PSNs, and the re-request (issue 38).
    assert_eq!(r.flows[0].counters.retransmitted_packets, 5);
}

#[test]
fn a_copy_made_by_the_network_is_a_duplicate_not_a_retransmission() {
    let r = run_at(&[
        at(0, req_id(SEND_ONLY, 0, 1)),
        at(1, req_id(SEND_ONLY, 1, 2)),
        // The same packet again, same identification, 300 µs later (netem duplicate).
        at(301, req_id(SEND_ONLY, 1, 2)),
        at(302, req_id(SEND_ONLY, 2, 3)),
        at(400, ack(2)),
    ]);
    let t = r.totals;
    assert_eq!(t.duplicate_packets, 1);
    assert_eq!(t.retransmitted_packets, 0);
    assert_eq!(t.retransmission_episodes, 0);
}

#[test]
fn a_late_original_is_reordering_and_the_nak_it_caused_still_rewinds() {
    // 2 is delayed past 3 and 4; the responder NAKs 2 when 3 arrives; the late 2 then
    // passes the tap (it fills the gap; no rewind yet), the responder NAKs 3... and the
    // requester, acting on NAK(2), rewinds to 2 and resends 2..=4 (rxe: one retry).
    let r = run_at(&[
        at(0, req_id(SEND_ONLY, 0, 1)),
        at(1, req_id(SEND_ONLY, 1, 2)),
        at(2, req_id(SEND_ONLY, 3, 4)),
        at(3, resp(ACK, 2, 0x60)),
        at(4, req_id(SEND_ONLY, 4, 5)),
        at(2000, req_id(SEND_ONLY, 2, 3)),
        at(2001, req_id(SEND_ONLY, 5, 6)),
        at(2002, resp(ACK, 3, 0x60)),
        at(9000, req_id(SEND_ONLY, 2, 7)),
        at(9001, req_id(SEND_ONLY, 3, 8)),
        at(9002, req_id(SEND_ONLY, 4, 9)),
        at(9003, req_id(SEND_ONLY, 5, 10)),
        at(9100, ack(5)),
    ]);
    let t = r.totals;
    assert_eq!(t.reordered_packets, 1);
    assert_eq!(t.psn_gap_events, 1);
    assert_eq!(t.recovered_gap_events, 1);
    assert_eq!(t.retransmission_episodes, 1);
    assert_eq!(t.nak_retransmission_episodes, 1);
    assert_eq!(t.retransmitted_packets, 4);
}

#[test]
fn a_frame_cut_inside_an_extended_header_still_has_its_psn() {
    // An IPv6 FetchAdd captured with -s 96: the BTH is whole, the AtomicETH cut. Its
    // PSN counts, so the next request is no gap.
    let cut = with(req_a(0x14, 5), |r| r.payload_len = 0);
    let mut cut = cut;
    cut.stop = Stop {
        kind: dissectors::StopKind::Truncated,
        layer: Layer::AtomicEth,
        offset: 96,
        why: "cut by the capture snaplen",
    };
    let r = run(&[req_a(SEND_ONLY, 4), cut, req_a(SEND_ONLY, 6), ack(6)]);
    assert_eq!(r.totals.psn_gap_events, 0);
    assert_eq!(r.totals.retransmitted_packets, 0);
    assert_eq!(r.totals.truncated, 1);
}

#[test]
fn a_clean_flow_stays_small() {
    // Issue 17's budget: a live flow on clean traffic costs at most 2 KiB. The fixed
    // part is the struct; rings and histograms that trouble needs come later, boxed.
    let size = std::mem::size_of::<Flow>();
    assert!(size <= 1900, "Flow is {size} bytes");
    let f = Flow::new(
        0,
        FlowKey {
            src: Addr::Ip(IpAddr::V4(Ipv4Addr::from(A))),
            dst: Addr::Ip(IpAddr::V4(Ipv4Addr::from(B))),
            qp: Qpn(1),
        },
        RoceVersion::V2,
        0,
    );
    assert!(f.delays.is_none() && f.req.reads.is_none() && f.req.pending.is_none());
    assert_eq!(f.req.gaps.len(), 0);
    // The request stream's ring records come with its first request: an ACK-only flow
    // never has them.
    assert!(f.req.sent.ends().is_none() && f.req.ackreq.ends().is_none());
}

#[test]
fn qos_marks_change_counts_and_cnps_kept_apart() {
    let mark = |mut d: Decoded, dscp: u8, ecn: Ecn| {
        let ip = d.ip.as_mut().unwrap();
        ip.dscp = dscp;
        ip.ecn = ecn;
        d
    };
    let r = run(&[
        // B -> A: a CNP first (DSCP 48), then the ACKs on 26.
        mark(pkt(B, A, QA, CNP, 0), 48, Ecn::NotEct),
        req(SEND_ONLY, 1),
        mark(req(SEND_ONLY, 2), 0, Ecn::NotEct),
        req(SEND_ONLY, 3),
        mark(req(SEND_ONLY, 4), 26, Ecn::NotEct),
        ack(4),
    ]);
    let ab = r.flows.iter().find(|f| f.qp == Qpn::new(QB)).unwrap();
    assert_eq!((ab.dscp, ab.dscp_changes, ab.cnp_dscp), (Some(26), 2, None));
    let ba = r.flows.iter().find(|f| f.qp == Qpn::new(QA)).unwrap();
    assert_eq!(
        (ba.dscp, ba.dscp_changes, ba.cnp_dscp),
        (Some(26), 0, Some(48))
    );
    let t = r.totals;
    // Data: 3 packets on 26 (one Not-ECT), 1 on 0; ACKs and CNPs are not data.
    assert_eq!((t.data_dscp_mixed, t.data_dscp0, t.data_not_ect), (1, 1, 1));
    assert_eq!(t.qos_direction_mismatch, 0);
    let codes: Vec<&str> = r
        .findings
        .iter()
        .map(crate::analysis::report::Finding::code)
        .collect();
    for c in ["data_dscp_mixed", "data_dscp0", "data_not_ect"] {
        assert!(codes.contains(&c), "{c}: {codes:?}");
    }
    // A CNP answering data on another DSCP counts against the data's flow.
    let ce = mark(req(SEND_ONLY, 1), 26, Ecn::Ce);
    let r = run(&[ce, ack(1), mark(pkt(B, A, QA, CNP, 0), 48, Ecn::NotEct)]);
    assert_eq!(r.totals.cnp_other_dscp, 1);
    assert!(r.findings.iter().any(|f| f.code() == "cnp_other_dscp"));
}

/// The per-flow budget of issue #17 (at most 2 KiB per live flow on clean traffic): the
/// fixed part of a flow, allocated whole for every flow, stays within 768 bytes; a request
/// stream's ring records (768 bytes more, for the flows that send requests), its
/// ACK-latency buckets, the index entry and the tables within the rest, which
/// `benches/scale.rs` measures.
#[test]
fn flow_state_stays_small() {
    use super::flow::{FlowCounters, LazyCounters, OpCounts};
    let n = std::mem::size_of::<Flow>();
    assert!(n <= 768, "a live flow's fixed state grew to {n} bytes");
    assert_eq!(std::mem::size_of::<LazyCounters>(), 8);
    assert!(std::mem::size_of::<OpCounts>() <= 64);
    assert!(
        std::mem::size_of::<FlowCounters>() > 200,
        "the counters are boxed for a reason"
    );
}

/// The inline opcode counts give the same table as counting every operation directly,
/// with few operations (inline) and with all of them (moved to the full table midway).
#[test]
fn op_counts_match_a_plain_table() {
    use super::flow::OpCounts;
    use dissectors::Operation;
    for kinds in [1usize, 3, 6, 7, Operation::ALL.len()] {
        let mut c = OpCounts::default();
        let mut want = [0u64; Operation::ALL.len()];
        for i in 0..5_000usize {
            let o = Operation::ALL[(i * 7 + i / 3) % kinds];
            c.add(o);
            want[o as usize] += 1;
        }
        assert_eq!(c.table(), want, "{kinds} kinds");
    }
}

/// A connection set up by the CM whose first packets the capture missed is found even
/// when the requester's flow also carries responses (ACKs of the responder's own
/// requests): the missing count comes from the flow's first *request* PSN, not from its
/// first packet's.
#[test]
fn first_packets_missing_are_found_on_a_flow_that_also_carries_responses() {
    let (mut frames, truth) = crate::synth::tests::decoded_with_truth("cm-setup", 400, 1);
    let want = &truth["facts"]["cm_connections"][1];
    let missing = want["first_packets_missing"].as_u64().unwrap();
    assert!(missing > 0, "{want}");
    let ip = |k: &str| match want[k].as_str().unwrap().parse::<IpAddr>().unwrap() {
        IpAddr::V4(v) => v.octets(),
        IpAddr::V6(_) => unreachable!("cm-setup is IPv4"),
    };
    let (requester, responder) = (ip("requester"), ip("responder"));
    let qp = u32::from_str_radix(
        want["responder_qp"]
            .as_str()
            .unwrap()
            .trim_start_matches("0x"),
        16,
    )
    .unwrap();
    // Before the requester's first captured data packet: an ACK it sends, in the same
    // flow (to the responder's QP), for a request of the responder's own (PSN 0x777).
    let at = frames
        .iter()
        .position(|(_, d)| {
            d.roce.as_ref().is_some_and(|r| {
                r.bth.dest_qp == Qpn(qp)
                    && r.mad.is_none()
                    && d.ip.is_some_and(|i| i.src == IpAddr::from(requester))
            })
        })
        .expect("the requester's data");
    let t = frames[at].0 - 1;
    let a = with(pkt(requester, responder, qp, ACK, 0x777), |r| {
        r.aeth = Some(AethRepr {
            syndrome: 0x1f,
            msn: Msn(0),
        });
    });
    frames.insert(at, (t, a));
    let r = run_at(&frames);
    let s =
        r.cm.iter()
            .find(|s| s.rep.is_some_and(|p| p.qpn == Qpn(qp)))
            .expect("the session");
    assert_eq!(s.missing_at_start[0], Some(missing as u32));
    assert!(r
        .findings
        .iter()
        .any(|f| matches!(f.kind, report::FindingKind::CmFirstPacketsMissing { .. })));
}

/// A hint made away from the analyzer ([`Hint::of`], on the reading thread) is the one
/// the analyzer makes, and knows a request (which leaves its peer alone) from a response
/// and a CNP.
#[test]
fn a_hint_is_a_function_of_the_frame_and_knows_requests() {
    let a = Analyzer::new(Config::default());
    for (d, request) in [
        (req_a(WRITE_FIRST, 1), true),
        (pkt(A, B, 0x99, SEND_ONLY, 7), true),
        (ack(2), false),
        (frame(), false),
    ] {
        let (mine, its) = (Hint::of(&d), a.warm_index(&d));
        assert_eq!(mine, its);
        assert_eq!(mine.is_request(), request, "{mine:?}");
    }
}

/// Cache hints only read: for a frame that is not RoCE, for a flow not seen yet, for one
/// retired since (its slot free), or reused by another flow, they warm nothing or the
/// wrong lines and change nothing; a frame analyzed with its own hint is analyzed as
/// without.
#[test]
fn cache_hints_change_nothing_whatever_became_of_their_flow() {
    let frames = [
        req_a(WRITE_FIRST, 1),
        req_a(WRITE_LAST, 2),
        ack(2),
        pkt(A, B, 0x99, SEND_ONLY, 7),
    ];
    let mut plain = Analyzer::new(Config {
        idle_timeout_ns: 1_000_000,
        ..Config::default()
    });
    let mut hinted = Analyzer::new(Config {
        idle_timeout_ns: 1_000_000,
        ..Config::default()
    });
    let warm = |a: &Analyzer, d: &Decoded| {
        let mut h = a.warm_index(d);
        a.warm_slot(d, &mut h);
        a.warm_flow(&h);
        a.warm_peer(&h);
        h
    };
    // Not RoCE, and a flow no packet has made yet.
    warm(&hinted, &frame());
    let stale = warm(&hinted, &frames[0]);
    for (i, d) in frames.iter().enumerate() {
        let ts = 1_000 * i as u64;
        plain.ingest(ts, 0, d);
        let h = warm(&hinted, d);
        hinted.ingest_warmed(ts, 0, d, &h);
    }
    let old = warm(&hinted, &frames[0]);
    plain.sweep(10_000_000);
    hinted.sweep(10_000_000);
    assert_eq!(hinted.live_flows(), 0, "every flow retired");
    // Hints of flows retired and of ones never there, on a table with free slots, then
    // with the slots reused by other flows.
    for h in [stale, old] {
        let mut h = h;
        hinted.warm_slot(&frames[0], &mut h);
        hinted.warm_flow(&h);
        hinted.warm_peer(&h);
    }
    let later = [pkt(B, A, 0x55, SEND_ONLY, 3), pkt(A, B, 0x56, SEND_ONLY, 4)];
    for (i, d) in later.iter().enumerate() {
        let ts = 20_000_000 + i as u64;
        plain.ingest(ts, 0, d);
        let mut h = old;
        hinted.warm_slot(d, &mut h);
        hinted.warm_flow(&h);
        hinted.warm_peer(&h);
        let h = warm(&hinted, d);
        hinted.ingest_warmed(ts, 0, d, &h);
    }
    assert_eq!(
        format!("{:?}", plain.finish()),
        format!("{:?}", hinted.finish())
    );
}

#[test]
fn a_run_of_resent_responses_cut_short_before_new_responses_is_a_read_gap() {
    // READ 2..=5 (4 KiB at PMTU 1024) passes the tap whole, its Middle (3) lost after
    // the tap: the requester asks again at 3. Of the responses sent again (3..=5), 5 is
    // lost before the tap (which saw 5 the first time); the first response of the next
    // READ (6..=9) follows, and the requester asks again for 5: a READ re-request, not
    // its timer.
    let mut f = vec![at(0, req(WRITE_FIRST, 0)), at(1, req_a(WRITE_LAST, 1))];
    f.push(at(2, ack(1)));
    f.push(at(10, read_req(2, 0x1_0000, 4096)));
    f.push(at(11, read_req(6, 0x2_0000, 4096)));
    f.push(at(20, resp(READ_FIRST, 2, 0x1f)));
    f.push(at(21, resp(READ_MIDDLE, 3, 0x1f)));
    f.push(at(22, resp(READ_MIDDLE, 4, 0x1f)));
    f.push(at(23, resp(READ_LAST, 5, 0x1f)));
    f.push(at(20_000, read_req(3, 0x1_0400, 3072)));
    f.push(at(20_010, resp(READ_MIDDLE, 3, 0x1f)));
    f.push(at(20_011, resp(READ_MIDDLE, 4, 0x1f)));
    f.push(at(20_013, resp(READ_FIRST, 6, 0x1f)));
    f.push(at(20_040, read_req(5, 0x1_0c00, 1024)));
    f.push(at(20_050, resp(READ_LAST, 5, 0x1f)));
    f.push(at(20_051, resp(READ_MIDDLE, 7, 0x1f)));
    f.push(at(20_052, resp(READ_MIDDLE, 8, 0x1f)));
    f.push(at(20_053, resp(READ_LAST, 9, 0x1f)));
    let r = run_at(&f);
    let x = r.totals;
    assert_eq!(x.read_rerequests, 2);
    assert_eq!(x.psn_gap_events, 0, "the tap saw every PSN");
    assert_eq!(
        (
            x.timeout_retransmission_episodes,
            x.read_retransmission_episodes
        ),
        (1, 1),
        "the first re-request has no cause at the tap; the second answers the hole"
    );
    assert_eq!(x.read_responses_resent, 3);
}

mod flow_cap;
mod story;

/// Issue 40: no import cycle among the analyzer's modules.
mod imports;

/// A request stream's sent-PSN records stay 16 bytes each (named fields, as small as the
/// tuple they replaced): 32 of them are 512 bytes, eight cache lines.
#[test]
fn a_sent_psn_record_is_16_bytes() {
    assert_eq!(std::mem::size_of::<flow::SentPsn>(), 16);
}
