//! Issue 38: the story the findings tell — RNR follow-up NAKs, where a loss was relative
//! to the tap, requesters that gave up, streams that stalled, UD PSN jumps.

use super::*;
use crate::analysis::report::{Cause, Location, Severity};

fn finding<'a>(r: &'a Report, code: &str) -> Option<&'a crate::analysis::report::Finding> {
    r.findings.iter().find(|f| f.code() == code)
}

/// A flow A → B on QP 1, for the `stop` records' own tests.
fn lone_flow() -> Flow {
    Flow::new(
        0,
        FlowKey {
            src: Addr::Ip(IpAddr::V4(Ipv4Addr::from(A))),
            dst: Addr::Ip(IpAddr::V4(Ipv4Addr::from(B))),
            qp: Qpn(1),
        },
        RoceVersion::V2,
        0,
    )
}

#[test]
fn sequence_naks_after_rnr_naks_are_not_loss() {
    // RNR NAK(2) then at once the sequence NAK(2) (Soft-RoCE): 2 passed the tap and was
    // dropped for want of a buffer, 3 arrived out of sequence.
    let r = run(&[
        req(SEND_ONLY, 1),
        req(SEND_ONLY, 2),
        req(SEND_ONLY, 3),
        ack(1),
        resp(ACK, 2, 0x20 | 4),
        resp(ACK, 2, 0x60),
        req(SEND_ONLY, 2),
        req(SEND_ONLY, 3),
        ack(3),
    ]);
    let t = r.totals;
    assert_eq!((t.nak_psn_seq, t.nak_psn_seq_after_rnr), (1, 1));
    assert!(finding(&r, "nak_psn_seq").is_none(), "{:?}", r.findings);
    let rnr = finding(&r, "rnr_nak").expect("RNR finding");
    assert_eq!(
        rnr.cause(),
        Some((Cause::ReceiverNotReady, Location::Unknown))
    );
}

#[test]
fn a_nak_places_the_loss_by_what_the_tap_saw() {
    // 3 never passed the tap: lost before it.
    let before = run(&[
        req(SEND_ONLY, 1),
        req(SEND_ONLY, 2),
        req(SEND_ONLY, 4),
        resp(ACK, 3, 0x60),
        req(SEND_ONLY, 3),
        req(SEND_ONLY, 4),
        ack(4),
    ]);
    assert_eq!(before.totals.nak_psn_seq_gap_at_tap, 1);
    let f = finding(&before, "nak_psn_seq").unwrap();
    assert_eq!(f.cause(), Some((Cause::NetworkLoss, Location::BeforeTap)));
    // 2 passed the tap and the responder NAKed it: lost after the tap.
    let after = run(&[
        req(SEND_ONLY, 1),
        req(SEND_ONLY, 2),
        req(SEND_ONLY, 3),
        resp(ACK, 2, 0x60),
        req(SEND_ONLY, 2),
        req(SEND_ONLY, 3),
        ack(3),
    ]);
    assert_eq!(after.totals.nak_psn_seq_gap_at_tap, 0);
    let f = finding(&after, "nak_psn_seq").unwrap();
    assert_eq!(f.cause(), Some((Cause::NetworkLoss, Location::AfterTap)));
}

/// SENDs 1..=3 sent once, then `rounds` timer retries of all three, 10 ms apart, each
/// packet with the next identification; no ACK ever.
fn retried(rounds: u32) -> Vec<(u64, Decoded)> {
    let mut v = Vec::new();
    let mut id = 1u16;
    for round in 0..=rounds {
        for p in 1..=3u32 {
            let t = 1_000_000 + u64::from(round) * 10_000_000 + u64::from(p) * 1_000;
            v.push((t, req_id(SEND_ONLY, p, id)));
            id += 1;
        }
    }
    v
}

#[test]
fn a_requester_that_retries_one_psn_and_falls_silent_gave_up() {
    let r = run_at(&retried(7));
    assert_eq!(r.totals.timeout_retransmission_episodes, 7);
    assert_eq!(r.totals.retry_exhausted, 1);
    let first = &r.findings[0];
    assert_eq!(first.code(), "retry_exhausted");
    assert_eq!(first.severity, Severity::Error);
    assert_eq!(
        first.cause(),
        Some((Cause::RetryExhausted, Location::Unknown))
    );
    // Retrying without end until the capture ends (Soft-RoCE under total ACK loss): it
    // had not given up; the connection made no progress.
    let r = run_at(&retried(20));
    assert_eq!(
        (r.totals.retry_exhausted, r.totals.stalled_connections),
        (0, 1)
    );
    assert_eq!(r.findings[0].code(), "connection_stalled");
    // Four retries, then silence longer than they were apart: it gave up.
    let mut frames = retried(4);
    frames.push((900_000_000, pkt(B, A, 0x99, SEND_ONLY, 7)));
    let r = run_at(&frames);
    assert_eq!(r.totals.retry_exhausted, 1);
    // Two retries and an ACK after them: a loss recovered, nobody gave up.
    let mut frames = retried(2);
    frames.push((100_000_000, ack(3)));
    let r = run_at(&frames);
    assert_eq!(r.totals.retry_exhausted, 0);
    assert!(finding(&r, "retry_exhausted").is_none());
}

/// A SEND acknowledged, then a WRITE whose first resend run goes past the PSNs sent
/// before the timer fired (2..=3 sent, 2..=4 resent: the lab's dead-link run), then
/// `rounds` more resends of 2..=4, 10 ms apart; no ACK past 1.
fn retried_past_max(rounds: u32) -> Vec<(u64, Decoded)> {
    let mut v = vec![(1_000, req(SEND_ONLY, 1)), (2_000, ack(1))];
    let mut id = 1u16;
    let mut send = |v: &mut Vec<(u64, Decoded)>, t: u64, op: u8, p: u32| {
        v.push((t, req_id(op, p, id)));
        id += 1;
    };
    send(&mut v, 3_000, WRITE_FIRST, 2);
    send(&mut v, 4_000, WRITE_MIDDLE, 3);
    for round in 1..=rounds {
        let t = u64::from(round) * 10_000_000;
        send(&mut v, t, WRITE_FIRST, 2);
        send(&mut v, t + 1_000, WRITE_MIDDLE, 3);
        send(&mut v, t + 2_000, WRITE_MIDDLE, 4);
    }
    v
}

#[test]
fn a_first_resend_run_past_the_sent_psns_is_not_progress() {
    // Retrying without end, mid-message: a stall whose retries reached the tap, so not
    // a link that died before it.
    let r = run_at(&retried_past_max(20));
    assert_eq!(
        (r.totals.retry_exhausted, r.totals.stalled_connections),
        (0, 1)
    );
    let f = finding(&r, "connection_stalled").unwrap();
    assert_eq!(f.cause(), Some((Cause::Unknown, Location::Unknown)));
    // Seven retries and silence: it gave up.
    let r = run_at(&retried_past_max(7));
    assert_eq!(r.totals.retry_exhausted, 1);
    assert_eq!(r.findings[0].code(), "retry_exhausted");
    // Three retries, then new PSNs long after (their ACKs not seen): it went on.
    let mut frames = retried(3);
    for p in 4..=6u32 {
        frames.push((
            200_000_000 + u64::from(p),
            req_id(SEND_ONLY, p, 100 + p as u16),
        ));
    }
    let r = run_at(&frames);
    assert_eq!(
        (r.totals.retry_exhausted, r.totals.stalled_connections),
        (0, 0)
    );
}

#[test]
fn a_stream_that_stops_mid_message_stalled() {
    let r = run(&[
        req(WRITE_FIRST, 1),
        req(WRITE_MIDDLE, 2),
        req(WRITE_LAST, 3),
        ack(3),
        req(WRITE_FIRST, 4),
        req(WRITE_MIDDLE, 5),
    ]);
    assert_eq!(r.totals.stalled_connections, 1);
    assert_eq!(r.findings[0].code(), "connection_stalled");
    // The same stream finishing its message did not stall; nor does one whose only
    // packets are part of its first message (the capture began or ended there).
    let done = run(&[
        req(WRITE_FIRST, 1),
        req(WRITE_MIDDLE, 2),
        req(WRITE_LAST, 3),
    ]);
    assert_eq!(done.totals.stalled_connections, 0);
    let part = run(&[req(WRITE_FIRST, 1), req(WRITE_MIDDLE, 2)]);
    assert_eq!(part.totals.stalled_connections, 0);
}

#[test]
fn ud_psn_jumps_are_counted_per_sender() {
    let r = run(&[
        pkt(A, B, 0x400, UD_SEND, 5),
        pkt(A, B, 0x400, UD_SEND, 6),
        pkt(A, B, 0x400, UD_SEND, 9),
        pkt(A, B, 0x400, UD_SEND, 10),
    ]);
    assert_eq!(r.totals.ud_psn_jumps, 1);
    assert_eq!(r.totals.psn_gap_events, 0);
    let f = finding(&r, "ud_psn_jumps").unwrap();
    assert_eq!(f.cause(), Some((Cause::Unknown, Location::BeforeTap)));
}

#[test]
fn rnr_naks_refusing_reads_are_the_responder_overloaded() {
    // A READ-only requester; the responder answers a READ Request with an RNR NAK.
    let r = run(&[
        req(WRITE_FIRST, 1),
        req_a(WRITE_LAST, 2),
        ack(2),
        read_req(3, 0x1000, 1024),
        resp(ACK, 3, 0x20 | 4),
        read_req(3, 0x1000, 1024),
        resp(READ_FIRST, 3, 0x1f),
    ]);
    // The WRITEs make it a mixed stream: a missing receive buffer is possible.
    let f = finding(&r, "rnr_nak").expect("RNR finding");
    assert_eq!(f.cause().map(|c| c.0), Some(Cause::ReceiverNotReady));
    let r = run(&[
        read_req(3, 0x1000, 256),
        resp(ACK, 3, 0x20 | 4),
        read_req(3, 0x1000, 256),
        resp(READ_FIRST, 3, 0x1f),
    ]);
    let f = finding(&r, "rnr_nak").expect("RNR finding");
    assert_eq!(f.cause().map(|c| c.0), Some(Cause::ResponderOverload));
}

#[test]
fn a_fatal_nak_ends_the_qp_and_opens_the_report() {
    // WRITE 2 met NAK Remote Access Error (syndrome 0x62): the requester's QP failed;
    // nothing after it. A sequence NAK on the way is loss, told after the failure.
    let r = run(&[
        req(SEND_ONLY, 1),
        req(SEND_ONLY, 3),
        resp(ACK, 2, 0x60),
        req(SEND_ONLY, 2),
        req(SEND_ONLY, 3),
        ack(3),
        req(SEND_ONLY, 4),
        resp(ACK, 4, 0x62),
    ]);
    assert_eq!((r.totals.nak_remote_access, r.totals.qps_failed), (1, 1));
    let first = &r.findings[0];
    assert_eq!(first.code(), "qp_failed");
    assert_eq!(first.severity, Severity::Error);
    assert_eq!(first.count, 1);
    assert!(first.cause().is_none(), "not a loss: {:?}", first.cause());
    let words = crate::report::findings::message(first, &r);
    assert!(
        words.contains("Remote Access Error")
            && words.contains("for PSN 4")
            && words.contains("status 10")
            && words.contains("198.18.0.1 → 198.18.0.2"),
        "{words}"
    );
    // Remote Operational Error too; a sequence NAK alone fails nothing.
    let r = run(&[req(SEND_ONLY, 1), resp(ACK, 1, 0x63)]);
    assert_eq!(r.totals.qps_failed, 1);
    assert!(crate::report::findings::message(&r.findings[0], &r).contains("status 11"));
    let r = run(&[
        req(SEND_ONLY, 1),
        resp(ACK, 1, 0x60),
        req(SEND_ONLY, 1),
        ack(1),
    ]);
    assert_eq!(r.totals.qps_failed, 0);
    assert!(finding(&r, "qp_failed").is_none());
}

#[test]
fn naks_that_reordering_explains_are_not_loss() {
    // A sent 1..=5 in order (identifications 11..=15); 2 came late, after 3 and 4. The
    // responder (which sees the tap's order) NAKed 2, took the late 2, had dropped 3 and 4
    // as out of sequence and NAKed 3 at the next packet; A resent 3..=5. Nothing was lost.
    let t = |i: u64| 1_000_000 + i * 1_000;
    let r = run_at(&[
        (t(1), req_id(SEND_ONLY, 1, 11)),
        (t(2), req_id(SEND_ONLY, 3, 13)),
        (t(3), req_id(SEND_ONLY, 4, 14)),
        (t(4), resp(ACK, 2, 0x60)),
        (t(5), req_id(SEND_ONLY, 2, 12)),
        (t(6), req_id(SEND_ONLY, 5, 15)),
        (t(7), resp(ACK, 3, 0x60)),
        (t(8), req_id(SEND_ONLY, 3, 16)),
        (t(9), req_id(SEND_ONLY, 4, 17)),
        (t(10), req_id(SEND_ONLY, 5, 18)),
        (t(11), ack(5)),
    ]);
    let tot = r.totals;
    assert_eq!(
        (
            tot.nak_psn_seq,
            tot.nak_psn_seq_reorder,
            tot.nak_psn_seq_gap_at_tap
        ),
        (2, 2, 0),
        "{:?}",
        r.findings
    );
    assert_eq!(tot.reordered_packets, 1);
    assert!(finding(&r, "nak_psn_seq").is_none(), "{:?}", r.findings);
    let f = finding(&r, "reordered_packets").expect("reordering finding");
    assert_eq!(f.cause(), Some((Cause::Reorder, Location::BeforeTap)));
    assert_eq!(f.severity, Severity::Warning);
    let words = crate::report::findings::message(f, &r);
    assert!(
        words.contains("2 NAKs") && words.contains("not of loss"),
        "{words}"
    );
    // The same NAKs with 2 lost before the tap (its resend came, no late original): loss.
    let r = run_at(&[
        (t(1), req_id(SEND_ONLY, 1, 11)),
        (t(2), req_id(SEND_ONLY, 3, 13)),
        (t(3), req_id(SEND_ONLY, 4, 14)),
        (t(4), resp(ACK, 2, 0x60)),
        (t(5), req_id(SEND_ONLY, 2, 15)),
        (t(6), req_id(SEND_ONLY, 3, 16)),
        (t(7), req_id(SEND_ONLY, 4, 17)),
        (t(8), ack(4)),
    ]);
    assert_eq!(
        (
            r.totals.nak_psn_seq_reorder,
            r.totals.nak_psn_seq_gap_at_tap
        ),
        (0, 1)
    );
    let f = finding(&r, "nak_psn_seq").expect("loss finding");
    assert_eq!(f.cause(), Some((Cause::NetworkLoss, Location::BeforeTap)));
}

/// Ten SENDs in order (PSNs and identifications 1..=10), acknowledged, so that the
/// identification is known to count up; then `rest`, given as (PSN, identification) for
/// requests (identification 0: a response with that PSN and syndrome).
fn after_ten_in_order(rest: &[(u32, u16, u8)]) -> Report {
    let t = |i: u64| 1_000_000 + i * 1_000;
    let mut v: Vec<(u64, Decoded)> = (1..=10u32)
        .map(|i| (t(u64::from(i)), req_id(SEND_ONLY, i, i as u16)))
        .collect();
    v.push((t(11), ack(10)));
    for (k, &(psn, id, syndrome)) in rest.iter().enumerate() {
        let at = t(12 + k as u64);
        v.push(if id == 0 {
            (at, resp(ACK, psn, syndrome))
        } else {
            (at, req_id(SEND_ONLY, psn, id))
        });
    }
    run_at(&v)
}

#[test]
fn naks_for_resends_that_came_late_are_reordering() {
    // After ten in order, A sent 11..=14 (identifications 11..=14); 12 came late, after 13
    // and 14, and after its own resend: the responder NAKed 12, A rewound to 12 at once
    // (resends 12 and 13 taken), the resend of 14 was itself delayed and the new 15
    // passed ahead of it, so the responder NAKed 14 — a PSN the tap had seen, whose resend
    // the run had not yet brought. Then the late original 12 and the late resend 14; A
    // resent 14 and 15 after the NAK. Nothing was lost: both NAKs are reordering's
    // (Soft-RoCE in the lab's reorder scenario, where a resend can beat a 2 ms delay).
    const NAK: u8 = 0x60;
    let r = after_ten_in_order(&[
        (11, 11, 0),
        (13, 13, 0),
        (14, 14, 0),
        (12, 0, NAK),
        (12, 15, 0),
        (13, 16, 0),
        (15, 18, 0),
        (14, 0, NAK),
        (12, 12, 0),
        (14, 17, 0),
        (14, 19, 0),
        (15, 20, 0),
        (15, 0, 0x1f),
    ]);
    let tot = r.totals;
    assert_eq!(
        (
            tot.nak_psn_seq,
            tot.nak_psn_seq_reorder,
            tot.nak_psn_seq_gap_at_tap
        ),
        (2, 2, 0),
        "{:?}",
        r.findings
    );
    assert!(finding(&r, "nak_psn_seq").is_none(), "{:?}", r.findings);
    let f = finding(&r, "reordered_packets").expect("reordering finding");
    assert_eq!(f.cause(), Some((Cause::Reorder, Location::BeforeTap)));
    // The same, but the delayed resend of 14 never comes (lost before the tap): the NAK
    // for 14 is loss before the tap, the NAK for 12 still reordering's.
    let r = after_ten_in_order(&[
        (11, 11, 0),
        (13, 13, 0),
        (14, 14, 0),
        (12, 0, NAK),
        (12, 15, 0),
        (13, 16, 0),
        (15, 18, 0),
        (14, 0, NAK),
        (12, 12, 0),
        (14, 19, 0),
        (15, 20, 0),
        (15, 0, 0x1f),
    ]);
    let tot = r.totals;
    assert_eq!(
        (
            tot.nak_psn_seq,
            tot.nak_psn_seq_reorder,
            tot.nak_psn_seq_gap_at_tap
        ),
        (2, 1, 1),
        "{:?}",
        r.findings
    );
    let f = finding(&r, "nak_psn_seq").expect("loss finding");
    assert_eq!(f.cause(), Some((Cause::NetworkLoss, Location::BeforeTap)));
}

#[test]
fn a_late_copy_ahead_of_the_resend_run_makes_a_reordering_nak() {
    // A sent 11..=18 (identifications 11..=18); 13 was lost before the tap and 17 came
    // late. The responder NAKed 13; A resent 13 and 14; then the late 17 passed ahead of
    // the resend of 15, which the responder was waiting for: it NAKed 15, though nothing
    // but 13 was lost (the lab's reorder run: a 2 ms-late copy of 1551797 between 1551704
    // and 1551705 of a resend run, then NAK 1551705).
    const NAK: u8 = 0x60;
    let r = after_ten_in_order(&[
        (11, 11, 0),
        (12, 12, 0),
        (14, 14, 0),
        (15, 15, 0),
        (16, 16, 0),
        (18, 18, 0),
        (13, 0, NAK),
        (13, 19, 0),
        (14, 20, 0),
        (17, 17, 0),
        (15, 0, NAK),
        (15, 21, 0),
        (16, 22, 0),
        (17, 23, 0),
        (18, 24, 0),
        (18, 0, 0x1f),
    ]);
    let tot = r.totals;
    assert_eq!(
        (
            tot.nak_psn_seq,
            tot.nak_psn_seq_reorder,
            tot.nak_psn_seq_gap_at_tap
        ),
        (2, 1, 1),
        "{:?}",
        r.findings
    );
    let f = finding(&r, "nak_psn_seq").expect("loss finding");
    assert_eq!(f.cause(), Some((Cause::NetworkLoss, Location::BeforeTap)));
}

#[test]
fn a_nak_that_leaves_after_its_late_original_is_reordering() {
    // 12 came one packet late (after 13). The responder NAKed 12 when 13 came, took the
    // late 12, dropped 13 and NAKed it when 14 came; both NAKs left after the late 12 had
    // passed the tap (Soft-RoCE's responder runs behind its receive queue). A rewound to
    // 12. Nothing was lost (the lab's reorder scenario, seen in 2 of 2 recordings).
    const NAK: u8 = 0x60;
    let r = after_ten_in_order(&[
        (11, 11, 0),
        (13, 13, 0),
        (12, 12, 0),
        (14, 14, 0),
        (12, 0, NAK),
        (13, 0, NAK),
        (12, 15, 0),
        (13, 16, 0),
        (14, 17, 0),
        (14, 0, 0x1f),
    ]);
    let tot = r.totals;
    assert_eq!(
        (
            tot.nak_psn_seq,
            tot.nak_psn_seq_reorder,
            tot.nak_psn_seq_gap_at_tap
        ),
        (2, 2, 0),
        "{:?}",
        r.findings
    );
    assert!(finding(&r, "nak_psn_seq").is_none(), "{:?}", r.findings);
}

#[test]
fn a_gap_on_a_qp_that_gave_up_is_network_loss_not_capture_loss() {
    // SENDs 1..=3, 2 lost before the tap every time; the requester's timer resends from 1
    // seven times (no ACK ever) and falls silent: the gap was never filled because the QP
    // gave up, not because the capture missed it.
    let mut frames = Vec::new();
    let mut id = 1u16;
    for round in 0..=7u64 {
        for p in [1u32, 3] {
            let t = 1_000_000 + round * 10_000_000 + u64::from(p) * 1_000;
            frames.push((t, req_id(SEND_ONLY, p, id)));
            id += 2;
        }
    }
    let r = run_at(&frames);
    let t = r.totals;
    assert_eq!(t.retry_exhausted, 1, "{:?}", r.findings);
    assert_eq!(
        (t.unrecovered_gap_events, t.capture_loss_gap_events),
        (1, 0)
    );
    assert!(finding(&r, "capture_loss").is_none(), "{:?}", r.findings);
    let gaps = finding(&r, "unrecovered_gaps").expect("unrecovered gaps");
    assert_eq!(
        gaps.cause(),
        Some((Cause::NetworkLoss, Location::BeforeTap))
    );
    assert_eq!(r.findings[0].code(), "retry_exhausted");
}

#[test]
fn only_recorded_late_originals_explain_naks() {
    // A flow in trouble (allocated by anything: here one noted skip) holds no late
    // original yet: a NAK for PSN 0 is not reordering's (a never-written slot is not a
    // late original of PSN 0 with nothing ahead of it).
    use crate::analysis::stop;
    let mut f = lone_flow();
    stop::note_skip(&mut f, Psn(100), Psn(101));
    assert!(!stop::passed_ahead_of_late(&f, Psn(0)));
    assert!(!stop::skipped(&f, Psn(0)));
    assert!(stop::skipped(&f, Psn(100)));
    // The ring keeps the latest eight: the first skip is gone after eight more.
    for i in 0..8 {
        stop::note_skip(&mut f, Psn(200 + 10 * i), Psn(201 + 10 * i));
    }
    assert!(!stop::skipped(&f, Psn(100)));
    assert!(stop::skipped(&f, Psn(270)));
}

#[test]
fn a_nak_for_a_late_first_packet_is_reordering() {
    // The lab's reorder run (reoD/12): the stream's first packet, 1, came 2 ms late; the
    // tap saw 2 first, then the responder's NAK of 1, then the late 1. The NAK named a PSN
    // that never passed the tap while it waited, so it is not loss after the tap; the late
    // 1 shows it was reordering's.
    const NAK: u8 = 0x60;
    let t = |i: u64| 1_000_000 + i * 1_000;
    let mut v = vec![
        (t(0), req_id(SEND_ONLY, 2, 2)),
        (t(1), resp(ACK, 1, NAK)),
        (t(2), req_id(SEND_ONLY, 3, 3)),
        (t(3), req_id(SEND_ONLY, 4, 4)),
        (t(4), req_id(SEND_ONLY, 1, 1)),
    ];
    for p in 1..=4u32 {
        v.push((t(4 + u64::from(p)), req_id(SEND_ONLY, p, 4 + p as u16)));
    }
    v.push((t(10), ack(4)));
    v.push((t(11), req_id(SEND_ONLY, 5, 9)));
    v.push((t(12), ack(5)));
    let r = run_at(&v);
    let tot = r.totals;
    assert_eq!(
        (
            tot.nak_psn_seq,
            tot.nak_psn_seq_reorder,
            tot.nak_psn_seq_gap_at_tap
        ),
        (1, 1, 0),
        "{:?}",
        r.findings
    );
    assert_eq!(tot.reordered_packets, 1);
    assert!(finding(&r, "nak_psn_seq").is_none(), "{:?}", r.findings);
}

#[test]
fn a_late_resend_of_a_late_first_packet_is_a_resend() {
    // The CI's reorder run: the stream's first packet, 1, came late (after 2..=10); the
    // responder NAKed it; A resent 1..=12, and that resend of 1 came late too (after the
    // resends of 2..=5). The first late 1 was the original, the second its resend: one
    // reordered, twelve resent.
    const NAK: u8 = 0x60;
    let mut v = Vec::new();
    for p in 2..=10u32 {
        v.push(req_id(SEND_ONLY, p, p as u16));
        if p == 2 {
            v.push(resp(ACK, 1, NAK));
        }
    }
    for p in [1u32, 11, 12] {
        v.push(req_id(SEND_ONLY, p, p as u16));
    }
    for p in [2u32, 3, 4, 5, 1, 6, 7, 8, 9, 10, 11, 12] {
        v.push(req_id(SEND_ONLY, p, 12 + p as u16));
    }
    v.push(ack(12));
    let r = run(&v);
    let tot = r.totals;
    assert_eq!(
        (tot.reordered_packets, tot.retransmitted_packets),
        (1, 12),
        "{:?}",
        r.findings
    );
    assert_eq!((tot.nak_psn_seq, tot.nak_psn_seq_reorder), (1, 1));
}

#[test]
fn an_original_sent_just_before_a_rewind_and_overtaken_by_its_resend_is_reordered() {
    // The lab's reorder run (reoD/18): 10, the last new PSN before A rewound to 5, came
    // late; the rewind's resend of 10 passed first and was taken for new; the late 10
    // arrived 50 packets later, after the resend's record had left the recent-PSN ring.
    // Its identification is earlier than the rewind's: it is the original, reordered.
    const NAK: u8 = 0x60;
    let mut v = Vec::new();
    for p in 1..=9u32 {
        v.push(req_id(SEND_ONLY, p, p as u16));
    }
    v.push(resp(ACK, 5, NAK));
    for p in 5..=60u32 {
        v.push(req_id(SEND_ONLY, p, 6 + p as u16));
    }
    v.push(req_id(SEND_ONLY, 10, 10));
    v.push(ack(60));
    let r = run(&v);
    let tot = r.totals;
    assert_eq!(
        (tot.reordered_packets, tot.retransmitted_packets),
        (1, 6),
        "{:?}",
        r.findings
    );
}

#[test]
fn late_originals_inside_a_kept_span_do_not_push_it_out() {
    // The lab's reorder run: PSN 100298 came 75 PSNs late, then eight more late originals
    // inside its span, then the NAK for 100299 (dropped for passing ahead of 100298). The
    // eight add nothing to the first's span and must not push it out of the ring.
    use crate::analysis::stop;
    let mut f = lone_flow();
    f.req.next = Psn(100374);
    stop::note_late(&mut f, Psn(100298));
    for p in [
        100304, 100313, 100318, 100321, 100349, 100355, 100361, 100363,
    ] {
        stop::note_late(&mut f, Psn(p));
    }
    assert!(stop::passed_ahead_of_late(&f, Psn(100299)));
    // A late original past every kept span still takes a slot of its own.
    f.req.next = Psn(100500);
    stop::note_late(&mut f, Psn(100450));
    assert!(stop::passed_ahead_of_late(&f, Psn(100460)));
    assert!(!stop::passed_ahead_of_late(&f, Psn(100400)));
}

#[test]
fn late_originals_among_a_flows_first_packets_are_reordering() {
    // The lab's reorder scenario (a recording of 182 NAKs): the capture's fifth packet
    // was delayed, before eight steps of the identification had shown the send order.
    // 2 and 6 came late; the responder NAKed 2 and then 3 (both after the late 2 passed
    // the tap); A resent 2..=9. Nothing was lost.
    const NAK: u8 = 0x60;
    let t = |i: u64| 1_000_000 + i * 1_000;
    let mut v: Vec<(u64, Decoded)> = [1u32, 3, 4, 5, 7, 8, 2, 6, 9]
        .iter()
        .enumerate()
        .map(|(i, &p)| (t(i as u64), req_id(SEND_ONLY, p, p as u16)))
        .collect();
    v.push((t(10), resp(ACK, 2, NAK)));
    v.push((t(11), resp(ACK, 3, NAK)));
    for p in 2..=9u32 {
        v.push((t(10 + u64::from(p)), req_id(SEND_ONLY, p, 8 + p as u16)));
    }
    v.push((t(20), ack(9)));
    let r = run_at(&v);
    let tot = r.totals;
    assert_eq!(
        (
            tot.nak_psn_seq,
            tot.nak_psn_seq_reorder,
            tot.nak_psn_seq_gap_at_tap
        ),
        (2, 2, 0),
        "{:?}",
        r.findings
    );
    assert_eq!((tot.reordered_packets, tot.retransmitted_packets), (2, 8));
    assert!(finding(&r, "nak_psn_seq").is_none(), "{:?}", r.findings);
}
