//! Cache hints for frames that come soon. With thousands of QPs a packet's flow is rarely
//! in the cache, and finding it is a chain of dependent loads: the index entry, the flow,
//! its peer, the peer's rings and histogram. A caller that decodes a few frames ahead of
//! the analysis ([`crate::pipeline::Pipeline::read_files`] does) walks each coming frame
//! down that chain one step per frame, so that by the time the frame is analyzed its lines
//! are loaded, the loads of several frames overlapping instead of following one another.
//!
//! A hint changes nothing but timing: it reads the tables without changing them, trusts
//! an index entry's hash without confirming the key (a wrong guess only warms the wrong
//! lines), and ends quietly wherever the chain ends.

use super::flow::{Flow, SentPsn};
use super::packed::Packed;
use super::store::hint::{lines, prefetch, warm_hot};
use super::store::recent::pair_hash;
use super::store::{send_tag, NO_SLOT};
use super::Analyzer;
use dissectors::{Decoded, Operation, Psn};

/// How far a coming frame's hint got (see the module documentation); start with
/// [`Analyzer::warm_index`], then pass it to [`Analyzer::warm_slot`],
/// [`Analyzer::warm_flow`] and [`Analyzer::warm_peer`], a frame or two apart each:
/// index entry, flow, peer, what the packet moves in the peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hint {
    hash: u32,
    slot: u32,
    psn: Psn,
    /// A request (not a response, not a CNP): it moves only its own flow, never its
    /// peer's (a response moves its peer's request stream).
    request: bool,
}

impl Hint {
    /// Nothing to warm: not a RoCE frame, or its flow was not found.
    pub(crate) const NONE: Hint = Hint {
        hash: u32::MAX,
        slot: NO_SLOT,
        psn: Psn(0),
        request: false,
    };

    /// The hint of frame `d` before any step: its flow key's index hash and its PSN. A
    /// function of the frame alone, so any thread may make it.
    #[inline]
    pub(crate) fn of(d: &Decoded) -> Hint {
        let Some(r) = &d.roce else {
            return Hint::NONE;
        };
        let Some(packed) = Packed::from_decoded(d, r.bth.dest_qp) else {
            return Hint::NONE;
        };
        Hint {
            hash: packed.hash32(),
            slot: NO_SLOT,
            psn: r.bth.psn,
            request: r
                .operation
                .is_some_and(|op| op != Operation::Cnp && !op.is_response()),
        }
    }

    /// Whether the hint is for a request (whose peer it does not warm).
    #[cfg(test)]
    pub(super) fn is_request(&self) -> bool {
        self.request
    }

    /// The index hash of `packed`: the one the hint computed, when it was for this frame
    /// (else computed here, so call it only once the hash is needed).
    #[inline]
    pub(super) fn hash_of(&self, packed: &Packed) -> u32 {
        if self.hash == Hint::NONE.hash {
            packed.hash32()
        } else {
            self.hash
        }
    }
}

impl Analyzer {
    /// Step 1: the flow index's line for the frame's flow.
    #[inline]
    pub(crate) fn warm_index(&self, d: &Decoded) -> Hint {
        let h = Hint::of(d);
        self.warm_home(&h);
        h
    }

    /// Step 1 for a hint already made ([`Hint::of`], on another thread perhaps): the flow
    /// index's line for its hash.
    #[inline]
    pub(crate) fn warm_home(&self, h: &Hint) {
        if h.hash != Hint::NONE.hash {
            prefetch(self.flows.index_home(h.hash));
        }
    }

    /// Step 2 (the index line loaded): the flow's hot lines (its rings' heads among them)
    /// and its last-seen time. The flow is where its slot is (`super::store::slab`): nothing is
    /// read to find it. For a flow not made yet (`d`, the frame, is its first or comes
    /// before its first is analyzed), the recent-PSN buckets its packet will use.
    #[inline]
    pub(crate) fn warm_slot(&self, d: &Decoded, h: &mut Hint) {
        if h.hash == Hint::NONE.hash {
            return;
        }
        let Some(s) = self.flows.index_guess(h.hash) else {
            self.warm_new(d, h.psn);
            return;
        };
        if let Some((f, t)) = self.flows.slot_and_seen(s) {
            warm_hot(f);
            prefetch(t);
            h.slot = s;
        }
    }

    /// Step 3 (the flow loaded): the ring slots the packet will use, and for a response
    /// the peer's hot lines (it moves the peer's request stream; a request leaves its peer
    /// alone), or for a flow not paired yet the recent-PSN bucket its packet notes (a
    /// request) or looks up (a response).
    #[inline]
    pub(crate) fn warm_flow(&self, h: &Hint) {
        let Some(f) = self.flow_at(h.slot) else {
            return;
        };
        if let Some((_, next)) = f.req.sent.ends() {
            prefetch(next);
        }
        if let Some((front, next)) = f.req.ackreq.ends() {
            prefetch(front);
            prefetch(next);
        }
        match f.peer.and_then(|p| self.flows.slot_and_seen(p)) {
            // A request leaves its peer alone: warming it would only push lines out.
            Some((p, _)) if !h.request => warm_hot(p),
            Some(_) => {}
            // A request notes its PSN under (src, dst), a response looks under (dst, src).
            None if h.request => {
                prefetch(self.flows.recent_bucket(send_tag(f.pair_hash[0], h.psn)));
            }
            None => prefetch(self.flows.recent_bucket(send_tag(f.pair_hash[1], h.psn))),
        }
    }

    /// Step 4 (the peer loaded; nothing for a request): what a response reads and moves in
    /// the request stream it answers — the newest entries of its sent-PSN ring (is this the
    /// PSN it sent?), the oldest of its AckReq ring (which the ACK pops) and its ACK
    /// latency's buckets.
    #[inline]
    pub(crate) fn warm_peer(&self, h: &Hint) {
        if h.request {
            return;
        }
        let Some(p) = self
            .flow_at(h.slot)
            .and_then(|f| f.peer)
            .and_then(|p| self.flow_at(p))
        else {
            return;
        };
        if let Some((_, next)) = p.req.sent.ends() {
            prefetch(std::ptr::from_ref::<SentPsn>(next).wrapping_sub(1));
        }
        if let Some((front, _)) = p.req.ackreq.ends() {
            prefetch(front);
        }
        if let Some(c) = p.ack_latency.buckets() {
            lines(c, 0, std::mem::size_of_val(c));
        }
    }

    /// The recent-PSN buckets of a packet whose flow is not made yet: a new request
    /// stream notes its PSNs under (src, dst) until it is paired, a new response stream
    /// looks under (dst, src) for its request stream (the first message of each of
    /// thousands of new QPs would otherwise miss the cache on every packet).
    #[inline(never)]
    fn warm_new(&self, d: &Decoded, psn: Psn) {
        let Some(r) = &d.roce else {
            return;
        };
        let Some(p) = Packed::from_decoded(d, r.bth.dest_qp) else {
            return;
        };
        prefetch(
            self.flows
                .recent_bucket(send_tag(pair_hash(p.src, p.dst), psn)),
        );
        prefetch(
            self.flows
                .recent_bucket(send_tag(pair_hash(p.dst, p.src), psn)),
        );
    }

    #[inline]
    fn flow_at(&self, slot: u32) -> Option<&Flow> {
        self.flows.get(slot)
    }
}
