//! Flow samples (formats 1 and 3), discarded packets (format 5) and their flow records.
//!
//! ```text
//! flow sample:    | seq | source id (type << 24 | index) | rate | pool | drops |
//!                 | input | output | record count | records... |
//! expanded (3):   | seq | source type | source index | rate | pool | drops |
//!                 | input format | input | output format | output | count | records... |
//! discarded (5):  | seq | source type | source index | drops | input | output |
//!                 | reason | count | records... |
//! ```
//!
//! Records: 1 raw packet header, 1001 extended switch data, 1036 egress queue,
//! 1039 transit delay, 1040 queue depth; others are [`FlowRecord::Unknown`].

use super::{word, DataFormat, SourceId, Stop, Tlvs};

/// A flow sample (`sflow.flow_sample.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSample<'a> {
    /// Format 3 (expanded) rather than 1.
    pub expanded: bool,
    /// `sflow.flow_sample.sequence_number`.
    pub sequence_number: u32,
    /// `sflow.flow_sample.source_id_type` / `source_id_index`.
    pub source_id: SourceId,
    /// `sflow.flow_sample.sampling_rate`: one packet in this many was sampled.
    pub sampling_rate: u32,
    /// `sflow.flow_sample.sample_pool`: packets that could have been sampled.
    pub sample_pool: u32,
    /// `sflow.flow_sample.dropped_packets`: samples the exporter lost for lack of resources.
    pub drops: u32,
    /// `sflow.flow_sample.input_interface` (the value; 0x3fffffff unknown).
    pub input: u32,
    /// `sflow.flow_sample.output_interface` (the value).
    pub output: u32,
    pub num_records: u32,
    records: &'a [u8],
    records_at: usize,
}

/// The most records a sample may declare.
pub const MAX_RECORDS: u32 = 8192;

impl<'a> FlowSample<'a> {
    pub(crate) fn parse(b: &'a [u8], at: usize, expanded: bool) -> Result<Self, Stop> {
        let words = if expanded { 11 } else { 8 };
        if b.len() < words * 4 {
            return Err(Stop::truncated(at, "flow sample"));
        }
        let (source_id, w) = if expanded {
            (
                SourceId {
                    kind: word(b, 1),
                    index: word(b, 2),
                },
                3,
            )
        } else {
            (SourceId::compact(word(b, 1)), 2)
        };
        let (input, output) = if expanded {
            (word(b, w + 4), word(b, w + 6))
        } else {
            (word(b, w + 3) & 0x3fff_ffff, word(b, w + 4))
        };
        let num_records = word(b, words - 1);
        if num_records > MAX_RECORDS {
            return Err(Stop::malformed(
                at,
                "more flow records than a datagram can hold",
            ));
        }
        Ok(FlowSample {
            expanded,
            sequence_number: word(b, 0),
            source_id,
            sampling_rate: word(b, w),
            sample_pool: word(b, w + 1),
            drops: word(b, w + 2),
            input,
            output,
            num_records,
            records: &b[words * 4..],
            records_at: at + words * 4,
        })
    }

    /// The flow records, in order; a `Stop` ends the walk.
    pub fn records(&self) -> FlowRecords<'a> {
        FlowRecords(Tlvs::new(
            self.records,
            self.records_at,
            self.num_records,
            "flow record",
        ))
    }
}

/// A discarded packet (drop notification, format 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiscardSample<'a> {
    pub sequence_number: u32,
    pub source_id: SourceId,
    /// Notifications the exporter could not send (rate limit, resources).
    pub drops: u32,
    pub input: u32,
    pub output: u32,
    /// The drop reason ([`drop_reason_name`]).
    pub reason: u32,
    pub num_records: u32,
    records: &'a [u8],
    records_at: usize,
}

impl<'a> DiscardSample<'a> {
    pub(crate) fn parse(b: &'a [u8], at: usize) -> Result<Self, Stop> {
        if b.len() < 32 {
            return Err(Stop::truncated(at, "discarded packet"));
        }
        let num_records = word(b, 7);
        if num_records > MAX_RECORDS {
            return Err(Stop::malformed(
                at,
                "more flow records than a datagram can hold",
            ));
        }
        Ok(DiscardSample {
            sequence_number: word(b, 0),
            source_id: SourceId {
                kind: word(b, 1),
                index: word(b, 2),
            },
            drops: word(b, 3),
            input: word(b, 4),
            output: word(b, 5),
            reason: word(b, 6),
            num_records,
            records: &b[32..],
            records_at: at + 32,
        })
    }

    /// The records of the discarded packet (its header, usually).
    pub fn records(&self) -> FlowRecords<'a> {
        FlowRecords(Tlvs::new(
            self.records,
            self.records_at,
            self.num_records,
            "flow record",
        ))
    }
}

/// The name of a drop reason of the drop notification structures (`None` when the
/// document does not list it).
pub fn drop_reason_name(reason: u32) -> Option<&'static str> {
    Some(match reason {
        0 => "net_unreachable",
        1 => "host_unreachable",
        2 => "protocol_unreachable",
        3 => "port_unreachable",
        4 => "frag_needed",
        5 => "src_route_failed",
        6 => "dst_net_unknown",
        7 => "dst_host_unknown",
        8 => "src_host_isolated",
        9 => "dst_net_prohibited",
        10 => "dst_host_prohibited",
        11 => "dst_net_tos_unreachable",
        12 => "dst_host_tos_unreachable",
        13 => "comm_admin_prohibited",
        14 => "host_precedence_violation",
        15 => "precedence_cutoff",
        256 => "unknown",
        257 => "ttl_exceeded",
        258 => "acl",
        259 => "no_buffer_space",
        260 => "red",
        261 => "traffic_shaping",
        262 => "pkt_too_big",
        _ => return None,
    })
}

/// The raw packet header record (format 1, `sflow_245.header*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampledHeader<'a> {
    /// `sflow_245.header_protocol`: 1 Ethernet, 11 IPv4, 12 IPv6, ...
    pub protocol: u32,
    /// `sflow_245.header.frame_length`: the packet's length on the wire.
    pub frame_length: u32,
    /// `sflow_245.header.payload_stripped`: bytes removed before sampling (the FCS).
    pub stripped: u32,
    /// `sflow_245.header` (its length is `sflow_245.header.sampled_header_length`).
    pub header: &'a [u8],
}

/// Extended switch data (format 1001, `sflow_245.vlan.*` / `sflow_245.pri.*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwitchData {
    pub src_vlan: u32,
    pub src_priority: u32,
    pub dst_vlan: u32,
    pub dst_priority: u32,
}

/// One flow record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowRecord<'a> {
    Header(SampledHeader<'a>),
    Switch(SwitchData),
    /// Format 1036: the egress queue the packet was placed in.
    EgressQueue(u32),
    /// Format 1039: the packet's delay through the switch, nanoseconds.
    TransitDelay(u32),
    /// Format 1040: the egress queue's depth when the packet was queued, bytes.
    QueueDepth(u32),
    /// A record this decoder does not read, skipped by its length.
    Unknown {
        format: DataFormat,
        len: u32,
    },
}

/// The walk over a sample's flow records.
#[derive(Clone, Debug)]
pub struct FlowRecords<'a>(Tlvs<'a>);

impl<'a> Iterator for FlowRecords<'a> {
    type Item = Result<FlowRecord<'a>, Stop>;
    fn next(&mut self) -> Option<Self::Item> {
        let (fmt, b, at) = match self.0.next()? {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        Some(record(fmt, b, at))
    }
}

fn record(fmt: DataFormat, b: &[u8], at: usize) -> Result<FlowRecord<'_>, Stop> {
    let need = |n: usize, what| {
        if b.len() < n {
            Err(Stop::truncated(at, what))
        } else {
            Ok(())
        }
    };
    if fmt.is_std(1) {
        need(16, "raw packet header record")?;
        let len = word(b, 3) as usize;
        if len > b.len() - 16 {
            return Err(Stop::malformed(
                at + 12,
                "sampled header longer than its record",
            ));
        }
        return Ok(FlowRecord::Header(SampledHeader {
            protocol: word(b, 0),
            frame_length: word(b, 1),
            stripped: word(b, 2),
            header: &b[16..16 + len],
        }));
    }
    if fmt.is_std(1001) {
        need(16, "extended switch record")?;
        return Ok(FlowRecord::Switch(SwitchData {
            src_vlan: word(b, 0),
            src_priority: word(b, 1),
            dst_vlan: word(b, 2),
            dst_priority: word(b, 3),
        }));
    }
    for (n, f) in [
        (
            1036,
            FlowRecord::EgressQueue as fn(u32) -> FlowRecord<'static>,
        ),
        (1039, FlowRecord::TransitDelay),
        (1040, FlowRecord::QueueDepth),
    ] {
        if fmt.is_std(n) {
            need(4, "queue or transit record")?;
            return Ok(f(word(b, 0)));
        }
    }
    Ok(FlowRecord::Unknown {
        format: fmt,
        len: b.len() as u32,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sflow::datagram::tests::datagram;
    use crate::sflow::{Datagram, Sample};
    use crate::StopKind;

    pub(crate) fn tlv(fmt: u32, body: &[u8]) -> Vec<u8> {
        let mut b = fmt.to_be_bytes().to_vec();
        b.extend_from_slice(&(body.len() as u32).to_be_bytes());
        b.extend_from_slice(body);
        b
    }

    pub(crate) fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    /// A flow sample with a 6-byte "header", a switch record and a queue depth.
    fn flow_sample(expanded: bool) -> Vec<u8> {
        let mut hdr = words(&[1, 1500, 4, 6]);
        hdr.extend_from_slice(&[1, 2, 3, 4, 5, 6, 0, 0]);
        let mut recs = tlv(1, &hdr);
        recs.extend(tlv(1001, &words(&[10, 3, 20, 3])));
        recs.extend(tlv(1040, &words(&[9000])));
        recs.extend(tlv(77, &[0; 4]));
        let mut b = if expanded {
            words(&[11, 0, 5, 100, 5000, 2, 0, 5, 0, 6, 4])
        } else {
            words(&[11, 5, 100, 5000, 2, 5, 6, 4])
        };
        b.extend(recs);
        tlv(if expanded { 3 } else { 1 }, &b)
    }

    #[test]
    fn flow_samples_both_forms_and_their_records() {
        for expanded in [false, true] {
            let b = datagram(1, 1, &flow_sample(expanded));
            let d = Datagram::parse(&b).unwrap();
            let s: Vec<_> = d.samples().collect();
            let Ok(Sample::Flow(f)) = s[0] else {
                panic!("{s:?}")
            };
            assert_eq!(f.expanded, expanded);
            assert_eq!(f.sequence_number, 11);
            assert_eq!(f.source_id, SourceId { kind: 0, index: 5 });
            assert_eq!((f.sampling_rate, f.sample_pool, f.drops), (100, 5000, 2));
            assert_eq!((f.input, f.output), (5, 6));
            let r: Vec<_> = f.records().map(Result::unwrap).collect();
            assert_eq!(
                r[0],
                FlowRecord::Header(SampledHeader {
                    protocol: 1,
                    frame_length: 1500,
                    stripped: 4,
                    header: &[1, 2, 3, 4, 5, 6],
                })
            );
            assert_eq!(
                r[1],
                FlowRecord::Switch(SwitchData {
                    src_vlan: 10,
                    src_priority: 3,
                    dst_vlan: 20,
                    dst_priority: 3
                })
            );
            assert_eq!(r[2], FlowRecord::QueueDepth(9000));
            assert!(matches!(r[3], FlowRecord::Unknown { len: 4, .. }));
            assert_eq!(r.len(), 4);
        }
    }

    /// Every cut of a datagram ends in a `Stop`, never a panic, and never in a sample
    /// or record that claims bytes it does not have.
    #[test]
    fn every_cut_stops() {
        for expanded in [false, true] {
            let full = datagram(1, 1, &flow_sample(expanded));
            for n in 0..full.len() {
                let mut stops = 0;
                if let Ok(d) = Datagram::parse(&full[..n]) {
                    for s in d.samples() {
                        match s {
                            Err(_) => stops += 1,
                            Ok(Sample::Flow(f)) => {
                                stops += f.records().filter(Result::is_err).count();
                            }
                            Ok(_) => {}
                        }
                    }
                } else {
                    stops += 1;
                }
                assert_eq!(stops, 1, "cut at {n}");
            }
        }
    }

    #[test]
    fn header_longer_than_its_record_is_malformed() {
        let mut hdr = words(&[1, 1500, 4, 9]);
        hdr.extend_from_slice(&[0; 8]);
        let mut b = words(&[1, 5, 100, 5000, 0, 5, 6, 1]);
        b.extend(tlv(1, &hdr));
        let b = datagram(1, 1, &tlv(1, &b));
        let d = Datagram::parse(&b).unwrap();
        let Some(Ok(Sample::Flow(f))) = d.samples().next() else {
            panic!()
        };
        let e = f.records().next().unwrap().unwrap_err();
        assert_eq!(e.kind, StopKind::Malformed);
    }

    #[test]
    fn discarded_packet_and_reasons() {
        let mut b = words(&[3, 0, 7, 1, 7, 0, 259, 1]);
        b.extend(tlv(1039, &words(&[1234])));
        let b = datagram(1, 1, &tlv(5, &b));
        let d = Datagram::parse(&b).unwrap();
        let Some(Ok(Sample::Discard(x))) = d.samples().next() else {
            panic!()
        };
        assert_eq!(
            (x.sequence_number, x.source_id.index, x.reason),
            (3, 7, 259)
        );
        assert_eq!(drop_reason_name(x.reason), Some("no_buffer_space"));
        assert_eq!(drop_reason_name(99), None);
        assert_eq!(
            x.records().next().unwrap().unwrap(),
            FlowRecord::TransitDelay(1234)
        );
        for n in 0..b.len() {
            if let Ok(d) = Datagram::parse(&b[..n]) {
                assert!(d.samples().any(|s| s.is_err()), "cut at {n}");
            }
        }
    }
}
