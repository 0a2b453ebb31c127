//! `analyze --jobs N`: the report is the same byte for byte whatever N, in text (with
//! `--events -v`) and JSON, on every sample (`samples/*.pcap*`, `samples/taps/*`), every
//! shared capture, several files merged, `--tap`, and a many-QP trace with loss large
//! enough that the analysis warms flows ahead (thousands of frames, dozens of batches: a
//! batch analyzed out of order, or frames reordered inside one, changes the events and
//! the flows' first/last times). `--jobs 0` and `--jobs` with `-i` are refused (exit 2).

use crate::common;
use common::TempDir;
use std::path::{Path, PathBuf};

/// Job counts compared: one thread, two (the split read), and an odd one above the cores
/// a CI machine may have.
const JOBS: [&str; 3] = ["1", "2", "3"];

/// Runs `analyze ARGS --jobs N` for every N of [`JOBS`] in text (`--events -v`) and JSON;
/// panics naming the first N and format whose output differs from `--jobs 1`'s. Returns
/// the JSON of `--jobs 1`.
fn same_for_every_n(what: &str, args: &[&str]) -> String {
    let mut json = String::new();
    for format in [
        &["--events", "-v"][..],
        &["--format", "json", "--events"][..],
    ] {
        let mut first: Option<Vec<u8>> = None;
        for n in JOBS {
            let mut a = vec!["analyze", "-q", "--jobs", n, "--color", "never"];
            a.extend_from_slice(format);
            a.extend_from_slice(args);
            let out = common::rocetap(&a);
            let code = out.status.code();
            assert!(
                matches!(code, Some(0 | 1)),
                "{what} --jobs {n}: exit {code:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            match &first {
                None => first = Some(out.stdout),
                Some(one) => assert!(
                    *one == out.stdout,
                    "{what}: `--jobs {n} {}` differs from `--jobs 1`",
                    format.join(" ")
                ),
            }
        }
        if format[0] == "--format" {
            json = String::from_utf8(first.unwrap_or_default()).expect("JSON is UTF-8");
        }
    }
    json
}

/// Every capture file directly under `dir` (not the truth or golden files beside them).
fn captures_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read the samples directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".pcap") || n.ends_with(".pcapng")
        })
        .collect();
    out.sort();
    out
}

fn samples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples")
}

#[test]
fn every_sample_gives_the_same_report_whatever_the_jobs() {
    let files = captures_in(&samples_dir());
    assert!(files.len() >= 20, "samples found: {}", files.len());
    for f in &files {
        let p = f.display().to_string();
        same_for_every_n(&p, &[&p]);
    }
}

#[test]
fn every_tap_sample_and_merged_files_give_the_same_report_whatever_the_jobs() {
    let dir = samples_dir().join("taps");
    let files = captures_in(&dir);
    assert!(files.len() >= 5, "tap samples found: {}", files.len());
    for f in &files {
        let p = f.display().to_string();
        same_for_every_n(&p, &[&p]);
    }
    // Several files merged by timestamp, and the taps merged.
    let two: Vec<String> = ["two-taps.a.pcap", "two-taps.s.pcap"]
        .iter()
        .map(|n| dir.join(n).display().to_string())
        .collect();
    same_for_every_n("two files", &["-r", &two[0], "-r", &two[1]]);
    let taps: Vec<String> = two.iter().map(|p| format!("--tap={p}")).collect();
    same_for_every_n("--tap", &[&taps[0], &taps[1]]);
}

#[test]
fn every_shared_capture_gives_the_same_report_whatever_the_jobs() {
    for f in common::capture_files() {
        let p = f.display().to_string();
        same_for_every_n(&p, &[&p]);
    }
}

#[test]
fn a_lossy_many_qp_trace_gives_the_same_report_whatever_the_jobs() {
    let t = TempDir::new("jobs");
    let trace = t.path("many.pcap");
    let trace = trace.to_str().expect("a UTF-8 temporary path");
    common::run_ok(&[
        common::bin(),
        "synth",
        "many-qp",
        "--qps",
        "1500",
        "--peers",
        "16",
        "--loss",
        "50",
        "--msg-size",
        "8192",
        "--packets",
        "40000",
        "-s",
        "128",
        "-o",
        trace,
    ]);
    let json = same_for_every_n("many-qp, 1,500 QPs, loss", &[trace]);
    // Enough flows that the analysis warms them ahead (`WARM_FROM`), and events to order.
    let v: serde_json::Value = serde_json::from_str(&json).expect("the JSON report");
    let flows = v["flows"].as_array().map_or(0, Vec::len);
    let events = v["events"].as_array().map_or(0, Vec::len);
    assert!(flows >= 3000, "flows: {flows}");
    assert!(events >= 100, "events: {events}");
}

#[test]
fn jobs_zero_and_jobs_with_a_live_device_are_refused() {
    let sample = common::sample("clean-rc.pcap");
    for args in [
        &["analyze", "--jobs", "0", &sample][..],
        &["analyze", "--jobs", "two", &sample][..],
        &["analyze", "--jobs", "2", "-i", "lo"][..],
    ] {
        let out = common::rocetap(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--jobs"), "{args:?}: {err}");
    }
}
