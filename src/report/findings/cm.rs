//! The words of the CM findings (`analysis::cm`): failed setups, first packets the
//! capture does not have, the traffic class asked for against the DSCP carried, and how
//! long setups took.

use super::duration;
use crate::analysis::report::FindingKind;
use dissectors::cm::{RejReason, ServiceId};

/// `ServiceID 0x0000000001064853 (TCP port 18515)`.
fn service(id: u64) -> String {
    let s = ServiceId(id);
    match s.rdma_ip_port() {
        Some((proto, port)) => match ServiceId::port_space_name(proto) {
            Some(n) => format!("service 0x{id:016x} (RDMA-CM {n} port {port})"),
            None => format!("service 0x{id:016x} (RDMA-CM port space 0x{proto:02x} port {port})"),
        },
        None => format!("service 0x{id:016x}"),
    }
}

/// The sentence of a CM finding; `None` for the other kinds. `w` is the worst flows'
/// text, `at` when it first happened.
pub(super) fn message(kind: &FindingKind, w: &str, at: &str) -> Option<String> {
    Some(match kind {
        FindingKind::CmRejected {
            sessions,
            reason,
            service_id,
            requester,
            responder,
        } => {
            let svc = service_id.map(|s| format!(" for {}", service(s))).unwrap_or_default();
            format!(
                "{sessions} connection setups rejected by the CM: {} (reason {reason}){svc}, {requester} → {responder}{at}",
                RejReason(*reason).name()
            )
        }
        FindingKind::CmUnanswered {
            sessions,
            reqs,
            retry_interval_ns,
            requester,
            responder,
        } => {
            let retry = match retry_interval_ns {
                Some(ns) => format!(", retried every {}", duration(*ns)),
                None => String::new(),
            };
            format!(
                "{sessions} connection setups got no answer: {reqs} CM REQs{retry} and no REP or REJ came back ({requester} → {responder}): the peer's CM is unreachable (address, GID, routing or firewall) or not running{at}"
            )
        }
        FindingKind::CmNoRtu { sessions } => format!(
            "{sessions} CM REPs were never confirmed by an RTU: the requester did not finish the setup (or the capture missed it){at}"
        ),
        FindingKind::CmNoDrep { sessions } => format!(
            "{sessions} CM DREQs got no DREP: the other side did not acknowledge the disconnect{at}"
        ),
        FindingKind::CmFirstPacketsMissing { flows, psns } => format!(
            "{flows} flows set up by the CM miss their first packets: {psns} PSNs between the starting PSN the REQ / REP announced and the first packet captured (lost before the capture point, or dropped by the capture) — {w}"
        ),
        FindingKind::CmNotSetUp { flows } => format!(
            "{flows} RC flows have no CM setup in the capture: they were set up before it started (the capture started mid-stream for them) or without the CM (NCCL, verbs apps exchanging QPNs themselves), so their first PSN is not known — {w}"
        ),
        FindingKind::CmTrafficClass {
            flows,
            traffic_class,
            dscp,
        } => format!(
            "{flows} flows carry another DSCP than their CM path asked for: traffic class {traffic_class} (DSCP {}) in the REQ, DSCP {dscp} on the data (remarked on the way, or the QP's address handle differs from the path) — {w}",
            traffic_class >> 2
        ),
        FindingKind::CmSetup {
            connections,
            median_ns,
            max_ns,
        } => format!(
            "{connections} connections set up by the CM (REQ → REP → RTU): setup took {} median, {} at most{at}",
            duration(*median_ns),
            duration(*max_ns)
        ),
        _ => return None,
    })
}
