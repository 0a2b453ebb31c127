//! The fleet's loss matrix end to end: three agents, each inside its own network namespace
//! (a node), capture what tcpreplay sends into it; a real Prometheus scrapes the three and
//! evaluates `deploy/prometheus/rocetap-rules.yml`. Lossy traffic (`loss-upstream.pcap`,
//! rewritten to node-a's and node-b's addresses) crosses one pair only; clean traffic
//! (`clean-rc.pcap`) the two others. The ranking must name node-a/node-b first and their
//! ToR pair first (by the agents' `--topology`), and the per-peer counters must add up to
//! the sample's truth. With `--max-peers` below the peers a trace has, the pairs stay
//! bounded and the sums still equal the truth; bad `--max-peers`/`--topology` are one-line
//! errors.
//!
//! Needs root, tcpreplay (tcprewrite), prometheus; otherwise `SKIP:` (fails under CI).

use crate::agent_support::*;
use crate::common::TempDir;
use serde_json::Value;
use std::time::Instant;

/// Node addresses (the RDMA traffic's) and where the topology puts them.
const TOPOLOGY: &str = "prefixes:
  - {prefix: 198.51.100.0/25, tor: tor-1, rail: rail-0}
  - {prefix: 198.51.100.128/25, tor: tor-2, rail: rail-0}
  - {prefix: 198.51.100.1, node: node-a}
  - {prefix: 198.51.100.2, node: node-b}
  - {prefix: 198.51.100.129, node: node-c}
";

/// The samples' two ends of each connection, rewritten to `x` and `y`.
fn pnat(x: &str, y: &str) -> String {
    [
        ("198.18.0.1", x),
        ("198.18.0.2", y),
        ("198.51.100.10", x),
        ("198.51.100.20", y),
        ("203.0.113.5", x),
        ("203.0.113.6", y),
    ]
    .iter()
    .map(|(a, b)| format!("{a}/32:{b}/32"))
    .collect::<Vec<_>>()
    .join(",")
}

fn label<'a>(m: &'a Value, k: &str) -> &'a str {
    m[k].as_str().unwrap_or("")
}

#[test]
fn prometheus_ranks_the_lossy_pair_and_its_tor_first() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay", "tcprewrite", "prometheus"]) {
        return;
    }
    let started = Instant::now();
    let tmp = TempDir::new("agent-fleet");
    let topo = tmp.path("topology.yaml");
    std::fs::write(&topo, TOPOLOGY).unwrap();
    let (a, b, c) = ("198.51.100.1", "198.51.100.2", "198.51.100.129");
    // (node, traffic it sees, sample): the lossy pair a-b on node-a's wire only.
    let nodes = [
        ("node-a", pnat(a, b), "loss-upstream.pcap"),
        ("node-b", pnat(b, c), "clean-rc.pcap"),
        ("node-c", pnat(c, a), "clean-rc.pcap"),
    ];
    let mut wires = Vec::new();
    let mut agents = Vec::new();
    let mut targets = Vec::new();
    let port = free_port();
    for (k, (node, map, sample_name)) in nodes.iter().enumerate() {
        let w = Wire::new(&format!("f{k}"));
        // scrape addresses: one /30 per node in 198.19.N.0/24, N from the PID (the
        // machine's own addresses may be in 192.0.2.0/24)
        let net = format!("198.19.{}", 20 + std::process::id() % 200);
        let host = format!("{net}.{}", 4 * k + 1);
        let inner = format!("{net}.{}", 4 * k + 2);
        w.address(&format!("{host}/30"), &format!("{inner}/30"));
        let pcap = tmp.path(&format!("{node}.pcap"));
        rewrite(&sample(sample_name), &pcap, map);
        let log = tmp.path(&format!("{node}.log"));
        let listen = format!("{inner}:{port}");
        let args = [
            "-i",
            &w.ns_if,
            "--listen",
            &listen,
            "--node-name",
            node,
            "--netcheck-interval",
            "0s",
            "--topology",
            topo.to_str().unwrap(),
            "--log-format",
            "json",
        ];
        agents.push(start_agent_in(&w.ns, &args, &log));
        targets.push(format!("'{listen}'"));
        wires.push((w, pcap));
    }
    let rules = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/prometheus/rocetap-rules.yml");
    let (_prom, pport) = start_prometheus_with(
        &tmp,
        &format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: rocetap\n    static_configs:\n      - targets: [{}]\n",
            rules.display(),
            targets.join(", ")
        ),
    );
    let until = Instant::now() + std::time::Duration::from_secs(60);
    while prom_query(pport, "sum(up{job=\"rocetap\"})")
        .first()
        .is_none_or(|(_, v)| *v != 3.0)
    {
        if Instant::now() > until {
            for (node, _, _) in &nodes {
                let log = std::fs::read_to_string(tmp.path(&format!("{node}.log")));
                eprintln!("{node}: {}", log.unwrap_or_default());
            }
            let t = get(pport, "/api/v1/targets").map(|x| x.1);
            panic!("Prometheus does not scrape the three agents: {t:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    // Slowly, so that scrapes see the counters grow (rate() needs two samples apart).
    std::thread::scope(|s| {
        for (w, pcap) in &wires {
            s.spawn(move || w.replay_from_host(pcap, 40));
        }
    });

    // The per-peer counters of node-a add up to the sample's truth.
    for (key, family) in [
        ("nak_psn_seq", "rocetap_peer_naks_total"),
        (
            "retransmitted_packets",
            "rocetap_peer_retransmitted_packets_total",
        ),
        ("psn_gap_events", "rocetap_peer_psn_gap_events_total"),
    ] {
        let want = truth("loss-upstream.pcap", key) as f64;
        let q = format!("sum({family}{{node=\"node-a\"}})");
        wait_for(&format!("{q} = {want}"), 30, || {
            prom_query(pport, &q)
                .first()
                .filter(|(_, v)| *v == want)
                .map(|_| ())
        });
    }
    // Three node pairs or more in the matrix, the clean ones at 0.
    let matrix = wait_for("the matrix of the three pairs", 60, || {
        let m = prom_query(pport, "rocetap:pair_loss_ratio:rate5m");
        let pairs: std::collections::BTreeSet<(String, String)> = m
            .iter()
            .map(|(l, _)| (label(l, "local_node").into(), label(l, "peer_node").into()))
            .collect();
        let seen = |x: &str, y: &str| {
            pairs.contains(&(x.into(), y.into())) || pairs.contains(&(y.into(), x.into()))
        };
        (seen("node-a", "node-b") && seen("node-b", "node-c") && seen("node-c", "node-a"))
            .then_some(m)
    });
    for (l, v) in &matrix {
        eprintln!(
            "matrix {} -> {}: {v}",
            label(l, "local_node"),
            label(l, "peer_node")
        );
        let pair = [label(l, "local_node"), label(l, "peer_node")];
        if !(pair.contains(&"node-a") && pair.contains(&"node-b")) {
            assert_eq!(*v, 0.0, "a clean pair has loss: {l} {v}");
        }
    }
    // The ranking names the lossy pair first, and its ToR pair.
    let top = wait_for("the worst pair", 30, || {
        prom_query(pport, "topk(1, rocetap:pair_loss_ratio:rate5m)")
            .into_iter()
            .next()
            .filter(|(_, v)| *v > 0.0)
    });
    let mut pair = [label(&top.0, "local_node"), label(&top.0, "peer_node")];
    pair.sort_unstable();
    assert_eq!(pair, ["node-a", "node-b"], "{top:?}");
    let tor = prom_query(pport, "topk(1, rocetap:tor_pair_loss_ratio:rate5m)");
    let (l, v) = tor.first().expect("a ToR pair");
    assert!(*v > 0.0, "{tor:?}");
    assert_eq!(
        (label(l, "local_tor"), label(l, "peer_tor")),
        ("tor-1", "tor-1"),
        "{tor:?}"
    );
    let worst = prom_query(pport, "rocetap:worst_nodes:top5");
    let first = worst
        .iter()
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .map(|x| label(&x.0, "fleet_node"));
    assert!(
        matches!(first, Some("node-a" | "node-b")),
        "worst node: {worst:?}"
    );
    for a in agents {
        stop_agent(a);
    }
    drop(wires);
    let took = started.elapsed().as_secs();
    eprintln!("fleet test: {took} s");
    assert!(took < 120, "the fleet test took {took} s");
}

/// `--max-peers` and `--topology` are checked before the agent starts, on the command
/// line and in the config file alike: one-line errors, exit 2 (no root needed).
#[test]
fn bad_max_peers_and_topology_are_one_line_errors() {
    let tmp = TempDir::new("agent-fleet-bad");
    let topo = tmp.path("topo.yaml");
    std::fs::write(
        &topo,
        "prefixes:\n  - prefix: 198.51.100.0/33\n    node: x\n",
    )
    .unwrap();
    let cfg = tmp.path("agent.yaml");
    std::fs::write(&cfg, "max_peers: many\n").unwrap();
    let t = topo.to_str().unwrap();
    let c = cfg.to_str().unwrap();
    for (args, want) in [
        (
            vec!["--max-peers", "0"],
            "agent: --max-peers: 0: give 1 to 4096",
        ),
        (
            vec!["--topology", "/nonexistent/topo.yaml"],
            "agent: --topology: /nonexistent/topo.yaml:",
        ),
        (
            vec!["--topology", t],
            "line 2: '198.51.100.0/33' is not an IP prefix",
        ),
        (vec!["--config", c], "'max_peers'"),
    ] {
        let o = std::process::Command::new(crate::common::bin())
            .args(["agent", "-i", "lo", "--duration", "1s"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

/// The sum of every series of `family` in a /metrics text.
fn family_sum(text: &str, family: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// Many peers, few series: 64 QPs to 16 peers with `--max-peers 4` export 4 pairs and
/// `peer="other"`; every NAK, resend, gap and packet of the trace is in one of them (the
/// sums equal the synthetic trace's truth) and the flows beyond the bound are counted.
#[test]
fn max_peers_bounds_the_pairs_and_keeps_the_sums() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay"]) {
        return;
    }
    let tmp = TempDir::new("agent-fleet-max");
    let pcap = tmp.path("many.pcap");
    crate::common::run_ok(&[
        crate::common::bin(),
        "synth",
        "many-qp",
        "--qps",
        "64",
        "--peers",
        "16",
        "--loss",
        "100",
        "--msg-size",
        "8192",
        "--packets",
        "3000",
        "-o",
        pcap.to_str().unwrap(),
    ]);
    let t: Value =
        serde_json::from_slice(&std::fs::read(tmp.path("many.pcap.truth.json")).unwrap()).unwrap();
    let want = |k: &str| t["observable"][k].as_f64().unwrap();
    let w = Wire::new("fm");
    let port = free_port();
    let log = tmp.path("agent.log");
    let listen = format!("127.0.0.1:{port}");
    let args = [
        "-i",
        &w.host_if,
        "--listen",
        &listen,
        "--netcheck-interval",
        "0s",
        "--max-peers",
        "4",
    ];
    let agent = start_agent(&args, &log);
    healthy(port);
    w.replay(&pcap);
    let text = wait_for("the trace's NAKs in the per-peer series", 30, || {
        let (_, text) = get(port, "/metrics")?;
        (family_sum(&text, "rocetap_peer_naks_total") == want("nak_psn_seq")).then_some(text)
    });
    assert_eq!(
        family_sum(&text, "rocetap_peer_retransmitted_packets_total"),
        want("retransmitted_packets")
    );
    assert_eq!(
        family_sum(&text, "rocetap_peer_psn_gap_events_total"),
        want("psn_gap_events")
    );
    assert_eq!(
        family_sum(&text, "rocetap_peer_packets_total"),
        t["packets"].as_f64().unwrap()
    );
    let lab = |l: &str, k: &str| -> String {
        l.split(&format!("{k}=\""))
            .nth(1)
            .and_then(|x| x.split('"').next())
            .unwrap_or("")
            .to_string()
    };
    let pairs: std::collections::BTreeSet<(String, String)> = text
        .lines()
        .filter(|l| l.starts_with("rocetap_peer_packets_total{"))
        .map(|l| (lab(l, "local"), lab(l, "peer")))
        .collect();
    let named = pairs.iter().filter(|p| p.1 != "other").count();
    assert_eq!(named, 4, "4 pairs of their own: {pairs:?}");
    assert!(pairs.iter().any(|p| p.1 == "other"), "{pairs:?}");
    assert!(
        pairs.len() <= 4 + 5,
        "at most one other per local address, and one: {pairs:?}"
    );
    let aggregated = family_sum(&text, "rocetap_peer_flows_aggregated_total");
    assert!(
        aggregated >= 12.0,
        "flows of the 12 other peers: {aggregated}"
    );
    stop_agent(agent);
}
