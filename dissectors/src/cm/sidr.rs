//! Service ID Resolution (IBTA Vol. 1 tables 119 and 120): a UD client asks which QP
//! and Q_Key serve a service ID.
//!
//! ```text
//! SIDR_REQ:  0 RequestID (32) | 4 P_Key (16) rsvd (16) | 8 ServiceID (64)
//!           16 PrivateData (216 bytes)
//! SIDR_REP:  0 RequestID (32) | 4 Status | 5 AddInfoLen | 6 VendorID[23:8]
//!            8 QPN (24) VendorID[7:0] | 12 ServiceID (64) | 20 Q_Key (32)
//!           24 ClassPortInfo (72 bytes) | 96 PrivateData (136 bytes)
//! ```

use super::ServiceId;
use crate::bytes::{be16, be24, be32, be64, put16, put24, put32, put64, u8_at};
use crate::types::{PKey, Qpn};
use crate::Error;

pub const REQUEST_ID: usize = 0;
pub const REQ_PKEY: usize = 4;
pub const REQ_SERVICE_ID: usize = 8;
/// Length of a SIDR_REQ's fixed part.
pub const REQ_LEN: usize = 16;
pub const REP_STATUS: usize = 4;
pub const REP_ADD_INFO_LEN: usize = 5;
pub const REP_QPN: usize = 8;
pub const REP_SERVICE_ID: usize = 12;
pub const REP_QKEY: usize = 20;
/// Length of a SIDR_REP's fixed part.
pub const REP_LEN: usize = 24;

/// A ServiceIDResReq.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SidrReqRepr {
    /// The request ID (the reply echoes it).
    pub request_id: u32,
    /// Partition key.
    pub pkey: PKey,
    /// The service asked for.
    pub service_id: ServiceId,
}

impl SidrReqRepr {
    /// Parses the fixed part.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        Error::need(b, REQ_LEN)?;
        Ok(SidrReqRepr {
            request_id: be32(b, REQUEST_ID).unwrap_or(0),
            pkey: PKey(be16(b, REQ_PKEY).unwrap_or(0)),
            service_id: ServiceId(be64(b, REQ_SERVICE_ID).unwrap_or(0)),
        })
    }
    /// Writes the fixed part into `b[..REQ_LEN]`.
    pub fn emit(&self, b: &mut [u8]) {
        put32(b, REQUEST_ID, self.request_id);
        put16(b, REQ_PKEY, self.pkey.0);
        b[6..8].fill(0);
        put64(b, REQ_SERVICE_ID, self.service_id.0);
    }
}

/// A ServiceIDResReqResp.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SidrRepRepr {
    /// The request ID of the SIDR_REQ answered.
    pub request_id: u32,
    /// 0 valid, 1 service ID not supported, 2 rejected, 3 no QP, 4 redirect, 5 bad
    /// class version.
    pub status: u8,
    /// Bytes of additional information.
    pub add_info_len: u8,
    /// The QP that serves the service.
    pub qpn: Qpn,
    /// The service.
    pub service_id: ServiceId,
    /// The Q_Key to use.
    pub qkey: u32,
    /// Vendor ID.
    pub vendor_id: u32,
}

impl SidrRepRepr {
    /// Parses the fixed part.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        Error::need(b, REP_LEN)?;
        let vid_hi = u32::from(be16(b, 6).unwrap_or(0));
        Ok(SidrRepRepr {
            request_id: be32(b, REQUEST_ID).unwrap_or(0),
            status: u8_at(b, REP_STATUS).unwrap_or(0),
            add_info_len: u8_at(b, REP_ADD_INFO_LEN).unwrap_or(0),
            qpn: Qpn(be24(b, REP_QPN).unwrap_or(0)),
            service_id: ServiceId(be64(b, REP_SERVICE_ID).unwrap_or(0)),
            qkey: be32(b, REP_QKEY).unwrap_or(0),
            vendor_id: vid_hi << 8 | u32::from(u8_at(b, 11).unwrap_or(0)),
        })
    }
    /// Writes the fixed part into `b[..REP_LEN]`.
    pub fn emit(&self, b: &mut [u8]) {
        put32(b, REQUEST_ID, self.request_id);
        b[REP_STATUS] = self.status;
        b[REP_ADD_INFO_LEN] = self.add_info_len;
        put16(b, 6, (self.vendor_id >> 8) as u16);
        put24(b, REP_QPN, self.qpn.0);
        b[11] = self.vendor_id as u8;
        put64(b, REP_SERVICE_ID, self.service_id.0);
        put32(b, REP_QKEY, self.qkey);
    }
    /// The status's name.
    pub fn status_name(&self) -> &'static str {
        match self.status {
            0 => "valid",
            1 => "service ID not supported",
            2 => "rejected",
            3 => "no QP",
            4 => "redirect",
            5 => "unsupported class version",
            _ => "reserved status",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let q = SidrReqRepr {
            request_id: 42,
            pkey: PKey(0xffff),
            service_id: ServiceId::rdma_ip(0x11, 7471),
        };
        let mut b = [0u8; REQ_LEN];
        q.emit(&mut b);
        assert_eq!(SidrReqRepr::parse(&b).unwrap(), q);
        for n in 0..REQ_LEN {
            assert!(SidrReqRepr::parse(&b[..n]).is_err());
        }
        let p = SidrRepRepr {
            request_id: 42,
            status: 0,
            add_info_len: 0,
            qpn: Qpn(0x12),
            service_id: q.service_id,
            qkey: 0x0123_4567,
            vendor_id: 0x0000_02c9,
        };
        let mut b = [0u8; REP_LEN];
        p.emit(&mut b);
        assert_eq!(SidrRepRepr::parse(&b).unwrap(), p);
        assert_eq!(p.status_name(), "valid");
        for n in 0..REP_LEN {
            assert!(SidrRepRepr::parse(&b[..n]).is_err());
        }
    }
}
