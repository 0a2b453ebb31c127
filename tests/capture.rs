//! Integration tests: `rocetap capture` and `rocetap top`: argument and device errors, live
//! capture on a veth between network namespaces, the TUI in tmux, a kernel VXLAN mirror (`vxlan_mirror`),
//! and `rocetap sflow` (`sflow_cli`; a real pmacctd exporter: `sflow_exporter`).
//!
//! One test binary for the area (`cargo test --test capture`); each module is one former
//! `tests/NAME.rs` binary, kept under `tests/capture/` (`cargo test --test capture
//! NAME::`). Tests here run on parallel threads: those that must not overlap another hold
//! `common::serial()` for their length.

mod common;

#[path = "capture/alloc_live.rs"]
mod alloc_live;
#[path = "capture/capture_cli.rs"]
mod capture_cli;
#[path = "capture/capture_netns.rs"]
mod capture_netns;
#[path = "capture/sflow_cli.rs"]
mod sflow_cli;
#[path = "capture/sflow_exporter.rs"]
mod sflow_exporter;
#[path = "capture/tui_tmux.rs"]
mod tui_tmux;
#[path = "capture/vxlan_mirror.rs"]
mod vxlan_mirror;
