//! Integration tests of the Soft-RoCE lab (`lab/rxe/`): the analysis held to the kernel's
//! counters of two qemu VMs; its CM, QoS and story checks are modules of `lab_rxe`.
//!
//! One test binary for the area (`cargo test --test lab`); each module is one former
//! `tests/NAME.rs` binary, kept under `tests/lab/` (`cargo test --test lab NAME::`). Tests
//! here run on parallel threads: those that must not overlap another hold
//! `common::serial()` for their length.

mod common;

#[path = "lab/lab_mirror.rs"]
mod lab_mirror;
#[path = "lab/lab_rxe.rs"]
mod lab_rxe;

#[path = "lab/lab_taps.rs"]
mod lab_taps;
