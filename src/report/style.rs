//! Color for the text outputs: a few ANSI SGR styles, applied only when the command layer
//! says so (`--color`, `NO_COLOR`, a terminal on stdout — decided in `cli`, passed down as
//! a plain `bool`). With color off every function returns its input unchanged, so the
//! golden outputs (written without a terminal) stay byte for byte what they were.

use std::borrow::Cow;

/// What a piece of text means, which decides its color.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// ERROR, a NAK, an unrecovered gap, a bad ICRC, a failed rule: bold red.
    Bad,
    /// WARNING, an RNR NAK, a resend, a gap: bold yellow.
    Warn,
    /// Congestion marks (ECN CE, CNP, FECN/BECN): magenta.
    Mark,
    /// INFO words: cyan.
    Note,
    /// All clear (ok, no problems found): green.
    Good,
    /// Less important detail (field names in `decode -v`): dim.
    Dim,
}

impl Tone {
    fn sgr(self) -> &'static str {
        match self {
            Tone::Bad => "\x1b[1;31m",
            Tone::Warn => "\x1b[1;33m",
            Tone::Mark => "\x1b[35m",
            Tone::Note => "\x1b[36m",
            Tone::Good => "\x1b[32m",
            Tone::Dim => "\x1b[2m",
        }
    }
}

const RESET: &str = "\x1b[0m";

/// Whether output gets color; `Paint::default()` is off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Paint {
    /// Color escapes are written.
    pub on: bool,
}

impl Paint {
    /// Color on when `on` is set (see `decide` for how the command chooses).
    pub fn new(on: bool) -> Self {
        Paint { on }
    }

    /// `text` in the color of `tone` (unchanged when color is off).
    pub fn tone(self, tone: Tone, text: &str) -> Cow<'_, str> {
        if self.on && !text.is_empty() {
            Cow::Owned(format!("{}{text}{RESET}", tone.sgr()))
        } else {
            Cow::Borrowed(text)
        }
    }

    /// Appends `text` in the color of `tone` to `out`.
    pub fn push(self, out: &mut String, tone: Tone, text: &str) {
        if self.on && !text.is_empty() {
            out.push_str(tone.sgr());
            out.push_str(text);
            out.push_str(RESET);
        } else {
            out.push_str(text);
        }
    }

    /// The escape that starts `tone` ("" when off or no tone), for text whose padding
    /// must be computed without it.
    pub fn open(self, tone: Option<Tone>) -> &'static str {
        match tone {
            Some(t) if self.on => t.sgr(),
            _ => "",
        }
    }

    /// The escape that ends what [`Paint::open`] started.
    pub fn close(self, tone: Option<Tone>) -> &'static str {
        match tone {
            Some(_) if self.on => RESET,
            _ => "",
        }
    }

    /// Appends what `f` writes to `out`, in the color of `tone`.
    pub fn wrap(self, out: &mut String, tone: Option<Tone>, f: impl FnOnce(&mut String)) {
        match tone {
            Some(t) if self.on => {
                out.push_str(t.sgr());
                f(out);
                out.push_str(RESET);
            }
            _ => f(out),
        }
    }
}

/// The decision `--color WHEN` stands for: `always` and `never` are what they say; `auto`
/// colors a terminal unless `NO_COLOR` is set to something non-empty (no-color.org).
pub fn decide(always: Option<bool>, is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    match always {
        Some(forced) => forced,
        None => is_terminal && !matches!(no_color, Some(v) if !v.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn auto_follows_the_terminal_and_no_color() {
        assert!(decide(None, true, None));
        assert!(!decide(None, false, None));
        assert!(!decide(None, true, Some(OsStr::new("1"))));
        // NO_COLOR set but empty does not count (no-color.org).
        assert!(decide(None, true, Some(OsStr::new(""))));
        assert!(decide(Some(true), false, Some(OsStr::new("1"))));
        assert!(!decide(Some(false), true, None));
    }

    #[test]
    fn off_changes_nothing() {
        let p = Paint::default();
        assert_eq!(p.tone(Tone::Bad, "ERROR"), "ERROR");
        let mut s = String::new();
        p.push(&mut s, Tone::Warn, "x");
        p.wrap(&mut s, Some(Tone::Bad), |o| o.push('y'));
        assert_eq!(s, "xy");
        let on = Paint::new(true);
        assert_eq!(on.tone(Tone::Bad, "ERROR"), "\x1b[1;31mERROR\x1b[0m");
    }
}
