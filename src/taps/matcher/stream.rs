//! A direction's request stream and its recent losses: PSN gaps at the first tap are
//! losses before it, resends are charged to the loss of their PSN.

use super::*;

/// RC requests: the PSN stream whose gaps are losses.
pub(super) fn is_request(op: u8) -> bool {
    op >> 5 == 0 && matches!(op & 0x1f, 0x00..=0x0c | 0x13..=0x16)
}

/// RC SEND, WRITE and READ Response First and Middle packets: their payload is one path
/// MTU, which says how many PSNs a READ request spans.
pub(super) fn full_payload(op: u8) -> bool {
    op >> 5 == 0 && matches!(op & 0x1f, 0x00 | 0x01 | 0x06 | 0x07 | 0x0d | 0x0e)
}

pub(super) fn note_loss(s: &mut Segment, psn: u32, when: u64) {
    s.lost += 1;
    if s.psns.len() < LISTED_PSNS {
        s.psns.push(psn);
    }
    s.first_ns.get_or_insert(when);
    s.last_ns = Some(when);
}

/// Takes back a loss [`note_loss`] counted.
fn unnote_loss(s: &mut Segment, psn: u32) {
    s.lost = s.lost.saturating_sub(1);
    if let Some(i) = s.psns.iter().rposition(|&p| p == psn) {
        s.psns.remove(i);
    }
    if s.lost == 0 {
        s.first_ns = None;
        s.last_ns = None;
    }
}

pub(super) fn push_loss(d: &mut DirState, psn: u32, seg: usize, nakd: bool) {
    if d.losses.len() == LOSSES {
        d.losses.pop_front();
    }
    d.losses.push_back(Loss {
        psn,
        seg,
        nakd,
        resent: false,
    });
}

/// The request stream's PSNs: a jump ahead is loss before the first tap, a PSN behind a
/// resend (charged to its loss, or a timer retry of a packet every tap saw). The sender
/// resends a run of consecutive PSNs (go-back-N) up to the last it sent, then goes on
/// with new ones: PSNs a run skips (up to the next PSN it resends, or up to the first new
/// one) were lost before the first tap too; a PSN below the run's position starts a new
/// run (the sender was asked again, or its timer fired).
/// How far apart two taps' corrected clocks may put sightings of one moment.
const CLOCK_SLACK_NS: u64 = 1_000_000;

pub(super) fn sequence(
    d: &mut DirState,
    psn: u32,
    span: u32,
    when: u64,
    n: usize,
    last_capturing: bool,
    acked_before: bool,
) {
    let fresh = d.fresh_hole.take();
    let Some(next) = d.next_psn else {
        d.first_psn = Some(psn);
        d.next_psn = Some((psn + span) & PSN_MASK);
        d.last_span = span;
        return;
    };
    let ahead = psn.wrapping_sub(next) & PSN_MASK;
    if ahead < HALF {
        if d.in_resend {
            holes(d, d.run_next, next, when);
        }
        holes(d, next, psn, when);
        d.next_psn = Some((psn + span) & PSN_MASK);
        d.last_span = span;
        d.in_resend = false;
        return;
    }
    let restart = d.in_resend && psn.wrapping_sub(d.run_next) & PSN_MASK >= HALF;
    // Whether the NAK waiting for a run (if any) had reached the sender by now.
    let after_nak = i64::try_from(when).unwrap_or(i64::MAX) >= d.nak_at;
    // The one PSN the run skipped, seen within a moment and not as the start of the run a
    // NAK asked for: the taps' clocks put the next ones' sightings first (the offset
    // correction is good to a few hundred µs under TCG), not a loss and a new run (the
    // switch lab's write-s run: B's copies of 086.. came 0.1 ms before A's copy of 085,
    // which made 7 losses before A).
    if restart && !(d.nak_from.is_some() && after_nak) {
        if let Some((h, t)) = d.run_hole.take() {
            if h == psn && when.saturating_sub(t) < CLOCK_SLACK_NS && take_back_hole(d, psn) {
                return;
            }
        }
    }
    if d.in_resend && !restart {
        let from = d.run_next;
        holes(d, from, psn, when);
        let skipped = psn.wrapping_sub(from) & PSN_MASK;
        if skipped > 0 {
            d.run_hole = (skipped == d.last_span.max(1)).then_some((from, when));
        }
    } else {
        d.run_hole = None;
    }
    let first_of_run = !d.in_resend || restart;
    // A run the receiver asked for: not the sender's timer. Only a run the sender started
    // after the NAK reached it (at the tap nearest it) can be the NAK's; an earlier one
    // leaves the NAK to the run still to come.
    let mut asked_for = false;
    if first_of_run && after_nak {
        if let Some(asked) = d.nak_from.take() {
            asked_for = true;
            relost(d, asked, psn, when);
        }
    }
    // The one PSN the request just before this one left missing, now seen, with no run
    // under way and no NAK to start one: the original, seen after the next PSN
    // (reordered before the first tap), not lost. (A timer's run would not start between
    // two packets sent back to back.)
    if !d.in_resend && !asked_for && fresh == Some(psn) && take_back_hole(d, psn) {
        return;
    }
    d.in_resend = true;
    d.run_next = (psn + span) & PSN_MASK;
    if let Some(l) = d.losses.iter_mut().find(|l| l.psn == psn && !l.resent) {
        l.resent = true;
        if !l.nakd && first_of_run {
            d.segments[l.seg].timer_retries += 1;
        }
        return;
    }
    // A timer's run starts at the oldest unacknowledged message's first PSN, which may be
    // below the packet whose loss it answers: a loss above it, not resent yet, is that
    // packet (the switch lab's write-s run: a message's last packet lost between the
    // taps, its first ones waiting at the receiver for it, the run from the first).
    if first_of_run && !asked_for {
        let above = d
            .losses
            .iter()
            .find(|l| !l.resent && l.psn.wrapping_sub(psn) & PSN_MASK < HALF);
        if let Some(l) = above {
            if !l.nakd {
                d.segments[l.seg].timer_retries += 1;
            }
            return;
        }
    }
    // Only a PSN the last tap could have seen is known to have passed every tap; while
    // a loss below it is not resent yet, the receiver was discarding it as out of
    // sequence (the sender's retry went back only part of the way).
    let discarded = d
        .losses
        .iter()
        .any(|l| !l.resent && psn.wrapping_sub(l.psn) & PSN_MASK < HALF);
    // Where the receiver answered packets of this PSN, it answered every copy that
    // reached it: none was lost (the sender's timer fired before the ACK came back, or
    // the resend overtook the original). Where it did not (its ACKs coalesced): the PSN
    // was acknowledged before this copy reached the last tap.
    let exact = d.acks.get(psn);
    let reached = if exact > 0 {
        exact >= d.arrivals.get(psn)
    } else {
        acked_before
    };
    // A NAKed run's first PSN that every tap saw and no loss explains: the NAK left the
    // receiver after that copy reached it (its responder runs behind its receive queue,
    // as Soft-RoCE's does, and the NAK answers an earlier run), not a timer's resend of a
    // packet lost after the last tap.
    // The PSN after it, sent before this run, passed the last tap and the receiver NAKed
    // nothing: had this PSN been lost after the last tap, the receiver would have NAKed it
    // on meeting the next. It got it, and the sender's timer did not wait for its answer
    // (the switch lab's write-before run: B's guest stalled 90 ms and acknowledged after
    // A's timer run). Not told apart: a burst lost after the last tap up to the end of
    // the sending, which leaves no NAK either.
    let next_passed = d.passed_last.get((psn + span) & PSN_MASK) > 0;
    if first_of_run && !asked_for && last_capturing && !discarded && !reached && !next_passed {
        note_loss(&mut d.segments[n], psn, when);
        d.segments[n].timer_retries += 1;
        push_loss(d, psn, n, false);
        if let Some(l) = d.losses.back_mut() {
            l.resent = true;
        }
    }
}

/// `psn`, taken for lost before the first tap (a hole, neither resent nor NAKed), came
/// after all: the loss is taken back. Whether there was one.
fn take_back_hole(d: &mut DirState, psn: u32) -> bool {
    let hole = d
        .losses
        .iter()
        .rposition(|l| l.psn == psn && l.seg == 0 && !l.resent && !l.nakd);
    if let Some(i) = hole {
        d.losses.remove(i);
        unnote_loss(&mut d.segments[0], psn);
    }
    hole.is_some()
}

/// PSNs `from` up to (not including) `to` never reached the first tap: lost before it
/// (none when the jump is implausibly long: a new stream, not a loss). Each lost packet
/// spanned as many PSNs as the last request seen (one, but a READ request one per
/// response packet).
fn holes(d: &mut DirState, from: u32, to: u32, when: u64) {
    let gap = to.wrapping_sub(from) & PSN_MASK;
    if gap >= HALF || gap > MAX_GAP {
        return;
    }
    let per = d.last_span.max(1);
    for i in (0..gap).step_by(per as usize) {
        let q = (from + i) & PSN_MASK;
        note_loss(&mut d.segments[0], q, when);
        push_loss(d, q, 0, false);
    }
    d.fresh_hole = (gap <= per).then_some(from);
}

/// The receiver NAKed `asked` and the sender's resend run starts at `start` above it: the
/// resends of `asked` up to `start` were lost again before the first tap (no tap saw them;
/// had one, its run would have started there). Their earlier losses are resent, the new
/// ones wait for the sender's next run (its timer, as no NAK comes for them).
fn relost(d: &mut DirState, asked: u32, start: u32, when: u64) {
    let gap = start.wrapping_sub(asked) & PSN_MASK;
    if gap == 0 || gap >= HALF || gap > MAX_GAP {
        return;
    }
    for l in &mut d.losses {
        if !l.resent && l.psn.wrapping_sub(asked) & PSN_MASK < gap {
            l.resent = true;
        }
    }
    holes(d, asked, start, when);
}
