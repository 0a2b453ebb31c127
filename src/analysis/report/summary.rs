//! One flow's summary from its live state, and the run's totals summed from the
//! summaries (done when a flow is retired, so the totals stay exact even when its
//! summary is not kept). The counters summed and the NAK sum come from the one list in
//! `analysis::counters`.

use super::{FlowSummary, Latency, Totals};
use crate::analysis::counters::{counter_list, nak_sum};
use crate::analysis::flow::{Delays, Flow, FlowCounters};
use crate::analysis::hist::LogHist;
use dissectors::{RoceVersion, Transport};

impl FlowCounters {
    /// NAKs of every code (RNR NAKs not included).
    pub fn naks(&self) -> u64 {
        nak_sum!(self)
    }
}

impl Totals {
    /// NAKs of every code (RNR NAKs not included).
    pub fn naks(&self) -> u64 {
        nak_sum!(self)
    }
}

impl Latency {
    fn of(h: &LogHist) -> Self {
        match h.summary() {
            None => Latency::default(),
            Some(s) => Latency {
                count: s.count,
                min_ns: Some(s.min_ns),
                median_ns: Some(s.median_ns),
                p99_ns: Some(s.p99_ns),
                max_ns: Some(s.max_ns),
            },
        }
    }
}

fn gbps(bytes: u64, ns: u64) -> Option<f64> {
    (ns > 0).then(|| bytes as f64 * 8.0 / ns as f64)
}

pub(in crate::analysis) fn summarize(f: &Flow) -> FlowSummary {
    let none = Delays::default();
    let delays = f.delays.as_deref().unwrap_or(&none);
    let dur = f.last_ts.saturating_sub(f.first_ts);
    let secs = dur as f64 / 1e9;
    let timers = f.trouble.as_deref().map(|t| &t.rnr_timers);
    let rnr_timers = (0..32u8)
        .filter_map(|t| timers.map(|x| (t, x[usize::from(t)])))
        .filter(|&(_, n)| n > 0)
        .collect();
    FlowSummary {
        id: f.id,
        src: f.key.src,
        dst: f.key.dst,
        qp: f.key.qp,
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
        dscp: f.dscp.or(f.marks.cnp_dscp()),
        pcp: f.pcp.or(f.marks.cnp_pcp()),
        vlan: f.vlan,
        dscp_changes: f.mark_counts.dscp_changes,
        pcp_changes: f.mark_counts.pcp_changes,
        encap_changes: f.mark_counts.encap_changes,
        cnp_dscp: f.marks.cnp_dscp(),
        cnp_other_dscp: f.mark_counts.cnp_other_dscp,
        first_psn: f.first_psn,
        last_psn: f.last_psn,
        first_request_psn: f.req.started.then_some(f.req.first),
        ecn_not_ect: f.ecn[0],
        ecn_ect1: f.ecn[1],
        ecn_ect0: f.ecn[2],
        ecn_ce: f.ecn[3],
        icrc_ok: f.icrc[0],
        icrc_bad: f.icrc[1],
        icrc_unchecked: f.icrc[2],
        counters: *f.counters,
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
        rnr_requested_us_mean: (delays.rnr_wait.count() > 0).then(|| {
            f.trouble.as_deref().map_or(0.0, |t| t.rnr_requested_us)
                / delays.rnr_wait.count() as f64
        }),
        ack_latency: Latency::of(&f.ack_latency),
        nak_to_resend: Latency::of(&delays.nak_to_resend),
        rnr_wait: Latency::of(&delays.rnr_wait),
        timeout_observed: Latency::of(&delays.timeout_observed),
        ce_to_cnp: Latency::of(&delays.ce_to_cnp),
        opcodes: super::Opcodes::new(f.ops.clone(), f.other_ops),
        rnr_timers,
        stop: f.trouble.as_deref().and_then(|t| t.stop),
    }
}

/// Adds a flow's counters to the run's totals (done when the flow is retired, so the
/// totals stay exact even when its summary is not kept).
pub(in crate::analysis) fn add_flow(t: &mut Totals, f: &FlowSummary) {
    let icrc = [f.icrc_ok, f.icrc_bad, f.icrc_unchecked];
    add_counts(t, &f.counters, icrc, f.cnp_other_dscp);
}

/// [`add_flow`] straight from a live flow, for one whose summary is not kept: the same
/// sums without building the summary (its quantiles, its opcode map).
pub(in crate::analysis) fn add_live(t: &mut Totals, f: &Flow) {
    add_counts(t, &f.counters, f.icrc, f.mark_counts.cnp_other_dscp);
}

/// NAKs that end the requester's QP (IBTA 9.9.3.1.3: Invalid Request, Remote Access and
/// Remote Operational Error are fatal; the QP goes to the error state).
pub(in crate::analysis) fn fatal_naks(c: &FlowCounters) -> u64 {
    c.nak_invalid_request + c.nak_remote_access + c.nak_remote_operational
}

/// Declares `add_counters`, which adds each counter of [`counter_list!`] to the total it
/// names (none for `_`).
macro_rules! sum_counters {
    ($( $(#[$m:meta])* $name:ident => $total:tt, )*) => {
        /// Adds a flow's counters to the totals they sum into.
        fn add_counters(t: &mut Totals, c: &FlowCounters) {
            $( sum_counters!(@one t, c, $name, $total); )*
        }
    };
    (@one $t:ident, $c:ident, $name:ident, _) => {};
    (@one $t:ident, $c:ident, $name:ident, $total:ident) => {
        $t.$total += $c.$name;
    };
}
counter_list!(sum_counters);

fn add_counts(t: &mut Totals, c: &FlowCounters, icrc: [u64; 3], cnp_other_dscp: u32) {
    t.flows += 1;
    add_counters(t, c);
    t.icrc_ok += icrc[0];
    t.icrc_bad += icrc[1];
    t.icrc_unchecked += icrc[2];
    t.qps_failed += u64::from(fatal_naks(c) > 0);
    t.cnp_other_dscp += u64::from(cnp_other_dscp);
}
