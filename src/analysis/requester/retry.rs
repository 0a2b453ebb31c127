//! Retry episodes: what triggers a rewind (the NAKs, RNR NAKs and READ gaps pending at
//! the tap), the episode a resend run opens and closes, and how retransmissions are
//! counted.

use super::*;

/// packet after it, `None` at the end) is known.
pub(in crate::analysis) fn resolve(f: &mut Flow, s: Stray, next: Option<Psn>, log: &mut EventLog) {
    let continues = next.is_some_and(|q| {
        (0..=RUN_SLACK).contains(&q.diff(s.end)) && (q.diff(f.req.next) < 0 || s.end == f.req.next)
    });
    if !continues && s.in_gap {
        // Its PSN had never passed the tap and nothing followed it: the original,
        // overtaken on the way.
        f.counters.reordered_packets += 1;
        log.push(Event::new(s.t_ns, f.id, EventKind::Reordered).psn(s.psn));
        crate::analysis::stop::note_late(f, s.psn);
        let _ = fill_gaps(f, false, s.psn, s.t_ns, log);
        f.req.sent.push(SentPsn {
            psn: s.psn,
            t_ns: s.t_ns,
            ident: s.ident,
            new: true,
        });
        return;
    }
    start_episode(f, s, true, log);
}

/// What a rewind at `ts` acts on: the NAKs, RNR NAKs and READ response gaps that passed
/// the tap since the previous rewind, whatever PSN they name (a real requester resumes
/// from its completer's PSN, which after an RNR NAK or under reordering lags below the
/// NAK's). An RNR NAK comes first (Soft-RoCE follows it with a sequence NAK for the same
/// PSN, and the retry waits for the RNR timer), then a NAK, then a READ gap, and among
/// equals the oldest.
pub(super) fn pending_for(f: &Flow, ts: u64) -> Option<usize> {
    let rank = |c: Cause| match c {
        Cause::Rnr(_) => 0,
        Cause::Nak => 1,
        Cause::ReadGap => 2,
    };
    f.req
        .pending()
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            e.filter(|e| e.t_ns <= ts)
                .map(|e| ((rank(e.cause), e.t_ns), i))
        })
        .min()
        .map(|(_, i)| i)
}

/// Takes the trigger of a rewind at `ts`; everything received by then is acted on.
pub(super) fn take_pending(f: &mut Flow, ts: u64) -> Option<Pending> {
    let found = pending_for(f, ts).and_then(|i| f.req.pending()[i]);
    for e in f.req.pending_mut() {
        if e.is_some_and(|x| x.t_ns <= ts) {
            *e = None;
        }
    }
    found
}

/// Records a NAK, an RNR NAK or a READ response gap the requester will act on.
pub(in crate::analysis) fn push_pending(f: &mut Flow, e: Pending) {
    let slots = f.req.pending.get_or_insert_with(Box::default);
    let i = slots.iter().position(Option::is_none).unwrap_or_else(|| {
        // Full: the oldest gives way.
        let (i, _) = slots
            .iter()
            .enumerate()
            .min_by_key(|(_, x)| x.map_or(0, |x| x.t_ns))
            .expect("slots");
        i
    });
    slots[i] = Some(e);
}

/// A retry starts at `s`: a new episode with what triggered it.
pub(super) fn start_episode(f: &mut Flow, s: Stray, resent: bool, log: &mut EventLog) {
    end_episode(&mut f.req.episode, log);
    let taken = take_pending(f, s.t_ns);
    let (trigger, latency) = match s.cause.or(taken) {
        Some(e) => {
            let l = s.t_ns.saturating_sub(e.t_ns);
            match e.cause {
                Cause::Nak => {
                    if (1..=RUN_SLACK).contains(&s.psn.diff(e.psn)) {
                        // The rewind's first packets (from the NAK's PSN) never passed the
                        // tap: lost before it.
                        note_skip(f, e.psn, s.psn);
                    }
                    f.delays_mut().nak_to_resend.record(l);
                    (Trigger::Nak, Some(l))
                }
                Cause::Rnr(code) => {
                    f.delays_mut().rnr_wait.record(l);
                    f.trouble_mut().rnr_requested_us += rnr_timer_us(code);
                    (Trigger::Rnr, Some(l))
                }
                Cause::ReadGap => (Trigger::ReadRerequest, Some(l)),
            }
        }
        None => {
            // The requester's timer: it runs from the last transmission of the PSN;
            // when that fell out of the recent-PSN ring, how long it took is unknown.
            let t0 = f
                .req
                .sent
                .iter()
                .rev()
                .find(|x| x.psn == s.psn)
                .map(|x| x.t_ns);
            let l = t0.map(|t0| s.t_ns.saturating_sub(t0));
            if let Some(l) = l {
                f.delays_mut().timeout_observed.record(l);
            }
            // Where its PSN was: never at the tap (lost before it), or acknowledged by an
            // ACK the tap saw (that ACK was lost after the tap); else one tap cannot tell.
            if s.in_gap || skipped(f, s.psn) {
                f.counters.timeout_episodes_gap_at_tap += 1;
            } else if f.req.acked().is_some_and(|a| a.diff(s.psn) >= 0) {
                f.counters.timeout_episodes_acked += 1;
            }
            (Trigger::Timeout, l)
        }
    };
    f.counters.retransmission_episodes += 1;
    f.req.last_trigger = Some(trigger);
    note_retry(f, s.psn, s.t_ns);
    match trigger {
        Trigger::Nak => f.counters.nak_retransmission_episodes += 1,
        Trigger::Rnr => f.counters.rnr_retransmission_episodes += 1,
        Trigger::Timeout => f.counters.timeout_retransmission_episodes += 1,
        Trigger::ReadRerequest => f.counters.read_retransmission_episodes += 1,
        Trigger::Unknown => {}
    }
    let mut e = Event::new(s.t_ns, f.id, EventKind::Retransmission).psn(s.psn);
    e.trigger = Some(trigger);
    e.latency_ns = latency;
    let event = log.push(e);
    f.req.episode = Some(Episode {
        trigger,
        last: s.psn,
        event,
        packets: 0,
    });
    if resent {
        let next = f.req.next;
        f.trouble_mut().rewind = Some((s.ident, next));
        resend(f, s.psn, s.end, s.t_ns, s.ident, trigger, log);
    } else {
        let ep = f.req.episode.as_mut().expect("episode just set");
        ep.packets += 1;
        f.req.cursor = s.end;
        f.req.sent.push(SentPsn {
            psn: s.psn,
            t_ns: s.t_ns,
            ident: s.ident,
            new: false,
        });
    }
}

/// One packet of the run in progress.
pub(super) fn resend(
    f: &mut Flow,
    p: Psn,
    end: Psn,
    ts: u64,
    ident: u16,
    t: Trigger,
    log: &mut EventLog,
) {
    if let Some(ep) = f.req.episode.as_mut() {
        ep.last = p;
        ep.packets += 1;
    }
    if (1..=RUN_SLACK).contains(&p.diff(f.req.cursor)) {
        // The run skipped PSNs the tap had seen before: their resends were lost before it.
        let from = f.req.cursor;
        note_skip(f, from, p);
    }
    count_retransmission(f, t);
    if let Some(g) = fill_gaps(f, false, p, ts, log) {
        f.req.resent_gaps.push(ResentGap {
            start: g.start,
            len: g.len,
            ident,
        });
    }
    f.req.sent.push(SentPsn {
        psn: p,
        t_ns: ts,
        ident,
        new: false,
    });
    f.req.cursor = end;
}

pub(in crate::analysis) fn count_retransmission(f: &mut Flow, t: Trigger) {
    f.counters.retransmitted_packets += 1;
    match t {
        Trigger::Nak => f.counters.nak_retransmissions += 1,
        Trigger::Rnr => f.counters.rnr_retransmissions += 1,
        Trigger::Timeout => f.counters.timeout_retransmissions += 1,
        Trigger::ReadRerequest => f.counters.read_retransmissions += 1,
        Trigger::Unknown => f.counters.unknown_retransmissions += 1,
    }
}

pub(in crate::analysis) fn end_episode(e: &mut Option<Episode>, log: &mut EventLog) {
    if let Some(ep) = e.take() {
        if let Some(i) = ep.event {
            log.events[i].count = u64::from(ep.packets);
            log.events[i].psn_end = Some(ep.last.0);
        }
    }
}
