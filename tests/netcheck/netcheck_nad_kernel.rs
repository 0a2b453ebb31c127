//! The NAD lint's routing claims, checked against the kernel (issue 38 item 6). For each
//! NAD of the field report (`tests/fixtures/nad/field-report.yaml`: sriov + whereabouts +
//! sbr, no IPAM gateway) the test builds the pod that NAD makes, in a network namespace of
//! its own: `eth0` on the pod network (a veth, as the primary CNI makes) with the default route, `net1` (the VF, here a veth) with the
//! first address whereabouts hands out, and what sbr does — the VF's routes moved from the
//! main table into table 100, and a rule `from VF-ADDRESS lookup 100`. Then every routing
//! claim the lint makes about that NAD is asked of the kernel with `ip -j route get`:
//! - `nad-sbr-gateway` (info): traffic from the VF address to each named peer subnet
//!   "misses sbr's table and leaves through the pod's default route (eth0)";
//! - its detail: "that works for everything on SUBNET" — the NAD's own subnet from the VF
//!   address leaves through the VF;
//! - with `"gateway"` added to the ipam section the note is gone, and the kernel agrees:
//!   the peer subnet is then reached through the VF, via that gateway.
//!
//! Needs root and iproute2; otherwise `SKIP:` (and a failure under CI). Namespaces are
//! named `rtnadk-PID-N` and deleted at the end; addresses are documentation/benchmark ones.

use crate::common;

use common::{bin, is_root, run_ok, skip, TempDir};
use serde_json::Value;
use std::process::Command;

/// A namespace deleted (by name) on drop.
struct Ns(String);

impl Ns {
    fn new(n: usize) -> Ns {
        let ns = Ns(format!("rtnadk-{}-{n}", std::process::id()));
        run_ok(&["ip", "netns", "add", &ns.0]);
        ns
    }
    fn ip(&self, args: &[&str]) {
        let mut v = vec!["ip", "-n", &self.0];
        v.extend_from_slice(args);
        run_ok(&v);
    }
    /// `ip -j route get DST from SRC` in the namespace: (dev, gateway).
    fn route_get(&self, dst: &str, src: &str) -> (String, Option<String>) {
        let o = run_ok(&["ip", "-n", &self.0, "-j", "route", "get", dst, "from", src]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let r = &v[0];
        (
            r["dev"].as_str().unwrap_or("").to_string(),
            r["gateway"].as_str().map(str::to_string),
        )
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

/// One NAD as the test needs it: its subnet, the first pod address, its gateway.
struct Nad {
    name: String,
    subnet: String,
    vf_addr: String,
    gateway: Option<String>,
}

/// The NADs of a lint report's input file (the `spec.config` JSON of each document).
fn nads(text: &str) -> Vec<Nad> {
    text.split("\n---\n")
        .filter_map(|doc| {
            let name = doc
                .lines()
                .find_map(|l| l.trim().strip_prefix("name: "))?
                .to_string();
            let cfg = doc
                .lines()
                .find_map(|l| l.trim().strip_prefix("config: "))?;
            let v: Value = serde_json::from_str(cfg.trim_matches('\'')).unwrap();
            let ipam = &v["plugins"][0]["ipam"];
            Some(Nad {
                name,
                subnet: ipam["range"].as_str()?.to_string(),
                vf_addr: ipam["range_start"].as_str()?.to_string(),
                gateway: ipam["gateway"].as_str().map(str::to_string),
            })
        })
        .collect()
}

/// A host address inside `subnet` (a /24 in these fixtures): `.20`.
fn host_in(subnet: &str) -> String {
    let net = subnet.split('/').next().unwrap();
    let mut o: Vec<&str> = net.split('.').collect();
    o[3] = "20";
    o.join(".")
}

/// Builds the pod a NAD makes: eth0 on the pod network (default route), net1 with the VF
/// address, and sbr's table 100 with its rule.
fn pod(n: usize, nad: &Nad) -> Ns {
    let ns = Ns::new(n);
    ns.ip(&[
        "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p",
    ]);
    ns.ip(&["link", "set", "eth0p", "up"]);
    ns.ip(&["addr", "add", "203.0.113.10/24", "dev", "eth0"]);
    ns.ip(&["link", "set", "eth0", "up"]);
    ns.ip(&[
        "route",
        "add",
        "default",
        "via",
        "203.0.113.1",
        "dev",
        "eth0",
    ]);
    ns.ip(&[
        "link", "add", "net1", "type", "veth", "peer", "name", "net1p",
    ]);
    ns.ip(&["link", "set", "net1p", "up"]);
    let prefix = nad.subnet.split('/').nth(1).unwrap();
    ns.ip(&[
        "addr",
        "add",
        &format!("{}/{prefix}", nad.vf_addr),
        "dev",
        "net1",
    ]);
    ns.ip(&["link", "set", "net1", "up"]);
    // sbr: the VF's routes move from the main table to table 100, with a rule for the
    // VF's address; a gateway in the IPAM result becomes table 100's default route.
    ns.ip(&["route", "del", &nad.subnet, "dev", "net1"]);
    ns.ip(&[
        "route",
        "add",
        &nad.subnet,
        "dev",
        "net1",
        "src",
        &nad.vf_addr,
        "table",
        "100",
    ]);
    if let Some(gw) = &nad.gateway {
        ns.ip(&[
            "route", "add", "default", "via", gw, "dev", "net1", "table", "100",
        ]);
    }
    ns.ip(&[
        "rule",
        "add",
        "from",
        &format!("{}/32", nad.vf_addr),
        "table",
        "100",
    ]);
    ns
}

fn lint(path: &std::path::Path) -> (i32, Value) {
    let o = Command::new(bin())
        .args(["netcheck", "--format", "json", "--nad"])
        .arg(path)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&o.stderr));
    });
    (o.status.code().unwrap_or(-1), v)
}

/// The peer subnets the `nad-sbr-gateway` note names for NAD `name`.
fn gateway_note_peers(report: &Value, name: &str) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "nad-sbr-gateway" && f["object"]["name"] == name)
        .flat_map(|f| {
            f["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|e| e["query"].as_str().map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn ready() -> bool {
    if !is_root() {
        skip("needs root for network namespaces");
        return false;
    }
    if !Command::new("ip")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skip("iproute2 is not installed");
        return false;
    }
    true
}

#[test]
fn each_sbr_routing_claim_is_what_the_kernel_answers() {
    if !ready() {
        return;
    }
    let fx = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nad/field-report.yaml");
    let text = std::fs::read_to_string(&fx).unwrap();
    let list = nads(&text);
    assert_eq!(list.len(), 2, "the field report has two NADs");
    let (code, report) = lint(&fx);
    assert_eq!(code, 0, "{report:#}");
    let mut claims = 0;
    for (i, nad) in list.iter().enumerate() {
        let peers = gateway_note_peers(&report, &nad.name);
        assert!(!peers.is_empty(), "{}: no nad-sbr-gateway note", nad.name);
        let ns = pod(i, nad);
        for peer in &peers {
            let dst = host_in(peer);
            let (dev, gw) = ns.route_get(&dst, &nad.vf_addr);
            assert_eq!(
                (dev.as_str(), gw.as_deref()),
                ("eth0", Some("203.0.113.1")),
                "{}: the lint says traffic from {} to {peer} leaves through eth0; the kernel disagrees",
                nad.name,
                nad.vf_addr
            );
            claims += 1;
        }
        // "that works for everything on SUBNET": the own subnet stays on the VF
        let (dev, gw) = ns.route_get(&host_in(&nad.subnet), &nad.vf_addr);
        assert_eq!((dev.as_str(), gw), ("net1", None), "{}", nad.name);
    }
    assert_eq!(claims, 2, "one peer subnet named per NAD");
}

#[test]
fn with_a_gateway_the_note_goes_and_the_vf_carries_the_traffic() {
    if !ready() {
        return;
    }
    let fx = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nad/field-report.yaml");
    let t = TempDir::new("nadk-gw");
    let p = t.path("gw.yaml");
    let text = std::fs::read_to_string(&fx)
        .unwrap()
        .replace(
            "\"range_start\": \"198.19.8.11\"",
            "\"range_start\": \"198.19.8.11\", \"gateway\": \"198.19.8.1\"",
        )
        .replace(
            "\"range_start\": \"198.19.9.11\"",
            "\"range_start\": \"198.19.9.11\", \"gateway\": \"198.19.9.1\"",
        );
    std::fs::write(&p, &text).unwrap();
    let (code, report) = lint(&p);
    assert_eq!(code, 0, "{report:#}");
    let list = nads(&text);
    assert_eq!(list.len(), 2);
    for (i, nad) in list.iter().enumerate() {
        assert!(
            gateway_note_peers(&report, &nad.name).is_empty(),
            "{}: {report:#}",
            nad.name
        );
        let ns = pod(10 + i, nad);
        let other = &list[1 - i];
        let (dev, gw) = ns.route_get(&host_in(&other.subnet), &nad.vf_addr);
        assert_eq!(
            (dev.as_str(), gw.as_deref()),
            ("net1", nad.gateway.as_deref()),
            "{}: with a gateway the other rail is reached through the VF",
            nad.name
        );
    }
}
