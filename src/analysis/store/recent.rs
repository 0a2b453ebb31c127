//! The recent-PSN table: which request flow sent a PSN most recently, by (requester,
//! responder, PSN), so that a response finds the request stream it answers in one probe
//! before the two directions are paired. Part of the flow store (`super::flows`), which
//! keeps it sized with the flows.

use dissectors::Psn;

/// Entries per bucket of the recent-PSN table.
pub(in crate::analysis) const RECENT_WAYS: usize = 8;

/// One entry of the recent-PSN table: 8 bytes, a bucket of eight in one cache line.
/// The tag is a hash, not a proof: a hit is confirmed against the flow (its addresses)
/// and its own ring of sent PSNs.
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::analysis) struct RecentSend {
    /// [`send_tag`] of (requester, responder, PSN); 0 when empty.
    pub(in crate::analysis) tag: u32,
    pub(in crate::analysis) slot: u32,
}

/// A bucket: one cache line, so a probe costs one.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
struct Bucket([RecentSend; RECENT_WAYS]);

/// Which request flow sent a PSN most recently, by (requester, responder, PSN): buckets
/// of [`RECENT_WAYS`] entries, the newest first (a bucket drops its oldest), sized with
/// the flows (a bucket, eight entries, per flow) and re-filed, not forgotten, when it
/// grows.
#[derive(Debug)]
pub(in crate::analysis) struct Recent {
    buckets: Vec<Bucket>,
}

impl Default for Recent {
    fn default() -> Self {
        Recent {
            buckets: vec![Bucket::default(); 512],
        }
    }
}

impl Recent {
    #[inline]
    fn bucket(&self, tag: u32) -> usize {
        // Bit 0 of every tag is set (0 marks an empty entry): the bucket is of the others.
        (tag >> 1) as usize & (self.buckets.len() - 1)
    }

    /// Notes that flow `slot` sent the PSN of `tag`: the newest sender of a tag replaces
    /// the older one.
    #[inline]
    pub(in crate::analysis) fn note(&mut self, tag: u32, slot: u32) {
        let b = self.bucket(tag);
        let ways = &mut self.buckets[b].0;
        let at = ways
            .iter()
            .position(|e| e.tag == tag || e.tag == 0)
            .unwrap_or(RECENT_WAYS - 1);
        ways.copy_within(0..at, 1);
        ways[0] = RecentSend { tag, slot };
    }

    /// The bucket `tag` is filed in (for a cache hint).
    #[inline]
    pub(in crate::analysis) fn bucket_of(&self, tag: u32) -> &impl Sized {
        &self.buckets[self.bucket(tag)]
    }

    /// The flow that most recently sent the PSN of `tag`, if one is on file.
    #[inline]
    pub(in crate::analysis) fn find(&self, tag: u32) -> Option<u32> {
        self.buckets[self.bucket(tag)]
            .0
            .iter()
            .find(|e| e.tag == tag)
            .map(|e| e.slot)
    }

    /// Grows to eight entries per flow for `flows` flows, re-filing what it holds.
    pub(in crate::analysis) fn fit(&mut self, flows: usize) {
        let want = flows.next_power_of_two().max(512);
        if want <= self.buckets.len() {
            return;
        }
        let old = std::mem::replace(&mut self.buckets, vec![Bucket::default(); want]);
        for Bucket(ways) in old {
            // Oldest first, so that each bucket keeps its newest.
            for e in ways.iter().rev().filter(|e| e.tag != 0) {
                self.note(e.tag, e.slot);
            }
        }
    }
}

/// A hash of an address pair (computed once per flow, for both directions).
pub(in crate::analysis) fn pair_hash(src: u128, dst: u128) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    (src, dst).hash(&mut h);
    h.finish()
}

/// A non-zero 32-bit tag of a request PSN between a pair of addresses: one multiply per
/// packet on top of the flow's precomputed pair hash.
#[inline]
pub(in crate::analysis) fn send_tag(pair: u64, psn: Psn) -> u32 {
    let h = (pair ^ u64::from(psn.0).wrapping_mul(0x9e37_79b9_7f4a_7c15)).rotate_left(23);
    ((h ^ (h >> 32)) as u32) | 1
}
