//! Why `top` could not run (exit 2): a device or file that cannot be read, no terminal,
//! a thread or signal handler that could not be set up, a terminal that failed. The
//! command layer turns an [`Error`] into its one line (the `Display`) and hint
//! ([`Error::hint`]).

use crate::capture::input::InputError;
use crate::capture::session::SessionError;
use std::fmt;
use std::io;

/// Why `top` could not run.
#[derive(Debug)]
pub enum Error {
    /// A device could not be opened.
    Device(SessionError),
    /// A file could not be read.
    Input(InputError),
    /// Dropping privileges failed.
    Privileges(crate::capture::privileges::DropError),
    /// Standard input or output is not a terminal.
    NotATerminal,
    /// A thread could not be started.
    Thread {
        /// Which one, e.g. "capture thread".
        what: &'static str,
        /// Why.
        error: io::Error,
    },
    /// Installing the signal handlers failed.
    Signals(io::Error),
    /// The terminal could not be taken over.
    OpenTerminal(io::Error),
    /// Drawing or reading keys failed.
    Terminal(io::Error),
    /// The feeder thread ended without saying why.
    FeederStopped,
}

impl Error {
    /// How to fix it, when known.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Device(e) => e.hint(),
            Error::Input(e) => e.hint().map(str::to_string),
            Error::NotATerminal => {
                Some("for a report without a terminal use rocetap analyze".to_string())
            }
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Device(e) => e.fmt(f),
            Error::Input(e) => e.fmt(f),
            Error::Privileges(e) => write!(f, "top: dropping privileges: {e}"),
            Error::NotATerminal => f.write_str("top: standard input and output must be a terminal"),
            Error::Thread { what, error } => write!(f, "top: starting the {what}: {error}"),
            Error::Signals(e) => write!(f, "top: installing signal handlers: {e}"),
            Error::OpenTerminal(e) => write!(f, "top: opening the terminal: {e}"),
            Error::Terminal(e) => write!(f, "top: terminal: {e}"),
            Error::FeederStopped => f.write_str("top: the feeder thread stopped unexpectedly"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Device(e) => Some(e),
            Error::Input(e) => Some(e),
            Error::Thread { error: e, .. }
            | Error::Signals(e)
            | Error::OpenTerminal(e)
            | Error::Terminal(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SessionError> for Error {
    fn from(e: SessionError) -> Self {
        Error::Device(e)
    }
}

impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        Error::Input(e)
    }
}
