//! `rocetap sflow` without root: the committed pmacctd capture against its golden,
//! hand-made datagrams (gaps, a late one, damaged ones, a frame that is not sFlow) read
//! from a capture and received live on loopback with `/metrics` and `/report`, and the
//! argument errors (exit 2).

use crate::common::{bin, pcap_bytes, rocetap, sample, TempDir};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|w| w.to_be_bytes()).collect()
}

fn tlv(fmt: u32, body: &[u8]) -> Vec<u8> {
    let mut b = words(&[fmt, body.len() as u32]);
    b.extend_from_slice(body);
    b
}

/// The first RoCE frame of samples/congestion.pcap (an Ethernet frame with a BTH).
fn roce_frame() -> Vec<u8> {
    let p = std::fs::read(sample("congestion.pcap")).unwrap();
    let len = u32::from_le_bytes(p[24 + 8..24 + 12].try_into().unwrap()) as usize;
    p[40..40 + len].to_vec()
}

/// An sFlow datagram from agent 192.0.2.1 with one flow sample (rate 100, port 5)
/// holding `frame`.
fn datagram(seq: u32, uptime: u32, frame: &[u8]) -> Vec<u8> {
    let mut hdr = words(&[1, frame.len() as u32 + 4, 4, frame.len() as u32]);
    hdr.extend_from_slice(frame);
    while !hdr.len().is_multiple_of(4) {
        hdr.push(0);
    }
    let mut s = words(&[seq, 5, 100, seq * 100, 0, 5, 6, 1]);
    s.extend(tlv(1, &hdr));
    let mut d = words(&[5, 1, 0xc000_0201, 0, seq, uptime, 1]);
    d.extend(tlv(1, &s));
    d
}

/// `payload` in Ethernet / IPv4 / UDP to port `port` (checksums left 0).
fn udp_frame(payload: &[u8], port: u16) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
    let total = 20 + 8 + payload.len();
    f.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0,
        0,
        64,
        17,
        0,
        0,
    ]);
    f.extend_from_slice(&[198, 51, 100, 1, 198, 51, 100, 2]);
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&port.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

fn json(o: &std::process::Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn the_pmacctd_sample_matches_its_golden() {
    let o = rocetap(&[
        "sflow",
        "-r",
        &sample("sflow/pmacctd-congestion.pcap"),
        "-F",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let golden = std::path::PathBuf::from(sample("sflow/pmacctd-congestion.sflow.json"));
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&golden, &o.stdout).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        want,
        "UPDATE_EXPECT=1 rewrites it"
    );
}

#[test]
fn gaps_late_and_damaged_datagrams_from_a_capture() {
    let dir = TempDir::new("sflow-cli");
    let roce = roce_frame();
    let good = |seq, up| udp_frame(&datagram(seq, up, &roce), 6343);
    let mut cut = datagram(6, 600, &roce);
    cut.truncate(cut.len() - 10);
    let mut bad = datagram(7, 700, &roce);
    bad[3] = 4; // version 4
    let frames = vec![
        good(1, 100),
        good(2, 200),
        good(5, 500),
        good(3, 300), // late: one of the two counted lost comes back
        udp_frame(&cut, 6343),
        udp_frame(&bad, 6343),
        udp_frame(b"not sflow", 53),
    ];
    let p = dir.path("in.pcap");
    std::fs::write(&p, pcap_bytes(&frames)).unwrap();
    let v = json(&rocetap(&[
        "sflow",
        "-r",
        &p.display().to_string(),
        "-F",
        "json",
    ]));
    assert_eq!(v["schema"], "rocetap.sflow/1");
    assert_eq!(v["datagrams"], 6);
    assert_eq!(v["not_sflow_frames"], 1);
    assert_eq!(v["lost_datagrams"], 1, "{v}");
    assert_eq!(v["damaged"]["bad_header"], 1);
    assert_eq!(v["damaged"]["truncated"], 1);
    let a = &v["agents"][0];
    assert_eq!(a["agent"], "192.0.2.1");
    assert_eq!(a["sequence"]["reordered"], 1);
    let port = &a["ports"][0];
    assert_eq!(port["source_id_index"], 5);
    assert_eq!(port["sampling_rate"], 100);
    // 4 whole samples; the cut datagram's sample is cut inside: not counted
    assert_eq!(port["roce"]["samples"], 4);
    assert_eq!(port["roce"]["estimate"], 400);
    assert_eq!(port["roce"]["error_pct"], 98.0);
    // the text report says the same
    let o = rocetap(&["sflow", "-r", &p.display().to_string()]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.contains("6 datagrams, 1 lost"), "{t}");
    assert!(t.contains("RoCE ~400 ±98% (4 samples)"), "{t}");
}

#[test]
fn argument_errors_exit_2() {
    for (args, needle) in [
        (
            vec!["sflow", "--max-agents", "0", "-r", "x"],
            "--max-agents",
        ),
        (
            vec!["sflow", "-r", "/nonexistent/x.pcap"],
            "/nonexistent/x.pcap",
        ),
        (vec!["sflow", "--listen", "nowhere"], "--listen nowhere"),
        (
            vec!["sflow", "--metrics", "127.0.0.1:1", "-r", "x"],
            "--metrics",
        ),
    ] {
        let o = rocetap(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("rocetap: ") && err.contains(needle),
            "{args:?}: {err}"
        );
    }
}

fn free_port() -> u16 {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let t = std::net::TcpListener::bind(("127.0.0.1", s.local_addr().unwrap().port()));
    match t {
        Ok(_) => s.local_addr().unwrap().port(),
        Err(_) => free_port(),
    }
}

fn get(port: u16, path: &str) -> String {
    let t = Instant::now();
    loop {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            write!(
                s,
                "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            return out;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no server on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn listening_with_metrics_and_report() {
    let (udp, web) = (free_port(), free_port());
    let mut child = Command::new(bin())
        .args(["sflow", "-q", "-F", "json", "--listen"])
        .arg(format!("127.0.0.1:{udp}"))
        .arg("--metrics")
        .arg(format!("127.0.0.1:{web}"))
        .args(["--duration", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = get(web, "/healthz");
    let roce = roce_frame();
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    for seq in [1, 2, 4] {
        s.send_to(&datagram(seq, seq * 100, &roce), ("127.0.0.1", udp))
            .unwrap();
    }
    let t = Instant::now();
    let metrics = loop {
        let m = get(web, "/metrics");
        if m.contains("rocetap_sflow_datagrams_total{agent=\"192.0.2.1/0\"} 3") {
            break m;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{m}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        metrics.contains("rocetap_sflow_datagrams_lost_total{agent=\"192.0.2.1/0\"} 1"),
        "{metrics}"
    );
    // 3 samples at 1 in 100: 300 packets, 1.96 * sqrt(1/3) = 1.1316 relative error
    assert!(
        metrics.contains(
            "rocetap_sflow_packets_estimated_total{agent=\"192.0.2.1/0\",port=\"0:5\"} 300"
        ),
        "{metrics}"
    );
    assert!(
        metrics
            .contains("rocetap_sflow_roce_error_ratio{agent=\"192.0.2.1/0\",port=\"0:5\"} 1.1316"),
        "{metrics}"
    );
    let report = get(web, "/report");
    let body = report.split("\r\n\r\n").nth(1).unwrap();
    let v: Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["lost_datagrams"], 1);
    assert!(get(web, "/nothing").starts_with("HTTP/1.1 404"));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .output();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["datagrams"], 3);
    assert_eq!(v["agents"][0]["ports"][0]["roce"]["samples"], 3);
}
