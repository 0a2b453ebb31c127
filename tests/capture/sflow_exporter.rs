//! A real sFlow exporter: `pmacctd` with its `sfprobe` plugin samples (1 in 2) a port
//! that a RoCE sample is replayed into, and sends sFlow v5 to `rocetap sflow` in a
//! collector namespace; tcpdump records the same datagrams beside it.
//!
//! ```text
//! exporter ns:  rp0 ──veth── rp1 (pmacctd -i rp1, sfprobe 1/2, agent 198.51.100.1 sub-agent 7)
//!               tp0 (198.51.100.1) ──veth── tp1 (198.51.100.2, iptables in the loss run) :collector ns
//! ```
//!
//! 1. Accuracy and cross-check: the sample replayed 4 times; rocetap's scaled RoCE count
//!    holds the true count within the error it states; tshark decodes the recorded
//!    datagrams, and every field rocetap reports (agent, sub-agent, sequence numbers,
//!    sampling rate, pool, source id, the RoCE inside: opcodes, CE, CNP) equals it; the
//!    live report equals `rocetap sflow -r` of the recording.
//! 2. Loss: iptables drops every third datagram arriving in the collector namespace
//!    (`statistic --mode nth`; this kernel has no netem or tc drop action), after the
//!    first has arrived and until before the last; rocetap's lost count equals the drops
//!    the rule counted, exactly.
//!
//! Needs root, pmacctd (Debian `pmacct`), tcpreplay, tcpdump, tshark and iptables; otherwise
//! `SKIP:` (fails under CI). Bounded: about 30 s.

use crate::common::{bin, have, is_root, run_ok as run, skip, TempDir};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SAMPLE: &str = "congestion";
const RATE: u32 = 2;
const LOOPS: u32 = 4;

struct Ns(Vec<String>);
impl Drop for Ns {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// A child process killed (by PID) when dropped.
struct Proc(Child);
impl Proc {
    fn signal(&self, sig: &str) {
        let _ = Command::new("kill")
            .args([sig, &self.0.id().to_string()])
            .output();
    }
    fn finish(mut self, within: Duration) -> std::process::Output {
        self.signal("-INT");
        let t = Instant::now();
        while t.elapsed() < within {
            if let Ok(Some(_)) = self.0.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let c = std::mem::replace(
            &mut self.0,
            Command::new("true").spawn().expect("spawn true"),
        );
        let o = c.wait_with_output().expect("child output");
        std::mem::forget(self);
        o
    }
}
impl Drop for Proc {
    fn drop(&mut self) {
        // pmacctd forks its plugins: end them (by PID) with it
        for c in children(self.0.id()) {
            let _ = Command::new("kill").arg(c.to_string()).output();
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The children of `pid`, and theirs (from /proc/PID/task/*/children).
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let list = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        for c in list.split_whitespace().filter_map(|c| c.parse().ok()) {
            out.extend(children(c));
            out.push(c);
        }
    }
    out
}

fn nsx(ns: &str, args: &[&str]) -> std::process::Output {
    let mut v = vec!["ip", "netns", "exec", ns];
    v.extend_from_slice(args);
    run(&v)
}

fn spawn(ns: &str, args: &[&str], out: bool) -> Proc {
    Proc(
        Command::new("ip")
            .args(["netns", "exec", ns])
            .args(args)
            .stdin(Stdio::null())
            .stdout(if out { Stdio::piped() } else { Stdio::null() })
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{args:?}: {e}")),
    )
}

fn setup(pid: u32) -> Ns {
    let (e, c) = (format!("sflx-{pid}-exp"), format!("sflx-{pid}-col"));
    let ns = Ns(vec![e.clone(), c.clone()]);
    run(&["ip", "netns", "add", &e]);
    run(&["ip", "netns", "add", &c]);
    run(&[
        "ip", "-n", &e, "link", "add", "rp0", "type", "veth", "peer", "name", "rp1",
    ]);
    run(&[
        "ip", "-n", &e, "link", "add", "tp0", "type", "veth", "peer", "name", "tp1", "netns", &c,
    ]);
    for (n, i) in [(&e, "rp0"), (&e, "rp1"), (&e, "tp0"), (&c, "tp1")] {
        let _ = Command::new("ip")
            .args(["netns", "exec", n, "sysctl", "-qw"])
            .arg(format!("net.ipv6.conf.{i}.disable_ipv6=1"))
            .output();
        run(&["ip", "-n", n, "link", "set", i, "mtu", "9200", "up"]);
    }
    run(&[
        "ip",
        "-n",
        &e,
        "addr",
        "add",
        "198.51.100.1/24",
        "dev",
        "tp0",
    ]);
    run(&[
        "ip",
        "-n",
        &c,
        "addr",
        "add",
        "198.51.100.2/24",
        "dev",
        "tp1",
    ]);
    // static neighbours: no ARP on the link, only the sFlow datagrams
    let mac = |n: &str, i: &str| {
        let o = run(&["ip", "-n", n, "-br", "link", "show", i]);
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .nth(2)
            .unwrap()
            .to_string()
    };
    let (m0, m1) = (mac(&e, "tp0"), mac(&c, "tp1"));
    run(&[
        "ip",
        "-n",
        &e,
        "neigh",
        "replace",
        "198.51.100.2",
        "lladdr",
        &m1,
        "dev",
        "tp0",
        "nud",
        "permanent",
    ]);
    run(&[
        "ip",
        "-n",
        &c,
        "neigh",
        "replace",
        "198.51.100.1",
        "lladdr",
        &m0,
        "dev",
        "tp1",
        "nud",
        "permanent",
    ]);
    ns
}

fn pmacctd(dir: &TempDir, ns: &str) -> Proc {
    let conf = dir.path("pmacctd.conf");
    std::fs::write(
        &conf,
        format!(
            "daemonize: false\npcap_interface: rp1\nplugins: sfprobe\n\
             sfprobe_receiver: 198.51.100.2:6343\nsfprobe_agentip: 198.51.100.1\n\
             sfprobe_agentsubid: 7\nsampling_rate: {RATE}\nsnaplen: 128\n"
        ),
    )
    .unwrap();
    let p = spawn(ns, &["pmacctd", "-f", &conf.display().to_string()], false);
    std::thread::sleep(Duration::from_millis(1500));
    p
}

fn replay(ns: &str, sample: &Path, loops: u32) {
    nsx(
        ns,
        &[
            "tcpreplay",
            "-q",
            "-i",
            "rp0",
            "--pps",
            "2000",
            "--loop",
            &loops.to_string(),
            &sample.display().to_string(),
        ],
    );
}

/// tshark's values of `fields` for every datagram of `pcap`, each a list (occurrences).
fn tshark(pcap: &Path, fields: &[&str]) -> Vec<Vec<Vec<String>>> {
    let mut args = vec![
        "-r".to_string(),
        pcap.display().to_string(),
        "-d".into(),
        "udp.port==6343,sflow".into(),
        "-T".into(),
        "fields".into(),
        "-E".into(),
        "occurrence=a".into(),
        "-E".into(),
        "aggregator=,".into(),
    ];
    for f in fields {
        args.push("-e".into());
        args.push((*f).into());
    }
    let o = Command::new("tshark").args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            l.split('\t')
                .map(|c| {
                    c.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn class(op: u32) -> &'static str {
    match op {
        129 => "cnp",
        _ => match op & 0x1f {
            0..=5 | 22 | 23 => "send",
            6..=11 => "write",
            12 => "read_request",
            13..=16 => "read_response",
            17 | 18 => "ack",
            19 | 20 | 29 => "atomic",
            _ => "other",
        },
    }
}

fn json(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

fn collector(ns: &str) -> Proc {
    let p = spawn(
        ns,
        &[
            bin(),
            "sflow",
            "--listen",
            "198.51.100.2:6343",
            "-F",
            "json",
            "-q",
        ],
        true,
    );
    std::thread::sleep(Duration::from_millis(300));
    p
}

#[test]
fn pmacctd_sfprobe_to_rocetap_sflow() {
    if !is_root() {
        skip("needs root for network namespaces");
        return;
    }
    for t in ["pmacctd", "tcpreplay", "tcpdump", "tshark", "iptables"] {
        // pmacctd has -V, no --version (tshark's -V would capture)
        let v = t == "pmacctd"
            && Command::new(t)
                .arg("-V")
                .output()
                .is_ok_and(|o| o.status.success());
        if !have(t) && !v {
            skip(&format!(
                "{t} is not installed (Debian: pmacct, tcpreplay, tcpdump, tshark, iptables)"
            ));
            return;
        }
    }
    let _serial = crate::common::serial();
    let dir = TempDir::new("sflow-exporter");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(format!("{SAMPLE}.pcap"));
    let roce_per_pass = tshark(&sample, &["infiniband.bth.opcode"])
        .iter()
        .filter(|r| !r[0].is_empty())
        .count() as u64;
    let truth = roce_per_pass * u64::from(LOOPS);
    let ns = setup(std::process::id());
    let (e, c) = (ns.0[0].clone(), ns.0[1].clone());

    // 1. accuracy and the tshark cross-check
    let rec = dir.path("datagrams.pcap");
    let td = spawn(
        &c,
        &[
            "tcpdump",
            "-q",
            "-U",
            "-i",
            "tp1",
            "-w",
            &rec.display().to_string(),
            "udp",
            "dst",
            "port",
            "6343",
        ],
        false,
    );
    let col = collector(&c);
    let pm = pmacctd(&dir, &e);
    replay(&e, &sample, LOOPS);
    std::thread::sleep(Duration::from_millis(2500));
    drop(pm);
    std::thread::sleep(Duration::from_millis(300));
    let live = json(&col.finish(Duration::from_secs(5)));
    td.finish(Duration::from_secs(5));
    let agent = &live["agents"][0];
    assert_eq!(agent["agent"], "198.51.100.1", "{live}");
    assert_eq!(agent["sub_agent_id"], 7);
    let port = &agent["ports"][0];
    assert_eq!(port["sampling_rate"], RATE);
    let roce = &port["roce"];
    let (est, err) = (
        roce["estimate"].as_u64().unwrap(),
        roce["error_pct"].as_f64().unwrap(),
    );
    let off = (est as f64 - truth as f64).abs() / truth as f64 * 100.0;
    eprintln!(
        "true RoCE {truth}, rocetap ~{est} ±{err}% ({} samples): off by {off:.1}%",
        roce["samples"]
    );
    assert!(
        off <= err,
        "estimate {est} is {off:.1}% off the true {truth}, beyond the stated ±{err}%"
    );

    // the recording: rocetap reads it as it heard it
    let off_line = Command::new(bin())
        .args(["sflow", "-r", &rec.display().to_string(), "-F", "json"])
        .output()
        .unwrap();
    let rec_doc = json(&off_line);
    assert_eq!(
        rec_doc["agents"], live["agents"],
        "live and recorded reports differ"
    );

    // tshark's view of the same datagrams
    let t = tshark(
        &rec,
        &[
            "sflow_245.agent",
            "sflow_245.sub_agent_id",
            "sflow_245.sequence_number",
            "sflow.flow_sample.sampling_rate",
            "sflow.flow_sample.sample_pool",
            "sflow.flow_sample.index",
            "infiniband.bth.opcode",
            "ip.dsfield.ecn",
        ],
    );
    assert_eq!(live["datagrams"].as_u64().unwrap(), t.len() as u64);
    let seqs: Vec<u64> = t.iter().map(|r| r[2][0].parse().unwrap()).collect();
    assert_eq!(
        agent["sequence"]["last"].as_u64(),
        seqs.iter().max().copied()
    );
    let (mut samples, mut pool, mut ce) = (0u64, 0u64, 0u64);
    let mut classes = std::collections::BTreeMap::<&str, u64>::new();
    for r in &t {
        assert_eq!(r[0], ["198.51.100.1"]);
        assert_eq!(r[1], ["7"]);
        assert!(r[3].iter().all(|x| x == &RATE.to_string()));
        assert!(r[5]
            .iter()
            .all(|x| x == &port["source_id_index"].to_string()));
        samples += r[3].len() as u64;
        if let Some(p) = r[4].last() {
            pool = p.parse().unwrap();
        }
        for op in &r[6] {
            *classes.entry(class(op.parse().unwrap())).or_default() += 1;
        }
        // the first ECN is the datagram's own IP header
        ce += r[7].iter().skip(1).filter(|x| *x == "3").count() as u64;
    }
    assert_eq!(port["flow_samples"].as_u64(), Some(samples));
    assert_eq!(port["sample_pool"].as_u64(), Some(pool));
    assert_eq!(port["ce"]["samples"].as_u64().unwrap_or(0), ce);
    let ours: std::collections::BTreeMap<&str, u64> = port["opcodes"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str(), v["samples"].as_u64().unwrap()))
        .collect();
    assert_eq!(ours, classes);
    assert_eq!(
        port["cnps"]["samples"].as_u64().unwrap_or(0),
        classes.get("cnp").copied().unwrap_or(0)
    );

    // 2. loss on the collector's side: iptables drops every 3rd datagram arriving
    // there, counted by the rule
    let col = collector(&c);
    let pm = pmacctd(&dir, &e);
    replay(&e, &sample, 1);
    std::thread::sleep(Duration::from_millis(1500));
    let rule = [
        "-p",
        "udp",
        "--dport",
        "6343",
        "-m",
        "statistic",
        "--mode",
        "nth",
        "--every",
        "3",
        "--packet",
        "0",
        "-j",
        "DROP",
    ];
    let ipt = |op: &str| {
        let mut v = vec!["iptables", op, "INPUT"];
        v.extend_from_slice(&rule);
        nsx(&c, &v);
    };
    ipt("-A");
    replay(&e, &sample, LOOPS);
    std::thread::sleep(Duration::from_millis(2500));
    let q = nsx(&c, &["iptables", "-L", "INPUT", "-v", "-n", "-x"]);
    let q = String::from_utf8_lossy(&q.stdout).to_string();
    let dropped: u64 = q
        .lines()
        .find(|l| l.contains("DROP"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no drop count in {q}"));
    ipt("-D");
    replay(&e, &sample, 1);
    std::thread::sleep(Duration::from_millis(2500));
    drop(pm);
    let lossy = json(&col.finish(Duration::from_secs(5)));
    eprintln!(
        "iptables dropped {dropped}; rocetap lost {}",
        lossy["lost_datagrams"]
    );
    assert!(dropped > 0, "{q}");
    assert_eq!(lossy["lost_datagrams"].as_u64(), Some(dropped), "{lossy}");
    assert_eq!(lossy["agents"][0]["sequence"]["reordered"], 0);
}
