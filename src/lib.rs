//! rocetap's engine: everything the command line and the node agent share. Frames come
//! from [`capture`] (live libpcap devices, files, stdin), run through the one
//! [`pipeline`] (decode, then the [`analysis`] state machine, then sinks), and come out
//! as values that [`report`] words as text, JSON or CSV, that [`tui`] draws, or that
//! [`netcheck`] turns into findings next to a namespace's routing state. [`synth`] writes
//! the deterministic test traces.
//!
//! Nothing here parses a command line: each command (in the binary's `cmd/`) turns its
//! arguments into the validated configuration structs these modules take.

#![warn(missing_docs)]

pub mod agent;
pub mod analysis;
pub mod capture;
pub mod config;
pub mod error;
pub mod escape;
pub mod netcheck;
pub mod pipeline;
pub mod qptable;
pub mod report;
pub mod synth;
pub mod sysfile;
pub mod tui;
pub mod yaml;
