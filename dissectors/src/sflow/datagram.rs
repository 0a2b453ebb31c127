//! The datagram header and its samples.
//!
//! ```text
//! | version (5) | agent address type (1 v4, 2 v6) | agent address (4 / 16) |
//! | sub-agent id | sequence number | uptime (ms) | sample count | samples... |
//! ```
//!
//! A sample is `(data format, length, body)`: 1 flow sample, 2 counters sample, 3 and 4
//! their expanded forms, 5 a discarded packet (drop notification); other formats are
//! returned as [`Sample::Unknown`] and skipped by their length.

use super::{word, CountersSample, DataFormat, DiscardSample, FlowSample, Stop, Tlvs};
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The most samples a datagram may declare (a 64 KiB datagram holds at most 8,191
/// eight-byte samples): more is malformed, whatever the bytes.
pub const MAX_SAMPLES: u32 = 8192;

/// The datagram header (`sflow_245.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DatagramHeader {
    /// `sflow_245.version`.
    pub version: u32,
    /// `sflow_245.agent` / `sflow_245.agent.v6`.
    pub agent: IpAddr,
    /// `sflow_245.sub_agent_id`.
    pub sub_agent_id: u32,
    /// `sflow_245.sequence_number`.
    pub sequence_number: u32,
    /// `sflow_245.sysuptime`, milliseconds.
    pub uptime_ms: u32,
    /// `sflow_245.numsamples`.
    pub num_samples: u32,
}

/// A datagram: its header and a view of its samples.
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    pub header: DatagramHeader,
    body: &'a [u8],
    body_at: usize,
}

impl<'a> Datagram<'a> {
    /// Reads the header of `b` (the UDP payload).
    pub fn parse(b: &'a [u8]) -> Result<Datagram<'a>, Stop> {
        if b.len() < 8 {
            return Err(Stop::truncated(0, "sFlow datagram header"));
        }
        let version = word(b, 0);
        if version != 5 {
            return Err(Stop::malformed(0, "sFlow version is not 5"));
        }
        let (agent, at) = match word(b, 1) {
            1 => {
                if b.len() < 12 {
                    return Err(Stop::truncated(8, "agent address"));
                }
                (IpAddr::V4(Ipv4Addr::from(word(b, 2))), 12)
            }
            2 => {
                let Some(a) = b.get(8..24) else {
                    return Err(Stop::truncated(8, "agent address"));
                };
                let mut o = [0u8; 16];
                o.copy_from_slice(a);
                (IpAddr::V6(Ipv6Addr::from(o)), 24)
            }
            _ => {
                return Err(Stop::malformed(
                    4,
                    "agent address type is not 1 (IPv4) or 2 (IPv6)",
                ))
            }
        };
        let Some(h) = b.get(at..at + 16) else {
            return Err(Stop::truncated(at, "sFlow datagram header"));
        };
        let num_samples = word(h, 3);
        if num_samples > MAX_SAMPLES {
            return Err(Stop::malformed(
                at + 12,
                "more samples than a datagram can hold",
            ));
        }
        Ok(Datagram {
            header: DatagramHeader {
                version,
                agent,
                sub_agent_id: word(h, 0),
                sequence_number: word(h, 1),
                uptime_ms: word(h, 2),
                num_samples,
            },
            body: &b[at + 16..],
            body_at: at + 16,
        })
    }

    /// The samples, in order; a `Stop` ends the walk.
    pub fn samples(&self) -> Samples<'a> {
        Samples(Tlvs::new(
            self.body,
            self.body_at,
            self.header.num_samples,
            "sFlow sample",
        ))
    }
}

/// One sample of a datagram.
#[derive(Clone, Copy, Debug)]
pub enum Sample<'a> {
    /// A flow sample (format 1) or expanded flow sample (format 3).
    Flow(FlowSample<'a>),
    /// A counters sample (format 2) or expanded counters sample (format 4).
    Counters(CountersSample<'a>),
    /// A discarded packet (format 5, drop notification).
    Discard(DiscardSample<'a>),
    /// A sample format this decoder does not read, skipped by its length.
    Unknown { format: DataFormat, len: u32 },
}

/// The walk over a datagram's samples.
#[derive(Clone, Debug)]
pub struct Samples<'a>(Tlvs<'a>);

impl<'a> Iterator for Samples<'a> {
    type Item = Result<Sample<'a>, Stop>;
    fn next(&mut self) -> Option<Self::Item> {
        let (fmt, body, at) = match self.0.next()? {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        let s = if fmt.is_std(1) || fmt.is_std(3) {
            FlowSample::parse(body, at, fmt.is_std(3)).map(Sample::Flow)
        } else if fmt.is_std(2) || fmt.is_std(4) {
            CountersSample::parse(body, at, fmt.is_std(4)).map(Sample::Counters)
        } else if fmt.is_std(5) {
            DiscardSample::parse(body, at).map(Sample::Discard)
        } else {
            Ok(Sample::Unknown {
                format: fmt,
                len: body.len() as u32,
            })
        };
        Some(s)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::StopKind;

    /// A datagram header (IPv4 agent 192.0.2.1) with `n` samples, then `samples`.
    pub(crate) fn datagram(seq: u32, n: u32, samples: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        for w in [5u32, 1, 0xc000_0201, 7, seq, 1000, n] {
            b.extend_from_slice(&w.to_be_bytes());
        }
        b.extend_from_slice(samples);
        b
    }

    #[test]
    fn header_v4_v6_and_every_cut() {
        let b = datagram(42, 0, &[]);
        let d = Datagram::parse(&b).unwrap();
        assert_eq!(d.header.agent, IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)));
        assert_eq!(d.header.sub_agent_id, 7);
        assert_eq!(d.header.sequence_number, 42);
        assert_eq!(d.header.uptime_ms, 1000);
        assert_eq!(d.samples().count(), 0);
        for n in 0..b.len() {
            let e = Datagram::parse(&b[..n]).unwrap_err();
            assert_eq!(e.kind, StopKind::Truncated, "cut at {n}");
        }
        let mut v6 = Vec::new();
        for w in [5u32, 2] {
            v6.extend_from_slice(&w.to_be_bytes());
        }
        v6.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        for w in [0u32, 1, 2, 0] {
            v6.extend_from_slice(&w.to_be_bytes());
        }
        let d = Datagram::parse(&v6).unwrap();
        assert_eq!(d.header.agent, "2001:db8::1".parse::<IpAddr>().unwrap());
        for n in 0..v6.len() {
            assert!(Datagram::parse(&v6[..n]).is_err());
        }
    }

    #[test]
    fn bad_version_address_type_and_counts_are_malformed() {
        let mut b = datagram(1, 0, &[]);
        b[3] = 4;
        assert_eq!(Datagram::parse(&b).unwrap_err().kind, StopKind::Malformed);
        let mut b = datagram(1, 0, &[]);
        b[7] = 3;
        assert_eq!(Datagram::parse(&b).unwrap_err().kind, StopKind::Malformed);
        let b = datagram(1, MAX_SAMPLES + 1, &[]);
        assert_eq!(Datagram::parse(&b).unwrap_err().kind, StopKind::Malformed);
        // a count larger than the samples present: truncated at the first missing one
        let b = datagram(1, 2, &[0, 0, 0, 9, 0, 0, 0, 0]);
        let d = Datagram::parse(&b).unwrap();
        let s: Vec<_> = d.samples().collect();
        assert!(matches!(s[0], Ok(Sample::Unknown { len: 0, .. })));
        assert_eq!(s[1].unwrap_err().kind, StopKind::Truncated);
        assert_eq!(s[1].unwrap_err().offset, 36);
        assert_eq!(s.len(), 2);
        // a sample longer than the datagram
        let b = datagram(1, 1, &[0, 0, 0, 9, 0, 0, 1, 0, 1, 2]);
        let s: Vec<_> = Datagram::parse(&b).unwrap().samples().collect();
        assert_eq!(s[0].unwrap_err().kind, StopKind::Truncated);
        // bytes after the last sample
        let b = datagram(1, 0, &[0, 0, 0, 0]);
        let s: Vec<_> = Datagram::parse(&b).unwrap().samples().collect();
        assert_eq!(s[0].unwrap_err().kind, StopKind::Malformed);
    }
}
