//! The agent's HTTP server against hostile and ordinary clients: every limit of
//! `src/agent/web` (a huge header, a slowloris, thousands of half-sent requests, a client
//! that stops reading) with the running agent's RSS and thread count read from
//! `/proc/PID/status`; 405 with `Allow`, 404, `/report` off. TLS, basic auth and the web
//! config are in `tests/agent/agent_tls.rs`.
//!
//! The tests need root (the agent captures `lo`; the RoCE filter takes none of the test's
//! TCP); otherwise they print `SKIP:` (and fail under CI).

use crate::agent_support;
use crate::common;

use agent_support::*;
use common::TempDir;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// A field of `/proc/PID/status` (`VmRSS` in kB, `Threads`).
fn status(pid: u32, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

/// Sends `raw` and reads the answer until the server closes (or 10 s).
fn raw(port: u16, req: &[u8]) -> String {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(req).unwrap();
    let mut buf = Vec::new();
    let _ = c.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// An agent capturing `lo` (the RoCE filter takes none of the test's TCP) with `extra`.
fn lo_agent(tmp: &TempDir, port: u16, extra: &[&str]) -> Proc {
    let listen = format!("127.0.0.1:{port}");
    let mut args = vec!["-i", "lo", "--listen", &listen, "--netcheck-interval", "0"];
    args.extend_from_slice(extra);
    start_agent(&args, &tmp.path("agent.log"))
}

#[test]
fn methods_paths_and_report_off() {
    if !ready(&[]) {
        return;
    }
    let tmp = TempDir::new("web-routes");
    let port = free_port();
    let agent = lo_agent(&tmp, port, &["--report", "off"]);
    healthy(port);
    for m in ["POST", "PUT", "DELETE", "OPTIONS"] {
        let r = raw(
            port,
            format!("{m} /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert!(r.starts_with("HTTP/1.1 405 "), "{m}: {r}");
        assert!(
            r.to_lowercase().contains("\r\nallow: get, head\r\n"),
            "{m}: {r}"
        );
    }
    for p in [
        "/nope",
        "/metrics/",
        "/report",
        "/report?x=1",
        "/healthz/x",
        "//metrics",
    ] {
        assert_eq!(get(port, p).map(|x| x.0), Some(404), "{p}");
    }
    let (s, body) = get(port, "/").unwrap();
    assert_eq!(s, 200);
    assert!(
        body.contains("/metrics") && !body.contains("/report"),
        "{body}"
    );
    assert_eq!(get(port, "/metrics?x=1").map(|x| x.0), Some(200));
    let head = raw(
        port,
        b"HEAD /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    );
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    let (_, body) = head.split_once("\r\n\r\n").unwrap();
    assert!(body.is_empty(), "HEAD answered a body: {body}");
    stop_agent(agent);
}

#[test]
fn hostile_clients_cost_bounded_memory_and_threads() {
    // Thousands of sockets in this process (its open-file limit) and timed cut-offs.
    let _serial = common::serial();
    if !ready(&[]) {
        return;
    }
    let tmp = TempDir::new("web-hostile");
    let port = free_port();
    let agent = lo_agent(&tmp, port, &["--max-connections", "64"]);
    healthy(port);
    let pid = agent.0.id();
    // settle: the first scrapes allocate what every later one reuses
    for _ in 0..20 {
        get(port, "/metrics").unwrap();
    }
    let (rss0, threads0) = (status(pid, "VmRSS"), status(pid, "Threads"));
    eprintln!("agent at rest: VmRSS {rss0} kB, {threads0} threads");

    // Four 64 MiB headers at once: each refused after 8 KiB (431, or reset).
    let started = Instant::now();
    let big: Vec<std::thread::JoinHandle<(usize, String)>> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                c.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let chunk = vec![b'a'; 1 << 20];
                let mut sent = 0;
                if c.write_all(b"GET /metrics HTTP/1.1\r\nX-Big: ").is_ok() {
                    while sent < 64 << 20 && c.write_all(&chunk).is_ok() {
                        sent += chunk.len();
                    }
                }
                let mut buf = Vec::new();
                let _ = c.read_to_end(&mut buf);
                (sent, String::from_utf8_lossy(&buf).into_owned())
            })
        })
        .collect();
    let mut peak = 0;
    while !big.iter().all(std::thread::JoinHandle::is_finished) {
        peak = peak.max(status(pid, "VmRSS"));
        std::thread::sleep(Duration::from_millis(20));
    }
    for h in big {
        let (sent, answer) = h.join().unwrap();
        assert!(sent < 64 << 20, "a 64 MiB header was read whole");
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 431 "),
            "{answer}"
        );
    }
    let grew = peak.saturating_sub(rss0);
    eprintln!(
        "four 64 MiB headers: refused in {:?}, VmRSS peak +{grew} kB",
        started.elapsed()
    );
    assert!(grew < 4 << 10, "VmRSS grew {grew} kB");

    // A slowloris: one header byte every 200 ms; closed after the 5 s head timeout.
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let t = Instant::now();
    c.write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: ").unwrap();
    let closed = loop {
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "the slowloris is still served"
        );
        if c.write_all(b"a").is_err() {
            break t.elapsed();
        }
        let mut b = [0u8; 512];
        match c.read(&mut b) {
            Ok(0) => break t.elapsed(),
            Ok(_) => break t.elapsed(),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break t.elapsed(),
        }
    };
    eprintln!("slowloris closed after {closed:?}");
    assert!(
        closed >= Duration::from_secs(4) && closed < Duration::from_secs(8),
        "{closed:?}"
    );

    // Thousands of half-sent requests: 64 served (and timed out), the rest refused at once.
    let n = fd_room().min(8000);
    let t = Instant::now();
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) else {
            break;
        };
        let _ = c.write_all(b"GET /metrics HTTP/1.1\r\nHost: a\r\n");
        conns.push(c);
    }
    let opened = conns.len();
    std::thread::sleep(Duration::from_millis(500));
    let (rss1, threads1) = (status(pid, "VmRSS"), status(pid, "Threads"));
    let (mut refused, mut busy) = (0, 0);
    for c in &mut conns {
        c.set_nonblocking(true).unwrap();
        let mut b = [0u8; 256];
        match c.read(&mut b) {
            Ok(n) => {
                // a 503 (or closed before it could be written)
                refused += 1;
                busy += usize::from(b[..n].starts_with(b"HTTP/1.1 503 "));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(_) => refused += 1,
        }
    }
    eprintln!(
        "{opened} half-sent requests in {:?}: {refused} refused at once ({busy} with a 503), VmRSS {rss1} kB (+{} kB), {threads1} threads",
        t.elapsed(),
        rss1.saturating_sub(rss0)
    );
    assert!(opened >= 900, "only {opened} connections opened");
    assert!(threads1 <= threads0 + 2, "{threads0} -> {threads1} threads");
    assert!(rss1 < rss0 + (16 << 10), "VmRSS {rss0} -> {rss1} kB");
    assert!(refused + 64 >= opened, "{refused} of {opened} refused");
    assert!(busy > 0, "no refused connection was told 503");
    // With the attackers' sockets still open, a normal client is served again once their
    // heads time out.
    let t = Instant::now();
    wait_for("/metrics for a normal client", 15, || {
        get(port, "/metrics").filter(|(s, _)| *s == 200)
    });
    eprintln!("a normal client served again after {:?}", t.elapsed());
    drop(conns);
    assert_eq!(get(port, "/healthz").map(|x| x.0), Some(200));
    stop_agent(agent);
}

#[test]
fn a_client_that_stops_reading_is_cut_off() {
    // Thousands of sockets in this process (its open-file limit) and timed cut-offs.
    let _serial = common::serial();
    if !ready(&[]) {
        return;
    }
    let tmp = TempDir::new("web-stall");
    let port = free_port();
    let agent = lo_agent(&tmp, port, &[]);
    healthy(port);
    // 2,000 pipelined scrapes, none of the answers read: the socket buffers fill, the
    // agent's write stalls and the connection is cut after the 10 s write limit.
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let n = 2000;
    let reqs = "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n".repeat(n);
    c.write_all(reqs.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_secs(14));
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = Vec::new();
    let _ = c.read_to_end(&mut buf);
    let answered = String::from_utf8_lossy(&buf)
        .matches("HTTP/1.1 200 ")
        .count();
    eprintln!("a client reading nothing: cut off after {answered} of {n} answers");
    assert!(answered > 0 && answered < n, "{answered} of {n} answered");
    assert_eq!(get(port, "/healthz").map(|x| x.0), Some(200));
    stop_agent(agent);
}

/// File descriptors this process may still open (less a margin), after raising the soft
/// limit to the hard one.
fn fd_room() -> usize {
    let limit = |col: usize| -> usize {
        std::fs::read_to_string("/proc/self/limits")
            .ok()
            .and_then(|s| {
                let l = s.lines().find(|l| l.starts_with("Max open files"))?;
                l.split_whitespace().nth(col)?.parse().ok()
            })
            .unwrap_or(1024)
    };
    let hard = limit(4).min(1 << 20);
    let _ = Command::new("prlimit")
        .args(["--pid", &std::process::id().to_string()])
        .arg(format!("--nofile={hard}:{hard}"))
        .output();
    let open = std::fs::read_dir("/proc/self/fd").map_or(64, std::iter::Iterator::count);
    limit(3).saturating_sub(open + 100)
}
