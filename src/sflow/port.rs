//! What one data source (switch port, VLAN, ...) of one agent reported: its flow samples
//! (each sampled packet decoded as usual, RoCE counted by opcode class), its discarded
//! packets by reason, its latest interface counters. Fixed size: the top QP pairs are a
//! space-saving table of fixed capacity, allocated with the port.

use dissectors::sflow::{EthCounters, IfCounters, SampledHeader};
use dissectors::{AethKind, Decoded, Ecn, LinkType, Operation};
use std::net::IpAddr;

/// The opcode classes counted per port, in report order.
pub const CLASSES: [&str; 8] = [
    "send",
    "write",
    "read_request",
    "read_response",
    "ack",
    "atomic",
    "cnp",
    "other",
];

/// Drop reasons counted by name; others go to the last slot.
pub const REASONS: usize = 24;

/// A sampled count and what it stands for: each sample taken at rate `N` stands for `N`
/// packets (the sum is the Horvitz–Thompson estimate of the packets seen by the port).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sampled {
    /// Samples taken.
    pub samples: u64,
    /// Sum of the sampling rates of those samples: the estimated packets.
    pub scaled: u64,
}

impl Sampled {
    fn add(&mut self, rate: u32) {
        self.samples += 1;
        self.scaled += u64::from(rate.max(1));
    }

    /// The 95 % relative error of `scaled` in percent, `196 · sqrt(1 / samples)`
    /// (sFlow's sampling theory, "Packet Sampling Basics", sflow.org): `None` without
    /// samples.
    pub fn error_pct(&self) -> Option<f64> {
        (self.samples > 0).then(|| 196.0 * (1.0 / self.samples as f64).sqrt())
    }
}

/// A QP pair: source and destination address and the destination QP number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QpPair {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Destination QP number (BTH).
    pub dest_qp: u32,
}

/// One entry of the top QP pairs: its samples (space-saving: at most `samples - error`
/// of them may belong to pairs it displaced) and scaled packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopEntry {
    /// The pair.
    pub pair: QpPair,
    /// Samples counted for it.
    pub samples: u64,
    /// Packets they stand for.
    pub scaled: u64,
    /// The count inherited from the entry it replaced (space-saving's overestimate bound).
    pub error: u64,
}

/// The statistics of one port.
#[derive(Clone, Debug)]
pub struct Port {
    /// Flow samples of the port.
    pub flow_samples: u64,
    /// All sampled packets (any protocol).
    pub packets: Sampled,
    /// Sampled RoCE packets (a BTH decoded).
    pub roce: Sampled,
    /// RoCE by opcode class ([`CLASSES`]).
    pub classes: [Sampled; CLASSES.len()],
    /// NAKs (incl. RNR NAKs).
    pub naks: Sampled,
    /// CNPs.
    pub cnps: Sampled,
    /// RoCE samples with ECN CE.
    pub ce: Sampled,
    /// RoCE samples with ECN-capable transport (ECT(0), ECT(1) or CE).
    pub ect: Sampled,
    /// Sampled headers that did not decode whole (cut inside a header by the exporter's
    /// header length are not counted here: only malformed ones).
    pub malformed_headers: u64,
    /// The sampling rate of the last flow sample.
    pub sampling_rate: u32,
    /// The sample pool of the last flow sample.
    pub sample_pool: u32,
    /// The exporter's own drops (samples it could not send), its latest count.
    pub exporter_drops: u32,
    /// The deepest queue reported (queue depth record), bytes.
    pub max_queue_depth: Option<u32>,
    /// The longest transit delay reported, nanoseconds.
    pub max_transit_ns: Option<u32>,
    /// Discarded packet notifications by reason (`REASONS - 1` is every other reason).
    pub discards: [u64; REASONS],
    /// Counter samples of the port.
    pub counter_samples: u64,
    /// The latest generic interface counters.
    pub interface: Option<IfCounters>,
    /// The latest Ethernet counters.
    pub ethernet: Option<EthCounters>,
    top: Vec<TopEntry>,
    top_cap: usize,
}

impl Port {
    /// An empty port keeping at most `top_cap` QP pairs.
    pub fn new(top_cap: usize) -> Port {
        Port {
            flow_samples: 0,
            packets: Sampled::default(),
            roce: Sampled::default(),
            classes: [Sampled::default(); CLASSES.len()],
            naks: Sampled::default(),
            cnps: Sampled::default(),
            ce: Sampled::default(),
            ect: Sampled::default(),
            malformed_headers: 0,
            sampling_rate: 0,
            sample_pool: 0,
            exporter_drops: 0,
            max_queue_depth: None,
            max_transit_ns: None,
            discards: [0; REASONS],
            counter_samples: 0,
            interface: None,
            ethernet: None,
            top: Vec::with_capacity(top_cap),
            top_cap,
        }
    }

    /// The top QP pairs by samples, largest first.
    pub fn top(&self) -> Vec<TopEntry> {
        let mut t = self.top.clone();
        t.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.pair.cmp(&b.pair)));
        t
    }

    /// One sampled packet header, taken at `rate`, decoded into `d`.
    pub fn header(
        &mut self,
        h: &SampledHeader<'_>,
        rate: u32,
        cfg: &dissectors::Config,
        d: &mut Decoded,
    ) {
        self.packets.add(rate);
        let link = match h.protocol {
            1 => LinkType::Ethernet,
            11 => LinkType::Ipv4,
            12 => LinkType::Ipv6,
            _ => return,
        };
        let wire = h.frame_length.saturating_sub(h.stripped);
        let orig = wire.max(h.header.len() as u32);
        dissectors::decode_into(link, h.header, orig, cfg, d);
        if d.stop.kind == dissectors::StopKind::Malformed {
            self.malformed_headers += 1;
        }
        let Some(r) = d.roce else {
            return;
        };
        self.roce.add(rate);
        let class = match r.operation {
            None => 7,
            Some(o) => {
                use Operation::*;
                match o {
                    SendFirst | SendMiddle | SendLast | SendLastImm | SendOnly | SendOnlyImm
                    | SendLastInv | SendOnlyInv => 0,
                    WriteFirst | WriteMiddle | WriteLast | WriteLastImm | WriteOnly
                    | WriteOnlyImm => 1,
                    ReadRequest => 2,
                    ReadResponseFirst | ReadResponseMiddle | ReadResponseLast
                    | ReadResponseOnly => 3,
                    Acknowledge | AtomicAcknowledge => 4,
                    CompareSwap | FetchAdd | AtomicWrite => 5,
                    Cnp => 6,
                    Resync | Flush => 7,
                }
            }
        };
        self.classes[class].add(rate);
        if r.is_cnp() {
            self.cnps.add(rate);
        }
        if let Some(a) = r.aeth {
            if matches!(a.kind(), AethKind::Nak(_) | AethKind::RnrNak { .. }) {
                self.naks.add(rate);
            }
        }
        match d.ecn() {
            Some(Ecn::Ce) => {
                self.ce.add(rate);
                self.ect.add(rate);
            }
            Some(Ecn::Ect0 | Ecn::Ect1) => self.ect.add(rate),
            _ => {}
        }
        if let Some((dissectors::Addr::Ip(src), dissectors::Addr::Ip(dst))) = d.endpoints() {
            self.count_pair(
                QpPair {
                    src,
                    dst,
                    dest_qp: r.bth.dest_qp.0,
                },
                rate,
            );
        }
    }

    fn count_pair(&mut self, pair: QpPair, rate: u32) {
        let rate = u64::from(rate.max(1));
        if let Some(e) = self.top.iter_mut().find(|e| e.pair == pair) {
            e.samples += 1;
            e.scaled += rate;
            return;
        }
        if self.top.len() < self.top_cap {
            self.top.push(TopEntry {
                pair,
                samples: 1,
                scaled: rate,
                error: 0,
            });
            return;
        }
        // space-saving: the smallest entry makes room and passes on its count
        if let Some(min) = self.top.iter_mut().min_by_key(|e| e.samples) {
            *min = TopEntry {
                pair,
                samples: min.samples + 1,
                scaled: min.scaled + rate,
                error: min.samples,
            };
        }
    }

    /// Counts a discarded packet notification of `reason`.
    pub fn discard(&mut self, reason: u32) {
        let i = dissectors::sflow::flow::drop_reason_name(reason)
            .and_then(|_| reason_slot(reason))
            .unwrap_or(REASONS - 1);
        self.discards[i] += 1;
    }
}

/// The slot of a named drop reason: 0..=15, then 256..=262 at 16..=22.
pub fn reason_slot(reason: u32) -> Option<usize> {
    match reason {
        0..=15 => Some(reason as usize),
        256..=262 => Some(reason as usize - 240),
        _ => None,
    }
}

/// The reason of a slot (the inverse of [`reason_slot`]); `None` for the last ("other").
pub fn slot_reason(slot: usize) -> Option<u32> {
    match slot {
        0..=15 => Some(slot as u32),
        16..=22 => Some(slot as u32 + 240),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bars_follow_the_sample_count() {
        let mut s = Sampled::default();
        assert_eq!(s.error_pct(), None);
        for _ in 0..100 {
            s.add(50);
        }
        assert_eq!(s.scaled, 5000);
        assert!((s.error_pct().unwrap() - 19.6).abs() < 1e-9);
    }

    #[test]
    fn top_pairs_are_bounded_and_keep_the_heavy_ones() {
        let mut p = Port::new(2);
        let pair = |q| QpPair {
            src: "192.0.2.1".parse().unwrap(),
            dst: "192.0.2.2".parse().unwrap(),
            dest_qp: q,
        };
        for _ in 0..10 {
            p.count_pair(pair(1), 10);
        }
        for q in 2..6 {
            p.count_pair(pair(q), 10);
        }
        let t = p.top();
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].pair.dest_qp, t[0].samples, t[0].scaled), (1, 10, 100));
        assert_eq!(t[1].pair.dest_qp, 5);
        assert_eq!(t[1].error, 3);
    }

    #[test]
    fn reason_slots_round_trip() {
        for r in (0..=15).chain(256..=262) {
            assert_eq!(slot_reason(reason_slot(r).unwrap()), Some(r));
        }
        assert_eq!(slot_reason(REASONS - 1), None);
        let mut p = Port::new(1);
        p.discard(259);
        p.discard(9999);
        assert_eq!(p.discards[reason_slot(259).unwrap()], 1);
        assert_eq!(p.discards[REASONS - 1], 1);
    }
}
