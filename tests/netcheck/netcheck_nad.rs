//! `rocetap netcheck --nad`: the static lint of NetworkAttachmentDefinitions. Two rails
//! (two ToRs), each a SriovNetworkNodePolicy and a NAD (`sriov` + whereabouts + `sbr`),
//! four nodes per rail (`tests/fixtures/nad`, documentation addresses only). The NADs as
//! written are clean; every rule fires on its bad variant (a fixture in `bad/`, or the good
//! file with one edit) and is silent on the good one. Also: YAML anchors, merge keys and
//! multi-documents, a `kubectl get -o json` List on stdin, node facts from `ip -j` dumps,
//! the sbr version from a plugin binary, the CI gate, and hostile input (exit 2, one line,
//! quickly, in bounded memory).

use crate::common;

use common::{bin, TempDir};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn fx(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nad")
        .join(name)
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut c = Command::new(bin());
    c.arg("netcheck")
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("run rocetap");
    if let Some(data) = stdin {
        let mut w = child.stdin.take().unwrap();
        let data = data.to_vec();
        std::thread::spawn(move || {
            let _ = w.write_all(&data);
        });
    }
    let o = child.wait_with_output().unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The lint of `nads` with the fixture policies and nodes (plus `extra`), as JSON.
fn lint(nads: &[&Path], extra: &[&str]) -> (i32, Value) {
    let mut a = vec!["--format".to_string(), "json".into(), "--nad".into()];
    a.extend(nads.iter().map(|p| s(p)));
    a.push("--sriov-policy".into());
    a.push(s(&fx("policies.yaml")));
    if !extra.contains(&"--nodes") && !extra.contains(&"--from") {
        a.push("--nodes".into());
        a.push(s(&fx("nodes.yaml")));
    }
    a.extend(extra.iter().map(std::string::ToString::to_string));
    let args: Vec<&str> = a.iter().map(String::as_str).collect();
    let r = run(&args, None);
    assert!(
        r.code == 0 || r.code == 1,
        "{args:?}: exit {}: {}",
        r.code,
        r.stderr
    );
    let v: Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.stdout));
    assert_eq!(v["schema"], "rocetap.nad/1");
    (r.code, v)
}

fn findings(v: &Value) -> Vec<(String, String)> {
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

fn with_id<'a>(v: &'a Value, id: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == id)
        .collect()
}

/// The good NADs with `edits` applied (each must match), in a scratch file.
fn variant(t: &TempDir, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut text = std::fs::read_to_string(fx("nads.yaml")).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{name}: {from:?} not in nads.yaml");
        text = text.replacen(from, to, 1);
    }
    let p = t.path(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Asserts that `id` is the only rule that fires (at `severity`), returns the report.
fn only(nads: &Path, extra: &[&str], id: &str, severity: &str) -> Value {
    let (code, v) = lint(&[nads], extra);
    let f = findings(&v);
    assert!(!f.is_empty(), "{id}: nothing fired on {}", nads.display());
    for (i, sev) in &f {
        assert_eq!(
            (i.as_str(), sev.as_str()),
            (id, severity),
            "{}: {f:?}",
            nads.display()
        );
    }
    let want = i32::from(severity != "info");
    assert_eq!(code, want, "{id}: exit code");
    v
}

#[test]
fn the_nads_as_written_are_clean() {
    let (code, v) = lint(&[&fx("nads.yaml")], &[]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(findings(&v), Vec::<(String, String)>::new());
    assert_eq!(v["objects"]["network_attachment_definitions"], 2);
    assert_eq!(v["objects"]["sriov_network_node_policies"], 2);
    assert_eq!(v["objects"]["nodes"], 4);
    assert_eq!(v["verdict"], "ok");
    let r = run(
        &[
            "--nad",
            &s(&fx("nads.yaml")),
            "--sriov-policy",
            &s(&fx("policies.yaml")),
            "--nodes",
            &s(&fx("nodes.yaml")),
        ],
        None,
    );
    assert_eq!(r.code, 0);
    assert_eq!(
        r.stdout,
        "NAD lint of 2 NetworkAttachmentDefinitions, 2 SriovNetworkNodePolicies, 4 nodes: no problems found.\n"
    );
}

#[test]
fn anchors_merge_keys_and_a_list_are_read_like_the_plain_files() {
    let (code, v) = lint(&[&fx("anchors.yaml")], &[]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["objects"]["network_attachment_definitions"], 2);
    assert!(findings(&v).is_empty(), "{v:#}");
}

#[test]
fn missing_sbr_is_an_error_with_the_corrected_config() {
    let v = only(&fx("bad/no-sbr.yaml"), &[], "nad-missing-sbr", "error");
    let f = with_id(&v, "nad-missing-sbr")[0];
    assert_eq!(
        f["object"],
        json!({"kind": "NetworkAttachmentDefinition", "namespace": "training", "name": "rdma-rail0"})
    );
    assert_eq!(f["path"], "spec.config.plugins");
    assert!(
        f["location"]
            .as_str()
            .unwrap()
            .ends_with("no-sbr.yaml:16:18"),
        "{f:#}"
    );
    let fixed = &f["fixed_config"];
    assert_eq!(fixed["plugins"][0]["type"], "sriov");
    assert_eq!(fixed["plugins"][1], json!({"type": "sbr"}));
    assert_eq!(fixed["plugins"][0]["ipam"]["range"], "198.51.100.0/24");
    // the text names the fix and prints the corrected configuration
    let r = run(
        &[
            "--nad",
            &s(&fx("bad/no-sbr.yaml")),
            "--sriov-policy",
            &s(&fx("policies.yaml")),
            "--nodes",
            &s(&fx("nodes.yaml")),
        ],
        None,
    );
    assert_eq!(r.code, 1);
    assert!(r.stdout.starts_with("NAD lint of 2 NetworkAttachmentDefinitions, 2 SriovNetworkNodePolicies, 4 nodes: 1 problem found (1 error, 0 warnings)."), "{}", r.stdout);
    assert!(r.stdout.contains("ERROR nad-missing-sbr: NetworkAttachmentDefinition training/rdma-rail0 gives pods a second interface for an RDMA resource but has no sbr plugin"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("  corrected spec.config:\n    {\n      \"cniVersion\": \"0.3.1\","),
        "{}",
        r.stdout
    );
    // sbr first in the chain is no better
    let t = TempDir::new("nad-sbr-first");
    let p = variant(
        &t,
        "sbr-first.yaml",
        &[
            (
                "        {\n          \"type\": \"sriov\",",
                "        { \"type\": \"sbr\" },\n        {\n          \"type\": \"sriov\",",
            ),
            (
                "        },\n        { \"type\": \"sbr\" }\n      ]",
                "        }\n      ]",
            ),
        ],
    );
    let v = only(&p, &[], "nad-missing-sbr", "error");
    assert!(with_id(&v, "nad-missing-sbr")[0]["title"]
        .as_str()
        .unwrap()
        .contains("before the main plugin"));
}

#[test]
fn a_range_off_the_pfs_subnet_is_an_error() {
    let (code, v) = lint(&[&fx("bad/off-subnet.yaml")], &[]);
    assert_eq!(code, 1);
    let f = with_id(&v, "nad-range-subnet");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["severity"], "error");
    assert_eq!(f[0]["path"], "spec.config.plugins[0].ipam.range");
    assert!(f[0]["title"].as_str().unwrap().contains("range 192.0.2.0/24 is not inside the subnet of the PF its resource selects (198.51.100.0/24)"));
    // the excludes (the node addresses of the right subnet) now lie outside the range too
    assert!(
        findings(&v)
            .iter()
            .all(|(i, _)| i == "nad-range-subnet" || i == "nad-exclude-outside"),
        "{v:#}"
    );
}

#[test]
fn node_addresses_not_excluded_are_an_error() {
    let v = only(
        &fx("bad/not-excluded.yaml"),
        &[],
        "nad-host-allocatable",
        "error",
    );
    let f = with_id(&v, "nad-host-allocatable")[0];
    let t = f["title"].as_str().unwrap();
    for n in 1..=4 {
        assert!(
            t.contains(&format!("198.51.100.{n} (node{n} ens1f0)")),
            "{t}"
        );
    }
    assert!(f["fix"][0]
        .as_str()
        .unwrap()
        .contains("198.51.100.1/32, 198.51.100.2/32"));
    // the gateway (whereabouts never skips it) too
    let tt = TempDir::new("nad-gw");
    let p = variant(
        &tt,
        "gw.yaml",
        &[
            ("              \"198.51.100.254/32\"\n", ""),
            ("\"198.51.100.4/32\",", "\"198.51.100.4/32\""),
        ],
    );
    let v = only(&p, &[], "nad-host-allocatable", "error");
    assert!(
        with_id(&v, "nad-host-allocatable")[0]["title"]
            .as_str()
            .unwrap()
            .contains("198.51.100.254 (ipam.gateway)"),
        "{v:#}"
    );
}

#[test]
fn two_nads_sharing_a_range() {
    // across rails: an error (and rail 1's range is off its PF's subnet)
    let (code, v) = lint(&[&fx("bad/shared-range.yaml")], &[]);
    assert_eq!(code, 1);
    let f = with_id(&v, "nad-range-overlap");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["severity"], "error");
    assert!(f[0]["title"]
        .as_str()
        .unwrap()
        .contains("two rails share addresses"));
    assert_eq!(with_id(&v, "nad-range-subnet").len(), 1);
    // the same rail, the same range: one pool (info); with different network_names: duplicates
    let t = TempDir::new("nad-pool");
    let rail0 = std::fs::read_to_string(fx("nads.yaml")).unwrap();
    let doc0 = rail0.split("\n---\n").next().unwrap().to_string();
    let copy = doc0.replace(
        "name: rdma-rail0\n  namespace: training",
        "name: rdma-rail0-copy\n  namespace: training",
    );
    let shared = t.path("shared.yaml");
    std::fs::write(&shared, format!("{doc0}\n---\n{copy}")).unwrap();
    let (_, v) = lint(&[&shared], &[]);
    let f = with_id(&v, "nad-range-overlap");
    assert_eq!(
        (f.len(), f[0]["severity"].as_str()),
        (1, Some("info")),
        "{v:#}"
    );
    // (a pod attached to both has two interfaces in one subnet: ARP flux, warned apart)
    assert!(
        findings(&v)
            .iter()
            .all(|(i, _)| i == "nad-range-overlap" || i == "nad-arp-flux"),
        "{v:#}"
    );
    assert!(f[0]["title"]
        .as_str()
        .unwrap()
        .contains("share one whereabouts pool"));
    let named = copy.replace(
        "\"type\": \"whereabouts\",",
        "\"type\": \"whereabouts\",\n            \"network_name\": \"other\",",
    );
    std::fs::write(&shared, format!("{doc0}\n---\n{named}")).unwrap();
    let (code, v) = lint(&[&shared], &[]);
    assert_eq!(code, 1);
    let f = with_id(&v, "nad-range-overlap");
    assert_eq!(
        (f.len(), f[0]["severity"].as_str()),
        (1, Some("error")),
        "{v:#}"
    );
    assert!(f[0]["title"].as_str().unwrap().contains("separate pool"));
}

/// `kubectl get net-attach-def -A -o json` of `n` NADs, each in its own namespace, all
/// with `range` (and `network_name` for those `named` picks).
fn nad_list(n: usize, range: &str, named: impl Fn(usize) -> Option<String>) -> String {
    let items: Vec<Value> = (0..n)
        .map(|i| {
            let mut ipam = json!({"type": "whereabouts", "range": range});
            if let Some(nn) = named(i) {
                ipam["network_name"] = json!(nn);
            }
            let cfg = json!({"cniVersion": "0.3.1", "name": "shared",
                "plugins": [{"type": "sriov", "ipam": ipam}, {"type": "sbr"}]});
            json!({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
                "metadata": {"name": format!("nad-{i}"), "namespace": format!("ns-{i}"),
                    "annotations": {"k8s.v1.cni.cncf.io/resourceName": "nvidia.com/rdma_rail0"}},
                "spec": {"config": cfg.to_string()}})
        })
        .collect();
    serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
        .unwrap()
}

/// Runs the lint under a 1 GiB address-space limit; (exit code, stdout, time taken).
fn bounded(args: &[&str]) -> (i32, String, Duration) {
    let start = Instant::now();
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576; exec \"$0\" netcheck \"$@\"")
        .arg(bin())
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let code = o.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "{args:?}: exit {code}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (
        code,
        String::from_utf8_lossy(&o.stdout).into_owned(),
        start.elapsed(),
    )
}

#[test]
fn two_thousand_nads_sharing_a_range_are_one_finding() {
    // Was: one finding per pair (1,999,000 of them), 1 GB of text, 4.1 GiB.
    let t = TempDir::new("nad-2000");
    let p = t.path("list.json");
    std::fs::write(&p, nad_list(2000, "198.18.0.0/16", |_| None)).unwrap();
    let (code, out, took) = bounded(&["--format", "json", "--nad", &s(&p)]);
    assert_eq!(code, 1); // the 2,000 ARP flux warnings
    assert!(out.len() < 8 << 20, "{} bytes of JSON", out.len());
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let f = with_id(&v, "nad-range-overlap");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0]["severity"], "info");
    let nads = f[0]["nads"].as_array().unwrap();
    assert_eq!(nads.len(), 2000);
    assert_eq!(
        (&nads[0]["name"], &nads[1999]["name"]),
        (&json!("nad-0"), &json!("nad-1999"))
    );
    assert_eq!(nads[5]["ranges"], "198.18.0.0/16");
    let title = f[0]["title"].as_str().unwrap();
    assert!(
        title.contains("ns-0/nad-0 and 1999 other NADs (NetworkAttachmentDefinition ns-1/nad-1"),
        "{title}"
    );
    // the arp-flux findings name a few others, not all 1,999
    let flux = with_id(&v, "nad-arp-flux");
    assert_eq!(flux.len(), 2000);
    assert!(flux[0]["title"]
        .as_str()
        .unwrap()
        .contains("... (1999 in all)"));
    // the text names a bounded list too
    let (_, text, took) = bounded(&["--nad", &s(&p)]);
    assert!(text.len() < 4 << 20, "{} bytes of text", text.len());
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(text.matches("nad-range-overlap").count(), 1);
    assert!(
        text.contains("and 1992 more  ->  2000 NADs in all"),
        "{text:.2000}"
    );
    // 3,000, every tenth in a pool of its own name: one group in separate pools, an error
    std::fs::write(
        &p,
        nad_list(3000, "198.18.0.0/16", |i| {
            (i % 10 == 0).then(|| format!("pool{i}"))
        }),
    )
    .unwrap();
    let (code, out, took) = bounded(&["--format", "json", "--nad", &s(&p)]);
    assert_eq!(code, 1);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let f = with_id(&v, "nad-range-overlap");
    assert_eq!((f.len(), &f[0]["severity"]), (1, &json!("error")));
    assert_eq!(f[0]["nads"].as_array().unwrap().len(), 3000);
    assert_eq!(f[0]["nads"][10]["network_name"], "pool10");
    assert!(f[0]["title"]
        .as_str()
        .unwrap()
        .contains("in a separate pool"));
}

#[test]
fn three_thousand_rails_on_one_line_take_linear_time_and_memory() {
    // Was: 372 s, 2.1 GiB and 592 MB of text (every sbr-gateway finding named every
    // other rail; each NAD's position was found by copying its line, the whole file).
    let t = TempDir::new("nad-rails");
    let p = t.path("rails.json");
    let items: Vec<Value> = (0..3000u32)
        .map(|i| {
            let net = std::net::Ipv4Addr::from(u32::from(std::net::Ipv4Addr::new(198, 18, 0, 0)) + 16 * i);
            let cfg = json!({"cniVersion": "0.3.1", "name": format!("r{i}"), "plugins": [
                {"type": "sriov", "ipam": {"type": "whereabouts", "range": format!("{net}/28")}},
                {"type": "sbr"}]});
            json!({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
                "metadata": {"name": format!("nad-{i}"), "namespace": "ns",
                    "annotations": {"k8s.v1.cni.cncf.io/resourceName": format!("nvidia.com/rdma_rail{i}")}},
                "spec": {"config": cfg.to_string()}})
        })
        .collect();
    std::fs::write(&p, json!({"kind": "List", "items": items}).to_string()).unwrap();
    let (code, out, took) = bounded(&["--nad", &s(&p)]);
    assert_eq!(code, 0, "{out:.2000}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(out.len() < 8 << 20, "{} bytes", out.len());
    assert_eq!(out.matches("INFO nad-sbr-gateway").count(), 3000);
    assert!(out.contains("... (2999 in all)"), "{out:.3000}");
    assert!(
        out.contains("and 2991 more  ->  2999 off-subnet peers in all"),
        "{out:.3000}"
    );
}

#[test]
fn ten_megabytes_of_json_stay_small() {
    // Was: 10 MB of JSON (2.5M short strings in one list) took 556 MiB before it was
    // refused: the YAML scanner kept every token of the top-level collection.
    let t = TempDir::new("nad-flat");
    let p = t.path("flat.json");
    let items = vec!["\"x\""; 2_500_000].join(",");
    std::fs::write(&p, format!("{{\"kind\": \"List\", \"items\": [{items}]}}")).unwrap();
    let start = Instant::now();
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 393216; exec \"$0\" netcheck --nad \"$1\"")
        .arg(bin())
        .arg(&p)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("flat.json:1:") && err.contains("more than 500000 values"),
        "{err}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn invalid_static_addresses_are_errors() {
    // Was: no finding at all (exit 0); the static plugin fails the pod's network setup.
    let t = TempDir::new("nad-static");
    let p = t.path("static.yaml");
    let cfg = r#"{"cniVersion": "0.4.0", "name": "st", "plugins": [{"type": "sriov", "ipam": {"type": "static", "addresses": [{"address": "198.51.100.7/33", "gateway": "198.51.100.254"}, {"address": "2001:db8::7/129"}, {"address": "198.51.100.300/24"}, {"address": "198.51.100.8"}, {"address": "198.51.100.9/24", "gateway": "198.51.100.x"}]}}, {"type": "sbr"}]}"#;
    std::fs::write(
        &p,
        format!("apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata:\n  name: st\nspec:\n  config: '{cfg}'\n"),
    )
    .unwrap();
    let (code, v) = lint(&[&p], &[]);
    assert_eq!(code, 1);
    let f = with_id(&v, "nad-static-address");
    let got: Vec<(&str, &str)> = f
        .iter()
        .map(|x| (x["path"].as_str().unwrap(), x["title"].as_str().unwrap()))
        .collect();
    let at = |i: usize, k: &str| format!("spec.config.plugins[0].ipam.addresses[{i}].{k}");
    assert_eq!(got.len(), 5, "{v:#}");
    assert_eq!(got[0].0, at(0, "address"));
    assert!(
        got[0]
            .1
            .ends_with("static address \"198.51.100.7/33\" has a prefix longer than /32"),
        "{}",
        got[0].1
    );
    assert!(
        got[1]
            .1
            .ends_with("\"2001:db8::7/129\" has a prefix longer than /128"),
        "{}",
        got[1].1
    );
    assert!(
        got[2]
            .1
            .ends_with("\"198.51.100.300/24\" is not an IP address/prefix"),
        "{}",
        got[2].1
    );
    assert!(
        got[3].1.ends_with("\"198.51.100.8\" has no prefix length"),
        "{}",
        got[3].1
    );
    assert_eq!(got[4].0, at(4, "gateway"));
    assert!(f.iter().all(|x| x["severity"] == "error"));
    // the valid ones are quiet
    let ok = cfg
        .replace("/33", "/32")
        .replace("/129", "/128")
        .replace(".300/", ".30/")
        .replace("198.51.100.8\"", "198.51.100.8/24\"")
        .replace("100.x", "100.254");
    std::fs::write(
        &p,
        format!("apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata:\n  name: st\nspec:\n  config: '{ok}'\n"),
    )
    .unwrap();
    let (_, v) = lint(&[&p], &[]);
    assert!(with_id(&v, "nad-static-address").is_empty(), "{v:#}");
}

#[test]
fn a_flow_style_yaml_nad_is_read_as_yaml() {
    // Was: "flow.yaml:1:2: not valid JSON: key must be a string", exit 2.
    let t = TempDir::new("nad-flow");
    let p = t.path("flow.yaml");
    std::fs::write(
        &p,
        r#"{apiVersion: k8s.cni.cncf.io/v1, kind: NetworkAttachmentDefinition, metadata: {name: flow, namespace: training, annotations: {k8s.v1.cni.cncf.io/resourceName: nvidia.com/rdma_rail0}}, spec: {config: '{"cniVersion": "0.3.1", "name": "flow", "plugins": [{"type": "sriov", "ipam": {"type": "whereabouts", "range": "198.51.100.0/24", "range_start": "198.51.100.10", "range_end": "198.51.100.200"}}, {"type": "sbr"}]}'}}
"#,
    )
    .unwrap();
    let (code, v) = lint(&[&p], &[]);
    assert_eq!((code, findings(&v)), (0, vec![]), "{v:#}");
    assert_eq!(v["objects"]["network_attachment_definitions"], 1);
    // text meant as JSON is still judged as JSON (a trailing comma is an error, as in kubectl)
    std::fs::write(&p, "{\"kind\": \"List\", \"items\": [],}").unwrap();
    let r = run(&["--nad", &s(&p)], None);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("flow.yaml:1:"), "{}", r.stderr);
    assert!(r.stderr.contains("not valid JSON"), "{}", r.stderr);
}

#[test]
fn a_huge_plugins_array_says_so() {
    // Was: 100,000 plugins linted clean in 143 MiB; 400,000 (8 MB) took 516 MiB and said
    // "spec.config is not a JSON object".
    let t = TempDir::new("nad-plugins");
    let p = t.path("plugins.yaml");
    let nad = |n: usize| {
        let tuning = vec![r#"{"type": "tuning"}"#; n].join(", ");
        format!("apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata:\n  name: big\nspec:\n  config: '{{\"cniVersion\": \"0.3.1\", \"name\": \"big\", \"plugins\": [{{\"type\": \"sriov\"}}, {tuning}]}}'\n")
    };
    std::fs::write(&p, nad(1000)).unwrap();
    let (code, v) = lint(&[&p], &[]);
    assert_eq!(code, 1);
    let f = with_id(&v, "nad-config");
    assert_eq!(f.len(), 1, "{v:#}");
    let title = f[0]["title"].as_str().unwrap();
    assert!(
        title.contains("spec.config chains 1001 plugins, more than the 64 this lint reads"),
        "{title}"
    );
    // 800 KB of YAML (YAML that is not JSON is read up to 1 MiB)
    std::fs::write(&p, nad(40_000)).unwrap();
    let (code, out, took) = bounded(&["--format", "json", "--nad", &s(&p)]);
    assert_eq!(code, 1);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let title = with_id(&v, "nad-config")[0]["title"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        title.contains("bytes, more than the 256 KiB this lint reads"),
        "{title}"
    );
    // 2 MB of YAML is refused whole, pointing at JSON, which streams
    std::fs::write(&p, nad(100_000)).unwrap();
    let r = run(&["--nad", &s(&p)], None);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("YAML larger than 1 MiB (give it as JSON"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
    // a short chain is fine
    std::fs::write(&p, nad(3)).unwrap();
    let (_, v) = lint(&[&p], &[]);
    assert!(with_id(&v, "nad-config").is_empty(), "{v:#}");
}

#[test]
fn names_from_the_input_reach_the_terminal_escaped() {
    // Was: a NAD named "\x1b]0;x\x07" set the terminal's title (and "\x1b[2J" cleared it).
    let t = TempDir::new("nad-escape");
    let p = t.path("list.json");
    let cfg = r#"{"cniVersion": "0.3.1", "name": "x", "plugins": [{"type": "sriov", "\u001b[2J": 1, "ipam": {"type": "whereabouts", "range": "198.51.100.0/24"}}]}"#;
    let nad = json!({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": "evil\u{1b}]0;x\u{7}", "namespace": "ns\u{9b}31m\u{202e}",
            "annotations": {"k8s.v1.cni.cncf.io/resourceName": "nvidia.com/rdma_rail0"}},
        "spec": {"config": cfg}});
    std::fs::write(&p, json!({"kind": "List", "items": [nad]}).to_string()).unwrap();
    let r = run(&["--nad", &s(&p)], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        !r.stdout
            .chars()
            .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
        "{:?}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("ns\\u{9b}31m\\u{202e}/evil\\x1b]0;x\\x07"),
        "{}",
        r.stdout
    );
    // the JSON report carries the raw names, encoded by the JSON writer
    let (_, v) = lint(&[&p], &[]);
    let f = with_id(&v, "nad-missing-sbr");
    assert_eq!(f[0]["object"]["name"], "evil\u{1b}]0;x\u{7}");
    assert_eq!(f[0]["object"]["namespace"], "ns\u{9b}31m\u{202e}");
}

#[test]
fn too_few_addresses_for_128_nodes_with_4_vfs_is_a_warning_with_numbers() {
    let t = TempDir::new("nad-capacity");
    let mut nodes = String::from("nodes:\n");
    for n in 1..=128 {
        nodes.push_str(&format!("  node{n}:\n    ens1f0: {{address: 198.51.100.{n}/24, mtu: 9000, gateway: 198.51.100.254}}\n"));
    }
    let nodes_file = t.path("nodes.yaml");
    std::fs::write(&nodes_file, nodes).unwrap();
    let p = variant(&t, "cap.yaml", &[(
        "              \"198.51.100.1/32\",\n              \"198.51.100.2/32\",\n              \"198.51.100.3/32\",\n              \"198.51.100.4/32\",\n",
        "              \"198.51.100.0/25\",\n              \"198.51.100.128/32\",\n",
    )]);
    let (code, v) = lint(&[&p], &["--nodes", &s(&nodes_file)]);
    assert_eq!(code, 1, "{v:#}");
    let f = with_id(&v, "nad-capacity");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["severity"], "warning");
    assert_eq!(
        f[0]["title"],
        "NetworkAttachmentDefinition training/rdma-rail0: range 198.51.100.0/24 has 125 allocatable addresses for 512 VFs (128 nodes on this ToR × 4 VFs)"
    );
    // rail 1's PF is on no node of this file: said so, not guessed
    assert_eq!(with_id(&v, "nad-pf-unknown").len(), 1, "{v:#}");
    assert!(
        findings(&v)
            .iter()
            .all(|(i, _)| i == "nad-capacity" || i == "nad-pf-unknown"),
        "{v:#}"
    );
}

#[test]
fn excludes_and_bounds_outside_the_range_are_errors() {
    let t = TempDir::new("nad-bounds");
    let p = variant(
        &t,
        "ex.yaml",
        &[(
            "\"198.51.100.254/32\"\n",
            "\"198.51.100.254/32\",\n              \"198.51.101.0/28\"\n",
        )],
    );
    let v = only(&p, &[], "nad-exclude-outside", "error");
    assert_eq!(
        with_id(&v, "nad-exclude-outside")[0]["path"],
        "spec.config.plugins[0].ipam.exclude[5]"
    );
    let p = variant(
        &t,
        "start.yaml",
        &[(
            "\"range\": \"198.51.100.0/24\",",
            "\"range\": \"198.51.100.0/24\",\n            \"range_start\": \"198.51.101.10\",",
        )],
    );
    only(&p, &[], "nad-range-bounds", "error");
    let p = variant(&t, "rev.yaml", &[("\"range\": \"198.51.100.0/24\",", "\"range\": \"198.51.100.0/24\",\n            \"range_start\": \"198.51.100.200\",\n            \"range_end\": \"198.51.100.10\",")]);
    let v = only(&p, &[], "nad-range-bounds", "error");
    assert!(with_id(&v, "nad-range-bounds")[0]["title"]
        .as_str()
        .unwrap()
        .contains("range_start 198.51.100.200 is after range_end 198.51.100.10"));
    // range_start/range_end that keep the node addresses out need no excludes
    let p = variant(&t, "startend.yaml", &[
        ("\"range\": \"198.51.100.0/24\",", "\"range\": \"198.51.100.0/24\",\n            \"range_start\": \"198.51.100.10\",\n            \"range_end\": \"198.51.100.200\","),
        ("              \"198.51.100.1/32\",\n              \"198.51.100.2/32\",\n              \"198.51.100.3/32\",\n              \"198.51.100.4/32\",\n              \"198.51.100.254/32\"\n", ""),
    ]);
    let (code, v) = lint(&[&p], &[]);
    assert_eq!((code, findings(&v)), (0, vec![]), "{v:#}");
}

#[test]
fn sbr_without_a_gateway_on_routed_rails_is_a_note() {
    // A lookup that misses sbr's table falls through to the next rule: traffic from the
    // VF to the other rail leaves through eth0. It works, so it is a note, not a warning.
    let t = TempDir::new("nad-sbrgw");
    let p = variant(
        &t,
        "nogw.yaml",
        &[("            \"gateway\": \"198.51.100.254\",\n", "")],
    );
    let v = only(&p, &[], "nad-sbr-gateway", "info");
    let f = with_id(&v, "nad-sbr-gateway");
    assert_eq!(f.len(), 1);
    let title = f[0]["title"].as_str().unwrap();
    assert!(title.contains("203.0.113.0/24"), "{v:#}");
    assert!(
        title.contains("leaves through the pod's default route (eth0)"),
        "{title}"
    );
    assert!(!title.contains("finds no route"), "{title}");
    // a lone rail with no routed peers: fine without a gateway
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text.split("\n---\n").next().unwrap()).unwrap();
    let (code, v) = lint(&[&p], &[]);
    assert_eq!((code, findings(&v)), (0, vec![]), "{v:#}");
}

#[test]
fn the_field_reports_nads_lint_clean() {
    // Issue 38 item 6: the two NADs of the field report (sriov + whereabouts + sbr, no
    // gateway) exited 1 with two warnings that traffic to the other rail "finds no route".
    let r = run(&["--nad", &s(&fx("field-report.yaml"))], None);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("no problems found"), "{}", r.stdout);
    assert!(!r.stdout.contains("finds no route"), "{}", r.stdout);
    let notes: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("INFO nad-sbr-gateway"))
        .collect();
    assert_eq!(notes.len(), 2, "{}", r.stdout);
    assert!(
        notes[0].contains("to 198.19.9.0/24 misses sbr's table"),
        "{}",
        notes[0]
    );
    assert!(
        notes[1].contains("to 198.19.8.0/24 misses sbr's table"),
        "{}",
        notes[1]
    );
}

#[test]
fn sbr_options_the_installed_version_ignores() {
    let t = TempDir::new("nad-sbrver");
    let p = variant(
        &t,
        "table.yaml",
        &[(
            "{ \"type\": \"sbr\" }",
            "{ \"type\": \"sbr\", \"table\": 100 }",
        )],
    );
    let v = only(
        &p,
        &["--sbr-version", "1.4.0"],
        "nad-sbr-version",
        "warning",
    );
    assert!(with_id(&v, "nad-sbr-version")[0]["title"]
        .as_str()
        .unwrap()
        .contains("the installed sbr 1.4.0 ignores \"table\" (needs >= 1.6.0)"));
    let (code, v) = lint(&[&p], &["--sbr-version", "1.6.0"]);
    assert_eq!((code, findings(&v)), (0, vec![]));
    let p2 = variant(
        &t,
        "hints.yaml",
        &[(
            "{ \"type\": \"sbr\" }",
            "{ \"type\": \"sbr\", \"addSourceHints\": true }",
        )],
    );
    only(
        &p2,
        &["--sbr-version", "1.9.1"],
        "nad-sbr-version",
        "warning",
    );
    let (code, v) = lint(&[&p2], &["--sbr-version", "1.10.0"]);
    assert_eq!((code, findings(&v)), (0, vec![]));
    // a build from git after v1.9.1 (`git describe`) is newer than v1.9.1
    let (code, v) = lint(&[&p2], &["--sbr-version", "v1.9.1-12-gabcdef0"]);
    assert_eq!((code, findings(&v)), (0, vec![]));
    // unknown version: said, not failed
    only(&p, &[], "nad-sbr-version", "info");
    // the version from the plugin binary itself (run with an empty environment)
    let dir = t.path("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let sbr = dir.join("sbr");
    std::fs::write(&sbr, "#!/bin/sh\nif [ -n \"$CNI_COMMAND$HOME$USER\" ]; then echo polluted; exit 1; fi\necho 'CNI sbr plugin v1.4.0' >&2\necho 'CNI protocol versions supported: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0' >&2\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sbr, std::fs::Permissions::from_mode(0o755)).unwrap();
    let v = only(
        &p,
        &["--cni-bin-dir", &s(&dir)],
        "nad-sbr-version",
        "warning",
    );
    assert_eq!(v["sbr_version"], "1.4.0");
    // a directory without sbr: the pods would not start
    let empty = t.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, v) = lint(&[&fx("nads.yaml")], &["--cni-bin-dir", &s(&empty)]);
    assert_eq!(code, 1);
    assert_eq!(with_id(&v, "nad-sbr-installed").len(), 2, "{v:#}");
    // a plugin that hangs is stopped
    std::fs::write(&sbr, "#!/bin/sh\nsleep 30\n").unwrap();
    let start = Instant::now();
    let r = run(
        &["--nad", &s(&fx("nads.yaml")), "--cni-bin-dir", &s(&dir)],
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.starts_with("rocetap: netcheck: --cni-bin-dir: "),
        "{}",
        r.stderr
    );
    assert!(start.elapsed() < Duration::from_secs(20));
}

#[test]
fn several_rdma_interfaces_in_one_subnet_need_the_arp_sysctls() {
    // a second NAD on rail 0's subnet (its own part of the range): a pod with both
    let t = TempDir::new("nad-flux");
    let good = std::fs::read_to_string(fx("nads.yaml")).unwrap();
    let doc0 = good.split("\n---\n").next().unwrap();
    let a = doc0.replace(
        "\"range\": \"198.51.100.0/24\",",
        "\"range\": \"198.51.100.0/24\",\n            \"range_end\": \"198.51.100.127\",",
    );
    let b = doc0
        .replace(
            "name: rdma-rail0\n  namespace",
            "name: rdma-rail0-b\n  namespace",
        )
        .replace(
            "\"range\": \"198.51.100.0/24\",",
            "\"range\": \"198.51.100.0/24\",\n            \"range_start\": \"198.51.100.128\",",
        );
    let p = t.path("flux.yaml");
    std::fs::write(&p, format!("{a}\n---\n{b}")).unwrap();
    let v = only(&p, &[], "nad-arp-flux", "warning");
    assert_eq!(with_id(&v, "nad-arp-flux").len(), 2);
    // with tuning's sysctls: silent
    let tuning = r#"{ "type": "sbr" },
        { "type": "tuning", "sysctl": { "net.ipv4.conf.IFNAME.arp_ignore": "1", "net.ipv4.conf.IFNAME.arp_announce": "2", "net.ipv4.conf.IFNAME.arp_filter": "1", "net.ipv4.conf.IFNAME.rp_filter": "2" } }"#;
    std::fs::write(
        &p,
        format!("{a}\n---\n{b}").replace("{ \"type\": \"sbr\" }", tuning),
    )
    .unwrap();
    let (code, v) = lint(&[&p], &[]);
    assert_eq!((code, findings(&v)), (0, vec![]), "{v:#}");
}

#[test]
fn the_mtu_chain() {
    let t = TempDir::new("nad-mtu");
    // policies with MTU 1500: RoCE 1024, information only
    let pol = std::fs::read_to_string(fx("policies.yaml"))
        .unwrap()
        .replace("mtu: 9000", "mtu: 1500");
    let pf = t.path("policies.yaml");
    std::fs::write(&pf, pol).unwrap();
    let nodes = std::fs::read_to_string(fx("nodes.yaml"))
        .unwrap()
        .replace("mtu: 9000", "mtu: 1500");
    let nf = t.path("nodes.yaml");
    std::fs::write(&nf, nodes).unwrap();
    let r = run(
        &[
            "--format",
            "json",
            "--nad",
            &s(&fx("nads.yaml")),
            "--sriov-policy",
            &s(&pf),
            "--nodes",
            &s(&nf),
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let f = with_id(&v, "nad-roce-mtu");
    assert_eq!(f.len(), 2, "{v:#}");
    assert_eq!(findings(&v).len(), 2);
    assert_eq!(f[0]["severity"], "info");
    assert!(f[0]["title"]
        .as_str()
        .unwrap()
        .contains("VF MTU 1500 gives RoCE MTU 1024"));
    assert!(f[0]["detail"].as_str().unwrap().contains("4200 → 4096"));
    // a VF MTU above the PF's: an error
    let p = variant(
        &t,
        "vf9000.yaml",
        &[(
            "{ \"type\": \"sbr\" }",
            "{ \"type\": \"sbr\" },\n        { \"type\": \"tuning\", \"mtu\": 9000 }",
        )],
    );
    let r = run(
        &[
            "--format",
            "json",
            "--nad",
            &s(&p),
            "--sriov-policy",
            &s(&pf),
            "--nodes",
            &s(&nf),
        ],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let f = with_id(&v, "nad-mtu");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["severity"], "error");
    assert!(
        f[0]["title"].as_str().unwrap().contains(
            "VF MTU 9000 (spec.config.plugins[2].mtu) is above the PF MTU 1500 (node1 ens1f0)"
        ),
        "{v:#}"
    );
}

#[test]
fn configuration_errors_carry_line_and_column() {
    let t = TempDir::new("nad-json");
    // a trailing comma: not JSON
    let p = variant(
        &t,
        "comma.yaml",
        &[("{ \"type\": \"sbr\" }\n", "{ \"type\": \"sbr\" },\n")],
    );
    let v = only(&p, &[], "nad-config-json", "error");
    let f = with_id(&v, "nad-config-json")[0];
    assert_eq!(
        f["config_position"],
        json!({"line": 21, "column": 3}),
        "{f:#}"
    );
    // the literal block's line 21 is the file's line 33, where `]` follows the comma
    assert!(
        f["location"].as_str().unwrap().ends_with("comma.yaml:33:7"),
        "{f:#}"
    );
    assert!(f["title"]
        .as_str()
        .unwrap()
        .contains("trailing comma at line 21 column 3 of the configuration"));
    // a misspelt key: whereabouts would ignore it
    let p = variant(&t, "typo.yaml", &[("\"exclude\": [", "\"exlcude\": [")]);
    let (code, v) = lint(&[&p], &[]);
    assert_eq!(code, 1);
    let f = with_id(&v, "nad-unknown-key");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["path"], "spec.config.plugins[0].ipam.exlcude");
    assert_eq!(f[0]["fix"][0], "did you mean \"exclude\"?");
    assert!(
        f[0]["location"]
            .as_str()
            .unwrap()
            .ends_with("typo.yaml:23:13"),
        "{f:?}"
    );
    // and so the node addresses are no longer excluded
    assert_eq!(with_id(&v, "nad-host-allocatable").len(), 1);
    // cniVersion missing, or not a version
    let p = variant(
        &t,
        "nover.yaml",
        &[("      \"cniVersion\": \"0.3.1\",\n", "")],
    );
    only(&p, &[], "nad-cni-version", "error");
    let p = variant(
        &t,
        "badver.yaml",
        &[(
            "\"cniVersion\": \"0.3.1\", \"name\": \"rdma-rail1\"",
            "\"cniVersion\": \"3.1\", \"name\": \"rdma-rail1\"",
        )],
    );
    let v = only(&p, &[], "nad-cni-version", "error");
    let f = with_id(&v, "nad-cni-version")[0];
    assert!(
        f["location"]
            .as_str()
            .unwrap()
            .ends_with("badver.yaml:45:27"),
        "{f:#}"
    );
}

#[test]
fn a_resource_no_policy_defines_is_a_warning() {
    let t = TempDir::new("nad-nopol");
    let p = variant(
        &t,
        "res.yaml",
        &[("nvidia.com/rdma_rail0", "nvidia.com/rdma_rial0")],
    );
    let v = only(&p, &[], "nad-no-policy", "warning");
    assert!(with_id(&v, "nad-no-policy")[0]["location"]
        .as_str()
        .unwrap()
        .ends_with("res.yaml:10:38"));
}

#[test]
fn kubectl_json_list_on_stdin() {
    // what `kubectl get net-attach-def -A -o json` prints (NetworkAttachmentDefinitionList
    // items carry their kind; a plain List too)
    let mut items = Vec::new();
    for (rail, net) in [(0, "198.51.100"), (1, "203.0.113")] {
        let cfg = json!({"cniVersion": "0.3.1", "name": format!("rdma-rail{rail}"), "plugins": [
            {"type": "sriov", "ipam": {"type": "whereabouts", "range": format!("{net}.0/24"), "gateway": format!("{net}.254"),
              "exclude": (1..=4).map(|n| format!("{net}.{n}/32")).chain([format!("{net}.254/32")]).collect::<Vec<_>>()}},
            {"type": "sbr"}]});
        items.push(json!({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": format!("rdma-rail{rail}"), "namespace": "training",
              "annotations": {"k8s.v1.cni.cncf.io/resourceName": format!("nvidia.com/rdma_rail{rail}")}},
            "spec": {"config": serde_json::to_string(&cfg).unwrap()}}));
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}});
    let args = [
        "--format",
        "json",
        "--nad",
        "-",
        "--sriov-policy",
        &s(&fx("policies.yaml")),
        "--nodes",
        &s(&fx("nodes.yaml")),
    ];
    let r = run(
        &args,
        Some(serde_json::to_string_pretty(&list).unwrap().as_bytes()),
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["objects"]["network_attachment_definitions"], 2);
    assert!(findings(&v).is_empty(), "{v:#}");
    assert_eq!(v["inputs"][0], "<stdin>");
    // the same without sbr: the finding points into the stream
    let mut broken = list.clone();
    let c = broken["items"][0]["spec"]["config"]
        .as_str()
        .unwrap()
        .replace(",{\"type\":\"sbr\"}", "");
    broken["items"][0]["spec"]["config"] = json!(c);
    let r = run(
        &args,
        Some(serde_json::to_string(&broken).unwrap().as_bytes()),
    );
    assert_eq!(r.code, 1);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        findings(&v),
        vec![("nad-missing-sbr".to_string(), "error".to_string())]
    );
    // inside a JSON string with escapes only the position in the configuration is exact
    let f = with_id(&v, "nad-missing-sbr")[0];
    assert!(f.get("location").is_none(), "{f:#}");
    assert_eq!(f["config_position"]["line"], 1, "{f:#}");
    // stdin twice is a usage error
    let r = run(&["--nad", "-", "--sriov-policy", "-"], Some(b""));
    assert_eq!(r.code, 2);
    assert!(r
        .stderr
        .starts_with("rocetap: netcheck: `-` (standard input) can be given only once"));
}

#[test]
fn node_facts_from_ip_dumps() {
    // --from DIR with one subdirectory per node, as collected with `ip -j addr` / `ip -j route`
    let t = TempDir::new("nad-from");
    for n in 1..=4 {
        let d = t.path(&format!("state/node{n}"));
        std::fs::create_dir_all(&d).unwrap();
        let addr = json!([
            {"ifindex": 1, "ifname": "lo", "mtu": 65536, "flags": ["UP"], "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host"}]},
            {"ifindex": 2, "ifname": "ens1f0", "mtu": 9000, "flags": ["UP"], "addr_info": [{"family": "inet", "local": format!("198.51.100.{n}"), "prefixlen": 24, "scope": "global"}]},
            {"ifindex": 3, "ifname": "ens2f0", "mtu": 9000, "flags": ["UP"], "addr_info": [{"family": "inet", "local": format!("203.0.113.{n}"), "prefixlen": 24, "scope": "global"}]},
        ]);
        let route = json!([
            {"dst": "198.51.100.0/24", "dev": "ens1f0", "protocol": "kernel", "scope": "link", "prefsrc": format!("198.51.100.{n}")},
            {"dst": "203.0.113.0/24", "dev": "ens2f0", "protocol": "kernel", "scope": "link", "prefsrc": format!("203.0.113.{n}")},
            {"dst": "198.18.0.0/15", "gateway": "198.51.100.254", "dev": "ens1f0"},
        ]);
        std::fs::write(d.join("addr.json"), addr.to_string()).unwrap();
        std::fs::write(d.join("route.json"), route.to_string()).unwrap();
    }
    let state = s(&t.path("state"));
    let (code, v) = lint(&[&fx("nads.yaml")], &["--from", &state]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["objects"]["nodes"], 4);
    assert!(findings(&v).is_empty(), "{v:#}");
    let (code, v) = lint(&[&fx("bad/not-excluded.yaml")], &["--from", &state]);
    assert_eq!(code, 1);
    assert_eq!(
        findings(&v),
        vec![("nad-host-allocatable".to_string(), "error".to_string())]
    );
    // a single rail without a gateway whose nodes route 198.18.0.0/15 through its ToR
    let p = t.path("lone.yaml");
    let text = std::fs::read_to_string(fx("nads.yaml"))
        .unwrap()
        .replace("            \"gateway\": \"198.51.100.254\",\n", "");
    std::fs::write(&p, text.split("\n---\n").next().unwrap()).unwrap();
    let (code, v) = lint(&[&p], &["--from", &state]);
    assert_eq!(code, 0); // a note: that traffic falls through to eth0
    let f = with_id(&v, "nad-sbr-gateway");
    assert_eq!(f.len(), 1, "{v:#}");
    assert_eq!(f[0]["evidence"][0]["query"], "198.18.0.0/15");
}

#[test]
fn the_gate_and_missing_inputs() {
    let t = TempDir::new("nad-gate");
    let p = variant(
        &t,
        "res.yaml",
        &[("nvidia.com/rdma_rail0", "nvidia.com/rdma_rial0")],
    );
    // a warning fails by default, not with --fail-on-severity error
    let (code, _) = lint(&[&p], &[]);
    assert_eq!(code, 1);
    let (code, v) = lint(&[&p], &["--fail-on-severity", "error"]);
    assert_eq!(code, 0);
    assert_eq!(v["verdict"], "ok");
    assert_eq!(v["warnings"], 1);
    // info fails only when asked
    let (code, _) = lint(&[&fx("nads.yaml")], &["--fail-on-severity", "info"]);
    assert_eq!(code, 0);
    let nogw = variant(
        &t,
        "nogw.yaml",
        &[("            \"gateway\": \"198.51.100.254\",\n", "")],
    );
    assert_eq!(lint(&[&nogw], &[]).0, 0);
    assert_eq!(lint(&[&nogw], &["--fail-on-severity", "info"]).0, 1);
    // without nodes or policies the checks that need them are skipped, and said so
    let r = run(&["--format", "json", "--nad", &s(&fx("nads.yaml"))], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let ids: Vec<(String, String)> = findings(&v);
    assert_eq!(
        ids,
        vec![
            ("nad-no-node-facts".into(), "info".into()),
            ("nad-no-policies".into(), "info".into())
        ]
    );
    // the missing-sbr error needs nothing but the NAD
    let r = run(&["--nad", &s(&fx("bad/no-sbr.yaml"))], None);
    assert_eq!(r.code, 1);
    // --nad does not mix with a namespace's checks
    let r = run(&["--nad", &s(&fx("nads.yaml")), "--netns", "x"], None);
    assert_eq!(r.code, 2);
    assert!(r.stderr.starts_with("rocetap: "));
}

/// Runs the lint on hostile input under a 1 GiB address-space limit: exit 2, one line
/// `rocetap: ...` (and at most a hint), within a few seconds.
fn hostile(name: &str, data: &[u8]) -> String {
    let t = TempDir::new(&format!("nad-hostile-{name}"));
    let p = t.path(name);
    std::fs::write(&p, data).unwrap();
    hostile_file(name, &p)
}

fn hostile_file(name: &str, p: &Path) -> String {
    let start = Instant::now();
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576; exec \"$0\" netcheck --nad \"$1\"")
        .arg(bin())
        .arg(p)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = start.elapsed();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{name}: {err}");
    assert!(o.stdout.is_empty(), "{name}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(!lines.is_empty() && lines.len() <= 2, "{name}: {err}");
    assert!(lines[0].starts_with("rocetap: "), "{name}: {err}");
    assert!(took < Duration::from_secs(15), "{name}: took {took:?}");
    lines[0].to_string()
}

#[test]
fn hostile_input_is_one_line_and_exit_2() {
    let e = hostile(
        "deep.yaml",
        ("[".repeat(100_000) + &"]".repeat(100_000)).as_bytes(),
    );
    assert!(
        e.contains("deeper than") || e.contains("recursion limit"),
        "{e}"
    );
    let e = hostile(
        "deep.json",
        ("{\"a\":".repeat(50_000) + "1" + &"}".repeat(50_000)).as_bytes(),
    );
    assert!(e.contains("not valid"), "{e}");
    let deep_block: String = (0..500).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
    let e = hostile("deep-block.yaml", deep_block.as_bytes());
    assert!(e.contains("deeper than 64"), "{e}");
    let mut bomb = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let mut prev = 'a';
    for n in 'b'..='j' {
        bomb.push_str(&format!(
            "{n}: &{n} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
        prev = n;
    }
    let e = hostile("bomb.yaml", bomb.as_bytes());
    assert!(e.contains("expanding aliases"), "{e}");
    let mut garbage = Vec::with_capacity(1 << 16);
    let mut x: u32 = 0x1234_5678;
    for _ in 0..(1 << 16) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        garbage.push((x >> 24) as u8);
    }
    let e = hostile("garbage.bin", &garbage);
    assert!(e.contains("not UTF-8") || e.contains("not text"), "{e}");
    let e = hostile(
        "latin1.yaml",
        b"kind: NetworkAttachmentDefinition\nmetadata: {name: caf\xe9}\n",
    );
    assert!(
        e.contains("not UTF-8 text (invalid byte at offset 54)"),
        "{e}"
    );
    let e = hostile("nul.yaml", b"kind: List\x00\x01\x02");
    assert!(e.contains("not text"), "{e}");
    let e = hostile("scalar.yaml", b"just some words\n");
    assert!(e.contains("is not a Kubernetes object"), "{e}");
    let e = hostile("tabs.yaml", b"kind: List\nitems:\n\t- a\n");
    assert!(e.contains("not valid YAML"), "{e}");
    // a huge file: refused after the limit, without reading (or keeping) the rest
    let t = TempDir::new("nad-huge");
    let p = t.path("huge.yaml");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
        let line = format!("# {}\n", "x".repeat(1021));
        for _ in 0..(65 * 1024) {
            f.write_all(line.as_bytes()).unwrap();
        }
    }
    let e = hostile_file("huge.yaml", &p);
    assert!(e.contains("larger than 64 MiB"), "{e}");
}

#[test]
fn the_sbr_arp_scenario_as_a_nad() {
    // node facts straight from the scenario's `ip -j` dumps
    let state = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/scenarios/sbr-arp/expected/broken/state");
    if !state.join("node1/addr.json").is_file() {
        common::skip(&format!(
            "{} not found (the shared scenarios live beside the repository)",
            state.display()
        ));
        return;
    }
    let (n1, n2) = (s(&state.join("node1")), s(&state.join("node2")));
    let f = fx("sbr-arp.yaml");
    let r = run(
        &[
            "--format",
            "json",
            "--nad",
            &s(&f),
            "--from",
            &n1,
            "--from",
            &n2,
        ],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["objects"]["nodes"], 2);
    assert_eq!(v["objects"]["sriov_network_node_policies"], 1);
    assert_eq!(
        findings(&v),
        vec![
            ("nad-missing-sbr".into(), "error".into()),
            ("nad-roce-mtu".into(), "info".into())
        ],
        "{v:#}"
    );
    let fixed = &with_id(&v, "nad-missing-sbr")[0]["fixed_config"];
    assert_eq!(fixed["name"], "rdma-net");
    assert_eq!(fixed["plugins"][0]["type"], "sriov");
    assert_eq!(fixed["plugins"][1]["type"], "sbr");
    assert!(with_id(&v, "nad-roce-mtu")[0]["title"]
        .as_str()
        .unwrap()
        .contains("VF MTU 1500 gives RoCE MTU 1024"));
    // without range_start the nodes' own rdma0 addresses are in the pool
    let t = TempDir::new("nad-sbrarp");
    let p = t.path("all.yaml");
    std::fs::write(
        &p,
        std::fs::read_to_string(&f)
            .unwrap()
            .replace(", \"range_start\": \"198.19.8.11\"", ""),
    )
    .unwrap();
    let r = run(
        &[
            "--format",
            "json",
            "--nad",
            &s(&p),
            "--from",
            &n1,
            "--from",
            &n2,
        ],
        None,
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let h = with_id(&v, "nad-host-allocatable");
    assert_eq!(h.len(), 1, "{v:#}");
    assert!(
        h[0]["title"]
            .as_str()
            .unwrap()
            .contains("198.19.8.1 (node1 rdma0), 198.19.8.2 (node2 rdma0)"),
        "{v:#}"
    );
}

#[test]
fn unreadable_side_inputs_are_exit_2() {
    let t = TempDir::new("nad-side");
    let nodes = t.path("nodes.yaml");
    std::fs::write(
        &nodes,
        "nodes:\n  node1:\n    ens1f0: {address: 198.51.100.300/24}\n",
    )
    .unwrap();
    let nad = s(&fx("nads.yaml"));
    let r = run(&["--nad", &nad, "--nodes", &s(&nodes)], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.starts_with("rocetap: ")
            && r.stderr
                .contains("nodes.yaml:3:23: \"198.51.100.300/24\" is not an IPv4 address/prefix"),
        "{}",
        r.stderr
    );
    std::fs::write(&nodes, "node1: {}\n").unwrap();
    let r = run(&["--nad", &nad, "--nodes", &s(&nodes)], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("a nodes file needs `nodes:`"),
        "{}",
        r.stderr
    );
    let r = run(&["--nad", &nad, "--sbr-version", "one"], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .starts_with("rocetap: netcheck: --sbr-version \"one\": not a version"),
        "{}",
        r.stderr
    );
    let r = run(&["--nad", &s(&t.path("missing.yaml"))], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.starts_with("rocetap: reading ")
            && r.stderr.contains("missing.yaml: No such file"),
        "{}",
        r.stderr
    );
    let r = run(&["--nad", &nad, "--from", &s(&t.0)], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("no addr.json in it or in its subdirectories"),
        "{}",
        r.stderr
    );
    // a policy without resourceName
    let pol = t.path("pol.yaml");
    std::fs::write(
        &pol,
        "kind: SriovNetworkNodePolicy\nmetadata: {name: p}\nspec: {numVfs: 4}\n",
    )
    .unwrap();
    let r = run(&["--nad", &nad, "--sriov-policy", &s(&pol)], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("has no spec.resourceName"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_readme_shows_the_real_missing_sbr_output() {
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    let cmd =
        "$ rocetap netcheck --nad bad/no-sbr.yaml --sriov-policy policies.yaml --nodes nodes.yaml";
    let start = readme.find(cmd).expect("the example in the README");
    let block = &readme[start..];
    let block = &block[(block.find('\n').unwrap() + 1)..=block.find("\n$ kubectl").unwrap()];
    let o = Command::new(bin())
        .current_dir(fx(""))
        .args([
            "netcheck",
            "--nad",
            "bad/no-sbr.yaml",
            "--sriov-policy",
            "policies.yaml",
            "--nodes",
            "nodes.yaml",
        ])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    // The README pipes it through `head -N` to keep the tour short: its first N lines.
    let cmd_line = &readme[start..start + readme[start..].find('\n').unwrap()];
    let out = String::from_utf8_lossy(&o.stdout);
    let shown: String = match cmd_line.split("| head -").nth(1) {
        Some(rest) => {
            let n: usize = rest.split_whitespace().next().unwrap().parse().unwrap();
            out.lines().take(n).map(|l| format!("{l}\n")).collect()
        }
        None => out.into_owned(),
    };
    assert_eq!(shown, block);
    // the CI snippet's shape: globs of files, the gate at errors
    let bad: Vec<String> = ["no-sbr", "off-subnet", "not-excluded", "shared-range"]
        .iter()
        .map(|n| s(&fx(&format!("bad/{n}.yaml"))))
        .collect();
    let mut args: Vec<&str> = vec!["--nad"];
    args.extend(bad.iter().map(String::as_str));
    let (p, n) = (s(&fx("policies.yaml")), s(&fx("nodes.yaml")));
    args.extend([
        "--sriov-policy",
        &p,
        "--nodes",
        &n,
        "--sbr-version",
        "1.4.0",
        "--fail-on-severity",
        "error",
    ]);
    assert_eq!(run(&args, None).code, 1);
}

#[test]
fn json_nodes_file_and_a_typed_list() {
    let t = TempDir::new("nad-jsonnodes");
    let mut nodes = serde_json::Map::new();
    for n in 1..=4 {
        nodes.insert(
            format!("node{n}"),
            json!({"ens1f0": {"address": format!("198.51.100.{n}/24"), "mtu": 9000, "gateway": "198.51.100.254"},
                   "ens2f0": {"address": [format!("203.0.113.{n}/24")], "mtu": 9000, "gateway": "203.0.113.254"}}),
        );
    }
    let nf = t.path("nodes.json");
    std::fs::write(&nf, json!({"nodes": nodes}).to_string()).unwrap();
    let (code, v) = lint(&[&fx("nads.yaml")], &["--nodes", &s(&nf)]);
    assert_eq!((code, findings(&v)), (0, vec![]), "{v:#}");
    assert_eq!(v["objects"]["nodes"], 4);
    // a NetworkAttachmentDefinitionList whose items leave out their kind
    let text = std::fs::read_to_string(fx("anchors.yaml"))
        .unwrap()
        .replace("kind: List", "kind: NetworkAttachmentDefinitionList")
        .replace("    kind: NetworkAttachmentDefinition\n", "");
    let p = t.path("typed.yaml");
    std::fs::write(&p, text).unwrap();
    let (code, v) = lint(&[&p], &[]);
    assert_eq!((code, findings(&v)), (0, vec![]), "{v:#}");
    assert_eq!(v["objects"]["network_attachment_definitions"], 2);
    // other kinds in the same stream are counted and left alone
    let mixed = t.path("mixed.yaml");
    let good = std::fs::read_to_string(fx("nads.yaml")).unwrap();
    std::fs::write(
        &mixed,
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\ndata: {{a: b}}\n---\n{good}"
        ),
    )
    .unwrap();
    let (code, v) = lint(&[&mixed], &[]);
    assert_eq!(
        (code, v["objects"]["ignored_objects"].as_u64()),
        (0, Some(1)),
        "{v:#}"
    );
}
