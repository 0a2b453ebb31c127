//! QoS findings that need both halves, `netcheck --capture FILE` with the host's QoS
//! state: the capture says which DSCP/PCP/ECN each queue pair's packets carry, the host
//! says which priority that lands on and whether it is lossless. A flow belongs to a
//! port when its source or destination is an address of the port's netdev.
//!
//! - data on a DSCP whose priority has no PFC while another priority has it (lossy);
//! - CNPs on a DSCP whose priority has no PFC;
//! - data this host sends Not-ECT: ECN off for that priority (`roce_rp`), or the
//!   application's ToS clearing the ECN bits.

use super::found::{Flows, Qos};
use super::host::lossy;
use super::{HostQos, PortQos};
use crate::analysis::{FlowSummary, Report};
use crate::netcheck::found::Found;
use crate::netcheck::model::NetState;
use std::collections::BTreeMap;
use std::net::IpAddr;

fn ip(a: &dissectors::Addr) -> Option<IpAddr> {
    match a {
        dissectors::Addr::Ip(x) => Some(*x),
        dissectors::Addr::Lid(_) => None,
    }
}

/// The capture's flows that touch the port's netdev's addresses (as source or destination).
fn flows_of<'a>(r: &'a Report, st: &NetState, p: &PortQos) -> Vec<&'a FlowSummary> {
    let local: Vec<IpAddr> = st.addrs_of(&p.netdev).map(|a| a.addr).collect();
    r.flows
        .iter()
        .filter(|f| {
            [ip(&f.src), ip(&f.dst)]
                .iter()
                .flatten()
                .any(|a| local.contains(a))
        })
        .collect()
}

/// The flows as a finding carries them: how many, their packets, their queue pairs.
fn flows(v: &[&FlowSummary]) -> Flows {
    Flows {
        flows: v.len(),
        packets: v.iter().map(|f| f.packets).sum(),
        qps: v.iter().map(|f| f.qp).collect(),
    }
}

/// The joined findings of every port whose netdev's addresses appear in the capture.
pub fn check(r: &Report, st: &NetState, h: &HostQos, out: &mut Vec<Found<'_>>) {
    for p in &h.ports {
        let flows = flows_of(r, st, p);
        if flows.is_empty() {
            continue;
        }
        lossy_data(p, &flows, out);
        lossy_cnps(p, &flows, out);
        not_ect(p, st, &flows, out);
    }
}

fn lossy_data(p: &PortQos, fl: &[&FlowSummary], out: &mut Vec<Found<'_>>) {
    let mut by_class: BTreeMap<(u8, Option<u8>), Vec<&FlowSummary>> = BTreeMap::new();
    for f in fl.iter().filter(|f| f.transport != "CNP") {
        if let Some(d) = f.dscp {
            by_class.entry((d, f.pcp)).or_default().push(f);
        }
    }
    for ((d, pcp), v) in by_class {
        let Some((prio, on)) = lossy(p, d, pcp) else {
            continue;
        };
        out.push(Found::Qos(Qos::LossyData {
            port: Box::new(p.clone()),
            dscp: d,
            pcp,
            prio,
            pfc_on: on,
            flows: flows(&v),
        }));
    }
}

fn lossy_cnps(p: &PortQos, fl: &[&FlowSummary], out: &mut Vec<Found<'_>>) {
    let mut by_dscp: BTreeMap<u8, Vec<&FlowSummary>> = BTreeMap::new();
    for f in fl {
        if let Some(d) = f.cnp_dscp {
            by_dscp.entry(d).or_default().push(f);
        }
    }
    for (d, v) in by_dscp {
        let Some((prio, on)) = lossy(p, d, None) else {
            continue;
        };
        // The host-only note on the CNP DSCP says less than this.
        out.retain(|f| !matches!(f, Found::Qos(Qos::Cnp { port, .. }) if port.netdev == p.netdev));
        out.push(Found::Qos(Qos::CnpLossy {
            port: Box::new(p.clone()),
            dscp: d,
            prio,
            pfc_on: on,
            cnps: v.iter().map(|f| f.counters.cnp_sent).sum(),
            flows: flows(&v),
        }));
    }
}

fn not_ect(p: &PortQos, st: &NetState, fl: &[&FlowSummary], out: &mut Vec<Found<'_>>) {
    let local: Vec<IpAddr> = st.addrs_of(&p.netdev).map(|a| a.addr).collect();
    // Data this host sends, mostly Not-ECT (CNPs, Not-ECT by rule, set aside).
    let sent: Vec<&FlowSummary> = fl
        .iter()
        .copied()
        .filter(|f| f.transport != "CNP" && ip(&f.src).is_some_and(|a| local.contains(&a)))
        .filter(|f| {
            let not_ect = f.ecn_not_ect.saturating_sub(f.counters.cnp_sent);
            not_ect * 2 > f.packets.saturating_sub(f.counters.cnp_sent)
        })
        .collect();
    let mut by_prio: BTreeMap<u8, Vec<&FlowSummary>> = BTreeMap::new();
    for f in sent {
        if let Some(prio) = f.dscp.and_then(|d| p.prio_of(d, f.pcp)) {
            by_prio.entry(prio).or_default().push(f);
        }
    }
    for (prio, v) in by_prio {
        let Some(&ecn_enabled) = p.ecn_rp.get(&prio) else {
            continue;
        };
        out.push(Found::Qos(Qos::NotEct {
            port: Box::new(p.clone()),
            prio,
            ecn_enabled,
            flows: flows(&v),
        }));
    }
}

/// The capture's own QoS findings (`analyze` shows them too) as netcheck findings: the
/// ones no host state can say (directions on different classes, RoCE v1 next to v2),
/// and, when the host's QoS state was not read, the capture-wide DSCP and ECN ones
/// (with it, the joined findings above say more).
pub fn from_capture<'r>(r: &'r Report, host_read: bool, out: &mut Vec<Found<'r>>) {
    use crate::analysis::report::{FindingKind, Qos as Q};
    for f in &r.findings {
        let FindingKind::Qos(q) = &f.kind else {
            continue;
        };
        let id = match q {
            Q::DirectionsDiffer { .. } => "qos-capture-directions",
            Q::RoceV1AndV2 { .. } => "qos-capture-roce-v1",
            Q::DataDscpMixed { .. } if !host_read => "qos-capture-dscp-mixed",
            Q::DataDscp0 { .. } if !host_read => "qos-capture-dscp0",
            Q::DataNotEct { .. } if !host_read => "qos-capture-not-ect",
            _ => continue,
        };
        out.push(Found::Qos(Qos::FromCapture {
            id,
            finding: f,
            report: r,
        }));
    }
}
