//! Cache hints: asks the CPU to start loading a line the analysis will need soon, and
//! the lines of a flow (hot part, whole, its allocations) by the layout of [`Flow`].
#![allow(unsafe_code)]

use crate::analysis::flow::{Flow, ReqStream};
use std::mem::offset_of;

/// Starts loading the cache line that holds `p` (a hint: no effect on the program's
/// behaviour, only on how long the later load takes).
#[inline(always)]
pub(in crate::analysis) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 reads nothing architecturally: any address is allowed, none
    // faults, and no memory is read or written as far as the program can tell.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Starts loading bytes `from..to` of `p`: every line they cross.
#[inline]
pub(in crate::analysis) fn lines<T: ?Sized>(p: &T, from: usize, to: usize) {
    let base = std::ptr::from_ref::<T>(p).cast::<u8>();
    let mut off = from;
    while off < to {
        prefetch(base.wrapping_add(off));
        off += 64;
    }
    prefetch(base.wrapping_add(to - 1));
}

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
