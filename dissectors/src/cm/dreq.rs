//! DisconnectRequest (IBTA Vol. 1 table 112); its reply, DREP, is laid out like an RTU
//! ([`super::rtu`]).
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                 Local Communication ID (32)                   |
//! +---------------------------------------------------------------+
//! |                 Remote Communication ID (32)                  |
//! +-----------------------------------------------+---------------+
//! |            Remote QPN / EECN (24)             |   reserved    |
//! +-----------------------------------------------+---------------+
//! |                  PrivateData (220 bytes)                      |
//! ```

use super::rtu::CommIds;
use crate::bytes::{be24, put24};
use crate::types::Qpn;
use crate::Error;

pub const REMOTE_QPN: usize = 8;
/// Length of the fixed part.
pub const LEN: usize = 12;

/// A zero-copy view of a DREQ.
#[derive(Clone, Copy, Debug)]
pub struct Dreq<'a>(&'a [u8]);

impl<'a> Dreq<'a> {
    /// The message at the start of `b`, when `b` holds its fixed part.
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Dreq(&b[..LEN]))
    }
    /// The QP (or EE context) of the receiver being disconnected.
    pub fn remote_qpn(&self) -> Qpn {
        Qpn(be24(self.0, REMOTE_QPN).unwrap_or(0))
    }
}

/// A DisconnectRequest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DreqRepr {
    /// Sender's and receiver's communication IDs.
    pub ids: CommIds,
    /// The receiver's QPN (or EECN).
    pub remote_qpn: Qpn,
}

impl DreqRepr {
    /// Parses the fixed part.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Dreq::new_checked(b)?;
        Ok(DreqRepr {
            ids: CommIds::parse(b)?,
            remote_qpn: v.remote_qpn(),
        })
    }
    /// Writes the fixed part into `b[..LEN]`.
    pub fn emit(&self, b: &mut [u8]) {
        self.ids.emit(b);
        put24(b, REMOTE_QPN, self.remote_qpn.0);
        b[REMOTE_QPN + 3] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = DreqRepr {
            ids: CommIds {
                local: 7,
                remote: 9,
            },
            remote_qpn: Qpn(0x1234),
        };
        let mut b = [0xffu8; LEN];
        r.emit(&mut b);
        assert_eq!(&b[8..], &[0, 0x12, 0x34, 0]);
        assert_eq!(DreqRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(DreqRepr::parse(&b[..n]).is_err());
        }
    }
}
