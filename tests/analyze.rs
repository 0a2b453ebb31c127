//! Integration tests: `rocetap analyze` held to truth: CM pairing, `--qp-table`, the
//! reference traces, the samples and their goldens, many QPs, read-ahead, QoS marking,
//! tshark's decode, hostile input, switch mirrors of the samples (`mirror`), mirror sessions
//! as taps (`mirror_taps`), the same report whatever `--jobs` (`jobs`).
//!
//! One test binary for the area (`cargo test --test analyze`); each module is one former
//! `tests/NAME.rs` binary, kept under `tests/analyze/` (`cargo test --test analyze
//! NAME::`). Tests here run on parallel threads: those that must not overlap another hold
//! `common::serial()` for their length.

mod common;

#[path = "analyze/analyze_cm.rs"]
mod analyze_cm;
#[path = "analyze/analyze_qptable.rs"]
mod analyze_qptable;
#[path = "analyze/analyze_reference.rs"]
mod analyze_reference;
#[path = "analyze/decode_fast.rs"]
mod decode_fast;
#[path = "analyze/hostile.rs"]
mod hostile;
#[path = "analyze/jobs.rs"]
mod jobs;
#[path = "analyze/lookahead.rs"]
mod lookahead;
#[path = "analyze/many_qp.rs"]
mod many_qp;
#[path = "analyze/mirror.rs"]
mod mirror;
#[path = "analyze/mirror_taps.rs"]
mod mirror_taps;
#[path = "analyze/qos.rs"]
mod qos;
#[path = "analyze/samples.rs"]
mod samples;
#[path = "analyze/taps.rs"]
mod taps;
#[path = "analyze/tshark_crosscheck.rs"]
mod tshark_crosscheck;
