//! `-v` (more detail) where it means something:
//! - `decode -v`: under each summary line, every field of the frame, `    name: value`,
//!   exactly the non-empty cells of that frame's `--format csv` row, in column order;
//! - `analyze -v`: the plain report with each finding's evidence inserted under it (the
//!   flows it concerns with their counts, the events behind it);
//! - `netcheck -v`: also the effect of the interface sysctls left at their default.
//!
//! Machine formats (CSV, JSON) already carry everything: `-v` leaves them unchanged.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(common::bin())
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("NO_COLOR")
        .output()
        .expect("run rocetap")
}

fn stdout(args: &[&str]) -> String {
    let o = run(args);
    assert!(o.status.code().is_some_and(|c| c < 2), "{args:?}: {o:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// True when `small`'s lines all appear in `big`, in the same order.
fn is_subsequence(small: &str, big: &str) -> bool {
    let mut it = big.lines();
    small.lines().all(|l| it.any(|b| b == l))
}

#[test]
fn decode_v_lists_every_csv_field_of_each_frame() {
    for sample in [
        "samples/loss-upstream.pcap",
        "samples/mixed-encap.pcap",
        "samples/malformed.pcapng",
        "samples/sbr-arp.pcap",
        "samples/pfc-storm.pcap",
    ] {
        let plain = stdout(&["decode", sample]);
        let verbose = stdout(&["decode", "-v", sample]);
        let (header, rows) = common::parse_csv(&stdout(&["decode", sample, "--format", "csv"]));
        // frames: a summary line, indented fields, a blank line
        let blocks: Vec<&str> = verbose.split_terminator("\n\n").collect();
        let summaries: Vec<&str> = plain.lines().collect();
        assert_eq!(
            blocks.len(),
            summaries.len(),
            "{sample}: one block per frame"
        );
        assert_eq!(blocks.len(), rows.len(), "{sample}");
        for ((block, summary), row) in blocks.iter().zip(&summaries).zip(&rows) {
            let mut lines = block.lines();
            assert_eq!(lines.next(), Some(*summary), "{sample}");
            let fields: Vec<String> = lines.map(str::to_string).collect();
            let want: Vec<String> = header
                .iter()
                .zip(row)
                .filter(|(_, v)| !v.is_empty())
                .map(|(h, v)| format!("    {h}: {v}"))
                .collect();
            assert_eq!(fields, want, "{sample}: {summary}");
        }
    }
    // Wireshark names, as tshark -T fields spells them
    let v = stdout(&["decode", "-v", "-c", "1", "samples/loss-upstream.pcap"]);
    for name in [
        "    infiniband.bth.psn: ",
        "    ip.dsfield.dscp: ",
        "    udp.dstport: 4791",
    ] {
        assert!(v.contains(name), "{name}: {v}");
    }
}

#[test]
fn v_leaves_machine_formats_alone() {
    let f = "samples/loss-upstream.pcap";
    for args in [
        &["decode", f, "--format", "csv"][..],
        &["decode", f, "--format", "json"],
        &["analyze", f, "--format", "json"],
        &["analyze", f, "--format", "csv"],
        &[
            "netcheck",
            "--capture",
            "samples/sbr-arp.pcap",
            "--format",
            "json",
        ],
    ] {
        let mut with_v = args.to_vec();
        with_v.push("-v");
        assert_eq!(run(args).stdout, run(&with_v).stdout, "{args:?}");
    }
}

#[test]
fn analyze_v_shows_each_findings_evidence() {
    let f = "samples/loss-upstream.pcap";
    let plain = stdout(&["analyze", f]);
    let verbose = stdout(&["analyze", "-v", f]);
    assert!(is_subsequence(&plain, &verbose), "{verbose}");
    assert!(verbose.len() > plain.len());
    // the NAK finding: all four NAKing flows (the plain message names three and "1 more"),
    // and the 6 NAKs with the 6 resends they caused
    assert!(
        verbose.contains("            kind nak_psn_seq, count 6\n"),
        "{verbose}"
    );
    assert!(verbose.contains("            flows (4):\n"), "{verbose}");
    assert!(verbose.contains("            events (12):\n"), "{verbose}");
    let naks = verbose.matches(" nak              psn ").count();
    let resends = verbose.matches(" retransmission   psn ").count();
    assert_eq!((naks, resends), (6, 6), "{verbose}");
    // The JSON says which flows NAKed: every one of them is listed under the finding.
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&["analyze", f, "--format", "json"])).unwrap();
    for fl in json["flows"].as_array().unwrap() {
        let n = fl["nak_psn_seq"].as_u64().unwrap();
        if n > 0 {
            let line = format!(
                "{:>4} {} → {} QP {}",
                fl["id"],
                fl["src"].as_str().unwrap(),
                fl["dst"].as_str().unwrap(),
                fl["qp"].as_str().unwrap()
            );
            let hit = verbose
                .lines()
                .find(|l| l.trim_start().starts_with(line.trim_start()))
                .unwrap_or_else(|| panic!("{line} not under the finding:\n{verbose}"));
            assert!(hit.ends_with(&format!(" {n}")), "{hit}");
        }
    }
}

#[test]
fn analyze_v_every_finding_of_every_sample_gets_evidence() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        let name = p.to_string_lossy().to_string();
        if !(name.ends_with(".pcap") || name.ends_with(".pcapng")) {
            continue;
        }
        let plain = stdout(&["analyze", &name]);
        let verbose = stdout(&["analyze", "-v", &name]);
        assert!(is_subsequence(&plain, &verbose), "{name}");
        let json: serde_json::Value =
            serde_json::from_str(&stdout(&["analyze", &name, "--format", "json"])).unwrap();
        for f in json["findings"].as_array().unwrap() {
            let line = format!(
                "            kind {}, count {}\n",
                f["kind"].as_str().unwrap(),
                f["count"]
            );
            assert!(verbose.contains(&line), "{name}: {line}{verbose}");
            seen += 1;
        }
    }
    assert!(seen >= 10, "only {seen} findings in the samples");
}

#[test]
fn analyze_v_shows_the_arp_symptoms_evidence() {
    let v = stdout(&["analyze", "-v", "samples/sbr-arp.pcap"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&[
        "analyze",
        "samples/sbr-arp.pcap",
        "--format",
        "json",
    ]))
    .unwrap();
    let symptoms = json["arp_symptoms"].as_array().unwrap();
    assert!(!symptoms.is_empty());
    for s in symptoms {
        for e in s["evidence"].as_array().unwrap() {
            let what = e["what"].as_str().unwrap();
            assert!(v.contains(&format!("  ->  {what}\n")), "{what}: {v}");
        }
    }
}

#[test]
fn netcheck_v_also_explains_the_default_sysctls() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/scenarios/sbr-arp/expected/broken/state/pod1");
    if !dir.is_dir() {
        common::skip(&format!("{} not found", dir.display()));
        return;
    }
    let d = dir.to_str().unwrap();
    let plain = run(&["netcheck", "--from", d]);
    let verbose = run(&["netcheck", "--from", d, "-v"]);
    assert_eq!(plain.status.code(), verbose.status.code());
    let (p, v) = (
        String::from_utf8(plain.stdout).unwrap(),
        String::from_utf8(verbose.stdout).unwrap(),
    );
    assert!(is_subsequence(&p, &v), "{v}");
    assert!(!p.contains("arp_ignore 0: "), "{p}");
    assert!(v.contains("    arp_ignore 0: "), "{v}");
}
