//! `rocetap agent` with many sources, and sources that come and go: one memory budget
//! (`--memory-limit`) holds the process' resident size under it with eight sources full
//! of traffic, a smaller budget too; a source whose interface is deleted is reported
//! (`rocetap_source_up` 0, a log line, `/healthz` 503 with the reason) while `/metrics`
//! still answers, and is reopened when the interface comes back, its traffic counted
//! again — with one source as with several.
//!
//! Eight veth pairs go into one network namespace the test creates (`rtsrc-PID`,
//! removed by name at the end); tcpreplay sends samples and `rocetap synth many-qp`
//! traffic from it. Needs root and tcpreplay; otherwise `SKIP:` (a failure under CI).

use crate::agent_support;
use crate::common;

use agent_support::*;
use common::{bin, run_ok as run, TempDir};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// One namespace holding the far ends of `n` veth pairs whose near ends stay in the root
/// namespace, where the agent captures; all removed on drop (by name).
struct Wires {
    ns: String,
    host: Vec<String>,
    peer: Vec<String>,
}

impl Wires {
    fn new(n: usize) -> Wires {
        let pid = std::process::id();
        let w = Wires {
            ns: format!("rtsrc-{pid}"),
            host: (0..n)
                .map(|i| format!("rs{:x}h{i}", pid % 0xfffff))
                .collect(),
            peer: (0..n)
                .map(|i| format!("rs{:x}p{i}", pid % 0xfffff))
                .collect(),
        };
        run(&["ip", "netns", "add", &w.ns]);
        for i in 0..n {
            w.link(i);
        }
        w
    }

    /// Creates (again) the `i`-th pair and brings both ends up.
    fn link(&self, i: usize) {
        let (h, p) = (&self.host[i], &self.peer[i]);
        run(&[
            "ip", "link", "add", h, "type", "veth", "peer", "name", p, "netns", &self.ns,
        ]);
        let _ = Command::new("sysctl")
            .arg("-qw")
            .arg(format!("net.ipv6.conf.{h}.disable_ipv6=1"))
            .output();
        let _ = Command::new("ip")
            .args(["netns", "exec", &self.ns, "sysctl", "-qw"])
            .arg(format!("net.ipv6.conf.{p}.disable_ipv6=1"))
            .output();
        run(&["ip", "link", "set", h, "mtu", "9000", "up"]);
        run(&["ip", "-n", &self.ns, "link", "set", p, "mtu", "9000", "up"]);
    }

    /// Deletes the `i`-th pair (both ends go).
    fn unlink(&self, i: usize) {
        run(&["ip", "link", "del", &self.host[i]]);
    }

    /// tcpreplay of `pcap` into the `i`-th wire, at `pps` packets a second (0: as timed).
    fn replay(&self, i: usize, pcap: &Path, pps: u32) -> std::process::Child {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns, "tcpreplay", "-q"]);
        if pps > 0 {
            c.arg(format!("--pps={pps}"));
        }
        c.args(["-i", &self.peer[i]])
            .arg(pcap)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    }
}

impl Drop for Wires {
    fn drop(&mut self) {
        for h in &self.host {
            let _ = Command::new("ip").args(["link", "del", h]).output();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
    }
}

/// VmRSS and VmHWM of a process, in bytes.
fn resident(pid: u32) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib = |k: &str| -> u64 {
        let l = s.lines().find(|l| l.starts_with(k)).unwrap();
        l[k.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .unwrap()
            << 10
    };
    (kib("VmRSS:"), kib("VmHWM:"))
}

fn metrics(port: u16) -> String {
    let (status, body) = get(port, "/metrics").expect("/metrics answers");
    assert_eq!(status, 200);
    body
}

fn series(text: &str, name: &str, source: &str) -> f64 {
    metric(text, &format!("{name}{{node=\"t\",source=\"{source}\"}}")).unwrap_or(-1.0)
}

fn sum_of(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Eight sources with traffic on every one and far more flows than the analyzers' share:
/// the resident size (and its peak) stays under the budget, and what did not fit is
/// counted and logged. The budget comes from the command line or (`in_file`) from the
/// `--config` file's `memory_limit`.
fn eight_sources_within(limit: &str, bytes: u64, in_file: bool, tmp: &TempDir, many: &Path) {
    let wires = Wires::new(8);
    let port = free_port();
    let log = tmp.path(&format!("agent-{limit}.log"));
    let mut args = vec![
        "--listen".to_string(),
        format!("127.0.0.1:{port}"),
        "--node-name".into(),
        "t".into(),
        "--netcheck-interval".into(),
        "0".into(),
        "--idle-timeout".into(),
        "10m".into(),
    ];
    if in_file {
        let cfg = tmp.path("agent.yaml");
        std::fs::write(&cfg, format!("memory_limit: {limit}\n")).unwrap();
        args.extend(["--config".into(), cfg.display().to_string()]);
    } else {
        args.extend(["--memory-limit".into(), limit.into()]);
    }
    for h in &wires.host {
        args.push("-i".into());
        args.push(h.clone());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let agent = start_agent(&args, &log);
    healthy(port);
    let pid = agent.0.id();
    let m = metrics(port);
    assert_eq!(
        metric(&m, "rocetap_memory_budget_bytes{node=\"t\"}"),
        Some(bytes as f64)
    );
    // Every wire: a sample with NAKs, then many QPs.
    let mut kids: Vec<_> = (0..8)
        .map(|i| wires.replay(i, &sample("loss-upstream.pcap"), 0))
        .collect();
    for k in &mut kids {
        assert!(k.wait().unwrap().success());
    }
    let mut kids: Vec<_> = (0..8).map(|i| wires.replay(i, many, 8_000)).collect();
    let mut peak = 0;
    while kids.iter_mut().any(|k| k.try_wait().unwrap().is_none()) {
        peak = peak.max(resident(pid).0);
        std::thread::sleep(Duration::from_millis(200));
    }
    // /report re-analyzes the recorders: its transient memory is in the budget too.
    let (status, report) = get(port, "/report").unwrap();
    assert_eq!(status, 200);
    // Its analysis holds fewer flows than came: a warning finding says so.
    assert!(
        report.contains("\"flows_not_followed\""),
        "{}",
        &report[..report.len().min(2000)]
    );
    std::thread::sleep(Duration::from_secs(2));
    let m = metrics(port);
    let (rss, hwm) = resident(pid);
    eprintln!(
        "--memory-limit {limit}: VmRSS {} MiB, VmHWM {} MiB (peak seen {} MiB); flows tracked {}, \
         packets of flows not followed {}, frames {}, dropped {}",
        rss >> 20,
        hwm >> 20,
        peak >> 20,
        sum_of(&m, "rocetap_connections_tracked"),
        metric_sum_what(&m, "flow_packets"),
        sum_of(&m, "rocetap_frames_total"),
        sum_of(&m, "rocetap_capture_dropped_packets_total"),
    );
    assert!(hwm < bytes, "VmHWM {hwm} over the budget {bytes}");
    assert!(sum_of(&m, "rocetap_frames_total") > 100_000.0, "{m}");
    // More flows came than the analyzers' share holds: counted, and logged once a source.
    assert!(metric_sum_what(&m, "flow_packets") > 0.0, "{m}");
    let text = std::fs::read_to_string(&log).unwrap();
    let lines = text
        .lines()
        .filter(|l| l.contains("memory_limit") && l.contains("what=flows"))
        .count();
    assert!((1..=8).contains(&lines), "{text}");
    assert!(sum_of(&m, "rocetap_memory_used_bytes") > 0.0);
    stop_agent(agent);
}

fn metric_sum_what(text: &str, what: &str) -> f64 {
    text.lines()
        .filter(|l| {
            l.starts_with("rocetap_memory_limited_total{")
                && l.contains(&format!("what=\"{what}\""))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn eight_sources_stay_within_one_memory_budget() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay"]) {
        return;
    }
    let tmp = TempDir::new("agent-sources");
    let many = tmp.path("many.pcap");
    // 4,000 RC connections (8,000 flows) a source: 64,000 flows in all, beyond what
    // either budget lets the analyzers hold.
    run(&[
        bin(),
        "synth",
        "many-qp",
        "--qps",
        "4000",
        "--peers",
        "64",
        "--packets",
        "40000",
        "--snaplen",
        "128",
        "-o",
        many.to_str().unwrap(),
    ]);
    eight_sources_within("192M", 192 << 20, false, &tmp, &many);
    eight_sources_within("80M", 80 << 20, true, &tmp, &many);
}

#[test]
fn too_small_a_budget_is_a_one_line_error() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&[]) {
        return;
    }
    let wires = Wires::new(8);
    let mut args = vec!["agent", "--memory-limit", "40M", "--listen", "127.0.0.1:0"];
    for h in &wires.host {
        args.push("-i");
        args.push(h);
    }
    let o = Command::new(bin()).args(&args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--memory-limit 40M is too small for 8 sources: give at least 80M"),
        "{err}"
    );
    assert!(err.trim().lines().count() <= 2, "{err}");
    for (bad, says) in [("1K", "give 32M to 1024G"), ("lots", "bad size 'lots'")] {
        let o = Command::new(bin())
            .args(["agent", "-i", &wires.host[0], "--memory-limit", bad])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("--memory-limit") && err.contains(says),
            "{err}"
        );
    }
}

/// Deletes the `lost` wire of a running agent with `n` sources, each read in `lanes`
/// lanes, checks it is reported and the agent still answers, recreates it and checks its
/// traffic is counted again (with lanes: every lane back in its fanout group, the traffic
/// counted once).
fn lose_and_find(n: usize, lost: usize, lanes: u16) {
    let tmp = TempDir::new("agent-reopen");
    let wires = Wires::new(n);
    let port = free_port();
    let log = tmp.path("agent.log");
    let mut args = vec![
        "--listen".to_string(),
        format!("127.0.0.1:{port}"),
        "--node-name".into(),
        "t".into(),
        "--netcheck-interval".into(),
        "0".into(),
    ];
    for h in &wires.host {
        args.push("-i".into());
        args.push(h.clone());
    }
    if lanes > 1 {
        args.extend(["--lanes".into(), lanes.to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut agent = start_agent(&args, &log);
    healthy(port);
    // Each source (each lane) is read and analyzed on a thread of its own.
    assert_eq!(
        source_threads(agent.0.id()),
        n * usize::from(lanes),
        "source threads with {n} sources in {lanes} lanes"
    );
    let src = wires.host[lost].clone();
    let naks = truth("loss-upstream.pcap", "nak_psn_seq") as f64;
    let nak_series =
        format!("rocetap_naks_total{{node=\"t\",source=\"{src}\",code=\"psn_sequence_error\"}}");
    assert!(wires
        .replay(lost, &sample("loss-upstream.pcap"), 0)
        .wait()
        .unwrap()
        .success());
    wait_for("the first replay's NAKs", 30, || {
        (metric(&metrics(port), &nak_series) == Some(naks)).then_some(())
    });
    assert_eq!(series(&metrics(port), "rocetap_source_up", &src), 1.0);

    wires.unlink(lost);
    wait_for("rocetap_source_up 0", 10, || {
        (series(&metrics(port), "rocetap_source_up", &src) == 0.0).then_some(())
    });
    let line = wait_for("the log line of the loss", 10, || {
        std::fs::read_to_string(&log)
            .ok()?
            .lines()
            .find(|l| l.contains("source_lost") && l.contains(&src))
            .map(str::to_string)
    });
    assert!(
        line.contains("disappeared") || line.contains("No such device"),
        "{line}"
    );
    let (status, why) = get(port, "/healthz").unwrap();
    assert_eq!(status, 503, "{why}");
    assert!(why.contains(&src) && why.contains("reopening"), "{why}");
    assert!(agent.0.try_wait().unwrap().is_none(), "the agent exited");
    std::thread::sleep(Duration::from_secs(3));
    assert!(agent.0.try_wait().unwrap().is_none(), "the agent exited");
    let m = metrics(port);
    assert_eq!(series(&m, "rocetap_source_losses_total", &src), 1.0);
    assert_eq!(metric(&m, "rocetap_up{node=\"t\"}"), Some(1.0));

    wires.link(lost);
    // Backoff: 1 s, 2 s, 4 s, ... since the loss; the next attempt finds it.
    wait_for("rocetap_source_up 1 again", 40, || {
        (series(&metrics(port), "rocetap_source_up", &src) == 1.0).then_some(())
    });
    wait_for("the log line of the return", 5, || {
        std::fs::read_to_string(&log)
            .ok()?
            .contains("source_back")
            .then_some(())
    });
    healthy(port);
    assert!(wires
        .replay(lost, &sample("loss-upstream.pcap"), 0)
        .wait()
        .unwrap()
        .success());
    wait_for("the second replay's NAKs", 30, || {
        (metric(&metrics(port), &nak_series) == Some(2.0 * naks)).then_some(())
    });
    let m = metrics(port);
    assert_eq!(series(&m, "rocetap_source_reopens_total", &src), 1.0);
    stop_agent(agent);
}

#[test]
fn one_source_lost_and_back() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay"]) {
        return;
    }
    lose_and_find(1, 0, 1);
}

#[test]
fn one_of_three_sources_lost_and_back() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay"]) {
        return;
    }
    lose_and_find(3, 1, 1);
}

#[test]
fn a_source_in_lanes_lost_and_back() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay"]) {
        return;
    }
    lose_and_find(2, 0, 2);
}
