//! Datagram Extended Transport Header (IBTA 9.3.3), 8 bytes, on UD and RD requests.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                         Q_Key (32)                            |
//! +---------------+-----------------------------------------------+
//! |   reserved    |               Source QP (24)                  |
//! +---------------+-----------------------------------------------+
//! ```

use crate::bytes::{be24, be32, put24};
use crate::types::Qpn;
use crate::Error;

pub const QKEY: usize = 0;
pub const SRC_QP: usize = 5;
pub const LEN: usize = 8;

#[derive(Clone, Copy, Debug)]
pub struct Deth<'a>(&'a [u8]);

impl<'a> Deth<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Deth(&b[..LEN]))
    }
    pub fn qkey(&self) -> u32 {
        be32(self.0, QKEY).unwrap_or(0)
    }
    pub fn src_qp(&self) -> Qpn {
        Qpn(be24(self.0, SRC_QP).unwrap_or(0))
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DethRepr {
    pub qkey: u32,
    pub src_qp: Qpn,
}

impl DethRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Deth::new_checked(b)?;
        Ok(DethRepr {
            qkey: v.qkey(),
            src_qp: v.src_qp(),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[QKEY..QKEY + 4].copy_from_slice(&self.qkey.to_be_bytes());
        b[4] = 0;
        put24(b, SRC_QP, self.src_qp.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = DethRepr {
            qkey: 0x80010000,
            src_qp: Qpn(0x000011),
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(b, [0x80, 1, 0, 0, 0, 0, 0, 0x11]);
        assert_eq!(DethRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(DethRepr::parse(&b[..n]).is_err());
        }
    }
}
