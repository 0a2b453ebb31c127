//! `rocetap netcheck` QoS (issue 14, steps 2 and 3) on the fixtures of
//! `tests/fixtures/qos/` (see its README): the host alone, and joined with a capture
//! (`--capture`). The good pod has no finding; the bad pod has each one, with the line
//! that explains it and the fix; unknown values (no `--qos-from`) give no finding; bad
//! recorded outputs and bad arguments are one-line errors with exit code 2.

use crate::common;

use common::{rocetap, sample};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fx(rel: &str) -> String {
    root()
        .join("tests/fixtures/qos")
        .join(rel)
        .display()
        .to_string()
}

/// netcheck on a fixture pod (`good`/`bad`), with `--qos-from` and the extra arguments.
fn netcheck(pod: &str, qos_from: bool, extra: &[&str]) -> (i32, Value) {
    let (state, sys, dcb) = (
        fx(&format!("{pod}/state")),
        fx(&format!("{pod}/sys")),
        fx(&format!("{pod}/dcb")),
    );
    let mut a = vec!["netcheck", "--from", &state, "--sysfs-root", &sys];
    if qos_from {
        a.extend(["--qos-from", &dcb]);
    }
    a.extend(extra);
    a.extend(["--format", "json"]);
    let o = rocetap(&a);
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code().unwrap(), v)
}

fn ids(v: &Value) -> BTreeSet<(String, String)> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn find<'a>(v: &'a Value, id: &str, title_has: &str) -> &'a Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id && f["title"].as_str().unwrap().contains(title_has))
        .unwrap_or_else(|| panic!("no {id} with {title_has:?}: {:#}", v["findings"]))
}

fn fixes(f: &Value) -> Vec<String> {
    f["fix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn good_pod_has_no_finding_alone_or_with_its_capture() {
    let cap = sample("clean-rc.pcap");
    for extra in [vec![], vec!["--capture", cap.as_str()]] {
        let (code, v) = netcheck("good", true, &extra);
        assert_eq!(code, 0, "{:#}", v["findings"]);
        assert_eq!(ids(&v), BTreeSet::new(), "{extra:?}");
        let p = &v["qos"]["ports"][0];
        assert_eq!(p["dcb"]["trust"], "dscp");
        assert_eq!(p["dcb"]["dscp_prio"]["26"], 3);
        assert_eq!(p["dcb"]["pfc"][3], true);
        assert_eq!(
            (p["cnp_dscp"].as_u64(), p["traffic_class"].as_u64()),
            (Some(26), Some(106))
        );
        assert_eq!(p["default_roce_mode"], "RoCE v2");
        assert_eq!(p["gids"]["v2_ipv4"][0]["index"], 3);
        assert_eq!(p["gids"]["v1_ipv4"][0]["index"], 2);
        assert_eq!(p["gids"]["link_local"].as_array().unwrap().len(), 2);
        assert_eq!(p["gids"]["zero_entries"], 2);
        assert_eq!(
            (p["mtu"].as_u64(), p["pf_mtu"].as_u64()),
            (Some(9000), Some(9000))
        );
        assert_eq!(v["qos"]["netns_mode"], "exclusive");
    }
}

#[test]
fn bad_pod_alone_names_each_host_problem_with_its_fix() {
    let (code, v) = netcheck("bad", true, &[]);
    assert_eq!(code, 1);
    let want: BTreeSet<(String, String)> = [
        ("qos-roce-mode", "warning"),
        ("qos-cm-tos", "warning"),
        ("qos-mtu-pf", "warning"),
        ("qos-cnp", "info"),
        ("roce-ecn", "warning"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(ids(&v), want);
    let f = find(&v, "qos-mtu-pf", "");
    assert_eq!(
        f["title"],
        "RoCE MTU 1024 on mlx5_2 port 1 (net1) because net1 has MTU 1500; the PF ens1f0np0 has 9000, which carries RoCE MTU 4096"
    );
    assert!(fixes(f)[0].contains("\"mtu\": 9000 in the NetworkAttachmentDefinition"));
    let f = find(
        &v,
        "qos-cm-tos",
        "ToS 0 (DSCP 0 → priority 0); PFC is enabled only on priority 3 (DSCP 26 → 3)",
    );
    assert!(fixes(f).contains(&"cma_roce_tos -d mlx5_2 -p 1 -t 106".to_string()));
    let f = find(&v, "qos-roce-mode", "IB/RoCE v1");
    assert!(fixes(f).contains(&"cma_roce_mode -d mlx5_2 -p 1 -m 2".to_string()));
    find(&v, "qos-cnp", "DSCP 48 → priority 6 (no PFC)");
}

#[test]
fn bad_pod_with_its_capture_names_the_problem_end_to_end() {
    let cap = sample("qos-mismarked.pcap");
    let (code, v) = netcheck("bad", true, &["--capture", &cap]);
    assert_eq!(code, 1);
    let f = find(
        &v,
        "qos-lossy-data",
        "QP 0x000204, 0x000304 data on DSCP 0 → priority 0",
    );
    assert_eq!(f["severity"], "error");
    assert!(f["title"]
        .as_str()
        .unwrap()
        .ends_with("PFC is enabled only on priority 3 (DSCP 26 → 3): this traffic is lossy"));
    assert!(fixes(f).contains(
        &"every QP of the device: echo 106 > /sys/class/infiniband/mlx5_2/tc/1/traffic_class"
            .to_string()
    ));
    find(
        &v,
        "qos-lossy-data",
        "QP 0x000303 data on DSCP 0 PCP 0 → priority 0",
    );
    let f = find(
        &v,
        "qos-cnp-lossy",
        "CNPs sent on DSCP 48 map to priority 6 (no PFC)",
    );
    assert!(fixes(f)[0].contains("echo 26 > /sys/class/net/net1/ecn/roce_np/cnp_dscp"));
    // The joined CNP finding replaces the host-only note.
    assert!(!ids(&v).contains(&("qos-cnp".to_string(), "info".to_string())));
    let f = find(
        &v,
        "qos-not-ect",
        "priority 0: ECN (roce_rp) is disabled there",
    );
    assert_eq!(
        fixes(f),
        ["echo 1 > /sys/class/net/net1/ecn/roce_rp/enable/0"]
    );
    find(
        &v,
        "qos-not-ect",
        "QP 0x000305 leave Not-ECT on priority 3 although ECN (roce_rp) is enabled",
    );
    // The text report says the same.
    let (state, sys, dcb) = (fx("bad/state"), fx("bad/sys"), fx("bad/dcb"));
    let o = rocetap(&[
        "netcheck",
        "--from",
        &state,
        "--sysfs-root",
        &sys,
        "--qos-from",
        &dcb,
        "--capture",
        &cap,
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("ERROR qos-lossy-data: QP 0x000204, 0x000304 data on DSCP 0 → priority 0; PFC is enabled only on priority 3 (DSCP 26 → 3): this traffic is lossy"), "{text}");
    assert!(text.contains("qos mlx5_2 port 1 (net1): trust dscp, PFC on priority 3, CNP DSCP 48, RDMA-CM IB/RoCE v1 ToS 0, traffic_class ?, RoCE v2 IPv4 GID index 3 (198.18.2.2), netns exclusive"), "{text}");
}

#[test]
fn unknown_dcb_state_gives_no_qos_guess() {
    // Without --qos-from the trust mode, DSCP map and PFC are unknown: nothing about
    // priorities is said, only what sysfs and configfs show.
    let cap = sample("qos-mismarked.pcap");
    let (_, v) = netcheck("bad", false, &["--capture", &cap]);
    let got: BTreeSet<String> = ids(&v).into_iter().map(|(i, _)| i).collect();
    for id in [
        "qos-lossy-data",
        "qos-cnp-lossy",
        "qos-cm-tos",
        "qos-cnp",
        "qos-not-ect",
    ] {
        assert!(
            !got.contains(id),
            "{id} without a DSCP map or PFC state: {got:?}"
        );
    }
    assert!(got.contains("qos-roce-mode") && got.contains("qos-mtu-pf"));
    assert_eq!(v["qos"]["ports"][0]["dcb"], Value::Null);
}

#[test]
fn bad_qos_inputs_are_one_line_errors() {
    let t = common::TempDir::new("netcheck-qos");
    std::fs::write(t.path("net1.dcb-pfc"), "prio-pfc 0:off 3:maybe\n").unwrap();
    let (state, sys) = (fx("bad/state"), fx("bad/sys"));
    let bad_dir = t.0.display().to_string();
    let missing = t.path("nope").display().to_string();
    for (args, want) in [
        (
            vec!["--sysfs-root", sys.as_str(), "--qos-from", bad_dir.as_str()],
            "net1.dcb-pfc: bad prio-pfc entry \"3:maybe\"",
        ),
        (
            vec!["--sysfs-root", sys.as_str(), "--qos-from", missing.as_str()],
            "not a directory",
        ),
        (
            vec!["--qos-from", bad_dir.as_str()],
            "--qos-from needs the host's RDMA ports",
        ),
    ] {
        let mut a = vec!["netcheck", "--from", state.as_str()];
        a.extend(args);
        let o = rocetap(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        let first = err.lines().next().unwrap_or("");
        assert!(
            first.starts_with("rocetap: ") && first.contains(want),
            "{err}"
        );
    }
}

#[test]
fn gid_index_compared_with_other_nodes() {
    let (peer, same) = (fx("peer-v1"), fx("good"));
    let (_, v) = netcheck(
        "bad",
        true,
        &["--peer-sysfs-root", &peer, "--peer-sysfs-root", &same],
    );
    let m: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "qos-gid-mismatch")
        .collect();
    assert_eq!(m.len(), 1, "only peer-v1's table differs: {m:#?}");
    assert_eq!(
        m[0]["title"],
        "GID index 3 is RoCE v2 (198.18.2.2) on mlx5_2 port 1 (net1) but IB/RoCE v1 (198.18.2.3) on peer-v1 (mlx5_0 port 1); its RoCE v2 IPv4 GID is index 2"
    );
    // The good pod's peers agree with it.
    let (code, v) = netcheck("good", true, &["--peer-sysfs-root", &same]);
    assert_eq!((code, ids(&v)), (0, BTreeSet::new()));
    let o = rocetap(&[
        "netcheck",
        "--from",
        &fx("good/state"),
        "--sysfs-root",
        &fx("good/sys"),
        "--peer-sysfs-root",
        "/nonexistent/peer",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("--peer-sysfs-root /nonexistent/peer: not a directory"));
}

#[test]
fn capture_qos_findings_reach_netcheck() {
    let cap = sample("qos-mismarked.pcap");
    // Alone: the capture-wide DSCP and ECN findings too.
    let o = rocetap(&["netcheck", "--capture", &cap, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let got: BTreeSet<String> = ids(&v).into_iter().map(|(i, _)| i).collect();
    for id in [
        "qos-capture-directions",
        "qos-capture-dscp-mixed",
        "qos-capture-dscp0",
        "qos-capture-not-ect",
        "qos-capture-roce-v1",
    ] {
        assert!(got.contains(id), "{id}: {got:?}");
    }
    find(
        &v,
        "qos-capture-roce-v1",
        "1 host sends both RoCE v1 and RoCE v2 (198.18.2.6)",
    );
    // With the host's state the joined findings replace the capture-wide ones.
    let (_, v) = netcheck("bad", true, &["--capture", &cap]);
    let got: BTreeSet<String> = ids(&v).into_iter().map(|(i, _)| i).collect();
    assert!(got.contains("qos-capture-directions") && got.contains("qos-capture-roce-v1"));
    assert!(!got.contains("qos-capture-dscp0") && !got.contains("qos-capture-not-ect"));
    let o = rocetap(&["netcheck", "--capture", &sample("clean-rc.pcap")]);
    assert_eq!(o.status.code(), Some(0));
}

#[path = "../lab/lab_qos.rs"]
mod lab_qos;

#[test]
fn readers_on_the_soft_roce_labs_real_sysfs() {
    // Recorded by lab/rxe/run.sh (truth.sysfs of VM A), so this runs without the lab.
    let text = std::fs::read_to_string(fx("rxe-lab-sysfs.json")).unwrap();
    let runs: Value = serde_json::from_str(&text).unwrap();
    let mut checked = 0;
    for (name, truth) in runs.as_object().unwrap() {
        lab_qos::rows(
            truth,
            |what, ok, detail, why| {
                assert!(ok, "{name}: {what}: {detail} ({why})");
                checked += 1;
            },
            |_, _, _| {},
        );
    }
    assert_eq!(checked, 6, "three checks for each of the two recorded VMs");
}
