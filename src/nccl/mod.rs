//! NCCL's own logs, read and triaged: `rocetap nccl`. [`read`] turns log text (files,
//! stdin, `kubectl logs` with or without `--prefix` / `--timestamps`) into a [`Log`]:
//! the processes (host, pid, ranks, HCA ports, out-of-band interface, `NCCL_*`
//! settings, QPs, channels) and every completion error. [`triage::triage`] ranks the
//! likely causes of each error from the log alone ([`config`] finds the configuration
//! mistakes), [`join`] adds what captures show of the connection behind it and
//! [`host`] what a node's sysfs shows of its GID table. Values only: the words are in
//! `report::nccl`.

pub mod config;
pub mod fetch;
pub mod host;
pub mod join;
pub mod line;
pub mod parse;
pub mod profiler;
mod read;
pub mod status;
pub mod triage;
pub mod wire;

pub use read::{read, read_paths};

use crate::config::limits::NCCL_PROCS;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};

/// One HCA port a process uses (the `NET/IB : Using` line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hca {
    /// NCCL's device index.
    pub index: u32,
    /// The RDMA device.
    pub name: String,
    /// The port.
    pub port: u32,
    /// `RoCE` or `IB`.
    pub link: String,
}

/// A QP the process connected (NCCL's `qpn` lines, NCCL_DEBUG_SUBSYS including NET).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Qp {
    /// NCCL's device index.
    pub dev: Option<u32>,
    /// The local QPN.
    pub qpn: u32,
    /// The GID index.
    pub gid_index: Option<i64>,
    /// The local GID.
    pub gid: Option<Ipv6Addr>,
}

/// A channel's network connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Channel {
    /// Channel number.
    pub channel: u32,
    /// Sending rank.
    pub from: u32,
    /// Receiving rank.
    pub to: u32,
    /// This process sends.
    pub send: bool,
    /// `IB`, `Socket`, ...
    pub net: String,
    /// NCCL's device index.
    pub dev: u32,
}

/// One NCCL process: what its log lines say of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Proc {
    /// Host name as NCCL prints it.
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// `kubectl logs --prefix`'s pod/container.
    pub pod: Option<String>,
    /// NCCL's version.
    pub version: Option<String>,
    /// Its rank (the first communicator's, else the sender of its first channel).
    pub rank: Option<u32>,
    /// Ranks in that communicator.
    pub nranks: Option<u32>,
    /// CUDA devices seen on its lines.
    pub cuda_devs: Vec<u32>,
    /// HCA ports used.
    pub hcas: Vec<Hca>,
    /// Relaxed ordering on.
    pub relaxed_ordering: bool,
    /// Out-of-band interface.
    pub oob_if: Option<String>,
    /// Its address.
    pub oob_addr: Option<IpAddr>,
    /// `NCCL_*` settings the log reports, in order (the last one wins).
    pub env: Vec<(String, String)>,
    /// QPs connected.
    pub qps: Vec<Qp>,
    /// Channels over the network.
    pub channels: Vec<Channel>,
    /// Asynchronous HCA events (port errors, fatal events), as logged.
    pub async_events: Vec<String>,
    /// Settings, QPs, channels or events past
    /// [`NCCL_PER_PROC`](crate::config::limits::NCCL_PER_PROC).
    pub dropped: u64,
}

impl Proc {
    /// The value of setting `name`, the last one logged.
    pub fn env(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The GID index: `NCCL_IB_GID_INDEX`, else the QP lines'.
    pub fn gid_index(&self) -> Option<i64> {
        self.env("NCCL_IB_GID_INDEX")
            .and_then(|v| v.trim().parse().ok())
            .or_else(|| self.qps.iter().find_map(|q| q.gid_index))
    }

    /// The HCA of NCCL device `dev`.
    pub fn hca(&self, dev: u32) -> Option<&Hca> {
        self.hcas.iter().find(|h| h.index == dev)
    }
}

/// One completion error.
#[derive(Clone, Debug, PartialEq)]
pub struct WcError {
    /// The input it came from (index into [`Log::sources`]) and its line number.
    pub source: usize,
    /// Line number, from 1.
    pub line: u64,
    /// The process (index into [`Log::procs`]).
    pub proc: usize,
    /// Thread id.
    pub tid: u32,
    /// CUDA device.
    pub cuda_dev: u32,
    /// Timestamp as written.
    pub time: Option<String>,
    /// In ns since the Unix epoch, when the timestamp is UTC (kubectl's).
    pub time_ns: Option<u64>,
    /// `ibv_wc_status`.
    pub status: u32,
    /// `ibv_wc_opcode`.
    pub opcode: Option<u32>,
    /// Bytes.
    pub len: Option<u64>,
    /// Vendor syndrome.
    pub vendor_err: Option<u32>,
    /// NCCL's request type.
    pub req: Option<String>,
    /// The peer's address as printed.
    pub peer_text: String,
    /// The peer's address.
    pub peer: Option<IpAddr>,
    /// Local GID.
    pub local_gid: Option<Ipv6Addr>,
    /// Remote GID.
    pub remote_gid: Option<Ipv6Addr>,
    /// The HCA: from the line (2.23 on), else the process's only one.
    pub hca: Option<String>,
    /// The HCA was not on the line: the process uses no other, or its QP line with
    /// the same local GID names it.
    pub hca_inferred: bool,
}

/// How much of the input was read, and how.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Lines read.
    pub lines: u64,
    /// NCCL INFO / WARN lines.
    pub nccl: u64,
    /// NCCL lines the triage read.
    pub used: u64,
    /// Lines longer than [`NCCL_LINE_BYTES`](crate::config::limits::NCCL_LINE_BYTES)
    /// (cut; their rest skipped).
    pub overlong: u64,
    /// Lines that are not UTF-8 text.
    pub not_text: u64,
    /// Completion-error lines whose numbers could not be read.
    pub unparsed_errors: u64,
    /// Completion errors past [`NCCL_ERRORS`](crate::config::limits::NCCL_ERRORS).
    pub errors_dropped: u64,
    /// Processes past [`NCCL_PROCS`] (their lines skipped).
    pub procs_dropped: u64,
    /// Profiler QP events whose pid no single process has.
    pub profiler_unattached: u64,
}

/// Everything read from the logs.
#[derive(Clone, Debug, Default)]
pub struct Log {
    /// Input names, in the order read.
    pub sources: Vec<String>,
    /// Processes, in order of first line.
    pub procs: Vec<Proc>,
    /// Completion errors, in input order.
    pub errors: Vec<WcError>,
    /// Counts.
    pub counts: Counts,
    index: HashMap<(String, u32), usize>,
    /// Items kept in the processes' lists, against
    /// [`NCCL_ITEMS`](crate::config::limits::NCCL_ITEMS).
    items: usize,
    /// QPNs of profiler trace events, given to their processes by [`profiler::attach`]
    /// once every input is read.
    profiler_qps: Vec<(u32, u32, u32)>,
}

impl Log {
    /// The process of `host:pid`, made on its first line; `None` past [`NCCL_PROCS`].
    pub(super) fn proc_of(&mut self, host: &str, pid: u32) -> Option<usize> {
        if let Some(&i) = self.index.get(&(host.to_string(), pid)) {
            return Some(i);
        }
        if self.procs.len() >= NCCL_PROCS {
            self.counts.procs_dropped += 1;
            return None;
        }
        let i = self.procs.len();
        self.procs.push(Proc {
            host: host.to_string(),
            pid,
            ..Proc::default()
        });
        self.index.insert((host.to_string(), pid), i);
        Some(i)
    }

    /// The processes on `host`.
    pub fn on_host<'a>(&'a self, host: &'a str) -> impl Iterator<Item = &'a Proc> + 'a {
        self.procs.iter().filter(move |p| p.host == host)
    }
}
