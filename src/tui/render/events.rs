//! The events pane: every flow's events, newest first (gaps, recoveries, NAKs with
//! their code, RNR NAKs, resend episodes with trigger and latency, READ re-requests,
//! CNPs without CE, ARP trouble). With `only` it lists one flow and its peer (detail view).

use super::{rel, title};
use crate::analysis::{Event, EventKind};
use crate::report::events::{detail, kind_name};
use crate::report::findings::flow_short;
use crate::tui::app::App;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

fn kind_style(k: EventKind) -> Style {
    match k {
        EventKind::PsnGap
        | EventKind::GapUnrecovered
        | EventKind::Nak
        | EventKind::ArpReplyPathMismatch => Style::default().fg(Color::Red),
        EventKind::GapRecovered => Style::default().fg(Color::Green),
        _ => Style::default().fg(Color::Yellow),
    }
}

/// One event as a line: time, flow, kind, PSNs, plain words.
/// With `short`, the flow is named by its id only (80 columns, and the detail view where
/// the flow is named above).
pub fn line<'a>(app: &App, e: &Event, first: u64, short: bool) -> Line<'a> {
    let flow = match e.flow {
        Some(id) if short => format!("#{id:<3}"),
        Some(id) => app
            .flow(id)
            .map_or(format!("#{id}"), |f| format!("#{id} {}", flow_short(f))),
        None => "link".into(),
    };
    let fw = if short { 4 } else { 38 };
    let psn = match (e.psn, e.psn_end) {
        (Some(a), Some(b)) if a != b => format!("PSN {a}-{b}"),
        (Some(a), _) => format!("PSN {a}"),
        _ => String::new(),
    };
    Line::from(vec![
        Span::raw(format!("{:>10} ", rel(e.t_ns, first))),
        Span::styled(format!("{:<12}", kind_name(e.kind)), kind_style(e.kind)),
        Span::raw(if short {
            format!("{flow:<fw$} {psn} · {}", detail(e))
        } else {
            format!("{flow:<fw$} {psn:<19} {}", detail(e))
        }),
    ])
}

pub fn render(f: &mut Frame<'_>, area: Rect, app: &App, only: Option<u32>) {
    let first = app.report.as_ref().and_then(|r| r.first_ts_ns).unwrap_or(0);
    let list: Vec<&Event> = match only {
        Some(id) => app.flow_events(id),
        None => app.events.iter().rev().collect(),
    };
    let name = match only {
        Some(_) => format!("Events of this connection ({}), newest first", list.len()),
        None => format!("Events ({}), newest first", list.len()),
    };
    let block = Block::bordered().title(title(&name));
    let skip = if only.is_some() || app.view == crate::tui::app::View::Events {
        app.scroll.min(list.len().saturating_sub(1))
    } else {
        0
    };
    let lines: Vec<Line> = if list.is_empty() {
        vec![Line::from("no events")]
    } else {
        list.iter()
            .skip(skip)
            .take(area.height as usize)
            .map(|e| line(app, e, first, only.is_some() || area.width < 120))
            .collect()
    };
    f.render_widget(Paragraph::new(lines).block(block), area);
}
