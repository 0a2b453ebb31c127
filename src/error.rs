//! The error type at the edge of the program: one line of what failed and why, an
//! optional hint line, and the exit code it maps to.

#![warn(missing_docs)]

use std::fmt;

/// Exit codes shared by every subcommand.
pub mod exit {
    /// Ran and found nothing that a rule or check rejects.
    pub const OK: i32 = 0;
    /// Findings: a `--fail-on` rule failed, netcheck found a problem.
    pub const FINDINGS: i32 = 1;
    /// Bad arguments, unreadable input, missing privilege, write failure.
    pub const ERROR: i32 = 2;
}

/// A failure to report as `rocetap: <what>: <why>` (+ `hint: ...`), exit 2.
#[derive(Debug)]
pub struct Failure {
    /// What failed and why (after `rocetap: `).
    pub what: String,
    /// How to fix it, when known.
    pub hint: Option<String>,
}

impl Failure {
    /// A failure without a hint.
    pub fn new(what: impl Into<String>) -> Self {
        Failure {
            what: what.into(),
            hint: None,
        }
    }
    /// Adds the hint line.
    pub fn hint(mut self, h: impl Into<String>) -> Self {
        self.hint = Some(h.into());
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl std::error::Error for Failure {}

impl From<crate::capture::input::InputError> for Failure {
    fn from(e: crate::capture::input::InputError) -> Self {
        let f = Failure::new(e.to_string());
        match e.hint() {
            Some(h) => f.hint(h),
            None => f,
        }
    }
}

#[cfg(feature = "live")]
impl From<crate::capture::session::SessionError> for Failure {
    fn from(e: crate::capture::session::SessionError) -> Self {
        let f = Failure::new(e.to_string());
        match e.hint() {
            Some(h) => f.hint(h),
            None => f,
        }
    }
}

impl From<crate::netcheck::Error> for Failure {
    fn from(e: crate::netcheck::Error) -> Self {
        let f = Failure::new(e.to_string());
        match e.hint() {
            Some(h) => f.hint(h),
            None => f,
        }
    }
}

impl From<crate::synth::Error> for Failure {
    fn from(e: crate::synth::Error) -> Self {
        Failure::new(e.to_string())
    }
}

#[cfg(feature = "tui")]
impl From<crate::tui::Error> for Failure {
    fn from(e: crate::tui::Error) -> Self {
        let f = Failure::new(e.to_string());
        match e.hint() {
            Some(h) => f.hint(h),
            None => f,
        }
    }
}

#[cfg(feature = "agent")]
impl From<crate::agent::Error> for Failure {
    fn from(e: crate::agent::Error) -> Self {
        let f = Failure::new(e.to_string());
        match e.hint() {
            Some(h) => f.hint(h),
            None => f,
        }
    }
}

/// True when an I/O error means the reader of our output went away (`| head`).
pub fn is_broken_pipe(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::BrokenPipe
}
