//! MAC Control frames (EtherType 0x8808): IEEE 802.3x PAUSE (opcode 0x0001) and
//! IEEE 802.1Qbb Priority-based Flow Control (opcode 0x0101).
//!
//! ```text
//! PAUSE: | opcode 0x0001 (2) | quanta (2) |
//! PFC:   | opcode 0x0101 (2) | class-enable vector (2) | quanta[0..8] (8 x 2) |
//! ```
//! One quantum is 512 bit times. A class whose enable bit is set and whose quanta is 0
//! is resumed ("XON").

use crate::bytes::be16;
use crate::Error;

pub const OPCODE_PAUSE: u16 = 0x0001;
pub const OPCODE_PFC: u16 = 0x0101;
pub const PAUSE_LEN: usize = 4;
pub const PFC_LEN: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PauseRepr {
    /// 802.3x: pause every priority.
    Global { quanta: u16 },
    /// 802.1Qbb: `enable` bit n enables `quanta[n]` for priority n.
    Pfc { enable: u8, quanta: [u16; 8] },
}

impl PauseRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        Error::need(b, 2)?;
        match be16(b, 0).unwrap_or(0) {
            OPCODE_PAUSE => {
                Error::need(b, PAUSE_LEN)?;
                Ok(PauseRepr::Global {
                    quanta: be16(b, 2).unwrap_or(0),
                })
            }
            OPCODE_PFC => {
                Error::need(b, PFC_LEN)?;
                let mut quanta = [0u16; 8];
                for (i, q) in quanta.iter_mut().enumerate() {
                    *q = be16(b, 4 + 2 * i).unwrap_or(0);
                }
                Ok(PauseRepr::Pfc {
                    enable: (be16(b, 2).unwrap_or(0) & 0xff) as u8,
                    quanta,
                })
            }
            _ => Err(Error::Unsupported("MAC control opcode")),
        }
    }
    pub fn len(&self) -> usize {
        match self {
            PauseRepr::Global { .. } => PAUSE_LEN,
            PauseRepr::Pfc { .. } => PFC_LEN,
        }
    }
    pub fn is_empty(&self) -> bool {
        false
    }
    pub fn emit(&self, b: &mut [u8]) {
        match *self {
            PauseRepr::Global { quanta } => {
                b[0..2].copy_from_slice(&OPCODE_PAUSE.to_be_bytes());
                b[2..4].copy_from_slice(&quanta.to_be_bytes());
            }
            PauseRepr::Pfc { enable, quanta } => {
                b[0..2].copy_from_slice(&OPCODE_PFC.to_be_bytes());
                b[2..4].copy_from_slice(&u16::from(enable).to_be_bytes());
                for (i, q) in quanta.iter().enumerate() {
                    b[4 + 2 * i..6 + 2 * i].copy_from_slice(&q.to_be_bytes());
                }
            }
        }
    }
    /// Pause time of priority `p` in quanta (0 when not paused by this frame).
    pub fn quanta_for(&self, p: u8) -> u16 {
        match *self {
            PauseRepr::Global { quanta } => quanta,
            PauseRepr::Pfc { enable, quanta } => {
                if p < 8 && enable & (1 << p) != 0 {
                    quanta[usize::from(p)]
                } else {
                    0
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        for r in [
            PauseRepr::Global { quanta: 0xffff },
            PauseRepr::Pfc {
                enable: 0x08,
                quanta: [0, 0, 0, 0xffff, 0, 0, 0, 0],
            },
        ] {
            let mut b = [0u8; PFC_LEN];
            r.emit(&mut b);
            assert_eq!(PauseRepr::parse(&b[..r.len()]).unwrap(), r);
            for n in 0..r.len() {
                assert!(PauseRepr::parse(&b[..n]).is_err());
            }
        }
        let p = PauseRepr::Pfc {
            enable: 0x08,
            quanta: [9, 0, 0, 100, 0, 0, 0, 0],
        };
        assert_eq!(p.quanta_for(3), 100);
        assert_eq!(p.quanta_for(0), 0);
    }
}
