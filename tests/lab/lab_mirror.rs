//! The Linux kernel as a real switch-mirror exporter (`lab/rxe/mirror.py`, one lab VM):
//! tcpreplay replays a sample into a veth whose ingress `tc ... matchall action mirred
//! egress mirror` copies every frame into an `erspan` (type II and III), `ip6erspan`,
//! `gretap`, `vxlan` or `geneve` link towards a collector namespace, where `rocetap
//! capture -i` (its default filter) and tcpdump record. Here, for every sample and
//! exporter, and for both recordings:
//! - every sample frame arrived once, in order, as the tail of one mirrored frame (read
//!   here, not by rocetap), and nothing else did;
//! - `rocetap analyze --format json` of the recording with each frame given its sample
//!   frame's timestamp equals the sample's analysis exactly, less `input` (names the file)
//!   and `mirrors` / `mirrors_other_frames` (describe the encapsulation, checked apart);
//!   the replay keeps the frames, not their timing, so the recording as captured is held
//!   to the sample's counts (totals and per-flow counters that are not times or rates);
//! - the `mirrors` section names the one session the exporter was set up with;
//! - tshark reads every outer field (GRE, ERSPAN, VXLAN, Geneve, the outer address) of
//!   every frame to the value `rocetap decode --format json` gives.
//!
//! Needs root and the lab (`lab/rxe/build.sh`, run first) and tshark; otherwise `SKIP:`
//! (fails under CI). `ROCETAP_LAB_MIRROR_OUT=DIR` checks mirror.py's output in DIR instead
//! of booting the VM. Bounded: mirror.py runs under `timeout` (100 s idle, under 4 min loaded).

use crate::common::pcap::{read_pcap, Record};
use crate::common::{self, TempDir};
mod lab_mirror_tshark;
use lab_mirror_tshark::tshark_check;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const SAMPLES: &[&str] = &["clean-rc", "loss-upstream", "many-qp"];
/// mirror.py's whole run (boot, 18 replays, copy out), with room for a loaded host.
const BUDGET_S: u32 = 420;

/// An exporter as mirror.py sets it up, and the session `analyze` must name.
struct Exporter {
    tag: &'static str,
    kind: &'static str,
    exporter: &'static str,
    session: u64,
    port: Option<u64>,
    direction: Option<&'static str>,
}

const EXPORTERS: &[Exporter] = &[
    Exporter {
        tag: "erspan2",
        kind: "erspan2",
        exporter: "198.51.100.1",
        session: 100,
        port: Some(123),
        direction: None,
    },
    Exporter {
        tag: "erspan3",
        kind: "erspan3",
        exporter: "198.51.100.1",
        session: 101,
        port: Some(7),
        direction: Some("egress"),
    },
    Exporter {
        tag: "ip6erspan",
        kind: "erspan3",
        exporter: "2001:db8::1",
        session: 102,
        port: Some(9),
        direction: Some("ingress"),
    },
    Exporter {
        tag: "gretap",
        kind: "gre",
        exporter: "198.51.100.1",
        session: 42,
        port: None,
        direction: None,
    },
    Exporter {
        tag: "vxlan",
        kind: "vxlan",
        exporter: "198.51.100.1",
        session: 4242,
        port: None,
        direction: None,
    },
    Exporter {
        tag: "geneve",
        kind: "geneve",
        exporter: "198.51.100.1",
        session: 77,
        port: None,
        direction: None,
    },
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn lab_dir() -> PathBuf {
    std::env::var_os("RXE_LAB").map_or_else(|| PathBuf::from("/var/tmp/rxe-lab"), PathBuf::from)
}

/// The sample as tcpreplay sends it: each frame's wire length is its captured length.
fn as_sent(sample: &([u8; 24], Vec<Record>)) -> Vec<u8> {
    let mut out = sample.0.to_vec();
    for (ts, data, _) in &sample.1 {
        out.extend_from_slice(ts);
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
    }
    out
}

/// The mirror's frames with the sample's global header (its time precision) and
/// timestamps, frame by frame.
fn retimed(sample: &([u8; 24], Vec<Record>), mirror: &[Record]) -> Vec<u8> {
    let mut out = sample.0.to_vec();
    out[16..20].copy_from_slice(&(1u32 << 18).to_le_bytes());
    for ((ts, _, _), (_, data, orig)) in sample.1.iter().zip(mirror) {
        out.extend_from_slice(ts);
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&orig.to_le_bytes());
        out.extend_from_slice(data);
    }
    out
}

fn analyze(p: &Path) -> Value {
    let dir = p.parent().unwrap();
    let name = p.file_name().unwrap().to_str().unwrap();
    serde_json::from_str(&common::rocetap_in(&["analyze", "-F", "json", name], dir)).unwrap()
}

/// The report less what names the input or describes the mirror.
fn comparable(v: &Value) -> String {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        for k in ["mirrors", "mirrors_other_frames", "input", "inputs"] {
            m.remove(k);
        }
    }
    serde_json::to_string_pretty(&v).unwrap()
}

/// Counts that do not depend on timing: integer totals and per-flow counters other than
/// times, durations, rates and the verdicts read from silences (a stall or a give-up:
/// replayed at 1000 pps, rxe-dead-rc-at-once's 30 s after its last retry are 0.1 s, so
/// as captured it is `stalled`, not `retry_exhausted`).
fn counts(v: &Value) -> Vec<String> {
    let timing = |k: &str| {
        [
            "ts",
            "ns",
            "us",
            "ms",
            "time",
            "dur",
            "rate",
            "gap",
            "rtt",
            "latency",
            "stall",
            "exhausted",
        ]
        .iter()
        .any(|t| k.contains(t))
    };
    let mut out = Vec::new();
    for (k, x) in v["totals"].as_object().into_iter().flatten() {
        if x.is_u64() && !timing(k) {
            out.push(format!("totals.{k}={x}"));
        }
    }
    for f in v["flows"].as_array().into_iter().flatten() {
        let mut line = String::new();
        for (k, x) in f.as_object().unwrap() {
            if (x.is_u64() || x.is_string()) && !timing(k) {
                line.push_str(&format!("{k}={x} "));
            }
        }
        out.push(line);
    }
    out.sort();
    out
}

/// Runs mirror.py into a new directory (None: skipped, with the reason printed).
fn run_lab() -> Option<(PathBuf, bool)> {
    if let Some(d) = std::env::var_os("ROCETAP_LAB_MIRROR_OUT") {
        return Some((PathBuf::from(d), false));
    }
    if !common::is_root() {
        common::skip("the mirror lab needs root (qemu, the lab's build)");
        return None;
    }
    for t in ["python3", "tshark"] {
        if !common::have(t) {
            common::skip(&format!("{t} is not installed"));
            return None;
        }
    }
    let dir = std::env::temp_dir().join(format!("rocetap-mirror-lab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t0 = std::time::Instant::now();
    // build.sh first (idempotent; CI has built the lab), then the VM, both bounded
    let st = Command::new("timeout")
        .args(["-k", "30", &BUDGET_S.to_string(), "python3"])
        .arg(repo().join("lab/rxe/mirror.py"))
        .arg(&dir)
        .args(SAMPLES)
        .env("ROCETAP_BIN", common::bin())
        .env("RXE_LAB", lab_dir())
        .status()
        .expect("start lab/rxe/mirror.py");
    eprintln!("lab/rxe/mirror.py: {st} in {:?}", t0.elapsed());
    assert!(st.success(), "lab/rxe/mirror.py failed: {st}");
    Some((dir, true))
}

#[test]
fn kernel_mirrors_analyze_like_the_samples() {
    let _serial = common::serial();
    let Some((dir, ran)) = run_lab() else { return };
    let work = TempDir::new("mirror-lab");
    let mut failed = Vec::new();
    let mut compared = 0usize;
    // mirror.py may have replayed other samples into ROCETAP_LAB_MIRROR_OUT (mirror.json)
    let samples: Vec<String> = if ran {
        SAMPLES.iter().map(ToString::to_string).collect()
    } else {
        let j = std::fs::read(dir.join("mirror.json")).expect("mirror.json");
        let j: Value = serde_json::from_slice(&j).unwrap();
        j["samples"].as_object().unwrap().keys().cloned().collect()
    };
    for s in &samples {
        let src = repo().join("samples").join(format!("{s}.pcap"));
        let sample = read_pcap(&src);
        // tcpreplay sends the frames as captured: a sample cut at its snaplen (rxe-*,
        // 256 bytes) is replayed cut, so the reference is the sample with every wire
        // length its captured length (the same file where nothing was cut)
        std::fs::write(work.path(&format!("{s}.pcap")), as_sent(&sample)).unwrap();
        let want = analyze(&work.path(&format!("{s}.pcap")));
        assert!(!counts(&want).is_empty());
        for e in EXPORTERS {
            for rec in ["", ".tcpdump"] {
                let name = format!("{s}.{}{rec}.pcap", e.tag);
                let path = dir.join(&name);
                let mut fail = |why: String| failed.push(format!("{name}: {why}"));
                if !path.is_file() {
                    fail("missing".into());
                    continue;
                }
                let (_, recs) = read_pcap(&path);
                // every sample frame, once, in order, as a mirrored frame's tail
                if recs.len() != sample.1.len() {
                    fail(format!(
                        "{} frames, the sample {}",
                        recs.len(),
                        sample.1.len()
                    ));
                    continue;
                }
                if let Some(i) = recs
                    .iter()
                    .zip(&sample.1)
                    .position(|(m, f)| m.1.len() <= f.1.len() || !m.1.ends_with(&f.1))
                {
                    fail(format!(
                        "frame {} is not the sample's frame {}",
                        i + 1,
                        i + 1
                    ));
                    continue;
                }
                // the analysis, exact, with the sample's timestamps
                let rt = work.path(&format!("rt.{name}"));
                std::fs::write(&rt, retimed(&sample, &recs)).unwrap();
                let got = analyze(&rt);
                if comparable(&got) != comparable(&want) {
                    let (g, w) = (comparable(&got), comparable(&want));
                    let d: Vec<_> = g
                        .lines()
                        .zip(w.lines())
                        .filter(|(a, b)| a != b)
                        .take(6)
                        .collect();
                    fail(format!("the analysis differs: {d:#?}"));
                }
                // the recording as captured: the counts
                let raw = analyze(&path);
                if counts(&raw) != counts(&want) {
                    let (g, w) = (counts(&raw), counts(&want));
                    let d: Vec<_> = g.iter().zip(&w).filter(|(a, b)| a != b).take(6).collect();
                    fail(format!("the counts differ: {d:#?}"));
                }
                // the one session the exporter was set up with
                let m = &got["mirrors"];
                let ok = m.as_array().is_some_and(|a| a.len() == 1)
                    && m[0]["kind"] == e.kind
                    && m[0]["exporter"] == e.exporter
                    && m[0]["session"] == e.session
                    && e.port.is_none_or(|p| m[0]["port"] == p)
                    && e.direction.is_none_or(|d| m[0]["direction"] == d)
                    && m[0]["frames"] == recs.len() as u64
                    && got["mirrors_other_frames"] == 0;
                if !ok {
                    fail(format!("mirrors: {m}"));
                }
                match tshark_check(&path, e.exporter, e.tag == "gretap") {
                    Ok(n) => compared += n,
                    Err(why) => fail(why),
                }
            }
        }
    }
    eprintln!(
        "lab_mirror: {} samples × {} exporters × 2 recordings; {compared} outer field values equal tshark's",
        samples.len(),
        EXPORTERS.len()
    );
    if ran && failed.is_empty() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert!(compared > 10_000, "{compared}");
}
