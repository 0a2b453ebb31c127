//! Where the output goes away: a reader that stops reading (`rocetap ... | head`) ends
//! the run quietly with exit 0, whatever the format and however large the output; a
//! full disk is a one-line error and exit 2.

use crate::common;

use common::{bin, sample};
use std::process::{Command, Stdio};

/// Commands whose output is far larger than a pipe's buffer and the writers' buffers
/// (the many-QP sample's JSON document is about 380 KB).
fn big_outputs() -> Vec<Vec<String>> {
    let many = sample("many-qp.pcap");
    let mut cmds = Vec::new();
    for format in ["text", "json", "csv"] {
        cmds.push(vec!["analyze", "--format", format, "-v", &many]);
        cmds.push(vec!["analyze", "--format", format, "--events", &many]);
    }
    for format in ["text", "json", "csv"] {
        cmds.push(vec!["decode", "--format", format, &many]);
    }
    let mut cmds: Vec<Vec<String>> = cmds
        .into_iter()
        .map(|c| c.into_iter().map(String::from).collect())
        .collect();
    cmds.extend(other_commands());
    cmds
}

/// The other commands that write to stdout, each with an output larger than a pipe's
/// buffer where it can have one: netcheck (report, JSON, `--route-get`) on a saved state
/// with 3,000 interfaces, `qp-table`, `interfaces`, `synth --list`, `completions`, `man`.
fn other_commands() -> Vec<Vec<String>> {
    let state = netcheck_state();
    let state = state.to_str().unwrap();
    let mut route_get = vec!["netcheck", "--from", state];
    for _ in 0..1000 {
        route_get.extend(["--route-get", "198.51.100.7 from 192.0.2.10"]);
    }
    let mut route_get_json = route_get.clone();
    route_get_json.extend(["--format", "json"]);
    let qp = format!(
        "{}/tests/fixtures/qptable/node-a.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let man = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("output-closed-man");
    let cmds = vec![
        vec!["netcheck", "--from", state, "-v"],
        vec!["netcheck", "--from", state, "--format", "json"],
        route_get,
        route_get_json,
        vec!["qp-table", &qp],
        vec!["interfaces"],
        vec!["synth", "--list"],
        vec!["completions", "bash"],
        vec!["man", "--out-dir", man.to_str().unwrap()],
    ];
    cmds.into_iter()
        .map(|c| c.into_iter().map(String::from).collect())
        .collect()
}

/// A saved namespace state (`ip -j` dumps and sysctls) whose netcheck report is large:
/// 3,000 interfaces, each with its sysctls' effects. Written once per test process under cargo's scratch directory for tests.
fn netcheck_state() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("output-closed-state");
        std::fs::create_dir_all(&d).unwrap();
        let mut links = vec![
            serde_json::json!({"ifindex": 2, "ifname": "eth0", "flags": ["UP"],
            "addr_info": [{"family": "inet", "local": "192.0.2.10", "prefixlen": 24}]}),
        ];
        for i in 0..3000 {
            links.push(serde_json::json!({"ifindex": 10 + i, "ifname": format!("veth{i}")}));
        }
        let addr = serde_json::to_string(&links).unwrap();
        let route = r#"[{"dst":"default","gateway":"192.0.2.1","dev":"eth0","flags":[]},
            {"dst":"192.0.2.0/24","dev":"eth0","scope":"link","prefsrc":"192.0.2.10","flags":[]}]"#;
        std::fs::write(d.join("addr.json"), addr).unwrap();
        std::fs::write(d.join("route.json"), route).unwrap();
        let sysctl = r#"{"net.ipv4.conf.all.rp_filter": "1", "net.ipv4.conf.all.arp_ignore": "2"}"#;
        std::fs::write(d.join("sysctl.json"), sysctl).unwrap();
        d
    })
    .clone()
}

#[test]
fn a_reader_that_goes_away_ends_the_run_quietly() {
    for args in big_outputs() {
        let mut child = Command::new(bin())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reading end closed before anything is written: the first write fails.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("rocetap:"), "{args:?}: {err}");
    }
}

#[test]
fn a_full_disk_is_one_line_and_exit_2() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        common::skip("/dev/full cannot be opened");
        return;
    };
    for args in big_outputs() {
        let out = Command::new(bin())
            .args(&args)
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("No space left on device"), "{args:?}: {err}");
    }
}
