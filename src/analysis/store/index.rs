//! The flow index: which slot holds the flow of a key. An open-addressing table of 8-byte
//! entries (a 32-bit hash of the key and the slot), probed linearly and kept at most
//! three quarters full. It holds no keys: a hit is confirmed against the key the flow itself
//! carries in its first cache line, which the packet reads next anyway — so a lookup costs
//! one cache line of the table (16,384 flows fit in 256 KiB, in the core's L2) instead of
//! a hash map entry with the whole key (64 bytes each).

/// An empty entry's slot.
const EMPTY: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    hash: u32,
    slot: u32,
}

const FREE: Entry = Entry {
    hash: 0,
    slot: EMPTY,
};

/// See the module documentation.
#[derive(Debug)]
pub(in crate::analysis) struct FlowIndex {
    table: Vec<Entry>,
    len: usize,
}

impl Default for FlowIndex {
    fn default() -> Self {
        FlowIndex {
            table: vec![FREE; 64],
            len: 0,
        }
    }
}

impl FlowIndex {
    /// Entries in use.
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn mask(&self) -> usize {
        self.table.len() - 1
    }

    /// The slot whose entry has `hash` and for which `is(slot)` holds (the caller
    /// compares the flow's key).
    #[inline]
    pub fn find(&self, hash: u32, is: impl Fn(u32) -> bool) -> Option<u32> {
        let mask = self.mask();
        let mut i = hash as usize & mask;
        loop {
            let e = self.table[i];
            if e.slot == EMPTY {
                return None;
            }
            if e.hash == hash && is(e.slot) {
                return Some(e.slot);
            }
            i = (i + 1) & mask;
        }
    }

    /// Where a lookup of `hash` starts (for a cache hint).
    #[inline]
    pub fn home(&self, hash: u32) -> *const u8 {
        (&raw const self.table[hash as usize & self.mask()]).cast()
    }

    /// Adds `slot` under `hash` (the caller knows its key is not indexed yet).
    pub fn insert(&mut self, hash: u32, slot: u32) {
        if (self.len + 1) * 4 > self.table.len() * 3 {
            self.grow();
        }
        self.place(Entry { hash, slot });
        self.len += 1;
    }

    fn place(&mut self, e: Entry) {
        let mask = self.mask();
        let mut i = e.hash as usize & mask;
        while self.table[i].slot != EMPTY {
            i = (i + 1) & mask;
        }
        self.table[i] = e;
    }

    #[cold]
    fn grow(&mut self) {
        let n = self.table.len() * 2;
        let old = std::mem::replace(&mut self.table, vec![FREE; n]);
        for e in old.into_iter().filter(|e| e.slot != EMPTY) {
            self.place(e);
        }
    }

    /// Removes the entry of `slot`, indexed under `hash`; the entries after it in its
    /// probe run move back so that no lookup stops short (no tombstones).
    pub fn remove(&mut self, hash: u32, slot: u32) {
        let mask = self.mask();
        let mut i = hash as usize & mask;
        loop {
            let e = self.table[i];
            if e.slot == EMPTY {
                return;
            }
            if e.slot == slot {
                break;
            }
            i = (i + 1) & mask;
        }
        self.len -= 1;
        let mut hole = i;
        let mut j = (i + 1) & mask;
        while self.table[j].slot != EMPTY {
            let home = self.table[j].hash as usize & mask;
            // The entry at j may fill the hole when its home is not in (hole, j]
            // (cyclically): its probe run passes the hole.
            let between = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !between {
                self.table[hole] = self.table[j];
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.table[hole] = FREE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a model (a map from slot to hash), with colliding hashes and a table
    /// that grows and wraps: every slot inserted and not removed is found, no other.
    #[test]
    fn index_matches_a_model() {
        let mut ix = FlowIndex::default();
        let mut model: std::collections::BTreeMap<u32, u32> = Default::default();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for step in 0..20_000u32 {
            let r = next();
            if r % 3 != 0 || model.is_empty() {
                // Few distinct hashes: long probe runs and many equal ones.
                let hash = ((r >> 8) as u32 % 97) | ((r as u32 & 1) << 31);
                ix.insert(hash, step);
                model.insert(step, hash);
            } else {
                let k = *model.keys().nth((r >> 8) as usize % model.len()).unwrap();
                let h = model.remove(&k).unwrap();
                ix.remove(h, k);
            }
            if step % 997 == 0 {
                for (&s, &h) in &model {
                    assert_eq!(ix.find(h, |c| c == s), Some(s), "step {step}");
                }
                assert_eq!(ix.len(), model.len());
                assert_eq!(ix.find(12345, |_| true), None);
            }
        }
    }
}
