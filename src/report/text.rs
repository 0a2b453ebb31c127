//! `rocetap analyze` for people: the summary line, findings worst first (with their
//! evidence under `-v`), the totals, the flows table (the worst 50 when there are more)
//! and, on request, the events.

use super::analyze::{num, Input, Look};
use super::events::{event_line, secs};
use super::findings::{flow_label, message, seen, symptom_message};
use crate::analysis::flow::Trigger;
use crate::analysis::report::Severity;
use crate::analysis::{Event, EventKind, FlowSummary, Report};
use crate::report::rules::Verdict;
use crate::report::style::{Paint, Tone};
use std::io::{self, Write};

/// The color of a flow's row: red with NAKs, unrecovered gaps or bad ICRCs, yellow with
/// gaps, resends or RNR NAKs, magenta with only congestion marks.
fn flow_tone(f: &FlowSummary) -> Option<Tone> {
    let c = &f.counters;
    let naks = c.naks();
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
            Some(|f| f.counters.nak_psn_seq),
            Some(|e| nak(e, 0) || resent(e, Trigger::Nak)),
        ),
        "timeout_retransmissions" => (
            Some(|f| f.counters.timeout_retransmissions),
            Some(|e| resent(e, Trigger::Timeout)),
        ),
        "unrecovered_gaps" => (
            Some(|f| {
                f.counters
                    .unrecovered_gap_events
                    .saturating_sub(f.counters.capture_loss_gap_events)
            }),
            Some(|e| e.kind == EventKind::GapUnrecovered && e.capture_loss != Some(true)),
        ),
        "nak_invalid_request" => (
            Some(|f| f.counters.nak_invalid_request),
            Some(|e| nak(e, 1)),
        ),
        "nak_remote_access" => (Some(|f| f.counters.nak_remote_access), Some(|e| nak(e, 2))),
        "nak_remote_operational" => (
            Some(|f| f.counters.nak_remote_operational),
            Some(|e| nak(e, 3)),
        ),
        "nak_invalid_rd_request" => (
            Some(|f| f.counters.nak_invalid_rd_request),
            Some(|e| nak(e, 4)),
        ),
        "nak_reserved" => (
            Some(|f| f.counters.nak_reserved),
            Some(|e| e.kind == EventKind::Nak && e.code.is_some_and(|c| c > 4)),
        ),
        "icrc_bad" | "icrc_not_preserved" => (Some(|f| f.icrc_bad), None),
        "capture_loss" => (
            Some(|f| f.counters.capture_loss_gap_events),
            Some(|e| e.kind == EventKind::GapUnrecovered && e.capture_loss == Some(true)),
        ),
        "rnr_nak" => (
            Some(|f| f.counters.rnr_nak),
            Some(|e| e.kind == EventKind::RnrNak || resent(e, Trigger::Rnr)),
        ),
        "read_rerequests" => (
            Some(|f| f.counters.read_rerequests),
            Some(|e| e.kind == EventKind::ReadRerequest || resent(e, Trigger::ReadRerequest)),
        ),
        "unknown_retransmissions" => (
            Some(|f| f.counters.unknown_retransmissions),
            Some(|e| resent(e, Trigger::Unknown)),
        ),
        "pfc_pause" => (Some(|f| f.counters.pfc_stalls), None),
        "congestion" => (
            Some(|f| f.counters.ce_marked + f.counters.cnp_sent),
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
    let (per_flow, behind) = evidence_of(f.code());
    writeln!(out, "{IN}kind {}, count {}", f.code(), f.count)?;
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
                let label = format!("{:>4} {}", x.id, flow_label(x));
                writeln!(out, "{IN}  {label:<52} {c}")?;
            }
        }
    }
    let symptoms = r
        .arp_symptoms
        .iter()
        .filter(|s| s.kind().code() == f.code());
    for s in symptoms {
        writeln!(out, "{IN}{:.9} {}", secs(r, s.t_ns), symptom_message(s))?;
        for e in &s.evidence {
            writeln!(
                out,
                "{IN}  {:.9} {}  ->  {}",
                secs(r, e.t_ns),
                super::safe::term(&e.iface),
                seen(&e.seen)
            )?;
        }
    }
    if f.code() == "pfc_pause" {
        for p in &r.pfc {
            for q in &p.per_priority {
                writeln!(
                    out,
                    "{IN}{} priority {}: {} frames, {} quanta, {:.1} µs paused",
                    dissectors::ethernet::Mac(&p.src_mac),
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

/// Rows of the text report's flows table (`-v` adds the whole table after them).
pub const TEXT_FLOWS: usize = 50;

/// A flow's trouble, compared worst first: PSN gaps, resends, NAKs, RNR NAKs, CE marks,
/// CNPs, then packets.
fn trouble(f: &FlowSummary) -> [u64; 7] {
    let c = &f.counters;
    let naks = c.naks();
    [
        c.psn_gap_events,
        c.retransmitted_packets,
        naks,
        c.rnr_nak,
        c.ce_marked,
        c.cnp_sent,
        f.packets,
    ]
}

/// The flows the text table shows: all of them in id order when they fit in
/// [`TEXT_FLOWS`] rows, otherwise the [`TEXT_FLOWS`] worst by
/// [`trouble`], worst first (ties by id). Selecting is O(n), sorting only the shown rows.
fn shown_flows(flows: &[FlowSummary]) -> Vec<&FlowSummary> {
    let mut v: Vec<&FlowSummary> = flows.iter().collect();
    if v.len() <= TEXT_FLOWS {
        return v;
    }
    let worse =
        |a: &&FlowSummary, b: &&FlowSummary| trouble(b).cmp(&trouble(a)).then(a.id.cmp(&b.id));
    v.select_nth_unstable_by(TEXT_FLOWS - 1, worse);
    v.truncate(TEXT_FLOWS);
    v.sort_by(worse);
    v
}

/// 16334 -> "16,334".
fn group(n: usize) -> String {
    let s = n.to_string();
    let mut o = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(ch);
    }
    o
}

/// The flows table: its header and one row per flow, in the order given.
fn flows_table(out: &mut impl Write, paint: Paint, flows: &[&FlowSummary]) -> io::Result<()> {
    writeln!(
        out,
        "  {:>4} {:<44} {:<4} {:>8} {:>9} {:>7} {:>5} {:>5} {:>5} {:>5} {:>4} {:>4} {:>5} {:>5} {:>6} {:>10}",
        "id", "flow", "tr", "packets", "Gb/s", "msgs", "pmtu", "gaps", "retx", "NAK", "RNR", "CE", "CNP", "peer", "ICRCok", "ack p50"
    )?;
    for &f in flows {
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
            f.counters.psn_gap_events,
            f.counters.retransmitted_packets,
            f.counters.naks(),
            f.counters.rnr_nak,
            f.counters.ce_marked,
            f.counters.cnp_sent,
            f.peer.map_or("-".into(), |p| p.to_string()),
            f.icrc_ok,
            f.ack_latency
                .median_ns
                .map_or("-".into(), |n| format!("{:.1}µs", n as f64 / 1e3)),
        )?;
    }
    Ok(())
}

/// What the duration means for a capture out of time order ("" for one in order).
fn time_order(backwards: u64) -> String {
    match backwards {
        0 => String::new(),
        1 => " (earliest to latest frame: 1 frame is timed before the one read before it)"
            .to_string(),
        n => format!(
            " (earliest to latest frame: {n} frames are timed before the one read before them)"
        ),
    }
}

/// Flows that ended before the capture did: idle past the timeout, or their QP number
/// reused by a new connection (both counted as new flows after).
fn flows_ended(expired: u64, restarted: u64) -> String {
    let mut parts = Vec::new();
    if expired > 0 {
        parts.push(format!("{expired} expired after the idle timeout"));
    }
    if restarted > 0 {
        parts.push(format!(
            "{restarted} times a QP number came back with a PSN of a new connection"
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

pub(super) fn text(
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
        "{}: {} frames, {} RoCE packets over {:.6} s{}; {} flows, {} RC connections paired{}",
        super::safe::term(&input.files.join(", ")),
        t.frames,
        t.roce_packets,
        r.derived.duration_s,
        time_order(r.time_backwards),
        t.flows,
        t.connections,
        flows_ended(t.flows_expired, t.flows_restarted)
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
            writeln!(out, "  {}{pad} {}", paint.tone(tone, sev), message(f, r))?;
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
    let shown = shown_flows(&r.flows);
    let cut = shown.len() < r.flows.len();
    if cut {
        writeln!(
            out,
            "Flows (the {} worst of {}, worst first; -v shows all):",
            shown.len(),
            r.flows.len()
        )?;
    } else {
        writeln!(out, "Flows:")?;
    }
    flows_table(out, paint, &shown)?;
    if cut {
        writeln!(
            out,
            "  ... and {} more flows, see --format json (or -v)",
            group(r.flows.len() - shown.len())
        )?;
        if look.verbose {
            // `-v` adds to the plain report: the whole table follows the worst.
            writeln!(out)?;
            writeln!(out, "All {} flows:", r.flows.len())?;
            let all: Vec<&FlowSummary> = r.flows.iter().collect();
            flows_table(out, paint, &all)?;
        }
    }
    if let Some(m) = &input.qp_table {
        super::qptable::section(out, r, m)?;
    }
    if events {
        writeln!(out)?;
        writeln!(out, "Events:")?;
        for e in &r.events {
            writeln!(out, "  {}", event_line(r, e, paint))?;
        }
    }
    super::mirrors::section(out, r)
}

#[cfg(test)]
mod tests {
    use super::group;

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(16_334), "16,334");
        assert_eq!(group(1_234_567), "1,234,567");
    }
}
