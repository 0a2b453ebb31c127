//! Counters samples (formats 2 and 4) and their records: 1 generic interface counters,
//! 2 Ethernet interface counters; others are [`CounterRecord::Unknown`].
//!
//! ```text
//! counters sample: | seq | source id (type << 24 | index) | record count | records... |
//! expanded (4):    | seq | source type | source index | record count | records... |
//! ```

use super::flow::MAX_RECORDS;
use super::{word, DataFormat, SourceId, Stop, Tlvs};
use crate::bytes::be64;

/// A counters sample (`sflow.counters_sample.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountersSample<'a> {
    pub expanded: bool,
    pub sequence_number: u32,
    pub source_id: SourceId,
    pub num_records: u32,
    records: &'a [u8],
    records_at: usize,
}

impl<'a> CountersSample<'a> {
    pub(crate) fn parse(b: &'a [u8], at: usize, expanded: bool) -> Result<Self, Stop> {
        let words = if expanded { 4 } else { 3 };
        if b.len() < words * 4 {
            return Err(Stop::truncated(at, "counters sample"));
        }
        let source_id = if expanded {
            SourceId {
                kind: word(b, 1),
                index: word(b, 2),
            }
        } else {
            SourceId::compact(word(b, 1))
        };
        let num_records = word(b, words - 1);
        if num_records > MAX_RECORDS {
            return Err(Stop::malformed(
                at,
                "more counter records than a datagram can hold",
            ));
        }
        Ok(CountersSample {
            expanded,
            sequence_number: word(b, 0),
            source_id,
            num_records,
            records: &b[words * 4..],
            records_at: at + words * 4,
        })
    }

    /// The counter records, in order; a `Stop` ends the walk.
    pub fn records(&self) -> CounterRecords<'a> {
        CounterRecords(Tlvs::new(
            self.records,
            self.records_at,
            self.num_records,
            "counter record",
        ))
    }
}

/// Generic interface counters (format 1, RFC 2233's ifTable; `sflow_245.if*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IfCounters {
    pub if_index: u32,
    pub if_type: u32,
    pub if_speed: u64,
    /// 0 unknown, 1 full duplex, 2 half, 3 in, 4 out.
    pub if_direction: u32,
    /// Bit 0 admin up, bit 1 operational up.
    pub if_status: u32,
    pub in_octets: u64,
    pub in_ucast_pkts: u32,
    pub in_multicast_pkts: u32,
    pub in_broadcast_pkts: u32,
    pub in_discards: u32,
    pub in_errors: u32,
    pub in_unknown_protos: u32,
    pub out_octets: u64,
    pub out_ucast_pkts: u32,
    pub out_multicast_pkts: u32,
    pub out_broadcast_pkts: u32,
    pub out_discards: u32,
    pub out_errors: u32,
    pub promiscuous_mode: u32,
}

/// The length of the generic interface counters record.
pub const IF_COUNTERS_LEN: usize = 88;

impl IfCounters {
    fn parse(b: &[u8]) -> Option<IfCounters> {
        if b.len() < IF_COUNTERS_LEN {
            return None;
        }
        let w = |o: usize| word(b, o / 4);
        let q = |o: usize| be64(b, o).unwrap_or(0);
        Some(IfCounters {
            if_index: w(0),
            if_type: w(4),
            if_speed: q(8),
            if_direction: w(16),
            if_status: w(20),
            in_octets: q(24),
            in_ucast_pkts: w(32),
            in_multicast_pkts: w(36),
            in_broadcast_pkts: w(40),
            in_discards: w(44),
            in_errors: w(48),
            in_unknown_protos: w(52),
            out_octets: q(56),
            out_ucast_pkts: w(64),
            out_multicast_pkts: w(68),
            out_broadcast_pkts: w(72),
            out_discards: w(76),
            out_errors: w(80),
            promiscuous_mode: w(84),
        })
    }
}

/// Ethernet interface counters (format 2, RFC 2358's dot3Stats; `sflow_245.dot3Stats*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EthCounters {
    pub alignment_errors: u32,
    pub fcs_errors: u32,
    pub single_collision_frames: u32,
    pub multiple_collision_frames: u32,
    pub sqe_test_errors: u32,
    pub deferred_transmissions: u32,
    pub late_collisions: u32,
    pub excessive_collisions: u32,
    pub internal_mac_transmit_errors: u32,
    pub carrier_sense_errors: u32,
    pub frame_too_longs: u32,
    pub internal_mac_receive_errors: u32,
    pub symbol_errors: u32,
}

/// The length of the Ethernet counters record.
pub const ETH_COUNTERS_LEN: usize = 52;

impl EthCounters {
    fn parse(b: &[u8]) -> Option<EthCounters> {
        if b.len() < ETH_COUNTERS_LEN {
            return None;
        }
        let w = |i| word(b, i);
        Some(EthCounters {
            alignment_errors: w(0),
            fcs_errors: w(1),
            single_collision_frames: w(2),
            multiple_collision_frames: w(3),
            sqe_test_errors: w(4),
            deferred_transmissions: w(5),
            late_collisions: w(6),
            excessive_collisions: w(7),
            internal_mac_transmit_errors: w(8),
            carrier_sense_errors: w(9),
            frame_too_longs: w(10),
            internal_mac_receive_errors: w(11),
            symbol_errors: w(12),
        })
    }
}

/// One counter record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterRecord {
    Interface(IfCounters),
    Ethernet(EthCounters),
    /// A record this decoder does not read, skipped by its length.
    Unknown {
        format: DataFormat,
        len: u32,
    },
}

/// The walk over a counters sample's records.
#[derive(Clone, Debug)]
pub struct CounterRecords<'a>(Tlvs<'a>);

impl Iterator for CounterRecords<'_> {
    type Item = Result<CounterRecord, Stop>;
    fn next(&mut self) -> Option<Self::Item> {
        let (fmt, b, at) = match self.0.next()? {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        let r = if fmt.is_std(1) {
            IfCounters::parse(b)
                .map(CounterRecord::Interface)
                .ok_or(Stop::truncated(at, "interface counters record"))
        } else if fmt.is_std(2) {
            EthCounters::parse(b)
                .map(CounterRecord::Ethernet)
                .ok_or(Stop::truncated(at, "ethernet counters record"))
        } else {
            Ok(CounterRecord::Unknown {
                format: fmt,
                len: b.len() as u32,
            })
        };
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sflow::datagram::tests::datagram;
    use crate::sflow::flow::tests::{tlv, words};
    use crate::sflow::{Datagram, Sample};
    use crate::StopKind;

    fn if_record() -> Vec<u8> {
        let mut b = words(&[3, 6]);
        b.extend(25_000_000_000u64.to_be_bytes());
        b.extend(words(&[1, 3]));
        b.extend(123_456_789_012u64.to_be_bytes());
        b.extend(words(&[10, 11, 12, 13, 14, 15]));
        b.extend(987u64.to_be_bytes());
        b.extend(words(&[20, 21, 22, 23, 24, 0]));
        assert_eq!(b.len(), IF_COUNTERS_LEN);
        b
    }

    #[test]
    fn counters_both_forms_and_every_cut() {
        for expanded in [false, true] {
            let mut s = if expanded {
                words(&[9, 0, 3, 3])
            } else {
                words(&[9, 3, 3])
            };
            s.extend(tlv(1, &if_record()));
            s.extend(tlv(2, &words(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])));
            s.extend(tlv(0x1234_5001, &[0; 8]));
            let b = datagram(5, 1, &tlv(if expanded { 4 } else { 2 }, &s));
            let d = Datagram::parse(&b).unwrap();
            let Some(Ok(Sample::Counters(c))) = d.samples().next() else {
                panic!()
            };
            assert_eq!(c.sequence_number, 9);
            assert_eq!(c.source_id, SourceId { kind: 0, index: 3 });
            let r: Vec<_> = c.records().map(Result::unwrap).collect();
            let CounterRecord::Interface(i) = r[0] else {
                panic!()
            };
            assert_eq!(
                (i.if_index, i.if_speed, i.in_octets, i.in_ucast_pkts),
                (3, 25_000_000_000, 123_456_789_012, 10)
            );
            assert_eq!((i.out_octets, i.out_errors), (987, 24));
            let CounterRecord::Ethernet(e) = r[1] else {
                panic!()
            };
            assert_eq!((e.alignment_errors, e.symbol_errors), (1, 13));
            assert!(
                matches!(r[2], CounterRecord::Unknown { len: 8, format } if format.enterprise() == 0x12345 && format.format() == 1)
            );
            for n in 0..b.len() {
                if let Ok(d) = Datagram::parse(&b[..n]) {
                    assert!(d.samples().any(|s| s.is_err()), "cut at {n}");
                }
            }
        }
        // a record shorter than its structure
        let mut s = words(&[9, 3, 1]);
        s.extend(tlv(1, &[0; 40]));
        let b = datagram(5, 1, &tlv(2, &s));
        let d = Datagram::parse(&b).unwrap();
        let Some(Ok(Sample::Counters(c))) = d.samples().next() else {
            panic!()
        };
        let e = c.records().next().unwrap().unwrap_err();
        assert_eq!(e.kind, StopKind::Truncated);
    }
}
