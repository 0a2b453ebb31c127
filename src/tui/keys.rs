//! Key → [`Action`]. While a filter is being typed every printable key is text; otherwise
//! the single-letter commands of the help overlay apply.

use super::app::Action;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Every key the UI knows, for the help overlay: (keys, what they do).
pub const HELP: &[(&str, &str)] = &[
    ("q  Ctrl-C", "quit"),
    ("↑ ↓  j k", "move the selection / scroll"),
    ("PgUp PgDn", "move by 10"),
    ("Home End  g G", "first / last"),
    ("Enter", "detail of the selected flow"),
    ("Esc", "back (from detail, events, help; clears the filter)"),
    ("s", "cycle the sort: rate, problems, name"),
    ("/", "filter by text (IP, QP, #id); Enter keeps, Esc clears"),
    ("p", "pause / resume (live: freezes the display)"),
    (".", "replay: step one frame (pauses)"),
    ("w", "write the selected flow and its peer to a pcapng"),
    ("e", "all events, newest first"),
    ("?  h", "this help"),
];

pub fn action(k: KeyEvent, editing: bool) -> Option<Action> {
    if k.kind == KeyEventKind::Release {
        return None;
    }
    if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    if editing {
        return match k.code {
            KeyCode::Enter => Some(Action::FilterDone),
            KeyCode::Esc => Some(Action::FilterCancel),
            KeyCode::Backspace => Some(Action::FilterBackspace),
            KeyCode::Char(c) => Some(Action::FilterChar(c)),
            _ => None,
        };
    }
    Some(match k.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Action::Top,
        KeyCode::End | KeyCode::Char('G') => Action::Bottom,
        KeyCode::Enter => Action::Enter,
        KeyCode::Esc => Action::Back,
        KeyCode::Char('s') => Action::CycleSort,
        KeyCode::Char('/') => Action::StartFilter,
        KeyCode::Char('p') | KeyCode::Char(' ') => Action::TogglePause,
        KeyCode::Char('.') => Action::Step,
        KeyCode::Char('w') => Action::WriteFlow,
        KeyCode::Char('e') => Action::ToggleEvents,
        KeyCode::Char('?') | KeyCode::Char('h') => Action::ToggleHelp,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn letters_are_text_while_filtering() {
        assert!(matches!(
            action(key(KeyCode::Char('q')), false),
            Some(Action::Quit)
        ));
        assert!(matches!(
            action(key(KeyCode::Char('q')), true),
            Some(Action::FilterChar('q'))
        ));
        assert!(matches!(
            action(key(KeyCode::Esc), true),
            Some(Action::FilterCancel)
        ));
        assert!(matches!(
            action(key(KeyCode::Esc), false),
            Some(Action::Back)
        ));
        assert!(matches!(
            action(
                KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
                true
            ),
            Some(Action::Quit)
        ));
        assert!(action(key(KeyCode::Char('x')), false).is_none());
    }
}
