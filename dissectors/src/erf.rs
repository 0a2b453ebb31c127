//! ERF record header (Endace Extensible Record Format, link type 197), what ibdump writes
//! for native InfiniBand ports. 16 bytes, then optional 8-byte extension headers, then
//! (for Ethernet records) 2 bytes of padding.
//!
//! ```text
//! | timestamp (8, little-endian) | type (1) | flags (1) | rlen (2) | lctr (2) | wlen (2) |
//! ```
//! Type bit 7 says an extension header follows; bit 7 of each extension's first byte says
//! another one follows.

use crate::bytes::{be16, u8_at};
use crate::Error;

pub const LEN: usize = 16;
pub const EXT_LEN: usize = 8;

pub const TYPE_ETH: u8 = 2;
pub const TYPE_INFINIBAND: u8 = 21;
pub const TYPE_INFINIBAND_LINK: u8 = 25;

/// A zero-copy view of the fixed 16-byte ERF record header.
#[derive(Clone, Copy, Debug)]
pub struct Erf<'a>(&'a [u8]);

impl<'a> Erf<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Erf(&b[..LEN]))
    }
    /// Record type with the extension bit (bit 7).
    pub fn raw_type(&self) -> u8 {
        u8_at(self.0, 8).unwrap_or(0)
    }
    pub fn flags(&self) -> u8 {
        u8_at(self.0, 9).unwrap_or(0)
    }
    pub fn rlen(&self) -> u16 {
        be16(self.0, 10).unwrap_or(0)
    }
    pub fn lctr(&self) -> u16 {
        be16(self.0, 12).unwrap_or(0)
    }
    pub fn wlen(&self) -> u16 {
        be16(self.0, 14).unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErfRepr {
    pub rec_type: u8,
    pub flags: u8,
    pub rlen: u16,
    pub lctr: u16,
    pub wlen: u16,
    /// Header length including extension headers.
    pub header_len: u16,
}

impl ErfRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Erf::new_checked(b)?;
        let ty = v.raw_type();
        let mut len = LEN;
        let mut more = ty & 0x80 != 0;
        while more {
            Error::need(b, len + EXT_LEN)?;
            more = u8_at(b, len).unwrap_or(0) & 0x80 != 0;
            len += EXT_LEN;
            if len > 16 * EXT_LEN + LEN {
                return Err(Error::Malformed("too many ERF extension headers"));
            }
        }
        Ok(ErfRepr {
            rec_type: ty & 0x7f,
            flags: v.flags(),
            rlen: v.rlen(),
            lctr: v.lctr(),
            wlen: v.wlen(),
            header_len: len as u16,
        })
    }
    pub fn emit(&self, ts: u64, b: &mut [u8]) {
        b[0..8].copy_from_slice(&ts.to_le_bytes());
        b[8] = self.rec_type & 0x7f;
        b[9] = self.flags;
        b[10..12].copy_from_slice(&self.rlen.to_be_bytes());
        b[12..14].copy_from_slice(&self.lctr.to_be_bytes());
        b[14..16].copy_from_slice(&self.wlen.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = ErfRepr {
            rec_type: TYPE_INFINIBAND,
            flags: 4,
            rlen: 100,
            lctr: 0,
            wlen: 84,
            header_len: 16,
        };
        let mut b = [0u8; LEN];
        r.emit(1, &mut b);
        assert_eq!(ErfRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(ErfRepr::parse(&b[..n]).is_err());
        }
        // An extension chain that runs off the end is truncated, not a panic.
        let mut e = [0xffu8; 40];
        e[8] = 0x80 | TYPE_INFINIBAND;
        assert!(ErfRepr::parse(&e).is_err());
    }
}
