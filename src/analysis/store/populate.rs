//! Page faults taken off the analyzing thread: a large buffer being filled in order (the
//! summaries kept at the end of a run) is populated (its pages mapped,
//! `MADV_POPULATE_WRITE`) a little ahead of the filling, on a helper thread. At the end of
//! a run with 16,384 flows the summaries kept (16 MB) were two fifths of the run's page
//! faults, each taken by the thread that settles the flows. Only a bounded stretch ahead
//! is populated, so the memory grows with the filling as before (the flows' chunks go back
//! while the summaries are made), not all at once.
//!
//! Populating never changes what the memory holds (the kernel maps the pages as a write
//! would, without writing), so it can run beside the thread that writes the buffer. Where
//! the kernel does not know the advice (before Linux 5.14), nothing is done and the pages
//! fault where they are first written, as without it.
#![allow(unsafe_code)]

use super::ahead::Helper;

const PAGE: usize = 4096;

/// Buffers smaller than this (room and all) are not worth a helper thread.
const AT_LEAST: usize = 1 << 20;

/// Populates a vector's room ahead of its filling: see the module documentation. The
/// stretches are populated by the analysis' [`Helper`], in the order asked, between
/// whatever else it was asked to do.
#[derive(Debug)]
pub(in crate::analysis) struct Ahead {
    helper: Helper,
    /// End (an address) of what was asked for so far.
    asked_to: usize,
    /// The helper cannot be had: not tried again.
    failed: bool,
}

impl Ahead {
    pub fn new(helper: Helper) -> Self {
        Ahead {
            helper,
            asked_to: 0,
            failed: false,
        }
    }

    /// Asks for the room of `v` (reserved, not used) to be populated up to `items` items
    /// past its length, less what was asked for before; nothing while the whole vector is
    /// smaller than [`AT_LEAST`]. A stretch asked for may be populated after `v` moved,
    /// grew or went: that is harmless (populating changes no memory's contents, and
    /// memory no longer mapped is an error ignored).
    pub fn room_of<T>(&mut self, v: &mut Vec<T>, items: usize) {
        if self.failed || v.capacity().saturating_mul(std::mem::size_of::<T>()) < AT_LEAST {
            return;
        }
        let room = v.spare_capacity_mut();
        let start = room.as_mut_ptr() as usize;
        let end = start + std::mem::size_of::<T>() * items.min(room.len());
        // Whole pages only: the pages at either end may hold other memory.
        let first = start.max(self.asked_to).next_multiple_of(PAGE);
        let last = end / PAGE * PAGE;
        if last <= first {
            return;
        }
        if self.helper.run(Box::new(move || populate(first, last))) {
            self.asked_to = last;
        } else {
            self.failed = true;
        }
    }
}

/// Maps the pages of `[first, last)` (page-aligned) writable without touching them.
fn populate(first: usize, last: usize) {
    // SAFETY: MADV_POPULATE_WRITE maps the pages of the range as a write would, without
    // reading or writing their contents, so it races with no access of any thread and
    // changes nothing a program can read; the range (part of a vector's reserved room,
    // see `Ahead::room_of`) is only an address range to the kernel. A range no longer
    // mapped gives ENOMEM and an old kernel EINVAL: both leave the pages to fault when
    // written, as without this.
    let _ = unsafe {
        rustix::mm::madvise(
            first as *mut std::ffi::c_void,
            last - first,
            rustix::mm::Advice::LinuxPopulateWrite,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn populating_ahead_leaves_the_vector_as_it_was() {
        let mut v: Vec<u64> = (0..10).collect();
        v.reserve(1 << 20); // 8 MiB of room
        let cap = v.capacity();
        let mut p = Ahead::new(Helper::default());
        for i in 10..200_000 {
            if i % 4096 == 0 {
                p.room_of(&mut v, 8192);
            }
            v.push(i);
        }
        let asked = p.asked_to;
        assert!(asked > 0, "asked for 8 MiB");
        p.room_of(&mut v, 8192);
        assert!(p.asked_to >= asked);
        drop(p);
        assert_eq!(v.capacity(), cap);
        assert!(v.iter().copied().eq(0..200_000));
    }

    #[test]
    fn a_stretch_is_asked_for_once_and_small_room_not_at_all() {
        let mut v: Vec<u8> = Vec::with_capacity(4 << 20);
        let mut p = Ahead::new(Helper::default());
        p.room_of(&mut v, 1 << 20);
        let to = p.asked_to;
        assert!(to > 0);
        p.room_of(&mut v, 1 << 20); // the same stretch: nothing more
        assert_eq!(p.asked_to, to);
        p.room_of(&mut v, 2 << 20);
        assert!(p.asked_to > to);
        let mut small: Vec<u8> = Vec::with_capacity(AT_LEAST / 4);
        let mut q = Ahead::new(Helper::default());
        q.room_of(&mut small, AT_LEAST / 4);
        assert_eq!(q.asked_to, 0);
    }
}
