//! Flows that end before the capture does: idle longer than the idle timeout (found so
//! by their own next frame, or by a sweep a frame count or a live caller's clock drives)
//! or their QP number reused by a new connection (a request PSN no live connection could
//! send next); and the look at open gaps for the gap timeout that goes with the sweep.

use super::flow::Flow;
use super::packed::Packed;
use super::{Analyzer, Hint};
use dissectors::{Decoded, Operation, Psn, Roce, StopKind, Transport};

/// How far a request's PSN may be from the one its flow expects next, either way, and
/// still belong to the same connection: 2^22, a quarter of the PSN space. IBTA lets a
/// requester have at most 2^23 PSNs outstanding (half the space, so that the responder
/// tells duplicates from new requests), and at the tap a live connection moves by what
/// was lost before it (forward) or by a go-back-N rewind to the oldest unacknowledged
/// PSN (back): both would need more than four million packets in flight (16 GiB at a
/// 4 KiB PMTU), which no HCA's send queue holds, and a gap further behind is already
/// given up ([`super::gaps`]' horizon). A QP number a new connection reuses starts
/// from a random PSN (rdma-core and the kernel draw it), so half of such reuses land
/// this far away; the others are told by the silence before them (the idle timeout).
pub(super) const PSN_FAR: i32 = 1 << 22;

/// Whether request PSN `p` is too far from `next` for one live connection.
#[inline]
pub(super) fn psn_far(p: Psn, next: Psn) -> bool {
    let d = p.diff(next);
    !(-PSN_FAR..=PSN_FAR).contains(&d)
}

impl Analyzer {
    /// Tells a live analyzer that the wall clock reads `wall_ns` (any epoch): flows idle
    /// longer than [`super::Config::idle_timeout_ns`] are retired and gaps open longer than
    /// [`super::Config::gap_timeout_ns`] counted as unrecovered, also when no frame comes. The
    /// analyzer keeps no clock: capture time is taken to have moved on by as much wall
    /// time as passed since the call that first saw the latest frame (so a clock or
    /// timestamp source with another epoch does no harm; late by one call at most).
    /// Allocates nothing; meant for a once-a-second tick, not per packet.
    pub fn advance(&mut self, wall_ns: u64) {
        let last = self.capture.last_ts;
        if self.capture.first_ts.is_none() {
            return;
        }
        let (seen, at) = match self.clock {
            Some((seen, at)) if seen == last => (seen, at),
            _ => {
                self.clock = Some((last, wall_ns));
                (last, wall_ns)
            }
        };
        let now = seen.saturating_add(wall_ns.saturating_sub(at));
        self.sweep(now);
    }

    /// Summarises flows idle since before `now - idle_timeout`, and counts the gaps open
    /// longer than the gap timeout as unrecovered (looked at every eighth of it).
    pub(super) fn sweep(&mut self, now: u64) {
        let limit = now.saturating_sub(self.cfg.idle_timeout_ns);
        for slot in 0..self.flows.slot_count() {
            if self.flows.last_seen(slot) < limit {
                self.expire(slot as u32);
            }
        }
        if now >= self.next_gap_check {
            self.next_gap_check = now.saturating_add(self.cfg.gap_timeout_ns / 8);
            for slot in 0..self.flows.slot_count() {
                if let Some(f) = self.flows.get_mut(slot as u32) {
                    super::gaps::age(f, now, &mut self.log);
                }
            }
        }
        self.prune_connections();
    }

    /// Retires a flow whose last frame is older than the idle timeout.
    pub(super) fn expire(&mut self, slot: u32) {
        if self.flows.get(slot).is_some() {
            self.sums.flows_expired += 1;
            self.retire(slot);
        }
    }

    /// The slot of the flow a frame at `ts` belongs to, given the one its key found:
    /// that one, or a new flow when the old one is over ([`over`]).
    #[inline]
    pub(super) fn renewed(
        &mut self,
        slot: u32,
        packed: Packed,
        hint: &Hint,
        d: &Decoded,
        r: &Roce,
        ts: u64,
    ) -> u32 {
        let f = self.flows.flow(slot);
        let Some(reused) = over(f, d, r, ts, self.cfg.idle_timeout_ns) else {
            return slot;
        };
        self.begin_again(slot, reused);
        let s = self.new_flow(packed, hint.hash_of(&packed), d, r, ts);
        self.flows.cache(packed, s);
        s
    }

    /// Ends the flow in `slot` for a frame that starts a new one with the same key (see
    /// [`over`]); a reused QP number ends the other direction too.
    #[cold]
    fn begin_again(&mut self, slot: u32, reused: bool) {
        if !reused {
            self.expire(slot);
            return;
        }
        self.sums.flows_restarted += 1;
        let peer = self.flows.get(slot).and_then(|f| f.peer);
        self.retire(slot);
        if let Some(p) = peer {
            self.retire(p);
        }
    }
}

/// Whether flow `f` is over, seen from a frame at `ts`: idle for longer than `idle_ns`
/// (`Some(false)`: expired), or, for a request, with a PSN no live connection could have
/// sent next (`Some(true)`: its QP number was reused). Reads only the flow's own lines,
/// which the frame's accounting reads next anyway.
#[inline]
fn over(f: &Flow, d: &Decoded, r: &Roce, ts: u64, idle_ns: u64) -> Option<bool> {
    if ts.saturating_sub(f.last_ts) > idle_ns {
        return Some(false);
    }
    if !f.req.started || !psn_far(r.bth.psn, f.req.next) {
        return None;
    }
    let request = r
        .operation
        .is_some_and(|op| op != Operation::Cnp && !op.is_response())
        && r.transport() != Transport::Ud
        && d.stop.kind != StopKind::Malformed;
    request.then_some(true)
}
