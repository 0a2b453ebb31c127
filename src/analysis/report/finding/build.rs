//! The findings of a run, built once at its end from the totals, the flow summaries, the
//! link-level summary and the events, in the order the report shows them.

use super::{Congestion, Finding, FindingKind, NakError, RateChange, RnrWait, Severity, Worst};
use crate::analysis::events::{Event, EventKind};
use crate::analysis::flow::Trigger;
use crate::analysis::net::{ArpSymptomKind, NetSummary};
use crate::analysis::report::{FlowSummary, Totals};

pub(super) fn first_event(
    events: &[Event],
    flow: Option<u32>,
    pred: impl Fn(&Event) -> bool,
) -> Option<u64> {
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
pub(super) struct Out(pub(super) Vec<Finding>);

impl Out {
    pub(super) fn add(
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
    super::stops::stops(&mut out, t, flows, events);
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
    // Sequence NAKs an RNR drop explains are told with the RNR NAKs, not as loss.
    // So are those reordering explains, with the reordering.
    let loss_naks = t.nak_psn_seq - t.nak_psn_seq_after_rnr - t.nak_psn_seq_reorder;
    if loss_naks > 0 {
        let ts = first_event(events, None, |e| {
            e.kind == EventKind::Nak && e.code == Some(0)
        });
        let kind = FindingKind::NakPsnSeq {
            naks: loss_naks,
            gap_at_tap: t.nak_psn_seq_gap_at_tap,
            after_rnr: t.nak_psn_seq_after_rnr,
            reorder: t.nak_psn_seq_reorder,
            retransmitted: t.nak_retransmissions,
            nak_to_resend_ns: max_median(flows, |f| f.nak_to_resend.median_ns),
        };
        let worst = Worst::of(flows, |f| {
            let c = &f.counters;
            c.nak_psn_seq - c.nak_psn_seq_after_rnr - c.nak_psn_seq_reorder
        });
        out.add(Severity::Error, kind, loss_naks, ts, worst);
    }
    if t.timeout_retransmissions > 0 {
        let kind = FindingKind::TimeoutRetransmissions {
            packets: t.timeout_retransmissions,
            episodes: t.timeout_retransmission_episodes,
            gap_at_tap: t.timeout_episodes_gap_at_tap,
            acked: t.timeout_episodes_acked,
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
            exhausted: t.retry_exhausted,
        };
        out.add(Severity::Error, kind, unrecovered_net, None, worst);
    }
    if t.ud_psn_jumps > 0 {
        let n = t.ud_psn_jumps;
        let worst = Worst::of(flows, |f| f.counters.ud_psn_jumps);
        let kind = FindingKind::UdPsnJumps { jumps: n };
        out.add(Severity::Warning, kind, n, None, worst);
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
            followup_naks: t.nak_psn_seq_after_rnr,
            reads: rnr_for_reads(flows),
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
            missing: t.read_missing_responses,
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
    if t.reordered_packets > 0 || t.nak_psn_seq_reorder > 0 {
        let n = t.reordered_packets;
        let naks = t.nak_psn_seq_reorder;
        let ts = first(&|e| e.kind == EventKind::Reordered);
        let worst = Worst::of(flows, |f| {
            f.counters.reordered_packets + f.counters.nak_psn_seq_reorder
        });
        let loss_naks = t.nak_psn_seq - t.nak_psn_seq_after_rnr - naks;
        let kind = FindingKind::ReorderedPackets {
            packets: n,
            naks,
            resent: if loss_naks == 0 {
                t.nak_retransmissions
            } else {
                0
            },
        };
        // NAKs and resends for it cost the traffic: more than a note.
        let sev = if naks > 0 {
            Severity::Warning
        } else {
            Severity::Info
        };
        out.add(sev, kind, n, ts, worst);
    }
}

/// Whether every flow that sent RNR NAKs answers a request stream of READs only: the RNR
/// NAKs refused READs (no receive buffer is involved).
fn rnr_for_reads(flows: &[FlowSummary]) -> bool {
    let by_id = |id: u32| flows.binary_search_by_key(&id, |f| f.id).ok();
    flows.iter().filter(|f| f.counters.rnr_nak > 0).all(|f| {
        f.peer.and_then(by_id).is_some_and(|i| {
            let p = &flows[i];
            p.counters.reads > 0 && p.messages == p.counters.reads
        })
    })
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
            icrc_cut: t.icrc_cut,
            snaplen: t.cut_at_bytes,
        };
        out.add(Severity::Info, kind, t.truncated, None, Worst::default());
    }
}

/// A finding for the packets of flows beyond `max_flows`.
pub(in crate::analysis) fn not_followed(packets: u64, max_flows: usize) -> Finding {
    Finding {
        severity: Severity::Warning,
        kind: FindingKind::FlowsNotFollowed {
            packets,
            max_flows: max_flows as u64,
        },
        count: packets,
        t_ns: None,
        worst: Worst::default(),
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
