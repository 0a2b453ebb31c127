//! Findings as values: what went wrong, with its numbers, the flows that show it most
//! and when it first happened. Built once at the end of a run from the totals, the flow
//! summaries, the link-level summary and the events; worded by
//! `crate::report::findings` (the text report, the JSON `message`, netcheck).
//!
//! This file holds the finding itself (severity, worst flows); `kind.rs` what each kind
//! states, `build.rs` how the findings of a run are made.

mod build;
mod cause;
mod kind;
mod stops;

pub(in crate::analysis) use build::{cut_short, findings, not_followed};
pub use cause::{AfterStop, Cause, Location};
pub use kind::{Congestion, FindingKind, NakError, RateChange, RnrWait};

use super::FlowSummary;
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
            FindingKind::RetryExhausted { .. } => "retry_exhausted",
            FindingKind::ConnectionStalled { .. } => "connection_stalled",
            FindingKind::QpFailed { .. } => "qp_failed",
            FindingKind::UdPsnJumps { .. } => "ud_psn_jumps",
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
            FindingKind::FlowsNotFollowed { .. } => "flows_not_followed",
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

    /// What caused it and where, for a finding about loss or retransmission; `None` for
    /// the others.
    pub fn cause(&self) -> Option<(Cause, Location)> {
        use Location::BeforeTap;
        Some(match &self.kind {
            FindingKind::NakPsnSeq {
                naks, gap_at_tap, ..
            } => (Cause::NetworkLoss, Location::of(*naks, *gap_at_tap, true)),
            FindingKind::TimeoutRetransmissions {
                episodes,
                gap_at_tap,
                acked,
                ..
            } => {
                // (An ACK the tap saw covering a retried PSN is not proof that it was lost
                // after the tap: it may still have been on its way when the timer fired —
                // the lab's reorder run rewound 'acknowledged' PSNs with no ACK lost. The
                // words say both; `acked` is not evidence enough for `ack_loss`.)
                let _ = acked;
                if *episodes > 0 && gap_at_tap == episodes {
                    (Cause::TailLoss, BeforeTap)
                } else {
                    (Cause::Unknown, Location::Unknown)
                }
            }
            FindingKind::UnrecoveredGaps { .. } => (Cause::NetworkLoss, BeforeTap),
            FindingKind::RetryExhausted { .. } => (Cause::RetryExhausted, Location::Unknown),
            FindingKind::ConnectionStalled { retries: 0, .. } => (Cause::Unknown, BeforeTap),
            FindingKind::ConnectionStalled { .. } => (Cause::Unknown, Location::Unknown),
            FindingKind::UdPsnJumps { .. } => (Cause::Unknown, BeforeTap),
            FindingKind::RnrNak { reads: true, .. } => {
                (Cause::ResponderOverload, Location::Unknown)
            }
            FindingKind::RnrNak { .. } => (Cause::ReceiverNotReady, Location::Unknown),
            // Responses the tap saw missing were lost before it. With none missing, the
            // requester's timer may have fired before they reached it (a slow requester:
            // the lab's clean READ runs under load re-ask with nothing lost), so the tap
            // alone cannot say loss.
            FindingKind::ReadRerequests { missing, .. } if *missing > 0 => {
                (Cause::NetworkLoss, BeforeTap)
            }
            FindingKind::ReadRerequests { .. } => (Cause::Unknown, Location::Unknown),
            FindingKind::UnknownRetransmissions { .. } => (Cause::Unknown, Location::Unknown),
            FindingKind::DuplicatePackets { .. } => (Cause::Duplicate, BeforeTap),
            FindingKind::ReorderedPackets { .. } => (Cause::Reorder, BeforeTap),
            _ => return None,
        })
    }

    /// The flow that shows it most, if any.
    pub fn flow(&self) -> Option<u32> {
        self.worst.top.first().map(|&(id, _)| id)
    }
}
