//! The RDMA hw_counters pane (live RDMA devices only): each counter that is not zero,
//! with its change per second, the changing ones first.

use super::{si, title};
use crate::report::safe::term;
use crate::tui::app::App;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

pub fn render(f: &mut Frame<'_>, area: Rect, app: &App) {
    let mut v: Vec<_> = app.hw.iter().filter(|c| c.value > 0).collect();
    v.sort_by(|a, b| {
        let ra = a.per_s.unwrap_or(0.0);
        let rb = b.per_s.unwrap_or(0.0);
        rb.total_cmp(&ra)
            .then(a.port.cmp(&b.port))
            .then(a.name.cmp(&b.name))
    });
    let nw = (area.width as usize).saturating_sub(20).max(8);
    let mut lines: Vec<Line> = v
        .iter()
        .map(|c| {
            let rate = c.per_s.map_or("-".into(), |r| format!("{}/s", si(r)));
            let style = if c.per_s.unwrap_or(0.0) > 0.0 {
                Style::default().fg(Color::Yellow)
            } else {
                Style::default()
            };
            // Counter and port names are sysfs file names: escaped for the terminal.
            let name: String = term(&c.name).chars().take(nw).collect();
            Line::from(vec![
                Span::raw(format!("{name:<nw$} {:>8} ", si(c.value as f64))),
                Span::styled(rate, style),
            ])
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::from("every counter is 0"));
    }
    let ports: Vec<&str> = {
        let mut p: Vec<&str> = app.hw.iter().map(|c| c.port.as_str()).collect();
        p.dedup();
        p
    };
    f.render_widget(
        Paragraph::new(lines).block(
            Block::bordered().title(title(&format!("hw_counters {}", term(&ports.join(" "))))),
        ),
        area,
    );
}
