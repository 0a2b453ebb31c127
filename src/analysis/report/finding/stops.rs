//! The findings that open the report: requesters that gave up, QPs a fatal NAK ended,
//! streams that stalled.

use super::build::Out;
use super::{AfterStop, FindingKind, NakError, Severity, Worst};
use crate::analysis::events::{Event, EventKind};
use crate::analysis::report::summary::fatal_naks;
use crate::analysis::report::{FlowSummary, Totals};
use crate::analysis::stop::StopKind;

/// Requesters that gave up and streams that stalled: what opens the report.
pub(super) fn stops(out: &mut Out, t: &Totals, flows: &[FlowSummary], events: &[Event]) {
    let first = |k: StopKind| flows.iter().find_map(|f| f.stop.filter(|s| s.kind == k));
    if let Some(s) = first(StopKind::RetryExhausted) {
        let kind = FindingKind::RetryExhausted {
            qps: t.retry_exhausted,
            psn: s.psn.0,
            retries: s.retries,
            over_ns: s.last_ns.saturating_sub(s.first_ns),
            last_ns: s.last_ns,
            after: AfterStop::Nothing,
        };
        let worst = Worst::of(flows, |f| f.counters.retry_exhausted);
        out.add(
            Severity::Error,
            kind,
            t.retry_exhausted,
            Some(s.first_ns),
            worst,
        );
    }
    qp_failed(out, t, flows, events);
    if let Some(s) = first(StopKind::Stalled) {
        let kind = FindingKind::ConnectionStalled {
            connections: t.stalled_connections,
            psn: s.psn.0,
            retries: s.retries,
            over_ns: if s.retries > 0 {
                s.last_ns.saturating_sub(s.first_ns)
            } else {
                0
            },
            last_ns: s.last_ns,
            after: AfterStop::Nothing,
        };
        let worst = Worst::of(flows, |f| f.counters.stalled);
        let n = t.stalled_connections;
        out.add(Severity::Error, kind, n, Some(s.last_ns), worst);
    }
}

/// QPs a fatal NAK ended: the first one's NAK (its code and PSN, when the event was kept).
fn qp_failed(out: &mut Out, t: &Totals, flows: &[FlowSummary], events: &[Event]) {
    if t.qps_failed == 0 {
        return;
    }
    let fatal = |e: &Event| e.kind == EventKind::Nak && matches!(e.code, Some(1..=3));
    let flow = flows.iter().find(|f| fatal_naks(&f.counters) > 0);
    // The requester's flow names the QP that failed (the NAK came on its peer).
    let mut failed: Vec<u32> = flows
        .iter()
        .filter(|f| fatal_naks(&f.counters) > 0)
        .map(|f| f.peer.unwrap_or(f.id))
        .collect();
    failed.sort_unstable();
    let worst = Worst::of(flows, |f| u64::from(failed.binary_search(&f.id).is_ok()));
    let e = events
        .iter()
        .find(|e| fatal(e) && (flow.is_none() || e.flow == flow.map(|f| f.id)));
    let code = match (e.and_then(|e| e.code), flow.map(|f| &f.counters)) {
        (Some(1), _) => NakError::InvalidRequest,
        (Some(2), _) => NakError::RemoteAccess,
        (Some(_), _) => NakError::RemoteOperational,
        (None, Some(c)) if c.nak_remote_access > 0 => NakError::RemoteAccess,
        (None, Some(c)) if c.nak_remote_operational > 0 => NakError::RemoteOperational,
        (None, _) => NakError::InvalidRequest,
    };
    let kind = FindingKind::QpFailed {
        qps: t.qps_failed,
        code,
        psn: e.and_then(|e| e.psn),
    };
    out.add(
        Severity::Error,
        kind,
        t.qps_failed,
        e.map(|e| e.t_ns),
        worst,
    );
}
