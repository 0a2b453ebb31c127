//! Helpers shared by the agent's integration tests (`tests/agent.rs`, its modules under
//! `tests/agent/`): a veth into a namespace the test creates, the agent and Prometheus as
//! child processes killed on drop, plain HTTP GETs, the truth of the samples.

#![allow(dead_code)]

use crate::common::{bin, have, is_root, run_ok as run, skip, TempDir};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The live tests change network namespaces: one at a time. The binary's one lock
/// (`common::serial()`), so they do not overlap the other tests that hold it either.
pub use crate::common::SERIAL as NETNS_LOCK;

pub fn ready(tools: &[&str]) -> bool {
    if !is_root() {
        skip("needs root for network namespaces");
        return false;
    }
    for t in tools {
        if !have(t) {
            skip(&format!("{t} is not installed (.ci/run installs it)"));
            return false;
        }
    }
    true
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GET `path` from 127.0.0.1:`port`: (status, body).
pub fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

pub fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < until,
            "timed out after {secs} s waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// A namespace holding one end of a veth pair whose other end is in the root namespace,
/// where the agent captures; removed on drop.
pub struct Wire {
    pub ns: String,
    pub host_if: String,
    pub ns_if: String,
}

impl Wire {
    pub fn new(tag: &str) -> Wire {
        let pid = std::process::id();
        let w = Wire {
            ns: format!("rtag-{pid}-{tag}"),
            host_if: format!("ra{:x}{tag}h", pid % 0xfffff),
            ns_if: format!("ra{:x}{tag}p", pid % 0xfffff),
        };
        run(&["ip", "netns", "add", &w.ns]);
        run(&[
            "ip", "link", "add", &w.host_if, "type", "veth", "peer", "name", &w.ns_if, "netns",
            &w.ns,
        ]);
        let _ = Command::new("sysctl")
            .arg("-qw")
            .arg(format!("net.ipv6.conf.{}.disable_ipv6=1", w.host_if))
            .output();
        let _ = Command::new("ip")
            .args(["netns", "exec", &w.ns, "sysctl", "-qw"])
            .arg(format!("net.ipv6.conf.{}.disable_ipv6=1", w.ns_if))
            .output();
        run(&["ip", "link", "set", &w.host_if, "mtu", "9000", "up"]);
        run(&[
            "ip", "-n", &w.ns, "link", "set", &w.ns_if, "mtu", "9000", "up",
        ]);
        w
    }

    /// Sends `pcap` into the wire from the namespace side.
    pub fn replay(&self, pcap: &Path) {
        run(&[
            "ip",
            "netns",
            "exec",
            &self.ns,
            "tcpreplay",
            "-q",
            "-i",
            &self.ns_if,
            pcap.to_str().unwrap(),
        ]);
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .output();
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
    }
}

/// The agent's threads named as the sources' threads (`rocetap-src-N`: one per source,
/// one per lane).
pub fn source_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.starts_with("rocetap-src-"))
        })
        .count()
}

/// A child process killed (by PID) on drop.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn signal(p: &Proc, sig: &str) {
    run(&["kill", "-s", sig, &p.0.id().to_string()]);
}

pub fn sample(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name)
}

pub fn truth(name: &str, key: &str) -> u64 {
    let t: Value =
        serde_json::from_slice(&std::fs::read(sample(&format!("{name}.truth.json"))).unwrap())
            .unwrap();
    t["observable"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("{name}: no truth for {key}"))
}

pub fn start_agent(args: &[&str], log: &Path) -> Proc {
    let err = std::fs::File::create(log).unwrap();
    Proc(
        Command::new(bin())
            .arg("agent")
            .args(args)
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .unwrap(),
    )
}

/// SIGTERM, then the agent must exit 0 within 20 s.
pub fn stop_agent(agent: Proc) {
    signal(&agent, "TERM");
    let mut agent = agent;
    let status = wait_for("the agent to exit on SIGTERM", 20, || {
        agent.0.try_wait().ok().flatten()
    });
    assert!(status.success(), "exit status {status:?}");
}

pub fn healthy(port: u16) {
    wait_for("the agent's /healthz", 30, || {
        get(port, "/healthz").filter(|(s, _)| *s == 200)
    });
}

/// The value of one series in a /metrics text (`name{labels}` as written).
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

/// The values of an instant query through Prometheus' HTTP API.
pub fn prom_query(port: u16, q: &str) -> Vec<(Value, f64)> {
    let enc: String = q
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let Some((200, body)) = get(port, &format!("/api/v1/query?query={enc}")) else {
        return Vec::new();
    };
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    v["data"]["result"]
        .as_array()
        .map(|r| {
            r.iter()
                .map(|x| {
                    (
                        x["metric"].clone(),
                        x["value"][1]
                            .as_str()
                            .unwrap_or("nan")
                            .parse()
                            .unwrap_or(f64::NAN),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

pub fn start_prometheus(tmp: &TempDir, target: u16) -> (Proc, u16) {
    start_prometheus_with(
        tmp,
        &format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: rocetap\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
        ),
    )
}

/// Prometheus on a free loopback port with `config` as its prometheus.yml, ready.
pub fn start_prometheus_with(tmp: &TempDir, config: &str) -> (Proc, u16) {
    let port = free_port();
    let cfg = tmp.path("prometheus.yml");
    std::fs::write(&cfg, config).unwrap();
    let p = Proc(
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!(
                "--storage.tsdb.path={}",
                tmp.path("tsdb").display()
            ))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(tmp.path("prometheus.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    wait_for("Prometheus to be ready", 60, || {
        get(port, "/-/ready").filter(|(s, _)| *s == 200)
    });
    (p, port)
}

pub struct Scenario(pub PathBuf);

impl Scenario {
    pub fn find() -> Option<Scenario> {
        let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/scenarios/sbr-arp");
        if d.join("run.sh").is_file() {
            Some(Scenario(d))
        } else {
            skip(&format!("{} not found", d.display()));
            None
        }
    }
    pub fn run(&self, arg: &str) {
        let o = Command::new("bash")
            .arg(self.0.join("run.sh"))
            .arg(arg)
            .env("POD_RP_FILTER", "1")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "sbr-arp {arg}: {}",
            String::from_utf8_lossy(&o.stderr)
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

pub fn dumps(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(ext))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub fn analyze_json(file: &Path) -> Value {
    let o = Command::new(bin())
        .args(["analyze", "--format", "json"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "analyze {}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

// ---- the fleet test (tests/agent/fleet.rs): agents inside namespaces, replays from the host

impl Wire {
    /// Gives the two ends addresses (`HOST/LEN`, `NS/LEN`) so that the root namespace
    /// reaches what listens inside the namespace.
    pub fn address(&self, host: &str, ns: &str) {
        run(&["ip", "addr", "add", host, "dev", &self.host_if]);
        run(&["ip", "-n", &self.ns, "addr", "add", ns, "dev", &self.ns_if]);
    }

    /// Sends `pcap` into the namespace from the root namespace's end, `pps` packets a
    /// second (so that scrapes see the counters grow).
    pub fn replay_from_host(&self, pcap: &Path, pps: u32) {
        run(&[
            "tcpreplay",
            "-q",
            &format!("--pps={pps}"),
            "-i",
            &self.host_if,
            pcap.to_str().unwrap(),
        ]);
    }
}

/// `rocetap agent ARGS` inside the network namespace `ns` (`ip netns exec` execs it: the
/// PID is the agent's).
pub fn start_agent_in(ns: &str, args: &[&str], log: &Path) -> Proc {
    let err = std::fs::File::create(log).unwrap();
    Proc(
        Command::new("ip")
            .args(["netns", "exec", ns, bin(), "agent"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .unwrap(),
    )
}

/// `tcprewrite --pnat=PNAT` of `input` into `out`.
pub fn rewrite(input: &Path, out: &Path, pnat: &str) {
    run(&[
        "tcprewrite",
        &format!("--pnat={pnat}"),
        "-i",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
}
