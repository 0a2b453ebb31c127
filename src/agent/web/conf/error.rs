//! Why a web config file (`--web-config-file`) was refused: one line naming the file and,
//! where there is one, the line of the file.

use crate::sysfile::FileError;
use crate::yaml::YamlError;
use std::fmt;
use std::path::PathBuf;

/// Why a web config file was refused.
#[derive(Debug)]
pub enum ConfError {
    /// The file (or a PEM file it names) could not be read, or is too long.
    Read {
        /// Why.
        error: FileError,
        /// What the file is, for the limit ("a PEM file").
        what: &'static str,
        /// Its limit in bytes.
        max: u64,
    },
    /// Not YAML.
    NotYaml(YamlError),
    /// More than one YAML document.
    ManyDocuments,
    /// Something wrong at a line of the file.
    At {
        /// The line.
        line: usize,
        /// What.
        why: Why,
    },
    /// TLS settings that cannot be served (with their line).
    Tls(super::super::tls::TlsError),
    /// One of the above, in the web config file `path`.
    In {
        /// The web config file.
        path: PathBuf,
        /// What is wrong in it.
        error: Box<ConfError>,
    },
}

/// What is wrong at a line of a web config file.
#[derive(Debug)]
pub enum Why {
    /// A control character: not a text file.
    ControlChar,
    /// This section must be a mapping.
    NotAMapping(&'static str),
    /// The key's value must be a non-empty string.
    NotAString(String),
    /// The key's value must be a list.
    NotAList(String),
    /// The key's value must be true or false.
    NotABool(String),
    /// An unknown key, and the known ones.
    UnknownKey {
        /// The key.
        key: String,
        /// The keys of this section.
        known: &'static [&'static str],
    },
    /// A user whose hash cannot be used.
    User {
        /// The user.
        user: String,
        /// Why.
        why: crate::agent::web::auth::UserError,
    },
    /// A header that cannot be set, and the ones that can.
    HeaderNotAllowed {
        /// The header.
        name: String,
        /// The allowed ones.
        allowed: &'static [&'static str],
    },
    /// A header value with a control character.
    HeaderControl(&'static str),
    /// A PEM file that could not be read.
    Pem {
        /// The key naming it.
        key: String,
        /// Why.
        error: Box<ConfError>,
    },
}

fn safe(s: &str) -> String {
    crate::report::safe::term(s).to_string()
}

impl fmt::Display for ConfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfError::Read { error, what, max } if error.too_long() => {
                write!(f, "{error}; {what} is at most {} KiB", max >> 10)
            }
            ConfError::Read { error, .. } => write!(f, "{error}"),
            ConfError::NotYaml(e) => write!(f, "not YAML: {e}"),
            ConfError::ManyDocuments => f.write_str("more than one YAML document"),
            ConfError::At { line, why } => write!(f, "line {line}: {why}"),
            ConfError::Tls(e) => write!(f, "{e}"),
            ConfError::In { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::ControlChar => f.write_str("a control character (not a text file?)"),
            Why::NotAMapping(what) => write!(f, "{what} must be a mapping"),
            Why::NotAString(key) => write!(f, "'{}' must be a non-empty string", safe(key)),
            Why::NotAList(key) => write!(f, "'{key}' must be a list"),
            Why::NotABool(key) => write!(f, "'{key}' takes true or false"),
            Why::UnknownKey { key, known } => write!(
                f,
                "unknown key '{}' (known: {})",
                safe(key),
                known.join(", ")
            ),
            Why::User { user, why } => write!(f, "user '{}': {why}", safe(user)),
            Why::HeaderNotAllowed { name, allowed } => write!(
                f,
                "header '{}' cannot be set (allowed: {})",
                safe(name),
                allowed.join(", ")
            ),
            Why::HeaderControl(name) => write!(f, "header '{name}': a control character"),
            Why::Pem { key, error } => write!(f, "'{key}': {error}"),
        }
    }
}

impl std::error::Error for ConfError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfError::In { error, .. } => Some(error.as_ref()),
            ConfError::Tls(e) => Some(e),
            _ => None,
        }
    }
}
