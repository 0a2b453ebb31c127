//! RoCE v2 Congestion Notification Packet body (IBTA Annex A17.9.2): opcode 0x81 in the
//! BTH, then 16 reserved bytes, then the ICRC. The BTH of a CNP has P_Key 0xFFFF,
//! BECN = 1, PSN 0 and DestQP = the QP that must slow down.

use crate::Error;

pub const LEN: usize = 16;

/// A zero-copy view of the 16 reserved bytes of a CNP.
#[derive(Clone, Copy, Debug)]
pub struct Cnp<'a>(&'a [u8]);

impl<'a> Cnp<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Cnp(&b[..LEN]))
    }
    pub fn reserved(&self) -> &'a [u8] {
        self.0
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CnpRepr {
    /// True when every reserved byte is zero, as the spec requires.
    pub reserved_zero: bool,
}

impl CnpRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Cnp::new_checked(b)?;
        Ok(CnpRepr {
            reserved_zero: v.reserved().iter().all(|&x| x == 0),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[..LEN].fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parse_and_prefixes() {
        let b = [0u8; LEN];
        assert!(CnpRepr::parse(&b).unwrap().reserved_zero);
        for n in 0..LEN {
            assert!(CnpRepr::parse(&b[..n]).is_err());
        }
    }
}
