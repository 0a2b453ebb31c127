//! The sample traces in `samples/` and their expected outputs, held to account:
//! - every scenario `rocetap synth --list` names has a sample, its truth and its decode;
//! - each sample is exactly what its recorded `synth` command produces (determinism),
//!   and `rocetap decode --format csv` of it is exactly `NAME.decode.csv`;
//! - what the truth counts and the decoder can see for itself agree (NAKs, CE, CNPs, ...),
//!   and an independent go-back-N recount of the frames gives the truth's loss and
//!   recovery numbers;
//! - tshark decodes every RoCE frame with the same opcode, QP, PSN and extended-header
//!   fields, and finds nothing malformed;
//! - `synth`'s command-line contract (refusing to overwrite, unknown scenarios, --list).
//!
//! `UPDATE_EXPECT=1 cargo test --test analyze samples::` regenerates the samples and the expected
//! outputs instead of comparing (review the diff like code).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Once;

const BIN: &str = env!("CARGO_BIN_EXE_rocetap");

/// Samples written as pcapng (their per-packet comments explain the frames).
const PCAPNG: &[&str] = &["malformed"];

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("samples")
}

fn update() -> bool {
    std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1")
}

fn run(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run rocetap")
}

fn scenarios() -> Vec<String> {
    let o = run(&["synth", "--list"], &samples_or_tmp());
    assert!(o.status.success());
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

fn samples_or_tmp() -> PathBuf {
    let s = samples();
    if s.is_dir() {
        s
    } else {
        std::env::temp_dir()
    }
}

/// The capture file of a sample (`NAME.pcap` or `NAME.pcapng`), if there is one.
fn capture(name: &str) -> Option<PathBuf> {
    ["pcap", "pcapng"]
        .iter()
        .map(|e| samples().join(format!("{name}.{e}")))
        .find(|p| p.exists())
}

fn truth_of(cap: &Path) -> serde_json::Value {
    let t = fs::read_to_string(format!("{}.truth.json", cap.display())).expect("truth file");
    serde_json::from_str(&t).expect("truth is JSON")
}

/// The `synth` arguments a truth file records (`rocetap synth ... -o NAME`).
fn recorded_args(truth: &serde_json::Value) -> Vec<String> {
    let cmd = truth["command"].as_str().expect("command in truth");
    let mut words = cmd.split_whitespace();
    assert_eq!(words.next(), Some("rocetap"));
    words.map(str::to_string).collect()
}

fn decode_csv(cap: &Path) -> Vec<u8> {
    let o = run(
        &["decode", cap.to_str().unwrap(), "--format", "csv"],
        &samples(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

/// `rocetap analyze NAME --format FORMAT`, run inside samples/ so the report names the
/// file the same way wherever the repository lives.
fn analyze_out(cap: &Path, format: &str) -> Vec<u8> {
    let file = cap.file_name().unwrap().to_str().unwrap();
    let o = run(&["analyze", file, "--format", format], &samples());
    assert!(
        o.status.success(),
        "analyze {file}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// The expected-output files of a sample besides its truth: (file name, producer).
fn expected_outputs(name: &str, cap: &Path) -> Vec<(String, Vec<u8>)> {
    vec![
        (format!("{name}.decode.csv"), decode_csv(cap)),
        (format!("{name}.analyze.json"), analyze_out(cap, "json")),
        (format!("{name}.analyze.txt"), analyze_out(cap, "text")),
    ]
}

/// With UPDATE_EXPECT=1, regenerates every sample (once per test run) before any test
/// looks at them.
fn maybe_update() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if !update() {
            return;
        }
        fs::create_dir_all(samples()).unwrap();
        for name in scenarios() {
            let args: Vec<String> = match capture(&name) {
                Some(cap) => recorded_args(&truth_of(&cap)),
                None => {
                    let ext = if PCAPNG.contains(&name.as_str()) {
                        "pcapng"
                    } else {
                        "pcap"
                    };
                    let mut a: Vec<String> = ["synth", &name, "--seed", "1"]
                        .iter()
                        .map(std::string::ToString::to_string)
                        .collect();
                    if ext == "pcapng" {
                        a.push("--pcapng".into());
                    }
                    a.extend(["-o".into(), format!("{name}.{ext}")]);
                    a
                }
            };
            let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
            a.push("--force");
            let o = run(&a, &samples());
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let cap = capture(&name).unwrap();
            for (file, bytes) in expected_outputs(&name, &cap) {
                fs::write(samples().join(file), bytes).unwrap();
            }
        }
    });
}

#[test]
fn every_scenario_has_a_sample_with_expected_outputs() {
    maybe_update();
    let mut missing = Vec::new();
    for name in scenarios() {
        match capture(&name) {
            None => missing.push(format!("samples/{name}.pcap")),
            Some(cap) => {
                let truth = PathBuf::from(format!("{}.truth.json", cap.display()));
                if !truth.exists() {
                    missing.push(truth.display().to_string());
                }
            }
        }
        for ext in ["decode.csv", "analyze.json", "analyze.txt"] {
            let f = samples().join(format!("{name}.{ext}"));
            if !f.exists() {
                missing.push(f.display().to_string());
            }
        }
    }
    // The README documents every sample with the command that made it.
    let readme = fs::read_to_string(samples().join("README.md")).unwrap_or_default();
    for name in scenarios() {
        if let Some(cap) = capture(&name) {
            let cmd = truth_of(&cap)["command"].as_str().unwrap_or("").to_string();
            if !readme.contains(&format!("`{cmd}`")) {
                missing.push(format!("samples/README.md: `{cmd}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "missing (make them with UPDATE_EXPECT=1 cargo test --test analyze samples::): {missing:?}"
    );
    assert!(
        samples().join("clean-rc.pcap").exists(),
        "the README's first command decodes samples/clean-rc.pcap"
    );
}

#[test]
fn samples_regenerate_byte_for_byte_and_decode_as_expected() {
    maybe_update();
    for name in scenarios() {
        let Some(cap) = capture(&name) else {
            continue; // reported by every_scenario_has_a_sample_with_expected_outputs
        };
        let truth = truth_of(&cap);
        assert_eq!(truth["scenario"], name.as_str());
        // Regenerate into an empty directory under the same file name, so the truth's
        // own `command` line comes out identical too.
        let dir =
            std::env::temp_dir().join(format!("rocetap-samples-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let args = recorded_args(&truth);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(&a, &dir);
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let file = cap.file_name().unwrap();
        let fresh = fs::read(dir.join(file)).unwrap();
        assert!(
            fresh == fs::read(&cap).unwrap(),
            "{name}: regenerating with `{}` gives a different capture",
            truth["command"]
        );
        let fresh_truth =
            fs::read(dir.join(format!("{}.truth.json", file.to_string_lossy()))).unwrap();
        assert!(
            fresh_truth == fs::read(format!("{}.truth.json", cap.display())).unwrap(),
            "{name}: regenerating gives a different truth file"
        );
        fs::remove_dir_all(&dir).unwrap();
        for (file, got) in expected_outputs(&name, &cap) {
            let expected = fs::read(samples().join(&file)).unwrap_or_default();
            assert!(
                got == expected,
                "{name}: output differs from samples/{file} \
                 (UPDATE_EXPECT=1 cargo test --test analyze samples:: rewrites it; review the diff)"
            );
        }
    }
}

/// One decoded frame: column name -> value, from `NAME.decode.csv`.
type Row = BTreeMap<String, String>;

fn decoded_rows(name: &str) -> Vec<Row> {
    let mut r = csv::Reader::from_path(samples().join(format!("{name}.decode.csv"))).unwrap();
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// A number as rocetap or tshark prints it: `0x` hex, bare hex bytes (`hex`), or decimal.
fn num(s: &str, hex: bool) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if let Some(h) = s.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok();
    }
    if hex {
        return u64::from_str_radix(&s.replace(':', ""), 16).ok();
    }
    s.parse().ok()
}

fn field<'a>(row: &'a Row, k: &str) -> &'a str {
    row.get(k).map_or("", String::as_str)
}

/// What the truth counts from the model must agree with what the decoder sees in the
/// bytes: NAKs, RNR NAKs, CE marks, CNPs, bad ICRCs, damaged frames, PFC and ARP frames,
/// the per-opcode counts and the frame total.
#[test]
fn truth_agrees_with_the_decoded_frames() {
    maybe_update();
    for name in scenarios() {
        let Some(cap) = capture(&name) else { continue };
        let truth = truth_of(&cap);
        let rows = decoded_rows(&name);
        let mut seen: BTreeMap<&str, u64> = BTreeMap::new();
        let mut ops: BTreeMap<u64, u64> = BTreeMap::new();
        for r in &rows {
            let stop = field(r, "rocetap.stop");
            if stop.starts_with("malformed") {
                *seen.entry("malformed").or_insert(0) += 1;
            }
            if stop.starts_with("truncated") {
                *seen.entry("truncated").or_insert(0) += 1;
            }
            // A CNP counts when its BTH (the opcode) was captured whole, as on a real
            // stack: a frame cut after the BTH is still that packet.
            if field(r, "infiniband.bth.opcode") == "129" && !stop.starts_with("malformed") {
                *seen.entry("cnp").or_insert(0) += 1;
            }
            // Other protocol events count in well-formed packets only (the samples are
            // not cut by a snaplen, so a cut frame here is one of the damaged ones).
            if stop != "ok" {
                continue;
            }
            let syn = num(field(r, "infiniband.aeth.syndrome"), false);
            let mut count = |k| *seen.entry(k).or_insert(0) += 1;
            match syn {
                Some(0x60) => count("nak_psn_seq"),
                Some(0x61) => count("nak_invalid_request"),
                Some(0x20..=0x3f) => count("rnr_nak"),
                _ => {}
            }
            if field(r, "ip.dsfield.ecn") == "3" && field(r, "rocetap.roce") == "v2" {
                count("ce_marked");
            }
            if field(r, "rocetap.icrc.status") == "bad" {
                count("icrc_bad");
            }
            match field(r, "arp.opcode") {
                "1" => count("arp_requests"),
                "2" => count("arp_replies"),
                _ => {}
            }
            if field(r, "rocetap.pause.kind") == "pfc" {
                let paused = field(r, "pfc.quanta").split(',').any(|q| q != "0");
                count(if paused {
                    "pfc_pause_frames"
                } else {
                    "pfc_resume_frames"
                });
            }
            if let Some(op) = num(field(r, "infiniband.bth.opcode"), false) {
                *ops.entry(op).or_insert(0) += 1;
            }
        }
        let obs = truth["observable"].as_object().unwrap();
        for key in [
            "nak_psn_seq",
            "nak_invalid_request",
            "rnr_nak",
            "ce_marked",
            "cnp",
            "icrc_bad",
            "malformed",
            "truncated",
            "arp_requests",
            "arp_replies",
            "pfc_pause_frames",
            "pfc_resume_frames",
        ] {
            assert_eq!(
                obs[key].as_u64().unwrap(),
                seen.get(key).copied().unwrap_or(0),
                "{name}: observable.{key}"
            );
        }
        assert_eq!(
            truth["packets"].as_u64().unwrap(),
            rows.len() as u64,
            "{name}"
        );
        // Damaged frames are not counted per opcode by the truth; only complete ones.
        if name != "malformed" {
            let counts = truth["counts"].as_object().unwrap();
            let from_truth: BTreeMap<u64, u64> = counts
                .iter()
                .map(|(k, v)| {
                    let hex = &k["op_0x".len().."op_0x".len() + 2];
                    (u64::from_str_radix(hex, 16).unwrap(), v.as_u64().unwrap())
                })
                .collect();
            assert_eq!(from_truth, ops, "{name}: per-opcode counts");
        }
        // Every gap the truth counts needs retransmissions or is declared unrecovered.
        let gaps = obs["psn_gap_events"].as_u64().unwrap();
        let unrecovered = obs["unrecovered_gap_events"].as_u64().unwrap();
        assert!(gaps >= unrecovered, "{name}");
        if gaps > unrecovered {
            assert!(obs["retransmitted_packets"].as_u64().unwrap() >= gaps - unrecovered);
        }
    }
}

/// tshark fields compared with rocetap's (`decode --format csv` column, tshark field,
/// tshark prints bare hex bytes).
const COMPARED: &[(&str, &str, bool)] = &[
    ("infiniband.reth.va", "infiniband.reth.va", false),
    ("infiniband.reth.r_key", "infiniband.reth.r_key", false),
    ("infiniband.reth.dmalen", "infiniband.reth.dmalen", false),
    (
        "infiniband.aeth.syndrome",
        "infiniband.aeth.syndrome",
        false,
    ),
    ("infiniband.aeth.msn", "infiniband.aeth.msn", false),
    ("infiniband.deth.q_key", "infiniband.deth.q_key", false),
    ("infiniband.deth.srcqp", "infiniband.deth.srcqp", false),
    ("infiniband.immdt", "infiniband.immdt", true),
    ("infiniband.ieth", "infiniband.ieth", true),
    // tshark shows an AtomicETH's VA and R_Key under infiniband.reth.*.
    ("infiniband.atomiceth.va", "infiniband.reth.va", false),
    ("infiniband.atomiceth.r_key", "infiniband.reth.r_key", false),
    (
        "infiniband.atomiceth.swapdt",
        "infiniband.atomiceth.swapdt",
        false,
    ),
    (
        "infiniband.atomiceth.cmpdt",
        "infiniband.atomiceth.cmpdt",
        false,
    ),
    (
        "infiniband.atomicacketh.origremdt",
        "infiniband.atomicacketh.origremdt",
        false,
    ),
];

fn tshark_missing() -> bool {
    Command::new("tshark").arg("--version").output().is_err()
}

#[test]
fn tshark_decodes_every_roce_frame_the_same_way() {
    maybe_update();
    if tshark_missing() {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        assert!(
            !ci,
            "tshark not installed, and CI is set: this check must run in CI"
        );
        eprintln!("SKIP: tshark not installed (set CI to make this a failure)");
        return;
    }
    for name in scenarios() {
        // Deliberately damaged frames: tshark's opinion of them is not the point.
        if name == "malformed" || name == "icrc-corrupt" {
            continue;
        }
        let Some(cap) = capture(&name) else { continue };
        let mut args: Vec<String> = vec![
            "-r".into(),
            cap.display().to_string(),
            // SEND payloads here are filler bytes; tshark's RPC-over-RDMA heuristic
            // sometimes takes them for RPC and reports *that* as malformed.
            "--disable-protocol".into(),
            "rpcordma".into(),
            "-T".into(),
            "fields".into(),
            "-E".into(),
            "occurrence=f".into(),
        ];
        let mut fields = vec![
            "frame.number",
            "infiniband.bth.opcode",
            "infiniband.bth.destqp",
            "infiniband.bth.psn",
            "_ws.malformed",
        ];
        fields.extend(COMPARED.iter().map(|c| c.1));
        fields.sort_unstable();
        fields.dedup();
        for f in &fields {
            args.push("-e".into());
            args.push((*f).into());
        }
        let o = Command::new("tshark")
            .args(&args)
            .output()
            .expect("run tshark");
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = String::from_utf8(o.stdout).unwrap();
        let ts: Vec<BTreeMap<&str, &str>> = text
            .lines()
            .map(|l| fields.iter().copied().zip(l.split('\t')).collect())
            .collect();
        let ours = decoded_rows(&name);
        assert_eq!(ts.len(), ours.len(), "{name}: frame count");
        let mut roce = 0;
        for (t, r) in ts.iter().zip(&ours) {
            let n = field(r, "frame.number");
            let get = |k: &str| t.get(k).copied().unwrap_or("");
            assert_eq!(get("frame.number"), n);
            assert_eq!(
                get("_ws.malformed"),
                "",
                "{name} frame {n}: tshark says malformed"
            );
            let Some(op) = num(field(r, "infiniband.bth.opcode"), false) else {
                assert_eq!(get("infiniband.bth.opcode"), "", "{name} frame {n}");
                continue;
            };
            roce += 1;
            let at = format!("{name} frame {n}");
            assert_eq!(
                num(get("infiniband.bth.opcode"), false),
                Some(op),
                "{at}: opcode"
            );
            assert_eq!(
                num(get("infiniband.bth.destqp"), false),
                num(field(r, "infiniband.bth.destqp"), false),
                "{at}: DestQP"
            );
            assert_eq!(
                num(get("infiniband.bth.psn"), false),
                num(field(r, "infiniband.bth.psn"), false),
                "{at}: PSN"
            );
            // tshark 4.0 knows no opcode 0x81 (CNP) and stops after the BTH of XRC
            // packets (0xA0-0xBF): nothing beyond the BTH to compare there.
            if op == 0x81 || (0xA0..=0xBF).contains(&op) {
                continue;
            }
            for (ours_k, theirs_k, hex) in COMPARED {
                let mine = num(field(r, ours_k), false);
                if mine.is_none() {
                    continue;
                }
                assert_eq!(
                    num(get(theirs_k), *hex),
                    mine,
                    "{at}: {ours_k} vs tshark {theirs_k}"
                );
            }
        }
        assert!(
            roce > 0 || name == "sbr-arp",
            "{name}: no RoCE frames compared"
        );
    }
}

fn one_line_error(o: &Output) -> String {
    let e = String::from_utf8(o.stderr.clone()).unwrap();
    assert_eq!(e.lines().count(), 1, "one line expected: {e:?}");
    assert!(e.starts_with("rocetap: "), "{e:?}");
    e
}

#[test]
fn synth_command_line_contract() {
    let dir = std::env::temp_dir().join(format!("rocetap-synth-cli-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();

    let o = run(&["synth", "--list"], &dir);
    assert!(o.status.success());
    let list = String::from_utf8(o.stdout).unwrap();
    assert_eq!(list.lines().count(), 17, "{list}");
    for (l, want) in list.lines().zip([
        "clean-rc",
        "loss-upstream",
        "loss-downstream",
        "tail-loss-timeout",
        "rnr",
        "read-loss",
        "congestion",
        "pfc-storm",
        "capture-loss",
        "psn-wrap",
        "mixed-encap",
        "icrc-corrupt",
        "sbr-arp",
        "malformed",
        "many-qp",
        "qos-mismarked",
        "cm-setup",
    ]) {
        let mut w = l.split_whitespace();
        assert_eq!(w.next(), Some(want));
        assert!(w.next().is_some(), "{l}: says what it shows");
    }

    let o = run(&["synth", "no-such-scenario", "-o", "x.pcap"], &dir);
    assert_eq!(o.status.code(), Some(2));
    assert!(one_line_error(&o).contains("no-such-scenario"));
    assert!(!dir.join("x.pcap").exists());

    // The many-qp options belong to many-qp, and --loss needs multi-packet messages.
    let o = run(&["synth", "rnr", "--qps", "8", "-o", "x.pcap"], &dir);
    assert_eq!(o.status.code(), Some(2));
    assert!(one_line_error(&o).contains("many-qp"));
    let o = run(&["synth", "many-qp", "--loss", "5", "-o", "x.pcap"], &dir);
    assert_eq!(o.status.code(), Some(2));
    assert!(one_line_error(&o).contains("--msg-size"));
    assert!(!dir.join("x.pcap").exists());

    let o = run(&["synth", "rnr", "-o", "r.pcap", "--packets", "50"], &dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let first = fs::read(dir.join("r.pcap")).unwrap();
    assert!(dir.join("r.pcap.truth.json").exists());
    let o = run(
        &["synth", "clean-rc", "-o", "r.pcap", "--packets", "50"],
        &dir,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(one_line_error(&o).contains("--force"));
    assert_eq!(
        fs::read(dir.join("r.pcap")).unwrap(),
        first,
        "refused, yet changed"
    );
    let o = run(
        &[
            "synth",
            "clean-rc",
            "-o",
            "r.pcap",
            "--packets",
            "50",
            "--force",
        ],
        &dir,
    );
    assert!(o.status.success());
    assert_ne!(fs::read(dir.join("r.pcap")).unwrap(), first);

    // A stale truth file alone also blocks a run without --force.
    fs::write(dir.join("t.pcap.truth.json"), "{}").unwrap();
    let o = run(&["synth", "rnr", "-o", "t.pcap"], &dir);
    assert_eq!(o.status.code(), Some(2));
    one_line_error(&o);

    let o = run(&["synth", "rnr", "-o", "s.pcap", "--snaplen", "64"], &dir);
    assert_eq!(o.status.code(), Some(2));
    one_line_error(&o);

    // Snaplen cuts frames but keeps their wire length; pcapng is a different file.
    let o = run(
        &[
            "synth",
            "clean-rc",
            "-o",
            "c.pcapng",
            "--pcapng",
            "--snaplen",
            "128",
            "--packets",
            "60",
        ],
        &dir,
    );
    assert!(o.status.success());
    let t: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("c.pcapng.truth.json")).unwrap())
            .unwrap();
    assert_eq!(t["snaplen"], 128);
    assert_eq!(t["format"], "pcapng");
    assert!(t["observable"]["truncated"].as_u64().unwrap() > 0);
    let o = run(&["decode", "c.pcapng", "--format", "csv"], &dir);
    assert!(o.status.success());
    let mut r = csv::Reader::from_reader(&o.stdout[..]);
    let h = r.headers().unwrap().clone();
    let cap = h.iter().position(|c| c == "frame.cap_len").unwrap();
    for rec in r.records() {
        assert!(rec.unwrap()[cap].parse::<u32>().unwrap() <= 128);
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// Loss and recovery counters recomputed from decoded frames alone, with the meanings of
/// `/work/shared/captures/README.md` — an oracle independent of the generator's model:
/// go-back-N as seen from a tap, per flow (source, destination, DestQP).
#[derive(Debug, Default, PartialEq, Eq)]
struct Recount {
    nak_psn_seq: u64,
    rnr_nak: u64,
    psn_gap_events: u64,
    retransmitted_packets: u64,
    timeout_retransmissions: u64,
    read_rerequests: u64,
    missing_psns: u64,
    unrecovered_gap_events: u64,
}

#[derive(Default)]
struct Flow {
    /// Next PSN expected; `None` until known (start, or right after a READ Request whose
    /// response count is not known yet).
    next: Option<u32>,
    seen: std::collections::HashSet<u32>,
    /// PSNs jumped over, with the gap event they belong to.
    holes: BTreeMap<u32, usize>,
    /// Per gap event: was any of its PSNs ever filled?
    filled: Vec<bool>,
    /// Inside a retransmission episode: was it started by a NAK (false: by a timeout)?
    episode: Option<bool>,
    /// READ Requests of this (request) flow: first PSN of each.
    reads: Vec<u32>,
}

fn diff(a: u32, b: u32) -> i32 {
    ((a.wrapping_sub(b)) << 8) as i32 >> 8
}

impl Flow {
    /// A packet with PSN `p` that is not a READ re-request. Returns true if it is sent
    /// again (a duplicate, or it fills a gap).
    fn packet(&mut self, p: u32, r: &mut Recount) -> bool {
        let again = self.seen.contains(&p) || self.holes.contains_key(&p);
        if let Some(g) = self.holes.remove(&p) {
            self.filled[g] = true;
        }
        if !again {
            if let Some(e) = self.next {
                let d = diff(p, e);
                if d > 0 {
                    r.psn_gap_events += 1;
                    r.missing_psns += d as u64;
                    self.filled.push(false);
                    let g = self.filled.len() - 1;
                    for k in 0..d as u32 {
                        self.holes.insert((e + k) & 0xff_ffff, g);
                    }
                }
            }
            self.seen.insert(p);
            self.next = Some((p + 1) & 0xff_ffff);
        }
        again
    }
}

fn recount(rows: &[Row]) -> Recount {
    let mut r = Recount::default();
    let mut flows: BTreeMap<(String, String, u64), Flow> = BTreeMap::new();
    // NAK'd / RNR NAK'd PSNs per (requester, responder) address pair.
    let mut naks: BTreeMap<(String, String), Vec<u32>> = BTreeMap::new();
    for row in rows {
        // Snaplen-cut frames still have their BTH; damaged ones are not traffic.
        if field(row, "rocetap.stop").starts_with("malformed") {
            continue;
        }
        let Some(op) = num(field(row, "infiniband.bth.opcode"), false) else {
            continue;
        };
        let (src, dst) = match field(row, "ip.src") {
            "" => (
                field(row, "infiniband.grh.sgid").to_string(),
                field(row, "infiniband.grh.dgid").to_string(),
            ),
            s => (s.to_string(), field(row, "ip.dst").to_string()),
        };
        let qp = num(field(row, "infiniband.bth.destqp"), false).unwrap_or(0);
        let psn = num(field(row, "infiniband.bth.psn"), false).unwrap_or(0) as u32;
        let rc_op = match op {
            0x00..=0x1f => op,
            0xa0..=0xbf => op & 0x1f,
            0x64 | 0x65 => 0x04, // UD SEND Only: a request, never resent
            _ => continue,       // CNPs and the rest carry no sequence
        };
        let key = (src.clone(), dst.clone(), qp);
        match rc_op {
            0x11 | 0x12 => {
                match num(field(row, "infiniband.aeth.syndrome"), false) {
                    Some(0x60) => r.nak_psn_seq += 1,
                    Some(0x20..=0x3f) => r.rnr_nak += 1,
                    _ => continue,
                }
                naks.entry((dst, src)).or_default().push(psn);
            }
            0x0d..=0x10 => {
                // READ responses: sequential within one READ; a First/Only starts a range.
                let f = flows.entry(key).or_default();
                if matches!(rc_op, 0x0d | 0x10)
                    && !f.seen.contains(&psn)
                    && !f.holes.contains_key(&psn)
                {
                    f.next = Some(psn);
                }
                if f.packet(psn, &mut r) {
                    r.retransmitted_packets += 1;
                }
                // The request flow's next PSN follows the READ's last response.
                if matches!(rc_op, 0x0f | 0x10) {
                    for ((s, d, _), rf) in &mut flows {
                        if *s == dst
                            && *d == src
                            && rf.next.is_none()
                            && rf.reads.last().is_some_and(|&s0| diff(psn, s0) >= 0)
                        {
                            rf.next = Some((psn + 1) & 0xff_ffff);
                        }
                    }
                }
            }
            _ => {
                let f = flows.entry(key).or_default();
                if rc_op == 0x0c {
                    // A READ Request inside an earlier READ's range re-requests the rest.
                    let inside = f.reads.iter().any(|&s0| diff(psn, s0) > 0)
                        && f.next.is_some_and(|e| diff(psn, e) < 0)
                        || f.reads.contains(&psn);
                    if inside {
                        // ... and is a packet sent again (issue 38, item 4).
                        r.read_rerequests += 1;
                        r.retransmitted_packets += 1;
                        continue;
                    }
                    f.reads.push(psn);
                    let again = f.packet(psn, &mut r);
                    debug_assert!(!again);
                    // Its response count is unknown here: learn it from the responses.
                    f.next = None;
                    continue;
                }
                if f.packet(psn, &mut r) {
                    r.retransmitted_packets += 1;
                    let nak = naks.entry((src, dst)).or_default();
                    let by_nak = match f.episode {
                        Some(b) => b,
                        None => {
                            let b = nak.contains(&psn);
                            nak.retain(|&x| x != psn);
                            b
                        }
                    };
                    f.episode = Some(by_nak);
                    if !by_nak {
                        r.timeout_retransmissions += 1;
                    }
                } else {
                    f.episode = None;
                }
            }
        }
    }
    for f in flows.values() {
        r.unrecovered_gap_events += f.filled.iter().filter(|x| !**x).count() as u64;
    }
    r
}

fn truth_recount(truth: &serde_json::Value) -> Recount {
    let o = &truth["observable"];
    let g = |k: &str| o[k].as_u64().unwrap_or(0);
    Recount {
        nak_psn_seq: g("nak_psn_seq"),
        rnr_nak: g("rnr_nak"),
        psn_gap_events: g("psn_gap_events"),
        retransmitted_packets: g("retransmitted_packets"),
        timeout_retransmissions: g("timeout_retransmissions"),
        read_rerequests: g("read_rerequests"),
        missing_psns: g("missing_psns"),
        unrecovered_gap_events: g("unrecovered_gap_events"),
    }
}

/// The generator's loss/recovery truth agrees with a go-back-N reading of the frames.
#[test]
fn loss_and_recovery_truth_agrees_with_an_independent_recount() {
    maybe_update();
    for name in scenarios() {
        if name == "malformed" {
            continue; // damaged frames are not traffic
        }
        let Some(cap) = capture(&name) else { continue };
        let truth = truth_of(&cap);
        assert_eq!(
            recount(&decoded_rows(&name)),
            truth_recount(&truth),
            "{name}"
        );
    }
}

/// The same recount against a trace made by another generator, when one is given:
/// `ROCETAP_REFERENCE=/path/trace.pcap` (with `trace.pcap.truth.json` beside it).
#[test]
fn recount_agrees_with_an_external_reference_trace() {
    let Some(path) = std::env::var_os("ROCETAP_REFERENCE") else {
        eprintln!("SKIP: ROCETAP_REFERENCE not set");
        return;
    };
    let cap = PathBuf::from(path);
    let o = run(
        &["decode", cap.to_str().unwrap(), "--format", "csv"],
        &samples_or_tmp(),
    );
    assert!(o.status.success());
    let mut rd = csv::Reader::from_reader(&o.stdout[..]);
    let headers = rd.headers().unwrap().clone();
    let rows: Vec<Row> = rd
        .records()
        .map(|rec| {
            let rec = rec.unwrap();
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect();
    let got = recount(&rows);
    let want = truth_recount(&truth_of(&cap));
    // The external truth has no capture-loss keys.
    assert_eq!(
        (
            got.nak_psn_seq,
            got.rnr_nak,
            got.psn_gap_events,
            got.retransmitted_packets,
            got.timeout_retransmissions,
            got.read_rerequests
        ),
        (
            want.nak_psn_seq,
            want.rnr_nak,
            want.psn_gap_events,
            want.retransmitted_packets,
            want.timeout_retransmissions,
            want.read_rerequests
        ),
        "{got:?}"
    );
}

/// The analyzer reproduces every `observable` number of every sample's truth file.
#[test]
fn analyzer_reproduces_every_truth_number() {
    maybe_update();
    let mut wrong = Vec::new();
    for name in scenarios() {
        let Some(cap) = capture(&name) else { continue };
        let truth = truth_of(&cap);
        let report: serde_json::Value =
            serde_json::from_slice(&analyze_out(&cap, "json")).expect("analyze JSON");
        let totals = &report["totals"];
        let obs = truth["observable"].as_object().expect("observable");
        assert!(obs.len() >= 8, "{name}: truth has too few keys");
        for (k, v) in obs {
            match totals.get(k) {
                Some(t) if t == v => {}
                Some(t) => wrong.push(format!("{name}: {k}: truth {v}, analyze {t}")),
                None => wrong.push(format!("{name}: {k}: not in analyze totals")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The real-stack samples (`samples/rxe-*.pcap`, recorded in the Soft-RoCE lab with
/// `lab/rxe/make-samples.sh`; their truth is the kernel's counters, checked by
/// `tests/lab/lab_rxe.rs`) have goldens like the synthetic ones: a change in what rocetap
/// says about real traffic shows in review. `UPDATE_EXPECT=1` rewrites them.
#[test]
fn real_stack_samples_match_their_goldens() {
    let mut names: Vec<String> = fs::read_dir(samples())
        .unwrap()
        .filter_map(|e| {
            let n = e.ok()?.file_name().to_string_lossy().to_string();
            (n.starts_with("rxe-") && n.ends_with(".pcap"))
                .then(|| n.trim_end_matches(".pcap").to_string())
        })
        .collect();
    names.sort();
    assert!(names.len() >= 5, "real-stack samples: {names:?}");
    let mut diffs = Vec::new();
    for name in &names {
        let cap = samples().join(format!("{name}.pcap"));
        for (file, bytes) in expected_outputs(name, &cap) {
            let path = samples().join(&file);
            if update() {
                fs::write(&path, &bytes).unwrap();
                continue;
            }
            match fs::read(&path) {
                Ok(want) if want == bytes => {}
                Ok(_) => diffs.push(format!("{file} differs (UPDATE_EXPECT=1 regenerates)")),
                Err(e) => diffs.push(format!("{file}: {e}")),
            }
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
