//! ReadyToUse (IBTA Vol. 1 table 111) and the two communication IDs that open most CM
//! messages; a DisconnectReply (table 113) has the same layout.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                 Local Communication ID (32)                   |
//! +---------------------------------------------------------------+
//! |                 Remote Communication ID (32)                  |
//! +---------------------------------------------------------------+
//! |                  PrivateData (224 bytes)                      |
//! ```

use crate::bytes::{be32, put32};
use crate::Error;

pub const LOCAL_COMM_ID: usize = 0;
pub const REMOTE_COMM_ID: usize = 4;
/// Length of the fixed part.
pub const LEN: usize = 8;

/// A zero-copy view of an RTU or DREP.
#[derive(Clone, Copy, Debug)]
pub struct Rtu<'a>(&'a [u8]);

impl<'a> Rtu<'a> {
    /// The message at the start of `b`, when `b` holds its fixed part.
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Rtu(&b[..LEN]))
    }
    /// The sender's communication ID.
    pub fn local_comm_id(&self) -> u32 {
        be32(self.0, LOCAL_COMM_ID).unwrap_or(0)
    }
    /// The receiver's communication ID.
    pub fn remote_comm_id(&self) -> u32 {
        be32(self.0, REMOTE_COMM_ID).unwrap_or(0)
    }
}

/// The sender's and the receiver's communication IDs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CommIds {
    /// The sender's communication ID.
    pub local: u32,
    /// The receiver's communication ID.
    pub remote: u32,
}

impl CommIds {
    /// Parses the two IDs at the start of `b`.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Rtu::new_checked(b)?;
        Ok(CommIds {
            local: v.local_comm_id(),
            remote: v.remote_comm_id(),
        })
    }
    /// Writes the two IDs into `b[..LEN]`.
    pub fn emit(&self, b: &mut [u8]) {
        put32(b, LOCAL_COMM_ID, self.local);
        put32(b, REMOTE_COMM_ID, self.remote);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = CommIds {
            local: 0x0102_0304,
            remote: 0x0a0b_0c0d,
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(b, [1, 2, 3, 4, 0xa, 0xb, 0xc, 0xd]);
        assert_eq!(CommIds::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(CommIds::parse(&b[..n]).is_err());
        }
    }
}
