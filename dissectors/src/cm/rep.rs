//! ConnectReply (IBTA Vol. 1 table 110): the passive side's QP, the PSN it expects to
//! receive first and what it accepts.
//!
//! ```text
//!  0 Local Communication ID (32)        4 Remote Communication ID (32)
//!  8 Local Q_Key (32)
//! 12 Local QPN (24) | VendorID[23:16]   16 Local EECN (24) | VendorID[15:8]
//! 20 Starting PSN (24) | VendorID[7:0]
//! 24 Responder Resources | Initiator Depth | TgtAckDelay(5) FailoverAcc(2) E2E(1)
//!    | RNRRetry(3) SRQ(1) rsvd(4)
//! 28 Local CA GUID (64)                36 PrivateData (196 bytes)
//! ```

use super::rtu::CommIds;
use crate::bytes::{be24, be32, be64, put24, put32, put64, u8_at};
use crate::types::{Psn, Qpn};
use crate::Error;

pub const LOCAL_QKEY: usize = 8;
pub const LOCAL_QPN: usize = 12;
pub const LOCAL_EECN: usize = 16;
pub const START_PSN: usize = 20;
pub const RESP_RES: usize = 24;
pub const INIT_DEPTH: usize = 25;
pub const FLAGS1: usize = 26;
pub const FLAGS2: usize = 27;
pub const LOCAL_CA_GUID: usize = 28;
/// Length of the fixed part.
pub const LEN: usize = 36;

/// A zero-copy view of a REP.
#[derive(Clone, Copy, Debug)]
pub struct Rep<'a>(&'a [u8]);

impl<'a> Rep<'a> {
    /// The message at the start of `b`, when `b` holds its fixed part.
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Rep(&b[..LEN]))
    }
    fn byte(&self, off: usize) -> u8 {
        u8_at(self.0, off).unwrap_or(0)
    }
    /// Local Q_Key (UD / RD).
    pub fn local_qkey(&self) -> u32 {
        be32(self.0, LOCAL_QKEY).unwrap_or(0)
    }
    /// The replier's QP.
    pub fn local_qpn(&self) -> Qpn {
        Qpn(be24(self.0, LOCAL_QPN).unwrap_or(0))
    }
    /// The replier's EE context (RD).
    pub fn local_eecn(&self) -> u32 {
        be24(self.0, LOCAL_EECN).unwrap_or(0)
    }
    /// The starting PSN of the replier's receive queue: the first PSN the requester
    /// sends with.
    pub fn start_psn(&self) -> Psn {
        Psn(be24(self.0, START_PSN).unwrap_or(0))
    }
    /// The 24-bit vendor ID spread over three bytes.
    pub fn vendor_id(&self) -> u32 {
        u32::from(self.byte(15)) << 16 | u32::from(self.byte(19)) << 8 | u32::from(self.byte(23))
    }
}

/// A ConnectReply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RepRepr {
    /// Sender's and receiver's communication IDs.
    pub ids: CommIds,
    /// Local Q_Key.
    pub local_qkey: u32,
    /// The replier's QP.
    pub local_qpn: Qpn,
    /// The replier's EE context.
    pub local_eecn: u32,
    /// The starting PSN of the replier's receive queue, i.e. the first PSN the
    /// *requester* sends with (see `ReqRepr::start_psn`).
    pub start_psn: Psn,
    /// RDMA READ / atomic requests the replier serves at once.
    pub responder_resources: u8,
    /// RDMA READ / atomic requests the replier issues at once.
    pub initiator_depth: u8,
    /// Target ACK delay code.
    pub target_ack_delay: u8,
    /// Failover accepted (0 yes, 1 no, 2 unsupported).
    pub failover_accepted: u8,
    /// End-to-end flow control.
    pub e2e_flow_control: bool,
    /// RNR NAK retry count the replier's requests use.
    pub rnr_retry: u8,
    /// The replier uses an SRQ.
    pub srq: bool,
    /// Local CA GUID.
    pub local_ca_guid: u64,
    /// Vendor ID.
    pub vendor_id: u32,
}

impl RepRepr {
    /// Parses the fixed part.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Rep::new_checked(b)?;
        let f1 = v.byte(FLAGS1);
        let f2 = v.byte(FLAGS2);
        Ok(RepRepr {
            ids: CommIds::parse(b)?,
            local_qkey: v.local_qkey(),
            local_qpn: v.local_qpn(),
            local_eecn: v.local_eecn(),
            start_psn: v.start_psn(),
            responder_resources: v.byte(RESP_RES),
            initiator_depth: v.byte(INIT_DEPTH),
            target_ack_delay: f1 >> 3,
            failover_accepted: (f1 >> 1) & 3,
            e2e_flow_control: f1 & 1 != 0,
            rnr_retry: f2 >> 5,
            srq: f2 & 0x10 != 0,
            local_ca_guid: be64(b, LOCAL_CA_GUID).unwrap_or(0),
            vendor_id: v.vendor_id(),
        })
    }
    /// Writes the fixed part into `b[..LEN]`.
    pub fn emit(&self, b: &mut [u8]) {
        self.ids.emit(b);
        put32(b, LOCAL_QKEY, self.local_qkey);
        put24(b, LOCAL_QPN, self.local_qpn.0);
        b[15] = (self.vendor_id >> 16) as u8;
        put24(b, LOCAL_EECN, self.local_eecn);
        b[19] = (self.vendor_id >> 8) as u8;
        put24(b, START_PSN, self.start_psn.0);
        b[23] = self.vendor_id as u8;
        b[RESP_RES] = self.responder_resources;
        b[INIT_DEPTH] = self.initiator_depth;
        b[FLAGS1] = (self.target_ack_delay & 0x1f) << 3
            | (self.failover_accepted & 3) << 1
            | u8::from(self.e2e_flow_control);
        b[FLAGS2] = (self.rnr_retry & 7) << 5 | u8::from(self.srq) << 4;
        put64(b, LOCAL_CA_GUID, self.local_ca_guid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = RepRepr {
            ids: CommIds {
                local: 0x11,
                remote: 0x22,
            },
            local_qkey: 0,
            local_qpn: Qpn(0x003b),
            local_eecn: 0,
            start_psn: Psn(0x0072_7d6d),
            responder_resources: 4,
            initiator_depth: 4,
            target_ack_delay: 15,
            failover_accepted: 2,
            e2e_flow_control: true,
            rnr_retry: 7,
            srq: false,
            local_ca_guid: 0x0250_56ff_fea7_129f,
            vendor_id: 0x0000_02c9,
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(&b[12..16], &[0, 0, 0x3b, 0]);
        assert_eq!(&b[20..24], &[0x72, 0x7d, 0x6d, 0xc9]);
        assert_eq!(RepRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(RepRepr::parse(&b[..n]).is_err());
        }
    }
}
