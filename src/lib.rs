//! rocetap's engine: everything the command line and the node agent share. Frames come
//! from [`capture`] (live libpcap devices, files, stdin), run through the one
//! [`pipeline`] (decode, then the [`analysis`] state machine, then sinks), and come out
//! as values that [`report`] words as text, JSON or CSV, that [`tui`] draws, or that
//! [`netcheck`] turns into findings next to a namespace's routing state. [`synth`] writes
//! the deterministic test traces.
//!
//! Nothing here parses a command line: each command (in the binary's `cmd/`) turns its
//! arguments into the validated configuration structs these modules take.
//!
//! # Features
//!
//! The engine — [`dissectors`](https://docs.rs/dissectors) decoding, [`analysis`],
//! [`report`], files and pipes in [`capture`], [`netcheck`], [`synth`] — builds with
//! `default-features = false`, without libpcap, the terminal UI or the HTTP stack. The
//! features add: `live` (libpcap and mlx5 RDMA devices: `capture::live`,
//! `capture::session`), `tui` (`rocetap top`), `agent` (the node agent). The `rocetap`
//! binary needs all three (the default).
//!
//! # Embedding the engine
//!
//! Read a capture, analyze it, read the values and word the findings:
//!
//! ```
//! use rocetap::analysis::{Analyzer, Config};
//! use rocetap::pipeline::{NoSink, Pipeline};
//!
//! let path = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/samples/loss-upstream.pcap"));
//! let mut p = Pipeline::new(dissectors::Config::default(), Analyzer::new(Config::default()));
//! let cut_short = p.read_files(&[path], true, &mut NoSink).expect("a readable capture");
//! assert!(cut_short.is_empty());
//! let report = p.finish();
//! assert_eq!(report.totals.nak_psn_seq, 6);
//! for f in &report.findings {
//!     println!("{}", rocetap::report::findings::message(f, &report));
//! }
//! ```

#![warn(missing_docs)]

#[cfg(feature = "agent")]
pub mod agent;
pub mod analysis;
pub mod capture;
pub mod config;
pub mod error;
pub mod escape;
pub mod nccl;
pub mod netcheck;
pub mod pipeline;
mod prefetch;
pub mod qptable;
pub mod report;
pub mod sflow;
pub mod synth;
pub mod sysfile;
pub mod taps;
#[cfg(test)]
mod testfiles;
#[cfg(feature = "tui")]
pub mod tui;
pub mod yaml;
