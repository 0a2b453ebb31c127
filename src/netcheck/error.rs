//! Why netcheck could not run (exit 2): an option combination that cannot work, an input
//! that cannot be read, a namespace whose state cannot be loaded, output that cannot be
//! written. The command layer turns an [`Error`] into its one line (the `Display`) and
//! hint ([`Error::hint`]).

use super::nad::NadError;
use super::netlink::LiveError;
use super::sysfs::SysfsError;
use crate::capture::input::InputError;
use std::fmt;
use std::path::PathBuf;

/// Why netcheck could not run.
#[derive(Debug)]
pub enum Error {
    /// `--from` given more than once outside `--nad`.
    FromTwice,
    /// `--sysfs-root` without a namespace state.
    SysfsWithoutState,
    /// An option naming a directory that is not one.
    NotADirectory {
        /// The option, e.g. `--qos-from`.
        flag: &'static str,
        /// The path given.
        dir: PathBuf,
        /// What to give instead.
        hint: &'static str,
    },
    /// `--qos-from` or `--peer-sysfs-root` offline without `--sysfs-root`.
    NeedsPorts {
        /// The option.
        flag: &'static str,
    },
    /// A `--capture` input could not be read.
    Capture(InputError),
    /// `--nad`: an input could not be read or an option is malformed.
    Nad(NadError),
    /// A live namespace's state could not be loaded.
    Live(LiveError),
    /// `--from DIR`'s dumps could not be read.
    State(super::load_json::JsonError),
    /// A `--route-get` question that does not parse.
    RouteGet {
        /// The question as given.
        spec: String,
        /// Why it does not parse.
        error: super::lookup::QueryError,
    },
    /// The RDMA ports in sysfs could not be read.
    Sysfs(SysfsError),
    /// A `--peer-sysfs-root`'s ports could not be read.
    PeerSysfs(SysfsError),
    /// A sysfs or DCB file that exists could not be read while checking.
    Check(SysfsError),
    /// The JSON report could not be made.
    Json(serde_json::Error),
    /// The report could not be written.
    Write(std::io::Error),
}

impl Error {
    /// How to fix it, when known.
    pub fn hint(&self) -> Option<&str> {
        Some(match self {
            Error::FromTwice => {
                "several --from DIR are node facts for --nad; check one namespace's state at a time"
            }
            Error::SysfsWithoutState => {
                "add --netns NAME, --pid PID or --from DIR next to --capture"
            }
            Error::NotADirectory { hint, .. } => hint,
            Error::NeedsPorts { .. } => "offline, add --sysfs-root DIR (this host's sysfs)",
            Error::Capture(e) => return e.hint(),
            Error::Nad(e) => return e.hint.as_deref(),
            Error::Live(e) => return e.hint.as_deref(),
            Error::State(_) => {
                "--from DIR needs addr.json, route.json (and rule.json, sysctl.json) as printed by \
`ip -j addr`, `ip -j route show table all`, `ip -j rule`"
            }
            Error::RouteGet { .. } => {
                "use the words of `ip route get`: DST [from SRC] [iif DEV] [oif DEV] [mark N]"
            }
            Error::Sysfs(_)
            | Error::PeerSysfs(_)
            | Error::Check(_)
            | Error::Json(_)
            | Error::Write(_) => return None,
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::FromTwice => f.write_str("netcheck: --from can be given once here"),
            Error::SysfsWithoutState => {
                f.write_str("netcheck: --sysfs-root needs a namespace state to check against")
            }
            Error::NotADirectory { flag, dir, .. } => {
                write!(f, "netcheck: {flag} {}: not a directory", dir.display())
            }
            Error::NeedsPorts { flag } => {
                write!(
                    f,
                    "netcheck: {flag} needs the host's RDMA ports to join with"
                )
            }
            Error::Capture(e) => write!(f, "netcheck: --capture: {e}"),
            Error::Nad(e) => f.write_str(&e.what),
            Error::Live(e) => write!(f, "netcheck: {}", e.what),
            Error::State(e) => write!(f, "netcheck: reading state: {e}"),
            Error::RouteGet { spec, error } => write!(f, "netcheck: --route-get {spec:?}: {error}"),
            Error::Sysfs(e) => write!(f, "netcheck: reading sysfs: {e}"),
            Error::PeerSysfs(e) => write!(f, "netcheck: --peer-sysfs-root: {e}"),
            Error::Check(e) => write!(f, "netcheck: {e}"),
            Error::Json(e) => write!(f, "netcheck: {e}"),
            Error::Write(e) => write!(f, "writing output: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Capture(e) => Some(e),
            Error::Json(e) => Some(e),
            Error::Sysfs(e) | Error::PeerSysfs(e) | Error::Check(e) => Some(e),
            Error::State(e) => Some(e),
            Error::Write(e) => Some(e),
            _ => None,
        }
    }
}
