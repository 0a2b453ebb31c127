//! Local Route Header (IBTA 7.7), 8 bytes, first header of a native InfiniBand packet.
//!
//! ```text
//! +-------+-------+-------+---+---+-------------------------------+
//! |  VL   | LVer  |  SL   |rsv|LNH|          DLID (16)            |
//! +-------+-------+-------+---+---+-------------------------------+
//! | resv5   |  PktLen (11)        |          SLID (16)            |
//! +---------+---------------------+-------------------------------+
//! ```
//! LNH: 0 raw, 1 IP (non-IBA), 2 IBA local (BTH follows), 3 IBA global (GRH follows).
//! PktLen counts 4-byte words from the LRH through the ICRC (the VCRC is not counted).

use crate::bytes::{be16, u8_at};
use crate::Error;

pub const DLID: usize = 2;
pub const PKT_LEN: usize = 4;
pub const SLID: usize = 6;
pub const LEN: usize = 8;

#[derive(Clone, Copy, Debug)]
pub struct Lrh<'a>(&'a [u8]);

impl<'a> Lrh<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Lrh(&b[..LEN]))
    }
    pub fn vl(&self) -> u8 {
        u8_at(self.0, 0).unwrap_or(0) >> 4
    }
    pub fn lver(&self) -> u8 {
        u8_at(self.0, 0).unwrap_or(0) & 0xf
    }
    pub fn sl(&self) -> u8 {
        u8_at(self.0, 1).unwrap_or(0) >> 4
    }
    pub fn lnh(&self) -> u8 {
        u8_at(self.0, 1).unwrap_or(0) & 0x3
    }
    pub fn dlid(&self) -> u16 {
        be16(self.0, DLID).unwrap_or(0)
    }
    pub fn pkt_len(&self) -> u16 {
        be16(self.0, PKT_LEN).unwrap_or(0) & 0x7ff
    }
    pub fn slid(&self) -> u16 {
        be16(self.0, SLID).unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LrhRepr {
    pub vl: u8,
    pub lver: u8,
    pub sl: u8,
    pub lnh: u8,
    pub dlid: u16,
    pub pkt_len: u16,
    pub slid: u16,
}

impl LrhRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Lrh::new_checked(b)?;
        Ok(LrhRepr {
            vl: v.vl(),
            lver: v.lver(),
            sl: v.sl(),
            lnh: v.lnh(),
            dlid: v.dlid(),
            pkt_len: v.pkt_len(),
            slid: v.slid(),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[0] = (self.vl << 4) | (self.lver & 0xf);
        b[1] = (self.sl << 4) | (self.lnh & 3);
        b[DLID..DLID + 2].copy_from_slice(&self.dlid.to_be_bytes());
        b[PKT_LEN..PKT_LEN + 2].copy_from_slice(&(self.pkt_len & 0x7ff).to_be_bytes());
        b[SLID..SLID + 2].copy_from_slice(&self.slid.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parse_real_lrh() {
        // From ib2.pcap: VL 0, LNH 3 (GRH), DLID 0xc000, PktLen 33 words, SLID 6.
        let b = [0x00, 0x03, 0xc0, 0x00, 0x00, 0x21, 0x00, 0x06];
        let r = LrhRepr::parse(&b).unwrap();
        assert_eq!((r.lnh, r.dlid, r.pkt_len, r.slid), (3, 0xc000, 33, 6));
        let mut out = [0u8; LEN];
        r.emit(&mut out);
        assert_eq!(out, b);
        for n in 0..LEN {
            assert!(LrhRepr::parse(&b[..n]).is_err());
        }
    }
}
