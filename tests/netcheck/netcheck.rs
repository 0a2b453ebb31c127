//! `rocetap netcheck`: verdicts on the sbr-arp scenario (offline from the recorded
//! `expected/*/state`, and live in the scenario's namespaces), the lookup model against the
//! kernel (`ip -j route get`) for generated (dst, src, iif, oif) combinations, RoCE
//! readiness on fake sysfs trees, and the error paths.

use crate::common;

use common::{rocetap, skip, TempDir};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The live tests share namespace names; run them one at a time (the binary's one lock,
/// `common::serial()`).
use crate::common::SERIAL as NETNS_LOCK;

fn scenario() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/scenarios/sbr-arp");
    if dir.join("run.sh").is_file() {
        Some(dir)
    } else {
        skip(&format!(
            "{} not found (the shared scenarios live beside the repository)",
            dir.display()
        ));
        None
    }
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn finding_ids(v: &Value, severities: &[&str]) -> BTreeSet<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| severities.contains(&f["severity"].as_str().unwrap()))
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

/// Runs netcheck (JSON) with `args`, returns (exit code, report).
fn netcheck(args: &[&str]) -> (i32, Value) {
    let mut a = vec!["netcheck", "--format", "json"];
    a.extend_from_slice(args);
    let out = rocetap(&a);
    let code = out.status.code().unwrap();
    assert!(
        code == 0 || code == 1,
        "netcheck {args:?}: exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out);
    assert_eq!(v["schema"], "rocetap.netcheck/1");
    (code, v)
}

/// What the verdicts must be, per phase: (namespace, exit code, error/warning ids).
fn expected_verdicts(phase: &str) -> Vec<(&'static str, i32, Vec<&'static str>)> {
    let pod_broken = phase != "fixed";
    let pod = |_: &str| {
        if pod_broken {
            (1, vec!["reply-path"])
        } else {
            (0, vec![])
        }
    };
    let (p1c, p1i) = pod("pod1");
    let (p2c, p2i) = pod("pod2");
    vec![
        ("pod1", p1c, p1i),
        ("pod2", p2c, p2i),
        // sbr changes nothing on the host: the node still sources from its RDMA address
        ("node1", 1, vec!["node-source"]),
        ("node2", 1, vec!["node-source"]),
        ("fabric", 0, vec![]),
    ]
}

fn check_verdict(label: &str, code: i32, v: &Value, want_code: i32, want_ids: &[&str]) {
    let ids = finding_ids(v, &["error", "warning"]);
    let want: BTreeSet<String> = want_ids
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    assert_eq!(
        (code, &ids),
        (want_code, &want),
        "{label}: verdict\n{}",
        serde_json::to_string_pretty(v).unwrap()
    );
}

#[test]
fn offline_verdicts_match_the_recorded_scenario() {
    let Some(sc) = scenario() else { return };
    for phase in ["broken", "broken-loose", "fixed"] {
        for (ns, code, ids) in expected_verdicts(phase) {
            let dir = sc.join("expected").join(phase).join("state").join(ns);
            let (c, v) = netcheck(&["--from", dir.to_str().unwrap()]);
            check_verdict(&format!("offline {phase}/{ns}"), c, &v, code, &ids);
        }
    }
    // the pod-side finding names net1 and the exact fix
    let dir = sc.join("expected/broken/state/pod1");
    let (_, v) = netcheck(&["--from", dir.to_str().unwrap()]);
    let f = &v["findings"][0];
    let fix: Vec<&str> = f["fix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(
        fix.contains(&"ip rule add from 198.19.8.11/32 table 100 priority 32765"),
        "{fix:?}"
    );
    assert!(
        fix.iter()
            .any(|x| x.starts_with("ip route add 198.19.8.0/24 dev net1")
                && x.ends_with("table 100")),
        "{fix:?}"
    );
    assert!(f["snippet"].as_str().unwrap().contains("\"type\": \"sbr\""));
    // the node-side finding explains the source choice
    let dir = sc.join("expected/broken/state/node1");
    let (_, v) = netcheck(&["--from", dir.to_str().unwrap()]);
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "node-source")
        .unwrap();
    assert!(f["title"].as_str().unwrap().contains("198.19.8.1"), "{f}");
    assert!(
        f["detail"]
            .as_str()
            .unwrap()
            .contains("calia1b2c3d4e5f has no IPv4 address"),
        "{f}"
    );
}

/// Compares one `ip -j route get` answer (Ok(result object) or Err(stderr)) with ours.
fn compare(label: &str, kernel: &Result<Value, String>, ours: &Value) -> Option<String> {
    let mismatch = |why: String| {
        Some(format!(
            "{label}: {why}\n  kernel: {kernel:?}\n  ours:   {ours}"
        ))
    };
    match kernel {
        Err(stderr) => {
            let Some(e) = ours.get("error") else {
                return mismatch("kernel errors, we answer".into());
            };
            let msg = e["message"].as_str().unwrap();
            if !stderr.contains(msg) {
                return mismatch(format!("different error (ours: {msg})"));
            }
            None
        }
        Ok(k) => {
            if ours.get("error").is_some() {
                return mismatch("we error, the kernel answers".into());
            }
            if ours
                .get("note")
                .and_then(Value::as_str)
                .is_some_and(|n| n.starts_with("multipath"))
            {
                // the kernel hashes the flow onto one next hop: it must be one of the route's
                let route = ours["route"].as_str().unwrap();
                let dev = format!(" dev {}", k["dev"].as_str().unwrap());
                let via = k
                    .get("gateway")
                    .and_then(Value::as_str)
                    .map(|g| format!("via {g}"));
                if !route.contains(&dev) || via.is_some_and(|g| !route.contains(&g)) {
                    return mismatch("kernel's next hop is not one of the route's".into());
                }
                return None;
            }
            let ks = |key: &str| k.get(key).and_then(Value::as_str).map(str::to_string);
            let os = |key: &str| ours.get(key).and_then(Value::as_str).map(str::to_string);
            let ktype = ks("type").unwrap_or_else(|| "unicast".into());
            let otype = os("type").unwrap_or_else(|| "unicast".into());
            let ktable = ks("table").unwrap_or_else(|| "main".into());
            let otable = os("table").unwrap_or_else(|| "main".into());
            for (what, a, b) in [
                ("type", Some(ktype), Some(otype)),
                ("dev", ks("dev"), os("dev")),
                ("gateway", ks("gateway"), os("gateway")),
                ("prefsrc", ks("prefsrc"), os("prefsrc")),
                ("table", Some(ktable), Some(otable)),
            ] {
                if a != b {
                    return mismatch(format!("{what} differs"));
                }
            }
            None
        }
    }
}

/// `ip route get` words from a recorded `cmd`.
fn words_of(cmd: &str) -> &str {
    cmd.strip_prefix("ip route get ").unwrap()
}

#[test]
fn offline_lookup_matches_recorded_route_get() {
    let Some(sc) = scenario() else { return };
    let mut compared = 0;
    let mut bad = Vec::new();
    for phase in ["broken", "broken-loose", "fixed"] {
        for ns in ["pod1", "pod2", "node1", "node2"] {
            let dir = sc.join("expected").join(phase).join("state").join(ns);
            let rec: Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("route-get.json")).unwrap())
                    .unwrap();
            let rec = rec.as_array().unwrap();
            let mut args = vec!["--from".to_string(), dir.to_str().unwrap().to_string()];
            for r in rec {
                args.push("--route-get".into());
                args.push(words_of(r["cmd"].as_str().unwrap()).to_string());
            }
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            let (_, v) = netcheck(&a);
            for (r, ours) in rec.iter().zip(v["route_get"].as_array().unwrap()) {
                let kernel = if r["rc"] == 0 {
                    Ok(r["result"][0].clone())
                } else {
                    Err(r["stderr"].as_str().unwrap().to_string())
                };
                compared += 1;
                if let Some(m) = compare(&format!("{phase}/{ns} {}", r["cmd"]), &kernel, ours) {
                    bad.push(m);
                }
            }
        }
    }
    assert!(compared >= 36, "only {compared} recorded lookups");
    assert!(
        bad.is_empty(),
        "{} of {compared} differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
    eprintln!("compared {compared} recorded lookups: all equal");
}

// ------------------------------------------------------------------------------ sysfs

fn write(p: &Path, s: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{s}\n")).unwrap();
}

/// A fake sysfs with mlx5_0 port 1 bound to `net1` (pod1's VF).
fn fake_sysfs(root: &Path, v2_gid: bool, ecn_prio3: &str, out_of_sequence: u64, active_mtu: &str) {
    let port = root.join("sys/class/infiniband/mlx5_0/ports/1");
    write(&port.join("link_layer"), "Ethernet");
    write(&port.join("state"), "4: ACTIVE");
    write(&port.join("active_mtu"), active_mtu);
    write(
        &port.join("gids/0"),
        "fe80:0000:0000:0000:0000:c6ff:fe13:080b",
    );
    write(&port.join("gid_attrs/types/0"), "IB/RoCE v1");
    write(&port.join("gid_attrs/ndevs/0"), "net1");
    write(
        &port.join("gids/1"),
        "fe80:0000:0000:0000:0000:c6ff:fe13:080b",
    );
    write(&port.join("gid_attrs/types/1"), "RoCE v2");
    write(&port.join("gid_attrs/ndevs/1"), "net1");
    if v2_gid {
        write(
            &port.join("gids/3"),
            "0000:0000:0000:0000:0000:ffff:c613:080b",
        );
        write(&port.join("gid_attrs/types/3"), "RoCE v2");
        write(&port.join("gid_attrs/ndevs/3"), "net1");
    }
    write(
        &port.join("gids/2"),
        "0000:0000:0000:0000:0000:ffff:c613:080b",
    );
    write(&port.join("gid_attrs/types/2"), "IB/RoCE v1");
    write(&port.join("gid_attrs/ndevs/2"), "net1");
    for c in [
        "out_of_sequence",
        "packet_seq_err",
        "local_ack_timeout_err",
        "np_cnp_sent",
    ] {
        let v = if c == "out_of_sequence" {
            out_of_sequence
        } else if c == "np_cnp_sent" {
            99
        } else {
            0
        };
        write(&port.join("hw_counters").join(c), &v.to_string());
    }
    for which in ["roce_np", "roce_rp"] {
        for p in 0..8 {
            let v = if p == 3 { ecn_prio3 } else { "1" };
            write(
                &root.join(format!("sys/class/net/net1/ecn/{which}/enable/{p}")),
                v,
            );
        }
    }
}

#[test]
fn roce_readiness_on_fake_sysfs() {
    let Some(sc) = scenario() else { return };
    let state = sc.join("expected/fixed/state/pod1");
    let state = state.to_str().unwrap();

    let good = TempDir::new("netcheck-sysfs-good");
    // net1 MTU 1500 carries RoCE MTU 1024
    fake_sysfs(&good.0, true, "1", 0, "1024 (3)");
    let (code, v) = netcheck(&["--from", state, "--sysfs-root", good.0.to_str().unwrap()]);
    check_verdict("good sysfs", code, &v, 0, &[]);
    assert_eq!(v["rdma_ports"][0]["netdevs"][0], "net1");
    // np_cnp_sent is not an error counter; the MTU note is info
    assert_eq!(finding_ids(&v, &["info"]), ["roce-mtu".to_string()].into());

    let bad = TempDir::new("netcheck-sysfs-bad");
    fake_sysfs(&bad.0, false, "0", 17, "512 (2)");
    let (code, v) = netcheck(&["--from", state, "--sysfs-root", bad.0.to_str().unwrap()]);
    check_verdict(
        "bad sysfs",
        code,
        &v,
        1,
        &["roce-gid", "roce-ecn", "roce-counters", "roce-mtu"],
    );
    let text = serde_json::to_string(&v).unwrap();
    assert!(
        text.contains("198.19.8.11 on net1 has no RoCE v2 GID"),
        "{text}"
    );
    assert!(text.contains("out_of_sequence=17"), "{text}");
    assert!(
        text.contains("/sys/class/net/net1/ecn/roce_np/enable/3"),
        "{text}"
    );
    assert!(
        text.contains("RoCE MTU 512, but net1 (MTU 1500) carries 1024"),
        "{text}"
    );

    // when sysfs shows the node's source device is an RDMA netdev, the node-side finding
    // is an error and says so
    let node = TempDir::new("netcheck-sysfs-node");
    let port = node.0.join("sys/class/infiniband/mlx5_1/ports/1");
    write(&port.join("link_layer"), "Ethernet");
    write(&port.join("active_mtu"), "1024 (3)");
    write(
        &port.join("gids/0"),
        "0000:0000:0000:0000:0000:ffff:c613:0801",
    );
    write(&port.join("gid_attrs/types/0"), "RoCE v2");
    write(&port.join("gid_attrs/ndevs/0"), "rdma0");
    let node_state = sc.join("expected/fixed/state/node1");
    let (code, v) = netcheck(&[
        "--from",
        node_state.to_str().unwrap(),
        "--sysfs-root",
        node.0.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        finding_ids(&v, &["error"]),
        ["node-source".to_string()].into(),
        "{v}"
    );
    assert!(
        v["findings"][0]["title"]
            .as_str()
            .unwrap()
            .contains("(rdma0, RDMA)"),
        "{v}"
    );

    // a missing --sysfs-root is an error, not "no RDMA devices"
    let out = rocetap(&[
        "netcheck",
        "--from",
        state,
        "--sysfs-root",
        "/nonexistent/sysfs",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// A saved state of its own (no shared scenario needed): `net1` (198.51.100.11/24),
/// named `ifname` in the dumps, with `sysctl.json` so that the report lists it.
fn own_state(dir: &Path, ifname: &str) {
    let addr = serde_json::json!([{"ifindex": 2, "ifname": ifname, "flags": ["UP"], "mtu": 1500,
        "addr_info": [{"family": "inet", "local": "198.51.100.11", "prefixlen": 24, "scope": "global"}]}]);
    let route = serde_json::json!([{"dst": "198.51.100.0/24", "dev": ifname, "scope": "link",
        "prefsrc": "198.51.100.11", "flags": []}]);
    let sysctl = serde_json::json!({format!("net.ipv4.conf.{ifname}.rp_filter"): "1"});
    write(&dir.join("addr.json"), &addr.to_string());
    write(&dir.join("route.json"), &route.to_string());
    write(&dir.join("sysctl.json"), &sysctl.to_string());
}

#[test]
fn a_counter_file_that_is_no_file_or_too_long_is_a_one_line_error() {
    let state = TempDir::new("netcheck-hostile-state");
    own_state(&state.0, "net1");
    let counter = "class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence";
    /// (tag, how the counter file is made, why it is refused)
    type Case = (&'static str, fn(&Path), &'static str);
    let cases: [Case; 3] = [
        (
            "fifo",
            |p| nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap(),
            "not a regular file (a FIFO)",
        ),
        (
            "zero",
            |p| std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
            "not a regular file (a character device)",
        ),
        (
            // sparse: costs no disk
            "huge",
            |p| std::fs::File::create(p).unwrap().set_len(1 << 30).unwrap(),
            "longer than 65536 bytes",
        ),
    ];
    for (tag, make, why) in cases {
        let sys = TempDir::new(&format!("netcheck-hostile-{tag}"));
        fake_sysfs(&sys.0, true, "1", 0, "1024 (3)");
        let root = sys.0.join("sys");
        let file = root.join(counter);
        std::fs::remove_file(&file).unwrap();
        make(&file);
        let t = std::time::Instant::now();
        let out = rocetap(&[
            "netcheck",
            "--from",
            state.0.to_str().unwrap(),
            "--sysfs-root",
            root.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{tag}: {err}");
        assert_eq!(err.lines().count(), 1, "{tag}: {err}");
        let want = format!(
            "rocetap: netcheck: reading sysfs: {}: {why}",
            file.display()
        );
        assert_eq!(err.trim_end(), want, "{tag}");
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "{tag}: {:?}",
            t.elapsed()
        );
    }
}

#[test]
fn outside_names_are_escaped_in_the_text_report() {
    let state = TempDir::new("netcheck-escape");
    own_state(&state.0, "e\x1b[2Jx");
    let dir = state.0.to_str().unwrap();
    for args in [
        vec!["netcheck", "--from", dir, "-v"],
        vec!["netcheck", "--from", dir, "--route-get", "198.51.100.7"],
    ] {
        let out = rocetap(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains('\x1b'), "{args:?}: {text:?}");
        assert!(text.contains("e\\x1b[2Jx"), "{args:?}: {text}");
    }
    // JSON carries the name as it is, JSON-encoded
    let (_, v) = netcheck(&["--from", dir]);
    assert_eq!(v["interfaces"][0]["dev"], "e\x1b[2Jx");
}

// ------------------------------------------------------------------------------ errors

#[test]
fn errors_are_one_line_with_a_hint() {
    for args in [
        vec!["netcheck", "--netns", "rocetap-no-such-netns"],
        vec!["netcheck", "--from", "/nonexistent/state"],
        vec!["netcheck", "--netns", "../etc"],
    ] {
        let out = rocetap(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 2, "{args:?}: {err}");
        assert!(lines[0].starts_with("rocetap: netcheck: "), "{err}");
        assert!(lines[1].starts_with("hint: "), "{err}");
    }
    let t = TempDir::new("netcheck-badjson");
    std::fs::write(t.path("addr.json"), "not json").unwrap();
    std::fs::write(t.path("route.json"), "[]").unwrap();
    let out = rocetap(&["netcheck", "--from", t.0.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("addr.json: not JSON"));
}

// ------------------------------------------------------------------------------ live

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

fn netns_works() -> bool {
    Command::new("ip")
        .args(["netns", "list"])
        .output()
        .is_ok_and(|o| o.status.success())
        && Command::new("sysctl")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
}

/// Tears the scenario down when dropped, also when a test assertion fails.
struct Scenario(PathBuf);

impl Scenario {
    fn run(&self, arg: &str, rp_filter: &str) {
        let out = Command::new("bash")
            .arg(self.0.join("run.sh"))
            .arg(arg)
            .env("POD_RP_FILTER", rp_filter)
            .output()
            .expect("run.sh");
        assert!(
            out.status.success(),
            "run.sh {arg}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(self.0.join("run.sh"))
            .arg("down")
            .output();
    }
}

fn ip_json(ns: &str, args: &[&str]) -> Value {
    let out = Command::new("ip")
        .args(["-n", ns, "-j"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every (dst, src, iif, oif) question worth asking in this namespace.
fn generate_queries(ns: &str) -> Vec<String> {
    let addr = ip_json(ns, &["addr"]);
    let mut links = Vec::new();
    let mut locals = Vec::new();
    let mut dsts: BTreeSet<String> = [
        "198.18.1.5",
        "198.18.2.7",
        "198.18.1.9",
        "198.18.2.1",
        "198.19.8.1",
        "198.19.8.2",
        "198.19.8.11",
        "198.19.8.12",
        "198.19.8.200",
        "192.0.2.1",
        "192.0.2.2",
        "192.0.2.254",
        "169.254.1.1",
        "203.0.113.9",
        "127.0.0.1",
        "127.1.2.3",
        "0.0.0.0",
        "255.255.255.255",
        "198.18.0.1",
    ]
    .iter()
    .map(std::string::ToString::to_string)
    .collect();
    for l in addr.as_array().unwrap() {
        let name = l["ifname"].as_str().unwrap().to_string();
        for a in l["addr_info"].as_array().unwrap() {
            if a["family"] != "inet" {
                continue;
            }
            let local: std::net::Ipv4Addr = a["local"].as_str().unwrap().parse().unwrap();
            let len = a["prefixlen"].as_u64().unwrap() as u32;
            locals.push(local.to_string());
            if len <= 30 {
                let m = u32::MAX << (32 - len);
                let net = u32::from(local) & m;
                for h in [net, net + 1, net + 2, net | !m, (net | !m) - 1] {
                    dsts.insert(std::net::Ipv4Addr::from(h).to_string());
                }
            }
        }
        links.push(name);
    }
    let foreign = [
        "198.19.8.1",
        "198.19.8.2",
        "198.18.2.7",
        "192.0.2.2",
        "169.254.1.1",
        "203.0.113.9",
        "127.0.0.1",
    ];
    let mut q = Vec::new();
    for d in &dsts {
        q.push(d.clone());
        for s in locals.iter().map(String::as_str).chain(["203.0.113.9"]) {
            q.push(format!("{d} from {s}"));
        }
        for l in &links {
            q.push(format!("{d} oif {l}"));
            if l == "lo" {
                continue;
            }
            for s in locals.iter().map(String::as_str).chain(foreign) {
                if s != d {
                    q.push(format!("{d} from {s} iif {l}"));
                }
            }
        }
    }
    q
}

/// Asks the kernel and netcheck the same questions; returns (compared, mismatches).
fn compare_with_kernel(ns: &str) -> (usize, Vec<String>) {
    let queries = generate_queries(ns);
    let mut args = vec![
        "netcheck".to_string(),
        "--netns".into(),
        ns.into(),
        "-F".into(),
        "json".into(),
    ];
    for q in &queries {
        args.push("--route-get".into());
        args.push(q.clone());
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = rocetap(&a);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out);
    let ours = v["route_get"].as_array().unwrap();
    assert_eq!(ours.len(), queries.len());
    let mut bad = Vec::new();
    for (q, o) in queries.iter().zip(ours) {
        let out = Command::new("ip")
            .args(["-n", ns, "-j", "route", "get"])
            .args(q.split_whitespace())
            .output()
            .unwrap();
        let kernel = if out.status.success() {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            Ok(v[0].clone())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        };
        if let Some(m) = compare(&format!("{ns}: ip route get {q}"), &kernel, o) {
            bad.push(m);
        }
    }
    (queries.len(), bad)
}

/// Saves the namespace's state the way `kubectl exec ... ip -j` would, for --from.
fn dump_state(ns: &str, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for (file, args) in [
        ("addr.json", vec!["addr"]),
        ("route.json", vec!["route", "show", "table", "all"]),
        ("rule.json", vec!["rule"]),
    ] {
        std::fs::write(dir.join(file), ip_json(ns, &args).to_string()).unwrap();
    }
    let mut sysctl = serde_json::Map::new();
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            "sysctl",
            "-a",
            "-r",
            "^net\\.ipv4\\.(conf|ip_forward)",
        ])
        .output()
        .unwrap();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some((k, v)) = line.split_once(" = ") {
            sysctl.insert(k.to_string(), Value::String(v.to_string()));
        }
    }
    assert!(!sysctl.is_empty(), "no sysctls from {ns}");
    std::fs::write(dir.join("sysctl.json"), Value::Object(sysctl).to_string()).unwrap();
}

#[test]
fn live_scenario_verdicts_and_lookups_match_the_kernel() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !is_root() || !netns_works() {
        skip("needs root and network namespaces");
        return;
    }
    let Some(sc) = scenario() else { return };
    let scen = Scenario(sc);
    scen.run("down", "1");
    let tmp = TempDir::new("netcheck-live");
    let mut compared = 0;
    let mut bad = Vec::new();
    for (phase, cmd, rpf) in [
        ("broken", "up-broken", "1"),
        ("broken-loose", "up-broken", "2"),
        ("fixed", "up-fixed", "1"),
    ] {
        scen.run(cmd, rpf);
        for ns in ["pod1", "node1", "pod2", "node2"] {
            let (n, b) = compare_with_kernel(&format!("sbrarp-{ns}"));
            compared += n;
            bad.extend(b);
        }
        // --pid reads the namespace of a process in it
        let mut child = Command::new("ip")
            .args(["netns", "exec", "sbrarp-pod1", "sleep", "60"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let pid = child.id().to_string();
        let (c, v) = netcheck(&["--pid", &pid, "--sysfs-root", tmp.0.to_str().unwrap()]);
        let _ = child.kill();
        let _ = child.wait();
        let (want_code, want_ids) = if phase == "fixed" {
            (0, vec![])
        } else {
            (1, vec!["reply-path"])
        };
        check_verdict(
            &format!("live {phase}/pod1 --pid"),
            c,
            &v,
            want_code,
            &want_ids,
        );
        for (ns, code, ids) in expected_verdicts(phase) {
            let full = format!("sbrarp-{ns}");
            let (c, v) = netcheck(&["--netns", &full, "--sysfs-root", tmp.0.to_str().unwrap()]);
            check_verdict(&format!("live {phase}/{ns}"), c, &v, code, &ids);
            if ns == "pod1" && phase != "fixed" {
                // the effect named follows the pod's rp_filter
                let title = v["findings"][0]["title"].as_str().unwrap();
                let want = if phase == "broken" {
                    "gets no answer at all"
                } else {
                    "leave through net1"
                };
                assert!(title.contains(want), "{phase}: {title}");
            }
            // the same state, saved as `ip -j` dumps, gives the same verdict offline
            let dir = tmp.path(&format!("{phase}-{ns}"));
            dump_state(&full, &dir);
            let (c, v) = netcheck(&["--from", dir.to_str().unwrap()]);
            check_verdict(&format!("dumped {phase}/{ns}"), c, &v, code, &ids);
        }
    }
    eprintln!(
        "compared {compared} lookups with the kernel, {} differ",
        bad.len()
    );
    assert!(compared > 1000, "only {compared} lookups");
    assert!(
        bad.is_empty(),
        "{} of {compared} lookups differ from the kernel:\n{}",
        bad.len(),
        bad.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}

// ------------------------------------------------------------------ live: rule features

const RULES_NS: &str = "rocetap-nc-rules";

/// Deletes the synthetic namespace when dropped.
struct OwnNetns;

impl Drop for OwnNetns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", RULES_NS]).output();
    }
}

fn sh(cmds: &str) {
    for line in cmds
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let out = Command::new("ip")
            .args(["-n", RULES_NS])
            .args(line.split_whitespace())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "ip {line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn sysctl(kv: &[&str]) {
    let out = Command::new("ip")
        .args(["netns", "exec", RULES_NS, "sysctl", "-qw"])
        .args(kv)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sysctl {kv:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Policy rules of every kind (fwmark, from, to, iif, oif, not, goto, nop,
/// suppress_prefixlength, unreachable/prohibit/blackhole), route types, metrics,
/// prefsrc, secondary addresses, per-interface rp_filter / accept_local, and IPv6:
/// every answer must equal the kernel's.
#[test]
fn live_rule_features_match_the_kernel() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !is_root() || !netns_works() {
        skip("needs root and network namespaces");
        return;
    }
    let _ = Command::new("ip").args(["netns", "del", RULES_NS]).output();
    let out = Command::new("ip")
        .args(["netns", "add", RULES_NS])
        .output()
        .unwrap();
    assert!(out.status.success());
    let _guard = OwnNetns;
    sysctl(&[
        "net.ipv4.conf.all.rp_filter=0",
        "net.ipv4.conf.default.rp_filter=0",
    ]);
    sh("
        link set lo up
        link add d0 type veth peer name d0p
        link add d1 type veth peer name d1p
        link add d2 type veth peer name d2p
        link add d3 type veth peer name d3p
        link set d0 up
        link set d0p up
        link set d1 up
        link set d1p up
        link set d2 up
        link set d2p up
        link set d3 up
        addr add 198.18.20.1/24 dev d0
        addr add 198.18.20.2/24 dev d0
        addr add 198.18.40.1/24 dev d1
        addr add 198.18.60.1/30 dev d2
        addr add 198.18.198.1/32 dev d2
        addr add 198.51.100.81/24 dev d3
        addr add 2001:db8:10::1/64 dev d0 nodad
        addr add 2001:db8:20::1/64 dev d1 nodad
        route add default via 198.18.20.254 dev d0
        route add default via 198.18.40.254 dev d1 metric 100
        route add 198.18.100.0/23 via 198.18.40.254 dev d1
        route add 198.18.101.0/24 via 198.18.20.254 dev d0 metric 10
        route add 198.18.101.0/24 via 198.18.40.254 dev d1 metric 5
        route add 198.18.120.0/23 dev d1p scope link
        route add blackhole 198.18.140.0/23
        route add unreachable 198.18.142.0/23
        route add prohibit 198.18.144.0/23
        route add 198.18.160.0/23 via 198.18.60.2 dev d2 src 198.18.198.1
        route add default via 198.18.60.2 dev d2 table 200
        route add throw 198.18.100.0/23 table 200
        route add 198.18.20.0/24 dev d0 scope link src 198.18.20.2 table 200
        route add 198.18.180.0/23 via 198.18.40.254 dev d1 table 201
        route add default via 198.18.20.254 dev d0 table 201
        route add 198.18.182.0/24 dev d2 table 202
        route add unreachable default table 202
        route add 198.18.190.0/23 nexthop via 198.18.20.254 dev d0 nexthop via 198.18.40.254 dev d1 weight 2
        route add 2001:db8:50::/48 via 2001:db8:20::fe dev d1
        route add default via 2001:db8:10::fe dev d0 table 300
        rule add pref 100 fwmark 0x1/0xff lookup 200
        rule add pref 105 fwmark 0x2 nop
        rule add pref 110 from 198.18.40.1 lookup 201
        rule add pref 120 to 198.18.182.0/23 lookup 202
        rule add pref 130 iif d0 lookup 200
        rule add pref 140 oif d2 lookup 201
        rule add pref 150 not from 198.18.0.0/15 to 198.18.186.0/23 lookup 201
        rule add pref 160 lookup main suppress_prefixlength 0
        rule add pref 165 to 198.18.110.0/23 lookup 201
        rule add pref 170 to 198.18.146.0/23 unreachable
        rule add pref 171 to 198.18.148.0/23 prohibit
        rule add pref 172 to 198.18.150.0/23 blackhole
        rule add pref 180 to 198.18.152.0/23 goto 32000
        rule add pref 190 to 198.18.152.0/23 lookup 202
        rule add pref 32000 to 198.18.152.0/23 lookup 201
        rule add pref 32100 lookup 201
        -6 rule add pref 100 from 2001:db8:10::1 lookup 300
    ");
    sysctl(&[
        "net.ipv4.ip_forward=1",
        "net.ipv4.conf.d0.rp_filter=2",
        "net.ipv4.conf.d1.rp_filter=1",
        "net.ipv4.conf.d2.accept_local=1",
        "net.ipv4.conf.d3.forwarding=0",
    ]);
    let dsts = [
        "198.18.20.1",
        "198.18.20.2",
        "198.18.20.9",
        "198.18.20.255",
        "198.18.40.1",
        "198.18.40.9",
        "198.18.60.2",
        "198.18.60.3",
        "198.18.198.1",
        "198.18.100.9",
        "198.18.101.9",
        "198.18.110.1",
        "198.18.121.4",
        "198.18.140.1",
        "198.18.142.1",
        "198.18.144.1",
        "198.18.146.1",
        "198.18.148.1",
        "198.18.150.1",
        "198.18.152.1",
        "198.18.160.1",
        "198.18.180.1",
        "198.18.182.1",
        "198.18.183.1",
        "198.18.186.1",
        "198.18.191.7",
        "198.18.190.1",
        "198.51.100.153",
        "8.8.8.8",
        "127.0.0.1",
    ];
    let locals = [
        "198.18.20.1",
        "198.18.20.2",
        "198.18.40.1",
        "198.18.198.1",
        "198.51.100.81",
    ];
    let foreign = [
        "198.18.20.9",
        "198.18.40.9",
        "198.18.101.9",
        "198.18.121.4",
        "198.18.182.1",
        "198.18.160.1",
        "198.51.100.153",
        "203.0.113.77",
    ];
    let devs = ["d0", "d1", "d2", "d3", "d1p"];
    let mut queries = Vec::new();
    for d in dsts {
        for m in ["", " mark 1", " mark 2", " mark 0x101"] {
            queries.push(format!("{d}{m}"));
            for s in locals.iter().chain(["203.0.113.9"].iter()) {
                queries.push(format!("{d} from {s}{m}"));
            }
            for i in devs {
                for s in foreign.iter().chain(locals.iter()) {
                    if *s != d {
                        queries.push(format!("{d} from {s} iif {i}{m}"));
                    }
                }
            }
        }
        for o in devs.iter().chain(["lo"].iter()) {
            queries.push(format!("{d} oif {o}"));
            queries.push(format!("{d} from 198.18.20.1 oif {o}"));
        }
    }
    for d in [
        "2001:db8:10::1",
        "2001:db8:10::9",
        "2001:db8:20::9",
        "2001:db8:50::1",
        "2001:db8::1",
        "::1",
    ] {
        queries.push(d.to_string());
        for s in ["2001:db8:10::1", "2001:db8:20::1"] {
            queries.push(format!("{d} from {s}"));
        }
    }
    let mut args = vec![
        "netcheck".to_string(),
        "--netns".into(),
        RULES_NS.into(),
        "-F".into(),
        "json".into(),
    ];
    for q in &queries {
        args.push("--route-get".into());
        args.push(q.clone());
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = rocetap(&a);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out);
    let ours = v["route_get"].as_array().unwrap();
    let mut bad = Vec::new();
    for (q, o) in queries.iter().zip(ours) {
        let mut cmd = Command::new("ip");
        cmd.args(["-n", RULES_NS, "-j", "route", "get"])
            .args(q.split_whitespace());
        let out = cmd.output().unwrap();
        let kernel = if out.status.success() {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            Ok(v[0].clone())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        };
        if let Some(m) = compare(&format!("ip route get {q}"), &kernel, o) {
            bad.push(m);
        }
    }
    eprintln!(
        "compared {} lookups with the kernel, {} differ",
        queries.len(),
        bad.len()
    );
    assert!(
        bad.is_empty(),
        "{} of {} lookups differ from the kernel:\n{}",
        bad.len(),
        queries.len(),
        bad.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}
