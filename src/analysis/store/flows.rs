//! The flow store: the one API through which the analyzer keeps its live flows. It finds
//! a flow by its key ([`FlowStore::cached`], [`FlowStore::find`]), takes a new one
//! ([`FlowStore::insert`]), hands out flows by slot number ([`FlowStore::get`],
//! [`FlowStore::flow_mut`], [`FlowStore::two`]), lists the live flows of an address pair
//! ([`FlowStore::pair`]), retires one ([`FlowStore::take`]) or all of them
//! ([`FlowStore::drain_chunks`]), and remembers which flow sent a PSN most recently
//! ([`FlowStore::note_sent`], [`FlowStore::sender`]). Behind it: the slots
//! (`super::slab`), the flow index (`super::index`), a direct-mapped cache of recent keys,
//! the free list, each slot's last-packet time and the recent-PSN table
//! (`super::recent`). It reads a flow's bookkeeping (key, packed key, peer, place in its
//! pair's list) and nothing of its protocol state.

use super::ahead::Helper;
use super::index::FlowIndex;
use super::recent::Recent;
use super::slab::Slots;
use crate::analysis::flow::Flow;
use crate::analysis::packed::{Live, Packed};
use dissectors::Addr;
use rustc_hash::FxHashMap;

/// Entries of the direct-mapped cache in front of the flow index: the flows of the last
/// few packets are found with one compare instead of a hash lookup.
pub(in crate::analysis) const CACHE_WAYS: usize = 64;
/// An empty cache entry, and a hint that found no slot.
pub(in crate::analysis) const NO_SLOT: u32 = u32::MAX;

impl Packed {
    /// Position in the direct-mapped flow cache.
    #[inline]
    fn way(&self) -> usize {
        let x = self.qp ^ (self.src as u32) ^ (self.dst as u32).rotate_left(11);
        (x ^ (x >> 16)) as usize & (CACHE_WAYS - 1)
    }
}

/// See the module documentation. A slot's number names its flow until the flow is taken
/// out; the number is then handed to the next flow inserted.
#[derive(Debug)]
pub(in crate::analysis) struct FlowStore {
    index: FlowIndex,
    /// Direct-mapped cache of recent flows (key, slot); slot `NO_SLOT` when empty.
    cache: [(Packed, u32); CACHE_WAYS],
    /// Live flows, in place (`slab`): a slot's number is where its flow is.
    slots: Slots,
    /// Each slot's flow's last packet time (`u64::MAX` for a free slot), dense so the
    /// sweep for idle flows reads 8 bytes per flow instead of touching every flow.
    last_seen: Vec<u64>,
    free: Vec<u32>,
    /// Live flows by (src, dst): where to look for a flow's other direction.
    by_pair: FxHashMap<(Addr, Addr), Vec<u32>>,
    /// Which request flow sent a PSN most recently.
    recent: Recent,
}

impl Default for FlowStore {
    fn default() -> Self {
        let none = Packed {
            src: 0,
            dst: 0,
            qp: 0,
            live: Live::Yes,
        };
        FlowStore {
            index: FlowIndex::default(),
            cache: [(none, NO_SLOT); CACHE_WAYS],
            slots: Slots::default(),
            last_seen: Vec::new(),
            free: Vec::new(),
            by_pair: FxHashMap::default(),
            recent: Recent::default(),
        }
    }
}

impl FlowStore {
    /// Flows held now.
    #[inline]
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Slot numbers handed out so far (live or free): every live slot is below it.
    #[inline]
    pub fn slot_count(&self) -> usize {
        self.last_seen.len()
    }

    /// The flow in `slot`, if one lives there.
    #[inline]
    pub fn get(&self, slot: u32) -> Option<&Flow> {
        self.slots.get(slot as usize)?.as_ref()
    }

    /// The flow in `slot`, mutably, if one lives there.
    #[inline]
    pub fn get_mut(&mut self, slot: u32) -> Option<&mut Flow> {
        if (slot as usize) < self.slots.len() {
            self.slots[slot as usize].as_mut()
        } else {
            None
        }
    }

    /// The flow in `slot`, which the caller knows to be live (a bug otherwise).
    #[inline]
    pub fn flow(&self, slot: u32) -> &Flow {
        self.slots[slot as usize].as_ref().expect("live flow")
    }

    /// The flow in `slot`, mutably, which the caller knows to be live.
    #[inline]
    pub fn flow_mut(&mut self, slot: u32) -> &mut Flow {
        self.slots[slot as usize].as_mut().expect("live flow")
    }

    /// The live flows of two distinct slots, mutably, in the order asked.
    #[inline]
    pub fn two(&mut self, a: u32, b: u32) -> (&mut Flow, &mut Flow) {
        self.slots.two(a, b)
    }

    /// Every live flow, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &Flow> {
        self.slots.iter().flatten()
    }

    /// Calls `f` on every live flow, in slot order, a few flows behind a cache hint.
    pub fn each(&self, f: impl FnMut(&Flow)) {
        self.slots.each(f);
    }

    /// The slots of the live flows from `src` to `dst`.
    #[inline]
    pub fn pair(&self, src: Addr, dst: Addr) -> &[u32] {
        self.by_pair.get(&(src, dst)).map_or(&[], Vec::as_slice)
    }

    /// When the flow in `slot` last saw a packet (`u64::MAX` for a free slot).
    #[inline]
    pub fn last_seen(&self, slot: usize) -> u64 {
        self.last_seen[slot]
    }

    /// Notes that the flow in `slot` saw a packet at `ts`.
    #[inline]
    pub fn touch(&mut self, slot: u32, ts: u64) {
        self.last_seen[slot as usize] = ts;
    }

    /// The slot of `packed` if it is in the cache of recent keys.
    #[inline]
    pub fn cached(&self, packed: Packed) -> Option<u32> {
        let (k, s) = self.cache[packed.way()];
        (s != NO_SLOT && k == packed).then_some(s)
    }

    /// Puts `packed`'s slot in the cache of recent keys.
    #[inline]
    pub fn cache(&mut self, packed: Packed, slot: u32) {
        self.cache[packed.way()] = (packed, slot);
    }

    /// The slot of the live flow keyed `packed`, filed under `hash` (`packed.hash32()`).
    #[inline]
    pub fn find(&self, packed: Packed, hash: u32) -> Option<u32> {
        let slots = &self.slots;
        self.index.find(hash, |c| {
            slots[c as usize]
                .as_ref()
                .is_some_and(|f| f.packed == packed)
        })
    }

    /// Takes flow `f`, keyed `f.packed` and filed under `hash`, that saw its first packet
    /// at `ts`: sets its place in its pair's list and returns its slot.
    pub fn insert(&mut self, mut f: Flow, hash: u32, ts: u64) -> u32 {
        let (src, dst) = (f.key.src, f.key.dst);
        let same_pair = self.by_pair.entry((src, dst)).or_default();
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
            .get_mut(&(src, dst))
            .expect("entry made above")
            .push(slot);
        self.recent.fit(self.index.len());
        slot
    }

    /// Takes the flow in `slot` out, if one lives there, and out of everything that finds
    /// it: its peer's link to it, the index and the cache, its pair's list. The slot is
    /// free for the next flow.
    pub fn take(&mut self, slot: u32) -> Option<Flow> {
        let f = self.slots[slot as usize].take()?;
        self.last_seen[slot as usize] = u64::MAX;
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
        self.free.push(slot);
        Some(f)
    }

    /// At the end of the run: every slot, a chunk at a time in slot order, for the caller
    /// to empty. The tables that find flows are left as they are (they go with the store).
    pub fn drain_chunks(&mut self) -> impl Iterator<Item = super::slab::Chunk> {
        self.free.clear();
        self.slots.drain_chunks()
    }

    /// The helper thread that makes memory ahead (see `super`, Threads).
    pub fn helper(&self) -> Helper {
        self.slots.helper()
    }

    /// Notes that flow `slot` sent the PSN of `tag` (`super::recent::send_tag`).
    #[inline]
    pub fn note_sent(&mut self, tag: u32, slot: u32) {
        self.recent.note(tag, slot);
    }

    /// The flow that most recently sent the PSN of `tag`, if one is on file.
    #[inline]
    pub fn sender(&self, tag: u32) -> Option<u32> {
        self.recent.find(tag)
    }

    /// Flows filed in the index (for tests: an idle flow is gone from it).
    #[cfg(test)]
    pub fn indexed(&self) -> usize {
        self.index.len()
    }
}

/// Where a cache hint (`crate::analysis::warm`) finds the lines of a coming frame. These
/// read the tables without confirming a key: a wrong guess only warms the wrong lines.
impl FlowStore {
    /// The index line `hash` is filed from.
    #[inline]
    pub fn index_home(&self, hash: u32) -> *const u8 {
        self.index.home(hash)
    }

    /// The first slot filed under `hash`, unconfirmed.
    #[inline]
    pub fn index_guess(&self, hash: u32) -> Option<u32> {
        self.index.find(hash, |_| true)
    }

    /// A slot (live or free) and its last-packet time, if the slot was handed out.
    #[inline]
    pub fn slot_and_seen(&self, s: u32) -> Option<(&Option<Flow>, &u64)> {
        Some((self.slots.get(s as usize)?, self.last_seen.get(s as usize)?))
    }

    /// The recent-PSN bucket `tag` is filed in.
    #[inline]
    pub fn recent_bucket(&self, tag: u32) -> &impl Sized {
        self.recent.bucket_of(tag)
    }
}
