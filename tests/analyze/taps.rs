//! `rocetap analyze --tap`: captures of one connection at several points merged, held to
//! the truth of `rocetap::synth::taps` exactly (lost per segment, PSNs, NAKs, timer
//! retries, frames a tap missed), the queueing delay median to what the generator put
//! between the taps, hostile input (an empty tap, unrelated taps, clocks seconds apart),
//! and the multi-tap samples in `samples/taps/` with their goldens: two from the generator,
//! two recorded in the lab's A — S — B topology held to netem's counts
//! (`UPDATE_EXPECT=1 cargo test --test analyze taps::` rewrites them).

use crate::common::{rocetap, TempDir};
use rocetap::synth::taps::{write, Spec, Truth};
use serde_json::Value;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

const NAMES: [&str; 3] = ["a", "s", "b"];

/// Writes the taps of `spec` into `dir` and returns their files and the truth.
fn gen(spec: &Spec, dir: &Path, stem: &str) -> (Vec<PathBuf>, Truth) {
    let files: Vec<PathBuf> = (0..spec.taps)
        .map(|k| dir.join(format!("{stem}.{}.pcap", NAMES[k])))
        .collect();
    let outs = files.iter().map(|f| File::create(f).unwrap()).collect();
    let truth = write(spec, outs).unwrap();
    (files, truth)
}

fn analyze(files: &[PathBuf], extra: &[&str]) -> (i32, String, String) {
    let mut args: Vec<String> = vec!["analyze".into(), "-q".into()];
    for (k, f) in files.iter().enumerate() {
        args.push("--tap".into());
        args.push(format!("{}={}", NAMES[k], f.display()));
    }
    args.extend(extra.iter().map(ToString::to_string));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = rocetap(&a);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn json(files: &[PathBuf], extra: &[&str]) -> Value {
    let mut e = vec!["-F", "json"];
    e.extend_from_slice(extra);
    let (code, out, err) = analyze(files, &e);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// The A → B direction (the WRITEs) of the merged analysis.
fn forward(v: &Value) -> &Value {
    v["taps"]["directions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["src"] == "192.0.2.1")
        .unwrap()
}

/// Every segment's losses, PSNs, NAKs and timer retries are the truth's.
pub(crate) fn holds_to(v: &Value, t: &Truth) {
    let d = forward(v);
    let segs = d["segments"].as_array().unwrap();
    assert_eq!(segs.len(), t.lost.len());
    for (i, s) in segs.iter().enumerate() {
        let psns: Vec<u64> = t.lost[i].iter().map(|&p| u64::from(p)).collect();
        assert_eq!(s["lost"], psns.len() as u64, "segment {i}: {s}");
        assert_eq!(s["psns"], serde_json::json!(psns), "segment {i}");
        assert_eq!(s["naks"], t.naks[i], "segment {i}: {s}");
        assert_eq!(s["timer_retries"], t.timer_retries[i], "segment {i}: {s}");
    }
    let n = t.lost.len() - 1;
    let tot = &v["totals"];
    assert_eq!(tot["lost_before_first_tap"], t.lost[0].len() as u64);
    assert_eq!(tot["lost_after_last_tap"], t.lost[n].len() as u64);
    let between: usize = t.lost[1..n].iter().map(Vec::len).sum();
    assert_eq!(tot["lost_between_taps"], between as u64);
    for (k, p) in v["taps"]["points"].as_array().unwrap().iter().enumerate() {
        assert_eq!(p["missed"], t.missed[k], "tap {k}");
        assert_eq!(p["trusted"], t.missed[k] == 0, "tap {k}");
    }
}

fn queueing_close(v: &Value, t: &Truth) {
    let q = v["totals"]["queueing_delay_median_s"].as_f64().unwrap() * 1e9;
    let want = t.queueing_median_ns as f64;
    assert!(
        (q - want).abs() <= 0.25 * want,
        "queueing median {q} ns, generator {want} ns"
    );
}

pub(crate) fn two_tap_spec() -> Spec {
    Spec {
        taps: 2,
        packets: 300,
        drops: vec![(10, 0), (40, 1), (41, 1), (90, 2), (150, 1), (299, 1)],
        ..Spec::default()
    }
}

fn three_tap_spec() -> Spec {
    Spec {
        taps: 3,
        packets: 400,
        drops: vec![(5, 0), (60, 1), (61, 2), (120, 2), (200, 3), (399, 3)],
        misses: vec![(30, 0), (31, 1), (250, 1)],
        ..Spec::default()
    }
}

#[test]
fn two_taps_place_every_loss() {
    let d = TempDir::new("taps2");
    let (files, t) = gen(&two_tap_spec(), &d.0, "two");
    let v = json(&files, &[]);
    holds_to(&v, &t);
    queueing_close(&v, &t);
    // No absolute one-way delay without synchronised clocks.
    assert!(forward(&v)["delays"][0]["median_s"].is_null());
}

#[test]
fn three_taps_place_every_loss_and_blame_the_taps_that_missed() {
    let d = TempDir::new("taps3");
    let (files, t) = gen(&three_tap_spec(), &d.0, "three");
    assert_eq!(t.missed, vec![1, 2, 0]);
    let v = json(&files, &[]);
    holds_to(&v, &t);
    queueing_close(&v, &t);
    let (_, text, _) = analyze(&files, &[]);
    assert!(text.contains("tap s missed 2 packets"), "{text}");
}

#[test]
fn synced_clocks_give_the_one_way_delay() {
    let d = TempDir::new("taps-sync");
    let (files, _) = gen(&two_tap_spec(), &d.0, "sync");
    let v = json(&files, &["--clocks-synced"]);
    // The generator's minimum between the taps: hop_ns (2 µs) + the smallest jitter
    // (a few ns over 300 packets); the ACKs back cross it in exactly 2 µs.
    let min = forward(&v)["delays"][0]["min_s"].as_f64().unwrap();
    assert!((2e-6..2.05e-6).contains(&min), "{min}");
    let back = v["taps"]["directions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["src"] == "192.0.2.2")
        .unwrap();
    assert_eq!(back["delays"][0]["min_s"], 2e-6);
    assert_eq!(back["path"], serde_json::json!(["s", "a"]));
}

#[test]
fn clocks_seconds_apart_change_nothing_but_the_offset() {
    let d = TempDir::new("taps-skew");
    let (files, t) = gen(&two_tap_spec(), &d.0, "base");
    let skewed = Spec {
        skew_ns: vec![0, -3_700_000_000],
        ..two_tap_spec()
    };
    let (sfiles, _) = gen(&skewed, &d.0, "skew");
    let (a, b) = (json(&files, &[]), json(&sfiles, &[]));
    holds_to(&b, &t);
    assert_eq!(
        a["totals"]["queueing_delay_median_s"],
        b["totals"]["queueing_delay_median_s"]
    );
    assert_eq!(forward(&a)["delays"], forward(&b)["delays"]);
}

#[test]
fn an_empty_tap_and_unrelated_taps_are_reported_not_blamed() {
    let d = TempDir::new("taps-hostile");
    let (files, _) = gen(&two_tap_spec(), &d.0, "x");
    let empty = d.path("empty.pcap");
    fs::write(&empty, b"").unwrap();
    let (code, text, err) = analyze(&[files[0].clone(), empty], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("tap s: no RoCE packets"), "{text}");
    assert!(
        text.contains("lost before the first tap 0, between taps 0, after the last tap 0"),
        "{text}"
    );
    // A capture of other traffic: the 3-tap scenario's first tap uses the same hosts and
    // QPs, so take a clean-rc sample instead.
    let other = PathBuf::from(crate::common::sample("clean-rc.pcap"));
    let v = json(&[files[0].clone(), other], &[]);
    assert_eq!(v["totals"]["lost_between_taps"], 0);
    assert!(v["taps"]["points"][1]["alone"].as_u64().unwrap() > 0);
}

#[test]
fn a_tap_cut_short_is_judged_only_while_it_captured() {
    let d = TempDir::new("taps-cut");
    let (files, t) = gen(&two_tap_spec(), &d.0, "c");
    // Tap s ends in the middle of its 5th record (24-byte header, ~100-byte frames).
    let bytes = fs::read(&files[1]).unwrap();
    fs::write(&files[1], &bytes[..500]).unwrap();
    let v = json(&files, &[]);
    assert_eq!(v["taps"]["points"][1]["cut_short"], true);
    assert_eq!(v["taps"]["points"][1]["trusted"], false);
    assert_eq!(v["taps"]["points"][1]["missed"], 0);
    // Before the first tap still counts; nothing is put between or after the taps
    // for the time tap s was not capturing.
    assert_eq!(v["totals"]["lost_before_first_tap"], t.lost[0].len() as u64);
    assert_eq!(v["totals"]["lost_between_taps"], 0);
    assert_eq!(v["totals"]["lost_after_last_tap"], 0);
}

#[test]
fn a_tap_whose_capture_reports_drops_is_not_trusted() {
    let d = TempDir::new("taps-isb");
    let spec = Spec {
        capture_drops: vec![(1, 17)],
        ..two_tap_spec()
    };
    let (files, t) = gen(&spec, &d.0, "isb");
    let v = json(&files, &[]);
    let p = &v["taps"]["points"];
    assert_eq!(
        (p[0]["capture_dropped"].clone(), p[0]["trusted"].clone()),
        (Value::Null, Value::Bool(true))
    );
    assert_eq!(
        (p[1]["capture_dropped"].clone(), p[1]["trusted"].clone()),
        (17.into(), Value::Bool(false))
    );
    // The frames themselves are the same: the placement holds.
    assert_eq!(forward(&v)["segments"][1]["lost"], t.lost[1].len() as u64);
    let (_, text, _) = analyze(&files, &[]);
    assert!(
        text.contains("tap s: its capture reports 17 frames dropped"),
        "{text}"
    );
}

#[test]
fn rules_see_the_merged_totals() {
    let d = TempDir::new("taps-rules");
    let (files, _) = gen(&two_tap_spec(), &d.0, "r");
    let (code, _, err) = analyze(&files, &["--fail-on", "lost_between_taps > 3"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("lost_between_taps > 3 (actual 4)"), "{err}");
    let (code, _, err) = analyze(&files, &["--fail-on", "lost_after_last_tap > 1"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn bad_tap_arguments_exit_2() {
    let d = TempDir::new("taps-args");
    let (files, _) = gen(&two_tap_spec(), &d.0, "y");
    let f = files[0].display().to_string();
    for args in [
        vec!["analyze", "--tap", f.as_str()],
        vec!["analyze", "--tap", f.as_str(), "--tap", f.as_str()],
        vec![
            "analyze",
            "--tap",
            "a=/nonexistent/x.pcap",
            "--tap",
            f.as_str(),
        ],
        vec!["analyze", f.as_str(), "--tap", "a=x", "--tap", "b=y"],
        vec![
            "analyze",
            "--tap",
            f.as_str(),
            "--tap",
            "b=y",
            "--tap-window",
            "0",
        ],
    ] {
        let o = rocetap(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            err.trim().lines().count().min(3),
            err.trim().lines().count(),
            "{err}"
        );
    }
}

/// The committed samples are the generator's output, and their reports the goldens.
#[test]
fn samples_and_goldens() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/taps");
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    let tmp = TempDir::new("taps-samples");
    for (stem, spec) in [
        ("two-taps", two_tap_spec()),
        ("three-taps", three_tap_spec()),
    ] {
        let (files, truth) = gen(&spec, &tmp.0, stem);
        let committed: Vec<PathBuf> = files
            .iter()
            .map(|f| dir.join(f.file_name().unwrap()))
            .collect();
        if update {
            fs::create_dir_all(&dir).unwrap();
            for (f, c) in files.iter().zip(&committed) {
                fs::copy(f, c).unwrap();
            }
        }
        for (f, c) in files.iter().zip(&committed) {
            assert_eq!(
                fs::read(f).unwrap(),
                fs::read(c).unwrap(),
                "{} differs from the generator",
                c.display()
            );
        }
        // Reports of the committed files, named relative to samples/taps.
        let rel: Vec<PathBuf> = committed
            .iter()
            .map(|c| PathBuf::from(c.file_name().unwrap()))
            .collect();
        for (ext, extra) in [("txt", vec![]), ("json", vec!["-F", "json"])] {
            let mut args: Vec<String> = vec!["analyze".into(), "-q".into()];
            for (k, f) in rel.iter().enumerate() {
                args.push("--tap".into());
                args.push(format!("{}={}", NAMES[k], f.display()));
            }
            args.extend(extra.iter().map(ToString::to_string));
            let o = std::process::Command::new(crate::common::bin())
                .args(&args)
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let golden = dir.join(format!("{stem}.analyze.{ext}"));
            if update {
                fs::write(&golden, &o.stdout).unwrap();
            }
            assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                fs::read_to_string(&golden).unwrap(),
                "{}",
                golden.display()
            );
            if ext == "json" {
                holds_to(&serde_json::from_slice(&o.stdout).unwrap(), &truth);
            }
        }
    }
}

/// The lab's recordings (`lab/rxe/make-samples.sh`: three VMs A — S — B, the switch S
/// drops 2 % on its port toward B (WRITEs) or toward A (READ responses), taps at A and B):
/// their reports are goldens and every loss is between the taps, netem's count exactly.
#[test]
fn lab_samples_and_goldens() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/taps");
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    for stem in ["switch-write-s", "switch-read-s", "switch-write-s-long"] {
        let truth: Value =
            serde_json::from_slice(&fs::read(dir.join(format!("{stem}.truth.json"))).unwrap())
                .unwrap();
        for (ext, extra) in [("txt", vec![]), ("json", vec!["-F", "json"])] {
            // --tap-window 2: the VMs' clocks under TCG put packets tens of ms late
            let a = format!("A={stem}.A.pcap");
            let b = format!("B={stem}.B.pcap");
            let mut args = vec![
                "analyze",
                "-q",
                "--tap-window",
                "2",
                "--tap",
                &a,
                "--tap",
                &b,
            ];
            args.extend(extra);
            let o = std::process::Command::new(crate::common::bin())
                .args(&args)
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let golden = dir.join(format!("{stem}.analyze.{ext}"));
            if update {
                fs::write(&golden, &o.stdout).unwrap();
            }
            assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                fs::read_to_string(&golden).unwrap(),
                "{}",
                golden.display()
            );
            if ext != "json" {
                continue;
            }
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            for (dir_name, src) in [("A->B", "198.18.0.1"), ("B->A", "198.18.0.2")] {
                for (seg, loc) in [
                    ("before_first_tap", "before_tap"),
                    ("between_taps", "between_taps"),
                    ("after_last_tap", "after_tap"),
                ] {
                    let got: u64 = v["taps"]["directions"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|d| d["src"] == src)
                        .flat_map(|d| d["segments"].as_array().unwrap())
                        .filter(|s| s["location"] == loc)
                        .map(|s| s["lost"].as_u64().unwrap())
                        .sum();
                    assert_eq!(
                        got, truth["expected"]["lost"][dir_name][seg],
                        "{stem}: {dir_name} {seg}"
                    );
                }
            }
            assert!(v["taps"]["points"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["trusted"] == true));
        }
    }
}

/// Not a check: writes two taps of `TAPS_PACKETS` (default 200,000) packets into
/// `TAPS_OUT` (default a temporary directory) for timing `analyze --tap` by hand.
#[test]
#[ignore = "writes large captures for timing by hand"]
fn write_large_taps() {
    let n: u32 = std::env::var("TAPS_PACKETS").map_or(200_000, |v| v.parse().unwrap());
    let dir = std::env::var("TAPS_OUT").map_or_else(|_| std::env::temp_dir(), PathBuf::from);
    let spec = Spec {
        packets: n,
        drops: (0..n / 1000)
            .map(|i| (i * 1000 + 7, (i % 3) as usize))
            .collect(),
        ..Spec::default()
    };
    let (files, t) = gen(&spec, &dir, "large");
    eprintln!(
        "{files:?}: lost per segment {:?}",
        t.lost.iter().map(Vec::len).collect::<Vec<_>>()
    );
}
