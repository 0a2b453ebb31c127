//! Linux cooked capture headers (what `tcpdump -i any` writes).
//!
//! SLL v1 (DLT 113), 16 bytes:
//! ```text
//! | packet type (2) | ARPHRD (2) | addr len (2) | addr (8) | protocol (2) |
//! ```
//! SLL v2 (DLT 276), 20 bytes, which also records the interface index:
//! ```text
//! | protocol (2) | reserved (2) | ifindex (4) | ARPHRD (2) | pkt type (1) | addr len (1) | addr (8) |
//! ```

use crate::bytes::{array, be16, be32, u8_at};
use crate::Error;

pub const V1_LEN: usize = 16;
pub const V2_LEN: usize = 20;

/// Packet type: 0 to us, 1 broadcast, 2 multicast, 3 to someone else, 4 sent by us.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SllRepr {
    pub version: u8,
    pub pkt_type: u16,
    pub arphrd: u16,
    pub addr_len: u8,
    pub addr: [u8; 8],
    pub protocol: u16,
    /// Interface index (SLL2 only).
    pub ifindex: Option<u32>,
}

/// A zero-copy view of a Linux cooked header of either version.
#[derive(Clone, Copy, Debug)]
pub struct Sll<'a> {
    b: &'a [u8],
    v2: bool,
}

impl<'a> Sll<'a> {
    pub fn new_checked_v1(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, V1_LEN)?;
        Ok(Sll {
            b: &b[..V1_LEN],
            v2: false,
        })
    }
    pub fn new_checked_v2(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, V2_LEN)?;
        Ok(Sll {
            b: &b[..V2_LEN],
            v2: true,
        })
    }
    pub fn protocol(&self) -> u16 {
        be16(self.b, if self.v2 { 0 } else { 14 }).unwrap_or(0)
    }
    /// Interface index (SLL2 only).
    pub fn ifindex(&self) -> Option<u32> {
        self.v2.then(|| be32(self.b, 4).unwrap_or(0))
    }
    pub fn arphrd(&self) -> u16 {
        be16(self.b, if self.v2 { 8 } else { 2 }).unwrap_or(0)
    }
    pub fn pkt_type(&self) -> u16 {
        if self.v2 {
            u16::from(u8_at(self.b, 10).unwrap_or(0))
        } else {
            be16(self.b, 0).unwrap_or(0)
        }
    }
    /// Link-layer address length, at most 8.
    pub fn addr_len(&self) -> u8 {
        if self.v2 {
            u8_at(self.b, 11).unwrap_or(0).min(8)
        } else {
            be16(self.b, 4).unwrap_or(0).min(8) as u8
        }
    }
    pub fn addr(&self) -> [u8; 8] {
        array(self.b, if self.v2 { 12 } else { 6 }).unwrap_or([0; 8])
    }
}

impl SllRepr {
    fn of(v: Sll<'_>) -> Self {
        SllRepr {
            version: if v.v2 { 2 } else { 1 },
            pkt_type: v.pkt_type(),
            arphrd: v.arphrd(),
            addr_len: v.addr_len(),
            addr: v.addr(),
            protocol: v.protocol(),
            ifindex: v.ifindex(),
        }
    }
    pub fn parse_v1(b: &[u8]) -> Result<Self, Error> {
        Ok(Self::of(Sll::new_checked_v1(b)?))
    }
    pub fn parse_v2(b: &[u8]) -> Result<Self, Error> {
        Ok(Self::of(Sll::new_checked_v2(b)?))
    }
    pub fn header_len(&self) -> usize {
        if self.version == 2 {
            V2_LEN
        } else {
            V1_LEN
        }
    }
    /// Writes the header for its version into `b[..header_len()]`.
    pub fn emit(&self, b: &mut [u8]) {
        if self.version == 2 {
            b[0..2].copy_from_slice(&self.protocol.to_be_bytes());
            b[2..4].fill(0);
            b[4..8].copy_from_slice(&self.ifindex.unwrap_or(0).to_be_bytes());
            b[8..10].copy_from_slice(&self.arphrd.to_be_bytes());
            b[10] = self.pkt_type as u8;
            b[11] = self.addr_len;
            b[12..20].copy_from_slice(&self.addr);
        } else {
            b[0..2].copy_from_slice(&self.pkt_type.to_be_bytes());
            b[2..4].copy_from_slice(&self.arphrd.to_be_bytes());
            b[4..6].copy_from_slice(&u16::from(self.addr_len).to_be_bytes());
            b[6..14].copy_from_slice(&self.addr);
            b[14..16].copy_from_slice(&self.protocol.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        for version in [1u8, 2] {
            let r = SllRepr {
                version,
                pkt_type: 4,
                arphrd: 1,
                addr_len: 6,
                addr: [2, 0, 0xc6, 0x13, 8, 0xb, 0, 0],
                protocol: 0x0806,
                ifindex: (version == 2).then_some(7),
            };
            let mut b = [0u8; V2_LEN];
            r.emit(&mut b);
            let p = |s: &[u8]| {
                if version == 2 {
                    SllRepr::parse_v2(s)
                } else {
                    SllRepr::parse_v1(s)
                }
            };
            assert_eq!(p(&b[..r.header_len()]).unwrap(), r);
            for n in 0..r.header_len() {
                assert!(p(&b[..n]).is_err());
            }
        }
    }
}
