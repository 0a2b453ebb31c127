//! `/metrics`: what the agent published, in the Prometheus text exposition format
//! (version 0.0.4), written by the `prometheus` crate's encoder from metric families
//! built here at each scrape. The names and labels are the contract with the alerting
//! rules in `deploy/` (listed in `deploy/metrics.txt`, checked by the tests). Every
//! series carries `node`; analysis series carry `source`; connections get their own
//! series only for the top-N by trouble (see `topn.rs`), so the count of series is
//! bounded whatever the number of QPs.

use super::state::Published;
use crate::analysis::buckets::BOUNDS_NS;
use prometheus::proto::{
    Bucket, Counter, Gauge, Histogram, LabelPair, Metric, MetricFamily, MetricType,
};
use prometheus::{Encoder, TextEncoder};
use std::time::UNIX_EPOCH;

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The NAK codes of `rocetap_naks_total{code}`, with the totals key each comes from.
const NAK_CODES: [(&str, &str); 6] = [
    ("psn_sequence_error", "nak_psn_seq"),
    ("invalid_request", "nak_invalid_request"),
    ("remote_access_error", "nak_remote_access"),
    ("remote_operational_error", "nak_remote_operational"),
    ("invalid_rd_request", "nak_invalid_rd_request"),
    ("reserved", "nak_reserved"),
];

struct Family(MetricFamily);

impl Family {
    fn new(name: &str, help: &str, kind: MetricType) -> Self {
        let mut mf = MetricFamily::default();
        mf.set_name(name.to_string());
        mf.set_help(help.to_string());
        mf.set_field_type(kind);
        Family(mf)
    }

    fn metric(labels: &[(&str, &str)]) -> Metric {
        Metric::from_label(
            labels
                .iter()
                .map(|(k, v)| {
                    let mut l = LabelPair::default();
                    l.set_name((*k).to_string());
                    l.set_value((*v).to_string());
                    l
                })
                .collect(),
        )
    }

    /// One series per source of `p`, labelled `node` and `source`, valued by `v`.
    fn per_source(&mut self, p: &Published, v: impl Fn(&super::state::SourceState) -> f64) {
        for s in &p.sources {
            self.add(&[("node", &p.node), ("source", &s.name)], v(s));
        }
    }

    fn add(&mut self, labels: &[(&str, &str)], v: f64) {
        let mut m = Self::metric(labels);
        match self.0.get_field_type() {
            MetricType::COUNTER => {
                let mut c = Counter::default();
                c.set_value(v);
                m.set_counter(c);
            }
            _ => {
                let mut g = Gauge::default();
                g.set_value(v);
                m.set_gauge(g);
            }
        }
        self.0.mut_metric().push(m);
    }

    fn histogram(&mut self, labels: &[(&str, &str)], b: &crate::analysis::buckets::Buckets) {
        let mut m = Self::metric(labels);
        let mut h = Histogram::default();
        let cum = b.cumulative();
        h.set_bucket(
            BOUNDS_NS
                .iter()
                .zip(cum)
                .map(|(&ns, c)| {
                    let mut bk = Bucket::default();
                    bk.set_upper_bound(ns as f64 / 1e9);
                    bk.set_cumulative_count(c);
                    bk
                })
                .collect(),
        );
        h.set_sample_count(b.count);
        h.set_sample_sum(b.sum_ns as f64 / 1e9);
        m.set_histogram(h);
        self.0.mut_metric().push(m);
    }
}

/// The families of one scrape.
struct Families(Vec<Family>);

impl Families {
    fn counter(&mut self, name: &str, help: &str) -> &mut Family {
        self.0.push(Family::new(name, help, MetricType::COUNTER));
        self.0.last_mut().expect("just pushed")
    }
    fn gauge(&mut self, name: &str, help: &str) -> &mut Family {
        self.0.push(Family::new(name, help, MetricType::GAUGE));
        self.0.last_mut().expect("just pushed")
    }
    fn histogram(&mut self, name: &str, help: &str) -> &mut Family {
        self.0.push(Family::new(name, help, MetricType::HISTOGRAM));
        self.0.last_mut().expect("just pushed")
    }
}

/// A totals counter per source: (metric, help, totals key).
const PER_SOURCE: [(&str, &str, &str); 18] = [
    ("rocetap_frames_total", "Frames analyzed.", "frames"),
    (
        "rocetap_roce_packets_total",
        "RoCE packets (frames with a BTH).",
        "roce_packets",
    ),
    ("rocetap_rnr_naks_total", "RNR NAKs.", "rnr_nak"),
    (
        "rocetap_psn_gap_events_total",
        "Times a stream's PSN jumped past the expected one.",
        "psn_gap_events",
    ),
    (
        "rocetap_psn_gaps_recovered_total",
        "PSN gaps later filled by a resend.",
        "recovered_gap_events",
    ),
    (
        "rocetap_psn_gaps_unrecovered_total",
        "PSN gaps not filled within the gap timeout (counted then, while the flow lives).",
        "unrecovered_gap_events",
    ),
    (
        "rocetap_psn_gaps_capture_loss_total",
        "Unfilled PSN gaps no NAK named: most likely missed by the capture.",
        "capture_loss_gap_events",
    ),
    (
        "rocetap_duplicate_packets_total",
        "Request packets copied by the network (not resends).",
        "duplicate_packets",
    ),
    (
        "rocetap_ecn_ce_packets_total",
        "Packets marked ECN CE.",
        "ce_marked",
    ),
    (
        "rocetap_cnps_total",
        "Congestion notification packets.",
        "cnp",
    ),
    (
        "rocetap_icrc_bad_packets_total",
        "RoCE packets whose ICRC did not match.",
        "icrc_bad",
    ),
    (
        "rocetap_arp_unanswered_requests_total",
        "ARP requests no reply answered on their interface.",
        "arp_unanswered",
    ),
    (
        "rocetap_arp_cross_subnet_unanswered_total",
        "ARP asks across subnets never answered: the missing-sbr symptom.",
        "arp_cross_subnet_unanswered",
    ),
    (
        "rocetap_arp_reply_path_mismatch_total",
        "Address pairs whose replies left another interface than the requests came in on.",
        "arp_reply_path_mismatch",
    ),
    (
        "rocetap_psn_gaps_filled_late_total",
        "Unrecovered PSN gaps filled after all, later than the gap timeout.",
        "gaps_filled_late",
    ),
    (
        "rocetap_icrc_unchecked_packets_total",
        "RoCE packets whose ICRC was not checked (cut by the snaplen, or not computed).",
        "icrc_unchecked",
    ),
    (
        "rocetap_flows_expired_total",
        "Flows forgotten after the idle timeout; a frame after that begins a new flow.",
        "flows_expired",
    ),
    (
        "rocetap_flows_restarted_total",
        "Reused QP numbers: a request PSN no live connection could send next began new flows.",
        "flows_restarted",
    ),
];

/// Resent packets by trigger: (label, totals key).
const RESENT: [(&str, &str); 5] = [
    ("nak", "nak_retransmissions"),
    ("rnr", "rnr_retransmissions"),
    ("timeout", "timeout_retransmissions"),
    ("read", "read_retransmissions"),
    ("unknown", "unknown_retransmissions"),
];

/// Retransmission episodes by trigger: (label, totals key).
const EPISODES: [(&str, &str); 4] = [
    ("nak", "nak_retransmission_episodes"),
    ("rnr", "rnr_retransmission_episodes"),
    ("timeout", "timeout_retransmission_episodes"),
    ("read", "read_retransmission_episodes"),
];

/// Renders `p` (and the agent's version) as the exposition text.
pub fn render(p: &Published) -> String {
    let node = p.node.as_str();
    let mut f = Families(Vec::new());
    f.gauge("rocetap_up", "1 while the agent runs.")
        .add(&[("node", node)], 1.0);
    f.gauge("rocetap_build_info", "The agent's version.").add(
        &[("node", node), ("version", env!("CARGO_PKG_VERSION"))],
        1.0,
    );
    analysis(&mut f, p);
    capture(&mut f, p);
    connections(&mut f, p);
    agent(&mut f, p);
    sources::sources_and_memory(&mut f, p);
    peers::peers(&mut f, p);
    let families: Vec<MetricFamily> =
        f.0.into_iter()
            .map(|x| x.0)
            .filter(|m| !m.get_metric().is_empty())
            .collect();
    let mut out = Vec::new();
    if TextEncoder::new().encode(&families, &mut out).is_err() {
        // The families are built here with valid names and types: not expected.
        return String::from("# rocetap: encoding the metrics failed\n");
    }
    String::from_utf8(out).unwrap_or_default()
}

fn analysis(f: &mut Families, p: &Published) {
    let node = p.node.as_str();
    let vals: Vec<(String, Vec<(String, f64)>)> = p
        .sources
        .iter()
        .map(|s| (s.name.clone(), key_values(&s.totals)))
        .collect();
    let get = |kv: &[(String, f64)], k: &str| kv.iter().find(|(n, _)| n == k).map_or(0.0, |x| x.1);
    for (name, help, key) in PER_SOURCE {
        let fam = f.counter(name, help);
        for (src, kv) in &vals {
            fam.add(&[("node", node), ("source", src)], get(kv, key));
        }
    }
    let fam = f.counter(
        "rocetap_naks_total",
        "NAKs by AETH code (RNR NAKs are rocetap_rnr_naks_total).",
    );
    for (src, kv) in &vals {
        for (code, key) in NAK_CODES {
            fam.add(
                &[("node", node), ("source", src), ("code", code)],
                get(kv, key),
            );
        }
    }
    let fam = f.counter(
        "rocetap_retransmitted_packets_total",
        "Packets sent again, by what triggered the resend.",
    );
    for (src, kv) in &vals {
        for (t, key) in RESENT {
            fam.add(
                &[("node", node), ("source", src), ("trigger", t)],
                get(kv, key),
            );
        }
    }
    let fam = f.counter(
        "rocetap_retransmission_episodes_total",
        "Retries the requester started, by trigger.",
    );
    for (src, kv) in &vals {
        for (t, key) in EPISODES {
            fam.add(
                &[("node", node), ("source", src), ("trigger", t)],
                get(kv, key),
            );
        }
    }
    let prios: Vec<String> = (0..8).map(|i| i.to_string()).collect();
    let fam = f.counter(
        "rocetap_pfc_pause_frames_total",
        "PFC / PAUSE frames naming a priority (pausing or resuming).",
    );
    for s in &p.sources {
        for (i, pr) in prios.iter().enumerate() {
            fam.add(
                &[("node", node), ("source", &s.name), ("priority", pr)],
                s.pfc[i].0 as f64,
            );
        }
    }
    let fam = f.counter(
        "rocetap_pfc_pause_seconds_total",
        "Pause time PFC frames asked for, at the configured link speed.",
    );
    for s in &p.sources {
        for (i, pr) in prios.iter().enumerate() {
            fam.add(
                &[("node", node), ("source", &s.name), ("priority", pr)],
                s.pfc[i].1,
            );
        }
    }
    let fam = f.histogram(
        "rocetap_ce_to_cnp_latency_seconds",
        "First CE mark since the last CNP to the CNP answering it.",
    );
    for s in &p.sources {
        fam.histogram(&[("node", node), ("source", &s.name)], &s.latency.ce_to_cnp);
    }
    let fam = f.histogram(
        "rocetap_ack_latency_seconds",
        "Request with AckReq to the ACK covering it.",
    );
    for s in &p.sources {
        fam.histogram(&[("node", node), ("source", &s.name)], &s.latency.ack);
    }
}

fn key_values(t: &crate::analysis::Totals) -> Vec<(String, f64)> {
    match serde_json::to_value(t) {
        Ok(serde_json::Value::Object(m)) => m
            .into_iter()
            .map(|(k, v)| (k, v.as_f64().unwrap_or(0.0)))
            .collect(),
        _ => Vec::new(),
    }
}

fn capture(f: &mut Families, p: &Published) {
    let node = p.node.as_str();
    f.counter(
        "rocetap_capture_received_packets_total",
        "Frames the capture delivered to the agent.",
    )
    .per_source(p, |s| s.received as f64);
    let fam = f.counter(
        "rocetap_capture_dropped_packets_total",
        "Frames lost before the analysis, by where they were dropped.",
    );
    for s in &p.sources {
        for (layer, v) in [
            ("kernel", s.kernel_dropped),
            ("interface", s.if_dropped),
            ("queue", s.queue_dropped),
        ] {
            fam.add(
                &[("node", node), ("source", &s.name), ("layer", layer)],
                v as f64,
            );
        }
    }
    f.gauge(
        "rocetap_connections_tracked",
        "Live flows (one per direction and QP) the analyzer holds.",
    )
    .per_source(p, |s| s.tracked as f64);
}

/// The per-connection families: (metric, help, index in the top-N counts).
const PER_FLOW: [(&str, &str); 5] = [
    ("rocetap_flow_naks_total", "NAKs (every code, RNR included) of a top-N connection since it was chosen; src=\"other\" sums the rest."),
    ("rocetap_flow_retransmitted_packets_total", "Resent packets of a top-N connection since it was chosen; src=\"other\" sums the rest."),
    ("rocetap_flow_psn_gap_events_total", "PSN gaps of a top-N connection since it was chosen; src=\"other\" sums the rest."),
    ("rocetap_flow_ecn_ce_packets_total", "CE-marked packets of a top-N connection since it was chosen; src=\"other\" sums the rest."),
    ("rocetap_flow_cnps_total", "CNPs a top-N connection's sender received since it was chosen; src=\"other\" sums the rest."),
];

fn connections(f: &mut Families, p: &Published) {
    let node = p.node.as_str();
    for (k, (name, help)) in PER_FLOW.iter().enumerate() {
        let fam = f.counter(name, help);
        for s in &p.sources {
            for t in &s.top {
                let l = [
                    ("node", node),
                    ("source", s.name.as_str()),
                    ("src", &t.src),
                    ("dst", &t.dst),
                    ("qp", &t.qp),
                ];
                fam.add(&l, t.counts[k] as f64);
            }
            let l = [
                ("node", node),
                ("source", s.name.as_str()),
                ("src", "other"),
                ("dst", "other"),
                ("qp", "other"),
            ];
            fam.add(&l, s.other[k] as f64);
        }
    }
}

fn agent(f: &mut Families, p: &Published) {
    let node = p.node.as_str();
    let fam = f.counter(
        "rocetap_flight_recorder_dumps_total",
        "Flight-recorder dumps written, by what asked for them.",
    );
    fam.add(&[("node", node), ("reason", "rule")], p.dumps.rule as f64);
    fam.add(
        &[("node", node), ("reason", "signal")],
        p.dumps.signal as f64,
    );
    f.counter(
        "rocetap_flight_recorder_dumps_suppressed_total",
        "Dumps a rule asked for inside the rate limit (not written).",
    )
    .add(&[("node", node)], p.dumps.suppressed as f64);
    f.counter(
        "rocetap_flight_recorder_dump_failures_total",
        "Dumps that could not be written (nothing half-written is left).",
    )
    .add(&[("node", node)], p.dumps.failed as f64);
    let nc = &p.netcheck;
    f.counter(
        "rocetap_netcheck_runs_total",
        "Netcheck passes over every network namespace.",
    )
    .add(&[("node", node)], nc.runs as f64);
    f.gauge(
        "rocetap_netcheck_namespaces",
        "Network namespaces checked in the last pass.",
    )
    .add(&[("node", node)], nc.namespaces.len() as f64);
    if let Some(t) = nc.last_run {
        let secs = t
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        f.gauge(
            "rocetap_netcheck_last_run_timestamp_seconds",
            "When the last netcheck pass ended.",
        )
        .add(&[("node", node)], secs);
    }
    let fam = f.gauge(
        "rocetap_netcheck_findings",
        "Findings of the last netcheck in a network namespace, by check and severity.",
    );
    for ns in &nc.namespaces {
        let (pod, pns) = ns
            .pod
            .as_ref()
            .map_or(("", ""), |p| (p.name.as_str(), p.namespace.as_str()));
        let mut counted: Vec<(&str, &str, u64)> = Vec::new();
        for x in &ns.findings {
            match counted
                .iter_mut()
                .find(|(c, s, _)| *c == x.check && *s == x.severity)
            {
                Some(e) => e.2 += 1,
                None => counted.push((&x.check, &x.severity, 1)),
            }
        }
        for (check, sev, n) in counted {
            let l = [
                ("node", node),
                ("netns", ns.netns.as_str()),
                ("pod", pod),
                ("pod_namespace", pns),
                ("check", check),
                ("severity", sev),
            ];
            fam.add(&l, n as f64);
        }
    }
    let failed = nc.namespaces.iter().filter(|n| n.error.is_some()).count();
    f.gauge(
        "rocetap_netcheck_errors",
        "Network namespaces the last netcheck pass could not read (the log names them).",
    )
    .add(&[("node", node)], failed as f64);
}

mod peers;
mod sources;
