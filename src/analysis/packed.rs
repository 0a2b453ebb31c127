//! A flow key as plain integers ([`Packed`]): what the flow index hashes and the flow
//! cache compares per packet, and the niche `Option<Flow>` marks a free slot in (see
//! `store/mod.rs`, Layout). Made from a key or a packet by the flow table (`table.rs`).

use dissectors::Addr;

/// A flow key as plain integers — what the hash map hashes and compares per packet.
/// Addresses become 128 bits (IPv4 as IPv4-mapped IPv6, a LID tagged in the top bits,
/// which no IPv6 unicast address used by RoCE has).
#[derive(Clone, Copy, Debug, Eq)]
pub(in crate::analysis) struct Packed {
    pub(in crate::analysis) src: u128,
    pub(in crate::analysis) dst: u128,
    pub(in crate::analysis) qp: u32,
    /// Always [`Live::Yes`], in what would be padding: see [`Live`]. Never read (nor
    /// hashed or compared): it is there for its niche.
    #[allow(dead_code)]
    pub(in crate::analysis) live: Live,
}

/// A key's one value, and the widest niche in a [`Flow`] (all but one of a `u64`'s
/// values). `Option<Flow>` marks its `None` in the widest niche, which is so in the
/// flow's first line: telling a taken slot from a free one (every packet's hint and
/// lookup does) reads the line the key and the counts are on, not one of its own (it was
/// the tag of `last_cnp`, an `Option<(u64, u64)>` 744 bytes in).
#[repr(u64)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::analysis) enum Live {
    Yes = 0,
}

/// Compares what the key holds ([`Live`] has one value: nothing to compare).
impl PartialEq for Packed {
    #[inline]
    fn eq(&self, o: &Self) -> bool {
        self.src == o.src && self.dst == o.dst && self.qp == o.qp
    }
}

/// Hashes what the key holds (as the derived hash would without [`Live`]).
impl std::hash::Hash for Packed {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.src.hash(h);
        self.dst.hash(h);
        self.qp.hash(h);
    }
}

#[inline]
pub(in crate::analysis) fn ip_bits(a: std::net::IpAddr) -> u128 {
    match a {
        std::net::IpAddr::V4(v4) => 0xffff_0000_0000 | u128::from(u32::from(v4)),
        std::net::IpAddr::V6(v6) => u128::from(v6),
    }
}

#[inline]
pub(in crate::analysis) fn addr_bits(a: Addr) -> u128 {
    match a {
        Addr::Ip(ip) => ip_bits(ip),
        Addr::Lid(l) => (0xfffe_u128 << 112) | u128::from(l),
    }
}

impl Packed {
    /// The hash the flow index files it under.
    #[inline]
    pub(in crate::analysis) fn hash32(&self) -> u32 {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        self.hash(&mut h);
        let h = h.finish();
        (h ^ (h >> 32)) as u32
    }
}
