//! READ responses: which READ of the paired request stream a response answers, the
//! response PSNs that never passed the tap (response gaps, which the requester sees too
//! and acts on by asking again), and responses sent again.

use super::events::{Event, EventKind, EventLog};
use super::flow::{Cause, Episode, Flow, Pending, Read, Trigger, READ_SLOTS};
use super::gaps::{fill_gaps, open_gap};
use super::requester::{count_retransmission, end_episode, push_pending, RUN_SLACK};
use super::ring::Ring;
use dissectors::{Operation, Psn};

/// A READ response from flow `f` answering a READ of request stream `q`.
pub(super) fn read_response(
    f: &mut Flow,
    q: &mut Flow,
    p: Psn,
    op: Operation,
    ts: u64,
    log: &mut EventLog,
) {
    // Taken out while the READs are walked (a pointer move), put back at the end.
    let Some(mut reads) = q.req.reads.take() else {
        return;
    };
    if let Some(i) = (0..reads.len()).rev().find(|&i| reads.get(i).contains(p)) {
        let r = Response {
            read: i,
            psn: p,
            op,
            ts,
        };
        answer(f, q, &mut reads, r, log);
    }
    q.req.reads = Some(reads);
}

/// A response gap: counted in the response flow, and a reason for the requester to ask
/// again.
fn response_gap(f: &mut Flow, q: &mut Flow, start: Psn, len: u32, ts: u64, log: &mut EventLog) {
    open_gap(f, true, start, len, ts, log);
    push_pending(
        q,
        Pending {
            psn: start,
            t_ns: ts,
            cause: Cause::ReadGap,
        },
    );
}

/// A READ response placed in its READ: which READ of the requester's ring it answers
/// (`read`, an index into the ring), its PSN, opcode and time.
#[derive(Clone, Copy, Debug)]
struct Response {
    read: usize,
    psn: Psn,
    op: Operation,
    ts: u64,
}

/// Response `r` from flow `f` to READ `r.read` of `q`'s `reads`: closes the READs before
/// it, counts a response gap, or a response sent again.
fn answer(
    f: &mut Flow,
    q: &mut Flow,
    reads: &mut Ring<Read, READ_SLOTS>,
    r: Response,
    log: &mut EventLog,
) {
    let Response {
        read: i,
        psn: p,
        op,
        ts,
    } = r;
    // Responses come in request order: earlier READs that are not complete lost their
    // tail (or everything) before the tap. Reads before a closed one are closed too.
    for j in (0..i).rev() {
        let rd = *reads.get(j);
        if rd.closed {
            break;
        }
        if rd.n > 0 {
            let end = rd.start.plus(rd.n);
            let missing = end.diff(rd.resp_next);
            if missing > 0 {
                response_gap(f, q, rd.resp_next, missing as u32, ts, log);
                reads.get_mut(j).resp_next = end;
            }
            reads.get_mut(j).closed = true;
        }
    }
    let rd = *reads.get(i);
    let d = p.diff(rd.resp_next);
    if d >= 0 {
        // A run of responses sent again that stops short of the end of a READ expected
        // again, new responses after it: its tail was lost again.
        if let Some(hole) = run_hole(f, p).filter(|&c| expected_again(reads, i, c)) {
            ask_again(q, hole, ts);
        }
        end_episode(&mut f.resp.episode, log);
        if d > 0 {
            response_gap(f, q, rd.resp_next, d as u32, ts, log);
        }
        let rdm = reads.get_mut(i);
        rdm.resp_next = p.next();
        if matches!(
            op,
            Operation::ReadResponseLast | Operation::ReadResponseOnly
        ) {
            if rdm.n == 0 {
                rdm.n = p.diff(rdm.start) as u32 + 1;
            }
            rdm.closed = true;
        }
        return;
    }
    // Sent again: for a re-issued READ Request, or in the requester's run of READ
    // Requests sent again. Counted as packets; the retry is the requester's episode.
    f.counters.read_responses_resent += 1;
    let trigger = if rd.rereq {
        Trigger::ReadRerequest
    } else {
        q.req
            .episode
            .map(|e| e.trigger)
            .or(q.req.last_trigger)
            .unwrap_or(Trigger::Unknown)
    };
    let fresh = f.resp.episode.is_none_or(|e| p.diff(e.last) <= 0);
    if let Some(hole) = run_hole(f, p) {
        ask_again(q, hole, ts);
    }
    f.resp.cursor = p.next();
    if fresh {
        end_episode(&mut f.resp.episode, log);
        let mut e = Event::new(ts, f.id, EventKind::Retransmission).psn(p);
        e.trigger = Some(trigger);
        let event = log.push(e);
        f.resp.episode = Some(Episode {
            trigger,
            last: p,
            event,
            packets: 0,
        });
    }
    if let Some(ep) = f.resp.episode.as_mut() {
        ep.last = p;
        ep.packets += 1;
    }
    count_retransmission(f, trigger);
    if let Some(start) = fill_gaps(f, true, p, ts, log).map(|g| g.start) {
        // The gap is filled: the requester has nothing left to ask for there.
        for e in q.req.pending_mut() {
            if e.is_some_and(|x| x.cause == Cause::ReadGap && x.psn == start) {
                *e = None;
            }
        }
    }
}

/// Where a run of responses sent again (an episode in progress, its next PSN at the
/// cursor) left a hole, when `p` comes a few PSNs past the cursor: lost again, no new gap
/// at the tap (the PSNs passed it before), but the requester sees the hole.
fn run_hole(f: &Flow, p: Psn) -> Option<Psn> {
    let e = f.resp.episode?;
    let c = f.resp.cursor;
    (p.diff(e.last) > 0 && (1..=RUN_SLACK).contains(&p.diff(c))).then_some(c)
}

/// Whether the responses at `c` were expected again, when a new response of READ `i`
/// follows a run that stopped at `c`: `c` is before READ `i`'s next response, inside a
/// READ that the run was in (past its first PSN) or that was asked for again.
fn expected_again(reads: &Ring<Read, READ_SLOTS>, i: usize, c: Psn) -> bool {
    c.diff(reads.get(i).resp_next) < 0
        && (0..=i)
            .rev()
            .map(|j| reads.get(j))
            .any(|rd| rd.contains(c) && (c != rd.start || rd.rereq))
}

/// The requester will ask again for `psn`: a READ re-request with a cause at the tap.
fn ask_again(q: &mut Flow, psn: Psn, ts: u64) {
    let cause = Cause::ReadGap;
    push_pending(
        q,
        Pending {
            psn,
            t_ns: ts,
            cause,
        },
    );
}
