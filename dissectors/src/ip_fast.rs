//! The decoder's fast path for the IP headers nearly every RoCE v2 frame has: IPv4
//! without options (first byte 0x45) and IPv6 whose next header is UDP or GRE (no
//! extension headers), read field by field from fixed offsets. Anything else — IPv4
//! options or an authentication header, IPv6 extension headers, a header the input does
//! not hold — returns `None` and goes the general way ([`IpRepr::slice_general`], through
//! etherparse). The result is the general path's, field for field, including its lax
//! reading of lengths (a total / payload length beyond the input: the captured rest,
//! marked incomplete; an IPv4 total length below the header or an IPv6 payload length of
//! 0: the rest of the input) — checked on every sample and public capture by the
//! `decode_fast` tests and on arbitrary headers by the property test below.
//!
//! Profiles of the agent and of offline analysis had the general path (etherparse's
//! `LaxIpSlice` with its extension-header walk) at 12-21 % of the CPU.

use crate::ip::{Ecn, IpRepr, IpShape, IpSlice, IPV4_LEN, IPV6_LEN, PROTO_GRE, PROTO_UDP};
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4's authentication header: the general path reads it as an extension.
const PROTO_AUTH: u8 = 51;

/// The IP header at `b[0]`, when it is one of the common shapes; `None` otherwise.
#[inline]
pub(crate) fn slice(b: &[u8]) -> Option<IpSlice> {
    let mut repr = None;
    let shape = slice_into(b, &mut repr)?;
    Some(IpSlice { repr: repr?, shape })
}

/// [`slice`], its header written into `out` field by field, which it leaves alone when
/// the shape is not a common one (`None`).
///
/// Why not `*out = Some(repr)`: the decoder's profile had half of `Walker::ip`'s time on
/// the copy of a header built on the stack a byte at a time and read back in 16-byte
/// pieces (each read waits for the narrow stores before it to reach the cache: a failed
/// store-to-load forward). Written in place, nothing is read back.
#[inline]
pub(crate) fn slice_into(b: &[u8], out: &mut Option<IpRepr>) -> Option<IpShape> {
    match b.first()? {
        0x45 => v4(b, out),
        f if f >> 4 == 6 => v6(b, out),
        _ => None,
    }
}

/// A header to overwrite in place: the one `out` holds, or a blank one put there first.
#[inline]
fn place(out: &mut Option<IpRepr>) -> &mut IpRepr {
    out.get_or_insert(IpRepr {
        src: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        dst: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        dscp: 0,
        ecn: Ecn::NotEct,
        ttl: 0,
        flow_label: 0,
        ident: 0,
        protocol: 0,
        header_len: 0,
        total_len: 0,
        fragmented: false,
    })
}

#[inline]
fn v4(b: &[u8], out: &mut Option<IpRepr>) -> Option<IpShape> {
    let h: &[u8; IPV4_LEN] = b.get(..IPV4_LEN)?.try_into().ok()?;
    let protocol = h[9];
    if protocol == PROTO_AUTH {
        return None;
    }
    let total = u16::from_be_bytes([h[2], h[3]]);
    let total_len = usize::from(total);
    let rest = b.len() - IPV4_LEN;
    let (payload_len, incomplete) = if total_len < IPV4_LEN {
        (rest, false)
    } else if total_len > b.len() {
        (rest, true)
    } else {
        (total_len - IPV4_LEN, false)
    };
    let flags_frag = u16::from_be_bytes([h[6], h[7]]);
    let r = place(out);
    r.src = IpAddr::V4(Ipv4Addr::new(h[12], h[13], h[14], h[15]));
    r.dst = IpAddr::V4(Ipv4Addr::new(h[16], h[17], h[18], h[19]));
    r.dscp = h[1] >> 2;
    r.ecn = Ecn::from_bits(h[1]);
    r.ttl = h[8];
    r.flow_label = 0;
    r.ident = u16::from_be_bytes([h[4], h[5]]);
    r.protocol = protocol;
    r.header_len = IPV4_LEN as u16;
    r.total_len = u32::from(total);
    // More fragments, or a fragment offset.
    r.fragmented = flags_frag & 0x2000 != 0 || flags_frag & 0x1fff != 0;
    Some(IpShape {
        payload_offset: IPV4_LEN,
        payload_len,
        incomplete,
        icrc_header_len: IPV4_LEN,
    })
}

#[inline]
fn v6(b: &[u8], out: &mut Option<IpRepr>) -> Option<IpShape> {
    let h: &[u8; IPV6_LEN] = b.get(..IPV6_LEN)?.try_into().ok()?;
    let protocol = h[6];
    if protocol != PROTO_UDP && protocol != PROTO_GRE {
        return None;
    }
    let plen = u16::from_be_bytes([h[4], h[5]]);
    let rest = b.len() - IPV6_LEN;
    let (payload_len, incomplete) = if plen == 0 && rest > 0 {
        (rest, false)
    } else if rest < usize::from(plen) {
        (rest, true)
    } else {
        (usize::from(plen), false)
    };
    let tclass = (h[0] << 4) | (h[1] >> 4);
    let mut src = [0u8; 16];
    src.copy_from_slice(&h[8..24]);
    let mut dst = [0u8; 16];
    dst.copy_from_slice(&h[24..40]);
    let r = place(out);
    r.src = IpAddr::V6(Ipv6Addr::from(src));
    r.dst = IpAddr::V6(Ipv6Addr::from(dst));
    r.dscp = tclass >> 2;
    r.ecn = Ecn::from_bits(tclass);
    r.ttl = h[7];
    r.flow_label = u32::from_be_bytes([0, h[1] & 0x0f, h[2], h[3]]);
    r.ident = 0;
    r.protocol = protocol;
    r.header_len = IPV6_LEN as u16;
    r.total_len = IPV6_LEN as u32 + u32::from(plen);
    r.fragmented = false;
    Some(IpShape {
        payload_offset: IPV6_LEN,
        payload_len,
        incomplete,
        icrc_header_len: IPV6_LEN,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Field for field what the general path says (both sides' `IpSlice` in full).
    fn same(b: &[u8]) {
        let Some(fast) = slice(b) else { return };
        let general =
            IpRepr::slice_general(b).expect("the fast path read a header the general one refuses");
        assert_eq!(fast.repr, general.repr, "{b:02x?}");
        assert_eq!(fast.shape, general.shape, "{b:02x?}");
    }

    #[test]
    fn the_common_headers_take_the_fast_path_and_the_rest_does_not() {
        let mut v4 = [0u8; 28];
        v4[0] = 0x45;
        v4[2..4].copy_from_slice(&28u16.to_be_bytes());
        v4[9] = PROTO_UDP;
        assert!(slice(&v4).is_some());
        same(&v4);
        v4[0] = 0x46; // options
        assert!(slice(&v4).is_none());
        v4[0] = 0x45;
        v4[9] = PROTO_AUTH;
        assert!(slice(&v4).is_none());
        let mut v6 = [0u8; 48];
        v6[0] = 0x60;
        v6[4..6].copy_from_slice(&8u16.to_be_bytes());
        v6[6] = PROTO_UDP;
        assert!(slice(&v6).is_some());
        same(&v6);
        v6[6] = 0; // hop-by-hop options
        assert!(slice(&v6).is_none());
        assert!(slice(&v6[..39]).is_none());
        assert!(slice(&[]).is_none());
    }

    /// `slice_into` writes only what it returns `Some` for, and overwrites every field
    /// of a header already there (the decoder's `Decoded` is reused frame after frame).
    #[test]
    fn slice_into_leaves_out_alone_unless_it_reads_the_header() {
        let mut v4 = [0u8; 28];
        v4[0] = 0x45;
        v4[1] = 0x6a;
        v4[2..4].copy_from_slice(&28u16.to_be_bytes());
        v4[8] = 64;
        v4[9] = PROTO_UDP;
        v4[12..20].copy_from_slice(&[192, 0, 2, 1, 198, 51, 100, 7]);
        let mut v6 = [0x5au8; 48];
        v6[0] = 0x6a;
        v6[4..6].copy_from_slice(&8u16.to_be_bytes());
        v6[6] = PROTO_UDP;
        let old = slice(&v6).map(|s| s.repr);
        let mut out = old;
        let mut opts = v4;
        opts[0] = 0x46;
        assert!(slice_into(&opts, &mut out).is_none());
        assert!(slice_into(&v4[..19], &mut out).is_none());
        assert_eq!(out, old, "a header it does not read changes nothing");
        assert!(slice_into(&v4, &mut out).is_some());
        assert_eq!(
            out,
            slice(&v4).map(|s| s.repr),
            "every field of the old v6 overwritten"
        );
        assert_eq!(out, IpRepr::slice_general(&v4).ok().map(|s| s.repr));
        assert!(slice_into(&v6, &mut out).is_some());
        assert_eq!(out, old);
    }

    proptest! {
        #[test]
        fn fast_equals_general_on_any_v4_header(
            mut b in proptest::collection::vec(any::<u8>(), 20..80),
            total in prop_oneof![0u16..20, 20u16..100, any::<u16>()],
            proto in prop_oneof![Just(PROTO_UDP), Just(PROTO_GRE), Just(PROTO_AUTH), any::<u8>()],
        ) {
            b[0] = 0x45;
            b[2..4].copy_from_slice(&total.to_be_bytes());
            b[9] = proto;
            same(&b);
        }

        #[test]
        fn fast_equals_general_on_any_v6_header(
            mut b in proptest::collection::vec(any::<u8>(), 40..120),
            plen in prop_oneof![Just(0u16), 0u16..80, any::<u16>()],
            next in prop_oneof![Just(PROTO_UDP), Just(PROTO_GRE), any::<u8>()],
        ) {
            b[0] = 0x60 | (b[0] & 0x0f);
            b[4..6].copy_from_slice(&plen.to_be_bytes());
            b[6] = next;
            same(&b);
        }
    }
}
