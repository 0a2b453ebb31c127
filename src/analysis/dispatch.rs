//! A RoCE packet's way through the analyzer: its flow found (or made, or begun again),
//! its bookkeeping, then by opcode — a request moves its own request stream, a response
//! finds the request stream it answers and moves it (ACK, RNR NAK, sequence NAK, READ
//! responses), a CNP is matched to the CE marks it answers.

use super::account::{account, nak_value};
use super::events::{Event, EventKind};
use super::flow::{Cause, Pending};
use super::gaps::acked;
use super::packed::Packed;
use super::store::send_tag;
use super::{requester, responder, stop, Analyzer, Hint};
use dissectors::{AethKind, Decoded, NakCode, Operation, Roce, StopKind, Transport};

impl Analyzer {
    pub(super) fn roce(&mut self, ts: u64, d: &Decoded, r: &Roce, hint: &Hint) {
        if let Some(m) = &r.mad {
            self.cm.note(ts, d, m);
        }
        let Some(packed) = Packed::from_decoded(d, r.bth.dest_qp) else {
            return;
        };
        let Some(slot) = self.flow_slot(packed, hint, d, r, ts) else {
            self.untracked += 1;
            return;
        };
        // The priority only matters once a pause was seen (PCP, else DSCP's top bits).
        let stall = if self.net.pfc_frames > 0 {
            self.net.pause_started(d.pcp().or(d.dscp().map(|x| x >> 3)))
        } else {
            None
        };
        // A flow idle past the timeout, or a QP number a new connection reuses: a new flow.
        let slot = self.renewed(slot, packed, hint, d, r, ts);
        let f = self.flows.flow_mut(slot);
        account(f, ts, d, r, stall);
        let last = f.last_ts;
        self.flows.touch(slot, last);
        let Some(op) = r.operation else {
            self.capture.roce_unknown_opcode += 1;
            return;
        };
        self.capture.qos.note(d, op);
        if d.stop.kind == StopKind::Malformed {
            // Counted, but its headers cannot be trusted to move PSN state: a mangled
            // frame must not invent gaps and then retransmissions. A frame cut by the
            // snaplen after a whole BTH still has its PSN (what an extended header cut
            // off would have said is left unknown).
            return;
        }
        if op == Operation::Cnp {
            self.capture.cnp += 1;
            self.cnp(slot, ts, d.dscp());
        } else if op.is_response() {
            self.response(slot, ts, op, r);
        } else {
            self.request(slot, ts, op, r, d.ip.map_or(0, |ip| ip.ident));
            let f = self.flows.flow(slot);
            // Only an unpaired request stream can be paired by a response's PSN (a paired
            // one is never taken over), so only its PSNs go into the table.
            if f.peer.is_none() && r.transport() != Transport::Ud {
                let tag = send_tag(f.pair_hash[0], r.bth.psn);
                self.flows.note_sent(tag, slot);
            }
        }
    }

    /// The connection's PMTU: learned from this direction's full-size packets, else from
    /// the paired direction's (a pairing can still be wrong early on, so the flow's own
    /// evidence wins).
    fn pmtu_of(&self, slot: u32) -> u32 {
        let f = self.flows.flow(slot);
        if f.pmtu > 0 {
            return f.pmtu;
        }
        f.peer.and_then(|p| self.flows.get(p)).map_or(0, |p| p.pmtu)
    }

    fn request(&mut self, slot: u32, ts: u64, op: Operation, r: &Roce, ident: u16) {
        // Only a READ needs the PMTU (to know how many PSNs it consumes).
        let pmtu = if op == Operation::ReadRequest {
            self.pmtu_of(slot)
        } else {
            0
        };
        let f = self.flows.flow_mut(slot);
        let sent = requester::Sent {
            ts,
            op,
            r,
            pmtu,
            ident,
        };
        requester::request(f, &sent, &mut self.log);
    }

    fn response(&mut self, slot: u32, ts: u64, op: Operation, r: &Roce) {
        let p = r.bth.psn;
        let after_rnr = {
            let f = self.flows.flow_mut(slot);
            // Soft-RoCE follows an RNR NAK(p) at once with a sequence NAK(p): the packet
            // it had no buffer for was dropped, and those behind it arrive out of sequence.
            let after_rnr = f.trouble.as_deref_mut().and_then(|t| t.rnr_psn.take()) == Some(p);
            if let Some(a) = r.aeth {
                match a.kind() {
                    AethKind::Ack { .. } => {}
                    AethKind::RnrNak { timer } => {
                        let t = f.trouble_mut();
                        t.rnr_psn = Some(p);
                        t.rnr_timers[usize::from(timer & 31)] += 1;
                        f.counters.rnr_nak += 1;
                        let mut e = Event::new(ts, f.id, EventKind::RnrNak).psn(p);
                        e.code = Some(timer);
                        self.log.push(e);
                    }
                    AethKind::Nak(code) => {
                        match code {
                            NakCode::PsnSequenceError => {
                                f.counters.nak_psn_seq += 1;
                                if after_rnr {
                                    f.counters.nak_psn_seq_after_rnr += 1;
                                }
                            }
                            NakCode::InvalidRequest => f.counters.nak_invalid_request += 1,
                            NakCode::RemoteAccessError => f.counters.nak_remote_access += 1,
                            NakCode::RemoteOperationalError => {
                                f.counters.nak_remote_operational += 1;
                            }
                            NakCode::InvalidRdRequest => f.counters.nak_invalid_rd_request += 1,
                            NakCode::Unknown(_) => f.counters.nak_reserved += 1,
                        }
                        let mut e = Event::new(ts, f.id, EventKind::Nak).psn(p);
                        e.code = Some(nak_value(code));
                        self.log.push(e);
                    }
                    AethKind::Reserved(_) => {}
                }
            }
            after_rnr
        };
        let peer = match self.flows.get(slot).and_then(|f| f.peer) {
            // The paired request stream sent exactly this PSN: the pairing holds.
            Some(old) if self.sent_at(old, p, ts).is_some() => Some(old),
            // Another request stream sent exactly this PSN, or the response does not
            // fit the paired stream at all: the first pairing was wrong (QPs whose PSNs
            // started close together). Otherwise keep it (requests may just be missing
            // from the capture).
            Some(old) => {
                let fits = self.answers(old, p);
                match self.pair(slot, p, ts, fits) {
                    Some(new) => Some(new),
                    None => Some(old),
                }
            }
            None => self.pair(slot, p, ts, false),
        };
        let Some(peer) = peer else {
            return;
        };
        let (resp_flow, req_flow) = self.flows.two(slot, peer);
        stop::settle_reorder_naks(resp_flow, req_flow);
        let log = &mut self.log;
        if let Some(a) = r.aeth {
            let lat = &mut self.capture.latency.ack;
            match a.kind() {
                AethKind::Ack { .. } => {
                    acked(req_flow, p, ts, lat);
                    // Only an ACK proper is evidence for a timer retry of a PSN it covered
                    // (`timeout_episodes_acked`): READ responses answer their own READ.
                    if op == Operation::Acknowledge
                        && req_flow.req.acked().is_none_or(|a| p.diff(a) > 0)
                    {
                        (req_flow.req.acked_to, req_flow.req.acked_any) = (p, true);
                    }
                }
                AethKind::RnrNak { timer } => {
                    acked(req_flow, p.minus(1), ts, lat);
                    requester::push_pending(
                        req_flow,
                        Pending {
                            psn: p,
                            t_ns: ts,
                            cause: Cause::Rnr(timer),
                        },
                    );
                }
                AethKind::Nak(NakCode::PsnSequenceError) => {
                    acked(req_flow, p.minus(1), ts, lat);
                    let mut in_gap = false;
                    for i in 0..req_flow.req.gaps.len() {
                        let gap = req_flow.req.gaps.get_mut(i);
                        if gap.contains(p) {
                            gap.nak = true;
                            in_gap = true;
                        }
                    }
                    // A PSN before the first the tap saw of the stream never passed it
                    // either (while it was capturing): missing at the tap, like a gap's.
                    let before_first = req_flow.req.started
                        && p.diff(req_flow.req.first) < 0
                        && !requester::passed_before_first(req_flow, p);
                    if after_rnr {
                    } else if !in_gap && stop::passed_ahead_of_late(req_flow, p) {
                        resp_flow.counters.nak_psn_seq_reorder += 1;
                    } else if in_gap || before_first || stop::skipped(req_flow, p) {
                        resp_flow.counters.nak_psn_seq_gap_at_tap += 1;
                        stop::note_gap_nak(req_flow, p);
                    }
                    requester::push_pending(
                        req_flow,
                        Pending {
                            psn: p,
                            t_ns: ts,
                            cause: Cause::Nak,
                        },
                    );
                }
                AethKind::Nak(_) | AethKind::Reserved(_) => {}
            }
        }
        if matches!(
            op,
            Operation::ReadResponseFirst
                | Operation::ReadResponseMiddle
                | Operation::ReadResponseLast
                | Operation::ReadResponseOnly
        ) {
            responder::read_response(resp_flow, req_flow, p, op, ts, log);
        }
    }
}
