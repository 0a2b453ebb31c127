//! Geneve (RFC 8926), UDP port 6081: 8 bytes, variable options (skipped), then the
//! protocol named by the header — an Ethernet frame (0x6558) or an IP packet.
//!
//! ```text
//! | ver (2) | opt len (6) | O | C | rsvd (6) | protocol type (16) |
//! | VNI (24)                                | reserved (8)       |
//! | options (opt len × 4 bytes)                                  |
//! ```

use crate::bytes::{be16, be24, u8_at};
use crate::Error;

pub const PORT: u16 = 6081;
pub const BASE_LEN: usize = 8;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GeneveRepr {
    /// `geneve.version` (0 is the only one defined).
    pub version: u8,
    /// Options length in 4-byte words.
    pub opt_len: u8,
    /// `geneve.flags.oam`.
    pub oam: bool,
    /// `geneve.flags.critical`.
    pub critical: bool,
    /// `geneve.proto_type`.
    pub protocol: u16,
    /// `geneve.vni`.
    pub vni: u32,
}

impl GeneveRepr {
    /// Header length with options.
    pub fn header_len(&self) -> usize {
        BASE_LEN + 4 * usize::from(self.opt_len)
    }
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        Error::need(b, BASE_LEN)?;
        let b0 = u8_at(b, 0).unwrap_or(0);
        let b1 = u8_at(b, 1).unwrap_or(0);
        let r = GeneveRepr {
            version: b0 >> 6,
            opt_len: b0 & 0x3f,
            oam: b1 & 0x80 != 0,
            critical: b1 & 0x40 != 0,
            protocol: be16(b, 2).unwrap_or(0),
            vni: be24(b, 4).unwrap_or(0),
        };
        if r.version != 0 {
            return Err(Error::Unsupported("Geneve version other than 0"));
        }
        Error::need(b, r.header_len())?;
        Ok(r)
    }
    /// Writes the base header; the options (`opt_len` words) are the caller's.
    pub fn emit(&self, b: &mut [u8]) {
        b[0] = (self.version << 6) | (self.opt_len & 0x3f);
        b[1] = (u8::from(self.oam) << 7) | (u8::from(self.critical) << 6);
        b[2..4].copy_from_slice(&self.protocol.to_be_bytes());
        b[4..7].copy_from_slice(&self.vni.to_be_bytes()[1..]);
        b[7] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_every_cut() {
        let r = GeneveRepr {
            version: 0,
            opt_len: 2,
            oam: false,
            critical: true,
            protocol: 0x6558,
            vni: 0x12_3456,
        };
        let mut b = [0u8; 16];
        r.emit(&mut b);
        assert_eq!(GeneveRepr::parse(&b).unwrap(), r);
        for n in 0..16 {
            assert!(matches!(
                GeneveRepr::parse(&b[..n]),
                Err(Error::Truncated { .. })
            ));
        }
        b[0] |= 0x40;
        assert!(matches!(GeneveRepr::parse(&b), Err(Error::Unsupported(_))));
    }
}
