//! Which analysis shard a frame belongs to, read from its first bytes without decoding it
//! (issue 45 item 3, offline half: `analyze` sharded by host pair across cores).
//!
//! The design this serves: N shard threads each read the whole input (reading is cheap,
//! the file is in the page cache), so each sees every frame's global number and time;
//! [`route`] picks the frame's shard and a shard decodes and analyzes only its own:
//!
//! - RoCE v2 (UDP to the RoCE port, its BTH captured): [`Route::Pair`], a hash of the
//!   (source, destination) IP pair that is the same both ways, so both directions of every
//!   QP between two hosts — requests, ACKs / NAKs, CNPs, CM MADs — land in one shard;
//! - PFC / MAC control PAUSE frames: [`Route::Every`] shard (a flow's `pfc_stalls` reads
//!   the pause state of its priority), to be counted once when the results are merged;
//! - everything else (ARP, plain IP, tunnels and mirrors, RoCE v1, native IB, non-IP,
//!   frames the peek cannot read): [`Route::First`], shard 0.
//!
//! The peek walks the same layers as the decoder (Ethernet, up to two VLAN tags, Linux
//! cooked v1 / v2, ERF Ethernet, IPoIB, raw IP) with the decoder's own header parsers
//! and checks, so that a frame is [`Route::Pair`] exactly when the decoder gives it a
//! RoCE v2 header outside any tunnel, and [`Route::Every`] exactly when it gives it a
//! PAUSE: the tests hold that on every sample, tap sample and shared capture. A frame
//! that would decode as plain IP to the RoCE port (cut before its BTH, a short UDP
//! length) stays in shard 0 with the rest of the plain IP, whose reply-path state lives
//! there.
//!
//! What is built so far is this routing; the shard threads and the merge of their results
//! into the one-thread report are not (`docs/perf.md`, "Several cores", lists what the
//! merge needs), so `--jobs` still reads on one thread and analyzes on another (`split`).
//! Allocates nothing.

use dissectors::{ethernet, udp, vlan, ErfRepr, EthernetRepr, IpRepr, LinkType, PauseRepr};
use dissectors::{SllRepr, VlanRepr};
use std::net::IpAddr;

/// Where a frame is analyzed when the analysis is sharded (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// RoCE v2: the shard of this host-pair hash ([`pair_hash`]).
    Pair(u64),
    /// PFC / MAC control PAUSE: every shard.
    Every,
    /// Anything else: shard 0.
    First,
}

impl Route {
    /// The shard of `n` (≥ 1) that analyzes the frame; `None` for every shard.
    #[inline]
    pub fn shard(self, n: usize) -> Option<usize> {
        match self {
            // The hash's high bits spread over `n` without a division.
            Route::Pair(h) => Some(((u128::from(h) * n as u128) >> 64) as usize),
            Route::Every => None,
            Route::First => Some(0),
        }
    }
}

/// The route of a frame of link type `link` whose captured bytes are `data`, RoCE v2
/// being UDP to `roce_port` (the decoder's `Config::roce_port`).
#[inline]
pub fn route(link: LinkType, data: &[u8], roce_port: u16) -> Route {
    match link {
        LinkType::Ethernet => ethernet_at(data, 0, roce_port),
        LinkType::LinuxSll | LinkType::LinuxSll2 => {
            let s = if link == LinkType::LinuxSll {
                SllRepr::parse_v1(data)
            } else {
                SllRepr::parse_v2(data)
            };
            match s {
                Ok(s) => ethertype(data, s.protocol, s.header_len(), roce_port),
                Err(_) => Route::First,
            }
        }
        LinkType::RawIp => match data.first().map(|b| b >> 4) {
            Some(4 | 6) => ip(data, 0, roce_port),
            _ => Route::First,
        },
        LinkType::Ipv4 | LinkType::Ipv6 => ip(data, 0, roce_port),
        LinkType::Erf => match ErfRepr::parse(data) {
            // An ERF Ethernet record has two bytes of padding before the frame.
            Ok(e) if e.rec_type == dissectors::erf::TYPE_ETH => {
                ethernet_at(data, usize::from(e.header_len) + 2, roce_port)
            }
            _ => Route::First,
        },
        LinkType::IpOverIb => {
            // Linux IPoIB pseudo-header: 20-byte source and destination hardware
            // addresses, then protocol (2) and reserved (2).
            const IPOIB_LEN: usize = 44;
            match data.get(40..IPOIB_LEN) {
                Some(h) => ethertype(data, u16::from_be_bytes([h[0], h[1]]), IPOIB_LEN, roce_port),
                None => Route::First,
            }
        }
        LinkType::Infiniband | LinkType::Other(_) => Route::First,
    }
}

fn ethernet_at(data: &[u8], off: usize, roce_port: u16) -> Route {
    match EthernetRepr::parse(data.get(off..).unwrap_or(&[])) {
        Ok(e) => ethertype(data, e.ethertype, off + ethernet::LEN, roce_port),
        Err(_) => Route::First,
    }
}

/// The frame from an EtherType `et` whose payload starts at `off` (the decoder's
/// `Walker::ethertype`: at most two VLAN tags).
#[inline]
fn ethertype(data: &[u8], mut et: u16, mut off: usize, roce_port: u16) -> Route {
    use ethernet::*;
    let mut tags = 0;
    loop {
        match et {
            ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => return ip(data, off, roce_port),
            ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD if tags < 2 => {
                match VlanRepr::parse(et, data.get(off..).unwrap_or(&[])) {
                    Ok(v) => {
                        et = v.ethertype;
                        off += vlan::LEN;
                        tags += 1;
                    }
                    Err(_) => return Route::First,
                }
            }
            ETHERTYPE_MAC_CONTROL => {
                return match PauseRepr::parse(data.get(off..).unwrap_or(&[])) {
                    Ok(_) => Route::Every,
                    Err(_) => Route::First,
                };
            }
            _ => return Route::First,
        }
    }
}

/// The IP packet at `off`: [`Route::Pair`] when the decoder would reach its BTH through
/// UDP to `roce_port` (the checks of `Walker::ip` and `Walker::transport` up to the BTH).
/// The shapes nearly every RoCE v2 frame has (IPv4 without options, IPv6 straight to UDP)
/// are read at fixed offsets, as the decoder's own fast path (`ip_fast`) reads them; the
/// rest through [`IpRepr::slice`].
#[inline]
fn ip(data: &[u8], off: usize, roce_port: u16) -> Route {
    let b = data.get(off..).unwrap_or(&[]);
    let udp = dissectors::ip::PROTO_UDP;
    // (source, destination, IP total length, offset of the payload)
    let (src, dst, total, l4) = match b {
        [0x45, _, t0, t1, _, _, f0, f1, _, proto, _, _, a @ ..]
            if b.len() >= 20 && *proto != PROTO_AUTH =>
        {
            // More fragments, or a fragment offset.
            if *proto != udp || (f0 & 0x3f) != 0 || *f1 != 0 {
                return Route::First;
            }
            let v4 = |i: usize| {
                u128::from(u32::from_be_bytes([a[i], a[i + 1], a[i + 2], a[i + 3]])) | V4_TAG
            };
            (
                v4(0),
                v4(4),
                usize::from(u16::from_be_bytes([*t0, *t1])),
                20,
            )
        }
        [v, _, _, _, p0, p1, next, ..] if v >> 4 == 6 && *next == udp && b.len() >= 40 => {
            let v6 = |i: usize| u128::from_be_bytes(b[i..i + 16].try_into().unwrap_or([0; 16]));
            (
                v6(8),
                v6(24),
                40 + usize::from(u16::from_be_bytes([*p0, *p1])),
                40,
            )
        }
        _ => {
            let Ok(s) = IpRepr::slice(b) else {
                return Route::First;
            };
            if s.repr.fragmented || s.repr.protocol != udp {
                return Route::First;
            }
            (
                addr_bits(s.repr.src),
                addr_bits(s.repr.dst),
                s.repr.total_len as usize,
                s.shape.payload_offset,
            )
        }
    };
    let ip_end = off + total;
    let l4 = off + l4;
    if l4 + udp::LEN > ip_end {
        return Route::First;
    }
    let Some(u) = data.get(l4..l4 + udp::LEN) else {
        return Route::First;
    };
    if u16::from_be_bytes([u[2], u[3]]) != roce_port {
        return Route::First;
    }
    let ulen = usize::from(u16::from_be_bytes([u[4], u[5]]));
    let end = l4 + ulen;
    let bth_end = l4 + udp::LEN + dissectors::ib::bth::LEN;
    if ulen < udp::LEN || end > ip_end || bth_end > end || bth_end > data.len() {
        return Route::First;
    }
    Route::Pair(bits_hash(src, dst))
}

/// A hash of the host pair `(a, b)` that is the same for `(b, a)`.
#[inline]
pub fn pair_hash(a: IpAddr, b: IpAddr) -> u64 {
    bits_hash(addr_bits(a), addr_bits(b))
}

#[inline]
fn bits_hash(x: u128, y: u128) -> u64 {
    let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
    mix(fold(lo).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ fold(hi))
}

/// IPv4's authentication header: the decoder reads past it the general way.
const PROTO_AUTH: u8 = 51;

/// Sets IPv4 addresses apart from the IPv6 space in [`addr_bits`].
const V4_TAG: u128 = 1 << 127;

/// An address as 128 bits, IPv4 tagged apart from the IPv6 space.
#[inline]
fn addr_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v) => u128::from(u32::from(v)) | V4_TAG,
        IpAddr::V6(v) => u128::from(v),
    }
}

#[inline]
fn fold(v: u128) -> u64 {
    (v as u64) ^ ((v >> 64) as u64).rotate_left(29)
}

/// The splitmix64 finaliser: every input bit moves every output bit.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests;
