//! Where the live flows are kept: in place, in chunks of [`CHUNK`] slots, each chunk
//! allocated whole when the first of its slots is made and filled in order. So
//! - a flow is found from its slot number with no pointer of its own to follow
//!   (`chunks[s / CHUNK][s % CHUNK]`; the few chunk pointers stay in the cache), which is
//!   one dependent load less for each packet whose flow is not in the cache;
//! - a new flow costs no allocation, and the flows go in a few frees at the end instead
//!   of one each (with 100,000 flows, `malloc` and `free` of boxed flows were 8 % of a
//!   run);
//! - a slot's place in its chunk needs no bounds check (a chunk is an array), only the
//!   chunk's number does; the memory grows by chunk (at most one partly used, about
//!   0.75 MiB).
//!
//! A retired flow's slot holds `None` and goes back on the analyzer's free list; the next
//! new flow takes it. The chunks never shrink: the memory follows the most flows live at
//! once, which is what the analyzer is sized for anyway.
//!
//! Once the first chunk is half used, the next one is made ahead on a helper thread
//! ([`super::ahead`]), and from then on the one after is asked for as soon as a chunk
//! made ahead is taken: a chunk's 192 pages are first touched there, not on the packet
//! path (at 100,000 flows they were two fifths of a run's page faults).

use super::ahead::{Ahead, Helper, Made};
use crate::analysis::flow::Flow;

/// Slots per chunk: 1,024 flows.
pub(in crate::analysis) const CHUNK: usize = 1024;

/// How many slots ahead a walk over every flow requests a flow's lines.
pub(in crate::analysis) const WALK_AHEAD: usize = 2;

/// A chunk of slots, allocated whole.
pub(in crate::analysis) type Chunk = Box<[Option<Flow>; CHUNK]>;

/// See the module documentation.
#[derive(Debug, Default)]
pub(in crate::analysis) struct Slots {
    chunks: Vec<Chunk>,
    /// Slots made (the ones after it, in the last chunk, are `None` and not handed out).
    len: usize,
    /// The next chunk, made ahead.
    ahead: Ahead<Chunk>,
}

impl Slots {
    /// Slots made so far, live or free.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Makes a slot for `f`, after the last one; returns its number.
    pub fn push(&mut self, f: Flow) -> u32 {
        let s = self.len;
        if s == self.chunks.len() * CHUNK {
            let made = self.ahead.take();
            let ahead = made.is_some();
            self.chunks.push(made.unwrap_or_else(new_chunk));
            if ahead {
                // The next one is made while this one fills: a whole chunk of slack.
                self.ahead.ask();
            }
        } else if s % CHUNK == CHUNK / 2 {
            // Half of the last chunk used (`s` is always in the last one): the first
            // chunk made ahead (or one after a chunk made here).
            self.ahead.ask();
        }
        self.chunks[s / CHUNK][s % CHUNK] = Some(f);
        self.len += 1;
        s as u32
    }

    /// Slot `s`, if it was made.
    #[inline]
    pub fn get(&self, s: usize) -> Option<&Option<Flow>> {
        if s < self.len {
            Some(&self.chunks[s / CHUNK][s % CHUNK])
        } else {
            None
        }
    }

    /// Every slot made, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &Option<Flow>> {
        self.chunks.iter().flat_map(|c| c.iter()).take(self.len)
    }

    /// Calls `f` on every live flow in slot order, the lines of the flow [`WALK_AHEAD`]
    /// slots on already requested (`super::hint::warm_whole`).
    pub fn each(&self, mut f: impl FnMut(&Flow)) {
        for chunk in &self.chunks {
            for (i, slot) in chunk.iter().enumerate() {
                warm_ahead(&chunk[..], i);
                if let Some(flow) = slot {
                    f(flow);
                }
            }
        }
    }

    /// Takes every slot out, a chunk at a time in slot order, leaving none made: each chunk's
    /// memory goes back as soon as the caller is done with it.
    pub fn drain_chunks(&mut self) -> std::vec::IntoIter<Chunk> {
        self.len = 0;
        drop(self.ahead.take());
        std::mem::take(&mut self.chunks).into_iter()
    }

    /// The helper thread that makes chunks ahead, for other work of the analysis.
    pub fn helper(&self) -> Helper {
        self.ahead.helper().clone()
    }

    /// The live flows of two distinct slots, mutably, in the order asked.
    #[inline]
    pub fn two(&mut self, a: u32, b: u32) -> (&mut Flow, &mut Flow) {
        let (a, b) = (a as usize, b as usize);
        assert_ne!(a, b, "two distinct slots");
        let (lo, hi) = (a.min(b), a.max(b));
        let (x, y) = if lo / CHUNK == hi / CHUNK {
            let (p, q) = self.chunks[lo / CHUNK].split_at_mut(hi % CHUNK);
            (&mut p[lo % CHUNK], &mut q[0])
        } else {
            let (p, q) = self.chunks.split_at_mut(hi / CHUNK);
            (&mut p[lo / CHUNK][lo % CHUNK], &mut q[0][hi % CHUNK])
        };
        let (x, y) = (
            x.as_mut().expect("live flow"),
            y.as_mut().expect("live flow"),
        );
        if a < b {
            (x, y)
        } else {
            (y, x)
        }
    }
}

/// In a walk over a chunk's slots, at slot `i`: requests the lines of the flow
/// [`WALK_AHEAD`] slots on (`super::hint::warm_whole`).
#[inline]
pub(in crate::analysis) fn warm_ahead(chunk: &[Option<Flow>], i: usize) {
    if let Some(next) = chunk.get(i + WALK_AHEAD) {
        super::hint::warm_whole(next);
    }
}

impl Made for Chunk {
    fn made() -> Self {
        new_chunk()
    }
}

/// A chunk of free slots, built on the heap (a whole chunk on the stack would not fit
/// every thread's).
fn new_chunk() -> Chunk {
    let v: Vec<Option<Flow>> = std::iter::repeat_with(|| None).take(CHUNK).collect();
    v.into_boxed_slice()
        .try_into()
        .expect("a chunk holds CHUNK slots")
}

impl std::ops::Index<usize> for Slots {
    type Output = Option<Flow>;
    #[inline]
    fn index(&self, s: usize) -> &Option<Flow> {
        &self.chunks[s / CHUNK][s % CHUNK]
    }
}

impl std::ops::IndexMut<usize> for Slots {
    #[inline]
    fn index_mut(&mut self, s: usize) -> &mut Option<Flow> {
        &mut self.chunks[s / CHUNK][s % CHUNK]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::flow::FlowKey;
    use dissectors::{Addr, Qpn, RoceVersion};

    fn flow(id: u32) -> Flow {
        let a = Addr::Ip("192.0.2.1".parse().unwrap());
        let b = Addr::Ip("192.0.2.2".parse().unwrap());
        let key = FlowKey {
            src: a,
            dst: b,
            qp: Qpn(id),
        };
        Flow::new(id, key, RoceVersion::V2, 0)
    }

    #[test]
    fn slots_span_chunks_and_pairs_come_back_in_the_order_asked() {
        let mut s = Slots::default();
        assert_eq!(s.len(), 0);
        assert!(s.get(0).is_none());
        let n = 2 * CHUNK + 3;
        for i in 0..n {
            assert_eq!(s.push(flow(i as u32)), i as u32);
        }
        assert_eq!(s.len(), n);
        assert_eq!(s.iter().count(), n);
        assert!(s.get(n).is_none());
        for i in [0, CHUNK - 1, CHUNK, 2 * CHUNK + 2] {
            assert_eq!(s[i].as_ref().unwrap().id, i as u32);
            assert_eq!(s.get(i).unwrap().as_ref().unwrap().id, i as u32);
        }
        // Same chunk, neighbouring chunks, far apart; both orders.
        for (a, b) in [(1, 2), (CHUNK - 1, CHUNK), (0, 2 * CHUNK + 2), (5, 3)] {
            for (a, b) in [(a, b), (b, a)] {
                let (x, y) = s.two(a as u32, b as u32);
                assert_eq!((x.id, y.id), (a as u32, b as u32));
                x.packets += 1;
                y.packets += 2;
            }
        }
        assert_eq!(s[CHUNK].as_ref().unwrap().packets, 3);
        s[CHUNK] = None;
        assert_eq!(s.iter().flatten().count(), n - 1);
        assert_eq!(s.len(), n, "a freed slot stays made");
        assert!(
            s.get(n).is_none() && s.get(3 * CHUNK - 1).is_none(),
            "not made yet"
        );
        let made: Vec<usize> = s
            .drain_chunks()
            .map(|c| c.iter().filter(|x| x.is_some()).count())
            .collect();
        assert_eq!(made, [CHUNK, CHUNK - 1, 3]);
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn a_flow_sits_at_the_start_of_its_slot() {
        // What the cache hints assume (`crate::analysis::warm`): the flow's field offsets
        // are its slot's.
        let slot = Some(flow(7));
        let f = slot.as_ref().unwrap();
        assert_eq!(
            std::ptr::addr_of!(slot).cast::<u8>(),
            std::ptr::from_ref::<Flow>(f).cast::<u8>()
        );
        assert_eq!(
            std::mem::size_of::<Option<Flow>>(),
            std::mem::size_of::<Flow>()
        );
    }

    /// What `Option<Flow>` relies on (see the store's module documentation): its `None`
    /// is marked in the niche of the key's one-value `enum Live`, in the flow's first
    /// cache line, not in a field further in. rustc picks the widest niche (Live's has all
    /// but one of a `u64`'s values) but does not promise to: this fails if it picks
    /// another, or if a wider niche is added to `Flow`.
    #[test]
    #[allow(unsafe_code)]
    fn a_free_slot_is_marked_in_the_flows_first_line() {
        use std::mem::{offset_of, MaybeUninit};
        let at = offset_of!(Flow, packed) + offset_of!(crate::analysis::packed::Packed, live);
        assert!(at + 8 <= 64, "the key's Live is in the first line ({at})");
        let mut slot = MaybeUninit::<Option<Flow>>::zeroed();
        slot.write(None);
        // SAFETY: reads 8 bytes inside the slot's memory. When rustc marks `None` in
        // Live's niche (what this checks), writing `None` set exactly those bytes; were it
        // marked elsewhere, they would be `zeroed`'s, or left undefined by the write, and
        // the test fails (or reads garbage) either way: only a failing run is unsound.
        let tag = unsafe {
            slot.as_ptr()
                .cast::<u8>()
                .add(at)
                .cast::<u64>()
                .read_unaligned()
        };
        assert_ne!(
            tag, 0,
            "None is not marked in Live's niche: Option<Flow> changed"
        );
        let taken = Some(flow(3));
        assert!(taken.as_ref().is_some_and(|f| f.id == 3));
    }

    #[test]
    #[should_panic(expected = "live flow")]
    fn a_pair_with_a_free_slot_is_a_bug_not_a_flow() {
        let mut s = Slots::default();
        s.push(flow(0));
        s.push(flow(1));
        s[1] = None;
        let _ = s.two(0, 1);
    }
}
