//! Mirror sessions as taps: one collector capture carrying two ERSPAN III sessions (the
//! taps of `rocetap::synth::taps` mirrored by `rocetap::synth::taps_mirror`) split into
//! taps with `--tap FILE@erspan:ID` or `FILE@mirrors`:
//! - the split analysis equals that of the same sessions given as two separate files
//!   (every segment, PSN, NAK, delay variation and tap count; only the clock offsets
//!   differ: estimated between files, zero on the collector's one clock), and the
//!   ordinary analysis is the first session's alone, as it is of the first file;
//! - `@mirrors` orders the sessions by first sighting (not by session id) and names them;
//! - the committed sample `samples/taps/mirror-two-sessions.pcap` is the generator's and
//!   its reports are the goldens (`UPDATE_EXPECT=1 cargo test --test analyze
//!   mirror_taps::` rewrites them);
//! - bad selectors are one-line errors, exit 2.

use crate::common::{rocetap, TempDir};
use crate::taps::{holds_to, two_tap_spec};
use dissectors::tunnel::encap::Encap;
use dissectors::TunnelKind;
use rocetap::synth::taps_mirror::{mirror, Mirrored};
use serde_json::Value;
use std::fs;
use std::path::Path;

/// Tap a (near the sender) is session 9 ingress, tap s session 4 egress: sorting by id
/// would put them the wrong way round.
fn sessions() -> [Encap; 2] {
    let mut a = Encap::new(TunnelKind::ErspanIII, 9);
    a.egress = false;
    let mut s = Encap::new(TunnelKind::ErspanIII, 4);
    s.egress = true;
    [a, s]
}

fn generate() -> Mirrored {
    mirror(&two_tap_spec(), &sessions()).unwrap()
}

fn json(args: &[&str], cwd: &Path) -> Value {
    let o = std::process::Command::new(crate::common::bin())
        .args(["analyze", "-q", "-F", "json"])
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The merged analysis without the clock offsets, the taps' mirror sessions and the loss times (those seen at a
/// later tap are on the first tap's clock through the offset: estimated between files).
fn merged(v: &Value) -> (Value, Vec<Value>) {
    let mut taps = v["taps"].clone();
    for p in taps["points"].as_array_mut().unwrap() {
        p.as_object_mut().unwrap().remove("clock_offset_s");
        p.as_object_mut().unwrap().remove("mirror_session");
    }
    for d in taps["directions"].as_array_mut().unwrap() {
        for sg in d["segments"].as_array_mut().unwrap() {
            let o = sg.as_object_mut().unwrap();
            o.remove("first_s");
            o.remove("last_s");
        }
    }
    let t = &v["totals"];
    let keys = [
        "lost_before_first_tap",
        "lost_between_taps",
        "lost_after_last_tap",
        "queueing_delay_median_s",
    ];
    (taps, keys.iter().map(|k| t[*k].clone()).collect())
}

#[test]
fn split_stream_equals_the_sessions_as_separate_files() {
    let d = TempDir::new("mirror-split");
    let m = generate();
    fs::write(d.path("m.pcap"), &m.merged).unwrap();
    fs::write(d.path("s9.pcap"), &m.apart[0]).unwrap();
    fs::write(d.path("s4.pcap"), &m.apart[1]).unwrap();
    let apart = json(&["--tap", "a=s9.pcap", "--tap", "s=s4.pcap"], &d.0);
    let split = json(
        &[
            "--tap",
            "a=m.pcap@erspan:9",
            "--tap",
            "s=m.pcap@erspan:4,out",
        ],
        &d.0,
    );
    holds_to(&split, &m.truth);
    assert_eq!(merged(&split), merged(&apart));
    // The loss times agree within the clock offset estimated between the files.
    let times = |v: &Value| -> Vec<f64> {
        v["taps"]["directions"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|d| d["segments"].as_array().unwrap().iter())
            .flat_map(|s| [s["first_s"].as_f64(), s["last_s"].as_f64()])
            .map(|t| t.unwrap_or(0.0))
            .collect()
    };
    for (x, y) in times(&split).iter().zip(times(&apart)) {
        assert!((x - y).abs() < 1e-5, "{x} vs {y}");
    }
    // The ordinary analysis is the first tap's: of its session only.
    let rest = |v: &Value| {
        let mut v = v.clone();
        for k in ["taps", "input", "inputs"] {
            v.as_object_mut().unwrap().remove(k);
        }
        v
    };
    assert_eq!(rest(&split), rest(&apart));
    let sessions: Vec<&str> = split["taps"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["mirror_session"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, ["erspan:9", "erspan:4,out"]);
    assert!(apart["taps"]["points"][0].get("mirror_session").is_none());
    // The one clock: no offset estimated.
    for p in split["taps"]["points"].as_array().unwrap() {
        assert_eq!(p["clock_offset_s"], 0.0, "{p}");
    }
    // Every session a tap, in the order they saw the first packet, named by identity.
    let all = json(&["--tap", "m.pcap@mirrors"], &d.0);
    let names: Vec<&str> = all["taps"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["erspan-9-in", "erspan-4-out"]);
    holds_to(&all, &m.truth);
    assert_eq!(merged(&all).1, merged(&apart).1);
}

#[test]
fn mirror_sample_and_goldens() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/taps");
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    let m = generate();
    let sample = dir.join("mirror-two-sessions.pcap");
    if update {
        fs::write(&sample, &m.merged).unwrap();
    }
    assert!(
        fs::read(&sample).unwrap() == m.merged,
        "{} differs from the generator",
        sample.display()
    );
    for (ext, extra) in [("txt", vec![]), ("json", vec!["-F", "json"])] {
        let o = std::process::Command::new(crate::common::bin())
            .args(["analyze", "-q", "--tap", "mirror-two-sessions.pcap@mirrors"])
            .args(&extra)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let golden = dir.join(format!("mirror-two-sessions.analyze.{ext}"));
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
            holds_to(&serde_json::from_slice(&o.stdout).unwrap(), &m.truth);
        }
    }
}

#[test]
fn bad_selectors_exit_2() {
    let d = TempDir::new("mirror-bad");
    let m = generate();
    fs::write(d.path("m.pcap"), &m.merged).unwrap();
    fs::write(d.path("s9.pcap"), &m.apart[0]).unwrap();
    let plain = crate::common::sample("clean-rc.pcap");
    let m = d.path("m.pcap").display().to_string();
    let s9 = d.path("s9.pcap").display().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![format!("{m}@erspan:x"), format!("{m}@erspan:4")],
            "selector",
        ),
        (
            vec![format!("{m}@sflow:1"), format!("{m}@erspan:4")],
            "selector",
        ),
        (
            vec![format!("{m}@erspan:4,sideways"), format!("{m}@erspan:9")],
            "selector",
        ),
        (vec![format!("a={m}@mirrors")], "no NAME="),
        (vec![format!("{plain}@mirrors")], "0 mirror sessions"),
        (vec![format!("{s9}@mirrors")], "1 mirror sessions"),
        (
            vec![format!("{m}@erspan:4"), format!("{m}@erspan:4")],
            "two taps are named erspan-4",
        ),
        (vec![format!("{m}@mirrors"); 5], "2 to 8 taps, 10 given"),
    ];
    for (taps, want) in cases {
        let mut args = vec!["analyze".to_string()];
        for t in &taps {
            args.push("--tap".into());
            args.push(t.clone());
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = rocetap(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
