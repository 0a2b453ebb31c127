//! The agent's `--web-config-file`: TLS with a client certificate required (none, or one
//! of another CA, gets no HTTP), basic auth (401 with `WWW-Authenticate` without or with
//! wrong credentials, on every path; 200 with right ones), a TCP connection that never
//! says hello closed after the handshake limit; `VerifyClientCertIfGiven` (no certificate
//! or ours: served; another CA's: refused), an inline `cert`, `min_version: TLS13` (a
//! TLS 1.2 client refused); a real Prometheus scraping the agent with
//! deploy/prometheus/scrape-tls.yml's static job, the test reading a sample's truth back
//! through its API; web config errors one line, exit 2. Certificates are made in the test
//! (rcgen), hashes with the bcrypt crate.
//!
//! The live test needs root (the agent captures a veth in a namespace of the test's own),
//! curl, tcpreplay and prometheus; otherwise it prints `SKIP:` (and fails under CI). The
//! error test runs as any user.

use crate::agent_support;
use crate::common;
use crate::web_support;

use agent_support::*;
use common::{bin, TempDir};
use std::io::Read;
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};
use web_support::*;

#[test]
fn prometheus_scrapes_over_tls_with_a_client_certificate_and_basic_auth() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
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
    let pw_file = tmp.path("password");
    std::fs::write(&pw_file, PASSWORD).unwrap();
    let (_prom, pport) = start_prometheus_with(&tmp, &scrape_tls_config(&pki, &pw_file, port));
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

#[test]
fn a_client_certificate_if_given_is_verified() {
    if !ready(&["curl"]) {
        return;
    }
    let tmp = TempDir::new("web-tls-optional");
    let pki = pki(&tmp);
    let web = tmp.path("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert: |\n{}  key_file: tls.key\n  client_ca_file: ca.crt\n  client_auth_type: VerifyClientCertIfGiven\n  min_version: TLS13\n",
            std::fs::read_to_string(&pki.cert)
                .unwrap()
                .lines()
                .map(|l| format!("    {l}\n"))
                .collect::<String>()
        ),
    )
    .unwrap();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let args = [
        "-i",
        "lo",
        "--listen",
        &listen,
        "--netcheck-interval",
        "0",
        "--web-config-file",
        web.to_str().unwrap(),
    ];
    let agent = start_agent(&args, &tmp.path("agent.log"));
    // TLS without users: no certificate is fine, ours is fine, another CA's is refused.
    wait_for("the agent's /healthz over TLS", 30, || {
        curl(&pki, port, "/healthz", &[]).0.filter(|s| *s == 200)
    });
    let (cc, ck) = (
        pki.client_cert.to_str().unwrap(),
        pki.client_key.to_str().unwrap(),
    );
    let (s, text) = curl(&pki, port, "/metrics", &["--cert", cc, "--key", ck]);
    assert_eq!(s, Some(200), "{text}");
    let stranger = [
        "--cert",
        pki.stranger_cert.to_str().unwrap(),
        "--key",
        pki.stranger_key.to_str().unwrap(),
    ];
    let (s, text) = curl(&pki, port, "/metrics", &stranger);
    assert_eq!(s, None, "{text}");
    // min_version TLS13: a TLS 1.2 client gets no HTTP.
    let (s, text) = curl(&pki, port, "/metrics", &["--tls-max", "1.2"]);
    assert_eq!(s, None, "{text}");
    stop_agent(agent);
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
    // Hostile files: too long, a FIFO (refused without blocking), a device as the
    // certificate, a PEM cut in the middle, bytes that are not text.
    std::fs::write(&f, "#".repeat((1 << 20) + 1)).unwrap();
    let e = refused(&["-i", "lo", "--web-config-file", fs]);
    assert!(e.contains("longer than 1048576 bytes"), "{e}");
    let fifo = tmp.path("fifo.yml");
    common::run_ok(&["mkfifo", fifo.to_str().unwrap()]);
    let t = Instant::now();
    let e = refused(&["-i", "lo", "--web-config-file", fifo.to_str().unwrap()]);
    assert!(e.contains("not a regular file (a FIFO)"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    std::fs::write(
        &f,
        format!("tls_server_config:\n  cert_file: /dev/zero\n  key_file: {key}\n"),
    )
    .unwrap();
    let e = refused(&["-i", "lo", "--web-config-file", fs]);
    assert!(e.contains("/dev/zero: not a regular file"), "{e}");
    let pem = std::fs::read_to_string(&pki.cert).unwrap();
    let cut = tmp.path("cut.crt");
    std::fs::write(&cut, &pem[..pem.len() / 2]).unwrap();
    std::fs::write(
        &f,
        format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {key}\n",
            cut.display()
        ),
    )
    .unwrap();
    let e = refused(&["-i", "lo", "--web-config-file", fs]);
    assert!(e.contains("certificate"), "{e}");
    std::fs::write(&f, b"basic_auth_users:\n  a: \xff\xfe\n").unwrap();
    let e = refused(&["-i", "lo", "--web-config-file", fs]);
    assert!(e.contains("not text"), "{e}");
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
