//! Cache hints for frames that come soon. With thousands of QPs a packet's flow is rarely
//! in the cache, and finding it is a chain of dependent loads: the index entry, the slot's
//! pointer, the flow, its peer. A caller that decodes a few frames ahead of the analysis
//! ([`crate::pipeline::Pipeline::read_files`] does) walks each coming frame down that
//! chain one step per frame, so that by the time the frame is analyzed its lines are
//! loaded, the loads of several frames overlapping instead of following one another.
//!
//! A hint changes nothing but timing: it reads the tables without changing them, trusts
//! an index entry's hash without confirming the key (a wrong guess only warms the wrong
//! lines), and ends quietly wherever the chain ends.

use super::flow::{Flow, ReqStream};
use super::hint::prefetch;
use super::table::{send_tag, Packed, NO_SLOT};
use super::Analyzer;
use dissectors::{Decoded, Psn};
use std::mem::offset_of;

/// How far a coming frame's hint got (see the module documentation); start with
/// [`Analyzer::warm_index`], then pass it to [`Analyzer::warm_slot`],
/// [`Analyzer::warm_flow`] and [`Analyzer::warm_peer`], a frame or two apart each.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hint {
    hash: u32,
    slot: u32,
    psn: Psn,
}

impl Hint {
    /// Nothing to warm: not a RoCE frame, or its flow was not found.
    pub(crate) const NONE: Hint = Hint {
        hash: u32::MAX,
        slot: NO_SLOT,
        psn: Psn(0),
    };

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

/// Starts loading bytes `from..to` of `p`: every line they cross.
#[inline]
fn lines<T>(p: &T, from: usize, to: usize) {
    let base = (p as *const T).cast::<u8>();
    let mut off = from;
    while off < to {
        prefetch(base.wrapping_add(off));
        off += 64;
    }
    prefetch(base.wrapping_add(to - 1));
}

/// The end of what every packet touches in its flow (`Flow` is `repr(C)`, hot fields
/// first): the key and counts, the QoS marks, the opcode mix, the ACK latency and the
/// request stream's state, up to the head of its sent-PSN ring.
const HOT: usize = offset_of!(Flow, req) + offset_of!(ReqStream, sent) + 8;
/// Where what an ACK changes in its request flow starts: the ACK latency, then the
/// request stream.
const ACKED_FROM: usize = offset_of!(Flow, ack_latency);

impl Analyzer {
    /// Step 1: the flow index's line for the frame's flow.
    #[inline]
    pub(crate) fn warm_index(&self, d: &Decoded) -> Hint {
        let Some(r) = &d.roce else {
            return Hint::NONE;
        };
        let Some(packed) = Packed::from_decoded(d, r.bth.dest_qp) else {
            return Hint::NONE;
        };
        let hash = packed.hash32();
        prefetch(self.index.home(hash));
        Hint {
            hash,
            slot: NO_SLOT,
            psn: r.bth.psn,
        }
    }

    /// Step 2 (the index line loaded): the slot's pointer and last-seen time.
    #[inline]
    pub(crate) fn warm_slot(&self, h: &mut Hint) {
        if h.hash == Hint::NONE.hash {
            return;
        }
        let Some(s) = self.index.find(h.hash, |_| true) else {
            return;
        };
        if let (Some(p), Some(t)) = (self.slots.get(s as usize), self.last_seen.get(s as usize)) {
            prefetch(p);
            prefetch(t);
            h.slot = s;
        }
    }

    /// Step 3 (the pointer loaded): the flow's hot lines and its rings' heads.
    #[inline]
    pub(crate) fn warm_flow(&self, h: &Hint) {
        if let Some(f) = self.flow_at(h.slot) {
            lines(f, 0, HOT);
            prefetch(&f.req.ackreq);
        }
    }

    /// Step 4 (the flow loaded): the ring slots the packet will use, the peer's hot lines
    /// (an ACK moves its request stream), or for a flow not paired yet the recent-PSN
    /// bucket its packet notes or looks up.
    #[inline]
    pub(crate) fn warm_peer(&self, h: &Hint) {
        let Some(f) = self.flow_at(h.slot) else {
            return;
        };
        let (_, next) = f.req.sent.ends();
        prefetch(next);
        let (front, next) = f.req.ackreq.ends();
        prefetch(front);
        prefetch(next);
        match f.peer.and_then(|p| self.flow_at(p)) {
            Some(p) => {
                lines(p, ACKED_FROM, HOT);
                prefetch(&p.req.ackreq);
            }
            None => {
                // A request notes its PSN under (src, dst), a response looks under
                // (dst, src); the hint does not know which this is, so warms both.
                prefetch(self.recent.bucket_of(send_tag(f.pair_hash[0], h.psn)));
                prefetch(self.recent.bucket_of(send_tag(f.pair_hash[1], h.psn)));
            }
        }
    }

    #[inline]
    fn flow_at(&self, slot: u32) -> Option<&Flow> {
        self.slots.get(slot as usize)?.as_deref()
    }
}
