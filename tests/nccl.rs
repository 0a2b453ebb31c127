//! Integration tests of `rocetap nccl` end to end through the binary: the fixtures' triage
//! (8 and 64 ranks, each configuration mistake from a log alone), the join with the lab's
//! dead-link capture (and with a live agent's `/report`), the host checks
//! (`--sysfs-root`, `--from`), `--fail-on`, and hostile input.
//!
//! One test binary for the area (`cargo test --test nccl`).

mod agent_support;
mod common;

#[path = "nccl/agent_live.rs"]
mod agent_live;
#[path = "nccl/fixtures.rs"]
mod fixtures;
#[path = "nccl/hostile.rs"]
mod hostile;
#[path = "nccl/join.rs"]
mod join;
