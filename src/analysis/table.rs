//! The flow table: flows live in slots (`super::store::slab`) found through a hash map keyed by
//! [`Packed`] (the addresses and QP as integers) with a small direct-mapped cache in
//! front; flows that end are summarised (which end and when: `super::expire`); the
//! recent-PSN table through which a response finds the request stream it answers in one
//! probe.

use super::events::EventLog;
use super::flow::{self, Flow, FlowKey, Gap};
use super::gaps::unrecovered;
use super::packed::{addr_bits, ip_bits, Live, Packed};
use super::requester::end_episode;
use super::Analyzer;
use dissectors::{Decoded, Psn, Roce};

/// The packed key's constructors and its cache way (the hash is in `packed.rs`).
impl Packed {
    pub(super) fn of(k: &FlowKey) -> Self {
        Packed {
            src: addr_bits(k.src),
            dst: addr_bits(k.dst),
            qp: k.qp.0,
            live: Live::Yes,
        }
    }

    /// The key of a decoded RoCE packet, straight from the IP header when there is one.
    #[inline]
    pub(super) fn from_decoded(d: &Decoded, qp: dissectors::Qpn) -> Option<Self> {
        if let Some(ip) = &d.ip {
            return Some(Packed {
                src: ip_bits(ip.src),
                dst: ip_bits(ip.dst),
                qp: qp.0,
                live: Live::Yes,
            });
        }
        let (src, dst) = d.endpoints()?;
        Some(Packed::of(&FlowKey { src, dst, qp }))
    }

    /// Position in the direct-mapped flow cache.
    #[inline]
    pub(super) fn way(&self) -> usize {
        let x = self.qp ^ (self.src as u32) ^ (self.dst as u32).rotate_left(11);
        (x ^ (x >> 16)) as usize & (CACHE_WAYS - 1)
    }
}

/// Entries per bucket of the recent-PSN table.
pub(super) const RECENT_WAYS: usize = 8;

/// One entry of the recent-PSN table: 8 bytes, a bucket of eight in one cache line.
/// The tag is a hash, not a proof: a hit is confirmed against the flow (its addresses)
/// and its own ring of sent PSNs.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RecentSend {
    /// [`send_tag`] of (requester, responder, PSN); 0 when empty.
    pub(super) tag: u32,
    pub(super) slot: u32,
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
pub(super) struct Recent {
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
    pub(super) fn note(&mut self, tag: u32, slot: u32) {
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
    pub(super) fn bucket_of(&self, tag: u32) -> &impl Sized {
        &self.buckets[self.bucket(tag)]
    }

    /// The flow that most recently sent the PSN of `tag`, if one is on file.
    #[inline]
    pub(super) fn find(&self, tag: u32) -> Option<u32> {
        self.buckets[self.bucket(tag)]
            .0
            .iter()
            .find(|e| e.tag == tag)
            .map(|e| e.slot)
    }

    /// Grows to eight entries per flow for `flows` flows, re-filing what it holds.
    pub(super) fn fit(&mut self, flows: usize) {
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
pub(super) fn pair_hash(src: u128, dst: u128) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    (src, dst).hash(&mut h);
    h.finish()
}

/// A non-zero 32-bit tag of a request PSN between a pair of addresses: one multiply per
/// packet on top of the flow's precomputed pair hash.
#[inline]
pub(super) fn send_tag(pair: u64, psn: Psn) -> u32 {
    let h = (pair ^ u64::from(psn.0).wrapping_mul(0x9e37_79b9_7f4a_7c15)).rotate_left(23);
    ((h ^ (h >> 32)) as u32) | 1
}

/// Entries of the direct-mapped cache in front of the flow hash map: the flows of the
/// last few packets are found with one compare instead of a hash lookup.
pub(super) const CACHE_WAYS: usize = 64;
/// An empty cache entry.
pub(super) const NO_SLOT: u32 = u32::MAX;

impl Analyzer {
    /// Forgets the connections whose flows are no longer all known (retired without a
    /// kept summary, beyond `max_flow_summaries`) once such entries could make up most of
    /// the list, counting them in the totals: the list stays bounded by the live and kept
    /// flows, whatever the number of connections over time (a node agent runs for days).
    pub(super) fn prune_connections(&mut self) {
        let live = self.slots.len() - self.free.len();
        if self.connections.len() <= 2 * (live + self.done.len()) + 1024 {
            return;
        }
        let known: rustc_hash::FxHashSet<u32> = self
            .slots
            .iter()
            .flatten()
            .map(|f| f.id)
            .chain(self.done.iter().map(|s| s.id))
            .collect();
        let before = self.connections.len();
        self.connections
            .retain(|(a, b)| known.contains(a) && known.contains(b));
        // `sums.connections` holds the forgotten ones; the report adds the listed ones.
        self.sums.connections += (before - self.connections.len()) as u64;
    }

    /// Settles a flow's open state, stores its summary and frees its slot.
    pub(super) fn retire(&mut self, slot: u32) {
        let Some(mut f) = self.slots[slot as usize].take() else {
            return;
        };
        self.last_seen[slot as usize] = u64::MAX;
        settle(&mut f, &mut self.log, self.capture.last_ts);
        self.unlink(slot, &f);
        super::keep(
            &mut self.done,
            &mut self.sums,
            self.cfg.max_flow_summaries,
            &f,
        );
        self.free.push(slot);
    }

    /// At the end of the run: settles and summarises every flow, leaving the tables that
    /// find flows as they are (they go with the analyzer): no index, pair list or peer
    /// is updated for a flow that is about to go.
    ///
    /// The flows are settled where they are, not moved out, a chunk of slots at a time,
    /// each a few slots behind a cache hint for its lines (`super::store::hint::warm_whole`), and
    /// each chunk's memory goes back before the next one's summaries are made.
    pub(super) fn retire_all(&mut self) {
        // Room for the summaries kept, made once: growing the list by doubling copied
        // up to twice its size (15 MB at 16,384 flows) into freshly faulted pages.
        let room = self.cfg.max_flow_summaries.saturating_sub(self.done.len());
        self.done.reserve(self.live_flows().min(room));
        // Their pages mapped a little ahead of the summaries, by the helper thread that
        // made chunks ahead.
        let mut populate = super::store::populate::Ahead::new(self.slots.helper());
        self.free.clear();
        for mut chunk in self.slots.drain_chunks() {
            populate.room_of(&mut self.done, 2 * super::store::slab::CHUNK);
            for i in 0..chunk.len() {
                super::store::slab::warm_ahead(&chunk[..], i);
                if let Some(next) = chunk.get(i + 1) {
                    super::store::hint::warm_owned(next);
                }
                if let Some(f) = chunk[i].as_mut() {
                    settle(f, &mut self.log, self.capture.last_ts);
                    super::keep(
                        &mut self.done,
                        &mut self.sums,
                        self.cfg.max_flow_summaries,
                        f,
                    );
                }
                // Dropped now, while its lines are loaded.
                chunk[i] = None;
            }
        }
    }

    /// Takes a retired flow out of the tables that find it: its peer, the index and its
    /// cache, the list of its address pair.
    fn unlink(&mut self, slot: u32, f: &Flow) {
        if let Some(p) = f.peer {
            if let Some(pf) = self.slots[p as usize].as_mut() {
                pf.peer = None;
            }
        }
        let packed = f.packed;
        self.index.remove(packed.hash32(), slot);
        self.cache[packed.way()].1 = NO_SLOT;
        if let Some(v) = self.by_pair.get_mut(&(f.key.src, f.key.dst)) {
            let pos = f.pair_pos as usize;
            if v.get(pos) == Some(&slot) {
                v.swap_remove(pos);
                if let Some(&moved) = v.get(pos) {
                    if let Some(m) = self.slots[moved as usize].as_mut() {
                        m.pair_pos = pos as u32;
                    }
                }
            }
            if v.is_empty() {
                self.by_pair.remove(&(f.key.src, f.key.dst));
            }
        }
    }

    #[inline]
    pub(super) fn flow_slot(
        &mut self,
        packed: Packed,
        hint: &super::Hint,
        d: &Decoded,
        r: &Roce,
        ts: u64,
    ) -> Option<u32> {
        let way = packed.way();
        let (k, s) = self.cache[way];
        if s != NO_SLOT && k == packed {
            return Some(s);
        }
        // Hashed only past the cache (a hint's hash when the frame was warmed).
        let hash = hint.hash_of(&packed);
        let slots = &self.slots;
        let found = self.index.find(hash, |c| {
            slots[c as usize]
                .as_ref()
                .is_some_and(|f| f.packed == packed)
        });
        let s = match found {
            Some(s) => s,
            None if self.live_flows() >= self.cfg.max_flows => return None,
            None => self.new_flow(packed, hash, d, r, ts),
        };
        self.cache[way] = (packed, s);
        Some(s)
    }

    #[cold]
    pub(super) fn new_flow(
        &mut self,
        packed: Packed,
        hash: u32,
        d: &Decoded,
        r: &Roce,
        ts: u64,
    ) -> u32 {
        let (src, dst) = d.endpoints().expect("a keyed packet has endpoints");
        let key = FlowKey {
            src,
            dst,
            qp: r.bth.dest_qp,
        };
        let mut f = Flow::new(self.next_id, key, r.version, ts);
        f.pair_hash = [
            pair_hash(packed.src, packed.dst),
            pair_hash(packed.dst, packed.src),
        ];
        self.next_id += 1;
        let same_pair = self.by_pair.entry((key.src, key.dst)).or_default();
        f.pair_pos = same_pair.len() as u32;
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(f);
                self.last_seen[s as usize] = ts;
                s
            }
            None => {
                self.last_seen.push(ts);
                self.slots.push(f)
            }
        };
        self.index.insert(hash, slot);
        self.by_pair
            .get_mut(&(key.src, key.dst))
            .expect("entry made above")
            .push(slot);
        self.recent.fit(self.index.len());
        slot
    }
}

/// Closes whatever is still open in a flow that ends (or idles out).
pub(super) fn settle(f: &mut Flow, log: &mut EventLog, end_ns: u64) {
    if let Some(s) = f.req.tentative.take() {
        super::requester::resolve(f, s, None, log);
    }
    end_episode(&mut f.req.episode, log);
    end_episode(&mut f.resp.episode, log);
    let gave_up = super::stop::settle_stop(f, end_ns);
    let mut gaps = [Gap::default(); 2 * flow::GAP_SLOTS];
    let mut n = 0;
    f.req.gaps.drain(|g| {
        gaps[n] = g;
        n += 1;
    });
    f.resp.gaps.drain(|g| {
        gaps[n] = g;
        n += 1;
    });
    for g in &mut gaps[..n] {
        if gave_up {
            // The requester gave up on a QP that lost these: network loss it never
            // recovered, not packets the capture missed.
            (g.nak, g.acked) = (true, false);
        }
        unrecovered(f, g, log);
    }
    if f.ce_since_cnp > 0 {
        f.counters.ce_without_cnp += f.ce_since_cnp;
        f.ce_since_cnp = 0;
    }
}
