//! Why `synth` could not write a scenario (exit 2): an unknown scenario, options out of
//! range, an output file that exists or cannot be written. The command layer turns an
//! [`Error`] into its one line (the `Display`).

use std::fmt;
use std::path::PathBuf;

/// Why `synth` could not write a scenario.
#[derive(Debug)]
pub enum Error {
    /// `--list` could not be written.
    List(std::io::Error),
    /// No scenario of that name.
    UnknownScenario {
        /// The name given.
        name: String,
        /// How many scenarios there are.
        count: usize,
    },
    /// No `-o FILE`.
    NoOutput,
    /// `--snaplen` below the headers the truth counts.
    Snaplen {
        /// The value given.
        given: u32,
        /// The smallest allowed.
        min: u32,
    },
    /// A scenario option that does not fit the scenario or is out of range.
    Knobs(KnobError),
    /// The capture or truth file exists and `--force` was not given.
    Exists(PathBuf),
    /// Writing the capture or truth file failed.
    Write {
        /// The file.
        name: String,
        /// Why.
        error: std::io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::List(e) => write!(f, "writing output: {e}"),
            Error::UnknownScenario { name, count } => write!(
                f,
                "synth: unknown scenario '{name}' (rocetap synth --list shows all {count})"
            ),
            Error::NoOutput => f.write_str("synth: no output file (give -o FILE)"),
            Error::Snaplen { given, min } => write!(
                f,
                "synth: --snaplen {given} is below {min}, which would hide the headers the truth file counts"
            ),
            Error::Knobs(e) => write!(f, "synth: {e}"),
            Error::Exists(p) => write!(
                f,
                "synth: {} already exists (use --force to overwrite)",
                p.display()
            ),
            Error::Write { name, error } => write!(f, "synth: writing {name}: {error}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::List(e) | Error::Write { error: e, .. } => Some(e),
            Error::Knobs(e) => Some(e),
            _ => None,
        }
    }
}

/// A scenario option (`--qps`, `--peers`, `--loss`, `--msg-size`) that does not fit the
/// scenario or is out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnobError {
    /// Given for a scenario other than many-qp (its name).
    NotManyQp(&'static str),
    /// `--qps` out of range.
    Qps(u32),
    /// `--peers` out of range for these `--qps`.
    Peers {
        /// `--peers`.
        peers: u32,
        /// `--qps`.
        qps: u32,
    },
    /// `--loss` above 100 per mille.
    Loss(u32),
    /// `--loss` with single-packet messages.
    LossNeedsBigMessages,
    /// `--msg-size` out of range.
    MsgSize(u32),
}

impl fmt::Display for KnobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use super::manyqp::{MAX_PEERS, MAX_QPS};
        match self {
            KnobError::NotManyQp(name) => write!(
                f,
                "--qps, --peers, --loss and --msg-size are options of many-qp, not of {name}"
            ),
            KnobError::Qps(qps) => write!(f, "--qps {qps}: give 1 to {MAX_QPS}"),
            KnobError::Peers { peers, qps } => write!(
                f,
                "--peers {peers}: give 1 to --qps ({qps}), at most {MAX_PEERS}"
            ),
            KnobError::Loss(l) => write!(f, "--loss {l}: at most 100 per mille"),
            KnobError::LossNeedsBigMessages => f.write_str(
                "--loss needs multi-packet messages: give --msg-size above 4096 (the PMTU)",
            ),
            KnobError::MsgSize(m) => write!(f, "--msg-size {m}: give 1 to 1048576 bytes"),
        }
    }
}

impl std::error::Error for KnobError {}
