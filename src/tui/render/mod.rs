//! Pure rendering: `render(frame, &App)` lays the screen out and hands each region to
//! its module. Nothing here changes the App or touches the terminal, so the screens are
//! tested by drawing into ratatui's `TestBackend`.
//!
//! The minimum terminal is [`MIN_W`]×[`MIN_H`] (80×24); a smaller one shows a message
//! saying so instead of a cut-up screen.

mod detail;
mod events;
mod flows;
mod header;
mod help;
mod hw;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_taps;

use super::app::{App, View};
use super::keys::{FOOTER_FLOWS, FOOTER_OTHER};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// Smallest terminal width drawn, in columns; below it a message asks for a larger window.
pub const MIN_W: u16 = 80;
/// Smallest terminal height drawn, in rows.
pub const MIN_H: u16 = 24;

/// Draws the whole screen for `app`'s state: header, the current view, the footer, and the
/// help overlay when shown (or a "terminal too small" message below [`MIN_W`] x [`MIN_H`]).
pub fn render(f: &mut Frame<'_>, app: &App) {
    let area = f.area();
    if area.width < MIN_W || area.height < MIN_H {
        let msg = vec![
            Line::from(format!(
                "terminal too small: {}x{}",
                area.width, area.height
            )),
            Line::from(format!("rocetap top needs at least {MIN_W}x{MIN_H}")),
            Line::from("enlarge the window, or press q to quit"),
        ];
        f.render_widget(Paragraph::new(msg), area);
        return;
    }
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(10),
        Constraint::Length(1),
    ])
    .areas(area);
    header::render(f, head, app);
    // The hw_counters pane: beside the table on wide terminals, under it otherwise.
    let body = if app.hw.is_empty() {
        body
    } else if area.width >= 140 {
        let [main, side] =
            Layout::horizontal([Constraint::Min(100), Constraint::Length(44)]).areas(body);
        hw::render(f, side, app);
        main
    } else {
        let n = app.hw.iter().filter(|c| c.value > 0).count().max(1) as u16;
        let [main, low] =
            Layout::vertical([Constraint::Min(10), Constraint::Length(n.min(4) + 2)]).areas(body);
        hw::render(f, low, app);
        main
    };
    match app.view {
        View::Flows => {
            // Large terminals show the newest events under the table.
            if body.height >= 30 {
                let [t, e] =
                    Layout::vertical([Constraint::Min(12), Constraint::Length(body.height / 3)])
                        .areas(body);
                flows::render(f, t, app);
                events::render(f, e, app, None);
            } else {
                flows::render(f, body, app);
            }
        }
        View::Detail(id) => detail::render(f, body, app, id),
        View::Events => events::render(f, body, app, None),
    }
    footer(f, foot, app);
    if app.help {
        help::render(f, area);
    }
}

fn footer(f: &mut Frame<'_>, area: Rect, app: &App) {
    let key = Style::default().add_modifier(Modifier::REVERSED);
    let line = if let Some(t) = &app.editing {
        Line::from(vec![
            Span::styled(" filter ", key),
            Span::raw(format!(" /{t}")),
            Span::styled("█", Style::default().fg(Color::Gray)),
            Span::raw("   Enter keep · Esc clear"),
        ])
    } else if let Some(s) = &app.status {
        Line::from(vec![
            Span::styled(" note ", key),
            Span::raw(format!(" {}", crate::report::safe::term(s))),
        ])
    } else {
        let mut v = Vec::new();
        let hints = match app.view {
            View::Flows => FOOTER_FLOWS,
            _ => FOOTER_OTHER,
        };
        for (b, what) in hints {
            v.push(Span::styled(b.key, key));
            v.push(Span::raw(format!(" {what} ")));
        }
        Line::from(v)
    };
    f.render_widget(Paragraph::new(line), area);
}

/// 1234 → "1234", 12345 → "12.3k", 1234567 → "1.23M".
pub fn si(v: f64) -> String {
    let a = v.abs();
    if a < 10_000.0 {
        format!("{v:.0}")
    } else if a < 1e6 {
        format!("{:.1}k", v / 1e3)
    } else if a < 1e9 {
        format!("{:.2}M", v / 1e6)
    } else {
        format!("{:.2}G", v / 1e9)
    }
}

/// A count, blank when zero so problems stand out.
pub fn n0(v: u64) -> String {
    if v == 0 {
        "·".into()
    } else {
        si(v as f64)
    }
}

/// Block-character sparkline of the last `width` values, scaled to their maximum.
pub fn spark(
    values: impl DoubleEndedIterator<Item = u64> + ExactSizeIterator,
    width: usize,
) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let n = values.len();
    let v: Vec<u64> = values.skip(n.saturating_sub(width)).collect();
    let max = v.iter().copied().max().unwrap_or(0);
    let mut s: String = v
        .iter()
        .map(|&x| {
            if max == 0 {
                BARS[0]
            } else {
                BARS[((x * 7).div_ceil(max)) as usize]
            }
        })
        .collect();
    while s.chars().count() < width {
        s.insert(0, ' ');
    }
    s
}

/// Seconds since the start of the capture, e.g. `0.000123 s` → `+123.0µs`.
pub fn rel(t_ns: u64, first: u64) -> String {
    let d = t_ns.saturating_sub(first);
    if d < 1_000_000 {
        format!("+{:.1}µs", d as f64 / 1e3)
    } else if d < 1_000_000_000 {
        format!("+{:.3}ms", d as f64 / 1e6)
    } else {
        format!("+{:.3}s", d as f64 / 1e9)
    }
}

/// A latency in the unit that reads best.
pub fn dur(ns: u64) -> String {
    if ns < 10_000 {
        format!("{:.2}µs", ns as f64 / 1e3)
    } else if ns < 10_000_000 {
        format!("{:.1}µs", ns as f64 / 1e3)
    } else {
        format!("{:.1}ms", ns as f64 / 1e6)
    }
}

/// A pane title: `s` in bold with a space either side.
pub fn title(s: &str) -> Span<'static> {
    Span::styled(
        format!(" {s} "),
        Style::default().add_modifier(Modifier::BOLD),
    )
}
