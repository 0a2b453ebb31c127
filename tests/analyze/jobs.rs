//! `analyze --jobs N`: the report is the same byte for byte whatever N, in text (with
//! `--events -v`) and JSON, on every sample (`samples/*.pcap*`, `samples/taps/*`), every
//! shared capture, several files merged, `--tap`, and a many-QP trace with loss large
//! enough that the analysis warms flows ahead (thousands of frames, dozens of batches: a
//! batch analyzed out of order, or frames reordered inside one, changes the events and
//! the flows' first/last times). `--jobs 0` and `--jobs` with `-i` are refused (exit 2).
//! Then the cases a merge of per-host-pair shards could get wrong: flows expired by the
//! sweeps and renewed in every shard, summaries capped (`--max-flows`), a cap falling
//! inside one sweep, a trace cut while gaps are open, one PFC storm stalling flows of host
//! pairs in different shards.

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

// The cases below are the ones a merge of per-shard results (issue 45 item 3: `analyze`
// sharded by host pair, `pipeline::shard`) could get wrong; today's `--jobs` (a split
// read) passes them by construction, a sharded one must too. Each checks it is not
// vacuous: the host pairs involved fall in different shards for two and three jobs.

/// The shards of `n` the host pairs of the report's flows fall in.
fn shards_of(json: &serde_json::Value, n: usize) -> std::collections::BTreeSet<usize> {
    use rocetap::pipeline::shard::{pair_hash, Route};
    json["flows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let a = f["src"].as_str()?.parse().ok()?;
            let b = f["dst"].as_str()?.parse().ok()?;
            Route::Pair(pair_hash(a, b)).shard(n)
        })
        .collect()
}

fn in_several_shards(json: &serde_json::Value) {
    for n in [2, 3] {
        assert!(shards_of(json, n).len() >= 2, "flows in one shard of {n}");
    }
}

fn json_of(s: &str) -> serde_json::Value {
    serde_json::from_str(s).expect("the JSON report")
}

/// A lossy many-QP trace over 8 host pairs, 40,000 frames (two sweeps and more).
fn lossy_trace(t: &TempDir) -> String {
    let trace = t.path("lossy.pcap").display().to_string();
    common::run_ok(&[
        common::bin(),
        "synth",
        "many-qp",
        "--qps",
        "64",
        "--peers",
        "8",
        "--loss",
        "100",
        "--msg-size",
        "8192",
        "--packets",
        "40000",
        "-s",
        "128",
        "-o",
        &trace,
    ]);
    trace
}

#[test]
fn flows_expired_by_sweeps_in_every_shard_and_capped_summaries_give_the_same_report() {
    let t = TempDir::new("jobs-sweep");
    let trace = lossy_trace(&t);
    // Flows of every host pair first seen interleaved, expired by their own next frame and
    // by the sweeps (every 16,384 frames) in every shard at once, renewed with new ids,
    // and more of them than the summaries kept (20,000 by default; 50 below).
    let json = json_of(&same_for_every_n(
        "many-qp, idle timeout 0.1 ms",
        &["--idle-timeout", "0.0001", &trace],
    ));
    in_several_shards(&json);
    let totals = &json["totals"];
    assert!(totals["flows_expired"].as_u64() > Some(10_000), "{totals}");
    assert!(
        totals["flow_summaries_dropped"].as_u64() > Some(0),
        "{totals}"
    );
    let json = json_of(&same_for_every_n(
        "many-qp, 50 summaries kept",
        &["--max-flows", "50", &trace],
    ));
    in_several_shards(&json);
    assert_eq!(json["flows"].as_array().map(Vec::len), Some(50));
    assert!(json["totals"]["flow_summaries_dropped"].as_u64() > Some(0));
}

#[test]
fn a_trace_that_ends_in_the_middle_of_gaps_gives_the_same_report() {
    let t = TempDir::new("jobs-cut");
    let trace = lossy_trace(&t);
    // Cut right after the packet that opened a PSN gap half-way through (before its NAK
    // and resend): that gap, and any open beside it, is settled at the end of the run, in
    // its shard.
    let full = json_of(&same_for_every_n("many-qp", &[&trace]));
    let gaps: Vec<u64> = full["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["kind"] == "psn_gap")
        .filter_map(|e| e["t_ns"].as_u64())
        .collect();
    assert!(gaps.len() > 100, "gaps: {}", gaps.len());
    let at = gaps[gaps.len() / 2];
    let (header, recs) = common::pcap::read_pcap(std::path::Path::new(&trace));
    let nano = header[0..4] == 0xa1b2_3c4du32.to_le_bytes();
    let ts = |r: &common::pcap::Record| {
        let sec = u64::from(u32::from_le_bytes(r.0[0..4].try_into().unwrap()));
        let frac = u64::from(u32::from_le_bytes(r.0[4..8].try_into().unwrap()));
        sec * 1_000_000_000 + if nano { frac } else { frac * 1000 }
    };
    let keep = recs.iter().take_while(|r| ts(r) <= at).count();
    let cut = t.path("cut.pcap");
    write_pcap(&cut, &header, &recs[..keep]);
    let cut = cut.display().to_string();
    let json = json_of(&same_for_every_n("many-qp cut mid-gap", &[&cut]));
    in_several_shards(&json);
    let totals = &json["totals"];
    assert!(
        totals["unrecovered_gap_events"].as_u64() > Some(0),
        "{totals}"
    );
}

#[test]
fn pfc_pauses_stalling_flows_of_several_host_pairs_give_the_same_report() {
    let t = TempDir::new("jobs-pfc");
    let src = t.path("pfc.pcap");
    common::run_ok(&[
        common::bin(),
        "synth",
        "pfc-storm",
        "-o",
        &src.display().to_string(),
    ]);
    // The storm's RoCE frames again, from a second host pair (198.19.c.x for 198.18.0.x),
    // each right after its original: one PAUSE stalls flows of both pairs.
    let (header, recs) = common::pcap::read_pcap(&src);
    // A second pair in another shard than the first for two and three jobs.
    let v4 = |a: [u8; 4]| std::net::IpAddr::from(a);
    let shard = |c: u8, n: usize| {
        let h = rocetap::pipeline::shard::pair_hash(v4([198, 19, c, 1]), v4([198, 19, c, 2]));
        rocetap::pipeline::shard::Route::Pair(h).shard(n)
    };
    let shard18 = |n: usize| {
        let h = rocetap::pipeline::shard::pair_hash(v4([198, 18, 0, 1]), v4([198, 18, 0, 2]));
        rocetap::pipeline::shard::Route::Pair(h).shard(n)
    };
    let c = (1..=255u8)
        .find(|&c| shard(c, 2) != shard18(2) && shard(c, 3) != shard18(3))
        .expect("a pair in other shards");
    let mut out = Vec::new();
    for r in &recs {
        out.push(r.clone());
        if let Some(copy) = other_pair(r, c) {
            out.push(copy);
        }
    }
    let both = t.path("pfc-two-pairs.pcap");
    write_pcap(&both, &header, &out);
    let both = both.display().to_string();
    let json = json_of(&same_for_every_n("pfc-storm, two host pairs", &[&both]));
    in_several_shards(&json);
    let stalled: std::collections::BTreeSet<&str> = json["flows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["pfc_stalls"].as_u64() > Some(0))
        .filter_map(|f| f["src"].as_str())
        .collect();
    assert!(stalled.len() >= 4, "stalled flows' sources: {stalled:?}");
}

/// The record with its IPv4 addresses (after Ethernet and up to two VLAN tags) moved from
/// 198.18.0.x to 198.19.c.x; `None` when it has none there.
fn other_pair(r: &common::pcap::Record, c: u8) -> Option<common::pcap::Record> {
    let (ts, data, orig) = r;
    let mut off = 12;
    while matches!(data.get(off..off + 2)?, [0x81, 0x00] | [0x88, 0xa8]) {
        off += 4;
    }
    if data.get(off..off + 2)? != [0x08, 0x00] {
        return None;
    }
    let ip = off + 2;
    let mut d = data.clone();
    for a in [ip + 12, ip + 16] {
        if d.get(a..a + 3)? != [198, 18, 0] {
            return None;
        }
        d[a + 1] = 19;
        d[a + 2] = c;
    }
    Some((*ts, d, *orig))
}

fn write_pcap(path: &Path, header: &[u8; 24], recs: &[common::pcap::Record]) {
    let mut v = header.to_vec();
    for (ts, data, orig) in recs {
        v.extend_from_slice(ts);
        v.extend_from_slice(&(data.len() as u32).to_le_bytes());
        v.extend_from_slice(&orig.to_le_bytes());
        v.extend_from_slice(data);
    }
    std::fs::write(path, v).expect("write a pcap");
}

#[test]
fn a_summaries_cap_that_falls_inside_one_sweep_gives_the_same_report() {
    // 128 flows over 8 host pairs that all fall idle at once, then another scenario 10 s
    // later on other host pairs: the first sweep (frame 16,384) expires the 128 together,
    // in the order of their slots, and `--max-flows 50` keeps the first 50 of them — a
    // merge that took each shard's retirements in turn would keep others.
    let t = TempDir::new("jobs-sweep-cap");
    let a = t.path("a.pcap");
    let b = t.path("b.pcap");
    let (a_s, b_s) = (a.display().to_string(), b.display().to_string());
    common::run_ok(&[
        common::bin(),
        "synth",
        "many-qp",
        "--qps",
        "64",
        "--peers",
        "8",
        "--msg-size",
        "8192",
        "--packets",
        "8000",
        "-s",
        "128",
        "-o",
        &a_s,
    ]);
    let b_args = [common::bin(), "synth", "clean-rc", "--packets", "20000"];
    common::run_ok(&[&b_args[..], &["-s", "128", "-o", &b_s]].concat());
    let (header, first) = common::pcap::read_pcap(&a);
    let (_, second) = common::pcap::read_pcap(&b);
    assert!(
        first.len() < 16_384,
        "{} frames before the sweep",
        first.len()
    );
    let later = second.iter().map(|(ts, d, orig)| {
        let mut ts = *ts;
        let sec = u32::from_le_bytes(ts[0..4].try_into().unwrap()) + 10;
        ts[0..4].copy_from_slice(&sec.to_le_bytes());
        (ts, d.clone(), *orig)
    });
    let all: Vec<common::pcap::Record> = first.iter().cloned().chain(later).collect();
    let both = t.path("idle-then-more.pcap");
    write_pcap(&both, &header, &all);
    let both = both.display().to_string();
    let json = json_of(&same_for_every_n(
        "128 flows idle at once, 50 kept",
        &["--idle-timeout", "5", "--max-flows", "50", &both],
    ));
    in_several_shards(&json);
    let totals = &json["totals"];
    assert!(totals["flows_expired"].as_u64() >= Some(128), "{totals}");
    assert!(
        totals["flow_summaries_dropped"].as_u64() > Some(0),
        "{totals}"
    );
    assert_eq!(json["flows"].as_array().map(Vec::len), Some(50));
}
