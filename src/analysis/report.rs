//! What the analyzer hands back: totals with the meanings of
//! `captures/README.md`, one summary per flow, the paired connections, events, and
//! findings — the problems in plain words, worst first. Built once at the end of a run
//! (allocation here is fine); the writers in `crate::report::analyze` only format it.

use super::flow::{Delays, Flow, Trigger, N_OPS};
use super::hist::LogHist;
use super::net::NetSummary;
use super::{EventLog, Global};
use dissectors::{Operation, RoceVersion, Transport};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// What happened, for the event list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    PsnGap,
    GapRecovered,
    GapUnrecovered,
    Nak,
    RnrNak,
    Retransmission,
    ReadRerequest,
    /// A request packet seen again that the requester did not send again (a copy the
    /// network made).
    Duplicate,
    /// An original that passed the tap after later PSNs: it fills its gap, no resend.
    Reordered,
    CnpWithoutCe,
    ArpCrossSubnet,
    ArpUnanswered,
    /// An address's traffic to a peer leaves another interface than the one the peer's
    /// requests came in on (`arp`: address, peer; `iface`: where it leaves).
    ArpReplyPathMismatch,
    /// A second MAC claims an address on an interface (`arp`: the address twice).
    ArpDuplicateAddress,
}

#[derive(Clone, Debug, Serialize)]
pub struct Event {
    pub t_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<u32>,
    pub kind: EventKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psn: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psn_end: Option<u32>,
    /// Missing PSNs of a gap, packets of a retransmission run, ARP requests.
    pub count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Trigger>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<u64>,
    /// NAK code (0 PSN sequence error ... 4 invalid RD request) or RNR timer code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_loss: Option<bool>,
    /// ARP sender and target address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arp: Option<(Ipv4Addr, Ipv4Addr)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iface: Option<u32>,
}

impl Event {
    pub fn new(t_ns: u64, flow: u32, kind: EventKind) -> Self {
        Event {
            flow: Some(flow),
            ..Event::link(t_ns, kind)
        }
    }
    pub fn link(t_ns: u64, kind: EventKind) -> Self {
        Event {
            t_ns,
            flow: None,
            kind,
            psn: None,
            psn_end: None,
            count: 0,
            trigger: None,
            latency_ns: None,
            code: None,
            capture_loss: None,
            arp: None,
            iface: None,
        }
    }
    pub fn psn(mut self, p: dissectors::Psn) -> Self {
        self.psn = Some(p.0);
        self
    }
}

/// Whole-run numbers. The keys named in `captures/README.md` keep exactly those meanings.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Totals {
    /// Every frame read.
    pub frames: u64,
    /// Frames with a BTH (RoCE v2, RoCE v1, native IB).
    pub roce_packets: u64,
    /// Flows (src, dst, DestQP) seen, live or expired.
    pub flows: u64,
    pub connections: u64,
    /// NAKs with syndrome 0x60 (PSN sequence error); the others by code below.
    pub nak_psn_seq: u64,
    pub nak_invalid_request: u64,
    pub nak_remote_access: u64,
    pub nak_remote_operational: u64,
    pub nak_invalid_rd_request: u64,
    pub nak_reserved: u64,
    /// RNR NAKs (syndrome 0x20-0x3F).
    pub rnr_nak: u64,
    /// Times a stream's PSN jumped past the next expected one: a request stream, or the
    /// responses of a READ (a packet lost upstream of the tap, or missed by the capture).
    pub psn_gap_events: u64,
    /// PSNs skipped by those jumps.
    pub missing_psns: u64,
    /// Gaps whose first missing PSN later passed the tap in a resend.
    pub recovered_gap_events: u64,
    /// Gaps never filled.
    pub unrecovered_gap_events: u64,
    /// Unfilled gaps with no NAK naming them (or that the responder acknowledged
    /// anyway): most likely packets the capture missed.
    pub capture_loss_gap_events: u64,
    /// Packets sent again: go-back-N resends after a NAK (the one filling a gap
    /// included), after an RNR NAK, after a timeout, and READ responses sent again after a
    /// re-issued READ Request (that request itself is not counted).
    pub retransmitted_packets: u64,
    /// Retries the requester started (go-back-N rewinds, READ requests asked again),
    /// by what started them: a NAK, an RNR NAK, the requester's timer, READ responses
    /// missing.
    pub retransmission_episodes: u64,
    pub nak_retransmission_episodes: u64,
    pub rnr_retransmission_episodes: u64,
    pub timeout_retransmission_episodes: u64,
    pub read_retransmission_episodes: u64,
    /// Request packets seen again that nothing asked for, within moments of the first
    /// (the same IPv4 identification): copies made by the network, not resends.
    pub duplicate_packets: u64,
    /// Originals that passed the tap after later PSNs and filled their gap with no
    /// rewind: reordering, not loss.
    pub reordered_packets: u64,
    pub nak_retransmissions: u64,
    pub rnr_retransmissions: u64,
    /// Packets resent with no NAK although the original passed the tap.
    pub timeout_retransmissions: u64,
    pub read_retransmissions: u64,
    pub unknown_retransmissions: u64,
    pub reads: u64,
    /// READ Requests re-issued for the rest of a READ (PSN inside the original's range).
    pub read_rerequests: u64,
    pub read_missing_responses: u64,
    pub read_responses_resent: u64,
    /// Packets with ECN = CE (IP or GRH traffic class).
    pub ce_marked: u64,
    pub ecn_not_ect: u64,
    pub ecn_ect0: u64,
    pub ecn_ect1: u64,
    /// CNPs (opcode 0x81).
    pub cnp: u64,
    /// CE marks after a flow's last CNP, never answered.
    pub ce_without_cnp: u64,
    pub cnp_without_ce: u64,
    pub icrc_ok: u64,
    pub icrc_bad: u64,
    /// RoCE packets whose ICRC was cut by the snaplen or not computed.
    pub icrc_unchecked: u64,
    pub malformed: u64,
    pub truncated: u64,
    /// Frames of protocols the decoder does not go into (TCP, IPv6 ND, ...).
    pub unsupported: u64,
    /// MAC control PAUSE and PFC frames that pause at least one priority (XOFF).
    pub pfc_pause_frames: u64,
    /// PFC frames that only resume priorities (every enabled quanta 0, XON).
    pub pfc_resume_frames: u64,
    pub pfc_stalls: u64,
    pub arp_requests: u64,
    pub arp_replies: u64,
    /// ARP request packets (retries included) that no reply on their interface answered.
    pub arp_unanswered: u64,
    /// ARP asks (interface, sender, target) whose sender and target are in different
    /// subnets (`--arp-prefix-len`, /24), link-local 169.254.0.0/16 never counting.
    pub arp_cross_subnet: u64,
    /// Of those, the asks never answered on their interface (or retried 3+ times after
    /// their last answer): the symptom of a pod without source-based routing.
    pub arp_cross_subnet_unanswered: u64,
    /// (address, peer) pairs where the address answered ARP or received IP from the peer
    /// on one interface, sent nothing back there, and sent ARP/IP to the peer on another.
    pub arp_reply_path_mismatch: u64,
    /// (interface, address) claimed by two different MACs (ARP sender).
    pub arp_duplicate_address: u64,
    /// ARP asks, address pairs and claims not followed because a table was full.
    pub arp_state_dropped: u64,
    pub events_dropped: u64,
    /// Inputs that end in the middle of a record (a capture killed mid-write, a full
    /// disk, a partial copy): every complete frame before the cut was analyzed.
    pub input_cut_short: u64,
    /// Flows counted in the totals whose summaries were not kept (beyond
    /// `--max-flows`, to bound memory).
    pub flow_summaries_dropped: u64,
}

/// Rates derived from the totals (usable in `--fail-on` rules).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Derived {
    pub duration_s: f64,
    pub cnp_per_s: f64,
    pub ce_per_s: f64,
    pub nak_per_s: f64,
    pub naks: u64,
    pub retransmit_ratio: f64,
    pub ce_ratio: f64,
}

/// min / median / p99 / max of a latency, every key always present (CSV columns).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Latency {
    pub count: u64,
    pub min_ns: Option<u64>,
    pub median_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub max_ns: Option<u64>,
}

impl Latency {
    fn of(h: &LogHist) -> Self {
        match h.summary() {
            None => Latency::default(),
            Some(q) => Latency {
                count: q.count,
                min_ns: Some(q.min_ns),
                median_ns: Some(q.median_ns),
                p99_ns: Some(q.p99_ns),
                max_ns: Some(q.max_ns),
            },
        }
    }
}

/// Everything reported about one flow; all it keeps once the flow is gone.
#[derive(Clone, Debug, Serialize)]
pub struct FlowSummary {
    pub id: u32,
    pub src: String,
    pub dst: String,
    pub qp: String,
    pub peer: Option<u32>,
    pub transport: &'static str,
    pub encap: &'static str,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    pub duration_s: f64,
    pub packets: u64,
    pub bytes: u64,
    pub messages: u64,
    pub gbps: f64,
    pub pps: f64,
    pub pmtu: Option<u32>,
    pub dscp: Option<u8>,
    pub pcp: Option<u8>,
    pub vlan: Option<u16>,
    pub first_psn: Option<u32>,
    pub last_psn: Option<u32>,
    pub ecn_not_ect: u64,
    pub ecn_ect1: u64,
    pub ecn_ect0: u64,
    pub ecn_ce: u64,
    pub icrc_ok: u64,
    pub icrc_bad: u64,
    pub icrc_unchecked: u64,
    #[serde(flatten)]
    pub c: super::flow::FlowCounters,
    pub cnp_per_s: f64,
    pub gbps_before_first_cnp: Option<f64>,
    pub gbps_after_last_cnp: Option<f64>,
    pub rnr_requested_us_mean: Option<f64>,
    pub ack_latency: Latency,
    pub nak_to_resend: Latency,
    pub rnr_wait: Latency,
    pub timeout_observed: Latency,
    pub ce_to_cnp: Latency,
    /// Operation name -> packets.
    pub opcodes: BTreeMap<&'static str, u64>,
    /// RNR timer code -> RNR NAKs.
    pub rnr_timers: BTreeMap<u8, u32>,
}

impl FlowSummary {
    /// `198.18.0.1 → 198.18.0.2 QP 0x000201`
    pub fn label(&self) -> String {
        format!("{} → {} QP {}", self.src, self.dst, self.qp)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Connection {
    /// The two flows (one per direction) of an RC connection.
    pub flows: [u32; 2],
    pub a: String,
    pub b: String,
    /// DestQP of each flow: the QP at the other end.
    pub qps: [String; 2],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub kind: &'static str,
    pub count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t_ns: Option<u64>,
    pub message: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct PfcPrio {
    pub priority: u8,
    pub frames: u64,
    pub quanta: u64,
    pub pause_ns: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PfcSummary {
    pub src_mac: String,
    pub frames: u64,
    pub per_priority: Vec<PfcPrio>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ArpSummary {
    pub iface: u32,
    pub name: String,
    pub requests: u64,
    pub replies: u64,
    pub gratuitous: u64,
    pub unanswered: u64,
    pub cross_subnet_requests: u64,
    pub cross_subnet_unanswered: u64,
    pub unanswered_asks: Vec<String>,
}

/// One observation behind an ARP symptom.
#[derive(Clone, Debug, Serialize)]
pub struct ArpEvidence {
    pub t_ns: u64,
    pub iface: String,
    pub what: String,
}

/// A capture-side ARP / reply-path symptom with its evidence.
#[derive(Clone, Debug, Serialize)]
pub struct ArpSymptom {
    /// `arp_cross_subnet_unanswered`, `arp_cross_subnet` (answered, info),
    /// `arp_reply_path_mismatch`, `arp_duplicate_address`.
    pub kind: &'static str,
    pub severity: Severity,
    /// Where it shows (for a reply-path mismatch: where the traffic leaves).
    pub iface: String,
    /// For a reply-path mismatch: where the peer's requests came in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_iface: Option<String>,
    /// The address asked for / the address whose replies go astray / the claimed one.
    pub addr: Ipv4Addr,
    /// The asking host / the peer.
    pub peer: Ipv4Addr,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub macs: Vec<String>,
    pub t_ns: u64,
    pub count: u64,
    pub evidence: Vec<ArpEvidence>,
    pub message: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub first_ts_ns: Option<u64>,
    pub last_ts_ns: u64,
    pub totals: Totals,
    pub derived: Derived,
    pub flows: Vec<FlowSummary>,
    pub connections: Vec<Connection>,
    pub findings: Vec<Finding>,
    pub pfc: Vec<PfcSummary>,
    pub arp: Vec<ArpSummary>,
    /// ARP / reply-path symptoms, worst first.
    pub arp_symptoms: Vec<ArpSymptom>,
    pub events: Vec<Event>,
}

/// Operation for each index of `Flow::ops` (the enum's declaration order).
const OPS: [Operation; N_OPS] = Operation::ALL;

fn gbps(bytes: u64, ns: u64) -> Option<f64> {
    (ns > 0).then(|| bytes as f64 * 8.0 / ns as f64)
}

pub(super) fn summarize(f: &Flow) -> FlowSummary {
    let none = Delays::default();
    let delays = f.delays.as_deref().unwrap_or(&none);
    let dur = f.last_ts.saturating_sub(f.first_ts);
    let secs = dur as f64 / 1e9;
    let mut opcodes = BTreeMap::new();
    for (i, &n) in f.ops.iter().enumerate() {
        if n > 0 {
            opcodes.insert(OPS[i].name(), n);
        }
    }
    if f.other_ops > 0 {
        opcodes.insert("other", f.other_ops);
    }
    let timers = f.rnr_timers.as_deref();
    let rnr_timers = (0..32u8)
        .filter_map(|t| timers.map(|x| (t, x[usize::from(t)])))
        .filter(|&(_, n)| n > 0)
        .collect();
    FlowSummary {
        id: f.id,
        src: f.key.src.to_string(),
        dst: f.key.dst.to_string(),
        qp: f.key.qp.to_string(),
        peer: f.peer_id,
        transport: f.transport.unwrap_or(Transport::Cnp).name(),
        encap: match f.version {
            RoceVersion::V2 => "RoCEv2",
            RoceVersion::V1 => "RoCEv1",
            RoceVersion::Ib => "IB",
        },
        first_ts_ns: f.first_ts,
        last_ts_ns: f.last_ts,
        duration_s: secs,
        packets: f.packets,
        bytes: f.bytes,
        messages: f.messages,
        gbps: gbps(f.bytes, dur).unwrap_or(0.0),
        pps: if secs > 0.0 {
            f.packets as f64 / secs
        } else {
            0.0
        },
        pmtu: (f.pmtu > 0).then_some(f.pmtu),
        dscp: f.dscp,
        pcp: f.pcp,
        vlan: f.vlan,
        first_psn: f.first_psn.map(|p| p.0),
        last_psn: f.last_psn.map(|p| p.0),
        ecn_not_ect: f.ecn[0],
        ecn_ect1: f.ecn[1],
        ecn_ect0: f.ecn[2],
        ecn_ce: f.ecn[3],
        icrc_ok: f.icrc[0],
        icrc_bad: f.icrc[1],
        icrc_unchecked: f.icrc[2],
        c: f.counters,
        cnp_per_s: if secs > 0.0 {
            f.counters.cnp_received as f64 / secs
        } else {
            0.0
        },
        gbps_before_first_cnp: f
            .first_cnp
            .and_then(|(t, b)| gbps(b, t.saturating_sub(f.first_ts))),
        gbps_after_last_cnp: f
            .last_cnp
            .and_then(|(t, b)| gbps(f.bytes - b, f.last_ts.saturating_sub(t))),
        rnr_requested_us_mean: (delays.rnr_wait.count() > 0)
            .then(|| f.rnr_requested_us / delays.rnr_wait.count() as f64),
        ack_latency: Latency::of(&f.ack_latency),
        nak_to_resend: Latency::of(&delays.nak_to_resend),
        rnr_wait: Latency::of(&delays.rnr_wait),
        timeout_observed: Latency::of(&delays.timeout_observed),
        ce_to_cnp: Latency::of(&delays.ce_to_cnp),
        opcodes,
        rnr_timers,
    }
}

/// Adds a flow's counters to the run's totals (done when the flow is retired, so the
/// totals stay exact even when its summary is not kept).
pub(super) fn add_flow(t: &mut Totals, f: &FlowSummary) {
    t.flows += 1;
    let c = &f.c;
    t.nak_psn_seq += c.nak_psn_seq;
    t.nak_invalid_request += c.nak_invalid_request;
    t.nak_remote_access += c.nak_remote_access;
    t.nak_remote_operational += c.nak_remote_operational;
    t.nak_invalid_rd_request += c.nak_invalid_rd_request;
    t.nak_reserved += c.nak_reserved;
    t.rnr_nak += c.rnr_nak;
    t.psn_gap_events += c.psn_gap_events;
    t.missing_psns += c.missing_psns;
    t.recovered_gap_events += c.recovered_gap_events;
    t.unrecovered_gap_events += c.unrecovered_gap_events;
    t.capture_loss_gap_events += c.capture_loss_gap_events;
    t.retransmitted_packets += c.retransmitted_packets;
    t.retransmission_episodes += c.retransmission_episodes;
    t.nak_retransmission_episodes += c.nak_retransmission_episodes;
    t.rnr_retransmission_episodes += c.rnr_retransmission_episodes;
    t.timeout_retransmission_episodes += c.timeout_retransmission_episodes;
    t.read_retransmission_episodes += c.read_retransmission_episodes;
    t.duplicate_packets += c.duplicate_packets;
    t.reordered_packets += c.reordered_packets;
    t.nak_retransmissions += c.nak_retransmissions;
    t.rnr_retransmissions += c.rnr_retransmissions;
    t.timeout_retransmissions += c.timeout_retransmissions;
    t.read_retransmissions += c.read_retransmissions;
    t.unknown_retransmissions += c.unknown_retransmissions;
    t.reads += c.reads;
    t.read_rerequests += c.read_rerequests;
    t.read_missing_responses += c.read_missing_responses;
    t.read_responses_resent += c.read_responses_resent;
    t.ce_without_cnp += c.ce_without_cnp;
    t.cnp_without_ce += c.cnp_without_ce;
    t.icrc_ok += f.icrc_ok;
    t.icrc_bad += f.icrc_bad;
    t.icrc_unchecked += f.icrc_unchecked;
    t.pfc_stalls += c.pfc_stalls;
}

pub(super) fn build(
    g: Global,
    sums: Totals,
    mut flows: Vec<FlowSummary>,
    connections: Vec<(u32, u32)>,
    log: EventLog,
    net: NetSummary,
    cut_short: &[(String, u64)],
) -> Report {
    flows.sort_by_key(|f| f.id);
    // The PMTU is a property of the connection: a flow that only carried small
    // packets (ACKs, READ requests) takes it from its peer.
    for i in 0..flows.len() {
        if flows[i].pmtu.is_none() {
            if let Some(p) = flows[i].peer {
                if let Ok(j) = flows.binary_search_by_key(&p, |f| f.id) {
                    flows[i].pmtu = flows[j].pmtu;
                }
            }
        }
    }
    let mut t = Totals {
        frames: g.frames,
        roce_packets: g.roce_packets,
        connections: connections.len() as u64,
        ce_marked: g.ce_marked,
        ecn_not_ect: g.ecn[0],
        ecn_ect1: g.ecn[1],
        ecn_ect0: g.ecn[2],
        cnp: g.cnp,
        malformed: g.malformed,
        truncated: g.truncated,
        unsupported: g.unsupported,
        pfc_pause_frames: net.pfc_frames,
        pfc_resume_frames: net.pfc_resume_frames,
        arp_unanswered: net.arp_unanswered,
        arp_cross_subnet_unanswered: net.arp_cross_subnet_unanswered,
        arp_reply_path_mismatch: net.arp_reply_path_mismatch,
        arp_duplicate_address: net.arp_duplicate_address,
        arp_state_dropped: net.arp_state_dropped,
        events_dropped: log.dropped,
        input_cut_short: cut_short.len() as u64,
        ..sums
    };
    // Both the flows' sums and the frames without a matching CE flow count here.
    t.cnp_without_ce = sums.cnp_without_ce + g.cnp_unmatched;
    for a in &net.arp {
        t.arp_requests += a.requests;
        t.arp_replies += a.replies;
        t.arp_cross_subnet += a.cross_subnet_requests;
    }
    let dur_ns = g.first_ts.map_or(0, |f| g.last_ts.saturating_sub(f));
    let secs = dur_ns as f64 / 1e9;
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let naks = t.nak_psn_seq
        + t.nak_invalid_request
        + t.nak_remote_access
        + t.nak_remote_operational
        + t.nak_invalid_rd_request
        + t.nak_reserved;
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
    let connections = connections
        .iter()
        .filter_map(|&(a, b)| {
            let fa = flows.binary_search_by_key(&a, |f| f.id).ok()?;
            let fb = flows.binary_search_by_key(&b, |f| f.id).ok()?;
            Some(Connection {
                flows: [a, b],
                a: flows[fa].src.clone(),
                b: flows[fa].dst.clone(),
                qps: [flows[fa].qp.clone(), flows[fb].qp.clone()],
            })
        })
        .collect();
    let first = g.first_ts.unwrap_or(0);
    let mut events = log.events;
    // Gaps settled at the end carry the time they opened: put them in time order.
    events.sort_by_key(|e| e.t_ns);
    let mut findings = findings(&t, &flows, &net, &events, first);
    for (file, frames) in cut_short {
        findings.push(Finding {
            severity: Severity::Warning,
            kind: "input_cut_short",
            count: *frames,
            flow: None,
            t_ns: None,
            message: format!(
                "{file} was cut short: it ends in the middle of a record after {frames} complete frames (a capture killed mid-write, a full disk or a partial copy); every complete frame was analyzed, what came after the cut is unknown"
            ),
        });
    }
    findings.sort_by_key(|f| f.severity);
    Report {
        first_ts_ns: g.first_ts,
        last_ts_ns: g.last_ts,
        totals: t,
        derived,
        flows,
        connections,
        findings,
        pfc: net.pfc,
        arp: net.arp,
        arp_symptoms: net.symptoms,
        events,
    }
}

fn us(ns: u64) -> String {
    if ns >= 10_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} µs", ns as f64 / 1e3)
    }
}

/// The flows with the most of something, as "label (n)" for messages.
fn worst(flows: &[FlowSummary], n: impl Fn(&FlowSummary) -> u64) -> (String, Option<&FlowSummary>) {
    let mut v: Vec<&FlowSummary> = flows.iter().filter(|f| n(f) > 0).collect();
    v.sort_by_key(|f| std::cmp::Reverse(n(f)));
    let shown: Vec<String> = v
        .iter()
        .take(3)
        .map(|f| format!("{} ({})", f.label(), n(f)))
        .collect();
    let more = if v.len() > 3 {
        format!(" and {} more flows", v.len() - 3)
    } else {
        String::new()
    };
    (format!("{}{}", shown.join(", "), more), v.first().copied())
}

fn first_event(events: &[Event], flow: Option<u32>, pred: impl Fn(&Event) -> bool) -> Option<u64> {
    events
        .iter()
        .filter(|e| flow.is_none() || e.flow == flow)
        .find(|e| pred(e))
        .map(|e| e.t_ns)
}

fn findings(
    t: &Totals,
    flows: &[FlowSummary],
    net: &NetSummary,
    events: &[Event],
    first: u64,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let at = |ts: Option<u64>| {
        ts.map(|x| format!(", first at {:.6} s", x.saturating_sub(first) as f64 / 1e9))
            .unwrap_or_default()
    };
    let mut add = |severity, kind, count, flow: Option<&FlowSummary>, ts: Option<u64>, message| {
        out.push(Finding {
            severity,
            kind,
            count,
            flow: flow.map(|f| f.id),
            t_ns: ts,
            message,
        })
    };
    if t.nak_psn_seq > 0 {
        let (w, f) = worst(flows, |f| f.c.nak_psn_seq);
        let ts = first_event(events, None, |e| {
            e.kind == EventKind::Nak && e.code == Some(0)
        });
        let lat: Vec<u64> = flows
            .iter()
            .filter_map(|f| f.nak_to_resend.median_ns)
            .collect();
        let lat = lat
            .iter()
            .max()
            .map(|l| format!("; NAK→resend up to {} (per-flow median)", us(*l)))
            .unwrap_or_default();
        add(
            Severity::Error,
            "nak_psn_seq",
            t.nak_psn_seq,
            f,
            ts,
            format!(
                "{} NAKs (PSN sequence error): packets were lost in the network and resent with go-back-N — {} packets retransmitted after NAKs{lat}{}; on {w}",
                t.nak_psn_seq, t.nak_retransmissions, at(ts)
            ),
        );
    }
    if t.timeout_retransmissions > 0 {
        let (w, f) = worst(flows, |f| f.c.timeout_retransmissions);
        let obs = flows
            .iter()
            .filter_map(|f| f.timeout_observed.median_ns)
            .max()
            .map(|l| format!(" after about {}", us(l)))
            .unwrap_or_default();
        let ts = first_event(events, None, |e| e.trigger == Some(Trigger::Timeout));
        add(
            Severity::Error,
            "timeout_retransmissions",
            t.timeout_retransmissions,
            f,
            ts,
            format!(
                "{} packets resent after a transport timeout{obs} with no NAK: the originals passed the tap and were lost after it (tail loss){}; on {w}",
                t.timeout_retransmissions, at(ts)
            ),
        );
    }
    let unrecovered_net = t.unrecovered_gap_events - t.capture_loss_gap_events;
    if unrecovered_net > 0 {
        let (w, f) = worst(flows, |f| {
            f.c.unrecovered_gap_events - f.c.capture_loss_gap_events
        });
        add(
            Severity::Error,
            "unrecovered_gaps",
            unrecovered_net,
            f,
            None,
            format!(
                "{unrecovered_net} PSN gaps were NAKed but no resend of the missing PSNs was captured; on {w}"
            ),
        );
    }
    for (kind, n, what, sel) in [
        (
            "nak_invalid_request",
            t.nak_invalid_request,
            "invalid request",
            0usize,
        ),
        (
            "nak_remote_access",
            t.nak_remote_access,
            "remote access error (bad R_Key, address or permissions)",
            1,
        ),
        (
            "nak_remote_operational",
            t.nak_remote_operational,
            "remote operational error",
            2,
        ),
        (
            "nak_invalid_rd_request",
            t.nak_invalid_rd_request,
            "invalid RD request",
            3,
        ),
        ("nak_reserved", t.nak_reserved, "reserved NAK code", 4),
    ] {
        if n > 0 {
            let get = |f: &FlowSummary| match sel {
                0 => f.c.nak_invalid_request,
                1 => f.c.nak_remote_access,
                2 => f.c.nak_remote_operational,
                3 => f.c.nak_invalid_rd_request,
                _ => f.c.nak_reserved,
            };
            let (w, f) = worst(flows, get);
            let ts = first_event(events, f.map(|x| x.id), |e| {
                e.kind == EventKind::Nak && e.code != Some(0)
            });
            add(
                Severity::Error,
                kind,
                n,
                f,
                ts,
                format!(
                    "{n} NAKs: {what} — the QP goes to the error state{}; on {w}",
                    at(ts)
                ),
            );
        }
    }
    if t.icrc_bad > 0 {
        let checked = t.icrc_ok + t.icrc_bad;
        if t.icrc_ok == 0 {
            add(
                Severity::Warning,
                "icrc_not_preserved",
                t.icrc_bad,
                None,
                None,
                format!(
                    "every ICRC fails ({} of {} checked packets): this capture path does not preserve the ICRC (typical of the mlx5 RDMA sniffer) — not evidence of corruption",
                    t.icrc_bad, checked
                ),
            );
        } else {
            let (w, f) = worst(flows, |f| f.icrc_bad);
            add(
                Severity::Error,
                "icrc_bad",
                t.icrc_bad,
                f,
                None,
                format!("{} of {checked} packets fail the ICRC (corrupted in flight or by the capture); on {w}", t.icrc_bad),
            );
        }
    }
    if t.capture_loss_gap_events > 0 {
        let (w, f) = worst(flows, |f| f.c.capture_loss_gap_events);
        let ts = first_event(events, None, |e| e.capture_loss == Some(true));
        add(
            Severity::Warning,
            "capture_loss",
            t.capture_loss_gap_events,
            f,
            ts,
            format!(
                "{} PSN gaps ({} PSNs in all gaps) were never filled, with no NAK and no resend: the capture most likely missed these packets (sniffer overrun), they were not lost in the network{}; on {w}",
                t.capture_loss_gap_events, t.missing_psns, at(ts)
            ),
        );
    }
    if t.rnr_nak > 0 {
        let (w, f) = worst(flows, |f| f.c.rnr_nak);
        let ts = first_event(events, None, |e| e.kind == EventKind::RnrNak);
        let waits: Vec<String> = flows
            .iter()
            .filter(|f| f.rnr_wait.count > 0)
            .take(3)
            .map(|f| {
                format!(
                    "requested {:.0} µs, waited {} median",
                    f.rnr_requested_us_mean.unwrap_or(0.0),
                    us(f.rnr_wait.median_ns.unwrap_or(0))
                )
            })
            .collect();
        add(
            Severity::Warning,
            "rnr_nak",
            t.rnr_nak,
            f,
            ts,
            format!(
                "{} RNR NAKs: the receiver had no receive buffer posted (not a network loss); {} packets resent after the wait{}{}; on {w}",
                t.rnr_nak,
                t.rnr_retransmissions,
                if waits.is_empty() { String::new() } else { format!(" ({})", waits.join("; ")) },
                at(ts)
            ),
        );
    }
    if t.read_rerequests > 0 {
        let (w, f) = worst(flows, |f| f.c.read_rerequests);
        let ts = first_event(events, None, |e| e.kind == EventKind::ReadRerequest);
        add(
            Severity::Warning,
            "read_rerequests",
            t.read_rerequests,
            f,
            ts,
            format!(
                "{} READ Requests re-issued for the rest of a READ whose responses went missing; {} READ responses sent again{}; on {w}",
                t.read_rerequests, t.read_retransmissions, at(ts)
            ),
        );
    }
    if t.unknown_retransmissions > 0 {
        let (w, f) = worst(flows, |f| f.c.unknown_retransmissions);
        add(
            Severity::Warning,
            "unknown_retransmissions",
            t.unknown_retransmissions,
            f,
            None,
            format!(
                "{} packets were sent again with no NAK seen and no original captured (trigger unknown); on {w}",
                t.unknown_retransmissions
            ),
        );
    }
    if t.duplicate_packets > 0 {
        let (w, f) = worst(flows, |f| f.c.duplicate_packets);
        add(
            Severity::Info,
            "duplicate_packets",
            t.duplicate_packets,
            f,
            first_event(events, None, |e| e.kind == EventKind::Duplicate),
            format!(
                "{} request packets were seen twice although nothing asked for them again (same IPv4 identification, or within 8 µs): copies made by the network or the capture path, not retransmissions; on {w}",
                t.duplicate_packets
            ),
        );
    }
    if t.reordered_packets > 0 {
        let (w, f) = worst(flows, |f| f.c.reordered_packets);
        add(
            Severity::Info,
            "reordered_packets",
            t.reordered_packets,
            f,
            first_event(events, None, |e| e.kind == EventKind::Reordered),
            format!(
                "{} packets arrived after later PSNs and filled their gap with no resend: reordering on the path, not loss (the responder may still NAK and the requester resend); on {w}",
                t.reordered_packets
            ),
        );
    }
    if t.pfc_pause_frames > 0 {
        let srcs: Vec<String> = net
            .pfc
            .iter()
            .map(|s| {
                let prios: Vec<String> = s
                    .per_priority
                    .iter()
                    .map(|p| format!("prio {} x{} ({})", p.priority, p.frames, us(p.pause_ns)))
                    .collect();
                format!("{}: {}", s.src_mac, prios.join(", "))
            })
            .collect();
        let (w, f) = worst(flows, |f| f.c.pfc_stalls);
        add(
            Severity::Warning,
            "pfc_pause",
            t.pfc_pause_frames,
            f,
            None,
            format!(
                "{} PFC/PAUSE frames ({}); {} RoCE flow stalls during pauses{}",
                t.pfc_pause_frames,
                srcs.join("; "),
                t.pfc_stalls,
                if w.is_empty() {
                    String::new()
                } else {
                    format!(": {w}")
                }
            ),
        );
    }
    // ARP / reply-path symptoms: one finding per kind, the first one in full.
    for (kind, total) in [
        ("arp_cross_subnet_unanswered", t.arp_cross_subnet_unanswered),
        ("arp_reply_path_mismatch", t.arp_reply_path_mismatch),
        ("arp_duplicate_address", t.arp_duplicate_address),
        (
            "arp_cross_subnet",
            t.arp_cross_subnet
                .saturating_sub(t.arp_cross_subnet_unanswered),
        ),
    ] {
        let of: Vec<&ArpSymptom> = net.symptoms.iter().filter(|s| s.kind == kind).collect();
        let Some(first) = of.first() else { continue };
        let more: Vec<String> = of
            .iter()
            .skip(1)
            .take(3)
            .map(|s| match s.other_iface.as_deref() {
                Some(o) => format!("{} → {} on {} (not {o})", s.addr, s.peer, s.iface),
                None if s.addr == s.peer => format!("{} on {}", s.addr, s.iface),
                None => format!("who-has {} tell {} on {}", s.addr, s.peer, s.iface),
            })
            .collect();
        let rest = total.saturating_sub(1);
        add(
            first.severity,
            kind,
            total,
            None,
            Some(first.t_ns),
            format!(
                "{}{}{}",
                first.message,
                at(Some(first.t_ns)),
                if rest == 0 {
                    String::new()
                } else {
                    format!("; {rest} more: {}", more.join(", "))
                }
            ),
        );
    }
    if t.arp_unanswered > 0 {
        let asks: Vec<String> = net
            .arp
            .iter()
            .flat_map(|a| {
                a.unanswered_asks
                    .iter()
                    .take(3)
                    .map(move |s| format!("{s} on {}", a.name))
            })
            .take(3)
            .collect();
        add(
            Severity::Warning,
            "arp_unanswered",
            t.arp_unanswered,
            None,
            None,
            format!(
                "{} ARP requests got no reply ({})",
                t.arp_unanswered,
                asks.join(", ")
            ),
        );
    }
    if t.ce_marked > 0 || t.cnp > 0 {
        let (w, f) = worst(flows, |f| f.c.ce_marked);
        let lat = flows
            .iter()
            .filter_map(|f| f.ce_to_cnp.median_ns)
            .max()
            .map(|l| format!("; CE→CNP median up to {}", us(l)))
            .unwrap_or_default();
        let slow: Vec<String> = flows
            .iter()
            .filter_map(|f| {
                Some(format!(
                    "{} {:.2}→{:.2} Gb/s",
                    f.label(),
                    f.gbps_before_first_cnp?,
                    f.gbps_after_last_cnp?
                ))
            })
            .take(3)
            .collect();
        add(
            Severity::Info,
            "congestion",
            t.ce_marked,
            f,
            None,
            format!(
                "congestion: {} CE-marked packets, {} CNPs ({} CE marks never answered by a CNP, {} CNPs without CE){lat}{}{}",
                t.ce_marked,
                t.cnp,
                t.ce_without_cnp,
                t.cnp_without_ce,
                if slow.is_empty() { String::new() } else { format!("; sender rate before first / after last CNP: {}", slow.join(", ")) },
                if w.is_empty() { String::new() } else { format!("; marked: {w}") }
            ),
        );
    }
    if t.malformed > 0 {
        add(
            Severity::Warning,
            "malformed",
            t.malformed,
            None,
            None,
            format!("{} malformed frames (see rocetap decode)", t.malformed),
        );
    }
    if t.truncated > 0 {
        add(
            Severity::Info,
            "truncated",
            t.truncated,
            None,
            None,
            format!(
                "{} frames cut by the capture snaplen: their ICRC could not be checked",
                t.truncated
            ),
        );
    }
    out.sort_by_key(|f| f.severity);
    out
}
