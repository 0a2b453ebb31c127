//! `rocetap agent` with the real parts: the agent captures a veth in a network namespace
//! the test creates while tcpreplay sends a sample with known truth into it; a real
//! Prometheus server (Debian's package, on loopback) scrapes it and the test finds the
//! truth numbers through Prometheus' HTTP API; `promtool check metrics` lints /metrics;
//! netcheck runs on the sbr-arp scenario's namespaces (the broken pod's finding appears as
//! a metric with its namespace and clears once the pod is fixed); `--dump-on` writes an
//! annotated pcapng that `rocetap analyze` reads back with the same NAKs; SIGUSR1 dumps;
//! a full disk fails a dump cleanly; SIGTERM ends the agent with nothing half-written.
//! Bad configurations are one-line errors (exit 2), root or not.
//!
//! The live tests need root, tcpreplay, prometheus and promtool; otherwise they print
//! `SKIP:` (and fail under CI).

use crate::agent_support;
use crate::common;

use agent_support::*;
use common::{bin, in_ci, is_root, run_ok as run, TempDir};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;
#[test]
fn prometheus_scrapes_the_truth_and_netcheck_follows_the_pods() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay", "prometheus", "promtool", "tshark"]) {
        return;
    }
    let Some(scen) = Scenario::find() else { return };
    scen.run("down");
    scen.run("up-broken");
    let tmp = TempDir::new("agent-e2e");
    let wire = Wire::new("e");
    // A second source: every series carries its own `source`.
    let wire2 = Wire::new("g");
    let port = free_port();
    let dump_dir = tmp.path("dumps");
    let log = tmp.path("agent.log");
    let args = [
        "-i",
        &wire.host_if,
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--node-name",
        "testnode",
        "--netcheck-interval",
        "1s",
        "--netcheck-netns",
        "sbrarp-pod1",
        "--netcheck-netns",
        "host",
        "--dump-dir",
        dump_dir.to_str().unwrap(),
        "--dump-on",
        "nak_psn_seq > 0",
        "--window",
        "5s",
        "--log-format",
        "json",
        "-i",
        &wire2.host_if,
    ];
    let agent = start_agent(&args, &log);
    healthy(port);
    let (_prom, pport) = start_prometheus(&tmp, port);
    wire.replay(&sample("loss-upstream.pcap"));
    wire2.replay(&sample("clean-rc.pcap"));

    // The truth, through Prometheus.
    let want = truth("loss-upstream.pcap", "nak_psn_seq") as f64;
    let q = "sum(rocetap_naks_total{node=\"testnode\",code=\"psn_sequence_error\"})";
    wait_for(
        "Prometheus to hold the NAKs of loss-upstream.pcap",
        60,
        || {
            prom_query(pport, q)
                .first()
                .filter(|(_, v)| *v == want)
                .map(|_| ())
        },
    );
    for (key, series) in [
        (
            "retransmitted_packets",
            "sum(rocetap_retransmitted_packets_total{node=\"testnode\"})",
        ),
        (
            "psn_gap_events",
            "sum(rocetap_psn_gap_events_total{node=\"testnode\"})",
        ),
    ] {
        let want = truth("loss-upstream.pcap", key) as f64;
        wait_for(key, 30, || {
            prom_query(pport, series)
                .first()
                .filter(|(_, v)| *v == want)
                .map(|_| ())
        });
    }
    // The broken pod's reply-path finding, labelled with its netns.
    let q =
        "rocetap_netcheck_findings{node=\"testnode\",netns=\"sbrarp-pod1\",check=\"reply-path\"}";
    wait_for(
        "the reply-path finding of sbrarp-pod1 in Prometheus",
        60,
        || {
            prom_query(pport, q)
                .first()
                .filter(|(_, v)| *v >= 1.0)
                .map(|_| ())
        },
    );

    // /metrics itself: promtool's lint, and every name the alerting rules use.
    let (_, text) = get(port, "/metrics").unwrap();
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lint.stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = lint.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let names = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/metrics.txt");
    if let Ok(list) = std::fs::read_to_string(&names) {
        for n in list
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            assert!(
                text.lines().any(|l| l.starts_with(&format!("# TYPE {n} "))),
                "deploy/metrics.txt names {n}, which /metrics does not export"
            );
        }
    }

    // The rule's dump: an annotated pcapng that analyze reads back with the same NAKs.
    let pcapng = wait_for("the --dump-on dump", 30, || {
        let d = dumps(&dump_dir, "-rule.pcapng").into_iter().next();
        if d.is_none() {
            eprintln!(
                "agent log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            eprintln!("healthz: {:?}", get(port, "/healthz"));
        }
        d
    });
    let back = analyze_json(&pcapng);
    assert_eq!(
        back["totals"]["nak_psn_seq"].as_f64(),
        Some(want),
        "{}",
        pcapng.display()
    );
    let json: Value =
        serde_json::from_slice(&std::fs::read(pcapng.with_extension("json")).unwrap()).unwrap();
    assert_eq!(json["schema"], "rocetap.analyze/1");
    assert_eq!(json["totals"]["nak_psn_seq"].as_f64(), Some(want));
    let comments = run(&[
        "tshark",
        "-r",
        pcapng.to_str().unwrap(),
        "-Y",
        "frame.comment",
        "-T",
        "fields",
        "-e",
        "frame.comment",
    ]);
    let comments = String::from_utf8_lossy(&comments.stdout);
    assert!(
        comments.contains("NAK 0x60 PSN sequence error"),
        "no NAK annotation in {}:\n{comments}",
        pcapng.display()
    );

    // /report: the analyze JSON of the recorder's window.
    let (s, body) = get(port, "/report").unwrap();
    assert_eq!(s, 200);
    let rep: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(rep["totals"]["nak_psn_seq"].as_f64(), Some(want));

    // The second source's frames are counted under its own name, and nothing else of it
    // leaks into the first one's NAKs.
    let clean_frames = analyze_json(&sample("clean-rc.pcap"))["totals"]["frames"]
        .as_f64()
        .unwrap();
    let q2 = format!(
        "rocetap_frames_total{{node=\"testnode\",source=\"{}\"}}",
        wire2.host_if
    );
    wait_for("the second source's frames in Prometheus", 30, || {
        prom_query(pport, &q2)
            .first()
            .filter(|(_, v)| *v == clean_frames)
            .map(|_| ())
    });
    let q1 = format!(
        "rocetap_naks_total{{node=\"testnode\",source=\"{}\",code=\"psn_sequence_error\"}}",
        wire.host_if
    );
    assert_eq!(prom_query(pport, &q1).first().map(|x| x.1), Some(want));

    // The rule holds again within --dump-interval (5 min): no dump, one suppressed.
    std::thread::sleep(Duration::from_secs(6)); // the window (5 s) forgets the first NAKs
    wire.replay(&sample("loss-upstream.pcap"));
    wait_for("the suppressed dump in /metrics", 30, || {
        let (_, t) = get(port, "/metrics")?;
        (metric(
            &t,
            "rocetap_flight_recorder_dumps_suppressed_total{node=\"testnode\"}",
        ) == Some(1.0))
        .then_some(())
    });
    assert_eq!(dumps(&dump_dir, "-rule.pcapng").len(), 1, "rate-limited");

    // SIGUSR1 dumps on demand, counted.
    signal(&agent, "USR1");
    wait_for("the SIGUSR1 dump", 30, || {
        dumps(&dump_dir, "-signal.pcapng").into_iter().next()
    });
    wait_for("the signal dump in /metrics", 30, || {
        let (_, t) = get(port, "/metrics")?;
        (metric(
            &t,
            "rocetap_flight_recorder_dumps_total{node=\"testnode\",reason=\"signal\"}",
        ) == Some(1.0))
        .then_some(())
    });

    // The pod gets sbr: its finding clears from the agent and from Prometheus.
    scen.run("down");
    scen.run("up-fixed");
    wait_for("the reply-path finding of sbrarp-pod1 to clear", 60, || {
        let (_, t) = get(port, "/metrics")?;
        let gone = !t.lines().any(|l| {
            l.starts_with("rocetap_netcheck_findings")
                && l.contains("netns=\"sbrarp-pod1\"")
                && l.contains("check=\"reply-path\"")
        });
        (gone && prom_query(pport, q).is_empty()).then_some(())
    });

    // SIGTERM: a clean end, nothing half-written.
    stop_agent(agent);
    assert!(
        dumps(&dump_dir, ".part").is_empty(),
        "a .part file was left"
    );
    let lines = std::fs::read_to_string(&log).unwrap();
    for l in lines.lines() {
        let v: Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON log line ({e}): {l}"));
        assert!(v["ts"].is_string() && v["event"].is_string(), "{l}");
    }
    for ev in [
        "\"event\":\"started\"",
        "\"event\":\"dump\"",
        "\"event\":\"finding\"",
        "\"event\":\"finding_cleared\"",
        "\"event\":\"stopped\"",
    ] {
        assert!(lines.contains(ev), "no {ev} in the log:\n{lines}");
    }
}

#[test]
fn a_full_disk_fails_the_dump_cleanly() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay", "mount"]) {
        return;
    }
    let tmp = TempDir::new("agent-full");
    let dir = tmp.path("tiny");
    std::fs::create_dir_all(&dir).unwrap();
    run(&[
        "mount",
        "-t",
        "tmpfs",
        "-o",
        "size=16k",
        "tmpfs",
        dir.to_str().unwrap(),
    ]);
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).output();
        }
    }
    let _u = Unmount(dir.clone());
    let wire = Wire::new("f");
    let port = free_port();
    let log = tmp.path("agent.log");
    let args = [
        "-i",
        &wire.host_if,
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--netcheck-interval",
        "0",
        "--dump-dir",
        dir.to_str().unwrap(),
    ];
    let agent = start_agent(&args, &log);
    healthy(port);
    for _ in 0..3 {
        wire.replay(&sample("loss-upstream.pcap"));
    }
    wait_for("the frames", 30, || {
        let (_, t) = get(port, "/metrics")?;
        metric(
            &t,
            &format!(
                "rocetap_frames_total{{node=\"{}\",source=\"{}\"}}",
                host(),
                wire.host_if
            ),
        )
        .filter(|v| *v >= 453.0)
    });
    signal(&agent, "USR1");
    wait_for("the failed dump in /metrics", 30, || {
        let (_, t) = get(port, "/metrics")?;
        (metric(
            &t,
            &format!(
                "rocetap_flight_recorder_dump_failures_total{{node=\"{}\"}}",
                host()
            ),
        ) == Some(1.0))
        .then_some(())
    });
    assert!(
        std::fs::read_dir(&dir).unwrap().next().is_none(),
        "the failed dump left files"
    );
    assert_eq!(
        get(port, "/healthz").map(|x| x.0),
        Some(200),
        "the agent goes on"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("dump_failed") && text.contains("No space left"),
        "{text}"
    );
    stop_agent(agent);
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// Runs `rocetap agent ARGS` expecting a start-up error: exit 2 and one `rocetap:` line.
fn refused(args: &[&str]) -> String {
    let o = Command::new(bin())
        .arg("agent")
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.starts_with("rocetap: "), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn bad_configurations_are_one_line_errors() {
    let tmp = TempDir::new("agent-bad");
    assert!(refused(&[]).contains("no source to capture from"));
    assert!(refused(&["-i", "lo", "--dump-on", "nak_psn_seq >"]).contains("bad --fail-on rule"));
    assert!(refused(&[
        "-i",
        "lo",
        "--dump-dir",
        "/tmp",
        "--dump-on",
        "nak_psn_sequence > 1"
    ])
    .contains("unknown name 'nak_psn_sequence'"));
    assert!(refused(&["-i", "lo", "--dump-on", "nak_psn_seq > 1"]).contains("needs --dump-dir"));
    assert!(refused(&["-i", "lo", "--listen", "localhost"]).contains("not ADDR:PORT"));
    assert!(refused(&["-i", "lo", "--window", "5x"]).contains("bad duration"));
    assert!(refused(&["-i", "lo", "--recorder-bytes", "1T"]).contains("bad size"));
    assert!(refused(&["-i", "lo", "--snaplen", "10"]).contains("64 to 262144"));
    assert!(refused(&["-i", "lo", "--log-format", "xml"]).contains("use text or json"));
    assert!(
        refused(&["-i", "lo", "--dump-seconds", "300"]).contains("longer than the flight recorder")
    );
    assert!(refused(&["-i", "lo", "--dump-dir", "/proc/rocetap-no"])
        .contains("dump directory /proc/rocetap-no"));
    let e = refused(&["-i", "lo", "--qp-table", "/nonexistent/t.json"]);
    assert!(e.contains("QP table /nonexistent/t.json"), "{e}");
    let empty = tmp.path("sys");
    std::fs::create_dir_all(&empty).unwrap();
    let e = refused(&["-i", "auto", "--sysfs-root", empty.to_str().unwrap()]);
    assert!(e.contains("--interface auto: no RDMA device"), "{e}");
    for bad in ["0", "65"] {
        let e = refused(&["-i", "lo", "--lanes", bad]);
        assert!(
            e.contains("--lanes") && e.contains("give 1 to 64 lanes"),
            "{e}"
        );
    }
    // Lanes split an AF_PACKET socket: not an RDMA device read through the sniffer (a
    // fake sysfs names it one), refused before anything is opened.
    std::fs::create_dir_all(empty.join("class/infiniband/mlx5_0")).unwrap();
    let e = refused(&[
        "-i",
        "mlx5_0",
        "--lanes",
        "2",
        "--sysfs-root",
        empty.to_str().unwrap(),
    ]);
    assert!(
        e.contains("--lanes 2: mlx5_0 is an RDMA device") && e.contains("its netdev"),
        "{e}"
    );
    let cfg = tmp.path("agent.yaml");
    std::fs::write(&cfg, "interface: [lo]\nlisten: 127.0.0.1:1\nbogus: 1\n").unwrap();
    let e = refused(&["--config", cfg.to_str().unwrap()]);
    assert!(
        e.contains("unknown key 'bogus'") && e.contains("agent.yaml"),
        "{e}"
    );
    std::fs::write(&cfg, "interface: lo\nwindow: forever\n").unwrap();
    let e = refused(&["--config", cfg.to_str().unwrap()]);
    assert!(e.contains("'window'") && e.contains("bad duration"), "{e}");
    std::fs::write(&cfg, "interface: lo\nlanes: many\n").unwrap();
    let e = refused(&["--config", cfg.to_str().unwrap()]);
    assert!(
        e.contains("'lanes'") && e.contains("not a valid number"),
        "{e}"
    );
    // a billion laughs: refused by the YAML reader's value limit, before any source opens
    let mut bomb = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (n, prev) in ('b'..='i').zip('a'..) {
        bomb.push_str(&format!(
            "{n}: &{n} [{}]\n",
            vec![format!("*{prev}"); 9].join(",")
        ));
    }
    std::fs::write(&cfg, &bomb).unwrap();
    let e = refused(&["-i", "lo", "--config", cfg.to_str().unwrap()]);
    assert!(e.contains("after expanding aliases"), "{e}");
    std::fs::write(&cfg, "\u{0}\u{1}: [").unwrap();
    assert!(refused(&["--config", cfg.to_str().unwrap()]).contains("agent.yaml"));
    assert!(refused(&["--config", "/nonexistent/agent.yaml"]).contains("/nonexistent/agent.yaml"));
    if is_root() || in_ci() {
        // The listen address is taken: refused at start, before any capture.
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let e = refused(&["-i", "lo", "--listen", &addr, "--netcheck-interval", "0"]);
        assert!(e.contains("listening on"), "{e}");
        let e = refused(&["-i", "rocetap-nosuchdev0", "--netcheck-interval", "0"]);
        assert!(e.contains("rocetap-nosuchdev0"), "{e}");
        // Lanes need an Ethernet interface: `any` (Linux cooked capture) is refused.
        let e = refused(&["-i", "any", "--lanes", "2", "--netcheck-interval", "0"]);
        assert!(
            e.contains("capturing on any in lanes: lanes need an Ethernet interface"),
            "{e}"
        );
    }
}

#[test]
fn qos_checks_join_the_capture_with_the_host() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay"]) {
        return;
    }
    let fx = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qos/bad");
    let tmp = TempDir::new("agent-qos");
    let wire = Wire::new("q");
    // The pod of the fixture: net1 with the address the sample's hub uses, MTU 1500.
    // (a veth: this kernel may have no dummy driver)
    run(&[
        "ip", "-n", &wire.ns, "link", "add", "net1", "type", "veth", "peer", "name", "net1p",
    ]);
    run(&[
        "ip",
        "-n",
        &wire.ns,
        "addr",
        "add",
        "198.18.2.2/24",
        "dev",
        "net1",
    ]);
    run(&[
        "ip", "-n", &wire.ns, "link", "set", "net1", "mtu", "1500", "up",
    ]);
    let port = free_port();
    let args = [
        "-i",
        &wire.host_if,
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--node-name",
        "qosnode",
        "--netcheck-interval",
        "1s",
        "--netcheck-netns",
        &wire.ns,
        "--sysfs-root",
        &fx.join("sys").display().to_string(),
        "--qos-from",
        &fx.join("dcb").display().to_string(),
    ];
    let agent = start_agent(&args, &tmp.path("agent.log"));
    healthy(port);
    wire.replay(&sample("qos-mismarked.pcap"));
    // Data on DSCP 0 -> priority 0 while PFC is on priority 3 only: the joined finding, in
    // the pod's namespace.
    let want = format!("netns=\"{}\"", wire.ns);
    wait_for("the joined QoS finding in /metrics", 30, || {
        let (_, t) = get(port, "/metrics")?;
        t.lines()
            .any(|l| {
                l.starts_with("rocetap_netcheck_findings{")
                    && l.contains(&want)
                    && l.contains("check=\"qos-lossy-data\"")
            })
            .then_some(())
    });
    stop_agent(agent);
}

#[test]
fn the_kernels_qp_table_labels_the_report() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay"]) {
        return;
    }
    let fx = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qptable");
    let tmp = TempDir::new("agent-qp");
    let wire = Wire::new("t");
    let port = free_port();
    let args = [
        "-i",
        &wire.host_if,
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--netcheck-interval",
        "0",
        "--qp-table",
        &fx.join("clean-rc-h1.json").display().to_string(),
        "--qp-table",
        &fx.join("clean-rc-h2.json").display().to_string(),
    ];
    let agent = start_agent(&args, &tmp.path("agent.log"));
    healthy(port);
    wire.replay(&sample("clean-rc.pcap"));
    // Hostile HTTP: unknown paths, other methods, garbage and a cut request line are
    // answered or dropped, and the agent goes on serving.
    assert_eq!(get(port, "/nope").map(|x| x.0), Some(404));
    for raw in [
        &b"POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc"[..],
        b"\x00\xff\xfe garbage\r\n\r\n",
        b"GET /metr",
    ] {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = c.write_all(raw);
        let _ = c.shutdown(std::net::Shutdown::Write);
        let mut buf = Vec::new();
        let _ = c.read_to_end(&mut buf);
        if raw.starts_with(b"POST") {
            assert!(String::from_utf8_lossy(&buf).contains(" 405 "), "{buf:?}");
        }
    }
    assert_eq!(get(port, "/healthz").map(|x| x.0), Some(200));
    let frames = analyze_json(&sample("clean-rc.pcap"))["totals"]["frames"].clone();
    // /report: the window's analysis with each flow's QPs as the kernel's tables name them
    // (the same matching as `analyze --qp-table`).
    let doc = wait_for("the replayed frames in /report", 30, || {
        let (s, body) = get(port, "/report")?;
        let v: Value = serde_json::from_str(&body).ok()?;
        (s == 200 && v["totals"]["frames"] == frames).then_some(v)
    });
    let t = doc["qp_table"].as_array().expect("qp_table in /report");
    assert_eq!(t.len(), 4, "{t:?}");
    let f = t
        .iter()
        .find(|q| q["sender"]["lqpn"] == "0x000201")
        .expect("the flow sent by QP 0x000201");
    assert_eq!(f["sender"]["node"], "clean-rc-h1");
    assert_eq!(f["sender"]["pid"], 31337);
    assert_eq!(f["sender"]["comm"], "ib_write_bw");
    assert_eq!(f["receiver"]["node"], "clean-rc-h2");
    stop_agent(agent);
}
