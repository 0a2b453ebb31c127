//! MsgRcptAck (IBTA Vol. 1 table 107): "your message arrived, the answer will take
//! longer" — it stretches the sender's timeout to the service timeout.
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                 Local Communication ID (32)                   |
//! +---------------------------------------------------------------+
//! |                 Remote Communication ID (32)                  |
//! +-------+-------+---------+-----+-------------------------------+
//! |MsgMRA | rsvd  | SvcTmo  | rsv |   PrivateData (222 bytes) ... |
//! +-------+-------+---------+-----+-------------------------------+
//! MsgMRA: 0 REQ, 1 REP, 2 LAP. SvcTmo: 4.096 us * 2^value.
//! ```

use super::rtu::CommIds;
use crate::bytes::u8_at;
use crate::Error;

pub const MSG_MRAED: usize = 8;
pub const SERVICE_TIMEOUT: usize = 9;
/// Length of the fixed part.
pub const LEN: usize = 10;

/// A zero-copy view of an MRA.
#[derive(Clone, Copy, Debug)]
pub struct Mra<'a>(&'a [u8]);

impl<'a> Mra<'a> {
    /// The message at the start of `b`, when `b` holds its fixed part.
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Mra(&b[..LEN]))
    }
    /// Which message is acknowledged: 0 REQ, 1 REP, 2 LAP.
    pub fn message_mraed(&self) -> u8 {
        u8_at(self.0, MSG_MRAED).unwrap_or(0) >> 6
    }
    /// The service timeout code.
    pub fn service_timeout(&self) -> u8 {
        u8_at(self.0, SERVICE_TIMEOUT).unwrap_or(0) >> 3
    }
}

/// A MsgRcptAck.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MraRepr {
    /// Sender's and receiver's communication IDs.
    pub ids: CommIds,
    /// 0 REQ, 1 REP, 2 LAP.
    pub message_mraed: u8,
    /// Service timeout code (4.096 us * 2^code).
    pub service_timeout: u8,
}

impl MraRepr {
    /// Parses the fixed part.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Mra::new_checked(b)?;
        Ok(MraRepr {
            ids: CommIds::parse(b)?,
            message_mraed: v.message_mraed(),
            service_timeout: v.service_timeout(),
        })
    }
    /// Writes the fixed part into `b[..LEN]`.
    pub fn emit(&self, b: &mut [u8]) {
        self.ids.emit(b);
        b[MSG_MRAED] = (self.message_mraed & 3) << 6;
        b[SERVICE_TIMEOUT] = (self.service_timeout & 0x1f) << 3;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = MraRepr {
            ids: CommIds {
                local: 1,
                remote: 2,
            },
            message_mraed: 1,
            service_timeout: 0x1f,
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(&b[8..], &[0x40, 0xf8]);
        assert_eq!(MraRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(MraRepr::parse(&b[..n]).is_err());
        }
    }
}
