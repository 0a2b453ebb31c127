//! The two header lines: source, feeder state, capture time; frames and rate, drops
//! (red when any), the ICRC verdict of the capture path, totals of trouble.

use super::si;
use crate::tui::app::{App, FeedState, Mode};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

pub fn render(f: &mut Frame<'_>, area: Rect, app: &App) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let (state, st_style) = match (&app.feed, app.paused) {
        // The feeder's error can name files and devices: escaped for the terminal.
        (FeedState::Failed(e), _) => (
            format!("error: {}", crate::report::safe::term(e)),
            Style::default().fg(Color::Red),
        ),
        (FeedState::Ended, _) => ("ended".to_string(), Style::default().fg(Color::Cyan)),
        // Replay: PAUSED once the feeder says it stopped; live: the display is frozen.
        (FeedState::Paused, _) => ("PAUSED".to_string(), Style::default().fg(Color::Yellow)),
        (_, true) if app.mode == Mode::Live => (
            "PAUSED (display)".to_string(),
            Style::default().fg(Color::Yellow),
        ),
        (_, true) => ("pausing…".to_string(), Style::default().fg(Color::Yellow)),
        (FeedState::Running, false) => ("running".to_string(), Style::default().fg(Color::Green)),
    };
    let (elapsed, frames, roce, flows) = match &app.report {
        Some(r) => (
            r.derived.duration_s,
            r.totals.frames,
            r.totals.roce_packets,
            r.flows.len(),
        ),
        None => (0.0, 0, 0, 0),
    };
    let l1 = Line::from(vec![
        Span::styled("rocetap top", bold),
        Span::raw(" │ "),
        // File and device names: escaped for the terminal.
        Span::raw(crate::report::safe::term(&app.source).into_owned()),
        Span::raw(" │ "),
        Span::styled(state, st_style),
        Span::raw(format!(" │ t {elapsed:.6}s │ {flows} flows")),
    ]);
    let d = app.drops;
    let drop_style = if d.any() {
        Style::default()
            .fg(Color::White)
            .bg(Color::Red)
            .add_modifier(Modifier::BOLD)
    } else {
        Style::default()
    };
    let (icrc, icrc_bad) = app.icrc_verdict();
    let icrc_style = if icrc_bad {
        Style::default().fg(Color::Yellow)
    } else {
        Style::default()
    };
    let mut l2 = vec![
        Span::raw(format!(
            "frames {} ({}/s) RoCE {} │ ",
            frames,
            si(app.frame_rate),
            roce
        )),
        Span::styled(
            format!(
                "drops kernel {} iface {} rocetap {}",
                d.kernel, d.iface, d.rocetap
            ),
            drop_style,
        ),
        Span::raw(" │ "),
        Span::styled(icrc, icrc_style),
    ];
    if let Some(r) = &app.report {
        let t = &r.totals;
        if t.events_dropped > 0 {
            l2.push(Span::styled(
                format!(" │ {} events not kept", t.events_dropped),
                Style::default().fg(Color::Yellow),
            ));
        }
    }
    f.render_widget(Paragraph::new(vec![l1, Line::from(l2)]), area);
}
