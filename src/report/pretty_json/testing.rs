//! What the tests of the writers without serde (`super::flow`, `super::connection`)
//! share: the reports of every sample, and one value's text both ways at a nesting depth.

use crate::analysis::{Analyzer, Config, Report};
use crate::pipeline::{NoSink, Pipeline};
use serde::Serialize;
use std::path::PathBuf;

/// The report of every sample (`.pcap` and `.pcapng`), one per file.
pub(super) fn sample_reports() -> Vec<Report> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut reports = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.to_string_lossy().into_owned();
        if !(name.ends_with(".pcap") || name.ends_with(".pcapng")) {
            continue;
        }
        let mut p = Pipeline::new(Default::default(), Analyzer::new(Config::default()));
        p.read_files(&[path], true, &mut NoSink).unwrap();
        reports.push(p.finish());
    }
    reports
}

/// The serde path's text of `v` as a value at nesting `depth`.
pub(super) fn serde_at<T: Serialize>(v: &T, depth: usize) -> String {
    let mut out = Vec::new();
    super::to_writer_pretty(&mut out, v).unwrap();
    let indent = format!("\n{}", " ".repeat(2 * depth));
    String::from_utf8(out).unwrap().replace('\n', &indent)
}

/// The text `write(buf, depth, v)` makes.
pub(super) fn ours_at<T>(write: fn(&mut Vec<u8>, usize, &T), v: &T, depth: usize) -> String {
    let mut buf = Vec::new();
    write(&mut buf, depth, v);
    String::from_utf8(buf).unwrap()
}
