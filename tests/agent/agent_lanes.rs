//! `rocetap agent --lanes 2`: one interface read and analyzed by two threads, a Linux
//! `PACKET_FANOUT` group giving each RoCE v2 host pair (both directions) to one of them.
//! Samples whose host pairs fall in both lanes are sent into a veth: every counter of
//! the interface's series equals what `analyze` of the samples says — a QP split between
//! lanes would show gaps and resends that are not there, a lane left out would count
//! short — in one series per interface, from two threads; `/report` (the flight
//! recorders of both lanes, read back in time order) says the same.
//!
//! Needs root and tcpreplay; otherwise `SKIP:` (a failure under CI).

use crate::agent_support;
use crate::common::TempDir;

use agent_support::*;
use rocetap::capture::live::fanout::lane_of;
use serde_json::Value;
use std::net::IpAddr;

/// Loss (NAKs, gaps, resends), many QPs, congestion (CE, CNPs); sent [`IDLE`] apart, so
/// that a QP number one sample shares with the one before begins a new flow.
const SAMPLES: [&str; 3] = ["loss-upstream.pcap", "many-qp.pcap", "congestion.pcap"];

/// The agent's idle timeout, and the pause between two samples (longer, and a tick).
const IDLE: (&str, u64) = ("2s", 4);

/// Totals keys and the series that count them (summed over their labels).
const KEYS: [(&str, &str); 8] = [
    ("roce_packets", "rocetap_roce_packets_total"),
    ("psn_gap_events", "rocetap_psn_gap_events_total"),
    (
        "unrecovered_gap_events",
        "rocetap_psn_gaps_unrecovered_total",
    ),
    ("rnr_nak", "rocetap_rnr_naks_total"),
    (
        "retransmitted_packets",
        "rocetap_retransmitted_packets_total",
    ),
    ("duplicate_packets", "rocetap_duplicate_packets_total"),
    ("ce_marked", "rocetap_ecn_ce_packets_total"),
    ("cnp", "rocetap_cnps_total"),
];

/// The series of `name` for `source`, summed over their other labels.
fn summed(text: &str, name: &str, source: &str) -> f64 {
    let src = format!("source=\"{source}\"");
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(&src))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn two_lanes_count_what_one_analyzer_counts() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay"]) {
        return;
    }
    // What analyze says of the samples alone, and the lanes their host pairs take.
    let alone: Vec<Value> = SAMPLES.iter().map(|s| analyze_json(&sample(s))).collect();
    let mut lanes = std::collections::BTreeSet::new();
    for r in &alone {
        for f in r["flows"].as_array().unwrap() {
            let ip = |k: &str| f[k].as_str().unwrap().parse::<IpAddr>().unwrap();
            lanes.insert(lane_of(ip("src"), ip("dst"), 2));
        }
    }
    assert_eq!(lanes.len(), 2, "the samples' host pairs take both lanes");
    let want = |key: &str| -> f64 {
        alone
            .iter()
            .map(|r| r["totals"][key].as_u64().unwrap() as f64)
            .sum()
    };
    let naks: f64 = want("nak_psn_seq");
    assert!(naks > 0.0 && want("cnp") > 0.0 && want("psn_gap_events") > 0.0);

    let tmp = TempDir::new("agent-lanes");
    let wire = Wire::new("l");
    let port = free_port();
    let log = tmp.path("agent.log");
    let args = [
        "-i",
        &wire.host_if,
        "--lanes",
        "2",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--node-name",
        "t",
        "--netcheck-interval",
        "0",
        "--idle-timeout",
        IDLE.0,
    ];
    let agent = start_agent(&args, &log);
    healthy(port);
    assert_eq!(source_threads(agent.0.id()), 2, "a thread per lane");
    for (i, s) in SAMPLES.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_secs(IDLE.1));
        }
        wire.replay(&sample(s));
    }
    let src = wire.host_if.as_str();
    let nak_series =
        format!("rocetap_naks_total{{node=\"t\",source=\"{src}\",code=\"psn_sequence_error\"}}");
    let expected: Vec<(&str, f64)> = KEYS.iter().map(|(k, m)| (*m, want(k))).collect();
    let text = wait_for("every count of the samples in /metrics", 30, || {
        let (_, t) = get(port, "/metrics")?;
        let done = metric(&t, &nak_series) == Some(naks)
            && expected.iter().all(|(m, v)| summed(&t, m, src) == *v);
        done.then_some(t)
    });
    // One series per interface, not per lane.
    let up: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("rocetap_source_up{"))
        .collect();
    assert_eq!(
        up,
        [format!(
            "rocetap_source_up{{node=\"t\",source=\"{src}\"}} 1"
        )]
    );
    // /report: both lanes' recorders, read back in time order.
    let (code, body) = get(port, "/report").unwrap();
    assert_eq!(code, 200);
    let report: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(report["input"]["files"], serde_json::json!([src]));
    for (key, _) in KEYS.iter().chain([&("nak_psn_seq", "")]) {
        assert_eq!(
            report["totals"][key].as_f64(),
            Some(want(key)),
            "/report's {key}"
        );
    }
    stop_agent(agent);
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("lanes=2"), "{said}");
}
