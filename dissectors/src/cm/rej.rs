//! ConnectReject (IBTA Vol. 1 table 108) and its reasons (table 109).
//!
//! ```text
//! +---------------------------------------------------------------+
//! |                 Local Communication ID (32)                   |
//! +---------------------------------------------------------------+
//! |                 Remote Communication ID (32)                  |
//! +-------+-------+-------------+-+-------------------------------+
//! |MsgRej | rsvd  | RejInfoLen  |r|          Reason (16)          |
//! +-------+-------+-------------+-+-------------------------------+
//! |   Additional Reject Information (72 bytes), PrivateData (148)  |
//! MsgRej: 0 REQ, 1 REP, 2 no message (timeout / unknown).
//! ```

use super::rtu::CommIds;
use crate::bytes::{be16, put16, u8_at};
use crate::Error;

pub const MSG_REJECTED: usize = 8;
pub const REJ_INFO_LEN: usize = 9;
pub const REASON: usize = 10;
pub const ARI: usize = 12;
/// Length of the fixed part.
pub const LEN: usize = 12;

/// Why a connection was rejected (IBTA Vol. 1 table 109).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RejReason(pub u16);

impl RejReason {
    /// No QP available.
    pub const NO_QP: RejReason = RejReason(1);
    /// The CM's timeout.
    pub const TIMEOUT: RejReason = RejReason(4);
    /// Nobody listens on the service ID.
    pub const INVALID_SERVICE_ID: RejReason = RejReason(8);
    /// A consumer (the application) refused.
    pub const CONSUMER_DEFINED: RejReason = RejReason(28);

    /// The reason's name as the IBTA table words it.
    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "no QP available",
            2 => "no EE context available",
            3 => "no resources available",
            4 => "timeout",
            5 => "unsupported request",
            6 => "invalid communication ID",
            7 => "invalid communication instance",
            8 => "invalid service ID",
            9 => "invalid transport service type",
            10 => "stale connection",
            11 => "RDC does not exist",
            12 => "primary remote port GID rejected",
            13 => "primary remote port LID rejected",
            14 => "invalid primary SL",
            15 => "invalid primary traffic class",
            16 => "invalid primary hop limit",
            17 => "invalid primary packet rate",
            18 => "alternate remote port GID rejected",
            19 => "alternate remote port LID rejected",
            20 => "invalid alternate SL",
            21 => "invalid alternate traffic class",
            22 => "invalid alternate hop limit",
            23 => "invalid alternate packet rate",
            24 => "port CM redirection",
            25 => "port redirection",
            26 => "invalid path MTU",
            27 => "insufficient responder resources",
            28 => "consumer reject",
            29 => "RNR NAK retry count rejected",
            30 => "duplicate local communication ID",
            31 => "unsupported class version",
            32 => "invalid primary flow label",
            33 => "invalid alternate flow label",
            35 => "vendor option not supported",
            _ => "reserved reason",
        }
    }
}

/// A zero-copy view of a REJ.
#[derive(Clone, Copy, Debug)]
pub struct Rej<'a>(&'a [u8]);

impl<'a> Rej<'a> {
    /// The message at the start of `b`, when `b` holds its fixed part.
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Rej(&b[..LEN]))
    }
    /// Which message is rejected: 0 REQ, 1 REP, 2 none.
    pub fn msg_rejected(&self) -> u8 {
        u8_at(self.0, MSG_REJECTED).unwrap_or(0) >> 6
    }
    /// Bytes of additional reject information.
    pub fn rej_info_len(&self) -> u8 {
        u8_at(self.0, REJ_INFO_LEN).unwrap_or(0) >> 1
    }
    /// The reason.
    pub fn reason(&self) -> RejReason {
        RejReason(be16(self.0, REASON).unwrap_or(0))
    }
}

/// A ConnectReject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RejRepr {
    /// Sender's and receiver's communication IDs (the receiver's is 0 when the REQ
    /// never got one).
    pub ids: CommIds,
    /// 0 REQ, 1 REP, 2 none.
    pub msg_rejected: u8,
    /// Bytes of additional reject information.
    pub rej_info_len: u8,
    /// The reason.
    pub reason: RejReason,
}

impl RejRepr {
    /// Parses the fixed part.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Rej::new_checked(b)?;
        Ok(RejRepr {
            ids: CommIds::parse(b)?,
            msg_rejected: v.msg_rejected(),
            rej_info_len: v.rej_info_len(),
            reason: v.reason(),
        })
    }
    /// Writes the fixed part into `b[..LEN]`.
    pub fn emit(&self, b: &mut [u8]) {
        self.ids.emit(b);
        b[MSG_REJECTED] = (self.msg_rejected & 3) << 6;
        b[REJ_INFO_LEN] = (self.rej_info_len & 0x7f) << 1;
        put16(b, REASON, self.reason.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = RejRepr {
            ids: CommIds {
                local: 5,
                remote: 0,
            },
            msg_rejected: 0,
            rej_info_len: 0,
            reason: RejReason::INVALID_SERVICE_ID,
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(&b[8..], &[0, 0, 0, 8]);
        assert_eq!(RejRepr::parse(&b).unwrap(), r);
        assert_eq!(r.reason.name(), "invalid service ID");
        assert_eq!(RejReason(34).name(), "reserved reason");
        for n in 0..LEN {
            assert!(RejRepr::parse(&b[..n]).is_err());
        }
    }
}
