//! Text from outside rocetap made safe to print (`report::safe` re-exports it for the
//! report layer; it lives at the root so that the sources' own stderr lines can use it
//! too, without importing `report`): the one function every string that
//! rocetap did not write itself (process and device names from a QP table, interface
//! names, NAD names, YAML/JSON text, pcapng comments, file names) passes through before it
//! reaches a terminal or the text report. JSON and CSV carry the raw value, encoded by
//! their writers.

use std::borrow::Cow;

/// `s` with every character that could move the cursor, recolour, retitle or reorder a
/// terminal written as a visible escape: C0 controls, DEL and C1 controls as `\xNN` /
/// `\u{NN}`, the bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069) and
/// the other invisible format characters (U+200B–U+200F, U+2028/U+2029, U+FEFF) as
/// `\u{NNNN}`, and a backslash as `\\` so that the escapes stay unambiguous. Borrowed,
/// with no allocation, when nothing needs escaping (the usual case).
pub fn term(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    push_term(&mut out, s);
    Cow::Owned(out)
}

/// [`term`] appended to `out`.
pub fn push_term(out: &mut String, s: &str) {
    use std::fmt::Write;
    for c in s.chars() {
        if c == '\\' {
            out.push_str("\\\\");
        } else if !needs_escape(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

fn needs_escape(c: char) -> bool {
    c == '\\'
        || c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::term;

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(
            term("mlx5_0 ib_write_bw"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(term("Grüße 名前"), "Grüße 名前");
    }

    #[test]
    fn terminal_controls_become_visible() {
        assert_eq!(term("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_eq!(term("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
        assert_eq!(term("x\ny\tz\r\x7f"), "x\\x0ay\\x09z\\x0d\\x7f");
        assert_eq!(term("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(term("abc\u{202e}def\u{2066}"), "abc\\u{202e}def\\u{2066}");
        assert_eq!(term("a\\x1b"), "a\\\\x1b");
        let all: String = (0u8..0x20).map(char::from).collect();
        assert!(!term(&all).chars().any(char::is_control));
    }
}
