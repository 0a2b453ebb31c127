//! The QoS findings a capture alone can show, from the analyzer's [`QosTally`] and the
//! flow summaries: the two directions of a connection on different classes, data on
//! several DSCPs (some on DSCP 0), Not-ECT data on a DSCP that carries ECT data, CNPs on
//! another DSCP than the data they answer, RoCE v1 next to v2 on one host.

use super::{ById, Connection, Finding, FindingKind, FlowSummary, Severity, Totals, Worst};
use crate::analysis::qos::{QosTally, DSCPS};
use dissectors::Addr;
use std::collections::BTreeSet;

/// A connection whose two directions ride different classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitConnection {
    /// The two flows (directions), as in `Report::connections`.
    pub flows: [u32; 2],
    /// Each direction's DSCP (CNPs aside).
    pub dscp: [Option<u8>; 2],
    /// Each direction's VLAN PCP (`None`: untagged).
    pub pcp: [Option<u8>; 2],
}

/// Data packets of one DSCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DscpShare {
    /// The DSCP.
    pub dscp: u8,
    /// Data packets on it (every flow, summaries kept or not).
    pub packets: u64,
    /// Of those, Not-ECT (ECN 00).
    pub not_ect: u64,
    /// Flows (of the summaries kept) whose data rides it.
    pub flows: u64,
}

/// A QoS finding from the capture alone, with its numbers.
#[derive(Clone, Debug, PartialEq)]
pub enum Qos {
    /// Connections whose two directions carry different DSCPs or PCPs (requests marked,
    /// ACKs or READ responses not).
    DirectionsDiffer {
        /// Such connections ([`Totals::qos_direction_mismatch`]).
        connections: u64,
        /// The first few.
        shown: Vec<SplitConnection>,
    },
    /// Data on more than one DSCP across the capture.
    DataDscpMixed {
        /// Every DSCP with data, most packets first.
        shares: Vec<DscpShare>,
        /// The marked DSCP with the most data packets.
        main: u8,
        /// Data packets off it ([`Totals::data_dscp_mixed`]).
        off_main: u64,
    },
    /// Data on DSCP 0 while other data is marked.
    DataDscp0 {
        /// Data packets on DSCP 0 ([`Totals::data_dscp0`]).
        packets: u64,
        /// Data packets on other DSCPs.
        marked: u64,
    },
    /// Not-ECT data on DSCPs that also carry ECT data: switches cannot CE-mark it.
    DataNotEct {
        /// Those Not-ECT packets ([`Totals::data_not_ect`]).
        packets: u64,
        /// The DSCPs concerned.
        dscps: Vec<DscpShare>,
    },
    /// CNPs on another DSCP than the data they answer.
    CnpOtherDscp {
        /// Such CNPs ([`Totals::cnp_other_dscp`]).
        cnps: u64,
        /// CNPs by DSCP (every CNP of the capture).
        cnp_dscps: Vec<(u8, u64)>,
        /// Data packets by DSCP.
        data_dscps: Vec<(u8, u64)>,
    },
    /// Hosts sending both RoCE v1 and RoCE v2.
    RoceV1AndV2 {
        /// Such hosts ([`Totals::roce_v1_and_v2`]).
        hosts: u64,
        /// The first few.
        shown: Vec<Addr>,
    },
}

impl Qos {
    /// The stable code (`kind` in JSON), also the `--fail-on` name of its total.
    pub fn code(&self) -> &'static str {
        match self {
            Qos::DirectionsDiffer { .. } => "qos_direction_mismatch",
            Qos::DataDscpMixed { .. } => "data_dscp_mixed",
            Qos::DataDscp0 { .. } => "data_dscp0",
            Qos::DataNotEct { .. } => "data_not_ect",
            Qos::CnpOtherDscp { .. } => "cnp_other_dscp",
            Qos::RoceV1AndV2 { .. } => "roce_v1_and_v2",
        }
    }
}

/// Connections, DSCP shares and hosts shown by name in a finding.
const SHOWN: usize = 3;

fn data_flow(f: &FlowSummary) -> bool {
    f.transport != "CNP"
}

/// The findings being collected.
struct Out(Vec<Finding>);

impl Out {
    fn add(&mut self, severity: Severity, q: Qos, count: u64, worst: Worst) {
        self.0.push(Finding {
            severity,
            kind: FindingKind::Qos(q),
            count,
            t_ns: None,
            worst,
        });
    }
}

/// Fills the QoS totals and returns the QoS findings of a run.
pub(super) fn findings(
    tally: &QosTally,
    flows: &[FlowSummary],
    by_id: &ById,
    connections: &[Connection],
    t: &mut Totals,
) -> Vec<Finding> {
    let mut out = Out(Vec::new());
    directions(flows, by_id, connections, t, &mut out);
    dscps(tally, flows, t, &mut out);
    if t.cnp_other_dscp > 0 {
        let n = t.cnp_other_dscp;
        let of = |a: &[u64; DSCPS]| {
            let mut v: Vec<(u8, u64)> = (0..DSCPS)
                .filter(|&i| a[i] > 0)
                .map(|i| (i as u8, a[i]))
                .collect();
            v.sort_by_key(|&(d, n)| (std::cmp::Reverse(n), d));
            v
        };
        let q = Qos::CnpOtherDscp {
            cnps: n,
            cnp_dscps: of(&tally.cnp),
            data_dscps: of(&tally.data),
        };
        let worst = Worst::of(flows, |f| u64::from(f.cnp_other_dscp));
        out.add(Severity::Info, q, n, worst);
    }
    let hosts = v1_and_v2_hosts(flows);
    t.roce_v1_and_v2 = hosts.len() as u64;
    if !hosts.is_empty() {
        let n = hosts.len() as u64;
        let shown = hosts.into_iter().take(SHOWN).collect();
        let q = Qos::RoceV1AndV2 { hosts: n, shown };
        out.add(Severity::Warning, q, n, Worst::default());
    }
    out.0
}

/// Connections whose two directions carry different DSCPs or PCPs.
fn directions(
    flows: &[FlowSummary],
    ids: &ById,
    connections: &[Connection],
    t: &mut Totals,
    out: &mut Out,
) {
    let by_id = |id: u32| ids.find(id).map(|i| &flows[i]);
    let split: Vec<SplitConnection> = connections
        .iter()
        .filter_map(|c| {
            let [a, b] = c.flows;
            let (fa, fb) = (by_id(a)?, by_id(b)?);
            let differ = |x: Option<u8>, y: Option<u8>| x.is_some() && y.is_some() && x != y;
            (differ(fa.dscp, fb.dscp) || fa.pcp != fb.pcp).then_some(SplitConnection {
                flows: [a, b],
                dscp: [fa.dscp, fb.dscp],
                pcp: [fa.pcp, fb.pcp],
            })
        })
        .collect();
    t.qos_direction_mismatch = split.len() as u64;
    if !split.is_empty() {
        let n = split.len() as u64;
        let shown = split.into_iter().take(SHOWN).collect();
        let q = Qos::DirectionsDiffer {
            connections: n,
            shown,
        };
        out.add(Severity::Warning, q, n, Worst::default());
    }
}

/// Data on several DSCPs, on DSCP 0 next to marked data, Not-ECT next to ECT data.
fn dscps(tally: &QosTally, flows: &[FlowSummary], t: &mut Totals, out: &mut Out) {
    let flows_on = |dscp: u8| {
        flows
            .iter()
            .filter(|f| data_flow(f) && f.dscp == Some(dscp))
            .count() as u64
    };
    let share = |i: usize| DscpShare {
        dscp: i as u8,
        packets: tally.data[i],
        not_ect: tally.data_not_ect[i],
        flows: flows_on(i as u8),
    };
    let mut shares: Vec<DscpShare> = (0..DSCPS)
        .filter(|&i| tally.data[i] > 0)
        .map(share)
        .collect();
    shares.sort_by_key(|s| (std::cmp::Reverse(s.packets), s.dscp));
    let all: u64 = shares.iter().map(|s| s.packets).sum();
    if let (Some(main), true) = (tally.main_dscp(), shares.len() > 1) {
        let off = all - tally.data[usize::from(main)];
        t.data_dscp_mixed = off;
        let worst = Worst::of(flows, |f| {
            u64::from(data_flow(f) && f.dscp.is_some_and(|d| d != main)) * f.packets
        });
        let q = Qos::DataDscpMixed {
            shares: shares.clone(),
            main,
            off_main: off,
        };
        out.add(Severity::Warning, q, off, worst);
        if tally.data[0] > 0 {
            let n = tally.data[0];
            t.data_dscp0 = n;
            let worst = Worst::of(flows, |f| {
                u64::from(data_flow(f) && f.dscp == Some(0)) * f.packets
            });
            let q = Qos::DataDscp0 {
                packets: n,
                marked: all - n,
            };
            out.add(Severity::Warning, q, n, worst);
        }
    }
    let mixed_ecn: Vec<DscpShare> = shares
        .into_iter()
        .filter(|s| s.not_ect > 0 && s.not_ect < s.packets)
        .collect();
    if !mixed_ecn.is_empty() {
        let n: u64 = mixed_ecn.iter().map(|s| s.not_ect).sum();
        t.data_not_ect = n;
        let on: Vec<u8> = mixed_ecn.iter().map(|s| s.dscp).collect();
        let worst = Worst::of(flows, |f| {
            // CNPs (Not-ECT by rule) ride the flow of the ACKs: not data.
            let not_ect = f.ecn_not_ect.saturating_sub(f.counters.cnp_sent);
            u64::from(data_flow(f) && f.dscp.is_some_and(|d| on.contains(&d))) * not_ect
        });
        let q = Qos::DataNotEct {
            packets: n,
            dscps: mixed_ecn,
        };
        out.add(Severity::Warning, q, n, worst);
    }
}

/// Source addresses that sent both RoCE v1 and RoCE v2 (a v1 GID that is IPv4-mapped
/// names the same host as the IPv4 address), in address order.
fn v1_and_v2_hosts(flows: &[FlowSummary]) -> Vec<Addr> {
    let of = |encap: &str| -> BTreeSet<Addr> {
        flows
            .iter()
            .filter(|f| f.encap == encap)
            .map(|f| f.src)
            .collect()
    };
    let (v1, v2) = (of("RoCEv1"), of("RoCEv2"));
    let mut hosts: BTreeSet<Addr> = v1.intersection(&v2).copied().collect();
    // A flow whose packets switched between v1 and v2 under one key.
    hosts.extend(
        flows
            .iter()
            .filter(|f| f.encap_changes > 0 && f.encap != "IB")
            .map(|f| f.src),
    );
    hosts.into_iter().collect()
}
