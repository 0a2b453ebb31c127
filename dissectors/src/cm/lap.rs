//! Alternate path management (IBTA Vol. 1 tables 115 and 116): LoadAlternatePath and
//! its answer, AlternatePathResponse.
//!
//! ```text
//! LAP:  0 Local Comm ID | 4 Remote Comm ID | 8 reserved
//!      12 Remote QPN/EECN (24) RemoteCMTmo(5) rsvd(3) | 16 reserved
//!      20 alt. local LID | 22 alt. remote LID | 24 alt. local GID | 40 alt. remote GID
//!      56 FlowLabel(20) rsvd(4) TrafficClass(8) | 60 HopLimit | 61 rsvd(2) PacketRate(6)
//!      62 SL(4) SubnetLocal(1) | 63 LocalAckTimeout(5) | 64 PrivateData (168 bytes)
//! APR:  0 Local Comm ID | 4 Remote Comm ID | 8 AddInfoLen | 9 AP status | 10 reserved
//!      12 additional information (72) | 84 PrivateData (148 bytes)
//! ```

use super::req::PathRepr;
use super::rtu::CommIds;
use crate::bytes::{array, be16, be24, be32, put16, put24, put32, u8_at};
use crate::types::Qpn;
use crate::Error;

pub const LAP_REMOTE_QPN: usize = 12;
pub const LAP_PATH: usize = 20;
/// Length of a LAP's fixed part.
pub const LAP_LEN: usize = 64;
pub const APR_ADD_INFO_LEN: usize = 8;
pub const APR_STATUS: usize = 9;
/// Length of an APR's fixed part.
pub const APR_LEN: usize = 12;

/// A LoadAlternatePath.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LapRepr {
    /// Sender's and receiver's communication IDs.
    pub ids: CommIds,
    /// The receiver's QPN (or EECN).
    pub remote_qpn: Qpn,
    /// Remote CM response timeout code.
    pub remote_cm_timeout: u8,
    /// The alternate path to load (the LAP's own field order, the same values).
    pub alternate: PathRepr,
}

impl LapRepr {
    /// Parses the fixed part.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        Error::need(b, LAP_LEN)?;
        let byte = |o| u8_at(b, o).unwrap_or(0);
        let w = be32(b, 56).unwrap_or(0);
        Ok(LapRepr {
            ids: CommIds::parse(b)?,
            remote_qpn: Qpn(be24(b, LAP_REMOTE_QPN).unwrap_or(0)),
            remote_cm_timeout: byte(15) >> 3,
            alternate: PathRepr {
                local_lid: be16(b, 20).unwrap_or(0),
                remote_lid: be16(b, 22).unwrap_or(0),
                local_gid: array(b, 24).unwrap_or_default(),
                remote_gid: array(b, 40).unwrap_or_default(),
                flow_label: w >> 12,
                traffic_class: w as u8,
                hop_limit: byte(60),
                packet_rate: byte(61) & 0x3f,
                sl: byte(62) >> 4,
                subnet_local: byte(62) & 0x08 != 0,
                local_ack_timeout: byte(63) >> 3,
            },
        })
    }
    /// Writes the fixed part into `b[..LAP_LEN]`.
    pub fn emit(&self, b: &mut [u8]) {
        let p = &self.alternate;
        self.ids.emit(b);
        b[8..12].fill(0);
        put24(b, LAP_REMOTE_QPN, self.remote_qpn.0);
        b[15] = (self.remote_cm_timeout & 0x1f) << 3;
        b[16..20].fill(0);
        put16(b, 20, p.local_lid);
        put16(b, 22, p.remote_lid);
        b[24..40].copy_from_slice(&p.local_gid);
        b[40..56].copy_from_slice(&p.remote_gid);
        put32(
            b,
            56,
            (p.flow_label & 0xf_ffff) << 12 | u32::from(p.traffic_class),
        );
        b[60] = p.hop_limit;
        b[61] = p.packet_rate & 0x3f;
        b[62] = (p.sl & 0xf) << 4 | u8::from(p.subnet_local) << 3;
        b[63] = (p.local_ack_timeout & 0x1f) << 3;
    }
}

/// An AlternatePathResponse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AprRepr {
    /// Sender's and receiver's communication IDs.
    pub ids: CommIds,
    /// Bytes of additional information.
    pub add_info_len: u8,
    /// 0 loaded, other values say why not (IBTA table 117).
    pub ap_status: u8,
}

impl AprRepr {
    /// Parses the fixed part.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        Error::need(b, APR_LEN)?;
        Ok(AprRepr {
            ids: CommIds::parse(b)?,
            add_info_len: u8_at(b, APR_ADD_INFO_LEN).unwrap_or(0),
            ap_status: u8_at(b, APR_STATUS).unwrap_or(0),
        })
    }
    /// Writes the fixed part into `b[..APR_LEN]`.
    pub fn emit(&self, b: &mut [u8]) {
        self.ids.emit(b);
        b[APR_ADD_INFO_LEN] = self.add_info_len;
        b[APR_STATUS] = self.ap_status;
        b[10..12].fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let l = LapRepr {
            ids: CommIds {
                local: 1,
                remote: 2,
            },
            remote_qpn: Qpn(0x33),
            remote_cm_timeout: 18,
            alternate: PathRepr {
                local_lid: 12,
                remote_lid: 18,
                local_gid: [1; 16],
                remote_gid: [2; 16],
                flow_label: 0xabcde,
                packet_rate: 0x11,
                traffic_class: 0x68,
                hop_limit: 1,
                sl: 2,
                subnet_local: true,
                local_ack_timeout: 14,
            },
        };
        let mut b = [0u8; LAP_LEN];
        l.emit(&mut b);
        assert_eq!(&b[56..60], &[0xab, 0xcd, 0xe0, 0x68]);
        assert_eq!(LapRepr::parse(&b).unwrap(), l);
        for n in 0..LAP_LEN {
            assert!(LapRepr::parse(&b[..n]).is_err());
        }
        let a = AprRepr {
            ids: l.ids,
            add_info_len: 0,
            ap_status: 3,
        };
        let mut b = [0u8; APR_LEN];
        a.emit(&mut b);
        assert_eq!(AprRepr::parse(&b).unwrap(), a);
        for n in 0..APR_LEN {
            assert!(AprRepr::parse(&b[..n]).is_err());
        }
    }
}
