//! ACK Extended Transport Header (IBTA 9.3.5), 4 bytes: the responder's verdict.
//!
//! ```text
//! +---------------+-----------------------------------------------+
//! |   Syndrome    |                 MSN (24 bits)                 |
//! +---------------+-----------------------------------------------+
//! Syndrome: 0 | kind (2) | value (5)
//!   kind 00 ACK (value = credit count), 01 RNR NAK (value = timer code),
//!   kind 11 NAK (value = NAK code), 10 reserved.
//! ```

use crate::bytes::{be24, put24, u8_at};
use crate::types::Msn;
use crate::Error;

pub const SYNDROME: usize = 0;
pub const MSN: usize = 1;
pub const LEN: usize = 4;

/// NAK codes (syndrome 0x60 + code).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NakCode {
    PsnSequenceError,
    InvalidRequest,
    RemoteAccessError,
    RemoteOperationalError,
    InvalidRdRequest,
    Unknown(u8),
}

impl NakCode {
    pub fn from_value(v: u8) -> Self {
        match v {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            n => NakCode::Unknown(n),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            NakCode::PsnSequenceError => "PSN sequence error",
            NakCode::InvalidRequest => "invalid request",
            NakCode::RemoteAccessError => "remote access error",
            NakCode::RemoteOperationalError => "remote operational error",
            NakCode::InvalidRdRequest => "invalid RD request",
            NakCode::Unknown(_) => "reserved NAK code",
        }
    }
}

/// What the syndrome says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AethKind {
    /// ACK with a credit count (31 = no credit information).
    Ack {
        credits: u8,
    },
    /// Receiver not ready; `timer` is the RNR timer code.
    RnrNak {
        timer: u8,
    },
    Nak(NakCode),
    Reserved(u8),
}

impl AethKind {
    pub fn from_syndrome(s: u8) -> Self {
        let v = s & 0x1f;
        match (s >> 5) & 0x7 {
            0 => AethKind::Ack { credits: v },
            1 => AethKind::RnrNak { timer: v },
            3 => AethKind::Nak(NakCode::from_value(v)),
            _ => AethKind::Reserved(s),
        }
    }
}

/// RNR timer code to microseconds (IBTA table 45). Code 0 is the longest, 655.36 ms.
pub fn rnr_timer_us(code: u8) -> f64 {
    const T: [f64; 32] = [
        655360.0, 10.0, 20.0, 30.0, 40.0, 60.0, 80.0, 120.0, 160.0, 240.0, 320.0, 480.0, 640.0,
        960.0, 1280.0, 1920.0, 2560.0, 3840.0, 5120.0, 7680.0, 10240.0, 15360.0, 20480.0, 30720.0,
        40960.0, 61440.0, 81920.0, 122880.0, 163840.0, 245760.0, 327680.0, 491520.0,
    ];
    T[usize::from(code & 0x1f)]
}

#[derive(Clone, Copy, Debug)]
pub struct Aeth<'a>(&'a [u8]);

impl<'a> Aeth<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Aeth(&b[..LEN]))
    }
    pub fn syndrome(&self) -> u8 {
        u8_at(self.0, SYNDROME).unwrap_or(0)
    }
    pub fn msn(&self) -> Msn {
        Msn(be24(self.0, MSN).unwrap_or(0))
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AethRepr {
    pub syndrome: u8,
    pub msn: Msn,
}

impl AethRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Aeth::new_checked(b)?;
        Ok(AethRepr {
            syndrome: v.syndrome(),
            msn: v.msn(),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[SYNDROME] = self.syndrome;
        put24(b, MSN, self.msn.0);
    }
    pub fn kind(&self) -> AethKind {
        AethKind::from_syndrome(self.syndrome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn kinds() {
        assert_eq!(AethKind::from_syndrome(0x1f), AethKind::Ack { credits: 31 });
        assert_eq!(
            AethKind::from_syndrome(0x2e),
            AethKind::RnrNak { timer: 14 }
        );
        assert_eq!(
            AethKind::from_syndrome(0x60),
            AethKind::Nak(NakCode::PsnSequenceError)
        );
        assert_eq!(
            AethKind::from_syndrome(0x64),
            AethKind::Nak(NakCode::InvalidRdRequest)
        );
        assert_eq!(AethKind::from_syndrome(0x40), AethKind::Reserved(0x40));
        assert_eq!(rnr_timer_us(0), 655360.0);
        assert_eq!(rnr_timer_us(1), 10.0);
        assert_eq!(rnr_timer_us(31), 491520.0);
    }
    #[test]
    fn round_trip_and_prefixes() {
        let r = AethRepr {
            syndrome: 0x60,
            msn: Msn(0x123456),
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(b, [0x60, 0x12, 0x34, 0x56]);
        assert_eq!(AethRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(AethRepr::parse(&b[..n]).is_err());
        }
    }
}
