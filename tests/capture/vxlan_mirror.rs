//! A real exporter: the kernel's VXLAN with `tc filter ... u32 match u32 0 0 action mirred egress mirror` copies
//! every frame a replayed sample brings into a port, to a collector namespace where
//! `rocetap capture` records the VXLAN stream; `rocetap analyze` of that recording
//! finds the sample's flows with the sample's counts (exact), and names the VNI.
//!
//! ```text
//! exporter ns:  rp0 ──veth── rp1 (tc ingress: mirred → vxlan0, VNI 4242)
//!               vxlan0 over tp0 (198.51.100.1) ──veth── tp1 (198.51.100.2)  :collector ns
//! ```
//!
//! Needs root (namespaces), iproute2, tc and tcpreplay; otherwise `SKIP:` (fails under
//! CI). ERSPAN / gretap exporters need kernel modules this host does not have (the lab
//! VMs do): not tested here.

use crate::common::{bin, have, is_root, run_ok as run, skip, TempDir};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SAMPLE: &str = "loss-upstream";

/// The exporter and collector namespaces, deleted (with their links) on drop.
struct Pair {
    exp: String,
    col: String,
}

impl Drop for Pair {
    fn drop(&mut self) {
        for n in [&self.exp, &self.col] {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

fn ns_run(ns: &str, args: &[&str]) {
    let mut v = vec!["ip", "netns", "exec", ns];
    v.extend_from_slice(args);
    run(&v);
}

fn setup() -> Pair {
    let pid = std::process::id();
    let p = Pair {
        exp: format!("tunx-{pid}-exp"),
        col: format!("tunx-{pid}-col"),
    };
    run(&["ip", "netns", "add", &p.exp]);
    run(&["ip", "netns", "add", &p.col]);
    let (e, c) = (p.exp.as_str(), p.col.as_str());
    // No IPv6 on any link made from here on: an MLD report that vxlan0 sends of its own
    // accord goes through the tunnel and would take the place of a sample frame.
    for ns in [e, c] {
        for k in ["default", "all"] {
            ns_run(
                ns,
                &[
                    "sysctl",
                    "-qw",
                    &format!("net.ipv6.conf.{k}.disable_ipv6=1"),
                ],
            );
        }
    }
    run(&[
        "ip", "-n", e, "link", "add", "rp0", "type", "veth", "peer", "name", "rp1",
    ]);
    run(&[
        "ip", "-n", e, "link", "add", "tp0", "type", "veth", "peer", "name", "tp1", "netns", c,
    ]);
    for (ns, i) in [(e, "rp0"), (e, "rp1"), (e, "tp0"), (c, "tp1")] {
        let _ = Command::new("ip")
            .args(["netns", "exec", ns, "sysctl", "-qw"])
            .arg(format!("net.ipv6.conf.{i}.disable_ipv6=1"))
            .output();
        run(&["ip", "-n", ns, "link", "set", i, "mtu", "9200"]);
        run(&["ip", "-n", ns, "link", "set", i, "up"]);
    }
    run(&[
        "ip",
        "-n",
        e,
        "addr",
        "add",
        "198.51.100.1/24",
        "dev",
        "tp0",
    ]);
    run(&[
        "ip",
        "-n",
        c,
        "addr",
        "add",
        "198.51.100.2/24",
        "dev",
        "tp1",
    ]);
    run(&[
        "ip",
        "-n",
        e,
        "link",
        "add",
        "vxlan0",
        "type",
        "vxlan",
        "id",
        "4242",
        "local",
        "198.51.100.1",
        "remote",
        "198.51.100.2",
        "dstport",
        "4789",
        "dev",
        "tp0",
    ]);
    let _ = Command::new("ip")
        .args(["netns", "exec", e, "sysctl", "-qw"])
        .arg("net.ipv6.conf.vxlan0.disable_ipv6=1")
        .output();
    run(&["ip", "-n", e, "link", "set", "vxlan0", "mtu", "9000"]);
    run(&["ip", "-n", e, "link", "set", "vxlan0", "up"]);
    ns_run(e, &["tc", "qdisc", "add", "dev", "rp1", "ingress"]);
    ns_run(
        e,
        &[
            // u32 matching everything: matchall / flower are modules this kernel lacks.
            "tc", "filter", "add", "dev", "rp1", "parent", "ffff:", "protocol", "all", "u32",
            "match", "u32", "0", "0", "action", "mirred", "egress", "mirror", "dev", "vxlan0",
        ],
    );
    p
}

fn frames_in(p: &Path) -> usize {
    let o = run(&[bin(), "decode", "-F", "csv", &p.display().to_string()]);
    String::from_utf8_lossy(&o.stdout).lines().count() - 1
}

fn analyze_json(p: &Path) -> serde_json::Value {
    let o = run(&[bin(), "analyze", "-F", "json", &p.display().to_string()]);
    serde_json::from_slice(&o.stdout).unwrap()
}

/// What must be equal: totals and per-flow counts (not rates or latencies: the replay
/// does not keep the sample's timing).
fn counts(v: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(t) = v.get("totals").and_then(|t| t.as_object()) {
        for (k, x) in t {
            if x.is_u64() {
                out.push(format!("totals.{k}={x}"));
            }
        }
    }
    for f in v["flows"].as_array().into_iter().flatten() {
        let mut line = String::new();
        for (k, x) in f.as_object().unwrap() {
            if (x.is_u64() || x.is_string()) && !k.ends_with("ts_ns") {
                line.push_str(&format!("{k}={x} "));
            }
        }
        out.push(line);
    }
    out.sort();
    out
}

#[test]
fn a_kernel_vxlan_mirror_analyzes_like_the_sample() {
    if !is_root() {
        skip("needs root for network namespaces");
        return;
    }
    for t in ["ip", "tc", "tcpreplay"] {
        // `ip -V` / `tc -V`: iproute2 has no --version.
        let runs = |f: &str| {
            Command::new(t)
                .arg(f)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !have(t) && !runs("-V") {
            skip(&format!("{t} is not installed"));
            return;
        }
    }
    let dir = TempDir::new("vxlan-mirror");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(format!("{SAMPLE}.pcap"));
    let n = frames_in(&sample);
    let pair = setup();
    let out = dir.path("mirror.pcap");
    let mut cap = Command::new("ip")
        .args([
            "netns",
            "exec",
            &pair.col,
            bin(),
            "capture",
            "-i",
            "tp1",
            "-w",
        ])
        .arg(&out)
        .args(["-c", &n.to_string(), "--all", "udp dst port 4789"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rocetap capture");
    let mut err = BufReader::new(cap.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("capturing on") {
        line.clear();
        if err.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = cap.kill();
            panic!("rocetap capture did not start");
        }
    }
    let o = Command::new("ip")
        .args([
            "netns",
            "exec",
            &pair.exp,
            "tcpreplay",
            "-q",
            "--pps=2000",
            "-i",
            "rp0",
        ])
        .arg(&sample)
        .output()
        .expect("tcpreplay");
    assert!(
        o.status.success(),
        "tcpreplay: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = cap.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            let _ = cap.kill();
            let _ = cap.wait();
            panic!("rocetap capture did not see {n} VXLAN frames in 20 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    let got = analyze_json(&out);
    let want = analyze_json(&sample);
    assert_eq!(counts(&got), counts(&want));
    assert!(!counts(&want).is_empty());
    // Every frame came through the kernel's VXLAN with our VNI.
    let d = run(&[bin(), "decode", &out.display().to_string()]);
    let text = String::from_utf8_lossy(&d.stdout);
    assert_eq!(text.lines().count(), n);
    assert!(
        text.lines()
            .all(|l| l.contains("[vxlan 198.51.100.1 → 198.51.100.2 vni 4242]")),
        "{}",
        text.lines().next().unwrap_or("")
    );
    drop(pair);
}
