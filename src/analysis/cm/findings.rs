//! The CM findings, from the settled sessions: failed setups (rejected, unanswered,
//! without RTU or DREP), first packets missing, RC flows no setup covers, the traffic
//! class asked for against the DSCP carried, and setup times; and what came after a
//! connection stopped (its DREQ) for the findings that open the report.

use super::CmSession;
use crate::analysis::report::{AfterStop, Finding, FindingKind, Report, Severity, Worst};

fn worst(v: impl Iterator<Item = (u32, u64)>) -> Worst {
    let mut v: Vec<(u32, u64)> = v.filter(|&(_, n)| n > 0).collect();
    v.sort_by_key(|&(id, n)| (std::cmp::Reverse(n), id));
    let more = v.len().saturating_sub(3);
    v.truncate(3);
    Worst { top: v, more }
}

fn add(
    out: &mut Vec<Finding>,
    severity: Severity,
    kind: FindingKind,
    count: u64,
    t: Option<u64>,
    w: Worst,
) {
    out.push(Finding {
        severity,
        kind,
        count,
        t_ns: t,
        worst: w,
    });
}

/// The CM findings, from the settled sessions.
pub(super) fn findings(sessions: &[CmSession], r: &Report) -> Vec<Finding> {
    let mut out = Vec::new();
    // Rejected setups, one finding per reason.
    let mut reasons: Vec<u16> = sessions
        .iter()
        .filter_map(|s| s.rej.map(|j| j.reason))
        .collect();
    reasons.sort_unstable();
    reasons.dedup();
    for reason in reasons {
        let rej: Vec<&CmSession> = sessions
            .iter()
            .filter(|s| s.rej.is_some_and(|j| j.reason == reason))
            .collect();
        let kind = FindingKind::CmRejected {
            sessions: rej.len() as u64,
            reason,
            service_id: rej.iter().find_map(|s| s.req.map(|q| q.service_id.0)),
            requester: rej[0].requester,
            responder: rej[0].responder,
        };
        let t = rej.iter().filter_map(|s| s.rej.map(|j| j.ts)).min();
        add(
            &mut out,
            Severity::Error,
            kind,
            rej.len() as u64,
            t,
            Worst::default(),
        );
    }
    let unanswered: Vec<&CmSession> = sessions
        .iter()
        .filter(|s| s.reqs > 0 && s.rep.is_none() && s.rej.is_none())
        .collect();
    if let Some(first) = unanswered.first() {
        let kind = FindingKind::CmUnanswered {
            sessions: unanswered.len() as u64,
            reqs: unanswered.iter().map(|s| u64::from(s.reqs)).sum(),
            retry_interval_ns: unanswered
                .iter()
                .filter_map(|s| s.retry_interval_ns())
                .max(),
            requester: first.requester,
            responder: first.responder,
        };
        let t = unanswered
            .iter()
            .filter_map(|s| s.req_ns.map(|x| x.0))
            .min();
        add(
            &mut out,
            Severity::Error,
            kind,
            unanswered.len() as u64,
            t,
            Worst::default(),
        );
    }
    let no_rtu = sessions
        .iter()
        .filter(|s| s.rep.is_some() && s.rtu_ns.is_none() && s.rej.is_none())
        .count() as u64;
    if no_rtu > 0 {
        let t = sessions
            .iter()
            .filter(|s| s.rep.is_some() && s.rtu_ns.is_none() && s.rej.is_none())
            .filter_map(|s| s.rep.map(|p| p.ts))
            .min();
        let kind = FindingKind::CmNoRtu { sessions: no_rtu };
        add(
            &mut out,
            Severity::Warning,
            kind,
            no_rtu,
            t,
            Worst::default(),
        );
    }
    let no_drep: Vec<&CmSession> = sessions
        .iter()
        .filter(|s| s.dreq_ns.is_some() && s.drep_ns.is_none())
        .collect();
    if !no_drep.is_empty() {
        let kind = FindingKind::CmNoDrep {
            sessions: no_drep.len() as u64,
        };
        let t = no_drep.iter().filter_map(|s| s.dreq_ns).min();
        add(
            &mut out,
            Severity::Warning,
            kind,
            no_drep.len() as u64,
            t,
            Worst::default(),
        );
    }
    first_packets(&mut out, sessions, r);
    traffic_class(&mut out, sessions, r);
    setup(&mut out, sessions);
    out
}

/// Flows whose first packets are missing, and RC flows the CM did not set up.
fn first_packets(out: &mut Vec<Finding>, sessions: &[CmSession], r: &Report) {
    let missing = || {
        sessions.iter().flat_map(|s| {
            s.flows
                .iter()
                .zip(s.missing_at_start)
                .filter_map(|(f, m)| Some(((*f)?, u64::from(m?))))
        })
    };
    let psns: u64 = missing().map(|(_, n)| n).sum();
    if psns > 0 {
        let flows = missing().filter(|&(_, n)| n > 0).count() as u64;
        let kind = FindingKind::CmFirstPacketsMissing { flows, psns };
        add(out, Severity::Warning, kind, psns, None, worst(missing()));
    }
    if sessions.iter().any(|s| s.rep.is_some()) {
        let covered = |id: u32| sessions.iter().any(|s| s.flows.contains(&Some(id)));
        let mid: Vec<(u32, u64)> = r
            .flows
            .iter()
            .filter(|f| f.transport == "RC" && !covered(f.id))
            .map(|f| (f.id, f.packets))
            .collect();
        if !mid.is_empty() {
            let kind = FindingKind::CmNotSetUp {
                flows: mid.len() as u64,
            };
            add(
                out,
                Severity::Info,
                kind,
                mid.len() as u64,
                None,
                worst(mid.into_iter()),
            );
        }
    }
}

/// The DSCP the CM path asked for (the REQ's primary traffic class) against the DSCP
/// the connection's data carried.
fn traffic_class(out: &mut Vec<Finding>, sessions: &[CmSession], r: &Report) {
    let mut first: Option<(u8, u8)> = None;
    let mut bad = Vec::new();
    for s in sessions {
        let Some(q) = s.req else { continue };
        for id in s.flows.iter().flatten() {
            let Some(f) = r.flows.iter().find(|f| f.id == *id) else {
                continue;
            };
            if let Some(dscp) = f.dscp.filter(|&d| d != q.traffic_class >> 2) {
                first.get_or_insert((q.traffic_class, dscp));
                bad.push((f.id, f.packets));
            }
        }
    }
    if let Some((traffic_class, dscp)) = first {
        let kind = FindingKind::CmTrafficClass {
            flows: bad.len() as u64,
            traffic_class,
            dscp,
        };
        add(
            out,
            Severity::Warning,
            kind,
            bad.len() as u64,
            None,
            worst(bad.into_iter()),
        );
    }
}

/// Connections the CM set up, and how long REQ → RTU took.
fn setup(out: &mut Vec<Finding>, sessions: &[CmSession]) {
    let mut times: Vec<u64> = sessions.iter().filter_map(CmSession::setup_ns).collect();
    if times.is_empty() {
        return;
    }
    times.sort_unstable();
    let kind = FindingKind::CmSetup {
        connections: times.len() as u64,
        median_ns: times[times.len() / 2],
        max_ns: times[times.len() - 1],
    };
    let t = sessions
        .iter()
        .filter(|s| s.setup_ns().is_some())
        .filter_map(|s| s.req_ns.map(|x| x.0))
        .min();
    add(
        out,
        Severity::Info,
        kind,
        times.len() as u64,
        t,
        Worst::default(),
    );
}

/// Tells the findings of requesters that gave up or stalled what came after, from their
/// connection's CM session: a DREQ (who sent it, when, answered or not), else nothing.
pub(super) fn after_stops(sessions: &[CmSession], r: &mut Report) {
    for i in 0..r.findings.len() {
        let Some(id) = r.findings[i].flow() else {
            continue;
        };
        let Some(flow) = r.flows.iter().find(|f| f.id == id) else {
            continue;
        };
        let src = flow.src;
        let Some(s) = sessions.iter().find(|s| s.flows.contains(&Some(id))) else {
            continue;
        };
        let (Some(dreq), Some(from)) = (s.dreq_ns, s.dreq_from) else {
            continue;
        };
        let (FindingKind::RetryExhausted { last_ns, after, .. }
        | FindingKind::ConnectionStalled { last_ns, after, .. }) = &mut r.findings[i].kind
        else {
            continue;
        };
        *after = AfterStop::Dreq {
            by_requester: from == src,
            after_ns: dreq.saturating_sub(*last_ns),
            dreqs: s.dreqs,
            drep_after_ns: s.drep_ns.map(|d| d.saturating_sub(dreq)),
        };
    }
}
