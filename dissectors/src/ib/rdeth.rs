//! Reliable Datagram Extended Transport Header (IBTA 9.3.2), 4 bytes.
//!
//! ```text
//! | reserved (8) | EE-Context (24) |
//! ```

use crate::bytes::{be24, be32, put24};
use crate::Error;

pub const LEN: usize = 4;

#[derive(Clone, Copy, Debug)]
pub struct Rdeth<'a>(&'a [u8]);

impl<'a> Rdeth<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Rdeth(&b[..LEN]))
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
pub struct RdethRepr {
    pub ee_context: u32,
}

impl RdethRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Rdeth::new_checked(b)?;
        Ok(RdethRepr {
            ee_context: v.low24(),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[0] = 0;
        put24(b, 1, self.ee_context);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let b = [0x00, 0x12, 0x34, 0x56];
        let r = RdethRepr::parse(&b).unwrap();
        let mut out = [0u8; LEN];
        r.emit(&mut out);
        assert_eq!(out, b);
        for n in 0..LEN {
            assert!(RdethRepr::parse(&b[..n]).is_err());
        }
    }
}
