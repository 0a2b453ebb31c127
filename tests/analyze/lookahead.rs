//! Reading ahead (`Pipeline::read_files` decoding a few frames before the analyzer sees
//! them, to warm their flows into the cache) and reading on a thread of its own while the
//! analysis runs on the caller's (for a detached sink) change timing only: the report is
//! the one the frame-by-frame pipeline gives, on every sample, on a many-QP trace with
//! loss above the threshold where reading ahead starts, on several inputs merged, on an
//! input cut short or corrupt in the middle, and when the sink stops the read.

use crate::common;
use common::TempDir;
use dissectors::Decoded;
use rocetap::analysis::{Analyzer, Config, Report};
use rocetap::capture::Frame;
use rocetap::pipeline::{NoSink, Pipeline, Sink, AHEAD, WARM_FROM};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rocetap");

/// A sink that lets the read run ahead or not, and breaks before frame `stop_at` (1-based)
/// if set.
struct Probe {
    ahead: bool,
    stop_at: Option<u64>,
    seen: u64,
}

impl Sink for Probe {
    fn before(&mut self, _: &Frame<'_>, _: &Analyzer) -> ControlFlow<()> {
        self.seen += 1;
        if self.stop_at == Some(self.seen) {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
    fn after(&mut self, _: &Frame<'_>, _: Option<&Decoded>, _: &Analyzer) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn lookahead(&self) -> bool {
        self.ahead
    }
}

/// The report of `path` read with the sink, reading ahead from `warm_from` live flows;
/// also the frames fed and the inputs cut short.
fn report(path: &Path, sink: &mut Probe, warm_from: usize) -> (String, u64, Vec<(String, u64)>) {
    report_of(&[path.to_path_buf()], sink, warm_from)
}

/// [`report`] of several inputs, merged by timestamp.
fn report_of(
    paths: &[PathBuf],
    sink: &mut Probe,
    warm_from: usize,
) -> (String, u64, Vec<(String, u64)>) {
    let path = &paths[0];
    let mut p = Pipeline::new(
        dissectors::Config::default(),
        Analyzer::new(Config::default()),
    )
    .warm_from(warm_from);
    let cut = p.read_files(paths, true, sink).expect("read the trace");
    let frames = p.frames();
    let r: Report = p.finish();
    assert_eq!(
        r.totals.frames,
        frames,
        "{}: every frame fed is analyzed",
        path.display()
    );
    let cut = cut.into_iter().map(|c| (c.file, c.frames)).collect();
    (format!("{r:#?}"), frames, cut)
}

fn frame_by_frame(path: &Path) -> (String, u64, Vec<(String, u64)>) {
    let mut s = Probe {
        ahead: false,
        stop_at: None,
        seen: 0,
    };
    report(path, &mut s, 0)
}

fn read_ahead(path: &Path, warm_from: usize) -> (String, u64, Vec<(String, u64)>) {
    let mut s = Probe {
        ahead: true,
        stop_at: None,
        seen: 0,
    };
    report(path, &mut s, warm_from)
}

/// The report of `paths` read for [`NoSink`] with the reading on its own thread (`split`)
/// or not, reading ahead from `warm_from` live flows.
fn detached(paths: &[PathBuf], split: bool, warm_from: usize) -> (String, u64, Vec<(String, u64)>) {
    let mut p = Pipeline::new(
        dissectors::Config::default(),
        Analyzer::new(Config::default()),
    )
    .warm_from(warm_from)
    .split(split);
    let cut = p
        .read_files(paths, true, &mut NoSink)
        .expect("read the trace");
    let frames = p.frames();
    let r: Report = p.finish();
    assert_eq!(r.totals.frames, frames, "every frame read is analyzed");
    let cut = cut.into_iter().map(|c| (c.file, c.frames)).collect();
    (format!("{r:#?}"), frames, cut)
}

fn samples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("samples/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_sample_reads_ahead_to_the_same_report() {
    let samples = samples();
    assert!(samples.len() >= 10, "samples/ holds the sample traces");
    for s in &samples {
        let want = frame_by_frame(s);
        // Reading ahead from the first frame on, whatever the number of flows.
        assert!(
            want == read_ahead(s, 0),
            "{}: reading ahead changed the report",
            s.display()
        );
        let one = [s.clone()];
        for (split, warm_from) in [(true, 0), (true, usize::MAX), (false, 0)] {
            assert!(
                want == detached(&one, split, warm_from),
                "{}: split {split}, warm from {warm_from}: the report changed",
                s.display()
            );
        }
    }
}

#[test]
fn many_qps_with_loss_read_ahead_to_the_same_report() {
    let tmp = TempDir::new("lookahead-many");
    let path = tmp.path("many.pcap");
    let o = Command::new(BIN)
        .args([
            "synth", "many-qp", "--qps", "1500", "--peers", "3", "--loss", "20",
        ])
        .args(["--msg-size", "16384", "--packets", "60000", "--force", "-o"])
        .arg(&path)
        .output()
        .expect("run rocetap synth");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = frame_by_frame(&path);
    assert!(
        want.0.contains("retransmitted_packets: "),
        "a report with counters"
    );
    // 3,000 flows: above the default threshold, so reading ahead starts part way.
    const { assert!(3000 > WARM_FROM) };
    assert!(
        want == read_ahead(&path, WARM_FROM),
        "reading ahead from {WARM_FROM} flows"
    );
    assert!(want == read_ahead(&path, 0), "reading ahead from the start");
    // Several inputs, merged by timestamp before the pipeline sees them.
    let both = [
        path.clone(),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/loss-upstream.pcap"),
    ];
    let probe = |ahead| Probe {
        ahead,
        stop_at: None,
        seen: 0,
    };
    let merged = report_of(&both, &mut probe(false), 0);
    assert!(merged.1 > want.1, "both inputs were read");
    assert!(
        merged == report_of(&both, &mut probe(true), 0),
        "two inputs, reading ahead"
    );
    // The reading on its own thread: many batches, the warming switched on part way.
    const { assert!(60000 > 10 * rocetap::pipeline::BATCH) };
    let one = [path.clone()];
    assert!(
        want == detached(&one, true, WARM_FROM),
        "split, warm from {WARM_FROM}"
    );
    assert!(
        want == detached(&one, true, 0),
        "split, warm from the start"
    );
    assert!(merged == detached(&both, true, 0), "two inputs, split");
}

#[test]
fn an_input_cut_short_reads_ahead_to_the_same_report() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let whole = std::fs::read(dir.join("loss-upstream.pcap")).unwrap();
    let tmp = TempDir::new("lookahead-cut");
    let path = tmp.path("cut.pcap");
    // Cut in the middle of a record, well after the first few frames.
    std::fs::write(&path, &whole[..whole.len() * 2 / 3 + 7]).unwrap();
    let want = frame_by_frame(&path);
    assert_eq!(want.2.len(), 1, "the input is reported cut short");
    assert!(
        want.1 > AHEAD as u64,
        "more frames than the read-ahead window"
    );
    assert!(want == read_ahead(&path, 0));
    assert!(
        want == detached(std::slice::from_ref(&path), true, 0),
        "split"
    );
}

/// A record whose length is impossible, in the middle of a file (past the first batches
/// of the split read): the read fails, on one thread or two, after analyzing the same
/// frames before it; `analyze` says so in one line and exits 2.
#[test]
fn a_corrupt_record_fails_the_split_read_after_the_same_frames() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut bytes = std::fs::read(dir.join("many-qp.pcap")).unwrap();
    // Walk to record 700 and give it a 3 GiB length.
    let mut off = 24;
    for _ in 0..700 {
        let caplen = u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap());
        off += 16 + caplen as usize;
    }
    assert!(
        off + 16 < bytes.len(),
        "the sample has more than 700 frames"
    );
    bytes[off + 8..off + 12].copy_from_slice(&0xC000_0000u32.to_le_bytes());
    let tmp = TempDir::new("lookahead-corrupt");
    let path = tmp.path("corrupt.pcap");
    std::fs::write(&path, &bytes).unwrap();
    let run = |split: bool| {
        let mut p = Pipeline::new(
            dissectors::Config::default(),
            Analyzer::new(Config::default()),
        )
        .warm_from(0)
        .split(split);
        let err = p
            .read_files(std::slice::from_ref(&path), true, &mut NoSink)
            .expect_err("a corrupt record is an error");
        let frames = p.frames();
        let r = p.finish();
        assert_eq!(r.totals.frames, frames, "every frame read is analyzed");
        (err.to_string(), frames, format!("{r:#?}"))
    };
    let (one, two) = (run(false), run(true));
    assert_eq!(one.1, 700, "the frames before the corrupt record");
    assert!(one == two, "split: {} / {}", one.0, two.0);
    let out = Command::new(BIN)
        .args(["analyze", "-q"])
        .arg(&path)
        .output()
        .expect("run rocetap analyze");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("rocetap: ")
            && err.contains("after 700 frames")
            && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn a_sink_that_stops_the_read_gets_every_frame_before_it_analyzed() {
    let s = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/clean-rc.pcap");
    for stop_at in [1, 2, AHEAD as u64 - 1, AHEAD as u64, AHEAD as u64 + 1, 101] {
        let mut plain = Probe {
            ahead: false,
            stop_at: Some(stop_at),
            seen: 0,
        };
        let mut ahead = Probe {
            ahead: true,
            stop_at: Some(stop_at),
            seen: 0,
        };
        let want = report(&s, &mut plain, 0);
        assert_eq!(
            want.1,
            stop_at - 1,
            "the frame the sink stopped at is not fed"
        );
        assert!(
            want == report(&s, &mut ahead, 0),
            "stopped before frame {stop_at}"
        );
    }
}

#[test]
fn no_sink_reads_ahead_and_other_sinks_do_not_by_default() {
    assert!(NoSink.lookahead());
    assert!(NoSink.detached());
    struct Other;
    impl Sink for Other {
        fn after(&mut self, _: &Frame<'_>, _: Option<&Decoded>, _: &Analyzer) -> ControlFlow<()> {
            ControlFlow::Continue(())
        }
    }
    assert!(!Other.lookahead());
    assert!(!Other.detached());
}
