//! Atomic Extended Transport Header (IBTA 9.3.4.2), 28 bytes, on CmpSwap and FetchAdd.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                  Virtual Address (64 bits)                    |
//! +-------------------------------+-------------------------------+
//! |            R_Key (32)         |                               |
//! +-------------------------------+                               +
//! |                Swap (or Add) Data (64 bits)                   |
//! +-------------------------------+-------------------------------+
//! |                Compare Data (64 bits)                         |
//! +---------------------------------------------------------------+
//! ```

use crate::bytes::{be32, be64};
use crate::Error;

pub const VA: usize = 0;
pub const RKEY: usize = 8;
pub const SWAP: usize = 12;
pub const CMP: usize = 20;
pub const LEN: usize = 28;

#[derive(Clone, Copy, Debug)]
pub struct AtomicEth<'a>(&'a [u8]);

impl<'a> AtomicEth<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(AtomicEth(&b[..LEN]))
    }
    pub fn va(&self) -> u64 {
        be64(self.0, VA).unwrap_or(0)
    }
    pub fn rkey(&self) -> u32 {
        be32(self.0, RKEY).unwrap_or(0)
    }
    pub fn swap_add(&self) -> u64 {
        be64(self.0, SWAP).unwrap_or(0)
    }
    pub fn compare(&self) -> u64 {
        be64(self.0, CMP).unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicEthRepr {
    pub va: u64,
    pub rkey: u32,
    pub swap_add: u64,
    pub compare: u64,
}

impl AtomicEthRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = AtomicEth::new_checked(b)?;
        Ok(AtomicEthRepr {
            va: v.va(),
            rkey: v.rkey(),
            swap_add: v.swap_add(),
            compare: v.compare(),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[VA..VA + 8].copy_from_slice(&self.va.to_be_bytes());
        b[RKEY..RKEY + 4].copy_from_slice(&self.rkey.to_be_bytes());
        b[SWAP..SWAP + 8].copy_from_slice(&self.swap_add.to_be_bytes());
        b[CMP..CMP + 8].copy_from_slice(&self.compare.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = AtomicEthRepr {
            va: 0x1000,
            rkey: 7,
            swap_add: 1,
            compare: 0xffff_ffff_0000_0000,
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(AtomicEthRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(AtomicEthRepr::parse(&b[..n]).is_err());
        }
    }
}
