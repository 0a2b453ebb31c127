//! The words of `analyze --qp-table`: under the flows table, one line per flow the
//! kernel's table explains — which QP on which node and device sent it and which
//! received it, with pid and command, and where the sender's `sq-psn` lies against the
//! PSNs captured.

use crate::analysis::Report;
use crate::qptable::{FlowQps, PsnBound, QpEntry};
use crate::report::safe::{push_term, term};
use std::fmt::Write as _;
use std::io::{self, Write};

/// `node-a rxe0 QP 0x000011 (RC RTS) pid 4242 ib_write_bw`. The node, device, type,
/// state and command come from the table (a process names itself): each is escaped for
/// the terminal ([`term`]).
pub fn qp_words(e: &QpEntry) -> String {
    let mut s = String::with_capacity(64);
    push_term(&mut s, &e.node);
    s.push(' ');
    push_term(&mut s, &e.device);
    let _ = write!(s, " QP {}", e.lqpn);
    let kind: Vec<&str> = [e.qp_type.as_str(), e.state.as_str()]
        .into_iter()
        .filter(|w| !w.is_empty())
        .collect();
    if !kind.is_empty() {
        let _ = write!(s, " ({})", term(&kind.join(" ")));
    }
    match (e.pid, &e.comm) {
        (Some(p), Some(c)) => {
            let _ = write!(s, " pid {p} {}", term(c));
        }
        (Some(p), None) => {
            let _ = write!(s, " pid {p}");
        }
        (None, Some(c)) => {
            let _ = write!(s, " {} (kernel)", term(c));
        }
        (None, None) => {}
    }
    s
}

/// What the sender's `sq-psn` says about the capture.
pub fn bound_words(b: PsnBound) -> String {
    match b {
        PsnBound::Before(0) => "the table's sq-psn is the first PSN captured: the capture \
                                has the connection's first packet since the table"
            .into(),
        PsnBound::Before(n) => format!(
            "the table's sq-psn is {n} before the first PSN captured: {n} packets were sent \
             that the capture does not have (it started mid-stream, or lost them)"
        ),
        PsnBound::Within => "the table's sq-psn lies within the PSNs captured".into(),
        PsnBound::After(0) => "the table's sq-psn follows the last PSN captured: the capture \
                               has everything sent up to the table"
            .into(),
        PsnBound::After(n) => format!(
            "the table's sq-psn is {n} past the PSN after the last one captured: {n} packets \
             were sent after the capture's last"
        ),
    }
}

/// The "QP table" section of the text report.
pub(super) fn section(out: &mut impl Write, r: &Report, m: &[FlowQps]) -> io::Result<()> {
    writeln!(out)?;
    if m.is_empty() {
        return writeln!(out, "QP table: no flow's QPs are in the tables given.");
    }
    writeln!(out, "QP table (the kernel's QPs behind each flow):")?;
    for q in m {
        // A report's flows are sorted by id: one binary search, not a walk per flow.
        let f = match r.flows.binary_search_by_key(&q.flow, |f| f.id) {
            Ok(i) => Some(&r.flows[i]),
            Err(_) => r.flows.iter().find(|f| f.id == q.flow),
        };
        let Some(f) = f else {
            continue;
        };
        writeln!(out, "  flow {} {} → {} QP {}:", f.id, f.src, f.dst, f.qp)?;
        match &q.sender {
            Some(e) => writeln!(out, "    sent by {}", qp_words(e))?,
            None => writeln!(
                out,
                "    sender: no QP of the tables is connected to it (a UD sender, or a node without a table)"
            )?,
        }
        match &q.receiver {
            Some(e) => writeln!(out, "    received by {}", qp_words(e))?,
            None => writeln!(out, "    receiver: not in the tables")?,
        }
        if q.ambiguous > 0 {
            writeln!(
                out,
                "    {} entries fit (the same QPNs on several nodes): no label given",
                q.ambiguous
            )?;
        }
        if let Some(b) = q.sq_psn {
            writeln!(out, "    {}", bound_words(b))?;
        }
    }
    Ok(())
}
