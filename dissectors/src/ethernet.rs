//! Ethernet II header (IEEE 802.3 clause 3 with an EtherType), 14 bytes.
//!
//! ```text
//! | destination MAC (6) | source MAC (6) | EtherType (2) |
//! ```

use crate::bytes::{array, be16};
use crate::Error;

pub const DST: usize = 0;
pub const SRC: usize = 6;
pub const ETHERTYPE: usize = 12;
pub const LEN: usize = 14;

pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const ETHERTYPE_VLAN: u16 = 0x8100;
pub const ETHERTYPE_QINQ: u16 = 0x88a8;
pub const ETHERTYPE_QINQ_OLD: u16 = 0x9100;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
pub const ETHERTYPE_ROCE_V1: u16 = 0x8915;

#[derive(Clone, Copy, Debug)]
pub struct Ethernet<'a>(&'a [u8]);

impl<'a> Ethernet<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Ethernet(&b[..LEN]))
    }
    pub fn dst(&self) -> [u8; 6] {
        array(self.0, DST).unwrap_or([0; 6])
    }
    pub fn src(&self) -> [u8; 6] {
        array(self.0, SRC).unwrap_or([0; 6])
    }
    pub fn ethertype(&self) -> u16 {
        be16(self.0, ETHERTYPE).unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EthernetRepr {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    pub ethertype: u16,
}

impl EthernetRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Ethernet::new_checked(b)?;
        Ok(EthernetRepr {
            dst: v.dst(),
            src: v.src(),
            ethertype: v.ethertype(),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[DST..DST + 6].copy_from_slice(&self.dst);
        b[SRC..SRC + 6].copy_from_slice(&self.src);
        b[ETHERTYPE..ETHERTYPE + 2].copy_from_slice(&self.ethertype.to_be_bytes());
    }
}

/// Formats a MAC address as `aa:bb:cc:dd:ee:ff`.
pub struct Mac<'a>(pub &'a [u8]);

impl core::fmt::Display for Mac<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = EthernetRepr {
            dst: [1, 2, 3, 4, 5, 6],
            src: [7, 8, 9, 10, 11, 12],
            ethertype: ETHERTYPE_IPV4,
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(EthernetRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(EthernetRepr::parse(&b[..n]).is_err());
        }
        assert_eq!(Mac(&r.dst).to_string(), "01:02:03:04:05:06");
    }
}
