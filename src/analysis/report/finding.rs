//! Findings as values: what went wrong, with its numbers, the flows that show it most
//! and when it first happened. Built once at the end of a run from the totals, the flow
//! summaries, the link-level summary and the events; worded by
//! `crate::report::findings` (the text report, the JSON `message`, netcheck).

use super::{Event, EventKind, FlowSummary, Totals};
use crate::analysis::flow::Trigger;
use crate::analysis::net::{ArpSymptomKind, NetSummary};
use serde::Serialize;

/// How bad a finding is. One scale for `analyze`, netcheck and the NAD lint; ordered
/// from `Info` (least) to `Error` (worst), so "worst first" sorts by `Reverse`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Context; does not make netcheck exit 1.
    Info,
    /// Worth a look, not by itself failing traffic (ICRCs rewritten by the capture path,
    /// PFC pauses, READ re-requests, malformed frames, ...); makes netcheck exit 1.
    Warning,
    /// Loss or failure the traffic suffered (NAK resends, timeouts, unrecovered gaps, bad
    /// ICRCs, ...); makes netcheck exit 1.
    Error,
}

impl Severity {
    /// `INFO`, `WARNING`, `ERROR`.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Info => "INFO",
            Severity::Warning => "WARNING",
            Severity::Error => "ERROR",
        }
    }
}

/// Flows shown by name in a finding.
const WORST_SHOWN: usize = 3;

/// The flows with the most of what a finding counts: the first `WORST_SHOWN` (3) as
/// (flow id, count), worst first, and how many more flows have some.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Worst {
    /// (flow id, count) of the worst flows, most first, at most `WORST_SHOWN` (3).
    pub top: Vec<(u32, u64)>,
    /// How many more flows, beyond `top`, have a non-zero count.
    pub more: usize,
}

impl Worst {
    pub(in crate::analysis) fn of(flows: &[FlowSummary], n: impl Fn(&FlowSummary) -> u64) -> Self {
        let mut v: Vec<(u32, u64)> = flows
            .iter()
            .map(|f| (f.id, n(f)))
            .filter(|&(_, c)| c > 0)
            .collect();
        v.sort_by_key(|&(_, c)| std::cmp::Reverse(c));
        let more = v.len().saturating_sub(WORST_SHOWN);
        v.truncate(WORST_SHOWN);
        Worst { top: v, more }
    }
}

/// A NAK code other than PSN sequence error: the QP goes to the error state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NakError {
    /// AETH NAK code 1: invalid request.
    InvalidRequest,
    /// AETH NAK code 2: remote access error (bad R_Key, address or permissions).
    RemoteAccess,
    /// AETH NAK code 3: remote operational error.
    RemoteOperational,
    /// AETH NAK code 4: invalid RD request.
    InvalidRdRequest,
    /// A reserved AETH NAK code (5 and up).
    Reserved,
}

impl NakError {
    /// Every error code, in AETH code order.
    pub const ALL: [NakError; 5] = [
        NakError::InvalidRequest,
        NakError::RemoteAccess,
        NakError::RemoteOperational,
        NakError::InvalidRdRequest,
        NakError::Reserved,
    ];

    /// The counter name: `nak_invalid_request`, ...
    pub fn code(self) -> &'static str {
        match self {
            NakError::InvalidRequest => "nak_invalid_request",
            NakError::RemoteAccess => "nak_remote_access",
            NakError::RemoteOperational => "nak_remote_operational",
            NakError::InvalidRdRequest => "nak_invalid_rd_request",
            NakError::Reserved => "nak_reserved",
        }
    }

    /// This code's NAKs in a flow's counters.
    pub fn of(self, c: &crate::analysis::flow::FlowCounters) -> u64 {
        match self {
            NakError::InvalidRequest => c.nak_invalid_request,
            NakError::RemoteAccess => c.nak_remote_access,
            NakError::RemoteOperational => c.nak_remote_operational,
            NakError::InvalidRdRequest => c.nak_invalid_rd_request,
            NakError::Reserved => c.nak_reserved,
        }
    }

    fn total(self, t: &Totals) -> u64 {
        match self {
            NakError::InvalidRequest => t.nak_invalid_request,
            NakError::RemoteAccess => t.nak_remote_access,
            NakError::RemoteOperational => t.nak_remote_operational,
            NakError::InvalidRdRequest => t.nak_invalid_rd_request,
            NakError::Reserved => t.nak_reserved,
        }
    }
}

/// One flow's RNR wait: what the RNR NAKs asked for (mean) and the median actual wait.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RnrWait {
    pub flow: u32,
    pub requested_us_mean: f64,
    pub waited_median_ns: u64,
}

/// One flow's sender rate before its first CNP and after its last.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateChange {
    pub flow: u32,
    pub gbps_before: f64,
    pub gbps_after: f64,
}

/// CE marks and CNPs; the largest per-flow median CE→CNP latency; sender rates.
#[derive(Clone, Debug, PartialEq)]
pub struct Congestion {
    /// Packets marked ECN = CE ([`Totals::ce_marked`]).
    pub ce_marked: u64,
    /// CNPs ([`Totals::cnp`]).
    pub cnp: u64,
    /// CE marks no CNP answered ([`Totals::ce_without_cnp`]).
    pub ce_without_cnp: u64,
    /// CNPs that answered no CE mark ([`Totals::cnp_without_ce`]).
    pub cnp_without_ce: u64,
    /// The largest per-flow median CE -> CNP delay, ns; `None` when no flow measured one.
    pub ce_to_cnp_ns: Option<u64>,
    /// The first flows with a rate before their first CNP and after their last.
    pub rates: Vec<RateChange>,
}

/// What a finding is about, with the numbers it states.
#[derive(Clone, Debug, PartialEq)]
pub enum FindingKind {
    /// NAKs (PSN sequence error) and the go-back-N resends they caused; the largest
    /// per-flow median NAK→resend latency.
    NakPsnSeq {
        /// NAKs with code 0 (PSN sequence error).
        naks: u64,
        /// Packets resent after a NAK.
        retransmitted: u64,
        /// The largest per-flow median NAK -> resend delay, ns; `None` when none was
        /// measured.
        nak_to_resend_ns: Option<u64>,
    },
    /// Resends after a transport timeout with no NAK (tail loss); the largest per-flow
    /// median observed timeout.
    TimeoutRetransmissions {
        /// Packets resent by the requester's timer.
        packets: u64,
        /// The largest per-flow median observed timeout, ns; `None` when none was measured.
        observed_ns: Option<u64>,
    },
    /// Gaps NAKed (or not capture loss) whose resend was never captured.
    UnrecoveredGaps {
        /// Gaps never filled ([`Totals::unrecovered_gap_events`] minus capture loss).
        gaps: u64,
    },
    /// NAKs with an error code.
    NakError {
        /// Which error code.
        code: NakError,
        /// NAKs with that code.
        naks: u64,
    },
    /// Every checked ICRC fails: the capture path rewrites it.
    IcrcNotPreserved {
        /// ICRCs that did not match.
        bad: u64,
        /// ICRCs computed (matched or not).
        checked: u64,
    },
    /// Some ICRCs fail.
    IcrcBad {
        /// ICRCs that did not match.
        bad: u64,
        /// ICRCs computed (matched or not).
        checked: u64,
    },
    /// Gaps never filled with no NAK: the capture missed them.
    CaptureLoss {
        /// Unfilled gaps counted as capture loss.
        gaps: u64,
        /// PSNs those gaps skipped.
        missing_psns: u64,
    },
    /// RNR NAKs, the packets resent after the wait, and the waits of the first flows.
    RnrNak {
        /// RNR NAKs.
        naks: u64,
        /// Packets resent after an RNR NAK.
        resent: u64,
        /// The first flows' requested and actual RNR waits.
        waits: Vec<RnrWait>,
    },
    /// READ Requests asked again and the responses sent again.
    ReadRerequests {
        /// READ Requests re-issued.
        rerequests: u64,
        /// READ responses sent again.
        resent: u64,
    },
    /// Packets sent again with no NAK seen and no original captured.
    UnknownRetransmissions {
        /// Packets resent with no NAK seen and no original captured.
        packets: u64,
    },
    /// Copies made by the network.
    DuplicatePackets {
        /// Request packets the network duplicated.
        packets: u64,
    },
    /// Originals overtaken on the way.
    ReorderedPackets {
        /// Originals that arrived after later PSNs.
        packets: u64,
    },
    /// PFC / PAUSE frames (per sender and priority: `Report::pfc`) and flow stalls.
    PfcPause {
        /// PAUSE / PFC frames that paused at least one priority.
        frames: u64,
        /// Times a flow's traffic was stalled by a pause ([`Totals::pfc_stalls`]).
        stalls: u64,
    },
    /// ARP / reply-path symptoms of one kind (`Report::arp_symptoms`, the first in full).
    Arp {
        /// Which symptom.
        kind: ArpSymptomKind,
        /// How many times it was seen (the matching `arp_*` total).
        total: u64,
    },
    /// ARP requests nobody answered (the asks: `Report::arp`).
    ArpUnanswered {
        /// ARP request packets no reply answered.
        requests: u64,
    },
    /// CE marks and CNPs.
    Congestion(Congestion),
    /// Frames a dissector rejected as malformed.
    Malformed {
        /// How many ([`Totals::malformed`]).
        frames: u64,
    },
    /// Frames cut by the snaplen.
    Truncated {
        /// How many ([`Totals::truncated`]).
        frames: u64,
    },
    /// QoS marking the packets carry (`crate::analysis::qos`).
    Qos(super::Qos),
    /// An input that ends in the middle of a record after `frames` complete frames.
    InputCutShort {
        /// The input's name as given on the command line.
        file: String,
        /// Complete frames read from it before the cut.
        frames: u64,
    },
    /// Connection setups the CM rejected, with one reason (a finding per reason).
    CmRejected {
        /// Sessions rejected with this reason.
        sessions: u64,
        /// The IBTA reason code (`dissectors::cm::RejReason`).
        reason: u16,
        /// The service the first of them asked for, when its REQ was captured.
        service_id: Option<u64>,
        /// The first one's requester.
        requester: dissectors::Addr,
        /// The first one's responder.
        responder: dissectors::Addr,
    },
    /// REQs that no REP (nor REJ) answered: the peer's CM is unreachable or not there.
    CmUnanswered {
        /// Sessions whose REQs went unanswered.
        sessions: u64,
        /// REQs they sent, retries included.
        reqs: u64,
        /// The longest mean interval between a session's REQ retries (the CM timeout
        /// as seen), ns; `None` when no session retried.
        retry_interval_ns: Option<u64>,
        /// The first one's requester.
        requester: dissectors::Addr,
        /// The first one's responder.
        responder: dissectors::Addr,
    },
    /// REPs that no RTU confirmed.
    CmNoRtu {
        /// Sessions with a REP and no RTU.
        sessions: u64,
    },
    /// DREQs that no DREP answered.
    CmNoDrep {
        /// Sessions with a DREQ and no DREP.
        sessions: u64,
    },
    /// Flows set up by the CM whose first packets are not in the capture: the first PSN
    /// captured is after the starting PSN the REQ / REP announced.
    CmFirstPacketsMissing {
        /// Flows missing their first packets.
        flows: u64,
        /// PSNs missing before their first captured packets, summed.
        psns: u64,
    },
    /// RC flows of a capture with CM setups that no captured setup covers: set up before
    /// the capture started (it started mid-stream for them), or without the CM.
    CmNotSetUp {
        /// Such flows.
        flows: u64,
    },
    /// Flows whose DSCP is not the one the CM path's traffic class asked for.
    CmTrafficClass {
        /// Flows whose DSCP differs.
        flows: u64,
        /// The first one's traffic class in the REQ (DSCP << 2 | ECN).
        traffic_class: u8,
        /// The DSCP the first one's data carried.
        dscp: u8,
    },
    /// Connections the CM set up (REQ → REP → RTU), and how long that took.
    CmSetup {
        /// Setups completed with an RTU.
        connections: u64,
        /// Median REQ → RTU time, ns.
        median_ns: u64,
        /// Longest REQ → RTU time, ns.
        max_ns: u64,
    },
}

/// One problem (or note) about the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// How bad it is.
    pub severity: Severity,
    /// What it is about, with its numbers.
    pub kind: FindingKind,
    /// The finding's headline number, of what its kind counts (NAKs, packets, gaps,
    /// frames, ...).
    pub count: u64,
    /// When it first happened, if known.
    pub t_ns: Option<u64>,
    /// The flows that show it most.
    pub worst: Worst,
}

impl Finding {
    /// The stable code (`kind` in JSON): `nak_psn_seq`, `capture_loss`, ...
    pub fn code(&self) -> &'static str {
        match &self.kind {
            FindingKind::NakPsnSeq { .. } => "nak_psn_seq",
            FindingKind::TimeoutRetransmissions { .. } => "timeout_retransmissions",
            FindingKind::UnrecoveredGaps { .. } => "unrecovered_gaps",
            FindingKind::NakError { code, .. } => code.code(),
            FindingKind::IcrcNotPreserved { .. } => "icrc_not_preserved",
            FindingKind::IcrcBad { .. } => "icrc_bad",
            FindingKind::CaptureLoss { .. } => "capture_loss",
            FindingKind::RnrNak { .. } => "rnr_nak",
            FindingKind::ReadRerequests { .. } => "read_rerequests",
            FindingKind::UnknownRetransmissions { .. } => "unknown_retransmissions",
            FindingKind::DuplicatePackets { .. } => "duplicate_packets",
            FindingKind::ReorderedPackets { .. } => "reordered_packets",
            FindingKind::PfcPause { .. } => "pfc_pause",
            FindingKind::Arp { kind, .. } => kind.code(),
            FindingKind::ArpUnanswered { .. } => "arp_unanswered",
            FindingKind::Congestion(_) => "congestion",
            FindingKind::Malformed { .. } => "malformed",
            FindingKind::Truncated { .. } => "truncated",
            FindingKind::InputCutShort { .. } => "input_cut_short",
            FindingKind::Qos(q) => q.code(),
            FindingKind::CmRejected { .. } => "cm_rejected",
            FindingKind::CmUnanswered { .. } => "cm_unanswered",
            FindingKind::CmNoRtu { .. } => "cm_no_rtu",
            FindingKind::CmNoDrep { .. } => "cm_no_drep",
            FindingKind::CmFirstPacketsMissing { .. } => "cm_first_packets_missing",
            FindingKind::CmNotSetUp { .. } => "cm_not_set_up",
            FindingKind::CmTrafficClass { .. } => "cm_traffic_class",
            FindingKind::CmSetup { .. } => "cm_setup",
        }
    }

    /// The flow that shows it most, if any.
    pub fn flow(&self) -> Option<u32> {
        self.worst.top.first().map(|&(id, _)| id)
    }
}

fn first_event(events: &[Event], flow: Option<u32>, pred: impl Fn(&Event) -> bool) -> Option<u64> {
    events
        .iter()
        .filter(|e| flow.is_none() || e.flow == flow)
        .find(|e| pred(e))
        .map(|e| e.t_ns)
}

/// The largest of the flows' medians of one latency.
fn max_median(flows: &[FlowSummary], of: impl Fn(&FlowSummary) -> Option<u64>) -> Option<u64> {
    flows.iter().filter_map(of).max()
}

/// Collects findings in the order the report shows them within one severity.
struct Out(Vec<Finding>);

impl Out {
    fn add(
        &mut self,
        severity: Severity,
        kind: FindingKind,
        count: u64,
        t_ns: Option<u64>,
        worst: Worst,
    ) {
        self.0.push(Finding {
            severity,
            kind,
            count,
            t_ns,
            worst,
        });
    }
}

/// Every finding of a run, worst first (in a fixed order within a severity).
pub(in crate::analysis) fn findings(
    t: &Totals,
    flows: &[FlowSummary],
    net: &NetSummary,
    events: &[Event],
) -> Vec<Finding> {
    let mut out = Out(Vec::new());
    retransmissions(&mut out, t, flows, events);
    nak_errors(&mut out, t, flows, events);
    icrc(&mut out, t, flows);
    recovery(&mut out, t, flows, events);
    link(&mut out, t, flows, net);
    congestion_and_frames(&mut out, t, flows);
    let mut out = out.0;
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

/// NAK (PSN sequence error) resends, timeouts, unrecovered gaps.
fn retransmissions(out: &mut Out, t: &Totals, flows: &[FlowSummary], events: &[Event]) {
    if t.nak_psn_seq > 0 {
        let ts = first_event(events, None, |e| {
            e.kind == EventKind::Nak && e.code == Some(0)
        });
        let kind = FindingKind::NakPsnSeq {
            naks: t.nak_psn_seq,
            retransmitted: t.nak_retransmissions,
            nak_to_resend_ns: max_median(flows, |f| f.nak_to_resend.median_ns),
        };
        let worst = Worst::of(flows, |f| f.counters.nak_psn_seq);
        out.add(Severity::Error, kind, t.nak_psn_seq, ts, worst);
    }
    if t.timeout_retransmissions > 0 {
        let kind = FindingKind::TimeoutRetransmissions {
            packets: t.timeout_retransmissions,
            observed_ns: max_median(flows, |f| f.timeout_observed.median_ns),
        };
        let ts = first_event(events, None, |e| e.trigger == Some(Trigger::Timeout));
        let worst = Worst::of(flows, |f| f.counters.timeout_retransmissions);
        out.add(Severity::Error, kind, t.timeout_retransmissions, ts, worst);
    }
    let unrecovered_net = t.unrecovered_gap_events - t.capture_loss_gap_events;
    if unrecovered_net > 0 {
        let worst = Worst::of(flows, |f| {
            f.counters.unrecovered_gap_events - f.counters.capture_loss_gap_events
        });
        let kind = FindingKind::UnrecoveredGaps {
            gaps: unrecovered_net,
        };
        out.add(Severity::Error, kind, unrecovered_net, None, worst);
    }
}

/// NAKs with an error code, one finding per code.
fn nak_errors(out: &mut Out, t: &Totals, flows: &[FlowSummary], events: &[Event]) {
    for code in NakError::ALL {
        let n = code.total(t);
        if n == 0 {
            continue;
        }
        let worst = Worst::of(flows, |f| code.of(&f.counters));
        let ts = first_event(events, worst.top.first().map(|w| w.0), |e| {
            e.kind == EventKind::Nak && e.code != Some(0)
        });
        out.add(
            Severity::Error,
            FindingKind::NakError { code, naks: n },
            n,
            ts,
            worst,
        );
    }
}

fn icrc(out: &mut Out, t: &Totals, flows: &[FlowSummary]) {
    if t.icrc_bad == 0 {
        return;
    }
    let checked = t.icrc_ok + t.icrc_bad;
    if t.icrc_ok == 0 {
        let kind = FindingKind::IcrcNotPreserved {
            bad: t.icrc_bad,
            checked,
        };
        out.add(Severity::Warning, kind, t.icrc_bad, None, Worst::default());
    } else {
        let kind = FindingKind::IcrcBad {
            bad: t.icrc_bad,
            checked,
        };
        let worst = Worst::of(flows, |f| f.icrc_bad);
        out.add(Severity::Error, kind, t.icrc_bad, None, worst);
    }
}

/// Capture loss, RNR, READ re-requests, unknown resends, duplicates, reordering.
fn recovery(out: &mut Out, t: &Totals, flows: &[FlowSummary], events: &[Event]) {
    let first = |pred: &dyn Fn(&Event) -> bool| first_event(events, None, pred);
    if t.capture_loss_gap_events > 0 {
        let kind = FindingKind::CaptureLoss {
            gaps: t.capture_loss_gap_events,
            missing_psns: t.missing_psns,
        };
        let ts = first(&|e| e.capture_loss == Some(true));
        let worst = Worst::of(flows, |f| f.counters.capture_loss_gap_events);
        out.add(
            Severity::Warning,
            kind,
            t.capture_loss_gap_events,
            ts,
            worst,
        );
    }
    if t.rnr_nak > 0 {
        let waits = flows
            .iter()
            .filter(|f| f.rnr_wait.count > 0)
            .take(3)
            .map(|f| RnrWait {
                flow: f.id,
                requested_us_mean: f.rnr_requested_us_mean.unwrap_or(0.0),
                waited_median_ns: f.rnr_wait.median_ns.unwrap_or(0),
            })
            .collect();
        let kind = FindingKind::RnrNak {
            naks: t.rnr_nak,
            resent: t.rnr_retransmissions,
            waits,
        };
        let ts = first(&|e| e.kind == EventKind::RnrNak);
        out.add(
            Severity::Warning,
            kind,
            t.rnr_nak,
            ts,
            Worst::of(flows, |f| f.counters.rnr_nak),
        );
    }
    if t.read_rerequests > 0 {
        let kind = FindingKind::ReadRerequests {
            rerequests: t.read_rerequests,
            resent: t.read_retransmissions,
        };
        let ts = first(&|e| e.kind == EventKind::ReadRerequest);
        let worst = Worst::of(flows, |f| f.counters.read_rerequests);
        out.add(Severity::Warning, kind, t.read_rerequests, ts, worst);
    }
    if t.unknown_retransmissions > 0 {
        let n = t.unknown_retransmissions;
        let kind = FindingKind::UnknownRetransmissions { packets: n };
        let worst = Worst::of(flows, |f| f.counters.unknown_retransmissions);
        out.add(Severity::Warning, kind, n, None, worst);
    }
    if t.duplicate_packets > 0 {
        let n = t.duplicate_packets;
        let ts = first(&|e| e.kind == EventKind::Duplicate);
        let worst = Worst::of(flows, |f| f.counters.duplicate_packets);
        out.add(
            Severity::Info,
            FindingKind::DuplicatePackets { packets: n },
            n,
            ts,
            worst,
        );
    }
    if t.reordered_packets > 0 {
        let n = t.reordered_packets;
        let ts = first(&|e| e.kind == EventKind::Reordered);
        let worst = Worst::of(flows, |f| f.counters.reordered_packets);
        out.add(
            Severity::Info,
            FindingKind::ReorderedPackets { packets: n },
            n,
            ts,
            worst,
        );
    }
}

/// PFC, the ARP / reply-path symptoms (one finding per kind), unanswered ARP.
fn link(out: &mut Out, t: &Totals, flows: &[FlowSummary], net: &NetSummary) {
    if t.pfc_pause_frames > 0 {
        let kind = FindingKind::PfcPause {
            frames: t.pfc_pause_frames,
            stalls: t.pfc_stalls,
        };
        let worst = Worst::of(flows, |f| f.counters.pfc_stalls);
        out.add(Severity::Warning, kind, t.pfc_pause_frames, None, worst);
    }
    for (kind, total) in [
        (
            ArpSymptomKind::CrossSubnetUnanswered,
            t.arp_cross_subnet_unanswered,
        ),
        (ArpSymptomKind::ReplyPathMismatch, t.arp_reply_path_mismatch),
        (ArpSymptomKind::DuplicateAddress, t.arp_duplicate_address),
        (
            ArpSymptomKind::CrossSubnet,
            t.arp_cross_subnet
                .saturating_sub(t.arp_cross_subnet_unanswered),
        ),
    ] {
        let Some(first) = net.symptoms.iter().find(|s| s.kind() == kind) else {
            continue;
        };
        let finding = FindingKind::Arp { kind, total };
        out.add(
            kind.severity(),
            finding,
            total,
            Some(first.t_ns),
            Worst::default(),
        );
    }
    if t.arp_unanswered > 0 {
        let kind = FindingKind::ArpUnanswered {
            requests: t.arp_unanswered,
        };
        out.add(
            Severity::Warning,
            kind,
            t.arp_unanswered,
            None,
            Worst::default(),
        );
    }
}

/// Congestion (CE and CNP), malformed and truncated frames.
fn congestion_and_frames(out: &mut Out, t: &Totals, flows: &[FlowSummary]) {
    if t.ce_marked > 0 || t.cnp > 0 {
        let rates = flows
            .iter()
            .filter_map(|f| {
                Some(RateChange {
                    flow: f.id,
                    gbps_before: f.gbps_before_first_cnp?,
                    gbps_after: f.gbps_after_last_cnp?,
                })
            })
            .take(3)
            .collect();
        let kind = FindingKind::Congestion(Congestion {
            ce_marked: t.ce_marked,
            cnp: t.cnp,
            ce_without_cnp: t.ce_without_cnp,
            cnp_without_ce: t.cnp_without_ce,
            ce_to_cnp_ns: max_median(flows, |f| f.ce_to_cnp.median_ns),
            rates,
        });
        let worst = Worst::of(flows, |f| f.counters.ce_marked);
        out.add(Severity::Info, kind, t.ce_marked, None, worst);
    }
    if t.malformed > 0 {
        let kind = FindingKind::Malformed {
            frames: t.malformed,
        };
        out.add(Severity::Warning, kind, t.malformed, None, Worst::default());
    }
    if t.truncated > 0 {
        let kind = FindingKind::Truncated {
            frames: t.truncated,
        };
        out.add(Severity::Info, kind, t.truncated, None, Worst::default());
    }
}

/// A finding for an input that ends in the middle of a record.
pub(in crate::analysis) fn cut_short(file: &str, frames: u64) -> Finding {
    Finding {
        severity: Severity::Warning,
        kind: FindingKind::InputCutShort {
            file: file.to_string(),
            frames,
        },
        count: frames,
        t_ns: None,
        worst: Worst::default(),
    }
}
