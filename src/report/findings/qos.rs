//! The words for the QoS findings a capture shows alone (`analysis::report::Qos`): which
//! classes the packets ride, what that does to the traffic, and what to set.

use super::label_of;
use crate::analysis::report::{DscpShare, Qos, SplitConnection};
use crate::analysis::Report;

/// `DSCP 26 PCP 3`, `DSCP 0 untagged`.
fn class(dscp: Option<u8>, pcp: Option<u8>) -> String {
    let d = dscp.map_or("no DSCP".to_string(), |d| format!("DSCP {d}"));
    let p = pcp.map_or("untagged".to_string(), |p| format!("PCP {p}"));
    format!("{d} {p}")
}

fn split(r: &Report, s: &SplitConnection) -> String {
    format!(
        "{} on {} but {} on {}",
        label_of(r, s.flows[0]),
        class(s.dscp[0], s.pcp[0]),
        label_of(r, s.flows[1]),
        class(s.dscp[1], s.pcp[1])
    )
}

fn share(s: &DscpShare) -> String {
    let flows = if s.flows == 1 { "flow" } else { "flows" };
    format!("{} ({} packets, {} {flows})", s.dscp, s.packets, s.flows)
}

fn counts(v: &[(u8, u64)]) -> String {
    let v: Vec<String> = v.iter().map(|(d, n)| format!("{d} ({n})")).collect();
    v.join(", ")
}

/// `1 connection carries`, `2 connections carry`.
fn n_of(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn on(w: &str) -> String {
    if w.is_empty() {
        String::new()
    } else {
        format!("; on {w}")
    }
}

/// A QoS finding's sentence; `w` is the worst flows' text.
pub(super) fn message(r: &Report, q: &Qos, w: &str) -> String {
    match q {
        Qos::DirectionsDiffer { connections, shown } => {
            let s: Vec<String> = shown.iter().map(|s| split(r, s)).collect();
            let more = connections.saturating_sub(shown.len() as u64);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!(
                "{} two directions in different classes: {}{more}. \
                 The answers (ACKs, NAKs, READ responses) ride another switch priority than the \
                 requests; when only one of them is lossless, a drop on the other stalls the \
                 whole connection until the retry timer (status=12, retry exceeded). Give both \
                 ends the same traffic class (the QP's tclass, `cma_roce_tos`, or the NIC's DSCP \
                 trust mode on both hosts)",
                n_of(
                    *connections,
                    "connection carries its",
                    "connections carry their"
                ),
                s.join("; ")
            )
        }
        Qos::DataDscpMixed {
            shares,
            main,
            off_main,
        } => {
            let s: Vec<String> = shares.iter().map(share).collect();
            format!(
                "RoCE data rides {} DSCPs: {}. {off_main} data packets are off DSCP {main}, the \
                 marked DSCP that carries the most: they are on another switch priority, likely \
                 one without PFC or ECN marking{}",
                shares.len(),
                s.join(", "),
                on(w)
            )
        }
        Qos::DataDscp0 { packets, marked } => format!(
            "{packets} data packets ride DSCP 0 (best effort) while {marked} are marked: those \
             QPs never got a traffic class (the application's tclass, `cma_roce_tos`, or the \
             GID index chosen), so they land on priority 0, usually lossy; check with `rocetap \
             netcheck --capture`{}",
            on(w)
        ),
        Qos::DataNotEct { packets, dscps } => {
            let s: Vec<String> = dscps
                .iter()
                .map(|d| format!("DSCP {}: {} of {}", d.dscp, d.not_ect, d.packets))
                .collect();
            format!(
                "{packets} data packets are Not-ECT on a DSCP whose other data is ECN-capable \
                 ({}): switches can never CE-mark them, so DCQCN never slows those senders down \
                 (enable ECN on the sending host: /sys/class/net/IF/ecn/roce_rp/enable/PRIO = 1){}",
                s.join(", "),
                on(w)
            )
        }
        Qos::CnpOtherDscp {
            cnps,
            cnp_dscps,
            data_dscps,
        } => format!(
            "{cnps} CNPs ride another DSCP than the data they answer (CNPs on DSCP {}; data on \
             DSCP {}): fine when the switches give the CNP DSCP a strict or lossless priority \
             (ConnectX sends CNPs on DSCP 48, priority 6, by default); if it lands in a lossy or \
             busy queue, CNPs come late or not at all; check its priority with `rocetap \
             netcheck --capture`{}",
            counts(cnp_dscps),
            counts(data_dscps),
            on(w)
        ),
        Qos::RoceV1AndV2 { hosts, shown } => {
            let s: Vec<String> = shown.iter().map(ToString::to_string).collect();
            format!(
                "{} both RoCE v1 and RoCE v2 ({}): some QPs there use a RoCE \
                 v1 GID (the GID index chosen, or rdma_cm's default_roce_mode / `cma_roce_mode`); \
                 RoCE v1 is not routable and carries no IP DSCP or ECN, so it misses the QoS \
                 set up for v2",
                n_of(*hosts, "host sends", "hosts send"),
                s.join(", ")
            )
        }
    }
}
