//! ERSPAN type II and type III headers (draft-foschiano-erspan-03), carried in GRE with
//! protocol 0x88BE (type II; type I has no header and no GRE sequence number) and 0x22EB
//! (type III). An Ethernet frame follows the header: the mirrored packet.
//!
//! ```text
//! II:  | ver=1 (4) | VLAN (12) | COS (3) | En (2) | T | session ID (10) |
//!      | reserved (12)        | index (20)                            |
//! III: | ver=2 (4) | VLAN (12) | COS (3) | BSO (2) | T | session ID (10) |
//!      | timestamp (32)                                                |
//!      | SGT (16) | P | FT (5) | hw ID (6) | D | gra (2) | O            |
//!      [ platform ID (6) | platform-specific info (58) ]   if O
//! ```

use crate::bytes::{be16, be32, be64};
use crate::Error;

pub const LEN_II: usize = 8;
pub const LEN_III: usize = 12;
/// The optional platform-specific subheader of type III.
pub const PLATFORM_LEN: usize = 8;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErspanRepr {
    /// `erspan.version`: 1 for type II, 2 for type III.
    pub version: u8,
    /// `erspan.vlan`: the original VLAN of the mirrored frame.
    pub vlan: u16,
    /// `erspan.cos`.
    pub cos: u8,
    /// `erspan.encap` (type II) or `erspan.bso` (type III).
    pub encap_bso: u8,
    /// `erspan.truncated`: the switch cut the mirrored frame.
    pub truncated: bool,
    /// `erspan.spanid`: the mirror session.
    pub session: u16,
    /// `erspan.index` (type II): the source port / direction index.
    pub index: u32,
    /// `erspan.timestamp` (type III).
    pub timestamp: u32,
    /// `erspan.sgt` (type III).
    pub sgt: u16,
    /// `erspan.p` (type III): the frame is an Ethernet PDU.
    pub p: bool,
    /// `erspan.ft` (type III): frame type, 0 = Ethernet.
    pub ft: u8,
    /// `erspan.hw` (type III): the hardware (ASIC) that mirrored it.
    pub hw_id: u8,
    /// `erspan.direction` (type III): false = ingress, true = egress.
    pub egress: bool,
    /// `erspan.gra` (type III): timestamp granularity.
    pub granularity: u8,
    /// `erspan.o` (type III): the platform subheader follows.
    pub o: bool,
    /// `erspan.platid` and the 58 bits after it, when O is set.
    pub platform: Option<(u8, u64)>,
}

impl ErspanRepr {
    pub fn is_type_iii(&self) -> bool {
        self.version == 2
    }
    /// Header length in bytes (8, 12 or 20).
    pub fn header_len(&self) -> usize {
        match (self.version, self.platform.is_some()) {
            (1, _) => LEN_II,
            (_, false) => LEN_III,
            (_, true) => LEN_III + PLATFORM_LEN,
        }
    }

    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        Error::need(b, 4)?;
        let w0 = be32(b, 0).unwrap_or(0);
        let mut r = ErspanRepr {
            version: (w0 >> 28) as u8,
            vlan: ((w0 >> 16) & 0xfff) as u16,
            cos: ((w0 >> 13) & 7) as u8,
            encap_bso: ((w0 >> 11) & 3) as u8,
            truncated: w0 & 0x400 != 0,
            session: (w0 & 0x3ff) as u16,
            ..Default::default()
        };
        match r.version {
            1 => {
                Error::need(b, LEN_II)?;
                r.index = be32(b, 4).unwrap_or(0) & 0xf_ffff;
            }
            2 => {
                Error::need(b, LEN_III)?;
                r.timestamp = be32(b, 4).unwrap_or(0);
                r.sgt = be16(b, 8).unwrap_or(0);
                let w = be16(b, 10).unwrap_or(0);
                r.p = w & 0x8000 != 0;
                r.ft = ((w >> 10) & 0x1f) as u8;
                r.hw_id = ((w >> 4) & 0x3f) as u8;
                r.egress = w & 0x8 != 0;
                r.granularity = ((w >> 1) & 3) as u8;
                r.o = w & 1 != 0;
                if r.o {
                    Error::need(b, LEN_III + PLATFORM_LEN)?;
                    let p = be64(b, LEN_III).unwrap_or(0);
                    r.platform = Some(((p >> 58) as u8, p & ((1 << 58) - 1)));
                }
            }
            _ => return Err(Error::Unsupported("ERSPAN version")),
        }
        Ok(r)
    }

    /// Writes `header_len()` bytes.
    pub fn emit(&self, b: &mut [u8]) {
        let w0 = (u32::from(self.version & 0xf) << 28)
            | (u32::from(self.vlan & 0xfff) << 16)
            | (u32::from(self.cos & 7) << 13)
            | (u32::from(self.encap_bso & 3) << 11)
            | (u32::from(self.truncated) << 10)
            | u32::from(self.session & 0x3ff);
        b[0..4].copy_from_slice(&w0.to_be_bytes());
        if self.version == 1 {
            b[4..8].copy_from_slice(&(self.index & 0xf_ffff).to_be_bytes());
            return;
        }
        b[4..8].copy_from_slice(&self.timestamp.to_be_bytes());
        b[8..10].copy_from_slice(&self.sgt.to_be_bytes());
        let w = (u16::from(self.p) << 15)
            | (u16::from(self.ft & 0x1f) << 10)
            | (u16::from(self.hw_id & 0x3f) << 4)
            | (u16::from(self.egress) << 3)
            | (u16::from(self.granularity & 3) << 1)
            | u16::from(self.platform.is_some());
        b[10..12].copy_from_slice(&w.to_be_bytes());
        if let Some((id, info)) = self.platform {
            let p = (u64::from(id & 0x3f) << 58) | (info & ((1 << 58) - 1));
            b[12..20].copy_from_slice(&p.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ii() -> ErspanRepr {
        ErspanRepr {
            version: 1,
            vlan: 100,
            cos: 3,
            encap_bso: 2,
            truncated: true,
            session: 0x3a5,
            index: 0xa_bcde,
            ..Default::default()
        }
    }

    fn iii(platform: Option<(u8, u64)>) -> ErspanRepr {
        ErspanRepr {
            version: 2,
            vlan: 0xfff,
            cos: 5,
            encap_bso: 1,
            truncated: false,
            session: 7,
            timestamp: 0xdead_beef,
            sgt: 0x1234,
            p: true,
            ft: 0,
            hw_id: 0x2a,
            egress: true,
            granularity: 3,
            o: platform.is_some(),
            platform,
            ..Default::default()
        }
    }

    #[test]
    fn round_trip_and_every_cut() {
        for r in [ii(), iii(None), iii(Some((3, 0x2_0000_0000_0001)))] {
            let mut b = [0u8; LEN_III + PLATFORM_LEN];
            let n = r.header_len();
            r.emit(&mut b);
            assert_eq!(ErspanRepr::parse(&b[..n]).unwrap(), r, "{r:?}");
            for cut in 0..n {
                assert!(
                    matches!(ErspanRepr::parse(&b[..cut]), Err(Error::Truncated { .. })),
                    "{r:?} cut {cut}"
                );
            }
        }
    }

    #[test]
    fn bit_layout() {
        let mut b = [0u8; 8];
        ii().emit(&mut b);
        // ver 1, VLAN 100, COS 3, En 2, T, session 0x3a5.
        assert_eq!(b, [0x10, 0x64, 0x77, 0xa5, 0, 0x0a, 0xbc, 0xde]);
        let mut b = [0u8; 12];
        iii(None).emit(&mut b);
        assert_eq!(&b[10..12], &[0x82, 0xae]);
    }

    #[test]
    fn unknown_version_is_unsupported() {
        assert!(matches!(
            ErspanRepr::parse(&[0x30, 0, 0, 0, 0, 0, 0, 0]),
            Err(Error::Unsupported(_))
        ));
    }
}
