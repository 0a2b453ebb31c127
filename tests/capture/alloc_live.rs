//! Per-packet work allocates nothing on the live paths: a counting allocator (this test
//! binary's global allocator; it counts the allocations of the calling thread only, so
//! the other tests running beside it do not disturb the count) around
//! - the one-device path of a capture session and of a one-source agent
//!   (`Opened::start_inline` + `Pipeline::pump_inline`: frames straight from libpcap's
//!   buffer through decode and analysis, with and without reopening), on loopback (root;
//!   otherwise SKIP, a failure under CI),
//! - the merger's release of whole batches (`Merger::drain`, one source and several, and
//!   `Merger::drain_sources`, the agent's), with nothing live,
//! - file reads with `--jobs 1` and `--jobs 2` (`Pipeline::jobs`): the calling thread's
//!   allocations do not grow with the frames.
//!
//! Traffic: UDP datagrams from 127.0.0.1 to 127.0.0.1 on a port of the test's own, each
//! a RoCE v2 RC SEND Only with consecutive PSNs (the decoder is told that port is RoCE's);
//! the flow is seen first (its state allocated once), then counted frames follow.
//!
//! `unsafe` is allowed here for the one thing that needs it: a `GlobalAlloc` (the only way
//! to see allocations) that passes every call to `System` unchanged.

#![allow(unsafe_code)]

use crate::common;
use rocetap::analysis::{Analyzer, Config as AnalyzerConfig};
use rocetap::capture::live::{Filter, LiveOptions, LiveSource};
use rocetap::capture::merge::{Batch, Merger};
use rocetap::capture::Frame;
use rocetap::pipeline::{NoSink, Pipeline};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::UdpSocket;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call goes to `System` unchanged; the thread-locals are const-initialized
// `Cell`s without destructors, so touching them never allocates or re-enters.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(p, l, n) }
    }
}

fn note() {
    let _ = COUNTING.try_with(|c| {
        if c.get() {
            let _ = COUNT.try_with(|n| n.set(n.get() + 1));
        }
    });
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Allocations the calling thread made in `f`.
fn allocations<T>(f: impl FnOnce() -> T) -> (u64, T) {
    COUNT.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    let r = f();
    COUNTING.with(|c| c.set(false));
    (COUNT.with(Cell::get), r)
}

/// A RoCE v2 RC SEND Only to QP 0x11 with PSN `psn` and 32 bytes of payload (no ICRC
/// check: the decoder is told not to).
fn send_only(psn: u32) -> Vec<u8> {
    let mut b = vec![0u8; 12 + 32 + 4];
    b[0] = 0x04; // RC SEND Only
    b[2..4].copy_from_slice(&0xffffu16.to_be_bytes()); // P_Key
    b[5..8].copy_from_slice(&0x11u32.to_be_bytes()[1..]);
    b[8..12].copy_from_slice(&(psn & 0xff_ffff).to_be_bytes());
    b
}

#[test]
fn the_merger_releases_batches_without_allocating() {
    let frame = |source, ts| Frame {
        ts_ns: ts,
        link: dissectors::LinkType::Ethernet,
        data: &[0u8; 64],
        orig_len: 64,
        iface: 0,
        source,
    };
    for sources in [1usize, 3] {
        let mut m = Merger::new(sources);
        for s in 0..sources {
            let mut b = Batch::new(s as u32, 256);
            for i in 0..256 {
                b.push(&frame(s as u32, i * 10 + s as u64));
            }
            b.watermark_ns = u64::MAX;
            m.push(b);
        }
        let mut seen = 0;
        let (n, _) = allocations(|| {
            m.drain(false, |_| {
                seen += 1;
                ControlFlow::Continue(())
            })
        });
        assert_eq!((n, seen), (0, 256 * sources), "drain, {sources} sources");
        let mut b = Batch::new(0, 256);
        for i in 0..256 {
            b.push(&frame(0, i));
        }
        m.push(b);
        let (n, _) = allocations(|| m.drain_sources(|_| ControlFlow::Continue(())));
        assert_eq!(n, 0, "drain_sources, {sources} sources");
    }
}

#[test]
fn one_device_is_analyzed_from_libpcaps_buffer_without_allocating() {
    if !common::is_root() {
        common::skip("capturing on loopback needs root");
        return;
    }
    // As a capture session opens it, and as the agent does (a lost device reopened).
    for reopen in [false, true] {
        one_device_round(reopen);
    }
}

fn one_device_round(reopen: bool) {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = rx.local_addr().unwrap().port();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let opts = LiveOptions {
        snaplen: 128,
        immediate: true,
        filter: Filter::Expr(format!("udp dst port {port}")),
        reopen,
        ..LiveOptions::default()
    };
    let opened = LiveSource::open(&["lo".to_string()], opts).expect("open lo");
    let Ok((_live, mut inline)) = opened.start_inline() else {
        panic!("one device reads inline, reopened or not");
    };
    let dcfg = dissectors::Config {
        roce_port: port,
        check_icrc: false,
    };
    let mut p = Pipeline::new(dcfg, Analyzer::new(AnalyzerConfig::default()));
    let mut psn = 0;
    // Sends `n` frames and pumps until the pipeline has them all; the allocations made
    // while pumping.
    let mut round = |n: u64, p: &mut Pipeline| {
        let want = p.frames() + n;
        for _ in 0..n {
            tx.send_to(&send_only(psn), ("127.0.0.1", port)).unwrap();
            psn += 1;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut allocated = 0;
        while p.frames() < want && Instant::now() < deadline {
            let (a, _) =
                allocations(|| p.pump_inline(&mut inline, Duration::from_millis(50), &mut NoSink));
            allocated += a;
        }
        assert_eq!(p.frames(), want, "every frame sent was captured");
        allocated
    };
    // The first frames: the flow's state and the analyzer's tables are allocated.
    round(200, &mut p);
    let allocated = round(2000, &mut p);
    assert_eq!(
        allocated, 0,
        "allocations while 2000 frames went through (reopen {reopen})"
    );
    let r = p.finish();
    assert_eq!(r.totals.frames, 2200);
}

/// Files, one thread or two (`analyze --jobs`): what the calling thread allocates for a
/// file read (with `--jobs 2` the analysis; with `--jobs 1` reading, decoding and the
/// analysis) does not grow with the frames. Same scenario at 20,000 and 200,000 frames
/// (the same 8 flows, no events): the allocations of the two reads are equal. The reading
/// thread's batches are made once per read, before the first frame.
#[test]
fn file_reads_allocate_nothing_per_frame_whatever_the_jobs() {
    let t = common::TempDir::new("alloc-jobs");
    let trace = |n: &str| {
        let p = t.path(&format!("clean-{n}.pcap"));
        common::run_ok(&[
            common::bin(),
            "synth",
            "clean-rc",
            "--packets",
            n,
            "-s",
            "128",
            "-o",
            p.to_str().unwrap(),
        ]);
        p
    };
    let (small, big) = (trace("20000"), trace("200000"));
    for jobs in [1, 2] {
        let read = |path: &std::path::Path| {
            let mut p = Pipeline::new(
                dissectors::Config::default(),
                Analyzer::new(AnalyzerConfig::default()),
            )
            .jobs(jobs);
            let (n, res) = allocations(|| p.read_files(&[path.to_path_buf()], true, &mut NoSink));
            res.expect("read the trace");
            (n, p.frames())
        };
        let (a_small, f_small) = read(&small);
        let (a_big, f_big) = read(&big);
        assert!(f_big >= 9 * f_small, "{f_small} and {f_big} frames");
        assert_eq!(
            a_big, a_small,
            "--jobs {jobs}: allocations for {f_big} frames against {f_small}"
        );
    }
}
