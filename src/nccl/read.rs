//! The reader: bounded lines (a longer one is cut and counted), text only (other bytes
//! are counted), each NCCL line it knows taken into the [`Log`].

use super::parse::{self, Message};
use super::{line, Channel, Hca, Log, Qp, WcError};
use crate::config::limits::{NCCL_ERRORS, NCCL_ITEMS, NCCL_LINE_BYTES, NCCL_PER_PROC};
use std::io::{self, BufRead};

/// Reads one input into `log`, named `name`: bounded lines, each NCCL line it knows
/// taken in; profiler trace QPNs wait for [`super::profiler::attach`] (which
/// [`read_paths`] calls after the last input). An I/O error ends the read (what was read
/// stays).
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

/// Keeps `x` while the process's list and the whole log's item budget have room.
fn push_bounded<T>(v: &mut Vec<T>, x: T, dropped: &mut u64, items: &mut usize) {
    if v.len() < NCCL_PER_PROC && *items < NCCL_ITEMS {
        v.push(x);
        *items += 1;
    } else {
        *dropped += 1;
    }
}

/// At most `n` characters of outside text.
fn cap(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// One line of text.
fn take(log: &mut Log, source: usize, n: u64, text: &str) {
    let Some(p) = line::split(text) else {
        if let Some(q) = super::profiler::qp_event(text) {
            if log.profiler_qps.len() < NCCL_ITEMS {
                log.profiler_qps.push(q);
            }
        }
        return;
    };
    log.counts.nccl += 1;
    let Some(pi) = log.proc_of(p.host, p.pid) else {
        return;
    };
    {
        let pr = &mut log.procs[pi];
        if pr.pod.is_none() {
            pr.pod = p.pod.map(|x| cap(x, 255));
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
                Some(h) => (Some(cap(h, 64)), false),
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
                time: p.time.map(|t| cap(t, 64)),
                time_ns: p.time_ns,
                status: c.status,
                opcode: c.opcode,
                len: c.len,
                vendor_err: c.vendor_err,
                req: c.req.map(|r| cap(r, 32)),
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
                    name: cap(h.name, 64),
                    port: h.port,
                    link: cap(h.link, 16),
                })
                .collect();
            pr.relaxed_ordering = u.relaxed_ordering;
            pr.oob_if = u.oob_if.map(|i| cap(i, 64));
            pr.oob_addr = u.oob_addr;
        }
        Message::Env(k, v) => {
            let v: String = v.chars().take(256).collect();
            push_bounded(
                &mut pr.env,
                (cap(k, 64), v),
                &mut pr.dropped,
                &mut log.items,
            );
        }
        Message::Qp(q) => {
            let q = Qp {
                dev: q.dev,
                qpn: q.qpn,
                gid_index: q.gid_index,
                gid: q.gid,
            };
            push_bounded(&mut pr.qps, q, &mut pr.dropped, &mut log.items);
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
                net: cap(c.net, 32),
                dev: c.dev,
            };
            push_bounded(&mut pr.channels, c, &mut pr.dropped, &mut log.items);
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
            push_bounded(&mut pr.async_events, e, &mut pr.dropped, &mut log.items);
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
    super::profiler::attach(&mut log);
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::limits::NCCL_LINE_BYTES;

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

    #[test]
    fn lists_and_names_are_bounded() {
        let mut input = String::new();
        for i in 0..NCCL_PER_PROC + 44 {
            input += &format!("h:1:2 [0] NCCL INFO NCCL_X_{i} set by environment to {i}.\n");
        }
        input += &format!(
            "{}:1:2 [0] NCCL INFO NCCL_Y set by environment to 1.\n",
            "h".repeat(300)
        );
        let mut log = Log::default();
        read(input.as_bytes(), "t", &mut log).unwrap();
        assert_eq!(log.procs.len(), 1, "a 300-byte host is not NCCL's");
        assert_eq!(log.procs[0].env.len(), NCCL_PER_PROC);
        assert_eq!(log.procs[0].dropped, 44);
        assert_eq!(log.counts.nccl, (NCCL_PER_PROC + 44) as u64);
    }
}
