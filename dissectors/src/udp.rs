//! UDP header (RFC 768), 8 bytes, read through etherparse. RoCE v2 uses destination port
//! 4791; the source port is ECMP entropy, not a QP identifier, and the checksum is 0.
//!
//! ```text
//! | source port (2) | destination port (2) | length (2) | checksum (2) |
//! ```

use crate::Error;
use etherparse::UdpHeaderSlice;

pub const LEN: usize = 8;
pub const ROCE_V2_PORT: u16 = 4791;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub length: u16,
    pub checksum: u16,
}

impl UdpRepr {
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let h = UdpHeaderSlice::from_slice(b).map_err(|e| Error::Truncated {
            need: e.required_len,
            have: e.len,
        })?;
        Ok(UdpRepr {
            src_port: h.source_port(),
            dst_port: h.destination_port(),
            length: h.length(),
            checksum: h.checksum(),
        })
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        b[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        b[4..6].copy_from_slice(&self.length.to_be_bytes());
        b[6..8].copy_from_slice(&self.checksum.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_and_prefixes() {
        let r = UdpRepr {
            src_port: 0xc000,
            dst_port: ROCE_V2_PORT,
            length: 40,
            checksum: 0,
        };
        let mut b = [0u8; LEN];
        r.emit(&mut b);
        assert_eq!(UdpRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(UdpRepr::parse(&b[..n]).is_err());
        }
    }
}
