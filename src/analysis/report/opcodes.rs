//! A flow's packets per BTH operation as its summary reports them: by name, in name order
//! (the keys of the document's `opcodes` object), without a map. A summary held a
//! `BTreeMap` of them, one 288-byte heap node per flow, allocated when the flow was
//! summarised and freed with the report: with 16,384 flows, 4.7 MB of heap made and freed
//! at the end of every run. Now it holds the counts as the flow kept them (a few inline
//! slots, [`OpCounts`]) and orders them by name when they are read.

use crate::analysis::flow::{OpCounts, N_OPS};
use dissectors::Operation;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use std::fmt;
use std::sync::OnceLock;

/// Index of the packets of no known operation (after the operations' indexes).
const OTHER: usize = N_OPS;

/// The name of index `i`: an operation's, or `other`.
fn name(i: usize) -> &'static str {
    Operation::ALL.get(i).map_or("other", |o| o.name())
}

/// The indexes (operations, then `OTHER`) in the order of their names, made once.
fn by_name() -> &'static [u8; N_OPS + 1] {
    static ORDER: OnceLock<[u8; N_OPS + 1]> = OnceLock::new();
    ORDER.get_or_init(|| {
        let mut order: [u8; N_OPS + 1] = std::array::from_fn(|i| i as u8);
        order.sort_by_key(|&i| name(usize::from(i)));
        order
    })
}

/// The place of index `i` in name order, made once.
fn rank(i: usize) -> u8 {
    static RANK: OnceLock<[u8; N_OPS + 1]> = OnceLock::new();
    RANK.get_or_init(|| {
        let mut rank = [0u8; N_OPS + 1];
        for (r, &i) in by_name().iter().enumerate() {
            rank[usize::from(i)] = r as u8;
        }
        rank
    })[i]
}

/// Packets per operation of one flow; see the module documentation.
#[derive(Clone, Default)]
pub struct Opcodes {
    ops: OpCounts,
    /// Packets of no known operation, reported as `other`.
    other: u64,
}

impl Opcodes {
    pub(crate) fn new(ops: OpCounts, other: u64) -> Self {
        Opcodes { ops, other }
    }

    /// `(name, packets)` of every operation the flow carried, in name order (`other`,
    /// packets of no known operation, sorts after every operation's name).
    pub fn iter(&self) -> Iter {
        let mut it = Iter {
            items: [(0, 0); N_OPS + 1],
            len: 0,
            at: 0,
        };
        let mut add = |i: usize, n: u64| {
            if n > 0 {
                it.items[it.len] = (i as u8, n);
                it.len += 1;
            }
        };
        match self.ops.all() {
            Some(all) => {
                for &i in by_name() {
                    let i = usize::from(i);
                    add(i, if i == OTHER { self.other } else { all[i] });
                }
            }
            None => {
                self.ops.each_inline(&mut add);
                add(OTHER, self.other);
                // A handful of entries: insertion sort by name.
                let items = &mut it.items[..it.len];
                for k in 1..items.len() {
                    let mut j = k;
                    while j > 0 && rank(items[j - 1].0.into()) > rank(items[j].0.into()) {
                        items.swap(j - 1, j);
                        j -= 1;
                    }
                }
            }
        }
        it
    }

    /// Whether the flow carried no packet at all.
    pub fn is_empty(&self) -> bool {
        self.iter().len == 0
    }

    /// Packets of every operation together.
    pub fn total(&self) -> u64 {
        self.iter().map(|(_, n)| n).sum()
    }
}

/// The entries of [`Opcodes::iter`].
pub struct Iter {
    /// `(index, packets)`, in name order.
    items: [(u8, u64); N_OPS + 1],
    len: usize,
    at: usize,
}

impl Iterator for Iter {
    type Item = (&'static str, u64);

    fn next(&mut self) -> Option<Self::Item> {
        let &(i, n) = self.items[..self.len].get(self.at)?;
        self.at += 1;
        Some((name(usize::from(i)), n))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.len - self.at;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter {}

impl PartialEq for Opcodes {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl fmt::Debug for Opcodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A JSON object of name -> packets, in name order (as the map it replaces was).
impl Serialize for Opcodes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let it = self.iter();
        let mut m = s.serialize_map(Some(it.len()))?;
        for (k, v) in it {
            m.serialize_entry(k, &v)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The map a summary used to hold: every non-zero count under its name.
    fn map_of(counts: &[(usize, u64)], other: u64) -> BTreeMap<&'static str, u64> {
        let mut m = BTreeMap::new();
        for &(i, n) in counts {
            if n > 0 {
                *m.entry(name(i)).or_default() += n;
            }
        }
        if other > 0 {
            m.insert("other", other);
        }
        m
    }

    fn opcodes_of(counts: &[(usize, u64)], other: u64) -> Opcodes {
        let mut ops = OpCounts::default();
        for &(i, n) in counts {
            for _ in 0..n {
                ops.add(Operation::ALL[i]);
            }
        }
        Opcodes::new(ops, other)
    }

    #[test]
    fn names_are_distinct_and_other_sorts_last() {
        let mut names: Vec<&str> = (0..=OTHER).map(name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), N_OPS + 1);
        assert_eq!(usize::from(*by_name().last().unwrap()), OTHER);
    }

    #[test]
    fn entries_are_those_of_the_map_in_its_order() {
        // Inline slots (a few operations, in any order of first use), the full table
        // (more operations than slots), with and without `other`, and nothing at all.
        let cases: Vec<(Vec<(usize, u64)>, u64)> = vec![
            (vec![], 0),
            (vec![], 5),
            (vec![(8, 3), (6, 1), (7, 2)], 0),
            (vec![(17, 1), (0, 4), (26, 2), (12, 7)], 1),
            ((0..N_OPS).rev().map(|i| (i, i as u64 % 3 + 1)).collect(), 0),
            ((0..N_OPS).map(|i| (i, i as u64 % 2)).collect(), 9),
        ];
        for (counts, other) in cases {
            let o = opcodes_of(&counts, other);
            let want: Vec<(&str, u64)> = map_of(&counts, other).into_iter().collect();
            let got: Vec<(&str, u64)> = o.iter().collect();
            assert_eq!(got, want, "{counts:?} other {other}");
            assert_eq!(o.is_empty(), want.is_empty());
            assert_eq!(o.total(), want.iter().map(|(_, n)| n).sum::<u64>());
            assert_eq!(
                serde_json::to_string(&o).unwrap(),
                serde_json::to_string(&map_of(&counts, other)).unwrap()
            );
        }
    }
}
