//! ARP (RFC 826) for IPv4 over any hardware (Ethernet: 6-byte, IPoIB: 20-byte addresses).
//!
//! ```text
//! | htype (2) | ptype (2) | hlen (1) | plen (1) | oper (2) |
//! | sender HW (hlen) | sender IP (4) | target HW (hlen) | target IP (4) |
//! ```
//! Only IPv4 protocol addresses (plen 4) are decoded; others are "unsupported".

use crate::bytes::{be16, u8_at};
use crate::Error;
use core::net::Ipv4Addr;

pub const FIXED_LEN: usize = 8;
pub const MAX_HLEN: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArpOp {
    Request,
    Reply,
    Other(u16),
}

/// A zero-copy view of an IPv4 ARP message; construction checks the lengths the
/// header's own hlen / plen imply.
#[derive(Clone, Copy, Debug)]
pub struct Arp<'a> {
    b: &'a [u8],
    h: usize,
}

impl<'a> Arp<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, FIXED_LEN)?;
        let hlen = u8_at(b, 4).unwrap_or(0);
        if usize::from(hlen) > MAX_HLEN {
            return Err(Error::Malformed(
                "ARP hardware address longer than 20 bytes",
            ));
        }
        if u8_at(b, 5).unwrap_or(0) != 4 {
            return Err(Error::Unsupported("ARP for a protocol other than IPv4"));
        }
        let h = usize::from(hlen);
        let len = FIXED_LEN + 2 * (h + 4);
        Error::need(b, len)?;
        Ok(Arp { b: &b[..len], h })
    }
    pub fn htype(&self) -> u16 {
        be16(self.b, 0).unwrap_or(0)
    }
    pub fn ptype(&self) -> u16 {
        be16(self.b, 2).unwrap_or(0)
    }
    pub fn op(&self) -> ArpOp {
        match be16(self.b, 6).unwrap_or(0) {
            1 => ArpOp::Request,
            2 => ArpOp::Reply,
            n => ArpOp::Other(n),
        }
    }
    pub fn sender_hw(&self) -> &'a [u8] {
        &self.b[FIXED_LEN..FIXED_LEN + self.h]
    }
    pub fn sender_ip(&self) -> Ipv4Addr {
        self.ip_at(FIXED_LEN + self.h)
    }
    pub fn target_hw(&self) -> &'a [u8] {
        let o = FIXED_LEN + self.h + 4;
        &self.b[o..o + self.h]
    }
    pub fn target_ip(&self) -> Ipv4Addr {
        self.ip_at(FIXED_LEN + 2 * self.h + 4)
    }
    fn ip_at(&self, o: usize) -> Ipv4Addr {
        let s = &self.b[o..o + 4];
        Ipv4Addr::new(s[0], s[1], s[2], s[3])
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArpRepr {
    pub htype: u16,
    pub ptype: u16,
    pub hlen: u8,
    pub op: ArpOp,
    pub sender_hw: [u8; MAX_HLEN],
    pub sender_ip: Ipv4Addr,
    pub target_hw: [u8; MAX_HLEN],
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Total length of this ARP message.
    pub fn len(&self) -> usize {
        FIXED_LEN + 2 * (usize::from(self.hlen) + 4)
    }
    pub fn is_empty(&self) -> bool {
        false
    }
    /// A gratuitous ARP announces its own address: sender IP = target IP.
    pub fn is_gratuitous(&self) -> bool {
        self.sender_ip == self.target_ip
    }
    pub fn sender_hw(&self) -> &[u8] {
        &self.sender_hw[..usize::from(self.hlen)]
    }
    pub fn target_hw(&self) -> &[u8] {
        &self.target_hw[..usize::from(self.hlen)]
    }

    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Arp::new_checked(b)?;
        let mut sender_hw = [0u8; MAX_HLEN];
        let mut target_hw = [0u8; MAX_HLEN];
        sender_hw[..v.h].copy_from_slice(v.sender_hw());
        target_hw[..v.h].copy_from_slice(v.target_hw());
        Ok(ArpRepr {
            htype: v.htype(),
            ptype: v.ptype(),
            hlen: v.h as u8,
            op: v.op(),
            sender_hw,
            sender_ip: v.sender_ip(),
            target_hw,
            target_ip: v.target_ip(),
        })
    }

    /// Writes the message into `b[..self.len()]`.
    pub fn emit(&self, b: &mut [u8]) {
        let h = usize::from(self.hlen);
        b[0..2].copy_from_slice(&self.htype.to_be_bytes());
        b[2..4].copy_from_slice(&self.ptype.to_be_bytes());
        b[4] = self.hlen;
        b[5] = 4;
        let op = match self.op {
            ArpOp::Request => 1,
            ArpOp::Reply => 2,
            ArpOp::Other(n) => n,
        };
        b[6..8].copy_from_slice(&op.to_be_bytes());
        let mut o = FIXED_LEN;
        b[o..o + h].copy_from_slice(&self.sender_hw[..h]);
        o += h;
        b[o..o + 4].copy_from_slice(&self.sender_ip.octets());
        o += 4;
        b[o..o + h].copy_from_slice(&self.target_hw[..h]);
        o += h;
        b[o..o + 4].copy_from_slice(&self.target_ip.octets());
    }

    /// An Ethernet/IPv4 ARP message.
    pub fn ethernet(op: ArpOp, smac: [u8; 6], sip: Ipv4Addr, tmac: [u8; 6], tip: Ipv4Addr) -> Self {
        let mut sender_hw = [0u8; MAX_HLEN];
        sender_hw[..6].copy_from_slice(&smac);
        let mut target_hw = [0u8; MAX_HLEN];
        target_hw[..6].copy_from_slice(&tmac);
        ArpRepr {
            htype: 1,
            ptype: 0x0800,
            hlen: 6,
            op,
            sender_hw,
            sender_ip: sip,
            target_hw,
            target_ip: tip,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = ArpRepr::ethernet(
            ArpOp::Request,
            [0xee; 6],
            Ipv4Addr::new(198, 19, 8, 1),
            [0; 6],
            Ipv4Addr::new(198, 18, 1, 5),
        );
        let mut b = [0u8; 28];
        r.emit(&mut b);
        let p = ArpRepr::parse(&b).unwrap();
        assert_eq!(p, r);
        assert!(!p.is_gratuitous());
        for n in 0..28 {
            assert!(ArpRepr::parse(&b[..n]).is_err());
        }
        b[4] = 21;
        assert!(matches!(ArpRepr::parse(&b), Err(Error::Malformed(_))));
    }
}
