//! Issue 39: counts that stay true over days — idle expiry by time, a QP number reused
//! by a new connection, gaps classified unrecovered while their flow lives, ICRC cut by
//! the snaplen.

use super::*;
use crate::analysis::expire::{psn_far, PSN_FAR};

const S: u64 = 1_000_000_000;

fn cfg() -> Config {
    Config {
        idle_timeout_ns: 2 * S,
        gap_timeout_ns: 5 * S,
        ..Config::default()
    }
}

/// One clean exchange from `t0`: SENDs `psn..psn+n` A -> B, each ACKed.
fn exchange(t0: u64, psn: u32, n: u32) -> Vec<(u64, Decoded)> {
    let mut v = Vec::new();
    for i in 0..n {
        let t = t0 + u64::from(i) * 10_000;
        v.push((t, req_a(SEND_ONLY, psn + i)));
        v.push((t + 5_000, ack(psn + i)));
    }
    v
}

fn feed(a: &mut Analyzer, frames: &[(u64, Decoded)]) {
    for (t, d) in frames {
        a.ingest(*t, 0, d);
    }
}

#[test]
fn far_is_beyond_a_quarter_of_the_psn_space_either_way_across_the_wrap() {
    let next = Psn(0xff_fff0);
    assert!(!psn_far(next, next));
    assert!(!psn_far(next.plus(PSN_FAR as u32), next));
    assert!(psn_far(next.plus(PSN_FAR as u32 + 1), next));
    assert!(!psn_far(next.minus(PSN_FAR as u32), next));
    assert!(psn_far(next.minus(PSN_FAR as u32 + 1), next));
    assert!(psn_far(next.plus(1 << 23), next), "the opposite PSN is far");
}

#[test]
fn a_qpn_back_after_silence_is_a_new_flow_not_a_resend() {
    // The same exchange (same QPs, same PSNs) three times, 3 s apart with a 2 s idle
    // timeout: without expiry the second run would be 10 resends of the first.
    let mut a = Analyzer::new(cfg());
    for k in 0..3 {
        feed(&mut a, &exchange(S + k * 3 * S, 100, 10));
    }
    // Fewer frames than a sweep's period: retired on their next frame.
    const { assert!(60 < SWEEP_EVERY) };
    let r = a.finish();
    let t = r.totals;
    assert_eq!(t.flows, 6);
    assert_eq!(t.flows_expired, 4, "two flows per pause; the last two live");
    assert_eq!(t.connections, 3);
    assert_eq!(
        (
            t.retransmitted_packets,
            t.duplicate_packets,
            t.psn_gap_events
        ),
        (0, 0, 0)
    );
    assert_eq!(t.flows_restarted, 0);
}

#[test]
fn a_silence_shorter_than_the_idle_timeout_continues_the_flow() {
    let mut a = Analyzer::new(cfg());
    feed(&mut a, &exchange(S, 100, 10));
    feed(&mut a, &exchange(2 * S + S / 2, 110, 10));
    let t = a.finish().totals;
    assert_eq!((t.flows, t.flows_expired, t.flows_restarted), (2, 0, 0));
}

#[test]
fn the_clock_expires_flows_no_frame_comes_for() {
    let mut a = Analyzer::new(cfg());
    feed(&mut a, &exchange(S, 100, 10));
    // Wall clock of another epoch: only its progress counts.
    let wall = 7_000 * S;
    a.advance(wall);
    a.advance(wall + S);
    assert_eq!(a.live_flows(), 2);
    a.advance(wall + 3 * S);
    assert_eq!(a.live_flows(), 0, "idle 3 s > 2 s");
    let s = a.snapshot(0);
    assert_eq!((s.totals.flows, s.totals.flows_expired), (2, 2));
    // New frames restart the clock's reference: nothing expires at once.
    feed(&mut a, &exchange(10 * S, 500, 2));
    a.advance(wall + 4 * S);
    assert_eq!(a.live_flows(), 2);
}

#[test]
fn a_far_psn_is_a_new_connection_on_a_reused_qpn() {
    let mut a = Analyzer::new(cfg());
    feed(&mut a, &exchange(S, 100, 10));
    // No silence, but the PSN is from another connection (a random initial PSN).
    let far = 100 + 10 + PSN_FAR as u32 + 5;
    feed(&mut a, &exchange(S + S / 10, far, 10));
    let t = a.finish().totals;
    assert_eq!(t.flows_restarted, 1);
    assert_eq!(t.flows, 4, "both directions begin again");
    assert_eq!(t.connections, 2);
    assert_eq!(
        (t.psn_gap_events, t.retransmitted_packets, t.flows_expired),
        (0, 0, 0)
    );
}

#[test]
fn a_near_jump_is_a_gap_not_a_new_connection() {
    let mut a = Analyzer::new(cfg());
    feed(&mut a, &exchange(S, 100, 10));
    feed(&mut a, &exchange(S + S / 10, 110 + 1000, 3));
    let t = a.finish().totals;
    assert_eq!((t.flows_restarted, t.flows, t.psn_gap_events), (0, 2, 1));
}

/// SENDs 0, 1, then 3.. every 100 ms from `t0` until `until`: PSN 2 never passes the tap.
fn with_gap(t0: u64, until: u64) -> Vec<(u64, Decoded)> {
    let mut v = vec![(t0, req(SEND_ONLY, 0)), (t0 + 1000, req(SEND_ONLY, 1))];
    let (mut t, mut p) = (t0 + 2000, 3);
    while t < until {
        v.push((t, req(SEND_ONLY, p)));
        (t, p) = (t + S / 10, p + 1);
    }
    v
}

#[test]
fn a_gap_open_past_the_gap_timeout_is_unrecovered_while_the_flow_lives() {
    let mut a = Analyzer::new(cfg());
    let frames = with_gap(S, 7 * S);
    let (before, after) = frames.split_at(frames.iter().position(|f| f.0 > 5 * S).unwrap());
    feed(&mut a, before);
    a.advance(100 * S);
    assert_eq!(a.snapshot(0).totals.unrecovered_gap_events, 0, "4 s < 5 s");
    feed(&mut a, after);
    // 6 s open: counted on the clock's tick, the flow still live.
    a.advance(101 * S);
    let s = a.snapshot(0).totals;
    assert_eq!(a.live_flows(), 1);
    assert_eq!(
        (
            s.psn_gap_events,
            s.unrecovered_gap_events,
            s.capture_loss_gap_events
        ),
        (1, 1, 1)
    );
    let t = a.finish().totals;
    assert_eq!(
        t.unrecovered_gap_events, 1,
        "not counted again when retired"
    );
    assert_eq!((t.recovered_gap_events, t.gaps_filled_late), (0, 0));
    let unrecovered = |r: &Report| {
        r.events
            .iter()
            .filter(|e| e.kind == EventKind::GapUnrecovered)
            .count()
    };
    let mut b = Analyzer::new(cfg());
    feed(&mut b, &with_gap(S, 7 * S));
    b.advance(0);
    b.advance(S);
    assert_eq!(unrecovered(&b.finish()), 1);
}

#[test]
fn a_gap_filled_after_the_timeout_is_unrecovered_and_filled_late() {
    // Counted by a sweep first, or found late only when filled: the same counts.
    for tick in [true, false] {
        let mut a = Analyzer::new(cfg());
        let mut frames = with_gap(S, 7 * S);
        let next = frames.len() as u32 + 1;
        let mut tail = vec![(7 * S, req(SEND_ONLY, 2))];
        tail.extend((3..next).map(|p| (7 * S + u64::from(p), req(SEND_ONLY, p))));
        tail.push((7 * S + 1000, req(SEND_ONLY, next)));
        feed(&mut a, &frames);
        if tick {
            a.advance(0);
            a.advance(S);
            assert_eq!(a.snapshot(0).totals.unrecovered_gap_events, 1);
        }
        frames.clear();
        feed(&mut a, &tail);
        let t = a.finish().totals;
        assert_eq!(
            (
                t.psn_gap_events,
                t.unrecovered_gap_events,
                t.gaps_filled_late,
                t.recovered_gap_events
            ),
            (1, 1, 1, 0),
            "tick {tick}"
        );
    }
}

#[test]
fn a_gap_filled_in_time_is_recovered_as_before() {
    let mut a = Analyzer::new(cfg());
    let mut frames = with_gap(S, 3 * S);
    frames.push((3 * S, req(SEND_ONLY, 2)));
    feed(&mut a, &frames);
    a.advance(0);
    a.advance(10 * S);
    let t = a.finish().totals;
    assert_eq!(
        (
            t.recovered_gap_events,
            t.unrecovered_gap_events,
            t.gaps_filled_late
        ),
        (1, 0, 0)
    );
}

#[test]
fn icrc_cut_by_the_snaplen_is_counted_and_said_with_the_snaplen() {
    let cut = |psn| {
        let mut d = with(req(SEND_ONLY, psn), |r| r.icrc = IcrcStatus::Truncated);
        d.cap_len = 128;
        d.stop.kind = dissectors::StopKind::Truncated;
        d
    };
    let mut frames: Vec<Decoded> = (0..5).map(cut).collect();
    frames.push(with(req(SEND_ONLY, 5), |r| r.icrc = IcrcStatus::Absent));
    // Cut before its headers ended: truncated, but not a RoCE packet.
    let mut short = frame();
    short.cap_len = 30;
    short.stop.kind = dissectors::StopKind::Truncated;
    frames.push(short);
    let r = run(&frames);
    let t = r.totals;
    assert_eq!((t.icrc_cut, t.cut_at_bytes, t.icrc_unchecked), (5, 128, 6));
    let f = r.findings.iter().find(|f| f.code() == "truncated").unwrap();
    assert_eq!(
        message(f, &r),
        "ICRC not checked on 5 frames: the capture cut them at 128 bytes; \
         1 more frames cut before their headers ended"
    );
    // Cut at different lengths (a damaged file, not one snaplen): no length claimed.
    let mut odd = cut(9);
    odd.cap_len = 90;
    frames.push(odd);
    let r = run(&frames);
    let f = r.findings.iter().find(|f| f.code() == "truncated").unwrap();
    assert_eq!((r.totals.icrc_cut, r.totals.cut_at_bytes), (6, 0));
    assert!(message(f, &r).starts_with("ICRC not checked on 6 frames: the capture cut them short;"));
    let clean = run(&[req(SEND_ONLY, 1)]).totals;
    assert_eq!((clean.icrc_cut, clean.cut_at_bytes), (0, 0));
}

#[test]
fn a_gap_of_a_requester_that_keeps_retrying_is_network_loss_when_it_ages() {
    // 2 is lost before the tap; the requester retries from it again and again (each
    // resend of 2 lost before the tap too, the tap sees 3), then falls silent: the gap
    // ages while the flow lives, and it is a loss the requester failed to recover, as a
    // flow ending so says (`retry_exhausted`), not capture loss.
    let mut frames = vec![
        (S, req_id(SEND_ONLY, 1, 1)),
        (S + 1000, req_id(SEND_ONLY, 3, 3)),
    ];
    for k in 1..=4u16 {
        frames.push((S + u64::from(k) * S / 2, req_id(SEND_ONLY, 3, 3 + k)));
    }
    let mut a = Analyzer::new(Config {
        idle_timeout_ns: 60 * S,
        ..cfg()
    });
    feed(&mut a, &frames);
    a.advance(0);
    a.advance(4 * S);
    assert_eq!(a.live_flows(), 1, "silent 4 s: still live");
    let s = a.snapshot(0).totals;
    assert_eq!(
        (s.unrecovered_gap_events, s.capture_loss_gap_events),
        (1, 0)
    );
    let t = a.finish().totals;
    // The capture ends with its last retry: a stall, not known to have given up.
    assert_eq!(
        (
            t.unrecovered_gap_events,
            t.capture_loss_gap_events,
            t.stalled_connections
        ),
        (1, 0, 1)
    );
}
