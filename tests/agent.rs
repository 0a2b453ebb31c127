//! Integration tests: `rocetap agent` with the real parts (veth + tcpreplay, Prometheus,
//! curl), its HTTP server, privileges, sources, TLS, days of counts, and `deploy/`.
//!
//! One test binary for the area (`cargo test --test agent`); each module is one former
//! `tests/NAME.rs` binary, kept under `tests/agent/` (`cargo test --test agent NAME::`).
//! Tests here run on parallel threads: those that must not overlap another hold
//! `common::serial()` for their length.

mod agent_priv_support;
mod agent_support;
mod common;
mod web_support;

#[path = "agent/agent.rs"]
mod agent;
#[path = "agent/agent_days.rs"]
mod agent_days;
#[path = "agent/agent_http.rs"]
mod agent_http;
#[path = "agent/agent_lanes.rs"]
mod agent_lanes;
#[path = "agent/agent_mirror.rs"]
mod agent_mirror;
#[path = "agent/agent_priv.rs"]
mod agent_priv;
#[path = "agent/agent_sources.rs"]
mod agent_sources;
#[path = "agent/agent_tls.rs"]
mod agent_tls;
#[path = "agent/deploy.rs"]
mod deploy;
#[path = "agent/fleet.rs"]
mod fleet;
#[path = "agent/sflow_deploy.rs"]
mod sflow_deploy;
