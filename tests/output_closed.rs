//! Where the output goes away: a reader that stops reading (`rocetap ... | head`) ends
//! the run quietly with exit 0, whatever the format and however large the output; a
//! full disk is a one-line error and exit 2.

mod common;

use common::{bin, sample};
use std::process::{Command, Stdio};

/// Commands whose output is far larger than a pipe's buffer and the writers' buffers
/// (the many-QP sample's JSON document is about 380 KB).
fn big_outputs() -> Vec<Vec<String>> {
    let many = sample("many-qp.pcap");
    let mut cmds = Vec::new();
    for format in ["text", "json", "csv"] {
        cmds.push(vec!["analyze", "--format", format, "-v", &many]);
        cmds.push(vec!["analyze", "--format", format, "--events", &many]);
    }
    for format in ["text", "json", "csv"] {
        cmds.push(vec!["decode", "--format", format, &many]);
    }
    cmds.into_iter()
        .map(|c| c.into_iter().map(String::from).collect())
        .collect()
}

#[test]
fn a_reader_that_goes_away_ends_the_run_quietly() {
    for args in big_outputs() {
        let mut child = Command::new(bin())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reading end closed before anything is written: the first write fails.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("rocetap:"), "{args:?}: {err}");
    }
}

#[test]
fn a_full_disk_is_one_line_and_exit_2() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        common::skip("/dev/full cannot be opened");
        return;
    };
    for args in big_outputs() {
        let out = Command::new(bin())
            .args(&args)
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("No space left on device"), "{args:?}: {err}");
    }
}
