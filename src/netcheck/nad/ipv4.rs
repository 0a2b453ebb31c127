//! IPv4 subnets and address sets as whereabouts sees them: a range is a CIDR whose usable
//! addresses are the network address + 1 to the broadcast address - 1 (all of a /31 or
//! /32), cut by `range_start` / `range_end` and minus the `exclude` CIDRs. Sets are sorted,
//! disjoint inclusive intervals, so a /8 costs as little as a /30.

use std::fmt;
use std::net::Ipv4Addr;

/// An IPv4 subnet, host bits cleared: `198.51.100.0/24`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cidr {
    /// The network address as a host-order `u32` (`198.51.100.0` → `0xc6336400`).
    pub net: u32,
    /// The prefix length in bits, 0 to 32.
    pub len: u8,
}

fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

impl Cidr {
    /// `a.b.c.d/len` (host bits allowed: they are cleared) or `a.b.c.d` (a /32).
    pub fn parse(s: &str) -> Option<Cidr> {
        let s = s.trim();
        let (a, l) = match s.split_once('/') {
            Some((a, l)) => (a, l.parse::<u8>().ok().filter(|l| *l <= 32)?),
            None => (s, 32),
        };
        let a: Ipv4Addr = a.parse().ok()?;
        Some(Cidr::new(u32::from(a), l))
    }
    /// The subnet of `addr` with `len` bits; host bits of `addr` are cleared.
    pub fn new(addr: u32, len: u8) -> Cidr {
        Cidr {
            net: addr & mask(len),
            len,
        }
    }
    /// The network address (the lowest address of the CIDR).
    pub fn first(&self) -> u32 {
        self.net
    }
    /// The broadcast address (the highest address of the CIDR).
    pub fn last(&self) -> u32 {
        self.net | !mask(self.len)
    }
    /// True when address `a` lies inside the CIDR.
    pub fn contains(&self, a: u32) -> bool {
        a & mask(self.len) == self.net
    }
    /// True when all of `o` lies inside this CIDR.
    pub fn contains_cidr(&self, o: &Cidr) -> bool {
        o.len >= self.len && self.contains(o.net)
    }
    /// True when the two CIDRs share any address (one then contains the other).
    pub fn overlaps(&self, o: &Cidr) -> bool {
        self.contains(o.net) || o.contains(self.net)
    }
    /// The addresses whereabouts hands out from this CIDR.
    pub fn usable(&self) -> (u32, u32) {
        if self.len >= 31 {
            (self.first(), self.last())
        } else {
            (self.first() + 1, self.last() - 1)
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.net), self.len)
    }
}

/// A host-order `u32` as an [`Ipv4Addr`], for printing.
pub fn ip(a: u32) -> Ipv4Addr {
    Ipv4Addr::from(a)
}

/// Parses a dotted IPv4 address (`A.B.C.D`, surrounding blanks allowed) into a host-order `u32`.
pub fn parse_ip(s: &str) -> Option<u32> {
    s.trim().parse::<Ipv4Addr>().ok().map(u32::from)
}

/// A set of addresses: sorted, disjoint, non-adjacent inclusive intervals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set(pub Vec<(u32, u32)>);

impl Set {
    /// The addresses `a` to `b` inclusive; empty when `a > b`.
    pub fn interval(a: u32, b: u32) -> Set {
        if a <= b {
            Set(vec![(a, b)])
        } else {
            Set::default()
        }
    }
    /// How many addresses the set holds (a `u64`: a /0 holds 2^32).
    pub fn count(&self) -> u64 {
        self.0.iter().map(|(a, b)| u64::from(b - a) + 1).sum()
    }
    /// True when address `x` is in the set.
    pub fn contains(&self, x: u32) -> bool {
        self.0.iter().any(|(a, b)| *a <= x && x <= *b)
    }
    /// True when the set holds no address.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Takes the addresses `lo` to `hi` inclusive out of the set (an `exclude`).
    pub fn remove(&mut self, lo: u32, hi: u32) {
        let mut out = Vec::with_capacity(self.0.len() + 1);
        for &(a, b) in &self.0 {
            if hi < a || lo > b {
                out.push((a, b));
                continue;
            }
            if a < lo {
                out.push((a, lo - 1));
            }
            if b > hi {
                out.push((hi + 1, b));
            }
        }
        self.0 = out;
    }
    /// Takes every interval of `cuts` (inclusive, in any order, overlapping or not) out of
    /// the set at once: sorted, then one sweep, so thousands of `exclude`s cost
    /// O(n log n), not a pass over the set per exclude.
    pub fn remove_all(&mut self, mut cuts: Vec<(u32, u32)>) {
        cuts.sort_unstable();
        let mut out = Vec::with_capacity(self.0.len() + cuts.len());
        let mut first = 0;
        for &(a, b) in &self.0 {
            while first < cuts.len() && cuts[first].1 < a {
                first += 1;
            }
            let mut lo = a;
            let mut alive = true;
            for &(cl, ch) in cuts[first..].iter().take_while(|c| c.0 <= b) {
                if cl > lo {
                    out.push((lo, cl - 1));
                }
                if ch >= b {
                    alive = false;
                    break;
                }
                lo = lo.max(ch + 1);
            }
            if alive {
                out.push((lo, b));
            }
        }
        self.0 = out;
    }
    /// The addresses in both sets (what two ranges share).
    pub fn intersect(&self, o: &Set) -> Set {
        let mut out = Vec::new();
        for &(a, b) in &self.0 {
            for &(c, d) in &o.0 {
                let lo = a.max(c);
                let hi = b.min(d);
                if lo <= hi {
                    out.push((lo, hi));
                }
            }
        }
        out.sort_unstable();
        Set(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_and_sets() {
        let c = Cidr::parse("198.51.100.7/24").unwrap();
        assert_eq!(c.to_string(), "198.51.100.0/24");
        assert_eq!(c.usable(), (c.first() + 1, c.last() - 1));
        assert!(c.contains_cidr(&Cidr::parse("198.51.100.0/28").unwrap()));
        assert!(!c.contains_cidr(&Cidr::parse("198.51.100.0/23").unwrap()));
        assert!(Cidr::parse("198.51.100.0/33").is_none());
        let (a, b) = c.usable();
        let mut s = Set::interval(a, b);
        assert_eq!(s.count(), 254);
        s.remove(a, a + 3);
        s.remove(a + 10, a + 10);
        assert_eq!(s.count(), 249);
        assert!(!s.contains(a + 10));
        assert!(s.contains(a + 11));
        assert_eq!(s.intersect(&Set::interval(a, a + 12)).count(), 8);
    }

    #[test]
    fn removing_all_at_once_is_removing_one_by_one() {
        let mut x: u32 = 0x9e37_79b9;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for round in 0..200 {
            let (a, b) = (1000 + next() % 50, 1200 + next() % 50);
            let mut one = Set::interval(a, b);
            if round % 3 == 0 {
                one.remove(1100, 1110);
            }
            let mut all = one.clone();
            let cuts: Vec<(u32, u32)> = (0..next() % 12)
                .map(|_| {
                    let lo = 980 + next() % 300;
                    (lo, lo + next() % 40)
                })
                .collect();
            for &(lo, hi) in &cuts {
                one.remove(lo, hi);
            }
            all.remove_all(cuts.clone());
            assert_eq!(all, one, "{a}-{b} minus {cuts:?}");
        }
        let mut edge = Set::interval(0, u32::MAX);
        edge.remove_all(vec![(0, 0), (u32::MAX, u32::MAX), (5, 9), (7, 12)]);
        assert_eq!(edge.0, vec![(1, 4), (13, u32::MAX - 1)]);
    }
}
