//! Why a saved namespace state (`netcheck --from DIR`) was refused: the directory, the
//! file, and what is wrong in it.

use crate::sysfile::FileError;
use std::fmt;
use std::path::PathBuf;

/// Why a saved state, or one of its files, was refused.
#[derive(Debug)]
pub enum JsonError {
    /// The state's directory is no directory.
    NotADirectory(PathBuf),
    /// A required file is missing.
    Missing {
        /// The directory.
        dir: PathBuf,
        /// The file.
        name: &'static str,
    },
    /// A file that exists but cannot be read (or is too long).
    Read(FileError),
    /// One of the errors below, in the file `dir/name`.
    In {
        /// The directory.
        dir: PathBuf,
        /// The file.
        name: &'static str,
        /// What is wrong in it.
        error: Box<JsonError>,
    },
    /// Not JSON.
    NotJson(serde_json::Error),
    /// Not a JSON array of these.
    ExpectedArray(&'static str),
    /// `sysctl.json` is not a JSON object.
    ExpectedSysctls,
    /// More items than netcheck reads from one file.
    TooMany {
        /// The limit.
        max: usize,
        /// What the items are.
        what: &'static str,
    },
    /// A link without `ifname`.
    NoIfname,
    /// A route without `dst`.
    NoDst,
    /// A route `dst` that is no prefix.
    BadDst(String),
    /// A table name that is no number or known name.
    UnknownTable(String),
    /// A `table` that is neither number nor string.
    BadTable,
    /// A rule's `src` or `dst` that is no address.
    BadAddress {
        /// `src` or `dst`.
        key: String,
        /// The value.
        value: String,
    },
    /// A rule action netcheck does not know.
    UnknownAction(String),
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::NotADirectory(d) => write!(f, "{}: not a directory", d.display()),
            JsonError::Missing { dir, name } => write!(f, "{}: no {name}", dir.display()),
            JsonError::Read(e) => write!(f, "{e}"),
            JsonError::In { dir, name, error } => {
                write!(f, "{}/{name}: {error}", dir.display())
            }
            JsonError::NotJson(e) => write!(f, "not JSON: {e}"),
            JsonError::ExpectedArray(what) => write!(f, "expected a JSON array of {what}"),
            JsonError::ExpectedSysctls => f.write_str("expected a JSON object of sysctls"),
            JsonError::TooMany { max, what } => {
                write!(f, "more than {max} {what} (netcheck's limit for one file)")
            }
            JsonError::NoIfname => f.write_str("a link without ifname"),
            JsonError::NoDst => f.write_str("a route without dst"),
            JsonError::BadDst(d) => write!(f, "bad dst {d:?}"),
            JsonError::UnknownTable(t) => write!(f, "unknown table {t:?}"),
            JsonError::BadTable => f.write_str("bad table"),
            JsonError::BadAddress { key, value } => write!(f, "bad {key} {value:?}"),
            JsonError::UnknownAction(x) => write!(f, "unknown rule action {x:?}"),
        }
    }
}

impl std::error::Error for JsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JsonError::Read(e) => Some(e),
            JsonError::In { error, .. } => Some(error.as_ref()),
            JsonError::NotJson(e) => Some(e),
            _ => None,
        }
    }
}
