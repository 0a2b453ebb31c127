//! What the analyzer hands back: totals with the meanings of
//! `captures/README.md`, one summary per flow (typed keys and PSNs), the paired
//! connections, events, the link-level summaries, and findings — the problems as values,
//! worst first. Built once at the end of a run (allocation here is fine); the writers in
//! `crate::report` word and format it.

use super::events::{Event, EventLog};
use super::flow::FlowKey;
use super::net::{ArpSummary, ArpSymptom, NetSummary};
use super::Global;
use dissectors::{Addr, Psn, Qpn};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;

mod counters;
mod display;
mod finding;
mod opcodes;
mod qos;
mod summary;
mod totals;
pub(in crate::analysis) use finding::not_followed;
pub use finding::{
    AfterStop, Cause, Congestion, Finding, FindingKind, Location, NakError, Severity, Worst,
};
pub use opcodes::Opcodes;
pub use qos::{DscpShare, Qos, SplitConnection};
pub(super) use summary::{add_flow, add_live, summarize};
pub use totals::{Derived, Latency, Totals};

/// Everything reported about one flow; all it keeps once the flow is gone.
#[derive(Clone, Debug, Serialize)]
pub struct FlowSummary {
    /// The flow's id, unique in the run and in order of first appearance; events and
    /// connections name flows by it.
    pub id: u32,
    /// Network source address (IP, or GID/LID for RoCE v1 and native IB).
    #[serde(serialize_with = "display::addr")]
    pub src: Addr,
    /// Network destination address.
    #[serde(serialize_with = "display::addr")]
    pub dst: Addr,
    /// The BTH DestQP.
    #[serde(serialize_with = "display::qpn")]
    pub qp: Qpn,
    /// Id of the peer flow (the other direction of the RC connection); `None` when
    /// unpaired.
    pub peer: Option<u32>,
    /// Transport of its packets by name (RC, UC, RD, UD, XRC, or CNP for a flow that only
    /// carried CNPs).
    pub transport: &'static str,
    /// Encapsulation: `RoCEv2`, `RoCEv1` or `IB`.
    pub encap: &'static str,
    /// Timestamp of its first packet, ns since the Unix epoch.
    pub first_ts_ns: u64,
    /// Timestamp of its last packet, ns since the Unix epoch.
    pub last_ts_ns: u64,
    /// `last_ts_ns - first_ts_ns`, in seconds.
    pub duration_s: f64,
    /// RoCE packets of the flow.
    pub packets: u64,
    /// Bytes of those frames on the wire (original length, not the captured part).
    pub bytes: u64,
    /// Messages completed by the request stream (packets ending a message; every UD
    /// datagram).
    pub messages: u64,
    /// Throughput over the flow's duration in Gbit/s (0 when the duration is 0).
    pub gbps: f64,
    /// Packets per second over the flow's duration (0 when the duration is 0).
    pub pps: f64,
    /// Path MTU in bytes: the largest power-of-two payload (256-4096) of a First or Middle
    /// SEND / WRITE / READ response packet, taken from the peer when this direction carried
    /// none; `None` when unknown.
    pub pmtu: Option<u32>,
    /// DSCP of its first packet other than a CNP (IP header or GRH traffic class), the
    /// first CNP's for a flow of CNPs only; `None` without an IP header or GRH.
    pub dscp: Option<u8>,
    /// 802.1Q priority of its first tagged packet other than a CNP (the first CNP's for a
    /// flow of CNPs only); `None` when untagged.
    pub pcp: Option<u8>,
    /// VLAN id of that packet's outer tag; `None` when untagged.
    pub vlan: Option<u16>,
    /// Packets (CNPs aside) whose DSCP differed from the previous packet's.
    pub dscp_changes: u32,
    /// Packets (CNPs aside) whose PCP, or being tagged at all, differed from the previous
    /// packet's.
    pub pcp_changes: u32,
    /// Packets whose encapsulation (RoCE v1 / v2) differed from the previous packet's.
    pub encap_changes: u32,
    /// DSCP of the first CNP this flow carried; `None` without CNPs.
    pub cnp_dscp: Option<u8>,
    /// CNPs that answered this flow's data on another DSCP than the flow's (the switches
    /// queue them in another class than the data they slow down).
    pub cnp_other_dscp: u32,
    /// PSN of its first packet; `None` before any BTH packet.
    #[serde(serialize_with = "psn")]
    pub first_psn: Option<Psn>,
    /// PSN of its last packet; `None` before any BTH packet.
    #[serde(serialize_with = "psn")]
    pub last_psn: Option<Psn>,
    /// PSN of the first request it carried (its sender's own send sequence; the flow's
    /// first packet may be a response to the other side's requests); `None` without one.
    /// Not in the JSON document: what the CM and QP-table matching use.
    #[serde(skip)]
    pub first_request_psn: Option<Psn>,
    /// Packets with ECN = Not-ECT (00).
    pub ecn_not_ect: u64,
    /// Packets with ECN = ECT(1) (01).
    pub ecn_ect1: u64,
    /// Packets with ECN = ECT(0) (10).
    pub ecn_ect0: u64,
    /// Packets with ECN = CE (11).
    pub ecn_ce: u64,
    /// Packets whose ICRC was computed and matched.
    pub icrc_ok: u64,
    /// Packets whose ICRC was computed and did not match.
    pub icrc_bad: u64,
    /// Packets whose ICRC was not checked (cut by the snaplen, absent, or the frame
    /// malformed).
    pub icrc_unchecked: u64,
    /// The recovery and congestion counters, flattened into the summary's keys.
    #[serde(flatten)]
    pub counters: super::flow::FlowCounters,
    /// CNPs received by this flow's sender per second of the flow's duration.
    pub cnp_per_s: f64,
    /// Throughput in Gbit/s from the first packet to the first CNP received; `None` without
    /// a CNP or when that span is 0.
    pub gbps_before_first_cnp: Option<f64>,
    /// Throughput in Gbit/s from the last CNP received to the last packet; `None` without a
    /// CNP or when that span is 0.
    pub gbps_after_last_cnp: Option<f64>,
    /// Mean RNR delay the responder asked for, in µs, over the RNR waits measured; `None`
    /// without any.
    pub rnr_requested_us_mean: Option<f64>,
    /// Request with AckReq -> the ACK covering it.
    pub ack_latency: Latency,
    /// NAK -> the first resent packet.
    pub nak_to_resend: Latency,
    /// RNR NAK -> the first resent packet.
    pub rnr_wait: Latency,
    /// Original send -> resend, for retries started by the requester's timer.
    pub timeout_observed: Latency,
    /// First CE mark since the last CNP -> the CNP answering it.
    pub ce_to_cnp: Latency,
    /// Operation name -> packets, in name order.
    pub opcodes: Opcodes,
    /// RNR timer code -> RNR NAKs.
    pub rnr_timers: BTreeMap<u8, u32>,
    /// How the request stream ended without finishing (retries exhausted, stalled); the
    /// JSON says it in the counters `retry_exhausted` and `stalled` and the findings.
    #[serde(skip)]
    pub stop: Option<crate::analysis::stop::Stop>,
}

impl FlowSummary {
    /// The flow's key (source, destination, DestQP).
    pub fn key(&self) -> FlowKey {
        FlowKey {
            src: self.src,
            dst: self.dst,
            qp: self.qp,
        }
    }
}

/// Serializes a MAC address as `aa:bb:cc:dd:ee:ff`.
fn mac<S: Serializer>(v: &[u8; 6], s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&dissectors::ethernet::Mac(v))
}

/// Serializes an optional PSN as its number.
fn psn<S: Serializer>(v: &Option<Psn>, s: S) -> Result<S::Ok, S::Error> {
    v.map(|p| p.0).serialize(s)
}

/// A paired RC connection: the two flows that are its two directions.
#[derive(Clone, Debug, Serialize)]
pub struct Connection {
    /// The two flows (one per direction) of an RC connection.
    pub flows: [u32; 2],
    /// One end's address (the source of `flows[0]`).
    #[serde(serialize_with = "display::addr")]
    pub a: Addr,
    /// The other end's address (the destination of `flows[0]`).
    #[serde(serialize_with = "display::addr")]
    pub b: Addr,
    /// DestQP of each flow: the QP at the other end.
    #[serde(serialize_with = "display::qpns")]
    pub qps: [Qpn; 2],
}

/// PFC pauses one sender sent for one priority.
#[derive(Clone, Debug, Serialize)]
pub struct PfcPrio {
    /// The priority (0-7).
    pub priority: u8,
    /// Frames that named it (enabled in a PFC frame, or any MAC control PAUSE), pausing
    /// or resuming.
    pub frames: u64,
    /// Pause quanta those frames asked for, summed (one quantum is 512 bit times).
    pub quanta: u64,
    /// Those quanta as time at the configured link speed, ns.
    pub pause_ns: u64,
}

/// PFC / MAC control PAUSE frames one sender (source MAC) sent.
#[derive(Clone, Debug, Serialize)]
pub struct PfcSummary {
    /// The sender's MAC (`02:00:c6:12:00:02` in JSON).
    #[serde(serialize_with = "mac")]
    pub src_mac: [u8; 6],
    /// Its PAUSE / PFC frames, pausing or resuming, every priority together.
    pub frames: u64,
    /// One entry per priority its frames named, ascending.
    pub per_priority: Vec<PfcPrio>,
}

/// What the analyzer hands back at the end of a run (see the module docs).
#[derive(Clone, Debug)]
pub struct Report {
    /// Timestamp of the first frame, ns since the Unix epoch; `None` when no frame was
    /// read.
    pub first_ts_ns: Option<u64>,
    /// Timestamp of the last frame, ns since the Unix epoch (0 when no frame was read).
    pub last_ts_ns: u64,
    /// Frames timed before the frame read just before them (a capture out of time order);
    /// `derived.duration_s` spans the earliest to the latest frame whatever the order.
    pub time_backwards: u64,
    /// Whole-run counters.
    pub totals: Totals,
    /// Rates and ratios derived from the totals.
    pub derived: Derived,
    /// One summary per flow kept (up to `max_flow_summaries`), by id.
    pub flows: Vec<FlowSummary>,
    /// Paired RC connections.
    pub connections: Vec<Connection>,
    /// The problems found, worst first.
    pub findings: Vec<Finding>,
    /// PFC pauses per sender.
    pub pfc: Vec<PfcSummary>,
    /// ARP traffic per interface.
    pub arp: Vec<ArpSummary>,
    /// ARP / reply-path symptoms, worst first.
    pub arp_symptoms: Vec<ArpSymptom>,
    /// Events in time order (up to `max_events`; `totals.events_dropped` counts the rest).
    pub events: Vec<Event>,
    /// ACK and CE→CNP latencies of every flow in fixed buckets (the agent's histograms).
    pub latency: super::buckets::LatencyBuckets,
    /// Connection setups the CM messages of the capture describe (empty without CM).
    pub cm: Vec<crate::analysis::cm::CmSession>,
    /// Mirror sessions the frames came in (empty for a host capture).
    pub mirrors: Vec<crate::analysis::mirrors::MirrorSummary>,
    /// Frames of mirror sessions beyond `mirrors::MAX_MIRRORS`.
    pub mirrors_other_frames: u64,
}

/// The flows of a list sorted by id, found by id. The ids are held apart (4 bytes each,
/// 64 KB at 16,384 flows, in cache): a binary search over the summaries themselves (about
/// a kilobyte each) took a cache and TLB miss per probe, a third of making a report of
/// 8,192 connections. Ids are dense when no summary was dropped, so an id is first looked
/// for where it would be then.
pub(super) struct ById(Vec<u32>);

impl ById {
    /// `flows` must be sorted by id.
    pub fn of(flows: &[FlowSummary]) -> Self {
        ById(flows.iter().map(|f| f.id).collect())
    }

    /// The index of the flow `id`.
    #[inline]
    pub fn find(&self, id: u32) -> Option<usize> {
        let first = *self.0.first()?;
        let k = id.wrapping_sub(first) as usize;
        if self.0.get(k) == Some(&id) {
            return Some(k);
        }
        self.0.binary_search(&id).ok()
    }
}

pub(super) fn build(
    global: Global,
    sums: Totals,
    mut flows: Vec<FlowSummary>,
    connections: Vec<(u32, u32)>,
    log: EventLog,
    net: NetSummary,
    cut_short: &[(String, u64)],
) -> Report {
    flows.sort_by_key(|f| f.id);
    let by_id = ById::of(&flows);
    // The PMTU is a property of the connection: a flow that only carried small
    // packets (ACKs, READ requests) takes it from its peer.
    for i in 0..flows.len() {
        if flows[i].pmtu.is_none() {
            if let Some(p) = flows[i].peer {
                if let Some(j) = by_id.find(p) {
                    flows[i].pmtu = flows[j].pmtu;
                }
            }
        }
    }
    let mut t = Totals {
        frames: global.frames,
        roce_packets: global.roce_packets,
        // `sums.connections`: connections forgotten to bound memory (see `prune_connections`).
        connections: connections.len() as u64 + sums.connections,
        ce_marked: global.ce_marked,
        ecn_not_ect: global.ecn[0],
        ecn_ect1: global.ecn[1],
        ecn_ect0: global.ecn[2],
        cnp: global.cnp,
        malformed: global.malformed,
        truncated: global.truncated,
        unsupported: global.unsupported,
        pfc_pause_frames: net.pfc_frames,
        pfc_resume_frames: net.pfc_resume_frames,
        arp_unanswered: net.arp_unanswered,
        arp_cross_subnet_unanswered: net.arp_cross_subnet_unanswered,
        arp_reply_path_mismatch: net.arp_reply_path_mismatch,
        arp_duplicate_address: net.arp_duplicate_address,
        arp_state_dropped: net.arp_state_dropped,
        events_dropped: log.dropped,
        input_cut_short: cut_short.len() as u64,
        icrc_cut: global.icrc_cut,
        cut_at_bytes: match global.cut_at {
            (lo, hi) if lo == hi => hi,
            _ => 0,
        },
        ..sums
    };
    // Both the flows' sums and the frames without a matching CE flow count here.
    t.cnp_without_ce = sums.cnp_without_ce + global.cnp_unmatched;
    for a in &net.arp {
        t.arp_requests += a.requests;
        t.arp_replies += a.replies;
        t.arp_cross_subnet += a.cross_subnet_requests;
    }
    // From the earliest to the latest frame: a capture out of time order has a span too.
    let dur_ns = global
        .first_ts
        .map_or(0, |_| global.last_ts.saturating_sub(global.min_ts));
    let secs = dur_ns as f64 / 1e9;
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let naks = t.naks();
    let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    let derived = Derived {
        duration_s: secs,
        cnp_per_s: per_s(t.cnp),
        ce_per_s: per_s(t.ce_marked),
        nak_per_s: per_s(naks),
        naks,
        retransmit_ratio: ratio(t.retransmitted_packets, t.roce_packets),
        ce_ratio: ratio(t.ce_marked, t.roce_packets),
    };
    let connections: Vec<Connection> = connections
        .iter()
        .filter_map(|&(a, b)| {
            let fa = by_id.find(a)?;
            let fb = by_id.find(b)?;
            Some(Connection {
                flows: [a, b],
                a: flows[fa].src,
                b: flows[fa].dst,
                qps: [flows[fa].qp, flows[fb].qp],
            })
        })
        .collect();
    let mut events = log.events;
    // Gaps settled at the end carry the time they opened: put them in time order.
    events.sort_by_key(|e| e.t_ns);
    let qos = qos::findings(&global.qos, &flows, &by_id, &connections, &mut t);
    let mut findings = finding::findings(&t, &flows, &net, &events);
    findings.extend(qos);
    findings.extend(
        cut_short
            .iter()
            .map(|(file, n)| finding::cut_short(file, *n)),
    );
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    Report {
        first_ts_ns: global.first_ts,
        last_ts_ns: global.last_ts,
        time_backwards: global.time_backwards,
        totals: t,
        derived,
        flows,
        connections,
        findings,
        pfc: net.pfc,
        arp: net.arp,
        arp_symptoms: net.symptoms,
        events,
        latency: global.latency,
        cm: Vec::new(),
        mirrors: Vec::new(),
        mirrors_other_frames: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::ById;

    #[test]
    fn by_id_finds_every_id_dense_or_not_and_nothing_else() {
        let dense = ById((7..1000).collect());
        for id in 7..1000 {
            assert_eq!(dense.find(id), Some(id as usize - 7));
        }
        assert_eq!(dense.find(6), None);
        assert_eq!(dense.find(1000), None);
        assert_eq!(dense.find(u32::MAX), None);
        // Summaries dropped: ids with holes, the dense guess misses and the search finds.
        let ids: Vec<u32> = (0..3000).filter(|i| i % 3 != 1).collect();
        let sparse = ById(ids.clone());
        for (k, &id) in ids.iter().enumerate() {
            assert_eq!(sparse.find(id), Some(k));
        }
        assert_eq!(sparse.find(1), None);
        assert_eq!(sparse.find(2998), None);
        assert_eq!(ById(Vec::new()).find(0), None);
    }
}
