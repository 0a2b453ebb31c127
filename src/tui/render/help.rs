//! The help overlay: every key, from the one table the key map is documented in.

use super::title;
use crate::tui::keys::HELP;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use ratatui::Frame;

pub fn render(f: &mut Frame<'_>, area: Rect) {
    let w = 72.min(area.width);
    let h = (HELP.len() as u16 + 4).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    let mut lines: Vec<Line> = HELP
        .iter()
        .map(|b| {
            Line::from(vec![
                Span::styled(
                    format!(" {:<15}", b.keys),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
                Span::raw(b.what),
            ])
        })
        .collect();
    lines.push(Line::from(" Esc or ? closes this help"));
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(title("Keys"))),
        r,
    );
}
