//! The words of the QoS checks (`qos-*`): the host alone, GID indices across nodes, the
//! host joined with a capture, and the capture's own QoS findings.

use super::{ev, Words};
use crate::netcheck::checks::Evidence;
use crate::netcheck::host::qos::found::{Flows, PeerGid, Qos, TosSource};
use crate::netcheck::host::qos::host::lossless_tos;
use crate::netcheck::host::qos::{HostQos, PortQos};

/// QPs named in a title.
const QPS_SHOWN: usize = 4;

/// `priority 3`, `priorities 3,4`, `no priority`.
fn prios(on: &[u8]) -> String {
    let v: Vec<String> = on.iter().map(u8::to_string).collect();
    match v.len() {
        0 => "no priority".into(),
        1 => format!("priority {}", v[0]),
        _ => format!("priorities {}", v.join(",")),
    }
}

/// `PFC is enabled only on priority 3 (DSCP 26 → 3)`.
fn pfc_only(p: &PortQos, on: &[u8]) -> String {
    let example = p
        .lossless_dscp()
        .and_then(|d| Some((d, p.prio_of(d, None)?)))
        .map(|(d, x)| format!(" (DSCP {d} → {x})"))
        .unwrap_or_default();
    format!("PFC is enabled only on {}{example}", prios(on))
}

/// The recorded DCB outputs, as evidence.
fn dcb_evidence(p: &PortQos) -> Vec<Evidence> {
    let Some(d) = &p.dcb else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(t) = &d.trust {
        out.push(ev(format!("{} trust mode", p.netdev), t.clone()));
    }
    if let Some(on) = p.pfc_on() {
        out.push(ev(
            format!("{} PFC", p.netdev),
            format!("enabled on {}", prios(&on)),
        ));
    }
    if !d.sources.is_empty() {
        out.push(ev("recorded from", d.sources.join(", ")));
    }
    out
}

/// `QP 1, 2, 3, 4 and 2 more`.
fn qps(f: &Flows) -> String {
    let mut q: Vec<String> = f.qps.iter().map(ToString::to_string).collect();
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

fn observed(f: &Flows, what: &str) -> Evidence {
    ev(
        format!("capture: {what}"),
        format!(
            "{} flow{}, {} packets ({})",
            f.flows,
            if f.flows == 1 { "" } else { "s" },
            f.packets,
            qps(f)
        ),
    )
}

/// `e` followed by the port's recorded DCB outputs.
fn with_dcb(e: Evidence, p: &PortQos) -> Vec<Evidence> {
    let mut v = vec![e];
    v.extend(dcb_evidence(p));
    v
}

pub(super) fn words(q: &Qos<'_>) -> Words {
    match q {
        Qos::PfcNone { port: p } => Words::new(
            format!("PFC is enabled on no priority of {}: RoCE there is lossy and relies on ECN alone", p.name()),
            "Without a lossless priority every drop costs a go-back-N retry (or a timeout); that works only when ECN/DCQCN keeps queues short end to end.".into(),
            dcb_evidence(p),
            vec![format!("enable PFC on the RoCE priority, e.g. mlnx_qos -i {} --pfc 0,0,0,1,0,0,0,0 (and on the switch ports)", p.netdev)],
        ),
        Qos::RoceMode { port: p, mode } => Words::new(
            format!("RDMA-CM connects with {mode} on {}: not RoCE v2", p.name()),
            "RoCE v1 frames (EtherType 0x8915) are not routable and carry no IP DSCP or ECN, so they miss the QoS set up for RoCE v2 and never leave the L2 segment.".into(),
            vec![ev(
                format!("/sys/kernel/config/rdma_cm/{}/ports/{}/default_roce_mode", p.device, p.port),
                mode.clone(),
            )],
            vec![
                format!("cma_roce_mode -d {} -p {} -m 2", p.device, p.port),
                format!("echo \"RoCE v2\" > /sys/kernel/config/rdma_cm/{}/ports/{}/default_roce_mode", p.device, p.port),
            ],
        ),
        Qos::Tos {
            port: p,
            source,
            tos,
            prio,
            pfc_on,
        } => tos_words(p, *source, *tos, *prio, pfc_on),
        Qos::Cnp {
            port: p,
            dscp: d,
            prio,
            pfc_on: on,
        } => Words::new(
            format!("CNPs from {} leave on DSCP {d} → priority {prio} (no PFC); {}", p.name(), pfc_only(p, on)),
            "CNPs on a lossy priority are fine while the switches serve it with strict priority (the ConnectX default, DSCP 48 → priority 6); in a lossy, busy queue they arrive late or are dropped and DCQCN reacts late.".into(),
            with_dcb(ev(format!("/sys/class/net/{}/ecn/roce_np/cnp_dscp", p.netdev), d.to_string()), p),
            vec![format!("give priority {prio} strict priority on the switches, or put CNPs on the lossless class: echo {} > /sys/class/net/{}/ecn/roce_np/cnp_dscp", p.lossless_dscp().map_or("DSCP".into(), |x| x.to_string()), p.netdev)],
        ),
        Qos::MtuPf {
            port: p,
            active,
            mtu,
            pf,
            pf_mtu,
            could,
        } => Words::new(
            format!("RoCE MTU {active} on {} because {} has MTU {mtu}; the PF {pf} has {pf_mtu}, which carries RoCE MTU {could}", p.name(), p.netdev),
            "The RoCE MTU follows the netdev the GID is bound to (its MTU minus 96 bytes of headers, rounded down to 256..4096); a VF left at MTU 1500 holds RDMA to 1024-byte packets although the PF and the fabric carry jumbo frames.".into(),
            vec![
                ev(format!("/sys/class/net/{}/mtu", p.netdev), mtu.to_string()),
                ev(format!("/sys/class/net/{}/device/physfn/net/{pf}/mtu", p.netdev), pf_mtu.to_string()),
            ],
            vec![
                format!("set \"mtu\": {pf_mtu} in the NetworkAttachmentDefinition's CNI config of {}", p.netdev),
                format!("or, for a test: ip link set {} mtu {pf_mtu}", p.netdev),
            ],
        ),
        Qos::GidMismatch {
            port: p,
            index: i,
            address,
            peer,
            peer_device,
            peer_port,
            there,
            peer_v2,
        } => {
            let there = match there {
                PeerGid::Empty => "empty (all-zero or absent)".to_string(),
                PeerGid::Gid { kind, addr } => format!("{kind} ({addr})"),
            };
            let v2 = peer_v2.map_or("it has no RoCE v2 IPv4 GID".to_string(), |x| {
                format!("its RoCE v2 IPv4 GID is index {x}")
            });
            let pname = format!("{peer_device} port {peer_port}");
            Words::new(
                format!(
                    "GID index {i} is RoCE v2 ({address}) on {} but {there} on {peer} ({pname}); {v2}",
                    p.name(),
                ),
                "A job that pins the GID index on every node (NCCL_IB_GID_INDEX, sgid_index) sends RoCE v1 or link-local traffic from the node whose table differs, or fails to connect (retry exceeded). GID tables are filled in the order addresses and GID types appear, so they can differ between nodes.".into(),
                vec![
                    ev(
                        format!("/sys/class/infiniband/{}/ports/{}/gids/{i} (here)", p.device, p.port),
                        format!("RoCE v2 ({address})"),
                    ),
                    ev(
                        format!("/sys/class/infiniband/{peer_device}/ports/{peer_port}/gids/{i} ({peer})"),
                        there,
                    ),
                ],
                vec![
                    "do not pin the index: unset NCCL_IB_GID_INDEX (NCCL picks the RoCE v2 IPv4 GID), or set it per node".into(),
                    format!("compare the tables with `show_gids` on {peer} and here"),
                ],
            )
        }
        Qos::LossyData {
            port: p,
            dscp: d,
            pcp,
            prio,
            pfc_on: on,
            flows,
        } => {
            let tos = lossless_tos(p).map_or("TOS".to_string(), |t| t.to_string());
            let tag = pcp.map_or(String::new(), |x| format!(" PCP {x}"));
            Words::new(
                format!(
                    "{} data on DSCP {d}{tag} → priority {prio}; {}: this traffic is lossy",
                    qps(flows),
                    pfc_only(p, on)
                ),
                format!(
                    "On {} these queue pairs ride a priority PFC does not protect: a drop under congestion costs a go-back-N retry or a transport timeout, and retries running out end in NCCL status=12 (retry exceeded). Their traffic class comes from the application (the QP's tclass / NCCL_IB_TC), RDMA-CM's default_roce_tos, or the device's global traffic_class.",
                    p.name()
                ),
                with_dcb(observed(flows, &format!("data on DSCP {d}{tag}")), p),
                vec![
                    format!("RDMA-CM applications: cma_roce_tos -d {} -p {} -t {tos}", p.device, p.port),
                    format!("every QP of the device: echo {tos} > /sys/class/infiniband/{}/tc/1/traffic_class", p.device),
                    format!("NCCL: NCCL_IB_TC={tos}"),
                ],
            )
        }
        Qos::CnpLossy {
            port: p,
            dscp: d,
            prio,
            pfc_on: on,
            cnps,
            flows,
        } => {
            let lossless = p
                .lossless_dscp()
                .map_or("DSCP".to_string(), |x| x.to_string());
            Words::new(
                format!("CNPs sent on DSCP {d} map to priority {prio} (no PFC); {}", pfc_only(p, on)),
                "A CNP tells a sender to slow down; on a priority without PFC it can be dropped or queued behind the congestion it reports, and DCQCN reacts late. Fine only when the switches serve that priority with strict priority.".into(),
                with_dcb(ev(format!("capture: CNPs on DSCP {d}"), format!("{cnps} CNPs to {}", qps(flows))), p),
                vec![
                    format!("put CNPs on the lossless class: echo {lossless} > /sys/class/net/{}/ecn/roce_np/cnp_dscp", p.netdev),
                    format!("or give priority {prio} strict priority on the NIC and the switches"),
                ],
            )
        }
        Qos::NotEct {
            port: p,
            prio,
            ecn_enabled,
            flows,
        } => {
            let (title, fix) = if *ecn_enabled {
                (
                    format!("{} leave Not-ECT on priority {prio} although ECN (roce_rp) is enabled there: their ToS clears the ECN bits", qps(flows)),
                    format!("use a ToS with ECT(0), e.g. {} (DSCP << 2 | 2), in the application or with cma_roce_tos", lossless_tos(p).map_or("106".into(), |t| t.to_string())),
                )
            } else {
                (
                    format!("{} leave Not-ECT on priority {prio}: ECN (roce_rp) is disabled there, so switches cannot mark them and DCQCN never slows them", qps(flows)),
                    format!("echo 1 > /sys/class/net/{}/ecn/roce_rp/enable/{prio}", p.netdev),
                )
            };
            Words::new(
                title,
                "A switch can only CE-mark ECN-capable packets; Not-ECT traffic is dropped instead of marked when queues fill (or paused, with PFC), and its senders never get a CNP.".into(),
                vec![
                    observed(flows, &format!("Not-ECT data sent by {} on priority {prio}", p.netdev)),
                    ev(
                        format!("/sys/class/net/{}/ecn/roce_rp/enable/{prio}", p.netdev),
                        u8::from(*ecn_enabled).to_string(),
                    ),
                ],
                vec![fix],
            )
        }
        Qos::FromCapture { finding, report, .. } => Words::new(
            crate::report::findings::message(finding, report),
            format!(
                "From the capture alone (`rocetap analyze` finding `{}`).",
                finding.code()
            ),
            Vec::new(),
            Vec::new(),
        ),
    }
}

/// `qos-cm-tos` / `qos-traffic-class`.
fn tos_words(p: &PortQos, source: TosSource, tos: u8, prio: u8, on: &[u8]) -> Words {
    let want_txt =
        lossless_tos(p).map_or("the lossless class's ToS".to_string(), |t| t.to_string());
    let (what, path, fix) = match source {
        TosSource::CmDefault => (
            "RDMA-CM connections",
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
        TosSource::DeviceClass => (
            "every QP of the device",
            format!("/sys/class/infiniband/{}/tc/1/traffic_class", p.device),
            vec![format!(
                "echo {want_txt} > /sys/class/infiniband/{}/tc/1/traffic_class",
                p.device
            )],
        ),
    };
    Words::new(
        format!(
            "{what} on {} send with ToS {tos} (DSCP {} → priority {prio}); {}: that traffic is lossy",
            p.name(),
            tos >> 2,
            pfc_only(p, on)
        ),
        "The ToS byte's upper six bits are the DSCP the switches and the NIC classify by; a DSCP on a priority without PFC is dropped under congestion, and each drop costs a go-back-N retry or a timeout (NCCL status=12 when retries run out).".into(),
        with_dcb(ev(path, tos.to_string()), p),
        fix,
    )
}

/// One line per port for the text report: what is known of its QoS, `?` for unknown.
pub fn summary(h: &HostQos) -> Vec<String> {
    let q = |x: Option<String>| x.unwrap_or_else(|| "?".into());
    let n = |x: Option<u8>| q(x.map(|v| v.to_string()));
    h.ports
        .iter()
        .map(|p| {
            let g = &p.gids;
            let v2: Vec<String> = g
                .v2_ipv4
                .iter()
                .map(|r| format!("{} ({})", r.index, r.address))
                .collect();
            format!(
                "qos {}: trust {}, PFC on {}, CNP DSCP {}, RDMA-CM {} ToS {}, traffic_class {}, \
                 RoCE v2 IPv4 GID index {}, netns {}",
                p.name(),
                q(p.dcb.as_ref().and_then(|d| d.trust.clone())),
                q(p.pfc_on().map(|v| prios(&v))),
                n(p.cnp_dscp),
                q(p.default_roce_mode.clone()),
                n(p.default_roce_tos),
                n(p.traffic_class),
                if v2.is_empty() {
                    "none".into()
                } else {
                    v2.join(", ")
                },
                q(h.netns_mode.clone()),
            )
        })
        .collect()
}
