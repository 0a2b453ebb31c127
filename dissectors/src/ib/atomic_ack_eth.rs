//! Atomic ACK Extended Transport Header (IBTA 9.3.5.2), 8 bytes: the value the target
//! held before a CmpSwap / FetchAdd.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |               Original Remote Data (64 bits)                  |
//! +---------------------------------------------------------------+
//! ```

use crate::bytes::be64;
use crate::Error;

pub const LEN: usize = 8;

#[derive(Clone, Copy, Debug)]
pub struct AtomicAckEth<'a>(&'a [u8]);

impl<'a> AtomicAckEth<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(AtomicAckEth(&b[..LEN]))
    }
    pub fn orig_rem_data(&self) -> u64 {
        be64(self.0, 0).unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicAckEthRepr {
    pub orig_rem_data: u64,
}

impl AtomicAckEthRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        Ok(AtomicAckEthRepr {
            orig_rem_data: AtomicAckEth::new_checked(b)?.orig_rem_data(),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[..LEN].copy_from_slice(&self.orig_rem_data.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = AtomicAckEthRepr { orig_rem_data: 42 };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(AtomicAckEthRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(AtomicAckEthRepr::parse(&b[..n]).is_err());
        }
    }
}
