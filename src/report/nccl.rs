//! `rocetap nccl`'s document: the `rocetap.nccl/1` JSON and the text report, and the
//! values `--fail-on` rules name.

pub mod words;

use crate::escape::term;
use crate::nccl::config::Issue;
use crate::nccl::host::HostCheck;
use crate::nccl::status;
use crate::nccl::triage::Triaged;
use crate::nccl::Log;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Everything the report words.
pub struct Doc<'a> {
    /// The logs.
    pub log: &'a Log,
    /// Configuration mistakes.
    pub issues: &'a [Issue],
    /// Host checks.
    pub hosts: &'a [HostCheck],
    /// Each error's triage.
    pub triaged: &'a [Triaged],
    /// The captures' names (and `agent:URL`).
    pub captures: &'a [String],
}

fn opt<T: ToString>(v: Option<T>) -> Value {
    v.map_or(Value::Null, |x| Value::String(x.to_string()))
}

impl Doc<'_> {
    /// Errors joined to a connection on the wire.
    pub fn matched(&self) -> usize {
        self.triaged.iter().filter(|t| t.story.is_some()).count()
    }

    /// The value of a `--fail-on` name: `errors`, `status_N`, `config_mistakes`,
    /// `matched`, `unmatched`, `unparsed_errors`, `host_problems`, `processes`, `hosts`.
    pub fn value(&self, name: &str) -> Option<f64> {
        let log = self.log;
        let n = |x: usize| Some(x as f64);
        match name {
            "errors" => n(log.errors.len()),
            "config_mistakes" => n(self.issues.len()),
            "matched" => n(self.matched()),
            "unmatched" => n(self.triaged.len() - self.matched()),
            "unparsed_errors" => Some(log.counts.unparsed_errors as f64),
            "host_problems" => n(self
                .hosts
                .iter()
                .filter(|h| h.verdict != crate::nccl::host::GidVerdict::Ok)
                .count()),
            "processes" => n(log.procs.len()),
            "hosts" => n(self.host_count()),
            s => {
                let k: u32 = s.strip_prefix("status_")?.parse().ok()?;
                n(log.errors.iter().filter(|e| e.status == k).count())
            }
        }
    }

    fn host_count(&self) -> usize {
        let mut h: Vec<&str> = self.log.procs.iter().map(|p| p.host.as_str()).collect();
        h.sort_unstable();
        h.dedup();
        h.len()
    }

    /// The `rocetap.nccl/1` document.
    pub fn json(&self) -> Value {
        let log = self.log;
        let c = &log.counts;
        let procs: Vec<Value> = log
            .procs
            .iter()
            .map(|p| {
                json!({
                    "host": p.host, "pid": p.pid, "pod": p.pod, "version": p.version,
                    "rank": p.rank, "nranks": p.nranks, "cuda_devs": p.cuda_devs,
                    "hcas": p.hcas.iter().map(|h| json!({"index": h.index, "name": h.name, "port": h.port, "link": h.link})).collect::<Vec<_>>(),
                    "relaxed_ordering": p.relaxed_ordering,
                    "oob_if": p.oob_if, "oob_addr": opt(p.oob_addr),
                    "gid_index": p.gid_index(),
                    "env": p.env.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                    "qps": p.qps.iter().map(|q| json!({"dev": q.dev, "qpn": q.qpn, "gid_index": q.gid_index, "gid": opt(q.gid)})).collect::<Vec<_>>(),
                    "traffic_class": p.env("NCCL_IB_TC"), "service_level": p.env("NCCL_IB_SL"),
                    "channels": p.channels.iter().map(|c| json!({
                        "channel": c.channel, "from": c.from, "to": c.to,
                        "direction": if c.send { "send" } else { "receive" },
                        "net": c.net, "dev": c.dev, "hca": p.hca(c.dev).map(|h| h.name.as_str()),
                    })).collect::<Vec<_>>(),
                    "async_events": p.async_events,
                })
            })
            .collect();
        let errors: Vec<Value> = self
            .triaged
            .iter()
            .map(|t| {
                let e = &log.errors[t.error];
                let p = &log.procs[e.proc];
                json!({
                    "host": p.host, "pid": p.pid, "tid": e.tid, "cuda_dev": e.cuda_dev, "rank": p.rank,
                    "input": log.sources[e.source], "line": e.line,
                    "time": e.time, "time_ns": e.time_ns,
                    "status": e.status, "status_name": status::status_name(e.status),
                    "opcode": e.opcode, "opcode_name": e.opcode.and_then(status::opcode_name),
                    "len": e.len, "vendor_err": e.vendor_err, "request": e.req,
                    "peer": opt(e.peer), "hca": e.hca, "hca_inferred": e.hca_inferred,
                    "local_gid": opt(e.local_gid), "remote_gid": opt(e.remote_gid),
                    "connection": t.story.as_ref().map(|s| self.story_json(s)),
                    "causes": t.causes.iter().map(|c| self.cause_json(c, e)).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "schema": "rocetap.nccl/1",
            "inputs": log.sources,
            "captures": self.captures,
            "counts": {
                "lines": c.lines, "nccl_lines": c.nccl, "lines_used": c.used, "overlong": c.overlong,
                "not_text": c.not_text, "unparsed_errors": c.unparsed_errors,
                "errors_dropped": c.errors_dropped, "processes_dropped": c.procs_dropped,
                "profiler_unattached": c.profiler_unattached,
            },
            "processes": procs,
            "config": self.issues.iter().map(|i| json!({"code": i.code(), "message": words::issue(log, i)})).collect::<Vec<_>>(),
            "host_checks": self.hosts.iter().map(|h| json!({
                "host": h.host, "dir": h.dir.display().to_string(), "hca": h.hca, "gid_index": h.gid_index,
                "gid": h.gid, "gid_type": h.gid_type, "netdev": h.netdev, "peer": opt(h.peer),
                "route": h.route, "verdict": h.verdict.code(), "message": words::host_check(h),
            })).collect::<Vec<_>>(),
            "errors": errors,
        })
    }

    fn story_json(&self, s: &crate::nccl::join::Story) -> Value {
        json!({
            "capture": self.captures[s.capture], "flow": s.flow,
            "src": s.src.to_string(), "dst": s.dst.to_string(),
            "qp": format!("0x{:06x}", s.qp), "requester_qp": s.src_qp.map(|q| format!("0x{q:06x}")),
            "local_requester": s.local_requester,
            "stop": s.stop.map(|st| json!({
                "kind": if crate::nccl::join::exhausted(s) { "retry_exhausted" } else { "stalled" },
                "psn": st.psn, "retries": st.retries,
                "over_ns": st.first_ns.map(|f| st.last_ns.saturating_sub(f)), "last_ns": st.last_ns,
            })),
            "location": if s.segment.is_some() { "between_taps" } else { s.place.code() },
            "segment": s.segment.map(|(a, b)| json!([self.captures[a], self.captures[b]])),
            "responder_silent": s.responder_silent,
            "retransmitted": s.retransmitted, "timeouts": s.timeouts, "naks": s.naks,
            "rnr_naks": s.rnr_naks, "cnps": s.cnps, "ce": s.ce, "pfc_frames": s.pfc_frames,
            "qpn_matched": s.qpn_matched, "in_window": s.in_window,
            "seen": s.seen.iter().map(|x| json!({"capture": self.captures[x.capture], "packets": x.packets, "retransmitted": x.retransmitted})).collect::<Vec<_>>(),
            "message": words::story(s, self.captures),
        })
    }

    fn cause_json(&self, c: &crate::nccl::triage::Cause, e: &crate::nccl::WcError) -> Value {
        let log = self.log;
        json!({
            "cause": c.kind.code(), "score": c.score,
            "summary": words::cause(c.kind),
            "evidence": c.evidence.iter().map(|ev| words::evidence(log, self.issues, self.hosts, self.captures, ev)).collect::<Vec<_>>(),
            "next": words::next(c.kind, log, e),
        })
    }

    /// The text report.
    pub fn text(&self, verbose: bool) -> String {
        let log = self.log;
        let c = &log.counts;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "NCCL logs: {} lines ({} NCCL lines, {} read), {} processes on {} hosts; {} completion error{}",
            c.lines,
            c.nccl,
            c.used,
            log.procs.len(),
            self.host_count(),
            log.errors.len(),
            if log.errors.len() == 1 { "" } else { "s" }
        );
        let mut anomalies = Vec::new();
        for (n, what) in [
            (c.unparsed_errors, "completion-error lines not understood"),
            (c.overlong, "lines too long (cut)"),
            (c.not_text, "lines not UTF-8 text (skipped)"),
            (c.errors_dropped, "errors past the limit (not triaged)"),
            (c.procs_dropped, "processes past the limit (skipped)"),
            (
                c.profiler_unattached,
                "profiler QP events whose pid no single process has",
            ),
        ] {
            if n > 0 {
                anomalies.push(format!("{n} {what}"));
            }
        }
        if c.nccl == 0 {
            anomalies.push(
                "no NCCL INFO or WARN line: run the job with NCCL_DEBUG=INFO (or WARN), and give its output"
                    .to_string(),
            );
        }
        if !anomalies.is_empty() {
            let _ = writeln!(o, "  NOTE: {}", anomalies.join(", "));
        }
        if !self.issues.is_empty() {
            let _ = writeln!(o, "\nConfiguration mistakes (from the log alone):");
            for i in self.issues {
                let _ = writeln!(o, "  ERROR   {}", words::issue(log, i));
            }
        }
        if !self.hosts.is_empty() {
            let _ = writeln!(o, "\nHost checks:");
            for h in self.hosts {
                let sev = if h.verdict == crate::nccl::host::GidVerdict::Ok {
                    "ok     "
                } else {
                    "ERROR  "
                };
                let _ = writeln!(o, "  {sev} {}", words::host_check(h));
            }
        }
        if self.triaged.is_empty() {
            let _ = writeln!(o, "\nNo NCCL completion errors in the logs.");
        } else {
            let _ = writeln!(o, "\nErrors:");
        }
        for (k, t) in self.triaged.iter().enumerate() {
            let e = &log.errors[t.error];
            let p = &log.procs[e.proc];
            let _ = writeln!(
                o,
                "  [{}] {}:{}{} cuda {}{}: {} (status {}, {}), opcode {}, vendor err {}, on {}{} to peer {}{}",
                k + 1,
                term(&p.host),
                p.pid,
                p.rank.map_or(String::new(), |r| format!(" rank {r}")),
                e.cuda_dev,
                e.time.as_deref().map_or(String::new(), |t| format!(" at {}", term(t))),
                status::status_name(e.status).unwrap_or("unknown status"),
                e.status,
                words::status_meaning(e.status),
                e.opcode.map_or("?".into(), |x| x.to_string()),
                e.vendor_err.map_or("?".into(), |x| format!("0x{x:x}")),
                e.hca.as_deref().map_or("an unnamed HCA".into(), term),
                if e.hca_inferred { " (inferred)" } else { "" },
                e.peer.map_or_else(|| term(&e.peer_text).into_owned(), |a| a.to_string()),
                match (e.local_gid, e.remote_gid) {
                    (Some(l), Some(r)) => format!(" (GIDs {l} → {r})"),
                    _ => String::new(),
                }
            );
            if verbose {
                let _ = writeln!(o, "      from {}:{}", term(&log.sources[e.source]), e.line);
            }
            if let Some(s) = &t.story {
                let _ = writeln!(o, "      on the wire: {}", words::story(s, self.captures));
            } else if !self.captures.is_empty() {
                let _ = writeln!(
                    o,
                    "      on the wire: no connection between its GIDs/addresses in the captures"
                );
            }
            let shown = if verbose {
                t.causes.len()
            } else {
                t.causes.len().min(3)
            };
            for (r, cz) in t.causes.iter().take(shown).enumerate() {
                let _ = writeln!(
                    o,
                    "      {}. {} — {}",
                    r + 1,
                    cz.kind.code(),
                    words::cause(cz.kind)
                );
                for ev in &cz.evidence {
                    if matches!(ev, crate::nccl::triage::Evidence::Wire(_)) {
                        let _ =
                            writeln!(o, "           evidence: the connection on the wire, above");
                        continue;
                    }
                    let _ = writeln!(
                        o,
                        "           evidence: {}",
                        words::evidence(log, self.issues, self.hosts, self.captures, ev)
                    );
                }
                if r == 0 || verbose {
                    for n in words::next(cz.kind, log, e) {
                        let _ = writeln!(o, "           next: {n}");
                    }
                }
            }
        }
        o
    }
}
