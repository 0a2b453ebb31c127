//! `rocetap decode` end to end: formats, stdin, counts, and every kind of bad input
//! (empty, not a capture, truncated, corrupt record, missing file, closed pipe).

use crate::common;

use common::{pcap_bytes, rocetap, TempDir};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// A tiny RoCE v2 RC ACK frame (ICRC deliberately zero) and an ARP request.
fn frames() -> Vec<Vec<u8>> {
    let ack = hex("020000000002 020000000001 0800 \
         4500 0030 0000 4000 40 11 0000 c6120001 c6120002 \
         c000 12b7 001c 0000 \
         11 00 ffff 00 00a022 00 00007b \
         1f 000005 \
         00000000");
    let arp = hex(
        "ffffffffffff eeeeeeeeeeee 0806 0001 0800 06 04 0001 eeeeeeeeeeee c6130801 000000000000 c6120105",
    );
    vec![ack, arp]
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> String {
    let p = dir.path(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_string_lossy().to_string()
}

fn one_line_error(out: &std::process::Output, needle: &str) {
    assert_eq!(
        out.status.code(),
        Some(2),
        "exit code; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err.lines().next().unwrap_or("");
    assert!(first.starts_with("rocetap: "), "{err}");
    assert!(first.contains(needle), "expected {needle:?} in {err:?}");
    assert!(
        err.lines().count() <= 2,
        "one line plus at most a hint: {err}"
    );
}

#[test]
fn text_summary_lines() {
    let d = TempDir::new("text");
    let f = write(&d, "a.pcap", &pcap_bytes(&frames()));
    let out = rocetap(&["decode", &f]);
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].starts_with(
            "1 0.000000 198.18.0.1 → 198.18.0.2 RC Acknowledge QP=0x00a022 PSN=123 ACK MSN=5"
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("ICRC-BAD"),
        "zero ICRC must be called bad: {}",
        lines[0]
    );
    assert!(
        lines[1].contains("ARP Who has 198.18.1.5? Tell 198.19.8.1"),
        "{}",
        lines[1]
    );
}

#[test]
fn csv_has_wireshark_columns_and_one_row_per_frame() {
    let d = TempDir::new("csv");
    let f = write(&d, "a.pcap", &pcap_bytes(&frames()));
    let out = rocetap(&["decode", "--format", "csv", &f]);
    assert!(out.status.success());
    let (h, rows) = common::parse_csv(&String::from_utf8_lossy(&out.stdout));
    for need in [
        "frame.number",
        "frame.time_epoch",
        "ip.src",
        "ip.dst",
        "udp.srcport",
        "ip.dsfield.dscp",
        "ip.dsfield.ecn",
        "infiniband.bth.opcode",
        "infiniband.bth.se",
        "infiniband.bth.m",
        "infiniband.bth.padcnt",
        "infiniband.bth.tver",
        "infiniband.bth.p_key",
        "infiniband.bth.fecn",
        "infiniband.bth.becn",
        "infiniband.bth.destqp",
        "infiniband.bth.a",
        "infiniband.bth.psn",
        "infiniband.reth.va",
        "infiniband.reth.r_key",
        "infiniband.reth.dmalen",
        "infiniband.aeth.syndrome",
        "infiniband.aeth.msn",
        "infiniband.deth.q_key",
        "infiniband.deth.srcqp",
        "infiniband.immdt",
        "infiniband.ieth",
        "infiniband.atomiceth.va",
        "infiniband.atomiceth.r_key",
        "infiniband.atomiceth.swapdt",
        "infiniband.atomiceth.cmpdt",
        "infiniband.atomicacketh.origremdt",
        "infiniband.xrceth.xrcsrq",
        "infiniband.invariant.crc",
        "rocetap.icrc.status",
        "rocetap.stop",
    ] {
        assert!(h.iter().any(|x| x == need), "missing column {need}");
    }
    assert_eq!(rows.len(), 2);
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    assert_eq!(rows[0][col("infiniband.bth.opcode")], "17");
    assert_eq!(rows[0][col("infiniband.bth.destqp")], "0x00a022");
    assert_eq!(rows[0][col("infiniband.aeth.msn")], "5");
    assert_eq!(rows[0][col("rocetap.icrc.status")], "bad");
    assert_eq!(rows[0][col("frame.time_epoch")], "1700000000.000000000");
    // The non-RoCE frame has a row too, with empty RoCE columns.
    assert_eq!(rows[1][col("infiniband.bth.opcode")], "");
    assert_eq!(rows[1][col("arp.dst.proto_ipv4")], "198.18.1.5");
}

#[test]
fn json_is_one_valid_document() {
    let d = TempDir::new("json");
    let f = write(&d, "a.pcap", &pcap_bytes(&frames()));
    let out = rocetap(&["decode", "--format", "json", &f]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["schema"], "rocetap.decode/1");
    let frames = v["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0]["infiniband.bth.psn"], 123);
    assert_eq!(frames[0]["infiniband.bth.a"], false);
    assert!(frames[1].get("infiniband.bth.psn").is_none());
}

#[test]
fn stdin_and_count() {
    let d = TempDir::new("stdin");
    let bytes = pcap_bytes(&frames());
    let f = write(&d, "a.pcap", &bytes);
    let mut child = Command::new(common::bin())
        .args(["decode", "-r", "-", "-c", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let from_stdin = String::from_utf8(out.stdout).unwrap();
    assert_eq!(from_stdin.lines().count(), 1);
    let from_file = String::from_utf8(rocetap(&["decode", &f]).stdout).unwrap();
    assert_eq!(from_file.lines().next(), from_stdin.lines().next());
}

#[test]
fn bad_inputs_give_one_line_and_exit_2() {
    let d = TempDir::new("bad");
    one_line_error(
        &rocetap(&["decode", &write(&d, "empty.pcap", b"")]),
        "empty",
    );
    one_line_error(
        &rocetap(&[
            "decode",
            &write(&d, "text.pcap", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
        ]),
        "not a pcap or pcapng capture",
    );
    one_line_error(
        &rocetap(&["decode", d.path("missing.pcap").to_str().unwrap()]),
        "missing.pcap",
    );
    one_line_error(&rocetap(&["decode", d.0.to_str().unwrap()]), "directory");
    // Cut in the middle of the second record (a capture killed mid-write): like tshark,
    // the complete frame is printed and the cut is a one-line warning, exit 0.
    let bytes = pcap_bytes(&frames());
    let cut = write(&d, "cut.pcap", &bytes[..bytes.len() - 7]);
    let out = rocetap(&["decode", &cut]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("rocetap: warning: ")
            && err.contains("cut short")
            && err.contains("after 1 complete frames"),
        "{err}"
    );
    // Cut inside the first record: nothing to read, an error.
    let none = write(&d, "cut0.pcap", &bytes[..24 + 16 + 3]);
    one_line_error(&rocetap(&["decode", &none]), "truncated");
    // A record header claiming a 3 GB frame.
    let mut corrupt = bytes.clone();
    corrupt[24 + 8..24 + 12].copy_from_slice(&0xC000_0000u32.to_le_bytes());
    let out = rocetap(&["decode", &write(&d, "corrupt.pcap", &corrupt)]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("rocetap: reading"));
    // No input at all; a zero count.
    one_line_error(&rocetap(&["decode"]), "no input");
    one_line_error(&rocetap(&["decode", "-c", "0", &cut]), "-c 0");
    // Bad arguments are exit 2 too.
    assert_eq!(
        rocetap(&["decode", "--format", "xml", &cut]).status.code(),
        Some(2)
    );
}

#[test]
fn closed_pipe_ends_quietly() {
    let d = TempDir::new("pipe");
    let many: Vec<Vec<u8>> = (0..20000).map(|_| frames()[0].clone()).collect();
    let f = write(&d, "many.pcap", &pcap_bytes(&many));
    let mut child = Command::new(common::bin())
        .args(["decode", &f])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    drop(r);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn pcapng_and_nanosecond_pcap_read_like_pcap() {
    if !common::have("editcap") {
        common::skip("editcap (wireshark-common) is not installed");
        return;
    }
    let d = TempDir::new("ng");
    let f = write(&d, "a.pcap", &pcap_bytes(&frames()));
    let want = String::from_utf8(rocetap(&["decode", "--format", "csv", &f]).stdout).unwrap();
    for (fmt, name) in [("pcapng", "a.pcapng"), ("nsecpcap", "a.ns.pcap")] {
        let out = d.path(name);
        let st = Command::new("editcap")
            .args(["-F", fmt, &f, out.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(st.success());
        let got = String::from_utf8(
            rocetap(&["decode", "--format", "csv", out.to_str().unwrap()]).stdout,
        )
        .unwrap();
        assert_eq!(got, want, "{fmt}");
    }
}

#[test]
fn several_inputs_merge_in_timestamp_order() {
    let d = TempDir::new("merge");
    // a.pcap frames at t = 0, 2, ...; b.pcap at t = 1, 3, ... (pcap_bytes spaces by 1 s).
    let fr = frames();
    let a = write(&d, "a.pcap", &pcap_bytes(&[fr[0].clone(), fr[0].clone()]));
    let mut b_bytes = pcap_bytes(&[fr[1].clone(), fr[1].clone()]);
    // Shift b's records by half a second so they interleave with a's.
    let mut off = 24;
    while off < b_bytes.len() {
        b_bytes[off + 4..off + 8].copy_from_slice(&500_000u32.to_le_bytes());
        let caplen = u32::from_le_bytes(b_bytes[off + 8..off + 12].try_into().unwrap()) as usize;
        off += 16 + caplen;
    }
    let b = write(&d, "b.pcap", &b_bytes);
    let out = rocetap(&["decode", "--format", "csv", &a, "-r", &b]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (h, rows) = common::parse_csv(&String::from_utf8_lossy(&out.stdout));
    let src = h.iter().position(|x| x == "rocetap.source").unwrap();
    let order: Vec<&str> = rows.iter().map(|r| r[src].as_str()).collect();
    // -r files come first in the source list, then positional ones: b is source 0.
    assert_eq!(order, ["1", "0", "1", "0"]);
    let ts = h.iter().position(|x| x == "frame.time_epoch").unwrap();
    let times: Vec<f64> = rows.iter().map(|r| r[ts].parse().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    // A damaged second input names itself.
    let bad = write(&d, "bad.pcap", b"not a capture");
    let out = rocetap(&["decode", &a, &bad]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.pcap"));
}
