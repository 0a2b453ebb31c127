//! Counts that stay true over days (issue 39): the same sample replayed N times with
//! pauses longer than the idle timeout counts exactly N times its truth — gaps, NAKs,
//! resends, duplicates — in `analyze` of a capture built here from the sample, and in the
//! real agent capturing a veth while tcpreplay sends the sample into it N times. A QP
//! number that comes back after the silence begins a new flow instead of continuing the
//! old one (before: three replays of rxe-loss-upstream gave 11 gaps instead of 33 and
//! 4,385 resends instead of 3,267). A gap never filled counts as unrecovered in /metrics
//! while its connection still lives, and the ICRCs the snaplen cut are counted.
//!
//! The live tests need root and tcpreplay; otherwise they print `SKIP:` (and fail under
//! CI).

use crate::agent_support;
use crate::common;

use agent_support::*;
use common::{bin, TempDir};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const N: u64 = 3;

/// A record: its timestamp in the file's unit, then its header's lengths and its data.
type Record = (u64, Vec<u8>);

/// The records of a classic pcap, with the file header and whether the unit is ns.
fn records(pcap: &[u8]) -> (Vec<u8>, bool, Vec<Record>) {
    let magic = u32::from_le_bytes(pcap[..4].try_into().unwrap());
    let nano = match magic {
        0xa1b2_3c4d => true,
        0xa1b2_c3d4 => false,
        m => panic!("not a little-endian classic pcap: magic {m:#x}"),
    };
    let unit = if nano { 1_000_000_000 } else { 1_000_000 };
    let mut out = Vec::new();
    let mut o = 24;
    while o + 16 <= pcap.len() {
        let w = |i: usize| {
            u64::from(u32::from_le_bytes(
                pcap[o + i..o + i + 4].try_into().unwrap(),
            ))
        };
        let t = w(0) * unit + w(4);
        let cap = w(8) as usize;
        out.push((t, pcap[o + 8..o + 16 + cap].to_vec()));
        o += 16 + cap;
    }
    (pcap[..24].to_vec(), nano, out)
}

/// `n` copies of the sample one after another, each starting `pause_s` seconds of
/// capture time after the end of the one before, copy k with every RoCE v2 PSN (plain
/// IPv4 on Ethernet) moved on by k × `psn_step` — what a new connection on the same QP
/// numbers sends, starting from another PSN.
fn replayed(sample_pcap: &Path, n: u64, pause_s: u64, psn_step: u32) -> Vec<u8> {
    let (head, nano, recs) = records(&std::fs::read(sample_pcap).unwrap());
    let unit = if nano { 1_000_000_000 } else { 1_000_000 };
    let span = recs.last().unwrap().0 - recs[0].0;
    let mut v = head;
    for k in 0..n {
        let shift = k * (span + pause_s * unit);
        for (t, rest) in &recs {
            let t = t + shift;
            v.extend_from_slice(&((t / unit) as u32).to_le_bytes());
            v.extend_from_slice(&((t % unit) as u32).to_le_bytes());
            let mut rest = rest.clone();
            let f = &mut rest[8..];
            let roce = f.len() >= 54
                && f[12..14] == [0x08, 0x00]
                && f[14] == 0x45
                && f[23] == 17
                && f[36..38] == 4791u16.to_be_bytes();
            if roce {
                let psn = u32::from_be_bytes([0, f[51], f[52], f[53]]);
                let psn = psn.wrapping_add(k as u32 * psn_step) & 0xff_ffff;
                f[51..54].copy_from_slice(&psn.to_be_bytes()[1..]);
            }
            v.extend_from_slice(&rest);
        }
    }
    v
}

fn analyze(file: &Path, extra: &[&str]) -> Value {
    let o = Command::new(bin())
        .args(["analyze", "--format", "json"])
        .args(extra)
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

/// What is checked, N times over: (totals key, /metrics series without labels).
const KEYS: [(&str, &str); 5] = [
    ("psn_gap_events", "rocetap_psn_gap_events_total"),
    ("nak_psn_seq", ""),
    (
        "retransmitted_packets",
        "rocetap_retransmitted_packets_total",
    ),
    ("duplicate_packets", "rocetap_duplicate_packets_total"),
    (
        "unrecovered_gap_events",
        "rocetap_psn_gaps_unrecovered_total",
    ),
];

/// One run of the sample: its truth where the truth file has the key, else what
/// `analyze` of the sample alone says (which `tests/analyze/samples.rs` holds to the golden).
fn once(name: &str) -> Vec<(&'static str, u64)> {
    let t: Value =
        serde_json::from_slice(&std::fs::read(sample(&format!("{name}.truth.json"))).unwrap())
            .unwrap();
    let alone = analyze(&sample(name), &[])["totals"].clone();
    KEYS.iter()
        .map(|(k, _)| {
            let v = t["observable"][k]
                .as_u64()
                .or_else(|| alone[k].as_u64())
                .unwrap();
            (*k, v)
        })
        .collect()
}

#[test]
fn analyze_of_n_replays_with_pauses_counts_n_times_the_truth() {
    let tmp = TempDir::new("days-analyze");
    for name in [
        "loss-upstream.pcap",
        "rxe-loss-upstream.pcap",
        "clean-rc.pcap",
        "rxe-clean-write.pcap",
        "rxe-duplicate.pcap",
        "capture-loss.pcap",
    ] {
        let one = once(name);
        let flows = analyze(&sample(name), &[])["totals"]["flows"]
            .as_u64()
            .unwrap();
        // The default idle timeout (60 s) with 61 s pauses, and 2 s with 3 s pauses.
        for (pause, extra) in [(61, vec![]), (3, vec!["--idle-timeout", "2"])] {
            let file = tmp.path(&format!("{pause}-{name}"));
            std::fs::write(&file, replayed(&sample(name), N, pause, 0)).unwrap();
            let t = analyze(&file, &extra)["totals"].clone();
            for (k, v) in &one {
                assert_eq!(t[k].as_u64(), Some(N * v), "{name} x{N}, {pause} s: {k}");
            }
            assert_eq!(t["flows"].as_u64(), Some(N * flows), "{name}");
            assert_eq!(
                t["flows_expired"].as_u64(),
                Some((N - 1) * flows),
                "{name}: every flow but the last replay's expired"
            );
            assert_eq!(t["flows_restarted"].as_u64(), Some(0), "{name}");
        }
        // The text says how many flows ended early.
        let file = tmp.path(&format!("3-{name}"));
        let o = Command::new(bin())
            .arg("analyze")
            .args(["--idle-timeout", "2"])
            .arg(&file)
            .output()
            .unwrap();
        let head = String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap()
            .to_string();
        let want = format!("({} expired after the idle timeout)", (N - 1) * flows);
        assert!(head.ends_with(&want), "{head}");
        if name == "loss-upstream.pcap" {
            // Without a pause, and the same PSNs, the old flows go on (resends of the
            // PSNs sent before): not N times the truth.
            let file = tmp.path("no-pause");
            std::fs::write(&file, replayed(&sample(name), N, 0, 0)).unwrap();
            let t = analyze(&file, &[])["totals"].clone();
            assert_ne!(t["retransmitted_packets"].as_u64(), Some(N * one[2].1));
            // Without a pause but from PSNs half the space away (a new connection's
            // random first PSN): new connections, N times the truth. (The PSNs moved, the
            // ICRCs no longer match: not checked.)
            std::fs::write(&file, replayed(&sample(name), N, 0, 1 << 23)).unwrap();
            let t = analyze(&file, &["--no-icrc"])["totals"].clone();
            for (k, v) in &one {
                assert_eq!(t[k].as_u64(), Some(N * v), "{name} PSNs moved: {k}");
            }
            let conns = analyze(&sample(name), &[])["totals"]["connections"]
                .as_u64()
                .unwrap();
            assert_eq!(t["flows_restarted"].as_u64(), Some((N - 1) * conns));
            assert_eq!(t["flows"].as_u64(), Some(N * flows));
            assert_eq!(t["flows_expired"].as_u64(), Some(0));
            let o = Command::new(bin())
                .args(["analyze", "--no-icrc"])
                .arg(&file)
                .output()
                .unwrap();
            let head = String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap()
                .to_string();
            assert!(
                head.ends_with(&format!(
                    "({} times a QP number came back with a PSN of a new connection)",
                    (N - 1) * conns
                )),
                "{head}"
            );
        }
    }
    // The resends of the clean samples, and what the issue measured before.
    let clean = once("rxe-clean-write.pcap");
    assert_eq!((clean[2].1, clean[3].1), (0, 0));
    let lossy = once("rxe-loss-upstream.pcap");
    assert_eq!((N * lossy[0].1, N * lossy[2].1), (33, 3267));
}

/// The agent on three veths (`--idle-timeout 2s`), a sample replayed N times 4 s apart
/// on each: Soft-RoCE with 2 % loss before the tap, Soft-RoCE clean, a synthetic loss.
#[test]
fn the_agent_counts_n_replays_with_pauses_n_times_the_truth() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay"]) {
        return;
    }
    let tmp = TempDir::new("days-agent");
    let lossy = Wire::new("d");
    let clean = Wire::new("c");
    let synth = Wire::new("s");
    let port = free_port();
    let log = tmp.path("agent.log");
    let args = [
        "-i",
        &lossy.host_if,
        "-i",
        &clean.host_if,
        "-i",
        &synth.host_if,
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--node-name",
        "days",
        "--idle-timeout",
        "2s",
    ];
    let agent = start_agent(&args, &log);
    healthy(port);
    let samples = [
        (&lossy, "rxe-loss-upstream.pcap"),
        (&clean, "rxe-clean-write.pcap"),
        (&synth, "loss-upstream.pcap"),
    ];
    for k in 0..N {
        if k > 0 {
            // Longer than the idle timeout and a tick of the agent's clock.
            std::thread::sleep(Duration::from_secs(4));
        }
        for (w, name) in samples {
            w.replay(&sample(name));
        }
    }
    for (w, name) in samples {
        let series = |m: &str| format!("{m}{{node=\"days\",source=\"{}\"}}", w.host_if);
        let mut want: Vec<(String, f64)> = once(name)
            .into_iter()
            .zip(KEYS)
            .filter(|(_, (_, m))| !m.is_empty())
            .map(|((_, v), (_, m))| (m.to_string(), (N * v) as f64))
            .collect();
        want.push((
            "rocetap_naks_total".into(),
            (N * truth(name, "nak_psn_seq")) as f64,
        ));
        // A family's series of this source summed (resends are by trigger; the samples
        // have no NAK but sequence errors).
        let value = |t: &str, m: &str| -> f64 {
            let src = format!("source=\"{}\"", w.host_if);
            t.lines()
                .filter(|l| l.starts_with(&format!("{m}{{")) && l.contains(&src))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        };
        let until = std::time::Instant::now() + Duration::from_secs(30);
        let (got, last) = loop {
            let t = get(port, "/metrics").map(|x| x.1).unwrap_or_default();
            let now: Vec<(String, f64)> = want
                .iter()
                .map(|(m, _)| (m.clone(), value(&t, m)))
                .collect();
            if now == want || std::time::Instant::now() > until {
                break (t, now);
            }
            std::thread::sleep(Duration::from_millis(250));
        };
        assert_eq!(last, want, "{name} x{N} in /metrics");
        eprintln!("{name} x{N}: {last:?}");
        // Every flow but the last replay's expired (both directions of one QP).
        let expired = metric(&got, &series("rocetap_flows_expired_total")).unwrap();
        assert!(expired >= ((N - 1) * 2) as f64, "{name}: {expired} expired");
        assert_eq!(
            metric(&got, &series("rocetap_flows_restarted_total")),
            Some(0.0)
        );
    }
    // The rxe frames were captured at 128 bytes: their ICRC is cut, and says so.
    let (_, t) = get(port, "/metrics").unwrap();
    let cut = analyze(&sample("rxe-loss-upstream.pcap"), &[])["totals"]["icrc_unchecked"]
        .as_u64()
        .unwrap();
    let series = format!(
        "rocetap_icrc_unchecked_packets_total{{node=\"days\",source=\"{}\"}}",
        lossy.host_if
    );
    assert_eq!(metric(&t, &series), Some((N * cut) as f64));
    stop_agent(agent);
}

/// `sample` cut right after its first NAK: the gap the NAK names is never filled (the
/// resend and everything after it are left out) — a loss the network made.
fn cut_after_first_nak(sample_pcap: &Path) -> Vec<u8> {
    let o = Command::new(bin())
        .args(["decode", "--format", "csv"])
        .arg(sample_pcap)
        .output()
        .unwrap();
    let (head, rows) = common::parse_csv(&String::from_utf8_lossy(&o.stdout));
    let kind = head.iter().position(|h| h == "rocetap.aeth.kind").unwrap();
    let n = rows.iter().position(|r| r[kind] == "NAK").unwrap() + 1;
    let (mut v, nano, recs) = records(&std::fs::read(sample_pcap).unwrap());
    let unit = if nano { 1_000_000_000 } else { 1_000_000 };
    for (t, rest) in &recs[..n] {
        let (s, frac) = (t / unit, t % unit);
        v.extend_from_slice(&(s as u32).to_le_bytes());
        v.extend_from_slice(&(frac as u32).to_le_bytes());
        v.extend_from_slice(rest);
    }
    v
}

/// Gaps never filled show in /metrics at the gap timeout, while their flows still live
/// (the idle timeout is a minute): the unrecovered-gap alert (unrecovered minus capture
/// loss) can fire during the connection, not only after it ended. One source sees gaps
/// the capture missed (capture-loss), the other a loss the network made and a NAK named
/// (loss-upstream cut after its first NAK).
#[test]
fn an_unrecovered_gap_shows_while_the_flow_lives() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay"]) {
        return;
    }
    let tmp = TempDir::new("days-gap");
    let missed = Wire::new("u");
    let lost = Wire::new("n");
    let port = free_port();
    let log = tmp.path("agent.log");
    let args = [
        "-i",
        &missed.host_if,
        "-i",
        &lost.host_if,
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--node-name",
        "days",
        "--idle-timeout",
        "60s",
        "--gap-timeout",
        "2s",
    ];
    let agent = start_agent(&args, &log);
    healthy(port);
    let cut = tmp.path("loss-upstream-cut.pcap");
    std::fs::write(&cut, cut_after_first_nak(&sample("loss-upstream.pcap"))).unwrap();
    // What analyze says of the cut file at its end: the same, counted live.
    let end = analyze(&cut, &[])["totals"].clone();
    let n = |k: &str| end[k].as_u64().unwrap() as f64;
    let (unrecovered, capture_loss) = (n("unrecovered_gap_events"), n("capture_loss_gap_events"));
    assert!(unrecovered > capture_loss, "{end}");
    missed.replay(&sample("capture-loss.pcap"));
    lost.replay(&cut);
    let want = truth("capture-loss.pcap", "unrecovered_gap_events") as f64;
    for (w, unrec, capture) in [(&missed, want, want), (&lost, unrecovered, capture_loss)] {
        let series = |m: &str| format!("{m}{{node=\"days\",source=\"{}\"}}", w.host_if);
        let t = wait_for("the unrecovered gaps in /metrics", 20, || {
            let (_, t) = get(port, "/metrics")?;
            (metric(&t, &series("rocetap_psn_gaps_unrecovered_total")) == Some(unrec)).then_some(t)
        });
        let tracked = metric(&t, &series("rocetap_connections_tracked")).unwrap();
        assert!(tracked > 0.0, "the flows still live: {tracked}");
        assert_eq!(
            metric(&t, &series("rocetap_psn_gaps_capture_loss_total")),
            Some(capture)
        );
        assert_eq!(
            metric(&t, &series("rocetap_flows_expired_total")),
            Some(0.0)
        );
    }
    stop_agent(agent);
}

/// `--gap-timeout` (and `gap_timeout` in `--config`): a bad value is a one-line error,
/// exit 2, before any source opens; root or not.
#[test]
fn a_bad_gap_timeout_is_a_one_line_error() {
    let tmp = TempDir::new("days-bad");
    let refused = |args: &[&str]| {
        let o = Command::new(bin())
            .arg("agent")
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("rocetap: ") && err.lines().count() == 1,
            "{err}"
        );
        err
    };
    for bad in ["0s", "soon"] {
        let e = refused(&["-i", "lo", "--gap-timeout", bad]);
        assert!(e.contains("gap"), "{e}");
    }
    let cfg = tmp.path("agent.yaml");
    std::fs::write(&cfg, "interface: lo\ngap_timeout: 0s\n").unwrap();
    let e = refused(&["--config", cfg.to_str().unwrap()]);
    assert!(e.contains("'gap_timeout'") && e.contains("positive"), "{e}");
}
