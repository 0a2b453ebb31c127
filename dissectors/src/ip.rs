//! IPv4 and IPv6 headers, sliced by etherparse in lax mode (so a snaplen-cut packet still
//! yields its header and the part of the payload that was captured). rocetap keeps what
//! RoCE users look at: addresses, DSCP and ECN (PFC priority and congestion marking),
//! TTL / hop limit, the IPv6 flow label (ECMP entropy) and the lengths.
//!
//! ```text
//! IPv4: | ver 4 | IHL 4 | DSCP 6 | ECN 2 | total length 16 | ... | TTL 8 | proto 8 | csum 16 | src 32 | dst 32 |
//! IPv6: | ver 4 | DSCP 6 | ECN 2 | flow label 20 | payload length 16 | next 8 | hop 8 | src 128 | dst 128 |
//! ```

use crate::Error;
use core::net::{IpAddr, Ipv6Addr};
use etherparse::err::ip::LaxHeaderSliceError;
use etherparse::LaxIpSlice;

pub const IPV4_LEN: usize = 20;
pub const IPV6_LEN: usize = 40;
pub const PROTO_UDP: u8 = 17;
/// GRE (RFC 2784): mirrors (ERSPAN, gretap).
pub const PROTO_GRE: u8 = 47;

/// ECN code points (RFC 3168).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ecn {
    NotEct,
    Ect1,
    Ect0,
    Ce,
}

impl Ecn {
    pub fn from_bits(v: u8) -> Ecn {
        match v & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0,
            Ecn::Ect1 => 1,
            Ecn::Ect0 => 2,
            Ecn::Ce => 3,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Ecn::NotEct => "Not-ECT",
            Ecn::Ect1 => "ECT(1)",
            Ecn::Ect0 => "ECT(0)",
            Ecn::Ce => "CE",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpRepr {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub dscp: u8,
    pub ecn: Ecn,
    /// TTL (IPv4) or hop limit (IPv6).
    pub ttl: u8,
    /// IPv6 flow label (0 for IPv4).
    pub flow_label: u32,
    /// IPv4 identification (0 for IPv6).
    pub ident: u16,
    /// Protocol / next header after any extension headers.
    pub protocol: u8,
    /// Length of the IP header including IPv4 options / IPv6 extension headers.
    pub header_len: u16,
    /// Total length claimed by the header (IPv4 total length; IPv6 40 + payload length).
    pub total_len: u32,
    /// True when the payload is a fragment.
    pub fragmented: bool,
}

/// What slicing found: the header and where its payload lies in the input.
#[derive(Clone, Copy, Debug)]
pub struct IpSlice {
    pub repr: IpRepr,
    pub shape: IpShape,
}

/// Where an IP header's payload lies in the input it was sliced from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpShape {
    /// Offset of the payload from the start of the IP header.
    pub payload_offset: usize,
    /// Payload bytes present in the input (cut by the header's length or the input's).
    pub payload_len: usize,
    /// True when the header claims more bytes than the input holds.
    pub incomplete: bool,
    /// Length of the fixed header the ICRC covers (IPv4 header with options, or 40).
    pub icrc_header_len: usize,
}

impl IpRepr {
    pub fn is_ipv6(&self) -> bool {
        self.src.is_ipv6()
    }

    /// Slices an IPv4 or IPv6 packet starting at `b[0]`: the common shapes (IPv4 without
    /// options, IPv6 with UDP or GRE next) by the fast path (`ip_fast`), the rest by
    /// [`IpRepr::slice_general`]; the result is the same either way.
    #[inline]
    pub fn slice(b: &[u8]) -> Result<IpSlice, Error> {
        match crate::ip_fast::slice(b) {
            Some(s) => Ok(s),
            None => Self::slice_general(b),
        }
    }

    /// [`IpRepr::slice`] through etherparse's lax slicer, whatever the header's shape.
    pub fn slice_general(b: &[u8]) -> Result<IpSlice, Error> {
        let (s, _ext_err) = LaxIpSlice::from_slice(b).map_err(|e| match e {
            LaxHeaderSliceError::Len(l) => Error::Truncated {
                need: l.required_len,
                have: l.len,
            },
            LaxHeaderSliceError::Content(_) => Error::Malformed("invalid IP header"),
        })?;
        let payload = s.payload();
        let payload_offset = (payload.payload.as_ptr() as usize).wrapping_sub(b.as_ptr() as usize);
        let (repr, icrc_header_len) = match &s {
            LaxIpSlice::Ipv4(v4) => {
                let h = v4.header();
                (
                    IpRepr {
                        src: IpAddr::V4(h.source_addr()),
                        dst: IpAddr::V4(h.destination_addr()),
                        dscp: h.dcp().value(),
                        ecn: Ecn::from_bits(h.ecn().value()),
                        ttl: h.ttl(),
                        flow_label: 0,
                        ident: h.identification(),
                        protocol: payload.ip_number.0,
                        header_len: payload_offset as u16,
                        total_len: u32::from(h.total_len()),
                        fragmented: payload.fragmented,
                    },
                    h.slice().len(),
                )
            }
            LaxIpSlice::Ipv6(v6) => {
                let h = v6.header();
                (
                    IpRepr {
                        src: IpAddr::V6(h.source_addr()),
                        dst: IpAddr::V6(h.destination_addr()),
                        dscp: h.dscp().value(),
                        ecn: Ecn::from_bits(h.ecn().value()),
                        ttl: h.hop_limit(),
                        flow_label: h.flow_label().value(),
                        ident: 0,
                        protocol: payload.ip_number.0,
                        header_len: payload_offset as u16,
                        total_len: IPV6_LEN as u32 + u32::from(h.payload_length()),
                        fragmented: payload.fragmented,
                    },
                    IPV6_LEN,
                )
            }
        };
        if payload_offset > b.len() {
            return Err(Error::Malformed("IP payload outside the packet"));
        }
        Ok(IpSlice {
            repr,
            shape: IpShape {
                payload_offset,
                payload_len: payload.payload.len(),
                incomplete: payload.incomplete,
                icrc_header_len,
            },
        })
    }

    /// Writes a header without options / extensions (20 or 40 bytes) for a payload of
    /// `payload_len` bytes; returns the header length. IPv4 gets a correct checksum and DF.
    pub fn emit(&self, payload_len: usize, b: &mut [u8]) -> usize {
        let tos = (self.dscp << 2) | self.ecn.bits();
        match (self.src, self.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let total = (IPV4_LEN + payload_len) as u16;
                b[0] = 0x45;
                b[1] = tos;
                b[2..4].copy_from_slice(&total.to_be_bytes());
                b[4..6].copy_from_slice(&self.ident.to_be_bytes());
                b[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
                b[8] = self.ttl;
                b[9] = self.protocol;
                b[10..12].fill(0);
                b[12..16].copy_from_slice(&s.octets());
                b[16..20].copy_from_slice(&d.octets());
                let csum = ipv4_checksum(&b[..IPV4_LEN]);
                b[10..12].copy_from_slice(&csum.to_be_bytes());
                IPV4_LEN
            }
            (src, dst) => {
                let s = to_v6(src);
                let d = to_v6(dst);
                let w0 = (6u32 << 28) | (u32::from(tos) << 20) | (self.flow_label & 0xf_ffff);
                b[0..4].copy_from_slice(&w0.to_be_bytes());
                b[4..6].copy_from_slice(&(payload_len as u16).to_be_bytes());
                b[6] = self.protocol;
                b[7] = self.ttl;
                b[8..24].copy_from_slice(&s.octets());
                b[24..40].copy_from_slice(&d.octets());
                IPV6_LEN
            }
        }
    }
}

fn to_v6(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V6(a) => a,
        IpAddr::V4(a) => a.to_ipv6_mapped(),
    }
}

/// The RFC 791 header checksum of `h` (whose checksum field is zero).
pub fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum = 0u32;
    for c in h.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], 0])
        };
        sum += u32::from(w);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Maps an IPv4-mapped GID (::ffff:a.b.c.d) to its IPv4 address.
pub fn gid_to_ip(gid: [u8; 16]) -> IpAddr {
    let a = Ipv6Addr::from(gid);
    match a.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::Ipv4Addr;
    #[test]
    fn emit_and_slice_v4_v6() {
        for (src, dst) in [
            (
                IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)),
                IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2)),
            ),
            (
                "2001:db8::1".parse().unwrap(),
                "2001:db8::2".parse().unwrap(),
            ),
        ] {
            let r = IpRepr {
                src,
                dst,
                dscp: 26,
                ecn: Ecn::Ce,
                ttl: 64,
                flow_label: if src.is_ipv6() { 0x12345 } else { 0 },
                ident: 0,
                protocol: PROTO_UDP,
                header_len: 0,
                total_len: 0,
                fragmented: false,
            };
            let mut b = [0u8; 60];
            let h = r.emit(8, &mut b);
            let s = IpRepr::slice(&b[..h + 8]).unwrap();
            assert_eq!(s.repr.src, src);
            assert_eq!(s.repr.dscp, 26);
            assert_eq!(s.repr.ecn, Ecn::Ce);
            assert_eq!(s.repr.flow_label, r.flow_label);
            assert_eq!(s.shape.payload_offset, h);
            assert_eq!(s.shape.payload_len, 8);
            assert!(!s.shape.incomplete);
            if src.is_ipv4() {
                assert_eq!(ipv4_checksum(&b[..20]), 0);
            }
            for n in 0..h {
                assert!(IpRepr::slice(&b[..n]).is_err(), "{n}");
            }
            let cut = IpRepr::slice(&b[..h + 3]).unwrap();
            assert!(cut.shape.incomplete);
        }
    }
}
