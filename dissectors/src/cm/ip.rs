//! The RDMA-CM's IP addressing in a REQ's private data (IBTA Annex A11, "RDMA IP CM
//! Service"), 36 bytes, present when the service ID is an RDMA IP CM one.
//!
//! ```text
//! +-------+-------+-------+-------+-------------------------------+
//! | MajV  | MinV  |  IPV  | rsvd  |        Source Port (16)       |
//! +-------+-------+-------+-------+-------------------------------+
//! |          Source IP (128; IPv4 in the last 4 bytes)            |
//! |       Destination IP (128; IPv4 in the last 4 bytes)          |
//! +---------------------------------------------------------------+
//! ```

use crate::bytes::{array, be16, put16, u8_at};
use crate::Error;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const VERSION: usize = 0;
pub const IP_VERSION: usize = 1;
pub const SRC_PORT: usize = 2;
pub const SRC_IP: usize = 4;
pub const DST_IP: usize = 20;
/// Length of the header.
pub const LEN: usize = 36;

/// The RDMA-CM IP header of a REQ's private data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpPrivateRepr {
    /// Major version (0).
    pub major: u8,
    /// Minor version (0).
    pub minor: u8,
    /// IP version: 4 or 6.
    pub ip_version: u8,
    /// The requester's source port.
    pub src_port: u16,
    /// The requester's IP address.
    pub src: IpAddr,
    /// The IP address asked for.
    pub dst: IpAddr,
}

fn addr(b: &[u8], off: usize, v4: bool) -> IpAddr {
    let a: [u8; 16] = array(b, off).unwrap_or_default();
    if v4 {
        IpAddr::V4(Ipv4Addr::new(a[12], a[13], a[14], a[15]))
    } else {
        IpAddr::V6(Ipv6Addr::from(a))
    }
}

impl IpPrivateRepr {
    /// Parses the header; an IP version other than 4 or 6 is not one.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        let ver = u8_at(b, VERSION).unwrap_or(0);
        let ipv = u8_at(b, IP_VERSION).unwrap_or(0) >> 4;
        if ipv != 4 && ipv != 6 {
            return Err(Error::Malformed("RDMA-CM IP version is neither 4 nor 6"));
        }
        Ok(IpPrivateRepr {
            major: ver >> 4,
            minor: ver & 0xf,
            ip_version: ipv,
            src_port: be16(b, SRC_PORT).unwrap_or(0),
            src: addr(b, SRC_IP, ipv == 4),
            dst: addr(b, DST_IP, ipv == 4),
        })
    }
    /// Writes the header into `b[..LEN]`.
    pub fn emit(&self, b: &mut [u8]) {
        b[VERSION] = (self.major & 0xf) << 4 | (self.minor & 0xf);
        b[IP_VERSION] = (self.ip_version & 0xf) << 4;
        put16(b, SRC_PORT, self.src_port);
        for (off, a) in [(SRC_IP, self.src), (DST_IP, self.dst)] {
            let f = &mut b[off..off + 16];
            match a {
                IpAddr::V4(v) => {
                    f[..12].fill(0);
                    f[12..].copy_from_slice(&v.octets());
                }
                IpAddr::V6(v) => f.copy_from_slice(&v.octets()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip_v4_v6_and_prefixes() {
        for (src, dst, v) in [
            (
                IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
                IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)),
                4,
            ),
            (
                "2001:db8::1".parse().unwrap(),
                "2001:db8::2".parse().unwrap(),
                6,
            ),
        ] {
            let r = IpPrivateRepr {
                major: 0,
                minor: 0,
                ip_version: v,
                src_port: 40000,
                src,
                dst,
            };
            let mut b = [0xeeu8; LEN];
            r.emit(&mut b);
            assert_eq!(IpPrivateRepr::parse(&b).unwrap(), r);
            for n in 0..LEN {
                assert!(IpPrivateRepr::parse(&b[..n]).is_err());
            }
        }
        let mut b = [0u8; LEN];
        b[1] = 0x50;
        assert!(IpPrivateRepr::parse(&b).is_err());
    }
}
