//! RDMA Extended Transport Header (IBTA 9.3.4.1), 16 bytes: where an RDMA WRITE or READ
//! lands and how long the whole transfer is.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                  Virtual Address (64 bits)                    |
//! +---------------------------------------------------------------+
//! |            R_Key (32)         |       DMA Length (32)         |
//! +---------------------------------------------------------------+
//! ```

use crate::bytes::{be32, be64};
use crate::Error;

pub const VA: usize = 0;
pub const RKEY: usize = 8;
pub const DMA_LEN: usize = 12;
pub const LEN: usize = 16;

#[derive(Clone, Copy, Debug)]
pub struct Reth<'a>(&'a [u8]);

impl<'a> Reth<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Reth(&b[..LEN]))
    }
    pub fn va(&self) -> u64 {
        be64(self.0, VA).unwrap_or(0)
    }
    pub fn rkey(&self) -> u32 {
        be32(self.0, RKEY).unwrap_or(0)
    }
    pub fn dma_len(&self) -> u32 {
        be32(self.0, DMA_LEN).unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RethRepr {
    pub va: u64,
    pub rkey: u32,
    pub dma_len: u32,
}

impl RethRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Reth::new_checked(b)?;
        Ok(RethRepr {
            va: v.va(),
            rkey: v.rkey(),
            dma_len: v.dma_len(),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[VA..VA + 8].copy_from_slice(&self.va.to_be_bytes());
        b[RKEY..RKEY + 4].copy_from_slice(&self.rkey.to_be_bytes());
        b[DMA_LEN..DMA_LEN + 4].copy_from_slice(&self.dma_len.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = RethRepr {
            va: 0x0102030405060708,
            rkey: 0xdeadbeef,
            dma_len: 65536,
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(b[0], 1);
        assert_eq!(RethRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(RethRepr::parse(&b[..n]).is_err());
        }
    }
}
