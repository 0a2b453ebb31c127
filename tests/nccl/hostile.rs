//! Hostile input: huge lines, binary garbage, truncated lines — counted, never a panic;
//! an unreadable file is one line of error and exit 2.

use crate::common::{rocetap, TempDir};
use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn garbage_is_counted() {
    let mut input: Vec<u8> = Vec::new();
    input.extend(std::iter::repeat_n(b'A', 5 << 20));
    input.extend_from_slice(b"\n\x00\xff\xfe\x01binary\n");
    input.extend_from_slice(b"h:1:2 [0] net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 198.18.0.2<1> with error banana\n");
    input.extend_from_slice(b"h:1:2 [0] net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 198.18.0.2<1> with error 12, opcode 0, len 0, vendor err 129");
    let mut child = Command::new(crate::common::bin())
        .args(["nccl", "--format", "json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["counts"]["lines"], 4);
    assert_eq!(d["counts"]["overlong"], 1);
    assert_eq!(d["counts"]["not_text"], 1);
    assert_eq!(d["counts"]["unparsed_errors"], 1);
    assert_eq!(d["errors"].as_array().unwrap().len(), 1);
    assert_eq!(d["errors"][0]["hca"], serde_json::Value::Null);
}

#[test]
fn unreadable_is_exit_2() {
    let t = TempDir::new("nccl-unreadable");
    let out = rocetap(&["nccl", t.path("missing.log").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing.log"), "{err}");
    let out = rocetap(&["nccl", t.0.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn no_nccl_line_says_so() {
    // A capture given as a log: binary, no NCCL line — said, not an error.
    let out = rocetap(&["nccl", &crate::common::sample("clean-rc.pcap")]);
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(
        t.contains("no NCCL INFO or WARN line") && t.contains("No NCCL completion errors"),
        "{t}"
    );
}
