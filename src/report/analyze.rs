//! Writers for `rocetap analyze`: a text summary for people (findings worst first, then
//! a flows table, then events on request), a JSON document (`rocetap.analyze/1`) and CSV
//! with one row per flow. They only format an [`analysis::Report`]; they compute nothing
//! a rule could depend on. The text report can be colored (severity words, failed rules,
//! flows in trouble, event kinds) and, with `-v`, shows each finding's evidence.

use crate::analysis::flow::Trigger;
use crate::analysis::report::Severity;
use crate::analysis::{Event, EventKind, FlowSummary, Report};
use crate::cli::AnalyzeFormat;
use crate::report::rules::Verdict;
use crate::report::style::{Paint, Tone};
use serde::Serialize;
use serde_json::{json, Value};
use std::io::{self, Write};

/// What was read.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Input {
    pub files: Vec<String>,
    pub frames: u64,
    pub bytes: u64,
    /// Inputs that end in the middle of a record, with the complete frames read.
    pub cut_short: Vec<crate::source::CutShort>,
}

/// The value of a `--fail-on` name: a key of `totals` or of `derived`.
pub fn lookup(r: &Report, name: &str) -> Option<f64> {
    for v in [
        serde_json::to_value(r.totals).ok()?,
        serde_json::to_value(r.derived).ok()?,
    ] {
        if let Some(x) = v.get(name).and_then(Value::as_f64) {
            return Some(x);
        }
    }
    None
}

/// A number without a useless fraction.
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.6}")
    }
}

/// How the text report looks: in color or not, and with each finding's evidence (`-v`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Look {
    pub paint: Paint,
    pub verbose: bool,
}

pub fn write_report(
    out: &mut impl Write,
    format: AnalyzeFormat,
    events: bool,
    look: Look,
    input: &Input,
    r: &Report,
    verdicts: &[Verdict<'_>],
) -> io::Result<()> {
    match format {
        AnalyzeFormat::Text => text(out, events, look, input, r, verdicts),
        AnalyzeFormat::Json => {
            let mut doc = json!({
                "schema": "rocetap.analyze/1",
                "input": input,
                "totals": r.totals,
                "derived": r.derived,
                "flows": r.flows,
                "connections": r.connections,
                "findings": r.findings,
                "pfc": r.pfc,
                "arp": r.arp,
                "arp_symptoms": r.arp_symptoms,
                "rules": verdicts.iter().map(|v| json!({
                    "rule": v.rule.to_string(),
                    "actual": v.actual,
                    "failed": v.failed,
                })).collect::<Vec<_>>(),
            });
            if events {
                let mut list = Vec::with_capacity(r.events.len());
                for e in &r.events {
                    let mut v = serde_json::to_value(e).map_err(io::Error::other)?;
                    v["detail"] = Value::String(detail(e));
                    list.push(v);
                }
                doc["events"] = Value::Array(list);
            }
            serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
            out.write_all(b"\n")
        }
        AnalyzeFormat::Csv => csv_flows(out, r),
    }
}

/// Flattens a flow summary into (column, cell) pairs: nested objects become `a.b`
/// columns, maps of counts (opcodes, RNR timers) one `k=v;...` cell.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) if prefix == "opcodes" || prefix == "rnr_timers" => {
            let cell: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push((prefix.to_string(), cell.join(";")));
        }
        Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        Value::Null => out.push((prefix.to_string(), String::new())),
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

fn csv_flows(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    let mut header = false;
    for f in &r.flows {
        let v = serde_json::to_value(f).map_err(io::Error::other)?;
        let mut cells = Vec::new();
        flatten("", &v, &mut cells);
        if !header {
            w.write_record(cells.iter().map(|(k, _)| k.as_str()))
                .map_err(io::Error::other)?;
            header = true;
        }
        w.write_record(cells.iter().map(|(_, c)| c.as_str()))
            .map_err(io::Error::other)?;
    }
    w.flush()
}

/// One line of plain words about an event (text output and JSON `detail`).
pub(crate) fn detail(e: &Event) -> String {
    match e.kind {
        EventKind::PsnGap => format!("{} PSNs missing", e.count),
        EventKind::GapRecovered => "filled by a resend".into(),
        EventKind::GapUnrecovered => format!(
            "{} PSNs never seen{}",
            e.count,
            if e.capture_loss == Some(true) {
                " (likely capture loss)"
            } else {
                " (NAKed, resend not captured)"
            }
        ),
        EventKind::Nak => format!(
            "NAK: {}",
            dissectors::NakCode::from_value(e.code.unwrap_or(0)).name()
        ),
        EventKind::RnrNak => {
            let c = e.code.unwrap_or(0);
            format!(
                "RNR NAK, timer code {c} ({} µs)",
                dissectors::ib::aeth::rnr_timer_us(c)
            )
        }
        EventKind::Retransmission => format!(
            "{} packets, trigger {}{}",
            e.count,
            e.trigger.map_or("?", |t| t.name()),
            e.latency_ns.map_or(String::new(), |l| format!(
                ", after {:.1} µs",
                l as f64 / 1e3
            ))
        ),
        EventKind::ReadRerequest => "READ re-issued for the rest".into(),
        EventKind::Duplicate => "seen again, not resent: a copy made by the network".into(),
        EventKind::Reordered => "original arrived after later PSNs (reordered), no resend".into(),
        EventKind::CnpWithoutCe => "CNP with no CE-marked traffic before it".into(),
        EventKind::ArpReplyPathMismatch => {
            let (x, p) = e.arp.unwrap_or((
                std::net::Ipv4Addr::UNSPECIFIED,
                std::net::Ipv4Addr::UNSPECIFIED,
            ));
            format!(
                "{x} sends to {p} out of iface {} although {p}'s requests came in elsewhere (x{})",
                e.iface.unwrap_or(0),
                e.count.max(1)
            )
        }
        EventKind::ArpDuplicateAddress => {
            let (x, _) = e.arp.unwrap_or((
                std::net::Ipv4Addr::UNSPECIFIED,
                std::net::Ipv4Addr::UNSPECIFIED,
            ));
            format!(
                "{x} claimed by a second MAC on iface {}",
                e.iface.unwrap_or(0)
            )
        }
        EventKind::ArpCrossSubnet | EventKind::ArpUnanswered => {
            let (s, d) = e.arp.unwrap_or((
                std::net::Ipv4Addr::UNSPECIFIED,
                std::net::Ipv4Addr::UNSPECIFIED,
            ));
            format!(
                "who-has {d} tell {s} iface {} x{}",
                e.iface.unwrap_or(0),
                e.count.max(1)
            )
        }
    }
}

fn secs(r: &Report, t: u64) -> f64 {
    t.saturating_sub(r.first_ts_ns.unwrap_or(0)) as f64 / 1e9
}

/// The color of an event kind in the text report.
fn event_tone(k: EventKind) -> Option<Tone> {
    match k {
        EventKind::Nak | EventKind::GapUnrecovered | EventKind::ArpReplyPathMismatch => {
            Some(Tone::Bad)
        }
        EventKind::PsnGap
        | EventKind::Retransmission
        | EventKind::RnrNak
        | EventKind::ReadRerequest
        | EventKind::ArpCrossSubnet
        | EventKind::ArpUnanswered
        | EventKind::ArpDuplicateAddress => Some(Tone::Warn),
        EventKind::CnpWithoutCe | EventKind::Duplicate | EventKind::Reordered => Some(Tone::Mark),
        EventKind::GapRecovered => None,
    }
}

/// One line of the events list (without its indentation).
fn event_line(r: &Report, e: &Event, paint: Paint) -> String {
    let flow = e.flow.map_or("-".into(), |f| f.to_string());
    let psn = match (e.psn, e.psn_end) {
        (Some(a), Some(b)) if a != b => format!("{a}-{b}"),
        (Some(a), _) => a.to_string(),
        _ => "-".into(),
    };
    let kind = serde_json::to_value(e.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let kind = format!("{kind:<16}");
    let kind = match event_tone(e.kind) {
        Some(t) => paint.tone(t, &kind).into_owned(),
        None => kind,
    };
    format!(
        "{:.9} flow {:>4} {} psn {:<17} {}",
        secs(r, e.t_ns),
        flow,
        kind,
        psn,
        detail(e)
    )
}

/// The color of a flow's row: red with NAKs, unrecovered gaps or bad ICRCs, yellow with
/// gaps, resends or RNR NAKs, magenta with only congestion marks.
fn flow_tone(f: &FlowSummary) -> Option<Tone> {
    let c = &f.c;
    let naks = c.nak_psn_seq
        + c.nak_invalid_request
        + c.nak_remote_access
        + c.nak_remote_operational
        + c.nak_invalid_rd_request
        + c.nak_reserved;
    if naks > 0 || c.unrecovered_gap_events > 0 || f.icrc_bad > 0 && f.icrc_ok > 0 {
        Some(Tone::Bad)
    } else if c.psn_gap_events > 0 || c.retransmitted_packets > 0 || c.rnr_nak > 0 {
        Some(Tone::Warn)
    } else if c.ce_marked > 0 || c.cnp_sent > 0 || c.cnp_received > 0 {
        Some(Tone::Mark)
    } else {
        None
    }
}

/// What a finding counts per flow, and which events are behind it (by its `kind`).
type PerFlow = fn(&FlowSummary) -> u64;
type Behind = fn(&Event) -> bool;

fn evidence_of(kind: &str) -> (Option<PerFlow>, Option<Behind>) {
    fn nak(e: &Event, code: u8) -> bool {
        e.kind == EventKind::Nak && e.code == Some(code)
    }
    fn resent(e: &Event, t: Trigger) -> bool {
        e.kind == EventKind::Retransmission && e.trigger == Some(t)
    }
    match kind {
        "nak_psn_seq" => (
            Some(|f| f.c.nak_psn_seq),
            Some(|e| nak(e, 0) || resent(e, Trigger::Nak)),
        ),
        "timeout_retransmissions" => (
            Some(|f| f.c.timeout_retransmissions),
            Some(|e| resent(e, Trigger::Timeout)),
        ),
        "unrecovered_gaps" => (
            Some(|f| {
                f.c.unrecovered_gap_events
                    .saturating_sub(f.c.capture_loss_gap_events)
            }),
            Some(|e| e.kind == EventKind::GapUnrecovered && e.capture_loss != Some(true)),
        ),
        "nak_invalid_request" => (Some(|f| f.c.nak_invalid_request), Some(|e| nak(e, 1))),
        "nak_remote_access" => (Some(|f| f.c.nak_remote_access), Some(|e| nak(e, 2))),
        "nak_remote_operational" => (Some(|f| f.c.nak_remote_operational), Some(|e| nak(e, 3))),
        "nak_invalid_rd_request" => (Some(|f| f.c.nak_invalid_rd_request), Some(|e| nak(e, 4))),
        "nak_reserved" => (
            Some(|f| f.c.nak_reserved),
            Some(|e| e.kind == EventKind::Nak && e.code.is_some_and(|c| c > 4)),
        ),
        "icrc_bad" | "icrc_not_preserved" => (Some(|f| f.icrc_bad), None),
        "capture_loss" => (
            Some(|f| f.c.capture_loss_gap_events),
            Some(|e| e.kind == EventKind::GapUnrecovered && e.capture_loss == Some(true)),
        ),
        "rnr_nak" => (
            Some(|f| f.c.rnr_nak),
            Some(|e| e.kind == EventKind::RnrNak || resent(e, Trigger::Rnr)),
        ),
        "read_rerequests" => (
            Some(|f| f.c.read_rerequests),
            Some(|e| e.kind == EventKind::ReadRerequest || resent(e, Trigger::ReadRerequest)),
        ),
        "unknown_retransmissions" => (
            Some(|f| f.c.unknown_retransmissions),
            Some(|e| resent(e, Trigger::Unknown)),
        ),
        "pfc_pause" => (Some(|f| f.c.pfc_stalls), None),
        "congestion" => (
            Some(|f| f.c.ce_marked + f.c.cnp_sent),
            Some(|e| e.kind == EventKind::CnpWithoutCe),
        ),
        "arp_unanswered" => (None, Some(|e| e.kind == EventKind::ArpUnanswered)),
        _ => (None, None),
    }
}

/// Events shown per finding under `-v` (`--events` lists them all).
const EVIDENCE_EVENTS: usize = 20;

/// `-v`: under a finding, every flow it concerns with its count, the ARP symptoms of its
/// kind with their evidence, PFC per sender and priority, and its first events.
fn evidence(
    out: &mut impl Write,
    r: &Report,
    f: &crate::analysis::report::Finding,
    paint: Paint,
) -> io::Result<()> {
    const IN: &str = "            ";
    let (per_flow, behind) = evidence_of(f.kind);
    writeln!(out, "{IN}kind {}, count {}", f.kind, f.count)?;
    if let Some(n) = per_flow {
        let mut flows: Vec<(&FlowSummary, u64)> = r
            .flows
            .iter()
            .map(|x| (x, n(x)))
            .filter(|p| p.1 > 0)
            .collect();
        flows.sort_by_key(|p| (std::cmp::Reverse(p.1), p.0.id));
        if !flows.is_empty() {
            writeln!(out, "{IN}flows ({}):", flows.len())?;
            for (x, c) in flows {
                let label = format!("{:>4} {}", x.id, x.label());
                writeln!(out, "{IN}  {label:<52} {c}")?;
            }
        }
    }
    let symptoms: Vec<_> = r.arp_symptoms.iter().filter(|s| s.kind == f.kind).collect();
    for s in symptoms {
        writeln!(out, "{IN}{:.9} {}", secs(r, s.t_ns), s.message)?;
        for e in &s.evidence {
            writeln!(
                out,
                "{IN}  {:.9} {}  ->  {}",
                secs(r, e.t_ns),
                e.iface,
                e.what
            )?;
        }
    }
    if f.kind == "pfc_pause" {
        for p in &r.pfc {
            for q in &p.per_priority {
                writeln!(
                    out,
                    "{IN}{} priority {}: {} frames, {} quanta, {:.1} µs paused",
                    p.src_mac,
                    q.priority,
                    q.frames,
                    q.quanta,
                    q.pause_ns as f64 / 1e3
                )?;
            }
        }
    }
    if let Some(pred) = behind {
        let all: Vec<&Event> = r.events.iter().filter(|e| pred(e)).collect();
        if !all.is_empty() {
            writeln!(out, "{IN}events ({}):", all.len())?;
            for e in all.iter().take(EVIDENCE_EVENTS) {
                writeln!(out, "{IN}  {}", event_line(r, e, paint))?;
            }
            if all.len() > EVIDENCE_EVENTS {
                writeln!(
                    out,
                    "{IN}  ... {} more (--events lists every event)",
                    all.len() - EVIDENCE_EVENTS
                )?;
            }
        }
    }
    Ok(())
}

fn text(
    out: &mut impl Write,
    events: bool,
    look: Look,
    input: &Input,
    r: &Report,
    verdicts: &[Verdict<'_>],
) -> io::Result<()> {
    let paint = look.paint;
    let t = &r.totals;
    writeln!(
        out,
        "{}: {} frames, {} RoCE packets over {:.6} s; {} flows, {} RC connections paired",
        input.files.join(", "),
        t.frames,
        t.roce_packets,
        r.derived.duration_s,
        t.flows,
        t.connections
    )?;
    writeln!(out)?;
    if r.findings.is_empty() {
        writeln!(out, "{}", paint.tone(Tone::Good, "No problems found."))?;
    } else {
        writeln!(out, "Findings, worst first:")?;
        for f in &r.findings {
            let (sev, pad, tone) = match f.severity {
                Severity::Error => ("ERROR", "  ", Tone::Bad),
                Severity::Warning => ("WARNING", "", Tone::Warn),
                Severity::Info => ("info", "   ", Tone::Note),
            };
            writeln!(out, "  {}{pad} {}", paint.tone(tone, sev), f.message)?;
            if look.verbose {
                evidence(out, r, f, paint)?;
            }
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "Totals: NAKs {} (PSN seq {}), RNR NAKs {}, PSN gaps {} ({} PSNs, {} recovered, {} unrecovered, {} likely capture loss), retransmitted {} (NAK {}, RNR {}, timeout {}, READ {}, unknown {}), retry episodes {} (NAK {}, RNR {}, timeout {}, READ {}), duplicates {}, reordered {}, READ re-requests {}, CE {}, CNP {}, ICRC ok/bad/unchecked {}/{}/{}, malformed {}, truncated {}, PFC {}, ARP unanswered {}",
        r.derived.naks, t.nak_psn_seq, t.rnr_nak, t.psn_gap_events, t.missing_psns,
        t.recovered_gap_events, t.unrecovered_gap_events, t.capture_loss_gap_events,
        t.retransmitted_packets, t.nak_retransmissions, t.rnr_retransmissions,
        t.timeout_retransmissions, t.read_retransmissions, t.unknown_retransmissions,
        t.retransmission_episodes, t.nak_retransmission_episodes,
        t.rnr_retransmission_episodes, t.timeout_retransmission_episodes,
        t.read_retransmission_episodes, t.duplicate_packets, t.reordered_packets,
        t.read_rerequests, t.ce_marked, t.cnp, t.icrc_ok, t.icrc_bad, t.icrc_unchecked,
        t.malformed, t.truncated, t.pfc_pause_frames, t.arp_unanswered
    )?;
    if !verdicts.is_empty() {
        writeln!(out)?;
        writeln!(out, "Rules:")?;
        for v in verdicts {
            writeln!(
                out,
                "  {} {} (actual {})",
                if v.failed {
                    paint.tone(Tone::Bad, "FAIL")
                } else {
                    paint.tone(Tone::Good, "ok  ")
                },
                v.rule,
                num(v.actual)
            )?;
        }
    }
    writeln!(out)?;
    writeln!(out, "Flows:")?;
    writeln!(
        out,
        "  {:>4} {:<44} {:<4} {:>8} {:>9} {:>7} {:>5} {:>5} {:>5} {:>5} {:>4} {:>4} {:>5} {:>5} {:>6} {:>10}",
        "id", "flow", "tr", "packets", "Gb/s", "msgs", "pmtu", "gaps", "retx", "NAK", "RNR", "CE", "CNP", "peer", "ICRCok", "ack p50"
    )?;
    for f in &r.flows {
        let label = format!("{} → {} {}", f.src, f.dst, f.qp);
        let tone = flow_tone(f);
        let (on, off) = (paint.open(tone), paint.close(tone));
        writeln!(
            out,
            "  {on}{:>4} {:<44} {:<4} {:>8} {:>9.3} {:>7} {:>5} {:>5} {:>5} {:>5} {:>4} {:>4} {:>5} {:>5} {:>6} {:>10}{off}",
            f.id,
            label,
            f.transport,
            f.packets,
            f.gbps,
            f.messages,
            f.pmtu.map_or("-".into(), |p| p.to_string()),
            f.c.psn_gap_events,
            f.c.retransmitted_packets,
            f.c.nak_psn_seq + f.c.nak_invalid_request + f.c.nak_remote_access + f.c.nak_remote_operational + f.c.nak_invalid_rd_request + f.c.nak_reserved,
            f.c.rnr_nak,
            f.c.ce_marked,
            f.c.cnp_sent,
            f.peer.map_or("-".into(), |p| p.to_string()),
            f.icrc_ok,
            f.ack_latency
                .median_ns
                .map_or("-".into(), |n| format!("{:.1}µs", n as f64 / 1e3)),
        )?;
    }
    if events {
        writeln!(out)?;
        writeln!(out, "Events:")?;
        for e in &r.events {
            writeln!(out, "  {}", event_line(r, e, paint))?;
        }
    }
    Ok(())
}
