//! Domain integers as newtypes: queue pair numbers, 24-bit packet sequence numbers with
//! serial arithmetic (IBTA 9.7.1), message sequence numbers and partition keys.
//!
//! `Psn` comparisons use the signed 24-bit difference, so wraparound through 0xFFFFFF
//! is ordinary and never looks like a jump of 16 million.

use core::fmt;

/// A 24-bit queue pair number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Qpn(pub u32);

impl Qpn {
    pub const MASK: u32 = 0x00ff_ffff;
    pub fn new(v: u32) -> Self {
        Qpn(v & Self::MASK)
    }
}

impl fmt::Display for Qpn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:06x}", self.0)
    }
}

/// A 24-bit packet sequence number with serial (modulo 2^24) arithmetic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Psn(pub u32);

impl Psn {
    pub const MASK: u32 = 0x00ff_ffff;
    pub const MODULUS: u32 = 1 << 24;

    pub fn new(v: u32) -> Self {
        Psn(v & Self::MASK)
    }

    /// `self + n` modulo 2^24.
    #[inline]
    pub fn plus(self, n: u32) -> Psn {
        Psn(self.0.wrapping_add(n) & Self::MASK)
    }

    /// `self - n` modulo 2^24.
    #[inline]
    pub fn minus(self, n: u32) -> Psn {
        Psn(self.0.wrapping_sub(n) & Self::MASK)
    }

    /// Signed distance `self - other` in the range -2^23 .. 2^23-1: positive when `self`
    /// is ahead of `other`.
    #[inline]
    pub fn diff(self, other: Psn) -> i32 {
        ((self.0.wrapping_sub(other.0)) << 8) as i32 >> 8
    }

    /// The next PSN.
    #[inline]
    pub fn next(self) -> Psn {
        self.plus(1)
    }
}

impl fmt::Display for Psn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A 24-bit message sequence number (AETH).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Msn(pub u32);

/// A 16-bit partition key; bit 15 is the full-membership bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PKey(pub u16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_serial_arithmetic_wraps() {
        assert_eq!(Psn(0xff_ffff).next(), Psn(0));
        assert_eq!(Psn(0).diff(Psn(0xff_ffff)), 1);
        assert_eq!(Psn(0xff_ffff).diff(Psn(0)), -1);
        assert_eq!(Psn(5).diff(Psn(3)), 2);
        assert_eq!(Psn(3).diff(Psn(5)), -2);
        assert_eq!(Psn(0x80_0000).diff(Psn(0)), -0x80_0000);
        assert_eq!(Psn(0x7f_ffff).diff(Psn(0)), 0x7f_ffff);
        assert_eq!(Psn(2).minus(5), Psn(0xff_fffd));
    }
}
