//! A request stream that ended without finishing: a requester that retried one PSN again
//! and again with no progress and then fell silent (it exhausted its retries: the QP went
//! to the error state, `IBV_WC_RETRY_EXC_ERR`), or one that stopped in the middle of a
//! message and never resumed (the tap is behind a link that died: it sees no retries).
//! Decided once, when the flow ends; followed as it goes by the retries of one PSN and the
//! PSNs resend runs skipped at the tap (their resends lost before it).

use super::flow::Flow;
use super::trouble::{Retry, Trouble};
pub use super::trouble::{Stop, StopKind};
use dissectors::{Psn, Transport};

/// Rewinds to one PSN with no progress that make a requester that then falls silent one
/// that gave up. IBTA's retry count is at most 7 (Soft-RoCE and perftest use 7; some
/// applications fewer): three retries of one PSN and silence after is no longer a loss
/// the requester is recovering from.
pub(crate) const GIVE_UP_RETRIES: u32 = 3;

/// The most retries a requester makes (IBTA's 3-bit retry count): a stream seen
/// retrying one PSN this many times has given up or is about to.
pub(crate) const MAX_RETRIES: u32 = 7;

/// Decides how the flow's request stream ended, counts it and keeps it for the summary;
/// returns whether the requester gave up (its open gaps are then losses never
/// recovered, not capture loss). `end_ns` is the capture's last frame: a requester that
/// gave up is silent after its last retry for longer than its retries were apart (or
/// made the most retries any requester makes); one still retrying when the capture
/// ended had not given up, and its connection made no progress (a stall).
pub(super) fn settle_stop(f: &mut Flow, end_ns: u64) -> bool {
    let rc = matches!(f.transport, Some(Transport::Rc | Transport::Xrc));
    if !rc || !f.req.started {
        return false;
    }
    if let Some(r) = failing(f) {
        let apart = (r.last_ns - r.first_ns) / u64::from(r.count - 1);
        let silent = end_ns.saturating_sub(f.last_ts) > 2 * apart.max(1);
        let gave_up = silent || r.count == MAX_RETRIES;
        let kind = if gave_up {
            f.counters.retry_exhausted = 1;
            StopKind::RetryExhausted
        } else {
            f.counters.stalled = 1;
            StopKind::Stalled
        };
        f.trouble_mut().stop = Some(Stop {
            kind,
            psn: r.psn,
            retries: r.count,
            first_ns: r.first_ns,
            last_ns: f.last_ts,
        });
        return gave_up;
    }
    // A transfer under way (at least one message done before) that stops mid-message; a
    // stream that shows only part of its first message says nothing of how it ended.
    if f.req.mid_message && f.messages > 0 {
        f.counters.stalled = 1;
        f.trouble_mut().stop = Some(Stop {
            kind: StopKind::Stalled,
            psn: f.req.next,
            retries: 0,
            first_ns: f.req.last_new_ts,
            last_ns: f.last_ts,
        });
    }
    false
}

/// The retries of one PSN of a requester making no progress: at least
/// `GIVE_UP_RETRIES` rewinds to it, none acknowledged (an ACK past it ends the count:
/// `gaps::acked`), and no PSN sent for the first time since the second of them. The
/// first resend run may go past the highest PSN sent before it (the timer fired while
/// the window was still being sent: the lab's dead-link run sent 11950613..=11950735,
/// rewound to 11950612 and resent it through 11950740); a requester that went on
/// after its retries sends new PSNs after the later ones.
pub(super) fn failing(f: &Flow) -> Option<Retry> {
    let r = f.trouble.as_deref().and_then(|t| t.retry)?;
    (r.count >= GIVE_UP_RETRIES && f.req.last_new_ts <= r.second_ns).then_some(r)
}

/// A rewind to `p`: the same PSN as the rewinds before it with no progress since (an ACK
/// past it ends the count: `gaps::acked`), or a new one.
pub(super) fn note_retry(f: &mut Flow, p: Psn, ts: u64) {
    let t = f.trouble_mut();
    match t.retry.as_mut() {
        Some(r) if r.psn == p => {
            r.count += 1;
            if r.count == 2 {
                r.second_ns = ts;
            }
            r.last_ns = ts;
        }
        _ => {
            t.retry = Some(Retry {
                psn: p,
                count: 1,
                first_ns: ts,
                second_ns: ts,
                last_ns: ts,
            });
        }
    }
}

/// A resend run skipped `[from, to)`: those resends were lost before the tap (a NAK or a
/// timer retry naming one of them points before the tap).
pub(super) fn note_skip(f: &mut Flow, from: Psn, to: Psn) {
    let t = f.trouble_mut();
    t.run_skips.push((from, to.diff(from) as u32));
}

/// Whether one of the latest resend runs skipped `p` at the tap.
pub(super) fn skipped(f: &Flow, p: Psn) -> bool {
    f.trouble.as_deref().is_some_and(|t| {
        t.run_skips.iter().any(|&(from, n)| {
            let d = p.diff(from);
            d >= 0 && (d as u32) < n
        })
    })
}

/// A late original of `p` passed the tap (reordering before it): the PSNs that passed
/// ahead of it were dropped by the responder as out of sequence, and a NAK for one of them
/// is reordering, not loss; so is a NAK that named `p` while it was missing. A late
/// original inside the span of one already kept adds nothing and takes no slot: the
/// lab's reorder run had nine late originals pass the tap inside one 75-PSN span before
/// the responder NAKed the PSN after the first of them.
pub(super) fn note_late(f: &mut Flow, p: Psn) {
    let ahead = f.req.next.diff(p) - 1;
    let t = f.trouble_mut();
    let end = p.plus(ahead.max(0) as u32);
    let covered = t.late.iter().any(|&(q, n)| {
        let d = p.diff(q);
        d >= 0 && end.diff(q.plus(n)) <= 0
    });
    if ahead > 0 && !covered {
        t.late.push((p, ahead as u32));
    }
    late_nak(t, p);
}

/// A late copy `p` from an earlier sending passed the tap. Where it is ahead of the PSN
/// the responder waits for — the next of the resend run in progress, or the one after
/// the latest the responder acknowledged — the responder meets it first and NAKs that
/// PSN though nothing was lost: reordering's NAK (the lab's reorder run: a 2 ms-late copy
/// of PSN 1551797 between 1551704 and 1551705 of a resend run, then NAK 1551705; and
/// after the responder had acknowledged 1551780, NAK 1551781).
pub(super) fn note_ahead_of_expected(f: &mut Flow, p: Psn) {
    let run = f.req.episode.is_some().then_some(f.req.cursor);
    let acked = f.req.acked_any.then(|| f.req.acked_to.plus(1));
    for e in [run, acked].into_iter().flatten() {
        if p.diff(e) > 0 {
            let t = f.trouble_mut();
            if !t.waiting.iter().any(|&w| w == e) {
                t.waiting.push(e);
            }
        }
    }
}

/// A late packet of `p` passed the tap that dropped nothing at the responder (an original
/// its own resend overtook): a NAK that named `p` while it was missing was still
/// reordering's.
pub(super) fn note_late_nak(f: &mut Flow, p: Psn) {
    if let Some(t) = f.trouble.as_deref_mut() {
        late_nak(t, p);
    }
}

fn late_nak(t: &mut Trouble, p: Psn) {
    let naks = &mut t.gap_naks;
    if let Some(i) = (0..naks.len()).find(|&i| *naks.get(i) == Some(p)) {
        *naks.get_mut(i) = None;
        t.reorder_naks += 1;
    }
}

/// A sequence NAK named `p`, missing at the tap (counted as lost before the tap until a
/// late packet of `p` shows otherwise).
pub(super) fn note_gap_nak(f: &mut Flow, p: Psn) {
    let t = f.trouble_mut();
    t.gap_naks.push(Some(p));
}

/// Whether a sequence NAK for `p` is one of the latest late originals' doing: `p` passed
/// the tap ahead of one (the responder dropped it as out of sequence), or is that late
/// original itself — the responder, which sees the tap's order, met a packet after `p`
/// before `p`, and its NAK can leave after `p` has come in (Soft-RoCE's responder runs
/// behind its receive queue by tens of packets).
pub(super) fn passed_ahead_of_late(f: &Flow, p: Psn) -> bool {
    f.trouble.as_deref().is_some_and(|t| {
        t.late.iter().any(|&(q, n)| {
            let d = p.diff(q);
            d >= 0 && (d as u32) <= n
        }) || t.waiting.iter().any(|&w| w == p)
    })
}

/// Moves the NAKs late originals explained from the responder flow's `gap_at_tap` to its
/// `reorder` count (done when the next response of the pair passes the tap).
pub(super) fn settle_reorder_naks(resp: &mut Flow, req: &mut Flow) {
    let Some(n) = req
        .trouble
        .as_deref_mut()
        .map(|t| std::mem::take(&mut t.reorder_naks))
    else {
        return;
    };
    let n = u64::from(n).min(resp.counters.nak_psn_seq_gap_at_tap);
    if n > 0 {
        resp.counters.nak_psn_seq_gap_at_tap -= n;
        resp.counters.nak_psn_seq_reorder += n;
    }
}
