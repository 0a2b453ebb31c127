//! Global Route Header (IBTA 8.3), 40 bytes: the IPv6-shaped header that carries GIDs.
//! RoCE v1 puts it right after the Ethernet header (EtherType 0x8915); native
//! InfiniBand puts it after the LRH when LNH = 3.
//!
//! ```text
//! +-------+---------------+---------------------------------------+
//! |IPVer 4| TClass (8)    |          Flow Label (20)              |
//! +-------+-------+-------+-------+---------------+---------------+
//! |        PayLen (16)            |  NxtHdr (8)   |  HopLmt (8)   |
//! +-------------------------------+---------------+---------------+
//! |                     SGID (128 bits)                           |
//! |                     DGID (128 bits)                           |
//! +---------------------------------------------------------------+
//! ```
//! NxtHdr 0x1B means a BTH follows.

use crate::bytes::{array, be16, be32, u8_at};
use crate::Error;

pub const PAY_LEN: usize = 4;
pub const NXT_HDR: usize = 6;
pub const HOP_LMT: usize = 7;
pub const SGID: usize = 8;
pub const DGID: usize = 24;
pub const LEN: usize = 40;
/// NxtHdr value for "IBA transport (BTH) follows".
pub const NXT_HDR_BTH: u8 = 0x1B;

#[derive(Clone, Copy, Debug)]
pub struct Grh<'a>(&'a [u8]);

impl<'a> Grh<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Grh(&b[..LEN]))
    }
    fn word0(&self) -> u32 {
        be32(self.0, 0).unwrap_or(0)
    }
    pub fn ip_ver(&self) -> u8 {
        (self.word0() >> 28) as u8
    }
    pub fn tclass(&self) -> u8 {
        (self.word0() >> 20) as u8
    }
    pub fn flow_label(&self) -> u32 {
        self.word0() & 0xf_ffff
    }
    pub fn pay_len(&self) -> u16 {
        be16(self.0, PAY_LEN).unwrap_or(0)
    }
    pub fn nxt_hdr(&self) -> u8 {
        u8_at(self.0, NXT_HDR).unwrap_or(0)
    }
    pub fn hop_lmt(&self) -> u8 {
        u8_at(self.0, HOP_LMT).unwrap_or(0)
    }
    pub fn sgid(&self) -> [u8; 16] {
        array(self.0, SGID).unwrap_or([0; 16])
    }
    pub fn dgid(&self) -> [u8; 16] {
        array(self.0, DGID).unwrap_or([0; 16])
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GrhRepr {
    pub ip_ver: u8,
    pub tclass: u8,
    pub flow_label: u32,
    pub pay_len: u16,
    pub nxt_hdr: u8,
    pub hop_lmt: u8,
    pub sgid: [u8; 16],
    pub dgid: [u8; 16],
}

impl GrhRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Grh::new_checked(b)?;
        Ok(GrhRepr {
            ip_ver: v.ip_ver(),
            tclass: v.tclass(),
            flow_label: v.flow_label(),
            pay_len: v.pay_len(),
            nxt_hdr: v.nxt_hdr(),
            hop_lmt: v.hop_lmt(),
            sgid: v.sgid(),
            dgid: v.dgid(),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        let w0 = (u32::from(self.ip_ver & 0xf) << 28)
            | (u32::from(self.tclass) << 20)
            | (self.flow_label & 0xf_ffff);
        b[0..4].copy_from_slice(&w0.to_be_bytes());
        b[PAY_LEN..PAY_LEN + 2].copy_from_slice(&self.pay_len.to_be_bytes());
        b[NXT_HDR] = self.nxt_hdr;
        b[HOP_LMT] = self.hop_lmt;
        b[SGID..SGID + 16].copy_from_slice(&self.sgid);
        b[DGID..DGID + 16].copy_from_slice(&self.dgid);
    }
    pub fn sgid_addr(&self) -> core::net::Ipv6Addr {
        core::net::Ipv6Addr::from(self.sgid)
    }
    pub fn dgid_addr(&self) -> core::net::Ipv6Addr {
        core::net::Ipv6Addr::from(self.dgid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = GrhRepr {
            ip_ver: 6,
            tclass: 0x6a,
            flow_label: 0x12345,
            pay_len: 100,
            nxt_hdr: NXT_HDR_BTH,
            hop_lmt: 64,
            sgid: [1; 16],
            dgid: [2; 16],
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(b[0], 0x66);
        assert_eq!(GrhRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(GrhRepr::parse(&b[..n]).is_err());
        }
    }
}
