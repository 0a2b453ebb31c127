//! The flows table: one row per flow (a direction of a QP), filtered and sorted as the
//! App says, with rate, a rate sparkline and the trouble counters; wide terminals add
//! transport, the paired direction, timeouts, the opcode mix and the last event.

use super::{n0, si, spark, title};
use crate::analysis::FlowSummary;
use crate::report::events::detail;
use crate::report::findings::flow_short;
use crate::tui::app::{problems, App};
use dissectors::Addr;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Row, Table, TableState};
use ratatui::Frame;

/// Terminals at least this wide get the extra columns.
const WIDE: u16 = 120;

/// The most frequent operations of a flow, e.g. `WriteMiddle 60% Ack 20%`.
fn opmix(f: &FlowSummary) -> String {
    let total = f.opcodes.total();
    let mut v: Vec<(&str, u64)> = f.opcodes.iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v.iter()
        .take(2)
        .map(|(k, n)| format!("{} {}%", short_op(k), n * 100 / total.max(1)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `RDMA WRITE Middle` → `WR Mid`, to fit the opcode mix in a column.
fn short_op(name: &str) -> String {
    name.replace("RDMA WRITE", "WR")
        .replace("RDMA READ Response", "RdResp")
        .replace("RDMA READ Request", "RdReq")
        .replace("Acknowledge", "Ack")
        .replace("Congestion Notification", "CNP")
        .replace("Middle", "Mid")
        .replace("with Immediate", "Imm")
        .replace("with Invalidate", "Inv")
}

pub fn render(f: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= WIDE;
    let rows = app.rows();
    let total = app.report.as_ref().map_or(0, |r| r.flows.len());
    let mut t = vec![title(&format!(
        "Flows {}/{} · sort: {}",
        rows.len(),
        total,
        app.sort.name()
    ))];
    if !app.filter.is_empty() {
        t.push(Span::styled(
            format!(" filter: {} ", app.filter),
            Style::default().fg(Color::Black).bg(Color::Yellow),
        ));
    }
    let block = Block::bordered().title(Line::from(t));
    let taps = app.taps.is_some();
    let header = Row::new(columns(wide, taps))
        .style(Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
    let first = app.report.as_ref().and_then(|r| r.first_ts_ns).unwrap_or(0);
    // Only the rows on screen are built (a live capture may hold thousands of flows).
    let visible = area.height.saturating_sub(3).max(1) as usize;
    let offset = app.selected.saturating_sub(visible - 1);
    let body: Vec<Row> = rows
        .iter()
        .skip(offset)
        .take(visible)
        .map(|fl| row(app, fl, wide, first))
        .collect();
    let widths = widths(wide, taps);
    let table = Table::new(body, widths)
        .header(header)
        .block(block)
        .column_spacing(1)
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .highlight_symbol("")
        .style(Style::default());
    let mut state =
        TableState::default().with_selected((!rows.is_empty()).then_some(app.selected - offset));
    f.render_stateful_widget(table, area, &mut state);
    if rows.is_empty() {
        let msg = if app.report.is_none() {
            "waiting for frames…"
        } else if !app.filter.is_empty() {
            "no flow matches the filter"
        } else {
            "no RoCE flow yet"
        };
        let inner = Rect {
            x: area.x + 2,
            y: area.y + 2,
            width: area.width.saturating_sub(4),
            height: 1,
        };
        if area.height > 3 {
            f.render_widget(ratatui::widgets::Paragraph::new(msg), inner);
        }
    }
}

/// The column titles. At 80 columns the trouble counters share one column listing
/// those not zero. With taps (`top --tap`), `lost at` takes the opcode mix's place
/// (wide) or comes before the trouble column (narrow).
fn columns(wide: bool, taps: bool) -> Vec<&'static str> {
    let mut c = plain_columns(wide);
    if taps {
        if wide {
            let at = c.len() - 2;
            c[at] = "lost at";
        } else {
            c.insert(c.len() - 1, "lost at");
        }
    }
    c
}

fn plain_columns(wide: bool) -> Vec<&'static str> {
    if wide {
        vec![
            "#",
            "flow (src→dst DestQP)",
            "tr",
            "peer",
            "Gb/s",
            "pkt/s",
            "trend",
            "gap",
            "rtx",
            "NAK",
            "RNR",
            "TO",
            "CE",
            "CNP",
            "opcode mix",
            "last event",
        ]
    } else {
        vec![
            "#",
            "flow (src→dst DestQP)",
            "Gb/s",
            "pkt/s",
            "trend",
            "trouble",
        ]
    }
}

/// Width of the `lost at` column at 80 columns (wide, the opcode mix's 30; the detail
/// view has it all).
const LOST_AT: u16 = 18;

fn widths(wide: bool, taps: bool) -> Vec<Constraint> {
    let mut w = plain_widths(wide);
    if taps && !wide {
        w.insert(w.len() - 1, Constraint::Length(LOST_AT));
    }
    w
}

fn plain_widths(wide: bool) -> Vec<Constraint> {
    if wide {
        let mut w = vec![
            Constraint::Length(3),
            Constraint::Length(36),
            Constraint::Length(3),
            Constraint::Length(4),
            Constraint::Length(6),
            Constraint::Length(6),
            Constraint::Length(5),
        ];
        w.extend([Constraint::Length(4); 7]);
        w.extend([Constraint::Length(30), Constraint::Fill(1)]);
        w
    } else {
        vec![
            Constraint::Length(3),
            Constraint::Length(36),
            Constraint::Length(6),
            Constraint::Length(6),
            Constraint::Length(5),
            Constraint::Fill(1),
        ]
    }
}

/// One flow's row (bold when it has problems).
fn row<'a>(app: &'a App, fl: &'a FlowSummary, wide: bool, first: u64) -> Row<'a> {
    let trend = app.trends.get(&fl.id).map_or_else(
        || spark(std::iter::empty::<u64>(), 5),
        |t| spark(t.mbps.iter().copied(), 5),
    );
    let c = &fl.counters;
    let counts = [
        ("gap", c.psn_gap_events, true),
        ("rtx", c.retransmitted_packets, true),
        ("NAK", fl.counters.naks(), true),
        ("RNR", c.rnr_nak, false),
        ("TO", c.timeout_retransmissions, true),
        ("CE", c.ce_marked, false),
        ("CNP", c.cnp_sent + c.cnp_received, false),
    ];
    let style = |v: u64, bad: bool| match (v, bad) {
        (0, _) => Style::default(),
        (_, true) => Style::default().fg(Color::Red),
        (_, false) => Style::default().fg(Color::Yellow),
    };
    let (gbps, pps) = app.rates(fl);
    let gbps = if gbps >= 10.0 {
        format!("{gbps:.2}")
    } else {
        format!("{gbps:.3}")
    };
    let mut cells: Vec<Cell> = vec![Cell::from(fl.id.to_string()), Cell::from(flow_short(fl))];
    if wide {
        cells.push(Cell::from(fl.transport));
        cells.push(Cell::from(fl.peer.map_or("-".into(), |p| format!("↔{p}"))));
    }
    cells.push(Cell::from(gbps));
    cells.push(Cell::from(si(pps)));
    cells.push(Cell::from(trend));
    if wide {
        for (_, v, bad) in counts {
            cells.push(Cell::from(Span::styled(n0(v), style(v, bad))));
        }
        match lost_at(app, fl) {
            Some(c) => cells.push(c),
            None => cells.push(Cell::from(opmix(fl))),
        }
        cells.push(Cell::from(app.last_event(fl.id).map_or(
            String::new(),
            |e| {
                format!(
                    "{} {} {}",
                    super::rel(e.t_ns, first),
                    crate::report::events::kind_name(e.kind),
                    detail(e)
                )
            },
        )));
    } else {
        if let Some(c) = lost_at(app, fl) {
            cells.push(c);
        }
        let spans: Vec<Span> = counts
            .iter()
            .filter(|(_, v, _)| *v > 0)
            .map(|(k, v, bad)| Span::styled(format!("{k}{} ", n0(*v)), style(*v, *bad)))
            .collect();
        cells.push(Cell::from(Line::from(spans)));
    }
    let row = Row::new(cells);
    if problems(fl) > 0 {
        row.style(Style::default().add_modifier(Modifier::BOLD))
    } else {
        row
    }
}

/// The `lost at` cell of a flow with taps (red when packets were lost between or around
/// the taps); `None` without taps.
fn lost_at<'a>(app: &App, fl: &FlowSummary) -> Option<Cell<'a>> {
    let r = app.taps.as_deref()?;
    let text = match (fl.src, fl.dst) {
        (Addr::Ip(s), Addr::Ip(d)) => crate::report::taps::direction_of(r, s, d, fl.qp.0)
            .map(|d| crate::report::taps::lost_at(r, d)),
        _ => None,
    };
    Some(match text {
        Some(t) if t != "-" && t != "no loss" => {
            Cell::from(Span::styled(t, Style::default().fg(Color::Red)))
        }
        Some(t) => Cell::from(t),
        None => Cell::from("not at taps"),
    })
}
