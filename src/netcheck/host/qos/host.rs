//! QoS findings from the host alone: RDMA-CM in RoCE v1 mode, RDMA-CM's ToS or the
//! device's global traffic class on a priority without PFC while another has it, CNPs on
//! a priority without PFC, no PFC at all, a VF whose netdev MTU holds the RoCE MTU below
//! what its PF carries. Nothing is said about a value that is unknown. (Each netdev's
//! GID indices are facts, not findings: the JSON `qos` block and the text summary.)

use super::{HostQos, PortQos};
use crate::netcheck::checks::{Evidence, Finding, Severity};
use crate::netcheck::sysfs::roce_mtu_for;

/// `priority 3`, `priorities 3,4`, `no priority`.
pub(crate) fn prios(on: &[u8]) -> String {
    let v: Vec<String> = on.iter().map(u8::to_string).collect();
    match v.len() {
        0 => "no priority".into(),
        1 => format!("priority {}", v[0]),
        _ => format!("priorities {}", v.join(",")),
    }
}

/// Where DSCP `d` goes and why that is lossy: `Some((prio, PFC priorities))` when the
/// DSCP's priority is known, PFC is enabled somewhere, and not on that priority.
pub(crate) fn lossy(p: &PortQos, d: u8, pcp: Option<u8>) -> Option<(u8, Vec<u8>)> {
    let prio = p.prio_of(d, pcp)?;
    let on = p.pfc_on()?;
    (!on.is_empty() && !on.contains(&prio)).then_some((prio, on))
}

/// `PFC is enabled only on priority 3 (DSCP 26 → 3)`.
pub(crate) fn pfc_only(p: &PortQos, on: &[u8]) -> String {
    let example = p
        .lossless_dscp()
        .and_then(|d| Some((d, p.prio_of(d, None)?)))
        .map(|(d, x)| format!(" (DSCP {d} → {x})"))
        .unwrap_or_default();
    format!("PFC is enabled only on {}{example}", prios(on))
}

/// The ToS byte that puts traffic on the lossless class: its DSCP, ECT(0).
pub(crate) fn lossless_tos(p: &PortQos) -> Option<u8> {
    p.lossless_dscp().map(|d| d << 2 | 2)
}

/// The recorded DCB outputs, as evidence.
pub(crate) fn dcb_evidence(p: &PortQos) -> Vec<Evidence> {
    let Some(d) = &p.dcb else {
        return Vec::new();
    };
    let mut ev = Vec::new();
    if let Some(t) = &d.trust {
        ev.push(Evidence {
            query: format!("{} trust mode", p.netdev),
            answer: t.clone(),
        });
    }
    if let Some(on) = p.pfc_on() {
        ev.push(Evidence {
            query: format!("{} PFC", p.netdev),
            answer: format!("enabled on {}", prios(&on)),
        });
    }
    if !d.sources.is_empty() {
        ev.push(Evidence {
            query: "recorded from".into(),
            answer: d.sources.join(", "),
        });
    }
    ev
}

fn finding(
    id: &'static str,
    severity: Severity,
    title: String,
    detail: String,
    evidence: Vec<Evidence>,
    fix: Vec<String>,
) -> Finding {
    Finding {
        id,
        severity,
        title,
        detail,
        evidence,
        fix,
        snippet: None,
    }
}

/// The host-only QoS findings of every port.
pub fn check(h: &HostQos, out: &mut Vec<Finding>) {
    for p in &h.ports {
        roce_mode(p, out);
        tos(p, out);
        cnp(p, out);
        mtu_pf(p, out);
        if p.pfc_on().is_some_and(|v| v.is_empty()) {
            out.push(finding(
                "qos-pfc",
                Severity::Info,
                format!("PFC is enabled on no priority of {}: RoCE there is lossy and relies on ECN alone", p.name()),
                "Without a lossless priority every drop costs a go-back-N retry (or a timeout); that works only when ECN/DCQCN keeps queues short end to end.".into(),
                dcb_evidence(p),
                vec![format!("enable PFC on the RoCE priority, e.g. mlnx_qos -i {} --pfc 0,0,0,1,0,0,0,0 (and on the switch ports)", p.netdev)],
            ));
        }
    }
}

fn roce_mode(p: &PortQos, out: &mut Vec<Finding>) {
    let Some(mode) = &p.default_roce_mode else {
        return;
    };
    if mode.contains("v2") {
        return;
    }
    out.push(finding(
        "qos-roce-mode",
        Severity::Warning,
        format!("RDMA-CM connects with {mode} on {}: not RoCE v2", p.name()),
        "RoCE v1 frames (EtherType 0x8915) are not routable and carry no IP DSCP or ECN, so they miss the QoS set up for RoCE v2 and never leave the L2 segment.".into(),
        vec![Evidence {
            query: format!("/sys/kernel/config/rdma_cm/{}/ports/{}/default_roce_mode", p.device, p.port),
            answer: mode.clone(),
        }],
        vec![
            format!("cma_roce_mode -d {} -p {} -m 2", p.device, p.port),
            format!("echo \"RoCE v2\" > /sys/kernel/config/rdma_cm/{}/ports/{}/default_roce_mode", p.device, p.port),
        ],
    ));
}

fn tos(p: &PortQos, out: &mut Vec<Finding>) {
    let want = lossless_tos(p);
    let want_txt = want.map_or("the lossless class's ToS".to_string(), |t| t.to_string());
    for (id, what, value, path, fix) in [
        (
            "qos-cm-tos",
            "RDMA-CM connections",
            p.default_roce_tos,
            format!(
                "/sys/kernel/config/rdma_cm/{}/ports/{}/default_roce_tos",
                p.device, p.port
            ),
            vec![
                format!("cma_roce_tos -d {} -p {} -t {want_txt}", p.device, p.port),
                format!(
                    "echo {want_txt} > /sys/kernel/config/rdma_cm/{}/ports/{}/default_roce_tos",
                    p.device, p.port
                ),
            ],
        ),
        (
            "qos-traffic-class",
            "every QP of the device",
            p.traffic_class,
            format!("/sys/class/infiniband/{}/tc/1/traffic_class", p.device),
            vec![format!(
                "echo {want_txt} > /sys/class/infiniband/{}/tc/1/traffic_class",
                p.device
            )],
        ),
    ] {
        let Some(tos) = value else {
            continue;
        };
        let Some((prio, on)) = lossy(p, tos >> 2, None) else {
            continue;
        };
        let mut evidence = vec![Evidence {
            query: path,
            answer: tos.to_string(),
        }];
        evidence.extend(dcb_evidence(p));
        out.push(finding(
            id,
            Severity::Warning,
            format!(
                "{what} on {} send with ToS {tos} (DSCP {} → priority {prio}); {}: that traffic is lossy",
                p.name(),
                tos >> 2,
                pfc_only(p, &on)
            ),
            "The ToS byte's upper six bits are the DSCP the switches and the NIC classify by; a DSCP on a priority without PFC is dropped under congestion, and each drop costs a go-back-N retry or a timeout (NCCL status=12 when retries run out).".into(),
            evidence,
            fix,
        ));
    }
}

fn cnp(p: &PortQos, out: &mut Vec<Finding>) {
    let Some(d) = p.cnp_dscp else {
        return;
    };
    let Some((prio, on)) = lossy(p, d, p.cnp_802p_prio) else {
        return;
    };
    let mut evidence = vec![Evidence {
        query: format!("/sys/class/net/{}/ecn/roce_np/cnp_dscp", p.netdev),
        answer: d.to_string(),
    }];
    evidence.extend(dcb_evidence(p));
    out.push(finding(
        "qos-cnp",
        Severity::Info,
        format!("CNPs from {} leave on DSCP {d} → priority {prio} (no PFC); {}", p.name(), pfc_only(p, &on)),
        "CNPs on a lossy priority are fine while the switches serve it with strict priority (the ConnectX default, DSCP 48 → priority 6); in a lossy, busy queue they arrive late or are dropped and DCQCN reacts late.".into(),
        evidence,
        vec![format!("give priority {prio} strict priority on the switches, or put CNPs on the lossless class: echo {} > /sys/class/net/{}/ecn/roce_np/cnp_dscp", p.lossless_dscp().map_or("DSCP".into(), |x| x.to_string()), p.netdev)],
    ));
}

fn mtu_pf(p: &PortQos, out: &mut Vec<Finding>) {
    let (Some(mtu), Some(pf), Some(pf_mtu)) = (p.mtu, &p.pf, p.pf_mtu) else {
        return;
    };
    let (have, could) = (roce_mtu_for(mtu), roce_mtu_for(pf_mtu));
    let active = p.active_mtu.or(have);
    let (Some(active), Some(could)) = (active, could) else {
        return;
    };
    if active >= could {
        return;
    }
    // This says why, and what to set, where the MTU note only says that.
    let note = format!("{} MTU ", p.netdev);
    out.retain(|f| {
        !(f.id == "roce-mtu" && f.severity == Severity::Info && f.title.starts_with(&note))
    });
    out.push(finding(
        "qos-mtu-pf",
        Severity::Warning,
        format!("RoCE MTU {active} on {} because {} has MTU {mtu}; the PF {pf} has {pf_mtu}, which carries RoCE MTU {could}", p.name(), p.netdev),
        "The RoCE MTU follows the netdev the GID is bound to (its MTU minus 96 bytes of headers, rounded down to 256..4096); a VF left at MTU 1500 holds RDMA to 1024-byte packets although the PF and the fabric carry jumbo frames.".into(),
        vec![
            Evidence { query: format!("/sys/class/net/{}/mtu", p.netdev), answer: mtu.to_string() },
            Evidence { query: format!("/sys/class/net/{}/device/physfn/net/{pf}/mtu", p.netdev), answer: pf_mtu.to_string() },
        ],
        vec![
            format!("set \"mtu\": {pf_mtu} in the NetworkAttachmentDefinition's CNI config of {}", p.netdev),
            format!("or, for a test: ip link set {} mtu {pf_mtu}", p.netdev),
        ],
    ));
}
