//! The agent's least privilege and private dumps, against the real agent as root on a
//! veth into a network namespace the test creates:
//! - every thread (`/proc/PID/task/*/status`) has exactly the kept capabilities in its
//!   effective, permitted and bounding sets, none inheritable or ambient, and
//!   `NoNewPrivs: 1`: CAP_NET_RAW, plus CAP_SYS_ADMIN and CAP_SYS_PTRACE while netcheck
//!   runs, CAP_IPC_LOCK when a source is an RDMA device; the agent still counts the replayed sample's truth and netcheck still reads a
//!   named namespace and one only a root process holds;
//! - each kept capability is needed: started without CAP_NET_RAW the agent cannot open
//!   its source; without CAP_SYS_PTRACE netcheck loses the namespace of a process with
//!   more capabilities than the agent; without CAP_SYS_ADMIN it cannot enter a named
//!   namespace; started with CAP_NET_RAW alone (no NET_ADMIN) it works;
//! - under umask 000 the dump directory is 0700 and every dump file 0600; a dump's
//!   frames hold no payload byte past the transport headers, RETH rkeys are 0, the
//!   sample's RETH virtual addresses do not appear, and `rocetap analyze` of the dump
//!   gives the sample's NAKs.
//!
//! Needs root, tcpreplay, setpriv and unshare; otherwise `SKIP:` (a failure under CI).

use crate::agent_priv_support;
use crate::agent_support;
use crate::common;

use agent_priv_support::*;
use agent_support::*;
use common::{bin, TempDir};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

#[test]
fn every_thread_keeps_only_what_it_uses_and_dumps_are_private() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay", "setpriv", "unshare"]) {
        return;
    }
    let tmp = TempDir::new("agent-priv");
    let wire = Wire::new("p");
    let held = held_namespace();
    let port = free_port();
    let dumps_dir = tmp.path("dumps");
    let log = tmp.path("agent.log");
    let held_ns = format!("pid:{}", held.0.id());
    let args = [
        "-i",
        &wire.host_if,
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--node-name",
        "privnode",
        "--netcheck-interval",
        "1s",
        "--netcheck-netns",
        &wire.ns,
        "--netcheck-netns",
        &held_ns,
        "--dump-dir",
        dumps_dir.to_str().unwrap(),
    ];
    let agent = start_wrapped("umask 000;", "", &args, &log);
    healthy(port);
    let pid = agent.0.id();
    assert_caps(pid, NET_RAW | SYS_PTRACE | SYS_ADMIN);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("privileges capabilities=net_raw,sys_ptrace,sys_admin no_new_privs=1"),
        "{text}"
    );

    // Still working: the sample's truth, and netcheck reads both namespaces.
    let sample_path = sample("read-loss.pcap");
    wire.replay(&sample_path);
    let want = truth("read-loss.pcap", "read_rerequests") as f64;
    let naks = truth("read-loss.pcap", "nak_psn_seq") as f64;
    wait_metric(
        port,
        "rocetap_netcheck_namespaces{node=\"privnode\"}",
        2.0,
        &log,
    );
    wait_metric(
        port,
        "rocetap_netcheck_errors{node=\"privnode\"}",
        0.0,
        &log,
    );
    wait_for("the sample's frames in /metrics", 30, || {
        let t = metrics(port);
        let frames = t
            .lines()
            .filter(|l| l.starts_with("rocetap_frames_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>();
        (frames >= 153.0).then_some(())
    });
    // The threads started since (netcheck's namespace threads) inherited the same.
    assert_caps(pid, NET_RAW | SYS_PTRACE | SYS_ADMIN);
    // /report re-analyzes the recorder: what it kept counts as the sample does.
    let (s, body) = get(port, "/report").unwrap();
    assert_eq!(s, 200);
    let rep: serde_json::Value = serde_json::from_str(&body).unwrap();
    let file = analyze_json(&sample_path);
    for k in [
        "roce_packets",
        "reads",
        "read_rerequests",
        "read_responses_resent",
        "read_missing_responses",
        "nak_psn_seq",
        "psn_gap_events",
        "missing_psns",
        "retransmitted_packets",
        "retransmission_episodes",
        "duplicate_packets",
        "malformed",
    ] {
        assert_eq!(rep["totals"][k], file["totals"][k], "/report {k}");
    }

    // A dump under umask 000: private, headers only, redacted, analyzed the same.
    signal(&agent, "USR1");
    let pcapng = wait_for("the SIGUSR1 dump", 30, || {
        dumps(&dumps_dir, "-signal.pcapng").into_iter().next()
    });
    let json = pcapng.with_extension("json");
    wait_for("the dump's JSON", 10, || json.exists().then_some(()));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dumps_dir), 0o700);
    assert_eq!(mode(&pcapng), 0o600);
    assert_eq!(mode(&json), 0o600);
    let back = analyze_json(&pcapng);
    assert_eq!(back["totals"]["nak_psn_seq"].as_f64(), Some(naks));
    assert_eq!(back["totals"]["read_rerequests"].as_f64(), Some(want));
    check_headers_only(&pcapng, &sample_path);
    stop_agent(agent);
    drop(held);
}

#[test]
fn without_netcheck_only_net_raw_is_kept() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay"]) {
        return;
    }
    let tmp = TempDir::new("agent-priv-raw");
    let wire = Wire::new("q");
    let port = free_port();
    let log = tmp.path("agent.log");
    let args = [
        "-i",
        &wire.host_if,
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--node-name",
        "rawnode",
        "--netcheck-interval",
        "0",
    ];
    let agent = start_agent(&args, &log);
    healthy(port);
    assert_caps(agent.0.id(), NET_RAW);
    wire.replay(&sample("loss-upstream.pcap"));
    let want = truth("loss-upstream.pcap", "nak_psn_seq") as f64;
    wait_for("the sample's NAKs", 30, || {
        let t = metrics(port);
        let got: f64 = t
            .lines()
            .filter(|l| l.starts_with("rocetap_naks_total{") && l.contains("psn_sequence_error"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        (got == want).then_some(())
    });
    stop_agent(agent);
    // A source that is an RDMA device (named in sysfs' class/infiniband, here a fake
    // tree): CAP_IPC_LOCK stays too, for the sniffer's pinned ring when it is reopened.
    let sysfs = tmp.path("sys");
    std::fs::create_dir_all(sysfs.join("class/infiniband").join(&wire.host_if)).unwrap();
    let port = free_port();
    let mut args = args.to_vec();
    let listen = format!("127.0.0.1:{port}");
    args[3] = &listen;
    args.extend(["--sysfs-root", sysfs.to_str().unwrap()]);
    let agent = start_agent(&args, &log);
    healthy(port);
    assert_caps(agent.0.id(), NET_RAW | IPC_LOCK);
    stop_agent(agent);
}

/// Each kept capability is needed, each dropped one is not.
#[test]
fn each_kept_capability_is_needed() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay", "setpriv", "unshare"]) {
        return;
    }
    let tmp = TempDir::new("agent-priv-need");
    let wire = Wire::new("n");
    let held = held_namespace();
    let held_ns = format!("pid:{}", held.0.id());
    let run = |wrap: &str, tag: &str, netcheck: bool| {
        let port = free_port();
        let log = tmp.path(&format!("{tag}.log"));
        let listen = format!("127.0.0.1:{port}");
        let mut args = vec![
            "-i",
            wire.host_if.as_str(),
            "--listen",
            &listen,
            "--node-name",
            "n",
        ];
        if netcheck {
            args.extend([
                "--netcheck-interval",
                "1s",
                "--netcheck-netns",
                &wire.ns,
                "--netcheck-netns",
                &held_ns,
            ]);
        } else {
            args.extend(["--netcheck-interval", "0"]);
        }
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        (start_wrapped("", wrap, &args, &log), port, log)
    };
    // CAP_NET_RAW alone (no NET_ADMIN, no DAC override) opens and captures.
    let (agent, port, _) = run("setpriv --bounding-set -all,+net_raw", "raw", false);
    healthy(port);
    assert_caps(agent.0.id(), NET_RAW);
    stop_agent(agent);
    // Without CAP_NET_RAW the source cannot be opened: a one-line error, exit 2.
    let (mut agent, _, log) = run("setpriv --bounding-set -net_raw", "noraw", false);
    let st = wait_for("the agent to fail", 20, || {
        agent.0.try_wait().ok().flatten()
    });
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(st.code(), Some(2), "{text}");
    assert!(
        text.to_lowercase().contains("permission") || text.contains("CAP_NET_RAW"),
        "{text}"
    );
    // Without CAP_SYS_PTRACE netcheck loses the namespace a full-capability process holds.
    let (agent, port, log) = run("setpriv --bounding-set -sys_ptrace", "noptrace", true);
    healthy(port);
    assert_caps(agent.0.id(), NET_RAW | SYS_ADMIN);
    wait_metric(port, "rocetap_netcheck_namespaces{node=\"n\"}", 1.0, &log);
    stop_agent(agent);
    // Without CAP_SYS_ADMIN it cannot enter the named namespace.
    let (agent, port, _) = run("setpriv --bounding-set -sys_admin", "noadmin", true);
    healthy(port);
    assert_caps(agent.0.id(), NET_RAW | SYS_PTRACE);
    wait_for("a netcheck error", 30, || {
        let t = metrics(port);
        let v = t
            .lines()
            .find(|l| l.starts_with("rocetap_netcheck_errors{"))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
        v.filter(|v| *v >= 1.0).map(|_| ())
    });
    stop_agent(agent);
    drop(held);
}

#[test]
fn redact_takes_on_or_off() {
    let o = Command::new(bin())
        .args(["agent", "-i", "lo", "--redact", "maybe"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--redact: 'maybe': use on or off"), "{err}");
    // The same parser for the config file's key.
    let tmp = TempDir::new("agent-priv-redact");
    let cfg = tmp.path("agent.yaml");
    std::fs::write(&cfg, "interface: [lo]\nredact: sometimes\n").unwrap();
    let o = Command::new(bin())
        .args(["agent", "--config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("'redact': 'sometimes': use on or off"),
        "{err}"
    );
}
