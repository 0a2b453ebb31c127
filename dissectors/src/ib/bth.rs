//! Base Transport Header (IBTA Vol. 1, 9.2), 12 bytes, the first header of every RoCE
//! and InfiniBand transport packet.
//!
//! ```text
//!  0               1               2               3
//! +---------------+-+-+---+-------+-------------------------------+
//! |    OpCode     |S|M|Pad| TVer  |            P_Key              |
//! +-+-+-----------+-+-+---+-------+-------------------------------+
//! |F|B|   resv6   |                  DestQP                       |
//! +-+-------------+-----------------------------------------------+
//! |A|   resv7     |                    PSN                        |
//! +-+-------------+-----------------------------------------------+
//! ```
//! S = SolicitedEvent, M = MigReq, Pad = PadCnt, F = FECN, B = BECN, A = AckReq.

use super::opcode::Opcode;
use crate::bytes::{be16, be24, put24, u8_at};
use crate::types::{PKey, Psn, Qpn};
use crate::Error;

pub const OPCODE: usize = 0;
pub const FLAGS: usize = 1;
pub const PKEY: usize = 2;
pub const FECN_BECN: usize = 4;
pub const DEST_QP: usize = 5;
pub const ACK_REQ: usize = 8;
pub const PSN: usize = 9;
pub const LEN: usize = 12;

/// A zero-copy view of a BTH; construction checks the length.
#[derive(Clone, Copy, Debug)]
pub struct Bth<'a>(&'a [u8]);

impl<'a> Bth<'a> {
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Bth(&b[..LEN]))
    }
    fn byte(&self, off: usize) -> u8 {
        u8_at(self.0, off).unwrap_or(0)
    }
    pub fn opcode(&self) -> Opcode {
        Opcode(self.byte(OPCODE))
    }
    pub fn se(&self) -> bool {
        self.byte(FLAGS) & 0x80 != 0
    }
    pub fn mig_req(&self) -> bool {
        self.byte(FLAGS) & 0x40 != 0
    }
    pub fn pad_cnt(&self) -> u8 {
        (self.byte(FLAGS) >> 4) & 0x3
    }
    pub fn tver(&self) -> u8 {
        self.byte(FLAGS) & 0x0f
    }
    pub fn pkey(&self) -> PKey {
        PKey(be16(self.0, PKEY).unwrap_or(0))
    }
    pub fn fecn(&self) -> bool {
        self.byte(FECN_BECN) & 0x80 != 0
    }
    pub fn becn(&self) -> bool {
        self.byte(FECN_BECN) & 0x40 != 0
    }
    pub fn resv6(&self) -> u8 {
        self.byte(FECN_BECN) & 0x3f
    }
    pub fn dest_qp(&self) -> Qpn {
        Qpn(be24(self.0, DEST_QP).unwrap_or(0))
    }
    pub fn ack_req(&self) -> bool {
        self.byte(ACK_REQ) & 0x80 != 0
    }
    pub fn psn(&self) -> Psn {
        Psn(be24(self.0, PSN).unwrap_or(0))
    }
}

/// The owned, readable form of a BTH.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BthRepr {
    pub opcode: Opcode,
    pub se: bool,
    pub mig_req: bool,
    pub pad_cnt: u8,
    pub tver: u8,
    pub pkey: PKey,
    pub fecn: bool,
    pub becn: bool,
    pub dest_qp: Qpn,
    pub ack_req: bool,
    pub psn: Psn,
}

impl BthRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Bth::new_checked(b)?;
        Ok(BthRepr {
            opcode: v.opcode(),
            se: v.se(),
            mig_req: v.mig_req(),
            pad_cnt: v.pad_cnt(),
            tver: v.tver(),
            pkey: v.pkey(),
            fecn: v.fecn(),
            becn: v.becn(),
            dest_qp: v.dest_qp(),
            ack_req: v.ack_req(),
            psn: v.psn(),
        })
    }

    /// Writes the header into `b[..LEN]`; reserved bits are zero.
    pub fn emit(&self, b: &mut [u8]) {
        b[OPCODE] = self.opcode.0;
        b[FLAGS] = (u8::from(self.se) << 7)
            | (u8::from(self.mig_req) << 6)
            | ((self.pad_cnt & 3) << 4)
            | (self.tver & 0xf);
        b[PKEY..PKEY + 2].copy_from_slice(&self.pkey.0.to_be_bytes());
        b[FECN_BECN] = (u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6);
        put24(b, DEST_QP, self.dest_qp.0);
        b[ACK_REQ] = u8::from(self.ack_req) << 7;
        put24(b, PSN, self.psn.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: [u8; 12] = [
        0x4a, 0x40, 0xff, 0xff, 0x00, 0x80, 0x7f, 0xff, 0x80, 0x04, 0x40, 0xfc,
    ];

    #[test]
    fn parse_fields() {
        let r = BthRepr::parse(&BYTES).unwrap();
        assert_eq!(r.opcode, Opcode(0x4a));
        assert!(!r.se && r.mig_req);
        assert_eq!(r.pad_cnt, 0);
        assert_eq!(r.pkey, PKey(0xffff));
        assert_eq!(r.dest_qp, Qpn(0x807fff));
        assert!(r.ack_req);
        assert_eq!(r.psn, Psn(0x0440fc));
    }

    #[test]
    fn emit_round_trips() {
        let r = BthRepr {
            opcode: Opcode(0x81),
            se: true,
            pad_cnt: 3,
            tver: 0,
            pkey: PKey(0xffff),
            fecn: true,
            becn: true,
            dest_qp: Qpn(0xabcdef),
            ack_req: true,
            psn: Psn(0xffffff),
            mig_req: false,
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(BthRepr::parse(&b).unwrap(), r);
    }

    #[test]
    fn every_prefix_is_truncated() {
        for n in 0..LEN {
            assert!(matches!(
                BthRepr::parse(&BYTES[..n]),
                Err(Error::Truncated { .. })
            ));
        }
    }
}
