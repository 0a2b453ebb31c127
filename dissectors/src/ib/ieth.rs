//! Invalidate Extended Transport Header (IBTA 9.3.7), 4 bytes.
//!
//! ```text
//! | R_Key to invalidate (32) |
//! ```

use crate::bytes::{be24, be32};
use crate::Error;

pub const LEN: usize = 4;

#[derive(Clone, Copy, Debug)]
pub struct Ieth<'a>(&'a [u8]);

impl<'a> Ieth<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Ieth(&b[..LEN]))
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
pub struct IethRepr {
    pub rkey: u32,
}

impl IethRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Ieth::new_checked(b)?;
        Ok(IethRepr { rkey: v.word() })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[..LEN].copy_from_slice(&self.rkey.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let b = [0x00, 0x12, 0x34, 0x56];
        let r = IethRepr::parse(&b).unwrap();
        let mut out = [0u8; LEN];
        r.emit(&mut out);
        assert_eq!(out, b);
        for n in 0..LEN {
            assert!(IethRepr::parse(&b[..n]).is_err());
        }
    }
}
