//! The capture side of the missing-`sbr` failure: `rocetap analyze` and
//! `rocetap netcheck --capture` on the recorded sbr-arp scenario (`../shared`,
//! `scenarios/sbr-arp/expected/{broken,broken-loose,fixed}/t*/pod1-{eth0,net1}.pcap`),
//! with what each test did taken from the scenario's own `checks.txt`: every test whose
//! ping failed (fully or partly) shows the symptom, every test whose ping worked shows
//! no ARP error or warning. Also the synthetic `samples/sbr-arp.pcap`.

use crate::common;

use common::{rocetap, skip};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// `scenarios/sbr-arp/expected` under `../shared`, or None (skipped, failing under CI).
fn expected() -> Option<PathBuf> {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared");
    let dir = shared.join("scenarios/sbr-arp/expected");
    if dir.join("checks.txt").is_file() {
        Some(dir)
    } else {
        skip(&format!(
            "{} not found (the shared scenarios live beside the repository)",
            dir.display()
        ));
        None
    }
}

/// What `checks.txt` says about one test directory.
#[derive(Debug, Default)]
struct Test {
    /// The ping's verdict: `ok`, `fail` or `partial`.
    ping: String,
    /// The other check lines (the ARP/ICMP patterns seen in the captures).
    lines: Vec<String>,
}

impl Test {
    fn ping_failed(&self) -> bool {
        self.ping == "fail" || self.ping == "partial"
    }
}

/// `phase/test` -> what checks.txt says, from lines like
/// `PASS broken/t1-pod2-to-pod1: ping from pod2 to 198.18.1.5 expected fail, got fail (0/3)`.
fn checks(dir: &Path) -> BTreeMap<String, Test> {
    let text = std::fs::read_to_string(dir.join("checks.txt")).expect("checks.txt");
    let mut out: BTreeMap<String, Test> = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("PASS ") else {
            continue;
        };
        let Some((test, what)) = rest.split_once(": ") else {
            continue;
        };
        let t = out.entry(test.to_string()).or_default();
        if let Some(got) = what
            .split(", got ")
            .nth(1)
            .filter(|_| what.starts_with("ping "))
        {
            t.ping = got.split_whitespace().next().unwrap_or("").to_string();
        } else {
            t.lines.push(what.to_string());
        }
    }
    assert!(
        out.values().all(|t| !t.ping.is_empty()),
        "every test in checks.txt has a ping verdict: {out:?}"
    );
    out
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn pcaps(dir: &Path, test: &str) -> [String; 2] {
    ["pod1-eth0.pcap", "pod1-net1.pcap"].map(|f| dir.join(test).join(f).display().to_string())
}

/// ARP findings of these severities, as kinds.
fn arp_kinds(report: &Value, severities: &[&str]) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"].as_str().unwrap().starts_with("arp"))
        .filter(|f| severities.contains(&f["severity"].as_str().unwrap()))
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

const GATES: [&str; 4] = [
    "--fail-on",
    "arp_cross_subnet_unanswered > 0",
    "--fail-on",
    "arp_reply_path_mismatch > 0",
];

#[test]
fn analyze_shows_the_sbr_symptom_exactly_where_the_ping_failed() {
    let Some(dir) = expected() else { return };
    let tests = checks(&dir);
    let (mut failing, mut working, mut fixed) = (0, 0, 0);
    for (name, t) in &tests {
        let [eth0, net1] = pcaps(&dir, name);
        let mut args = vec!["analyze", &eth0, &net1, "--format", "json"];
        args.extend_from_slice(&GATES);
        let out = rocetap(&args);
        let code = out.status.code().unwrap();
        let r = json_of(&out);
        let tot = &r["totals"];
        let n = |k: &str| tot[k].as_u64().unwrap_or_else(|| panic!("{name}: no {k}"));
        let errors = arp_kinds(&r, &["error"]);
        let bad = arp_kinds(&r, &["error", "warning"]);
        if name.starts_with("fixed/") {
            fixed += 1;
            assert!(!t.ping_failed(), "{name}: the fixed phase pings work");
        }
        if t.ping_failed() {
            failing += 1;
            assert!(
                n("arp_cross_subnet_unanswered") + n("arp_reply_path_mismatch") > 0,
                "{name}: ping {} but no symptom: {tot}",
                t.ping
            );
            assert!(
                errors
                    .iter()
                    .any(|k| k == "arp_cross_subnet_unanswered" || k == "arp_reply_path_mismatch"),
                "{name}: no ARP error finding: {}",
                r["findings"]
            );
            assert_eq!(code, 1, "{name}: the gates fail");
            // The pattern checks.txt names is the one reported.
            if t.lines.iter().any(|l| l.contains("reply path leaves")) {
                assert!(n("arp_reply_path_mismatch") > 0, "{name}: {tot}");
                let f = r["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|f| f["kind"] == "arp_reply_path_mismatch")
                    .unwrap();
                let m = f["message"].as_str().unwrap();
                assert!(
                    m.starts_with("replies to ")
                        && m.contains("leave pod1-net1.pcap instead of pod1-eth0.pcap"),
                    "{name}: {m}"
                );
            }
            if t.lines.iter().any(|l| l.starts_with("no ARP reply for")) {
                assert!(n("arp_cross_subnet_unanswered") > 0, "{name}: {tot}");
                let s = r["arp_symptoms"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|s| s["kind"] == "arp_cross_subnet_unanswered")
                    .unwrap();
                assert_eq!(s["iface"], "pod1-eth0.pcap", "{name}");
                assert_eq!(s["severity"], "error");
            }
        } else {
            working += 1;
            assert!(
                bad.is_empty(),
                "{name}: ping ok, yet {bad:?}: {}",
                r["findings"]
            );
            assert_eq!(n("arp_cross_subnet_unanswered"), 0, "{name}");
            assert_eq!(n("arp_reply_path_mismatch"), 0, "{name}");
            assert_eq!(n("arp_duplicate_address"), 0, "{name}");
            assert_eq!(code, 0, "{name}: the gates hold");
        }
        // The Calico gateway never counts as another subnet.
        let events = r["arp_symptoms"].as_array().unwrap();
        assert!(
            events
                .iter()
                .all(|s| !s["addr"].as_str().unwrap().starts_with("169.254.")),
            "{name}: {events:?}"
        );
    }
    assert!(
        failing >= 3 && working >= 3 && fixed >= 3,
        "{failing} {working} {fixed}"
    );
}

#[test]
fn netcheck_capture_exits_1_where_the_ping_failed_and_0_where_it_worked() {
    let Some(dir) = expected() else { return };
    let tests = checks(&dir);
    for (name, t) in &tests {
        let [eth0, net1] = pcaps(&dir, name);
        let out = rocetap(&[
            "netcheck",
            "--capture",
            &eth0,
            "--capture",
            &net1,
            "--format",
            "json",
        ]);
        let code = out.status.code().unwrap();
        let r = json_of(&out);
        let serious: Vec<&Value> = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] == "error" || f["severity"] == "warning")
            .collect();
        if t.ping_failed() {
            assert_eq!(code, 1, "{name}: {r}");
            assert_eq!(r["verdict"], "findings");
            let f = serious
                .iter()
                .find(|f| f["id"] == "capture-arp-cross-subnet" || f["id"] == "capture-reply-path")
                .unwrap_or_else(|| panic!("{name}: {r}"));
            let ev = f["evidence"].as_array().unwrap();
            assert!(!ev.is_empty(), "{name}: evidence");
            assert!(
                ev.iter()
                    .any(|e| e["answer"].as_str().unwrap().contains("who-has")),
                "{name}: {ev:?}"
            );
            assert!(
                ev.iter()
                    .all(|e| e["query"].as_str().unwrap().contains(" s pod1-")),
                "{name}: time and interface: {ev:?}"
            );
            assert!(!f["fix"].as_array().unwrap().is_empty());
        } else {
            assert_eq!(code, 0, "{name}: {r}");
            assert_eq!(r["verdict"], "ok", "{name}");
            assert!(serious.is_empty(), "{name}: {serious:?}");
        }
    }
}

#[test]
fn netcheck_capture_adds_to_the_state_checks() {
    let Some(dir) = expected() else { return };
    let tests = checks(&dir);
    for phase in ["broken", "fixed"] {
        let state = dir.join(phase).join("state/pod1");
        let failing = tests
            .iter()
            .find(|(n, t)| n.starts_with(&format!("{phase}/")) && t.ping_failed());
        let (name, _) = match failing {
            Some(x) => x,
            None => tests
                .iter()
                .find(|(n, _)| n.starts_with(&format!("{phase}/")))
                .unwrap(),
        };
        let [eth0, net1] = pcaps(&dir, name);
        let out = rocetap(&[
            "netcheck",
            "--from",
            state.to_str().unwrap(),
            "--capture",
            &eth0,
            &net1,
            "-F",
            "json",
        ]);
        let r = json_of(&out);
        let ids: Vec<&str> = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] == "error")
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        let origin = r["origin"].as_str().unwrap();
        assert!(
            origin.contains("capture") && origin.contains("state"),
            "{origin}"
        );
        if phase == "broken" {
            assert_eq!(out.status.code(), Some(1));
            assert!(ids.contains(&"reply-path"), "{ids:?}");
            assert!(ids.iter().any(|i| i.starts_with("capture-")), "{ids:?}");
            assert!(
                !r["interfaces"].as_array().unwrap().is_empty(),
                "state part still there"
            );
        } else {
            assert_eq!(out.status.code(), Some(0), "{name}: {r}");
            assert!(ids.is_empty(), "{ids:?}");
        }
    }
}

#[test]
fn the_synthetic_sample_shows_the_symptom() {
    let cap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples/sbr-arp.pcap");
    let truth: Value = serde_json::from_slice(
        &std::fs::read(cap.with_extension("pcap.truth.json")).expect("truth"),
    )
    .unwrap();
    let who = &truth["facts"]["unanswered_who_has"];
    let (target, sender) = (
        who["target"].as_str().unwrap(),
        who["sender"].as_str().unwrap(),
    );
    let out = rocetap(&[
        "analyze",
        cap.to_str().unwrap(),
        "--format",
        "json",
        "--fail-on",
        "arp_cross_subnet_unanswered > 0",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let r = json_of(&out);
    assert!(r["totals"]["arp_cross_subnet_unanswered"].as_u64().unwrap() >= 1);
    assert_eq!(r["totals"]["arp_reply_path_mismatch"], 0);
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "arp_cross_subnet_unanswered")
        .expect("finding");
    assert_eq!(f["severity"], "error");
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains(&format!("who-has {target} tell {sender}"))
            && m.contains(&format!("iface {}", who["ifindex"])),
        "{m}"
    );
    let out = rocetap(&["netcheck", "--capture", cap.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ERROR capture-arp-cross-subnet"), "{text}");
}

#[test]
fn netcheck_capture_errors_exit_2() {
    let out = rocetap(&["netcheck", "--capture", "/nonexistent/x.pcap"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--capture") && err.contains("/nonexistent/x.pcap"),
        "{err}"
    );
    let cap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples/sbr-arp.pcap");
    let out = rocetap(&[
        "netcheck",
        "--capture",
        cap.to_str().unwrap(),
        "--sysfs-root",
        "/",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
