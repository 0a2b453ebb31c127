//! `rocetap agent`: one long-running process per node. It captures headers only on every
//! configured source, analyzes continuously with bounded memory (one analyzer per source;
//! idle flows expire), keeps a flight recorder of the recent frames, serves `/metrics`,
//! `/healthz` and `/report` over HTTP, runs netcheck on every network namespace of the
//! node at an interval, dumps the recorder when a `--dump-on` rule holds over the sliding
//! window (or on SIGUSR1), and logs one line per notable event.
//!
//! Threads: with several sources a capture thread each (`capture::live`; one source is
//! read by the analysis loop itself, straight from libpcap's ring), the analysis loop
//! (this module: decode, analyze, record, publish once a second), the HTTP server
//! (`http`) and the netcheck pass (`netns`). They share only the published values
//! ([`state::Published`]) and a channel for `/report`.

mod arena;
pub mod budget;
pub mod dump;
pub mod file;
pub mod http;
pub mod log;
pub mod metrics;
pub mod netns;
pub mod peers;
pub mod private;
pub mod privileges;
pub mod recorder;
pub mod state;
pub mod topn;
pub mod topology;
pub mod web;
pub mod window;

mod error;
mod run;
mod side;

pub use error::Error;
pub use run::run;

use crate::capture::live::LiveOptions;
use crate::report::rules::Rule;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A validated agent configuration (the command line over the config file).
#[derive(Clone, Debug)]
pub struct Config {
    /// Sources to capture from; `auto`: the node's RDMA devices (through the libpcap
    /// sniffer when it has one, else their netdevs).
    pub interfaces: Vec<String>,
    /// libpcap settings (headers-only snaplen, the RoCE filter, buffer, queue).
    pub live: LiveOptions,
    /// Where `/metrics`, `/healthz` and `/report` are served.
    pub listen: SocketAddr,
    /// The `node` label.
    pub node: String,
    /// Decoder settings (RoCE port, ICRC checking).
    pub decode: dissectors::Config,
    /// Analyzer settings (idle timeout, link speed, ...).
    pub analyzer: crate::analysis::Config,
    /// Connections with their own series per source.
    pub top_flows: usize,
    /// Netcheck every this long; `None`: never.
    pub netcheck_interval: Option<Duration>,
    /// Only these namespaces (names as in the metrics); empty: all.
    pub netcheck_only: Vec<String>,
    /// sysfs, for RDMA devices and netcheck's RoCE checks.
    pub sysfs_root: PathBuf,
    /// Recorded `dcb` / `mlnx_qos` outputs (as `netcheck --qos-from`), for the QoS checks.
    pub qos_from: Option<PathBuf>,
    /// The kernel's QP tables that label the flows of `/report` and of dumps: `live`
    /// (read again over RDMA netlink each time) or `[ADDR=]FILE` (`rdma res show qp -j`,
    /// read once at start).
    pub qp_table: Vec<String>,
    /// Where `/proc` and `/run/netns` are.
    pub roots: netns::Roots,
    /// Flight recorder bytes per source.
    pub recorder_bytes: u64,
    /// Flight recorder seconds.
    pub recorder_seconds: u64,
    /// Where dumps go; `None`: no dumps.
    pub dump_dir: Option<PathBuf>,
    /// Rules that trigger a dump, over the sliding window.
    pub dump_on: Vec<Rule>,
    /// The sliding window rules and the event log judge by.
    pub window: Duration,
    /// Seconds of frames a dump holds (and `/report` analyzes).
    pub dump_seconds: u64,
    /// Least time between two dumps a rule triggers.
    pub dump_interval: Duration,
    /// Dumps kept in the directory (oldest removed).
    pub dump_keep: usize,
    /// How log lines look.
    pub log_format: log::LogFormat,
    /// Stop after this long (tests, one-shot runs); `None`: until SIGTERM.
    pub duration: Option<Duration>,
    /// Mask RETH VA/rkey and AtomicETH operands in what the flight recorder keeps (hence
    /// in dumps and `/report`); see [`private`].
    pub redact: bool,
    /// The HTTP server: TLS and users (`--web-config-file`), connection limit, `/report`.
    pub web: web::Options,
    /// The memory budget of the whole agent (`budget`): recorders, analyzers, `/report`
    /// and the capture buffers of every source share it.
    pub memory_limit: u64,
    /// Peer pairs with series of their own per source; the rest count in `peer="other"`.
    pub max_peers: usize,
    /// Where each address sits (node, ToR, rail, switch): labels of the per-peer series.
    pub topology: Option<std::sync::Arc<topology::Topology>>,
}

impl Config {
    /// The defaults for `interfaces` on `node`.
    pub fn new(interfaces: Vec<String>, node: String) -> Self {
        Config {
            interfaces,
            live: LiveOptions {
                snaplen: crate::config::HEADERS_ONLY_SNAPLEN,
                filter: crate::capture::live::Filter::Roce {
                    port: crate::config::ROCE_PORT,
                },
                queue_batches: crate::config::DEFAULT_QUEUE_BATCHES,
                ..LiveOptions::default()
            },
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            node,
            decode: dissectors::Config {
                roce_port: crate::config::ROCE_PORT,
                check_icrc: true,
            },
            analyzer: crate::analysis::Config {
                max_events: 10_000,
                max_flow_summaries: 1_024,
                ..crate::analysis::Config::default()
            },
            top_flows: 20,
            netcheck_interval: Some(Duration::from_secs(60)),
            netcheck_only: Vec::new(),
            sysfs_root: PathBuf::from(crate::config::SYSFS_ROOT),
            qos_from: None,
            qp_table: Vec::new(),
            roots: netns::Roots::default(),
            recorder_bytes: 32 << 20,
            recorder_seconds: 120,
            dump_dir: None,
            dump_on: Vec::new(),
            window: Duration::from_secs(10),
            dump_seconds: 60,
            dump_interval: Duration::from_secs(300),
            dump_keep: 20,
            log_format: log::LogFormat::Text,
            duration: None,
            redact: true,
            web: web::Options::default(),
            memory_limit: budget::DEFAULT_LIMIT,
            max_peers: 256,
            topology: None,
        }
    }
}

/// The agent's default port (`/metrics`), in the range Prometheus' port registry uses
/// for exporters, not taken there.
pub const DEFAULT_PORT: u16 = 9470;
