//! The agent's HTTP surface against hostile and legitimate clients: every limit of
//! `src/agent/web` (a huge header, a slowloris, thousands of half-sent requests, a client
//! that stops reading) with the running agent's RSS and thread count read from
//! `/proc/PID/status`; 405 with `Allow`, 404, `/report` off; `--web-config-file` errors
//! (exit 2, one line); TLS with a client certificate required, basic auth (401 without or
//! with wrong credentials, 200 with right ones); and a real Prometheus scraping the agent
//! over TLS with a client certificate and basic auth, the test reading a sample's truth
//! back through its API.
//! Certificates are made in the test (rcgen), hashes with the bcrypt crate.
//!
//! The live tests need root (the agent captures `lo` or a veth in a namespace of the
//! test's own), curl, and for the scrape tcpreplay and prometheus; otherwise they print
//! `SKIP:` (and fail under CI).

mod agent_support;
mod common;

use agent_support::*;
use common::{bin, TempDir};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
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
    while !big.iter().all(|h| h.is_finished()) {
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
    let open = std::fs::read_dir("/proc/self/fd").map_or(64, |d| d.count());
    limit(3).saturating_sub(open + 100)
}

/// Test certificates: a CA, the server's (for 127.0.0.1), a client's it signed, and a
/// client's another CA signed.
struct Pki {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
    stranger_cert: PathBuf,
    stranger_key: PathBuf,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap()
}

fn leaf(
    issuer: &CertifiedIssuer<'static, KeyPair>,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut p =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    p.distinguished_name.push(DnType::CommonName, names[0]);
    p.extended_key_usages = vec![usage];
    let cert = p.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

fn pki(tmp: &TempDir) -> Pki {
    let root = ca("rocetap test CA");
    let other = ca("someone else's CA");
    let (cert, key) = leaf(
        &root,
        &["rocetap.rocetap.svc", "127.0.0.1", "localhost"],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let (ccert, ckey) = leaf(&root, &["prometheus"], ExtendedKeyUsagePurpose::ClientAuth);
    let (scert, skey) = leaf(&other, &["prometheus"], ExtendedKeyUsagePurpose::ClientAuth);
    let write = |name: &str, text: &str| {
        let p = tmp.path(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    Pki {
        ca: write("ca.crt", &root.pem()),
        cert: write("tls.crt", &cert),
        key: write("tls.key", &key),
        client_cert: write("client.crt", &ccert),
        client_key: write("client.key", &ckey),
        stranger_cert: write("stranger.crt", &scert),
        stranger_key: write("stranger.key", &skey),
    }
}

/// `curl` over HTTPS: (status or `None` when no HTTP answer, the response head + body).
fn curl(pki: &Pki, port: u16, path: &str, args: &[&str]) -> (Option<u16>, String) {
    let o = Command::new("curl")
        .args(["-sS", "-i", "--max-time", "30", "--cacert"])
        .arg(&pki.ca)
        .args(args)
        .arg(format!("https://127.0.0.1:{port}{path}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok());
    (
        status.filter(|_| o.status.success()),
        text + &String::from_utf8_lossy(&o.stderr),
    )
}

const USER: &str = "prometheus";
const PASSWORD: &str = "s3cret scrape";

/// A web config requiring a client certificate of our CA and `USER`'s password.
fn web_config(tmp: &TempDir, pki: &Pki) -> PathBuf {
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
    let p = tmp.path("web.yml");
    std::fs::write(
        &p,
        format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n  client_ca_file: {}\n  client_auth_type: RequireAndVerifyClientCert\n  min_version: TLS12\nhttp_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\nbasic_auth_users:\n  {USER}: '{hash}'\n  other: '{}'\n",
            pki.cert.display(),
            // relative to the web config's directory, as the toolkit takes it
            "tls.key",
            pki.ca.display(),
            bcrypt::hash("other", 4).unwrap()
        ),
    )
    .unwrap();
    p
}

#[test]
fn prometheus_scrapes_over_tls_with_a_client_certificate_and_basic_auth() {
    let _lock = NETNS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if !ready(&["curl", "tcpreplay", "prometheus"]) {
        return;
    }
    let tmp = TempDir::new("web-tls");
    let pki = pki(&tmp);
    let web = web_config(&tmp, &pki);
    let wire = Wire::new("t");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let agent = start_agent(
        &[
            "-i",
            &wire.host_if,
            "--listen",
            &listen,
            "--netcheck-interval",
            "0",
            "--node-name",
            "tlsnode",
            "--web-config-file",
            web.to_str().unwrap(),
        ],
        &tmp.path("agent.log"),
    );
    let (cc, ck) = (
        pki.client_cert.to_str().unwrap(),
        pki.client_key.to_str().unwrap(),
    );
    let good = format!("{USER}:{PASSWORD}");
    let authed = ["--cert", cc, "--key", ck, "-u", &good];
    wait_for("the agent's /healthz over TLS", 30, || {
        curl(&pki, port, "/healthz", &authed)
            .0
            .filter(|s| *s == 200)
    });
    // Right certificate and credentials: 200, with the configured header.
    let (s, text) = curl(&pki, port, "/metrics", &authed);
    assert_eq!(s, Some(200), "{text}");
    assert!(text.contains("rocetap_"), "{text}");
    assert!(
        text.to_lowercase()
            .contains("x-content-type-options: nosniff"),
        "{text}"
    );
    // No client certificate, or one of another CA: no HTTP at all.
    let (s, text) = curl(&pki, port, "/metrics", &["-u", &good]);
    assert_eq!(s, None, "{text}");
    let (s, text) = curl(
        &pki,
        port,
        "/metrics",
        &[
            "--cert",
            pki.stranger_cert.to_str().unwrap(),
            "--key",
            pki.stranger_key.to_str().unwrap(),
            "-u",
            &good,
        ],
    );
    assert_eq!(s, None, "{text}");
    // Plain HTTP to the TLS port: no answer.
    assert_eq!(get(port, "/metrics").map(|x| x.0), None);
    // No credentials, a wrong password, an unknown user: 401 with WWW-Authenticate, for
    // every path (before the router: no 404 or 405 tells what exists).
    for (path, args) in [
        ("/metrics", vec!["--cert", cc, "--key", ck]),
        ("/nope", vec!["--cert", cc, "--key", ck]),
        ("/report", vec!["--cert", cc, "--key", ck, "-X", "POST"]),
        (
            "/metrics",
            vec!["--cert", cc, "--key", ck, "-u", "prometheus:wrong"],
        ),
        (
            "/metrics",
            vec!["--cert", cc, "--key", ck, "-u", "mallory:s3cret scrape"],
        ),
        (
            "/metrics",
            vec!["--cert", cc, "--key", ck, "-u", "other:s3cret scrape"],
        ),
    ] {
        let (s, text) = curl(&pki, port, path, &args);
        assert_eq!(s, Some(401), "{path} {args:?}: {text}");
        assert!(
            text.to_lowercase().contains("www-authenticate: basic"),
            "{text}"
        );
    }
    // A TCP connection that never says hello is closed after the handshake timeout.
    let mut idle = TcpStream::connect(("127.0.0.1", port)).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let t = Instant::now();
    let mut b = [0u8; 16];
    let _ = idle.read(&mut b);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());

    // Prometheus scrapes with the client certificate and the password; the truth of the
    // replayed sample comes back through its API.
    let pport = free_port();
    let pw_file = tmp.path("password");
    std::fs::write(&pw_file, PASSWORD).unwrap();
    let cfg = tmp.path("prometheus.yml");
    std::fs::write(&cfg, scrape_tls_config(&pki, &pw_file, port)).unwrap();
    let _prom = Proc(
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
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
        get(pport, "/-/ready").filter(|(s, _)| *s == 200)
    });
    wait_for("Prometheus to scrape the agent over TLS", 30, || {
        prom_query(pport, "up{job=\"rocetap\"}")
            .first()
            .filter(|(_, v)| *v == 1.0)
            .cloned()
    });
    wire.replay(&sample("loss-upstream.pcap"));
    let want = truth("loss-upstream.pcap", "nak_psn_seq") as f64;
    let q = "sum(rocetap_naks_total{node=\"tlsnode\",code=\"psn_sequence_error\"})";
    wait_for(
        "Prometheus to hold the NAKs of loss-upstream.pcap",
        60,
        || {
            prom_query(pport, q)
                .first()
                .filter(|(_, v)| *v == want)
                .cloned()
        },
    );
    stop_agent(agent);
}

/// deploy/prometheus/scrape-tls.yml's static job, with the test's files and agent (Debian's
/// Prometheus has no Kubernetes discovery: the pod job is left out) and a 1 s interval.
fn scrape_tls_config(pki: &Pki, password: &std::path::Path, port: u16) -> String {
    use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus/scrape-tls.yml"),
    )
    .unwrap();
    let mut text = text;
    for (from, to) in [
        (
            "/etc/prometheus/rocetap/ca.crt",
            pki.ca.display().to_string(),
        ),
        (
            "/etc/prometheus/rocetap/tls.crt",
            pki.client_cert.display().to_string(),
        ),
        (
            "/etc/prometheus/rocetap/tls.key",
            pki.client_key.display().to_string(),
        ),
        (
            "/etc/prometheus/rocetap/password",
            password.display().to_string(),
        ),
        ("192.0.2.10:9470", format!("127.0.0.1:{port}")),
        ("scrape_interval: 15s", "scrape_interval: 1s".into()),
        ("scrape_timeout: 10s", "scrape_timeout: 1s".into()),
    ] {
        assert!(text.contains(from), "scrape-tls.yml no longer has {from}");
        text = text.replace(from, &to);
    }
    assert!(text.contains(&format!("username: {USER}")), "{text}");
    let mut doc = YamlLoader::load_from_str(&text).unwrap().remove(0);
    let key = Yaml::String("scrape_configs".into());
    let Yaml::Hash(h) = &mut doc else { panic!() };
    let Some(Yaml::Array(jobs)) = h.get_mut(&key) else {
        panic!()
    };
    jobs.retain(|j| j["job_name"].as_str() == Some("rocetap-static"));
    assert_eq!(jobs.len(), 1);
    let mut out = String::new();
    YamlEmitter::new(&mut out).dump(&doc).unwrap();
    out
}

/// `rocetap agent ARGS` must fail at start: exit 2 and exactly one `rocetap:` line.
fn refused(args: &[&str]) -> String {
    let o = Command::new(bin())
        .arg("agent")
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.starts_with("rocetap: "), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    err
}

#[test]
fn web_config_errors_are_one_line() {
    // no root needed: the file is checked before any source is opened
    let tmp = TempDir::new("web-bad");
    let pki = pki(&tmp);
    let f = tmp.path("web.yml");
    let fs = f.to_str().unwrap();
    let (cert, key, ca) = (
        pki.cert.display().to_string(),
        pki.key.display().to_string(),
        pki.ca.display().to_string(),
    );
    let tls = format!("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n");
    for (text, want) in [
        ("bogus: 1\n".to_string(), "line 1: unknown key 'bogus'"),
        (
            "basic_auth_users:\n  alice: hunter2\n".into(),
            "line 2: user 'alice': not a bcrypt hash",
        ),
        (
            "tls_server_config:\n  cert_file: /nonexistent/tls.crt\n  key_file: x\n".into(),
            "/nonexistent/tls.crt",
        ),
        (
            format!("tls_server_config:\n  cert_file: {cert}\n"),
            "needs cert_file (or cert) and key_file",
        ),
        (
            format!("tls_server_config:\n  cert_file: {key}\n  key_file: {key}\n"),
            "no PEM certificate",
        ),
        (
            format!("{tls}  client_auth_type: RequireAnyClientCert\n"),
            "accepts a certificate without checking it",
        ),
        (
            format!("{tls}  client_ca_file: {ca}\n"),
            "client_auth_type is NoClientCert",
        ),
        (
            format!("{tls}  client_auth_type: RequireAndVerifyClientCert\n"),
            "needs client_ca_file",
        ),
        (
            format!("{tls}  client_auth_type: Sometimes\n"),
            "client_auth_type 'Sometimes'",
        ),
        (format!("{tls}  min_version: TLS14\n"), "use TLS12 or TLS13"),
        (
            format!("{tls}  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n"),
            "cipher suite 'TLS_RSA_WITH_RC4_128_SHA' is not supported",
        ),
        (
            format!("{tls}  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n  curve_preferences: [CurveP521]\n"),
            "curve 'CurveP521' is not supported",
        ),
        (
            "http_server_config:\n  headers:\n    Set-Cookie: a\n".into(),
            "header 'Set-Cookie' cannot be set",
        ),
        ("a: [\n".into(), "not YAML"),
    ] {
        std::fs::write(&f, &text).unwrap();
        let e = refused(&["-i", "lo", "--web-config-file", fs]);
        assert!(
            e.contains(want) && e.contains("--web-config-file") && e.contains(fs),
            "{text}: {e}"
        );
    }
    // The same parser through --config.
    std::fs::write(&f, "bogus: 1\n").unwrap();
    let cfg = tmp.path("agent.yml");
    std::fs::write(&cfg, format!("interface: lo\nweb_config_file: {fs}\n")).unwrap();
    let e = refused(&["--config", cfg.to_str().unwrap()]);
    assert!(
        e.contains("'web_config_file'") && e.contains("unknown key 'bogus'"),
        "{e}"
    );
    assert!(
        refused(&["-i", "lo", "--web-config-file", "/nonexistent/w.yml"])
            .contains("/nonexistent/w.yml")
    );
    assert!(refused(&["-i", "lo", "--max-connections", "0"]).contains("1 to 65536"));
    assert!(refused(&["-i", "lo", "--report", "maybe"]).contains("use on or off"));
    // A good file passes the check (the run itself needs root).
    std::fs::write(
        &f,
        format!(
            "{tls}  client_ca_file: {ca}\n  client_auth_type: VerifyClientCertIfGiven\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n  curve_preferences: [X25519, CurveP256]\n  max_version: TLS13\n  prefer_server_cipher_suites: true\nhttp_server_config:\n  http2: false\nbasic_auth_users:\n  a: '{}'\n",
            bcrypt::hash("x", 4).unwrap()
        ),
    )
    .unwrap();
    let o = Command::new(bin())
        .args([
            "agent",
            "-i",
            "rocetap-nosuchdev0",
            "--netcheck-interval",
            "0",
        ])
        .args(["--web-config-file", fs])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("web-config-file") && err.contains("rocetap-nosuchdev0"),
        "{err}"
    );
}
