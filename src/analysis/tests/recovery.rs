//! Loss, recovery and pairing on one connection: gaps, NAKs, timeouts, RNR, READ, CE/CNP, idle
//! expiry, PFC.

use super::*;

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
