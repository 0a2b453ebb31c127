//! VXLAN (RFC 7348), UDP port 4789: 8 bytes, then an Ethernet frame.
//!
//! ```text
//! | flags (8, I = 0x08) | reserved (24) | VNI (24) | reserved (8) |
//! ```
//!
//! The I flag must be set for the VNI to be valid (RFC 7348 §5); a header without it
//! is malformed here (rocetap has nothing to name the segment by).

use crate::bytes::{be16, be24, u8_at};
use crate::Error;

pub const PORT: u16 = 4789;
pub const LEN: usize = 8;
pub const FLAG_I: u8 = 0x08;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VxlanRepr {
    /// The first 16 bits (`vxlan.flags`).
    pub flags: u16,
    /// `vxlan.vni`.
    pub vni: u32,
}

impl VxlanRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        let flags = be16(b, 0).unwrap_or(0);
        if u8_at(b, 0).unwrap_or(0) & FLAG_I == 0 {
            return Err(Error::Malformed(
                "VXLAN header without the I (VNI valid) flag",
            ));
        }
        Ok(VxlanRepr {
            flags,
            vni: be24(b, 4).unwrap_or(0),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[0..2].copy_from_slice(&self.flags.to_be_bytes());
        b[2..4].copy_from_slice(&[0, 0]);
        b[4..7].copy_from_slice(&self.vni.to_be_bytes()[1..]);
        b[7] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_every_cut() {
        let r = VxlanRepr {
            flags: 0x0800,
            vni: 0x00ab_cdef,
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(b, [8, 0, 0, 0, 0xab, 0xcd, 0xef, 0]);
        assert_eq!(VxlanRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(matches!(
                VxlanRepr::parse(&b[..n]),
                Err(Error::Truncated { .. })
            ));
        }
        b[0] = 0;
        assert!(matches!(VxlanRepr::parse(&b), Err(Error::Malformed(_))));
    }
}
