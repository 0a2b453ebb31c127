//! Key → [`Action`]. While a filter is being typed every printable key is text; otherwise
//! the single-letter commands of the help overlay apply.

use super::app::Action;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// One line of the key map: the keys as the help overlay names them, as the footer
/// names them, what they do, and the action of each key.
pub struct Binding {
    /// `q  Ctrl-C`, `↑ ↓  j k`: the help overlay's column.
    pub keys: &'static str,
    /// `q`, `↑↓`: the footer's key.
    pub key: &'static str,
    /// What they do, for the help overlay.
    pub what: &'static str,
    map: &'static [(KeyCode, Action)],
}

/// `q`, Ctrl-C: quit.
pub const QUIT: Binding = Binding {
    keys: "q  Ctrl-C",
    key: "q",
    what: "quit",
    map: &[(KeyCode::Char('q'), Action::Quit)],
};
/// Arrows and `j` / `k`: move the selection or scroll by one row.
pub const MOVE: Binding = Binding {
    keys: "↑ ↓  j k",
    key: "↑↓",
    what: "move the selection / scroll",
    map: &[
        (KeyCode::Up, Action::Up),
        (KeyCode::Char('k'), Action::Up),
        (KeyCode::Down, Action::Down),
        (KeyCode::Char('j'), Action::Down),
    ],
};
/// PgUp / PgDn: move by 10 rows.
pub const PAGE: Binding = Binding {
    keys: "PgUp PgDn",
    key: "PgUp",
    what: "move by 10",
    map: &[
        (KeyCode::PageUp, Action::PageUp),
        (KeyCode::PageDown, Action::PageDown),
    ],
};
/// Home / End and `g` / `G`: first / last row.
pub const ENDS: Binding = Binding {
    keys: "Home End  g G",
    key: "Home",
    what: "first / last",
    map: &[
        (KeyCode::Home, Action::Top),
        (KeyCode::Char('g'), Action::Top),
        (KeyCode::End, Action::Bottom),
        (KeyCode::Char('G'), Action::Bottom),
    ],
};
/// Enter: open the selected flow's detail.
pub const DETAIL: Binding = Binding {
    keys: "Enter",
    key: "Enter",
    what: "detail of the selected flow",
    map: &[(KeyCode::Enter, Action::Enter)],
};
/// Esc: back from the detail, events or help; clears the filter.
pub const BACK: Binding = Binding {
    keys: "Esc",
    key: "Esc",
    what: "back (from detail, events, help; clears the filter)",
    map: &[(KeyCode::Esc, Action::Back)],
};
/// `s`: cycle the sort.
pub const SORT: Binding = Binding {
    keys: "s",
    key: "s",
    what: "cycle the sort: rate, problems, name",
    map: &[(KeyCode::Char('s'), Action::CycleSort)],
};
/// `/`: type a filter.
pub const FILTER: Binding = Binding {
    keys: "/",
    key: "/",
    what: "filter by text (IP, QP, #id); Enter keeps, Esc clears",
    map: &[(KeyCode::Char('/'), Action::StartFilter)],
};
/// `p`: pause / resume.
pub const PAUSE: Binding = Binding {
    keys: "p",
    key: "p",
    what: "pause / resume (live: freezes the display)",
    map: &[
        (KeyCode::Char('p'), Action::TogglePause),
        (KeyCode::Char(' '), Action::TogglePause),
    ],
};
/// `.`: step one frame in replay.
pub const STEP: Binding = Binding {
    keys: ".",
    key: ".",
    what: "replay: step one frame (pauses)",
    map: &[(KeyCode::Char('.'), Action::Step)],
};
/// `w`: write the selected flow and its peer to a pcapng.
pub const WRITE: Binding = Binding {
    keys: "w",
    key: "w",
    what: "write the selected flow and its peer to a pcapng",
    map: &[(KeyCode::Char('w'), Action::WriteFlow)],
};
/// `e`: the event list.
pub const EVENTS: Binding = Binding {
    keys: "e",
    key: "e",
    what: "all events, newest first",
    map: &[(KeyCode::Char('e'), Action::ToggleEvents)],
};
/// `?`, `h`: the help overlay.
pub const HELP_KEY: Binding = Binding {
    keys: "?  h",
    key: "?",
    what: "this help",
    map: &[
        (KeyCode::Char('?'), Action::ToggleHelp),
        (KeyCode::Char('h'), Action::ToggleHelp),
    ],
};

/// Every key the UI knows, in the help overlay's order: the one definition the key map,
/// the help overlay and the footer read.
pub const HELP: &[Binding] = &[
    QUIT, MOVE, PAGE, ENDS, DETAIL, BACK, SORT, FILTER, PAUSE, STEP, WRITE, EVENTS, HELP_KEY,
];

/// The footer under the flows table: (binding, its word there).
pub const FOOTER_FLOWS: &[(&Binding, &str)] = &[
    (&QUIT, "quit"),
    (&DETAIL, "detail"),
    (&SORT, "sort"),
    (&FILTER, "filter"),
    (&PAUSE, "pause"),
    (&STEP, "step"),
    (&WRITE, "write"),
    (&EVENTS, "events"),
    (&HELP_KEY, "help"),
];

/// The footer under the detail and events views.
pub const FOOTER_OTHER: &[(&Binding, &str)] = &[
    (&QUIT, "quit"),
    (&BACK, "back"),
    (&MOVE, "scroll"),
    (&PAUSE, "pause"),
    (&WRITE, "write"),
    (&EVENTS, "events"),
    (&HELP_KEY, "help"),
];

/// The action of key `k`, or `None` for a key that does nothing (and for key releases).
/// While `editing` a filter, printable keys are filter text and only Enter, Esc and
/// Backspace act (Ctrl-C always quits).
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
    HELP.iter()
        .flat_map(|b| b.map)
        .find(|(code, _)| *code == k.code)
        .map(|(_, a)| a.clone())
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

    #[test]
    fn every_key_is_in_the_readme() {
        let readme = include_str!("../../README.md");
        for b in HELP {
            assert!(
                readme.contains(&format!("`{}`", b.key)),
                "README does not name the key `{}` ({})",
                b.key,
                b.what
            );
        }
    }
}
