//! GRE (RFC 2784, with the key and sequence number of RFC 2890): the carrier of ERSPAN
//! and of gretap (transparent Ethernet bridging) mirrors.
//!
//! ```text
//! | C | R | K | S | reserved0 (9) | version (3) | protocol type (16) |
//! | checksum (16)           | reserved1 (16)         |   if C
//! | key (32)                                         |   if K
//! | sequence number (32)                             |   if S
//! ```
//!
//! R (RFC 1701 source routing) and version 1 (PPTP's enhanced GRE) are not RoCE mirrors:
//! unsupported. The checksum is kept as stored, not verified.

use crate::bytes::{be16, be32};
use crate::Error;

pub const BASE_LEN: usize = 4;
/// The longest header: base, checksum, key and sequence number.
pub const MAX_LEN: usize = 16;

pub const FLAG_C: u16 = 0x8000;
pub const FLAG_R: u16 = 0x4000;
pub const FLAG_K: u16 = 0x2000;
pub const FLAG_S: u16 = 0x1000;

/// ERSPAN type I / II (type I when the S bit is clear).
pub const PROTO_ERSPAN_II: u16 = 0x88be;
pub const PROTO_ERSPAN_III: u16 = 0x22eb;
/// Transparent Ethernet bridging: an Ethernet frame follows (Linux gretap).
pub const PROTO_TEB: u16 = 0x6558;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GreRepr {
    /// The first 16 bits as sent (`gre.flags_and_version`).
    pub flags_and_version: u16,
    /// `gre.proto`.
    pub protocol: u16,
    /// `gre.checksum`, when C is set.
    pub checksum: Option<u16>,
    /// `gre.key`, when K is set.
    pub key: Option<u32>,
    /// `gre.sequence_number`, when S is set.
    pub seq: Option<u32>,
}

impl GreRepr {
    pub fn version(&self) -> u8 {
        (self.flags_and_version & 7) as u8
    }
    /// Header length in bytes (4 to 16).
    pub fn header_len(&self) -> usize {
        BASE_LEN
            + 4 * (usize::from(self.checksum.is_some())
                + usize::from(self.key.is_some())
                + usize::from(self.seq.is_some()))
    }

    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        Error::need(b, BASE_LEN)?;
        let fv = be16(b, 0).unwrap_or(0);
        if fv & FLAG_R != 0 {
            return Err(Error::Unsupported("GRE source routing (RFC 1701)"));
        }
        if fv & 7 != 0 {
            return Err(Error::Unsupported("GRE version other than 0"));
        }
        let mut off = BASE_LEN;
        let mut field = |on: bool| -> Result<Option<u32>, Error> {
            if !on {
                return Ok(None);
            }
            Error::need(b, off + 4)?;
            let v = be32(b, off).unwrap_or(0);
            off += 4;
            Ok(Some(v))
        };
        let checksum = field(fv & FLAG_C != 0)?.map(|v| (v >> 16) as u16);
        let key = field(fv & FLAG_K != 0)?;
        let seq = field(fv & FLAG_S != 0)?;
        Ok(GreRepr {
            flags_and_version: fv,
            protocol: be16(b, 2).unwrap_or(0),
            checksum,
            key,
            seq,
        })
    }

    /// Writes the header (flags derived from which fields are present) into
    /// `b[..header_len()]`.
    pub fn emit(&self, b: &mut [u8]) {
        let mut fv = self.flags_and_version & !(FLAG_C | FLAG_K | FLAG_S);
        fv |= if self.checksum.is_some() { FLAG_C } else { 0 };
        fv |= if self.key.is_some() { FLAG_K } else { 0 };
        fv |= if self.seq.is_some() { FLAG_S } else { 0 };
        b[0..2].copy_from_slice(&fv.to_be_bytes());
        b[2..4].copy_from_slice(&self.protocol.to_be_bytes());
        let mut off = BASE_LEN;
        if let Some(c) = self.checksum {
            b[off..off + 2].copy_from_slice(&c.to_be_bytes());
            b[off + 2..off + 4].copy_from_slice(&[0, 0]);
            off += 4;
        }
        for v in [self.key, self.seq].into_iter().flatten() {
            b[off..off + 4].copy_from_slice(&v.to_be_bytes());
            off += 4;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> GreRepr {
        GreRepr {
            flags_and_version: FLAG_C | FLAG_K | FLAG_S,
            protocol: PROTO_ERSPAN_II,
            checksum: Some(0xbeef),
            key: Some(0x0102_0304),
            seq: Some(77),
        }
    }

    #[test]
    fn round_trip_and_every_cut() {
        for r in [
            full(),
            GreRepr {
                flags_and_version: 0,
                protocol: PROTO_TEB,
                ..Default::default()
            },
            GreRepr {
                flags_and_version: FLAG_S,
                protocol: PROTO_ERSPAN_III,
                seq: Some(1),
                ..Default::default()
            },
        ] {
            let mut b = [0u8; MAX_LEN];
            let n = r.header_len();
            r.emit(&mut b);
            assert_eq!(GreRepr::parse(&b[..n]).unwrap(), r);
            for cut in 0..n {
                assert!(
                    matches!(GreRepr::parse(&b[..cut]), Err(Error::Truncated { .. })),
                    "cut {cut}"
                );
            }
        }
        let mut b = [0u8; MAX_LEN];
        full().emit(&mut b);
        assert_eq!(&b[..4], &[0xb0, 0, 0x88, 0xbe]);
    }

    #[test]
    fn routing_and_version_1_are_unsupported() {
        assert!(matches!(
            GreRepr::parse(&[0x40, 0, 0x65, 0x58]),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(
            GreRepr::parse(&[0x30, 1, 0x88, 0x0b, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(Error::Unsupported(_))
        ));
    }
}
