//! The detail of one flow: identity and pairing, rate, PMTU, DSCP/PCP, PSN range and
//! progress over time, every trouble counter (gaps, resends by trigger, NAKs by code,
//! RNR, timeouts), ACK / NAK→resend / CE→CNP latencies, the rate before and after CNPs,
//! and the event log of the connection (both directions), newest first.

use super::{dur, si, spark, title};
use crate::analysis::report::Latency;
use crate::analysis::FlowSummary;
use crate::qptable::{match_flows, FlowRef};
use crate::report::findings::{flow_label, flow_short};
use crate::report::qptable::qp_words;
use crate::tui::app::{App, TREND_LEN};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

fn lat(l: &Latency) -> String {
    match (l.min_ns, l.median_ns, l.p99_ns, l.max_ns) {
        (Some(a), Some(b), Some(c), Some(d)) => format!(
            "{} / {} / {} / {} (n={})",
            dur(a),
            dur(b),
            dur(c),
            dur(d),
            l.count
        ),
        _ => "-".into(),
    }
}

/// The kernel's QPs behind the flow (`--qp-table`), as `analyze --qp-table` words them.
fn kernel_qps(app: &App, fl: &FlowSummary) -> Option<Line<'static>> {
    if app.qp_table.is_empty() {
        return None;
    }
    let mut pair: Vec<FlowSummary> = vec![fl.clone()];
    if let Some(p) = fl.peer.and_then(|p| app.flow(p)) {
        pair.push(p.clone());
    }
    pair.sort_by_key(|f| f.id);
    let m = match_flows(&FlowRef::of(&pair), &app.qp_table);
    let words = match m.iter().find(|q| q.flow == fl.id) {
        Some(q) => {
            let side = |e: &Option<crate::qptable::QpEntry>| {
                e.as_ref().map_or("not in the tables".into(), qp_words)
            };
            format!(
                "kernel: sent by {} · received by {}",
                side(&q.sender),
                side(&q.receiver)
            )
        }
        None => "kernel: no QP of the tables fits this flow".into(),
    };
    Some(Line::from(words))
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

pub fn render(f: &mut Frame<'_>, area: Rect, app: &App, id: u32) {
    let Some(fl) = app.flow(id) else {
        let p = Paragraph::new(format!("flow #{id} is gone (Esc to go back)"))
            .block(Block::bordered().title(title("Flow")));
        f.render_widget(p, area);
        return;
    };
    let trend = app.trends.get(&id);
    let w = (area.width as usize).saturating_sub(30).clamp(8, TREND_LEN);
    let sparks = Sparks {
        rate: trend.map_or(String::new(), |t| spark(t.mbps.iter().copied(), w)),
        psn: trend.map_or(String::new(), |t| spark(t.psn_step.iter().copied(), w)),
        max_mbps: trend
            .and_then(|t| t.mbps.iter().max().copied())
            .unwrap_or(0),
        max_psn: trend
            .and_then(|t| t.psn_step.iter().max().copied())
            .unwrap_or(0),
    };
    let mut lines = if area.width < 120 {
        narrow_lines(fl, &sparks)
    } else {
        wide_lines(app, fl, &sparks)
    };
    if let Some(l) = kernel_qps(app, fl) {
        lines.insert(2.min(lines.len()), l);
    }
    lines.extend(taps_lines(app, fl));
    finish(f, area, app, id, lines);
}

/// The rate and PSN-progress sparklines of a flow, with their maxima.
struct Sparks {
    rate: String,
    psn: String,
    max_mbps: u64,
    max_psn: u64,
}

const BOLD: Style = Style::new().add_modifier(Modifier::BOLD);
const RED: Style = Style::new().fg(Color::Red);

/// Under 120 columns: medians only, the trouble lines only when there is trouble.
fn narrow_lines<'a>(fl: &FlowSummary, sparks: &Sparks) -> Vec<Line<'a>> {
    let (b, red, c) = (BOLD, RED, &fl.counters);
    let naks = fl.counters.naks();
    let Sparks {
        rate: rate_spark,
        psn: psn_spark,
        max_mbps,
        max_psn,
    } = sparks;
    let med = |l: &Latency| l.median_ns.map_or("-".into(), dur);
    let p99 = |l: &Latency| l.p99_ns.map_or("-".into(), dur);
    let mut trouble = Vec::new();
    if c.psn_gap_events > 0 {
        trouble.push(format!(
            "gaps {} ({} PSNs; {} recovered, {} unrecovered, {} capture loss)",
            c.psn_gap_events,
            c.missing_psns,
            c.recovered_gap_events,
            c.unrecovered_gap_events,
            c.capture_loss_gap_events
        ));
    }
    if c.retransmitted_packets > 0 {
        trouble.push(format!(
            "resent {} in {} episodes (NAK {} RNR {} timeout {} READ {} ?{}) NAK→resend p50 {}",
            c.retransmitted_packets,
            c.retransmission_episodes,
            c.nak_retransmissions,
            c.rnr_retransmissions,
            c.timeout_retransmissions,
            c.read_retransmissions,
            c.unknown_retransmissions,
            med(&fl.nak_to_resend)
        ));
    }
    if naks + c.rnr_nak > 0 {
        trouble.push(format!(
            "NAKs {naks}: PSN seq {} inv req {} access {} op {} RD {} · RNR NAKs {} wait p50 {}",
            c.nak_psn_seq,
            c.nak_invalid_request,
            c.nak_remote_access,
            c.nak_remote_operational,
            c.nak_invalid_rd_request,
            c.rnr_nak,
            med(&fl.rnr_wait)
        ));
    }
    if trouble.is_empty() {
        trouble.push("no gaps, resends, NAKs or RNR NAKs".into());
    }
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!("#{} {}", fl.id, flow_short(fl)), b),
            Span::raw(format!(
                " {} {}",
                fl.transport,
                fl.peer.map_or("unpaired".into(), |p| format!("↔#{p}"))
            )),
        ]),
        Line::from(format!(
            "{} pkts {}B · {:.3} Gb/s · {} pkt/s · PMTU {} · DSCP {} PCP {}",
            fl.packets,
            si(fl.bytes as f64),
            fl.gbps,
            si(fl.pps),
            opt(fl.pmtu),
            opt(fl.dscp),
            opt(fl.pcp)
        )),
        Line::from(format!(
            "PSN {}→{} · ACK p50 {} p99 {} · timeout wait p50 {}",
            opt(fl.first_psn),
            opt(fl.last_psn),
            med(&fl.ack_latency),
            p99(&fl.ack_latency),
            med(&fl.timeout_observed)
        )),
    ];
    let tstyle = if problems_of(fl) {
        red
    } else {
        Style::default()
    };
    lines.extend(
        trouble
            .into_iter()
            .map(|t| Line::from(Span::styled(t, tstyle))),
    );
    lines.push(Line::from(format!(
        "CE {} · CNP rx {} tx {} · CE→CNP p50 {} · Gb/s before/after CNP {}/{}",
        c.ce_marked,
        c.cnp_received,
        c.cnp_sent,
        med(&fl.ce_to_cnp),
        fl.gbps_before_first_cnp
            .map_or("-".into(), |g| format!("{g:.2}")),
        fl.gbps_after_last_cnp
            .map_or("-".into(), |g| format!("{g:.2}"))
    )));
    lines.push(Line::from(format!("rate Mb/s {rate_spark} max {max_mbps}")));
    lines.push(Line::from(format!("PSN/step  {psn_spark} max {max_psn}")));
    lines
}

/// 120 columns and more: every counter, latencies as min / median / p99 / max.
fn wide_lines<'a>(app: &App, fl: &FlowSummary, sparks: &Sparks) -> Vec<Line<'a>> {
    let (b, red, c) = (BOLD, RED, &fl.counters);
    let naks = fl.counters.naks();
    let trouble = |v: u64| if v > 0 { red } else { Style::default() };
    let peer = match fl.peer.and_then(|p| app.flow(p)) {
        Some(p) => format!("paired with #{} {}", p.id, flow_short(p)),
        None => "no paired direction seen".into(),
    };
    let Sparks {
        rate: rate_spark,
        psn: psn_spark,
        max_mbps,
        max_psn,
    } = sparks;
    vec![
        Line::from(vec![
            Span::styled(format!("#{} {}", fl.id, flow_label(fl)), b),
            Span::raw(format!("  {} {}  {peer}", fl.transport, fl.encap)),
        ]),
        Line::from(format!(
            "{} packets, {} bytes, {} messages · {:.3} Gb/s · {} pkt/s · PMTU {} · DSCP {} PCP {} VLAN {}",
            fl.packets,
            si(fl.bytes as f64),
            fl.messages,
            fl.gbps,
            si(fl.pps),
            opt(fl.pmtu),
            opt(fl.dscp),
            opt(fl.pcp),
            opt(fl.vlan)
        )),
        Line::from(format!(
            "PSN {} → {} · ACK latency min/median/p99/max {}",
            opt(fl.first_psn),
            opt(fl.last_psn),
            lat(&fl.ack_latency)
        )),
        Line::from(vec![Span::styled(
            format!(
                "gaps {} ({} PSNs missing; {} recovered, {} unrecovered, {} likely capture loss)",
                c.psn_gap_events,
                c.missing_psns,
                c.recovered_gap_events,
                c.unrecovered_gap_events,
                c.capture_loss_gap_events
            ),
            trouble(c.psn_gap_events),
        )]),
        Line::from(vec![Span::styled(
            format!(
                "resent {} packets in {} episodes: NAK {} · RNR {} · timeout {} · READ {} · unknown {} · NAK→resend {}",
                c.retransmitted_packets,
                c.retransmission_episodes,
                c.nak_retransmissions,
                c.rnr_retransmissions,
                c.timeout_retransmissions,
                c.read_retransmissions,
                c.unknown_retransmissions,
                lat(&fl.nak_to_resend)
            ),
            trouble(c.retransmitted_packets),
        )]),
        Line::from(vec![Span::styled(
            format!(
                "NAKs {naks}: PSN seq {} · invalid req {} · remote access {} · remote op {} · invalid RD {} · RNR NAKs {} (wait {})",
                c.nak_psn_seq,
                c.nak_invalid_request,
                c.nak_remote_access,
                c.nak_remote_operational,
                c.nak_invalid_rd_request,
                c.rnr_nak,
                lat(&fl.rnr_wait)
            ),
            trouble(naks + c.rnr_nak),
        )]),
        Line::from(format!(
            "CE {} · CNP sent {} received {} · CE→CNP {} · CE w/o CNP {} · CNP w/o CE {}",
            c.ce_marked,
            c.cnp_sent,
            c.cnp_received,
            lat(&fl.ce_to_cnp),
            c.ce_without_cnp,
            c.cnp_without_ce
        )),
        Line::from(format!(
            "rate before first CNP {} Gb/s · after last CNP {} Gb/s · timeouts observed {}",
            fl.gbps_before_first_cnp
                .map_or("-".into(), |g| format!("{g:.2}")),
            fl.gbps_after_last_cnp
                .map_or("-".into(), |g| format!("{g:.2}")),
            lat(&fl.timeout_observed)
        )),
        Line::from(format!(
            "opcodes: {}",
            fl.opcodes
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Line::from(format!("rate Mb/s  {rate_spark} max {max_mbps}")),
        Line::from(format!("PSN/step   {psn_spark} max {max_psn}")),
    ]
}

/// With taps (`top --tap`): where this flow's packets were lost, segment by segment,
/// and the delay between the taps (the words of `analyze --tap`).
fn taps_lines<'a>(app: &App, fl: &FlowSummary) -> Vec<Line<'a>> {
    use crate::report::taps::{direction_of, direction_short, tap_names};
    let Some(r) = app.taps.as_deref() else {
        return Vec::new();
    };
    let mut out = vec![Line::from(Span::styled(
        format!("Where the loss is (taps in path order: {}):", tap_names(r)),
        BOLD,
    ))];
    let d = match (fl.src, fl.dst) {
        (dissectors::Addr::Ip(s), dissectors::Addr::Ip(d)) => direction_of(r, s, d, fl.qp.0),
        _ => None,
    };
    match d {
        Some(d) => {
            out.push(Line::from(format!(
                "  {} packets, {} seen at more than one tap",
                d.packets, d.matched
            )));
            let quiet = d
                .segments
                .iter()
                .all(|s| s.lost == 0 && s.naks == 0 && s.timer_retries == 0);
            if d.matched == 0 {
                out.push(Line::from("  only one tap saw it: nothing to compare"));
            } else if quiet {
                out.push(Line::from("  no loss before, between or after the taps"));
            }
            let lines = direction_short(r, d);
            out.extend(lines.into_iter().map(|l| Line::from(format!("  {l}"))));
        }
        None => out.push(Line::from("  the taps did not see this flow")),
    }
    out
}

fn problems_of(fl: &FlowSummary) -> bool {
    fl.counters.psn_gap_events
        + fl.counters.retransmitted_packets
        + fl.counters.naks()
        + fl.counters.rnr_nak
        > 0
}

/// The flow's text on top, its event log under it.
fn finish(f: &mut Frame<'_>, area: Rect, app: &App, id: u32, lines: Vec<Line<'_>>) {
    // Height of the wrapped text, so the event log starts right under it.
    let inner = area.width.saturating_sub(2).max(1) as usize;
    let h = lines
        .iter()
        .map(|l| l.width().div_ceil(inner).max(1) as u16)
        .sum::<u16>()
        + 2;
    let [top, log] = Layout::vertical([Constraint::Length(h), Constraint::Min(3)]).areas(area);
    f.render_widget(
        Paragraph::new(lines)
            .block(Block::bordered().title(title(&format!("Flow #{id}"))))
            .wrap(ratatui::widgets::Wrap { trim: false }),
        top,
    );
    super::events::render(f, log, app, Some(id));
}
