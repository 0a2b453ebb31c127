//! PSN gaps of a stream: opened when a PSN is skipped, filled by the resend (or the late
//! original) that carries it, marked as received when an ACK covers it with no resend seen
//! (then only the capture missed it), settled as unrecovered when it falls too far behind
//! or the flow ends. Also the ACK side of the request stream (ACK latency).

use super::buckets::Buckets;
use super::events::{Event, EventKind, EventLog};
use super::flow::{Flow, Gap};
use dissectors::Psn;

/// A gap this far behind the stream can no longer be filled; it is settled.
const GAP_HORIZON: i32 = 1 << 22;

pub(super) fn in_gap(f: &Flow, p: Psn) -> bool {
    (0..f.req.gaps.len()).any(|i| {
        let g = f.req.gaps.get(i);
        g.len > 0 && g.contains(p)
    })
}

/// The responder acknowledged everything up to and including `p`.
pub(super) fn acked(req_flow: &mut Flow, p: Psn, ts: u64, all: &mut Buckets) {
    // Progress past the PSN being retried: the retries worked.
    if let Some(t) = req_flow.trouble.as_deref_mut() {
        if t.retry.is_some_and(|r| p.diff(r.psn) >= 0) {
            t.retry = None;
        }
    }
    let hist = &mut req_flow.ack_latency;
    req_flow.req.ackreq.pop_front_while(
        |(a, _)| a.diff(p) <= 0,
        |(_, t0)| {
            let d = ts - t0.min(ts);
            hist.record(d);
            all.record(d);
        },
    );
    // A gap the responder acknowledges without a resend having passed the tap was
    // received: only the capture missed it.
    for i in 0..req_flow.req.gaps.len() {
        let g = req_flow.req.gaps.get_mut(i);
        if g.len > 0 && g.start.plus(g.len - 1).diff(p) <= 0 {
            g.acked = true;
        }
    }
}

pub(super) fn open_gap(
    f: &mut Flow,
    resp: bool,
    start: Psn,
    len: u32,
    ts: u64,
    log: &mut EventLog,
) {
    f.counters.psn_gap_events += 1;
    f.counters.missing_psns += u64::from(len);
    let mut e = Event::new(ts, f.id, EventKind::PsnGap).psn(start);
    e.count = u64::from(len);
    log.push(e);
    let gap = Gap {
        start,
        len,
        t_ns: ts,
        nak: false,
        acked: false,
        part: false,
        late: false,
    };
    if resp {
        f.counters.read_missing_responses += u64::from(len);
    }
    let gaps = if resp {
        &mut f.resp.gaps
    } else {
        &mut f.req.gaps
    };
    let evicted = gaps.push(gap);
    // Gaps far behind the stream can no longer be filled.
    let mut old = [Gap::default(); super::flow::GAP_SLOTS];
    let mut n = 0;
    gaps.pop_front_while(
        |g| start.diff(g.start) > GAP_HORIZON,
        |g| {
            old[n] = g;
            n += 1;
        },
    );
    for g in evicted.iter().chain(old[..n].iter()) {
        unrecovered(f, g, log);
    }
}

/// A gap ends without its PSNs ever passing the tap (once: a gap already counted at the
/// gap timeout is not counted again).
pub(super) fn unrecovered(f: &mut Flow, g: &Gap, log: &mut EventLog) {
    if g.len == 0 || g.late {
        return; // filled, or counted
    }
    f.counters.unrecovered_gap_events += 1;
    let capture_loss = g.acked || !g.nak;
    if capture_loss {
        f.counters.capture_loss_gap_events += 1;
    }
    let mut e = Event::new(g.t_ns, f.id, EventKind::GapUnrecovered).psn(g.start);
    e.count = u64::from(g.len);
    e.capture_loss = Some(capture_loss);
    log.push(e);
}

/// Counts the gaps open longer than the gap timeout at capture time `now` as unrecovered
/// now, while the flow lives; they stay open, so that a late fill is still seen.
pub(super) fn age(f: &mut Flow, now: u64, log: &mut EventLog) {
    let limit = now.saturating_sub(log.gap_timeout_ns);
    // A requester retrying one PSN with no progress is failing to recover these: lost in
    // the network, as `super::stop::settle_stop` would say when it gives up, not packets
    // the capture missed.
    let failing = super::stop::failing(f).is_some();
    for resp in [false, true] {
        let gaps = if resp { &f.resp.gaps } else { &f.req.gaps };
        let n = gaps.len();
        for i in 0..n {
            let gaps = if resp {
                &mut f.resp.gaps
            } else {
                &mut f.req.gaps
            };
            let g = gaps.get_mut(i);
            if g.len > 0 && !g.late && g.t_ns < limit {
                if failing {
                    (g.nak, g.acked) = (true, false);
                }
                let was = *g;
                g.late = true;
                unrecovered(f, &was, log);
            }
        }
    }
}

/// A gap being filled at `ts`: counted as unrecovered first if it was open longer than
/// the gap timeout (whether or not a sweep saw it so), then as filled late. Returns
/// whether it was late.
fn filled_late(f: &mut Flow, g: &mut Gap, ts: u64, log: &mut EventLog) -> bool {
    if !g.late && ts.saturating_sub(g.t_ns) > log.gap_timeout_ns {
        unrecovered(f, g, log);
        g.late = true;
    }
    if g.late {
        f.counters.gaps_filled_late += 1;
    }
    g.late
}

/// A PSN passing the tap again fills the gap that lacked it; returns the gap as it was.
pub(super) fn fill_gaps(
    f: &mut Flow,
    resp: bool,
    p: Psn,
    ts: u64,
    log: &mut EventLog,
) -> Option<Gap> {
    let gaps = if resp {
        &mut f.resp.gaps
    } else {
        &mut f.req.gaps
    };
    for i in 0..gaps.len() {
        let g = gaps.get_mut(i);
        if g.len > 0 && g.contains(p) {
            let mut filled = *g;
            g.len = 0; // filled: the resend covers the rest (go-back-N)
            if filled_late(f, &mut filled, ts, log) || filled.part {
                return Some(filled);
            }
            f.counters.recovered_gap_events += 1;
            log.push(Event::new(ts, f.id, EventKind::GapRecovered).psn(filled.start));
            return Some(filled);
        }
    }
    None
}

/// A late original fills only its own PSN of a gap (others of the gap may be late too,
/// or lost): the gap shrinks, or splits in two around it, and counts as recovered once
/// nothing of it is missing.
pub(super) fn fill_one(f: &mut Flow, p: Psn, ts: u64, log: &mut EventLog) {
    let gaps = &mut f.req.gaps;
    let Some(i) = (0..gaps.len()).find(|&i| {
        let g = gaps.get(i);
        g.len > 0 && g.contains(p)
    }) else {
        return;
    };
    let g = *gaps.get(i);
    let before = p.diff(g.start) as u32;
    let after = g.len - before - 1;
    let gm = gaps.get_mut(i);
    if before == 0 {
        gm.start = p.next();
        gm.len = after;
    } else {
        gm.len = before;
        if after > 0 {
            let rest = Gap {
                start: p.next(),
                len: after,
                part: true,
                ..g
            };
            if let Some(old) = gaps.push(rest) {
                unrecovered(f, &old, log);
            }
        }
    }
    let mut whole = g;
    if before == 0 && after == 0 && !filled_late(f, &mut whole, ts, log) && !g.part {
        f.counters.recovered_gap_events += 1;
        log.push(Event::new(ts, f.id, EventKind::GapRecovered).psn(g.start));
    }
}
