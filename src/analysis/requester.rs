//! The request stream of a flow: what one side sends as requester (SEND, WRITE, READ
//! Request, atomics), followed PSN by PSN to tell new packets, gaps, go-back-N
//! retransmissions and their triggers, network duplicates and late originals apart.
//!
//! The model is the one real stacks follow (Linux Soft-RoCE was the reference, see
//! `docs/ROCE.md`): a retry *rewinds* the stream to one PSN and resends everything from
//! there on, a whole window, as one run. So a retransmission episode starts where the
//! PSN goes back and not where the run it interrupts happened to be; the run goes on while
//! each PSN follows the previous one (a few may be lost again before the tap). What
//! started a rewind is what passed the tap since the previous rewind — an RNR NAK, else
//! a NAK, else a READ response gap — whatever PSN it names (the requester resumes from
//! its completer's PSN, which can lag below the NAK's); with none, the requester's timer.
//! A NAK that arrives while a run is in progress waits for the rewind it causes.
//!
//! Where the sender counts the IPv4 identification up per packet (Soft-RoCE and mlx5 do),
//! it is the send order: a packet behind the stream with a later identification was sent
//! now (a resend: it continues the run or starts a rewind), one with an earlier
//! identification was sent before and arrives late (the first of its PSN at the tap is a
//! reordered original, and so is one the resend of its own PSN overtook: a packet of a gap
//! a resend filled, sent before that resend). Without that order, a PSN behind the stream
//! that does not continue a run is held for one packet: when the next packet follows it, it
//! started a rewind; when it does not, it was a lone packet — a late original if its PSN
//! had never passed the tap, a single-packet retransmission otherwise. A copy of the packet
//! just seen (the same PSN with the same IPv4 identification, or — where the sender does
//! not vary the identification — within [`COPY_WINDOW_NS`], and nothing that asked for it)
//! is a duplicate made by the network and is counted apart: the requester sent it once.

mod ident;
mod retry;

use super::events::{Event, EventKind, EventLog};
use super::flow::{
    span_for, Cause, Episode, Flow, Pending, Read, ResentGap, SentPsn, Stray, Trigger,
};
use super::gaps::{fill_gaps, fill_one, in_gap, open_gap};
use super::stop::{note_retry, note_skip, skipped};
use dissectors::ib::aeth::rnr_timer_us;
use dissectors::{Operation, Psn, Roce, Transport};
use ident::{idents_in_order, is_copy, note_ident, original_sent_later, overtaken_by_its_resend};
pub(super) use retry::{count_retransmission, end_episode, push_pending, resolve};
use retry::{pending_for, resend, start_episode};

/// How many PSNs past the PSN a NAK named the first packet of its rewind may lie (the
/// ones before it lost again before the tap), and how far a resend run may skip ahead and
/// still be the same run.
pub(super) const RUN_SLACK: i32 = 16;
/// Where the sender does not vary the IPv4 identification (IPv6, or a sender that
/// writes 0), a PSN seen again this soon after its previous sighting, with nothing asking
/// for it, is a copy made by the network: the shortest local ACK timeout the IBTA
/// encoding allows is 4.096 µs × 2^1, so no requester timer fires sooner. (Real stacks,
/// Soft-RoCE and mlx5 alike, vary the identification: there a copy keeps it and a resend
/// does not, whatever the time.)
pub(super) const COPY_WINDOW_NS: u64 = 8_192;

/// What the analyzer knows of one request packet.
pub(super) struct Sent<'a> {
    pub ts: u64,
    pub op: Operation,
    pub r: &'a Roce,
    /// The connection's PMTU, when known (only READs need it).
    pub pmtu: u32,
    /// IPv4 identification (0 for IPv6 and native IB).
    pub ident: u16,
}

/// Feeds one request packet of flow `f`.
pub(super) fn request(f: &mut Flow, s: &Sent<'_>, log: &mut EventLog) {
    let (ts, op, r) = (s.ts, s.op, s.r);
    let p = r.bth.psn;
    if r.transport() == Transport::Ud {
        ud(f, r);
        return;
    }
    let sent_earlier = note_ident(f, s.ident);
    // The PSN span of this request; `None` for a READ while the PMTU (or, cut by the
    // snaplen, its length) is unknown.
    let read_len = r.reth.map(|x| x.dma_len);
    let span = if op == Operation::ReadRequest {
        match read_len {
            Some(len) if s.pmtu > 0 => Some(span_for(len, s.pmtu)),
            Some(len) if len <= 256 => Some(1),
            _ => None,
        }
    } else {
        Some(1)
    };
    if !f.req.started {
        f.req.started = true;
        f.req.first = p;
        f.req.next = p;
        f.req.cursor = p;
    }
    resolve_open_read(f, p, s.pmtu);
    if let Some(stray) = f.req.tentative.take() {
        resolve(f, stray, Some(p), log);
    }
    let n = span.unwrap_or_else(|| span_for(read_len.unwrap_or(0), 4096));
    let end = p.plus(n);
    let d = p.diff(f.req.next);
    if d >= 0 {
        if d > 0 {
            open_gap(f, false, f.req.next, d as u32, ts, log);
        }
        if !sent_earlier {
            // A go-back-N run resends everything up to the stream's head before anything
            // new: a run that had not reached the head when a new packet passed skipped
            // the rest at the tap (those resends were lost before it, or come late).
            let tail = f.req.next.diff(f.req.cursor);
            if f.req.episode.is_some() && (1..=RUN_SLACK).contains(&tail) {
                let from = f.req.cursor;
                note_skip(f, from, f.req.next);
            }
            end_episode(&mut f.req.episode, log);
            f.req.cursor = end;
            f.req.mid_message = !op.ends_message();
        }
        // (A new PSN sent before packets already seen, overtaken on the way, neither
        // ends the run in progress nor moves where it goes on.)
        if op.ends_message() {
            f.messages += 1;
        }
        f.req.next = end;
        if span.is_none() {
            f.req.open_read = Some((p, read_len.unwrap_or(UNKNOWN_LEN)));
        }
        if op == Operation::ReadRequest {
            f.counters.reads += 1;
            f.req.reads_mut().push(Read {
                start: p,
                n: span.unwrap_or(0),
                len: read_len.unwrap_or(0),
                va: r.reth.map_or(0, |x| x.va),
                resp_next: p,
                closed: false,
                rereq: false,
                rereq_psn: Psn(0),
            });
        }
        if r.bth.ack_req {
            f.req.ackreq.push((p, ts));
        }
        f.req.sent.push(SentPsn {
            psn: p,
            t_ns: ts,
            ident: s.ident,
            new: true,
        });
        f.req.last_new_ts = ts;
        return;
    }
    behind(f, s, end, sent_earlier, log);
}

/// A UD datagram. A UD QP numbers every datagram it sends with one PSN sequence,
/// whatever the destination, and resends nothing: a jump is a datagram lost before the tap
/// or one sent to a destination this flow is not (another QP, another host), never a gap
/// to wait for. Management datagrams (QP0, QP1) are left out.
fn ud(f: &mut Flow, r: &Roce) {
    f.messages += 1;
    if r.bth.dest_qp.0 <= 1 {
        return;
    }
    // (UD has no resend run: `cursor` holds the DETH source QP of the latest datagram.)
    let src = Psn(r.deth.map_or(0, |d| d.src_qp.0));
    let p = r.bth.psn;
    if f.req.started && f.req.cursor == src && p.diff(f.req.next) > 0 {
        f.counters.ud_psn_jumps += 1;
    }
    f.req.started = true;
    f.req.cursor = src;
    f.req.next = p.plus(1);
}

/// A request packet behind the stream (its PSN was passed before): a network copy, a
/// late original, the next packet of a resend run, a rewind, a READ re-request — or,
/// where the identification gives no order, held for one packet to tell.
fn behind(f: &mut Flow, s: &Sent<'_>, end: Psn, sent_earlier: bool, log: &mut EventLog) {
    let (ts, op, r) = (s.ts, s.op, s.r);
    let p = r.bth.psn;
    if idents_in_order(f) {
        if is_copy(f, p, ts, s.ident) {
            f.counters.duplicate_packets += 1;
            log.push(Event::new(ts, f.id, EventKind::Duplicate).psn(p));
            return;
        }
        if sent_earlier {
            super::stop::note_ahead_of_expected(f, p);
            // Sent before packets already seen: it arrives late. The first of its PSN is
            // an original overtaken on the way, and so is one of a gap a resend filled
            // that was sent before that resend (the resend of its own PSN overtook it);
            // otherwise it is a resend that was overtaken (counted with the retry it
            // belongs to, no new one).
            if never_passed(f, p, end) {
                f.counters.reordered_packets += 1;
                log.push(Event::new(ts, f.id, EventKind::Reordered).psn(p));
                note_passed_before_first(f, p);
                super::stop::note_late(f, p);
                fill_one(f, p, ts, log);
            } else if overtaken_by_its_resend(f, p, s.ident) {
                f.counters.reordered_packets += 1;
                log.push(Event::new(ts, f.id, EventKind::Reordered).psn(p));
                super::stop::note_late_nak(f, p);
            } else {
                // A resend overtaken by the next ones: the responder dropped those too.
                super::stop::note_late(f, p);
                let t = f
                    .req
                    .episode
                    .map(|e| e.trigger)
                    .or(f.req.last_trigger)
                    .unwrap_or(Trigger::Unknown);
                count_retransmission(f, t);
                if original_sent_later(f, p, s.ident) {
                    // What was taken for its PSN's original was sent after it: that one
                    // was the resend (the count just made), this one the original, late.
                    f.counters.reordered_packets += 1;
                    log.push(Event::new(ts, f.id, EventKind::Reordered).psn(p));
                }
            }
            return;
        }
    }
    // The run in progress goes on?
    if let Some(ep) = f.req.episode {
        if (0..=RUN_SLACK).contains(&p.diff(f.req.cursor)) {
            resend(f, p, end, ts, s.ident, ep.trigger, log);
            return;
        }
    }
    let cause = pending_for(f, ts).and_then(|i| f.req.pending()[i]);
    let stray = Stray {
        psn: p,
        end,
        t_ns: ts,
        ident: s.ident,
        in_gap: never_passed(f, p, end),
        cause,
    };
    // A READ Request for the rest of a READ is the requester acting: a rewind.
    if op == Operation::ReadRequest {
        if let Some(i) = rerequest_of(f, p, r) {
            let rd = f.req.reads_mut().get_mut(i);
            // The same re-request again (its responses lost again, or its timer) is one
            // more retry of it, not another re-request.
            let again = rd.rereq && rd.rereq_psn == p;
            (rd.rereq, rd.rereq_psn) = (true, p);
            if !again {
                f.counters.read_rerequests += 1;
            }
            log.push(Event::new(ts, f.id, EventKind::ReadRerequest).psn(p));
            start_episode(f, stray, false, log);
            // The re-issued READ Request is itself a packet sent again.
            count_retransmission(f, Trigger::ReadRerequest);
            return;
        }
    }
    if idents_in_order(f) {
        // Sent now (a later identification) and behind the stream: the requester went back.
        start_episode(f, stray, true, log);
        return;
    }
    if !stray.in_gap && cause.is_none() && is_copy(f, p, ts, s.ident) {
        f.counters.duplicate_packets += 1;
        log.push(Event::new(ts, f.id, EventKind::Duplicate).psn(p));
        return;
    }
    f.req.tentative = Some(stray);
}

/// Whether no packet of PSN `p` (its request ending before `end`) has passed the tap yet:
/// it is in a gap, or before the first request the flow saw (whose packets overtook it:
/// no gap is open for what came before the first one).
fn never_passed(f: &Flow, p: Psn, end: Psn) -> bool {
    in_gap(f, p) || (end.diff(f.req.first) <= 0 && !passed_before_first(f, p))
}

/// Whether `p`, before the first PSN the tap saw of the stream, passed it since (late).
pub(super) fn passed_before_first(f: &Flow, p: Psn) -> bool {
    let i = f.req.first.diff(p) - 1;
    (0..32).contains(&i)
        && f.trouble
            .as_deref()
            .is_some_and(|t| t.before_first & (1 << i) != 0)
}

/// A late original `p` passed the tap: where it is before the stream's first PSN, marks
/// it passed (beyond 32 PSNs before it, it stays unmarked: any sighting is taken for new).
fn note_passed_before_first(f: &mut Flow, p: Psn) {
    let i = f.req.first.diff(p) - 1;
    if (0..32).contains(&i) {
        f.trouble_mut().before_first |= 1 << i;
    }
}

/// A READ span never resolved because its length was cut off by the snaplen.
const UNKNOWN_LEN: u32 = u32::MAX;

/// Resolves the span of an earlier READ: from the PMTU once it is known, else from
/// where the requester went on with a new request.
fn resolve_open_read(f: &mut Flow, p: Psn, pmtu: u32) {
    let Some((start, len)) = f.req.open_read else {
        return;
    };
    let n = if pmtu > 0 && len != UNKNOWN_LEN {
        span_for(len, pmtu)
    } else {
        let d = p.diff(start);
        // Only a new request after it tells (a resend behind it does not).
        if d <= 0 || p.diff(f.req.next) < 0 {
            return;
        }
        let d = d as u32;
        let fits = if len == UNKNOWN_LEN {
            d <= 1 << 16
        } else {
            [256u32, 512, 1024, 2048, 4096]
                .iter()
                .any(|&m| span_for(len, m) == d)
        };
        if !fits {
            f.req.open_read = None;
            return;
        }
        d
    };
    f.req.open_read = None;
    let end = start.plus(n);
    if f.req.cursor == f.req.next {
        f.req.cursor = end;
    }
    f.req.next = end;
    if let Some(reads) = f.req.reads.as_deref_mut() {
        for i in 0..reads.len() {
            let rd = reads.get_mut(i);
            if rd.start == start && rd.n == 0 {
                rd.n = n;
            }
        }
    }
}

/// A READ Request behind the stream whose PSN lies strictly inside an earlier READ and
/// whose RETH ends where that READ ends: the requester asks for the rest again.
fn rerequest_of(f: &Flow, p: Psn, r: &Roce) -> Option<usize> {
    let reads = f.req.reads.as_deref()?;
    (0..reads.len()).rev().find(|&i| {
        let rd = reads.get(i);
        let inside = p.diff(rd.start) > 0 && rd.contains(p);
        let same_end = r.reth.is_none_or(|x| {
            x.va.wrapping_add(u64::from(x.dma_len)) == rd.va.wrapping_add(u64::from(rd.len))
        });
        inside && same_end
    })
}
