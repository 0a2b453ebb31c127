//! FLUSH Extended Transport Header (IBTA Vol. 1 rel. 1.5, 9.3.9), 4 bytes.
//!
//! ```text
//! | reserved (26) | SEL (2) | PLT (4) |, IBTA 1.5 FLUSH: selectivity level and placement type
//! ```

use crate::bytes::{be24, be32};
use crate::Error;

pub const LEN: usize = 4;

#[derive(Clone, Copy, Debug)]
pub struct Feth<'a>(&'a [u8]);

impl<'a> Feth<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Feth(&b[..LEN]))
    }
    /// The whole 32-bit word.
    pub fn word(&self) -> u32 {
        be32(self.0, 0).unwrap_or(0)
    }
    /// The low 24 bits.
    pub fn low24(&self) -> u32 {
        be24(self.0, 1).unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FethRepr {
    pub word: u32,
}

impl FethRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Feth::new_checked(b)?;
        Ok(FethRepr { word: v.word() })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[..LEN].copy_from_slice(&self.word.to_be_bytes());
    }
}

impl FethRepr {
    /// Placement type (bits 3-0).
    pub fn placement_type(&self) -> u8 {
        (self.word & 0xf) as u8
    }
    /// Selectivity level (bits 5-4).
    pub fn selectivity(&self) -> u8 {
        ((self.word >> 4) & 0x3) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let b = [0x00, 0x12, 0x34, 0x56];
        let r = FethRepr::parse(&b).unwrap();
        let mut out = [0u8; LEN];
        r.emit(&mut out);
        assert_eq!(out, b);
        for n in 0..LEN {
            assert!(FethRepr::parse(&b[..n]).is_err());
        }
    }
}
