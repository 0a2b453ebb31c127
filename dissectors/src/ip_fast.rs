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

use crate::ip::{Ecn, IpRepr, IpSlice, IPV4_LEN, IPV6_LEN, PROTO_GRE, PROTO_UDP};
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4's authentication header: the general path reads it as an extension.
const PROTO_AUTH: u8 = 51;

/// The IP header at `b[0]`, when it is one of the common shapes; `None` otherwise.
#[inline]
pub(crate) fn slice(b: &[u8]) -> Option<IpSlice> {
    match b.first()? {
        0x45 => v4(b),
        f if f >> 4 == 6 => v6(b),
        _ => None,
    }
}

#[inline]
fn v4(b: &[u8]) -> Option<IpSlice> {
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
    Some(IpSlice {
        repr: IpRepr {
            src: IpAddr::V4(Ipv4Addr::new(h[12], h[13], h[14], h[15])),
            dst: IpAddr::V4(Ipv4Addr::new(h[16], h[17], h[18], h[19])),
            dscp: h[1] >> 2,
            ecn: Ecn::from_bits(h[1]),
            ttl: h[8],
            flow_label: 0,
            ident: u16::from_be_bytes([h[4], h[5]]),
            protocol,
            header_len: IPV4_LEN as u16,
            total_len: u32::from(total),
            // More fragments, or a fragment offset.
            fragmented: flags_frag & 0x2000 != 0 || flags_frag & 0x1fff != 0,
        },
        payload_offset: IPV4_LEN,
        payload_len,
        incomplete,
        icrc_header_len: IPV4_LEN,
    })
}

#[inline]
fn v6(b: &[u8]) -> Option<IpSlice> {
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
    Some(IpSlice {
        repr: IpRepr {
            src: IpAddr::V6(Ipv6Addr::from(src)),
            dst: IpAddr::V6(Ipv6Addr::from(dst)),
            dscp: tclass >> 2,
            ecn: Ecn::from_bits(tclass),
            ttl: h[7],
            flow_label: u32::from_be_bytes([0, h[1] & 0x0f, h[2], h[3]]),
            ident: 0,
            protocol,
            header_len: IPV6_LEN as u16,
            total_len: IPV6_LEN as u32 + u32::from(plen),
            fragmented: false,
        },
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
        assert_eq!(
            (
                fast.payload_offset,
                fast.payload_len,
                fast.incomplete,
                fast.icrc_header_len
            ),
            (
                general.payload_offset,
                general.payload_len,
                general.incomplete,
                general.icrc_header_len
            ),
            "{b:02x?}"
        );
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
