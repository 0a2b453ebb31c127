//! QoS findings that need both halves, `netcheck --capture FILE` with the host's QoS
//! state: the capture says which DSCP/PCP/ECN each queue pair's packets carry, the host
//! says which priority that lands on and whether it is lossless. A flow belongs to a
//! port when its source or destination is an address of the port's netdev.
//!
//! - data on a DSCP whose priority has no PFC while another priority has it (lossy);
//! - CNPs on a DSCP whose priority has no PFC;
//! - data this host sends Not-ECT: ECN off for that priority (`roce_rp`), or the
//!   application's ToS clearing the ECN bits.

use super::host::{dcb_evidence, lossless_tos, lossy, pfc_only};
use super::{HostQos, PortQos};
use crate::analysis::{FlowSummary, Report};
use crate::netcheck::checks::{Evidence, Finding, Severity};
use crate::netcheck::model::NetState;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// QPs named in a title.
const QPS_SHOWN: usize = 4;

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

fn qps(v: &[&FlowSummary]) -> String {
    let mut q: Vec<String> = v.iter().map(|f| f.qp.to_string()).collect();
    q.sort();
    q.dedup();
    let more = q.len().saturating_sub(QPS_SHOWN);
    q.truncate(QPS_SHOWN);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("QP {}{more}", q.join(", "))
}

fn observed(v: &[&FlowSummary], what: &str) -> Evidence {
    let packets: u64 = v.iter().map(|f| f.packets).sum();
    Evidence {
        query: format!("capture: {what}"),
        answer: format!(
            "{} flow{}, {packets} packets ({})",
            v.len(),
            if v.len() == 1 { "" } else { "s" },
            qps(v)
        ),
    }
}

/// The joined findings of every port whose netdev's addresses appear in the capture.
pub fn check(r: &Report, st: &NetState, h: &HostQos, out: &mut Vec<Finding>) {
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

fn lossy_data(p: &PortQos, flows: &[&FlowSummary], out: &mut Vec<Finding>) {
    let mut by_class: BTreeMap<(u8, Option<u8>), Vec<&FlowSummary>> = BTreeMap::new();
    for f in flows.iter().filter(|f| f.transport != "CNP") {
        if let Some(d) = f.dscp {
            by_class.entry((d, f.pcp)).or_default().push(f);
        }
    }
    for ((d, pcp), v) in by_class {
        let Some((prio, on)) = lossy(p, d, pcp) else {
            continue;
        };
        let tos = lossless_tos(p).map_or("TOS".to_string(), |t| t.to_string());
        let tag = pcp.map_or(String::new(), |x| format!(" PCP {x}"));
        let mut evidence = vec![observed(&v, &format!("data on DSCP {d}{tag}"))];
        evidence.extend(dcb_evidence(p));
        out.push(Finding {
            id: "qos-lossy-data",
            severity: Severity::Error,
            title: format!(
                "{} data on DSCP {d}{tag} → priority {prio}; {}: this traffic is lossy",
                qps(&v),
                pfc_only(p, &on)
            ),
            detail: format!(
                "On {} these queue pairs ride a priority PFC does not protect: a drop under congestion costs a go-back-N retry or a transport timeout, and retries running out end in NCCL status=12 (retry exceeded). Their traffic class comes from the application (the QP's tclass / NCCL_IB_TC), RDMA-CM's default_roce_tos, or the device's global traffic_class.",
                p.name()
            ),
            evidence,
            fix: vec![
                format!("RDMA-CM applications: cma_roce_tos -d {} -p {} -t {tos}", p.device, p.port),
                format!("every QP of the device: echo {tos} > /sys/class/infiniband/{}/tc/1/traffic_class", p.device),
                format!("NCCL: NCCL_IB_TC={tos}"),
            ],
            snippet: None,
        });
    }
}

fn lossy_cnps(p: &PortQos, flows: &[&FlowSummary], out: &mut Vec<Finding>) {
    let mut by_dscp: BTreeMap<u8, Vec<&FlowSummary>> = BTreeMap::new();
    for f in flows {
        if let Some(d) = f.cnp_dscp {
            by_dscp.entry(d).or_default().push(f);
        }
    }
    for (d, v) in by_dscp {
        let Some((prio, on)) = lossy(p, d, None) else {
            continue;
        };
        let cnps: u64 = v.iter().map(|f| f.counters.cnp_sent).sum();
        let mut evidence = vec![Evidence {
            query: format!("capture: CNPs on DSCP {d}"),
            answer: format!("{cnps} CNPs to {}", qps(&v)),
        }];
        evidence.extend(dcb_evidence(p));
        // The host-only note on the CNP DSCP says less than this.
        let cnp_file = format!("/sys/class/net/{}/ecn/roce_np/cnp_dscp", p.netdev);
        out.retain(|f| !(f.id == "qos-cnp" && f.evidence.iter().any(|e| e.query == cnp_file)));
        let lossless = p
            .lossless_dscp()
            .map_or("DSCP".to_string(), |x| x.to_string());
        out.push(Finding {
            id: "qos-cnp-lossy",
            severity: Severity::Warning,
            title: format!("CNPs sent on DSCP {d} map to priority {prio} (no PFC); {}", pfc_only(p, &on)),
            detail: "A CNP tells a sender to slow down; on a priority without PFC it can be dropped or queued behind the congestion it reports, and DCQCN reacts late. Fine only when the switches serve that priority with strict priority.".into(),
            evidence,
            fix: vec![
                format!("put CNPs on the lossless class: echo {lossless} > /sys/class/net/{}/ecn/roce_np/cnp_dscp", p.netdev),
                format!("or give priority {prio} strict priority on the NIC and the switches"),
            ],
            snippet: None,
        });
    }
}

fn not_ect(p: &PortQos, st: &NetState, flows: &[&FlowSummary], out: &mut Vec<Finding>) {
    let local: Vec<IpAddr> = st.addrs_of(&p.netdev).map(|a| a.addr).collect();
    // Data this host sends, mostly Not-ECT (CNPs, Not-ECT by rule, set aside).
    let sent: Vec<&FlowSummary> = flows
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
        let (title, fix) = match p.ecn_rp.get(&prio) {
            Some(false) => (
                format!("{} leave Not-ECT on priority {prio}: ECN (roce_rp) is disabled there, so switches cannot mark them and DCQCN never slows them", qps(&v)),
                format!("echo 1 > /sys/class/net/{}/ecn/roce_rp/enable/{prio}", p.netdev),
            ),
            Some(true) => (
                format!("{} leave Not-ECT on priority {prio} although ECN (roce_rp) is enabled there: their ToS clears the ECN bits", qps(&v)),
                format!("use a ToS with ECT(0), e.g. {} (DSCP << 2 | 2), in the application or with cma_roce_tos", lossless_tos(p).map_or("106".into(), |t| t.to_string())),
            ),
            None => continue,
        };
        out.push(Finding {
            id: "qos-not-ect",
            severity: Severity::Warning,
            title,
            detail: "A switch can only CE-mark ECN-capable packets; Not-ECT traffic is dropped instead of marked when queues fill (or paused, with PFC), and its senders never get a CNP.".into(),
            evidence: vec![
                observed(&v, &format!("Not-ECT data sent by {} on priority {prio}", p.netdev)),
                Evidence {
                    query: format!("/sys/class/net/{}/ecn/roce_rp/enable/{prio}", p.netdev),
                    answer: u8::from(p.ecn_rp[&prio]).to_string(),
                },
            ],
            fix: vec![fix],
            snippet: None,
        });
    }
}

/// The capture's own QoS findings (`analyze` shows them too) as netcheck findings: the
/// ones no host state can say (directions on different classes, RoCE v1 next to v2),
/// and, when the host's QoS state was not read, the capture-wide DSCP and ECN ones
/// (with it, the joined findings above say more).
pub fn from_capture(r: &Report, host_read: bool, out: &mut Vec<Finding>) {
    use crate::analysis::report::{FindingKind, Qos, Severity as S};
    for f in &r.findings {
        let FindingKind::Qos(q) = &f.kind else {
            continue;
        };
        let id = match q {
            Qos::DirectionsDiffer { .. } => "qos-capture-directions",
            Qos::RoceV1AndV2 { .. } => "qos-capture-roce-v1",
            Qos::DataDscpMixed { .. } if !host_read => "qos-capture-dscp-mixed",
            Qos::DataDscp0 { .. } if !host_read => "qos-capture-dscp0",
            Qos::DataNotEct { .. } if !host_read => "qos-capture-not-ect",
            _ => continue,
        };
        out.push(Finding {
            id,
            severity: match f.severity {
                S::Error => Severity::Error,
                S::Warning => Severity::Warning,
                S::Info => Severity::Info,
            },
            title: crate::report::findings::message(f, r),
            detail: format!(
                "From the capture alone (`rocetap analyze` finding `{}`).",
                f.code()
            ),
            evidence: Vec::new(),
            fix: Vec::new(),
            snippet: None,
        });
    }
}
