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

/// A zero-copy view of a MAC control frame body (after the EtherType).
#[derive(Clone, Copy, Debug)]
pub struct MacControl<'a>(&'a [u8]);

impl<'a> MacControl<'a> {
    /// Checks the length the opcode needs (an unknown opcode needs only itself).
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, 2)?;
        let need = match be16(b, 0).unwrap_or(0) {
            OPCODE_PAUSE => PAUSE_LEN,
            OPCODE_PFC => PFC_LEN,
            _ => 2,
        };
        Error::need(b, need)?;
        Ok(MacControl(&b[..need]))
    }
    pub fn opcode(&self) -> u16 {
        be16(self.0, 0).unwrap_or(0)
    }
    /// PAUSE quanta, or the PFC class-enable vector.
    pub fn word1(&self) -> u16 {
        be16(self.0, 2).unwrap_or(0)
    }
    /// PFC quanta of priority `p` (0-7).
    pub fn pfc_quanta(&self, p: usize) -> u16 {
        be16(self.0, 4 + 2 * p).unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PauseRepr {
    /// 802.3x: pause every priority.
    Global { quanta: u16 },
    /// 802.1Qbb: `enable` bit n enables `quanta[n]` for priority n.
    Pfc { enable: u8, quanta: [u16; 8] },
}

impl PauseRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = MacControl::new_checked(b)?;
        match v.opcode() {
            OPCODE_PAUSE => Ok(PauseRepr::Global { quanta: v.word1() }),
            OPCODE_PFC => {
                let mut quanta = [0u16; 8];
                for (i, q) in quanta.iter_mut().enumerate() {
                    *q = v.pfc_quanta(i);
                }
                Ok(PauseRepr::Pfc {
                    enable: (v.word1() & 0xff) as u8,
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
