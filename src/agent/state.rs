//! What the agent publishes for its HTTP endpoints: the analysis loop and the netcheck
//! thread write it once a tick, `/metrics` and `/healthz` read it. Values only; the
//! exposition format is `metrics.rs`.

use super::topn::{Counts, Series};
use crate::analysis::buckets::LatencyBuckets;
use crate::analysis::Totals;
use std::time::{Instant, SystemTime};

/// One captured source as the last tick saw it.
#[derive(Clone, Debug, Default)]
pub struct SourceState {
    /// The device or netdev.
    pub name: String,
    /// The analysis totals since the agent started.
    pub totals: Totals,
    /// PFC per priority, every sender together: (frames, pause time in seconds).
    pub pfc: [(u64, f64); 8],
    /// ACK and CE→CNP latencies.
    pub latency: LatencyBuckets,
    /// Live flows the analyzer holds.
    pub tracked: u64,
    /// Frames the capture delivered to the agent.
    pub received: u64,
    /// Dropped by the kernel (no room in the capture buffer).
    pub kernel_dropped: u64,
    /// Dropped by the interface or driver.
    pub if_dropped: u64,
    /// Dropped by the agent's own queue (the analysis fell behind).
    pub queue_dropped: u64,
    /// The top-N connections by trouble, counting since they were chosen.
    pub top: Vec<Series>,
    /// Every other connection's counts summed.
    pub other: Counts,
    /// The capture's error, if it stopped; while it is down, why.
    pub error: Option<String>,
    /// The device is open and capturing.
    pub up: bool,
    /// Times the device was lost.
    pub losses: u64,
    /// Times it was opened again after a loss.
    pub reopens: u64,
    /// RoCE packets of flows not followed: the analyzers' share of the budget was full.
    pub untracked_packets: u64,
    /// Frames the flight recorder holds now.
    pub recorded_frames: u64,
    /// The per-peer series (`peers.rs`).
    pub peers: Vec<super::peers::PeerSeries>,
    /// Flows counted in a `peer="other"` series.
    pub peer_flows_aggregated: u64,
}

/// A pod a network namespace belongs to, as far as the node can tell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pod {
    /// Pod name.
    pub name: String,
    /// Kubernetes namespace.
    pub namespace: String,
}

/// One netcheck finding, as a metric sees it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NsFinding {
    /// The netcheck finding id (`reply-path`, `node-source`, `arp-sysctl`, `roce-…`).
    pub check: String,
    /// `info`, `warning` or `error`.
    pub severity: String,
    /// Its one-line title (for the log, not a label).
    pub title: String,
}

/// The last netcheck of one network namespace.
#[derive(Clone, Debug, Default)]
pub struct NsState {
    /// The namespace's name: its `/run/netns` name, or `pid:PID` for one only a process
    /// holds, `host` for the agent's own.
    pub netns: String,
    /// Its pod, when known.
    pub pod: Option<Pod>,
    /// The findings.
    pub findings: Vec<NsFinding>,
    /// Why it could not be checked.
    pub error: Option<String>,
}

/// Netcheck over every namespace.
#[derive(Clone, Debug, Default)]
pub struct NetcheckState {
    /// Runs completed.
    pub runs: u64,
    /// When the last one ended.
    pub last_run: Option<SystemTime>,
    /// The namespaces of the last run.
    pub namespaces: Vec<NsState>,
}

/// Dumps of the flight recorder.
#[derive(Clone, Copy, Debug, Default)]
pub struct DumpCounts {
    /// Written because a `--dump-on` rule held.
    pub rule: u64,
    /// Written on SIGUSR1.
    pub signal: u64,
    /// Asked for by a rule inside the rate limit, not written.
    pub suppressed: u64,
    /// Could not be written (full disk, permissions): nothing half-written was left.
    pub failed: u64,
}

/// The memory budget and how much of each part is in use.
#[derive(Clone, Debug, Default)]
pub struct MemoryState {
    /// `--memory-limit`.
    pub budget: u64,
    /// Each part's share: (part, bytes).
    pub shares: Vec<(&'static str, u64)>,
    /// Each part's estimated use: (part, bytes).
    pub used: Vec<(&'static str, u64)>,
    /// The process' resident size and its peak, as the kernel counts them.
    pub resident: Option<(u64, u64)>,
}

/// Everything `/metrics` and `/healthz` show.
#[derive(Clone, Debug)]
pub struct Published {
    /// The node's name (label `node`).
    pub node: String,
    /// The sources, in `--interface` order.
    pub sources: Vec<SourceState>,
    /// The per-namespace checks.
    pub netcheck: NetcheckState,
    /// The flight recorder's dumps.
    pub dumps: DumpCounts,
    /// When the analysis loop last published.
    pub tick: Instant,
    /// Why the agent is not healthy, if it is not.
    pub unhealthy: Option<String>,
    /// The memory budget and its use.
    pub memory: MemoryState,
    /// The per-peer series carry topology labels (`--topology` was given).
    pub topology: bool,
}

impl Published {
    /// Nothing measured yet, for `node` and the named sources.
    pub fn new(node: String, sources: &[String]) -> Self {
        Published {
            node,
            sources: sources
                .iter()
                .map(|n| SourceState {
                    name: n.clone(),
                    up: true,
                    ..SourceState::default()
                })
                .collect(),
            netcheck: NetcheckState::default(),
            dumps: DumpCounts::default(),
            tick: Instant::now(),
            unhealthy: None,
            memory: MemoryState::default(),
            topology: false,
        }
    }
}
