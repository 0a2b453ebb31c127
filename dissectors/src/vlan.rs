//! IEEE 802.1Q tag (and 802.1ad QinQ service tag), 4 bytes after the TPID: the priority
//! (PCP) is what PFC pauses per class, so it is kept.
//!
//! ```text
//! | PCP (3) | DEI (1) | VID (12) | inner EtherType (16) |
//! ```

use crate::bytes::be16;
use crate::Error;

pub const TCI: usize = 0;
pub const ETHERTYPE: usize = 2;
pub const LEN: usize = 4;

/// A zero-copy view of the 4 bytes after a TPID; construction checks the length.
#[derive(Clone, Copy, Debug)]
pub struct Vlan<'a>(&'a [u8]);

impl<'a> Vlan<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Vlan(&b[..LEN]))
    }
    fn tci(&self) -> u16 {
        be16(self.0, TCI).unwrap_or(0)
    }
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }
    pub fn vid(&self) -> u16 {
        self.tci() & 0x0fff
    }
    pub fn ethertype(&self) -> u16 {
        be16(self.0, ETHERTYPE).unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VlanRepr {
    /// The TPID that introduced this tag (0x8100, 0x88a8 or 0x9100).
    pub tpid: u16,
    pub pcp: u8,
    pub dei: bool,
    pub vid: u16,
    pub ethertype: u16,
}

impl VlanRepr {
    /// Parses the 4 bytes after a TPID.
    pub fn parse(tpid: u16, b: &[u8]) -> Result<Self, Error> {
        let v = Vlan::new_checked(b)?;
        Ok(VlanRepr {
            tpid,
            pcp: v.pcp(),
            dei: v.dei(),
            vid: v.vid(),
            ethertype: v.ethertype(),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        let tci =
            (u16::from(self.pcp & 7) << 13) | (u16::from(self.dei) << 12) | (self.vid & 0xfff);
        b[TCI..TCI + 2].copy_from_slice(&tci.to_be_bytes());
        b[ETHERTYPE..ETHERTYPE + 2].copy_from_slice(&self.ethertype.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = VlanRepr {
            tpid: 0x8100,
            pcp: 3,
            dei: false,
            vid: 100,
            ethertype: 0x0800,
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(b, [0x60, 100, 0x08, 0x00]);
        assert_eq!(VlanRepr::parse(0x8100, &b).unwrap(), r);
        for n in 0..LEN {
            assert!(VlanRepr::parse(0x8100, &b[..n]).is_err());
        }
    }
}
