//! The common MAD header (IBTA Vol. 1 13.4.3), 24 bytes at the start of every management
//! datagram: a UD SEND to QP0 (SMI) or QP1 (GSI, Q_Key 0x80010000) carries one MAD of
//! 256 bytes. The class says who reads it (subnet management, subnet administration,
//! performance, communication management, ...); the CM class is decoded further in
//! [`crate::cm`].
//!
//! ```text
//! +---------------+---------------+---------------+---------------+
//! | BaseVersion   | MgmtClass     | ClassVersion  | R |  Method   |
//! +---------------+---------------+---------------+---------------+
//! |          Status (16)          |      ClassSpecific (16)       |
//! +-------------------------------+-------------------------------+
//! |                     TransactionID (64)                        |
//! +-------------------------------+-------------------------------+
//! |        AttributeID (16)       |         Reserved (16)         |
//! +-------------------------------+-------------------------------+
//! |                   AttributeModifier (32)                      |
//! +---------------------------------------------------------------+
//! ```

use crate::bytes::{be16, be32, be64, u8_at};
use crate::cm::CmMsg;
use crate::Error;

pub const BASE_VERSION: usize = 0;
pub const MGMT_CLASS: usize = 1;
pub const CLASS_VERSION: usize = 2;
pub const METHOD: usize = 3;
pub const STATUS: usize = 4;
pub const CLASS_SPECIFIC: usize = 6;
pub const TID: usize = 8;
pub const ATTR_ID: usize = 16;
pub const ATTR_MOD: usize = 20;
/// Length of the common header.
pub const LEN: usize = 24;
/// Length of an IBTA MAD (header and data).
pub const MAD_LEN: usize = 256;
/// The GSI's well-known Q_Key.
pub const GSI_QKEY: u32 = 0x8001_0000;

/// Management class: communication management.
pub const CLASS_CM: u8 = 0x07;

/// Management classes by name (IBTA Vol. 1 table 145).
pub fn class_name(c: u8) -> &'static str {
    match c {
        0x01 => "SubnMgmt",
        0x81 => "SubnMgmt (directed route)",
        0x02 => "SubnMgmt (reserved)",
        0x03 => "SubnAdm",
        0x04 => "Perf",
        0x05 => "BM",
        0x06 => "DevMgt",
        0x07 => "CM",
        0x08 => "SNMP",
        0x09..=0x0f => "Vendor",
        0x10 => "Application",
        0x21 => "CC",
        0x30..=0x4f => "Vendor (OUI)",
        _ => "reserved class",
    }
}

/// Methods by name (IBTA Vol. 1 table 146; the top bit marks a response).
pub fn method_name(m: u8) -> &'static str {
    match m {
        0x01 => "Get",
        0x02 => "Set",
        0x03 => "Send",
        0x05 => "Trap",
        0x06 => "Report",
        0x07 => "TrapRepress",
        0x12 => "GetTable",
        0x13 => "GetTraceTable",
        0x14 => "GetMulti",
        0x15 => "Delete",
        0x81 => "GetResp",
        0x86 => "ReportResp",
        0x92 => "GetTableResp",
        0x94 => "GetMultiResp",
        0x95 => "DeleteResp",
        _ => "method",
    }
}

/// A zero-copy view of the common header.
#[derive(Clone, Copy, Debug)]
pub struct MadHdr<'a>(&'a [u8]);

impl<'a> MadHdr<'a> {
    /// The header at the start of `b`, when `b` holds all of it.
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(MadHdr(&b[..LEN]))
    }
    /// BaseVersion (1 for IBTA MADs).
    pub fn base_version(&self) -> u8 {
        u8_at(self.0, BASE_VERSION).unwrap_or(0)
    }
    /// MgmtClass.
    pub fn mgmt_class(&self) -> u8 {
        u8_at(self.0, MGMT_CLASS).unwrap_or(0)
    }
    /// ClassVersion.
    pub fn class_version(&self) -> u8 {
        u8_at(self.0, CLASS_VERSION).unwrap_or(0)
    }
    /// R bit and Method.
    pub fn method(&self) -> u8 {
        u8_at(self.0, METHOD).unwrap_or(0)
    }
    /// Status.
    pub fn status(&self) -> u16 {
        be16(self.0, STATUS).unwrap_or(0)
    }
    /// ClassSpecific.
    pub fn class_specific(&self) -> u16 {
        be16(self.0, CLASS_SPECIFIC).unwrap_or(0)
    }
    /// TransactionID.
    pub fn tid(&self) -> u64 {
        be64(self.0, TID).unwrap_or(0)
    }
    /// AttributeID.
    pub fn attr_id(&self) -> u16 {
        be16(self.0, ATTR_ID).unwrap_or(0)
    }
    /// AttributeModifier.
    pub fn attr_mod(&self) -> u32 {
        be32(self.0, ATTR_MOD).unwrap_or(0)
    }
}

/// The common MAD header as values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MadHdrRepr {
    /// BaseVersion.
    pub base_version: u8,
    /// MgmtClass ([`class_name`]).
    pub mgmt_class: u8,
    /// ClassVersion.
    pub class_version: u8,
    /// R bit and Method ([`method_name`]).
    pub method: u8,
    /// Status.
    pub status: u16,
    /// ClassSpecific.
    pub class_specific: u16,
    /// TransactionID.
    pub tid: u64,
    /// AttributeID.
    pub attr_id: u16,
    /// AttributeModifier.
    pub attr_mod: u32,
}

impl MadHdrRepr {
    /// Parses the header; a base version other than 1 (IBTA) or 2 (OPA) is not a MAD
    /// this crate reads.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = MadHdr::new_checked(b)?;
        if !matches!(v.base_version(), 1 | 2) {
            return Err(Error::Malformed("MAD base version is neither 1 nor 2"));
        }
        Ok(MadHdrRepr {
            base_version: v.base_version(),
            mgmt_class: v.mgmt_class(),
            class_version: v.class_version(),
            method: v.method(),
            status: v.status(),
            class_specific: v.class_specific(),
            tid: v.tid(),
            attr_id: v.attr_id(),
            attr_mod: v.attr_mod(),
        })
    }
    /// Writes the header into `b[..LEN]` (the reserved field as 0).
    pub fn emit(&self, b: &mut [u8]) {
        b[BASE_VERSION] = self.base_version;
        b[MGMT_CLASS] = self.mgmt_class;
        b[CLASS_VERSION] = self.class_version;
        b[METHOD] = self.method;
        b[STATUS..STATUS + 2].copy_from_slice(&self.status.to_be_bytes());
        b[CLASS_SPECIFIC..CLASS_SPECIFIC + 2].copy_from_slice(&self.class_specific.to_be_bytes());
        b[TID..TID + 8].copy_from_slice(&self.tid.to_be_bytes());
        b[ATTR_ID..ATTR_ID + 2].copy_from_slice(&self.attr_id.to_be_bytes());
        b[ATTR_ID + 2..ATTR_MOD].fill(0);
        b[ATTR_MOD..ATTR_MOD + 4].copy_from_slice(&self.attr_mod.to_be_bytes());
    }
    /// "CM", "SubnAdm", ...
    pub fn class_name(&self) -> &'static str {
        class_name(self.mgmt_class)
    }
    /// "Send", "GetResp", ...
    pub fn method_name(&self) -> &'static str {
        method_name(self.method)
    }
}

/// A decoded MAD: its common header and, for the CM class, the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mad {
    /// The common header.
    pub hdr: MadHdrRepr,
    /// The CM message, for class 0x07 and a CM attribute.
    pub cm: Option<CmMsg>,
}

/// Why a MAD stopped: in its common header or in the class's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadError {
    /// The common header could not be read.
    Header(Error),
    /// The header was read; the CM message after it could not be.
    Cm(MadHdrRepr, Error),
}

impl Mad {
    /// Parses the MAD in `b` (the UD payload, or as much of it as was captured).
    pub fn parse(b: &[u8]) -> Result<Mad, MadError> {
        let hdr = MadHdrRepr::parse(b).map_err(MadError::Header)?;
        let data = b.get(LEN..).unwrap_or(&[]);
        let cm = if hdr.mgmt_class == CLASS_CM {
            CmMsg::parse(hdr.attr_id, data).map_err(|e| MadError::Cm(hdr, e))?
        } else {
            None
        };
        Ok(Mad { hdr, cm })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = MadHdrRepr {
            base_version: 1,
            mgmt_class: 7,
            class_version: 2,
            method: 3,
            status: 0x1234,
            class_specific: 0x5678,
            tid: 0x0102_0304_0506_0708,
            attr_id: 0x0010,
            attr_mod: 0xdead_beef,
        };
        let mut b = [0xffu8; LEN];
        r.emit(&mut b);
        assert_eq!(&b[..4], &[1, 7, 2, 3]);
        assert_eq!(&b[18..20], &[0, 0]);
        assert_eq!(MadHdrRepr::parse(&b).unwrap(), r);
        assert_eq!(r.class_name(), "CM");
        assert_eq!(r.method_name(), "Send");
        for n in 0..LEN {
            assert!(MadHdrRepr::parse(&b[..n]).is_err());
        }
        b[0] = 0x80;
        assert!(matches!(MadHdrRepr::parse(&b), Err(Error::Malformed(_))));
    }
}
