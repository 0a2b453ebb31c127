//! NCCL's own logs, read and triaged: `rocetap nccl`. [`read`] turns log text (files,
//! stdin, `kubectl logs` with or without `--prefix` / `--timestamps`) into a [`Log`]:
//! the processes (host, pid, ranks, HCA ports, out-of-band interface, `NCCL_*`
//! settings, QPs, channels) and every completion error. [`triage::triage`] ranks the
//! likely causes of each error from the log alone ([`config`] finds the configuration
//! mistakes), [`join`] adds what captures show of the connection behind it and
//! [`host`] what a node's sysfs shows of its GID table. Values only: the words are in
//! `report::nccl`.

pub mod config;
pub mod host;
pub mod join;
pub mod line;
pub mod parse;
pub mod status;
pub mod triage;

use crate::config::limits::{NCCL_ERRORS, NCCL_LINE_BYTES, NCCL_PER_PROC, NCCL_PROCS};
use parse::Message;
use std::collections::HashMap;
use std::io::{self, BufRead};
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
    /// Settings, QPs, channels or events past [`NCCL_PER_PROC`].
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
    /// Lines longer than [`NCCL_LINE_BYTES`] (cut; their rest skipped).
    pub overlong: u64,
    /// Lines that are not UTF-8 text.
    pub not_text: u64,
    /// Completion-error lines whose numbers could not be read.
    pub unparsed_errors: u64,
    /// Completion errors past [`NCCL_ERRORS`].
    pub errors_dropped: u64,
    /// Processes past [`NCCL_PROCS`] (their lines skipped).
    pub procs_dropped: u64,
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
}

impl Log {
    /// The process of `host:pid`, made on its first line; `None` past [`NCCL_PROCS`].
    fn proc_of(&mut self, host: &str, pid: u32) -> Option<usize> {
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

/// Reads one input into `log`, named `name`: bounded lines, each NCCL line it knows
/// taken in. An I/O error ends the read (what was read stays).
pub fn read(mut src: impl BufRead, name: &str, log: &mut Log) -> io::Result<()> {
    let source = log.sources.len();
    log.sources.push(name.to_string());
    let mut buf = Vec::with_capacity(1024);
    let mut n = 0u64;
    loop {
        buf.clear();
        let (got, overlong) = read_line(&mut src, &mut buf)?;
        if !got {
            return Ok(());
        }
        n += 1;
        log.counts.lines += 1;
        if overlong {
            log.counts.overlong += 1;
        }
        let Ok(text) = std::str::from_utf8(&buf) else {
            log.counts.not_text += 1;
            continue;
        };
        take(log, source, n, text);
    }
}

/// One line into `buf` (without its newline), at most [`NCCL_LINE_BYTES`]; the rest of
/// a longer line is skipped. Returns (a line was read, it was cut).
fn read_line(src: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<(bool, bool)> {
    let mut any = false;
    let mut cut = false;
    loop {
        let chunk = match src.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok((any, cut));
        }
        any = true;
        let (part, used, end) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        let room = NCCL_LINE_BYTES.saturating_sub(buf.len());
        if part.len() > room {
            cut = true;
        }
        buf.extend_from_slice(&part[..part.len().min(room)]);
        src.consume(used);
        if end {
            return Ok((true, cut));
        }
    }
}

fn push_bounded<T>(v: &mut Vec<T>, x: T, dropped: &mut u64) {
    if v.len() < NCCL_PER_PROC {
        v.push(x);
    } else {
        *dropped += 1;
    }
}

/// One line of text.
fn take(log: &mut Log, source: usize, n: u64, text: &str) {
    let Some(p) = line::split(text) else { return };
    log.counts.nccl += 1;
    let Some(pi) = log.proc_of(p.host, p.pid) else {
        return;
    };
    {
        let pr = &mut log.procs[pi];
        if pr.pod.is_none() {
            pr.pod = p.pod.map(str::to_string);
        }
        if !pr.cuda_devs.contains(&p.cuda_dev) && pr.cuda_devs.len() < 64 {
            pr.cuda_devs.push(p.cuda_dev);
        }
    }
    let Some(m) = parse::message(p.body) else {
        return;
    };
    log.counts.used += 1;
    let pr = &mut log.procs[pi];
    match m {
        Message::Completion(c) => {
            if log.errors.len() >= NCCL_ERRORS {
                log.counts.errors_dropped += 1;
                return;
            }
            let (hca, inferred) = match c.hca {
                Some(h) => (Some(h.to_string()), false),
                None if pr.hcas.len() == 1 => (Some(pr.hcas[0].name.clone()), true),
                // The QP line with the same local GID names the device.
                None => match pr
                    .qps
                    .iter()
                    .filter(|q| q.gid.is_some() && q.gid == c.local_gid)
                    .find_map(|q| q.dev.and_then(|d| pr.hca(d)))
                {
                    Some(h) => (Some(h.name.clone()), true),
                    None => (None, false),
                },
            };
            log.errors.push(WcError {
                source,
                line: n,
                proc: pi,
                tid: p.tid,
                cuda_dev: p.cuda_dev,
                time: p.time.map(str::to_string),
                time_ns: p.time_ns,
                status: c.status,
                opcode: c.opcode,
                len: c.len,
                vendor_err: c.vendor_err,
                req: c.req.map(str::to_string),
                peer_text: c.peer_text.chars().take(128).collect(),
                peer: c.peer,
                local_gid: c.local_gid,
                remote_gid: c.remote_gid,
                hca,
                hca_inferred: inferred,
            });
        }
        Message::BadCompletion => log.counts.unparsed_errors += 1,
        Message::Using(u) => {
            pr.hcas = u
                .hcas
                .iter()
                .map(|h| Hca {
                    index: h.index,
                    name: h.name.to_string(),
                    port: h.port,
                    link: h.link.to_string(),
                })
                .collect();
            pr.relaxed_ordering = u.relaxed_ordering;
            pr.oob_if = u.oob_if.map(str::to_string);
            pr.oob_addr = u.oob_addr;
        }
        Message::Env(k, v) => {
            let v: String = v.chars().take(256).collect();
            push_bounded(&mut pr.env, (k.to_string(), v), &mut pr.dropped);
        }
        Message::Qp(q) => {
            let q = Qp {
                dev: q.dev,
                qpn: q.qpn,
                gid_index: q.gid_index,
                gid: q.gid,
            };
            push_bounded(&mut pr.qps, q, &mut pr.dropped);
        }
        Message::Channel(c) => {
            if pr.rank.is_none() {
                pr.rank = Some(if c.send { c.from } else { c.to });
            }
            let c = Channel {
                channel: c.channel,
                from: c.from,
                to: c.to,
                send: c.send,
                net: c.net.to_string(),
                dev: c.dev,
            };
            push_bounded(&mut pr.channels, c, &mut pr.dropped);
        }
        Message::Version(v) => pr.version = Some(v.chars().take(64).collect()),
        Message::Rank(r, nr) => {
            if pr.nranks.is_none() {
                pr.rank = Some(r);
                pr.nranks = Some(nr);
            }
        }
        Message::AsyncEvent(e) => {
            let e: String = e.chars().take(256).collect();
            push_bounded(&mut pr.async_events, e, &mut pr.dropped);
        }
    }
}

/// Reads every input (`-` is standard input). An input that cannot be opened is an
/// error naming it.
pub fn read_paths(paths: &[std::path::PathBuf]) -> Result<Log, String> {
    let mut log = Log::default();
    for p in paths {
        let name = p.display().to_string();
        if name == "-" {
            let stdin = io::stdin();
            read(stdin.lock(), "stdin", &mut log)
                .map_err(|e| format!("nccl: reading stdin: {e}"))?;
            continue;
        }
        let f = std::fs::File::open(p).map_err(|e| format!("nccl: {name}: {e}"))?;
        if f.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(format!("nccl: {name}: is a directory"));
        }
        read(io::BufReader::new(f), &name, &mut log).map_err(|e| format!("nccl: {name}: {e}"))?;
    }
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_lines_are_counted() {
        let mut input = Vec::new();
        input.extend_from_slice(
            b"h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:198.18.0.1<0>\n",
        );
        input.extend(std::iter::repeat_n(b'x', NCCL_LINE_BYTES * 3));
        input.extend_from_slice(b"\n\xff\xfe garbage\n");
        input.extend_from_slice(b"h:1:2 [0] net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 198.18.0.2<1> with error 12, opcode 0, len 0, vendor err 129\n");
        input.extend_from_slice(b"h:1:2 [0] net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 198.18.0.2<1> with error x\n");
        input.extend_from_slice(b"h:1:2 [0] NCCL INFO truncated line with no newline");
        let mut log = Log::default();
        read(&input[..], "t", &mut log).unwrap();
        assert_eq!(log.counts.lines, 6);
        assert_eq!(log.counts.overlong, 1);
        assert_eq!(log.counts.not_text, 1);
        assert_eq!(log.counts.unparsed_errors, 1);
        assert_eq!(log.errors.len(), 1);
        assert_eq!(log.errors[0].hca.as_deref(), Some("mlx5_0"));
        assert!(log.errors[0].hca_inferred);
    }
}
