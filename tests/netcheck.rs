//! Integration tests: `rocetap netcheck`: host verdicts, the capture side, the NAD lint
//! (offline and against the kernel), QoS readiness.
//!
//! One test binary for the area (`cargo test --test netcheck`); each module is one former
//! `tests/NAME.rs` binary, kept under `tests/netcheck/` (`cargo test --test netcheck
//! NAME::`). Tests here run on parallel threads: those that must not overlap another hold
//! `common::serial()` for their length.

mod common;

#[path = "netcheck/netcheck.rs"]
mod netcheck;
#[path = "netcheck/netcheck_capture.rs"]
mod netcheck_capture;
#[path = "netcheck/netcheck_nad.rs"]
mod netcheck_nad;
#[path = "netcheck/netcheck_nad_kernel.rs"]
mod netcheck_nad_kernel;
#[path = "netcheck/netcheck_qos.rs"]
mod netcheck_qos;
#[path = "netcheck/netcheck_words.rs"]
mod netcheck_words;
