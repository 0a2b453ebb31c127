//! sFlow version 5 datagrams (sflow.org, "sFlow Version 5", 2004; the drop notification
//! structures of "sFlow Dropped Packet Notification Structures", 2020; the queue and transit
//! extensions of "sFlow Transit Delay Structures", 2020). An exporter (a switch, pmacctd,
//! Open vSwitch, hsflowd) sends them over UDP to port 6343.
//!
//! Zero-copy: [`Datagram::parse`] reads the header and returns views; [`Datagram::samples`]
//! walks the samples and each sample's `records()` its records, every element bounded by
//! the length it declares (XDR: big-endian 32-bit words, opaque data padded to 4). A
//! datagram that ends early or contradicts itself ends the walk with a [`Stop`]; nothing
//! here panics or allocates. Field names follow tshark's `sflow_245.*` / `sflow.*`.

pub mod counters;
pub mod datagram;
pub mod flow;

pub use counters::{CounterRecord, CountersSample, EthCounters, IfCounters};
pub use datagram::{Datagram, DatagramHeader, Sample, Samples};
pub use flow::{DiscardSample, FlowRecord, FlowSample, SampledHeader, SwitchData};

use crate::bytes::be32;
use crate::StopKind;

/// The sFlow collector port (IANA).
pub const PORT: u16 = 6343;

/// Why and where a walk over a datagram ended early.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stop {
    /// [`StopKind::Truncated`] (the datagram ends inside an element) or
    /// [`StopKind::Malformed`] (a field contradicts the format).
    pub kind: StopKind,
    /// Byte offset in the datagram of the element that stopped.
    pub offset: u32,
    pub why: &'static str,
}

impl Stop {
    pub(crate) fn truncated(offset: usize, why: &'static str) -> Stop {
        Stop {
            kind: StopKind::Truncated,
            offset: offset as u32,
            why,
        }
    }
    pub(crate) fn malformed(offset: usize, why: &'static str) -> Stop {
        Stop {
            kind: StopKind::Malformed,
            offset: offset as u32,
            why,
        }
    }
}

impl core::fmt::Display for Stop {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{}:sflow@{}: {}",
            self.kind.name(),
            self.offset,
            self.why
        )
    }
}

/// An XDR data format: enterprise (20 bits) and format (12 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataFormat(pub u32);

impl DataFormat {
    pub fn enterprise(self) -> u32 {
        self.0 >> 12
    }
    pub fn format(self) -> u32 {
        self.0 & 0xfff
    }
    /// Standard (enterprise 0) format `n`.
    pub(crate) fn is_std(self, n: u32) -> bool {
        self.0 == n
    }
}

/// A data source (`sflow.flow_sample.source_id_type` / `_index`): 0 ifIndex, 1 VLAN,
/// 2 physical entity, 3 logical entity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceId {
    pub kind: u32,
    pub index: u32,
}

impl SourceId {
    /// The compact form (`type << 24 | index`).
    pub(crate) fn compact(v: u32) -> SourceId {
        SourceId {
            kind: v >> 24,
            index: v & 0x00ff_ffff,
        }
    }
}

/// Reads word `i` (4 bytes each) of `b`; callers checked the length first.
#[inline]
pub(crate) fn word(b: &[u8], i: usize) -> u32 {
    be32(b, i * 4).unwrap_or(0)
}

/// A walk over `count` XDR elements `(format, length, body)` in `b`, which starts at byte
/// `base` of the datagram. Yields `(format, body, offset of the element)`.
#[derive(Clone, Debug)]
pub(crate) struct Tlvs<'a> {
    b: &'a [u8],
    pos: usize,
    base: usize,
    left: u32,
    what: &'static str,
    done: bool,
}

impl<'a> Tlvs<'a> {
    pub(crate) fn new(b: &'a [u8], base: usize, count: u32, what: &'static str) -> Self {
        Tlvs {
            b,
            pos: 0,
            base,
            left: count,
            what,
            done: false,
        }
    }
}

impl<'a> Iterator for Tlvs<'a> {
    type Item = Result<(DataFormat, &'a [u8], usize), Stop>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.left == 0 {
            self.done = true;
            if self.pos != self.b.len() {
                return Some(Err(Stop::malformed(
                    self.base + self.pos,
                    "bytes after the last element its count declares",
                )));
            }
            return None;
        }
        let at = self.base + self.pos;
        let rest = &self.b[self.pos..];
        if rest.len() < 8 {
            self.done = true;
            return Some(Err(Stop::truncated(at, self.what)));
        }
        let fmt = DataFormat(word(rest, 0));
        let len = word(rest, 1) as usize;
        if len > rest.len() - 8 {
            self.done = true;
            return Some(Err(Stop::truncated(at, self.what)));
        }
        self.pos += 8 + len;
        self.left -= 1;
        Some(Ok((fmt, &rest[8..8 + len], at + 8)))
    }
}

/// The UDP datagram of a captured frame (Ethernet with up to two VLAN tags, or raw IP):
/// its source address and port, destination port and payload, when the frame holds a
/// whole UDP datagram (a capture of an exporter's stream, `rocetap sflow -r`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Udp<'a> {
    pub src: core::net::SocketAddr,
    pub dst_port: u16,
    pub payload: &'a [u8],
    /// The capture cut the datagram (its payload is shorter than UDP says).
    pub cut: bool,
}

/// Finds the UDP datagram of `frame` (see [`Udp`]); `None` for anything else.
pub fn udp_of(link: crate::LinkType, frame: &[u8]) -> Option<Udp<'_>> {
    use crate::LinkType;
    let mut off = match link {
        LinkType::Ethernet => 14,
        LinkType::RawIp | LinkType::Ipv4 | LinkType::Ipv6 => 0,
        _ => return None,
    };
    if link == LinkType::Ethernet {
        let mut et = crate::bytes::be16(frame, 12)?;
        let mut tags = 0;
        while (et == 0x8100 || et == 0x88a8) && tags < 2 {
            et = crate::bytes::be16(frame, off + 2)?;
            off += 4;
            tags += 1;
        }
        if et != 0x0800 && et != 0x86dd {
            return None;
        }
    }
    let ip = crate::IpRepr::slice(frame.get(off..)?).ok()?;
    if ip.repr.protocol != 17 || ip.repr.fragmented {
        return None;
    }
    let at = off + ip.shape.payload_offset;
    let seg = frame.get(at..at + ip.shape.payload_len)?;
    let udp = crate::UdpRepr::parse(seg).ok()?;
    let want = usize::from(udp.length).saturating_sub(8);
    let body = seg.get(8..)?;
    let cut = body.len() < want;
    Some(Udp {
        src: core::net::SocketAddr::new(ip.repr.src, udp.src_port),
        dst_port: udp.dst_port,
        payload: &body[..want.min(body.len())],
        cut,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LinkType;

    fn ip_udp(payload: &[u8]) -> Vec<u8> {
        let total = 28 + payload.len();
        let mut f = vec![
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            0,
            0,
            0,
            64,
            17,
            0,
            0,
        ];
        f.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]);
        f.extend_from_slice(&[0x9c, 0x40, 0x18, 0xc7]); // 40000 -> 6343
        f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn udp_of_ethernet_vlan_raw_ip_and_cut() {
        let ip = ip_udp(b"abcd");
        let mut eth = vec![0u8; 12];
        eth.extend_from_slice(&[0x81, 0x00, 0, 5, 0x08, 0x00]);
        eth.extend_from_slice(&ip);
        eth.extend_from_slice(&[0; 6]); // Ethernet padding is not payload
        for (link, f) in [(LinkType::Ethernet, &eth[..]), (LinkType::RawIp, &ip[..])] {
            let u = udp_of(link, f).unwrap();
            assert_eq!(u.src, "192.0.2.1:40000".parse().unwrap());
            assert_eq!((u.dst_port, u.payload, u.cut), (PORT, &b"abcd"[..], false));
        }
        let u = udp_of(LinkType::RawIp, &ip[..ip.len() - 2]).unwrap();
        assert_eq!((u.payload, u.cut), (&b"ab"[..], true));
        assert_eq!(udp_of(LinkType::Ethernet, &eth[..10]), None);
        assert_eq!(udp_of(LinkType::Infiniband, &ip), None);
    }
}
