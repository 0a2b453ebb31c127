//! Cache hints for the analysis: the lines of a flow (hot part, whole, its allocations)
//! by the layout of [`Flow`], with the primitives of `crate::prefetch`.

use crate::analysis::flow::{Flow, ReqStream};
pub(in crate::analysis) use crate::prefetch::{lines, prefetch};
use std::mem::offset_of;

/// The end of what every packet touches in its flow (`Flow` is `repr(C)`, hot fields
/// first): the key and counts, the QoS marks, the opcode mix, the ACK latency and the
/// request stream, whose last fields are its rings' heads (their records are elsewhere).
pub(in crate::analysis) const HOT: usize = offset_of!(Flow, req) + std::mem::size_of::<ReqStream>();

/// Starts loading the flow in `slot`, whole: what settling, summarising and dropping it
/// read. The end of a run and the live UI's snapshots walk every flow in slot order, a
/// few ahead of this hint: with thousands of flows they are long out of the cache, and
/// their lines are too far apart for the hardware's own prefetcher.
#[inline]
pub(in crate::analysis) fn warm_whole(slot: &Option<Flow>) {
    lines(slot, 0, std::mem::size_of::<Flow>());
}

/// The walk's second step, a slot later (the flow's lines loaded): where its own
/// allocations start, which dropping it frees (`free` reads each one's header, and its
/// neighbour's).
#[inline]
pub(in crate::analysis) fn warm_owned(slot: &Option<Flow>) {
    if let Some(f) = slot {
        if let Some(r) = f.req.sent.records() {
            prefetch(r);
        }
        if let Some(r) = f.req.ackreq.records() {
            prefetch(r);
        }
        if let Some(c) = f.ack_latency.buckets() {
            prefetch(c.as_ptr());
        }
    }
}

/// Starts loading the hot lines of the flow in `slot` (whether or not one is there: a
/// free slot's lines are only warmed for nothing). A flow is
/// at the start of its slot (`Option<Flow>` keeps the flow at offset 0, its `None` in a
/// niche); were it not, the wrong lines would be warmed, nothing else.
#[inline]
pub(in crate::analysis) fn warm_hot(slot: &Option<Flow>) {
    lines(slot, 0, HOT);
}
