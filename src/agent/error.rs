//! Why the agent could not start or had to stop (exit 2): its configuration, a source or
//! listener that cannot be opened, privileges, every source gone. The command layer turns
//! an [`Error`] into its one line (the `Display`) and hint ([`Error::hint`]).

use crate::capture::session::SessionError;
use crate::qptable::TableError;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the agent could not start or had to stop.
#[derive(Debug)]
pub enum Error {
    /// The `--config` file cannot be read or is malformed.
    Config {
        /// The file.
        file: String,
        /// Why, with the line when known.
        why: String,
    },
    /// `--dump-on` names no value of the report.
    DumpOnUnknown {
        /// The rule.
        rule: String,
        /// The name.
        name: String,
    },
    /// `--dump-on` without `--dump-dir`.
    DumpOnWithoutDir,
    /// The dump directory cannot be made or written.
    DumpDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// No `--interface`.
    NoSource,
    /// `--interface auto` on a node without RDMA devices.
    NoRdmaDevice {
        /// The sysfs directory looked in.
        dir: PathBuf,
    },
    /// `--qp-table live`: RDMA netlink cannot be read.
    QpTableLive(TableError),
    /// A `--qp-table` file cannot be read.
    QpTable(TableError),
    /// The memory budget does not fit.
    Budget(super::budget::TooSmall),
    /// A device could not be opened.
    Device(SessionError),
    /// The listener could not be bound.
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        error: io::Error,
    },
    /// Dropping privileges failed.
    Privileges(super::privileges::RestrictError),
    /// Installing the signal handlers failed.
    Signals(io::Error),
    /// The HTTP server's thread could not be started.
    Http(io::Error),
    /// `--lanes` with an RDMA device, read through the RDMA sniffer (no AF_PACKET socket).
    LanesRdma {
        /// The device.
        device: String,
        /// The lanes asked for.
        lanes: u16,
    },
    /// A source's thread could not be started.
    Thread(io::Error),
    /// Every source ended ("name: why" for those that said why).
    SourcesEnded(Vec<String>),
}

impl Error {
    /// How to fix it, when known.
    pub fn hint(&self) -> Option<String> {
        let h = match self {
            Error::DumpOnUnknown { .. } => {
                "use a key of \"totals\" or \"derived\" in the analyze JSON report, e.g. 'nak_psn_seq > 10'"
            }
            Error::DumpDir { .. } => "--dump-dir must be a writable directory",
            Error::NoSource => "give --interface IFACE (repeatable) or --interface auto",
            Error::NoRdmaDevice { .. } => {
                "name the netdevs or mirror ports to capture with --interface IFACE"
            }
            Error::QpTableLive(_) => "the node needs RDMA netlink (an RDMA device and its driver)",
            Error::Budget(_) => {
                "the recorders, analyzers and capture buffers of every source share it"
            }
            Error::Device(e) => return e.hint(),
            Error::Listen { .. } => "choose a free address with --listen ADDR:PORT",
            Error::Config { .. }
            | Error::DumpOnWithoutDir
            | Error::QpTable(_)
            | Error::Privileges(_)
            | Error::Signals(_)
            | Error::Http(_)
            | Error::Thread(_)
            | Error::SourcesEnded(_) => return None,
            Error::LanesRdma { .. } => "capture its netdev in lanes (-i auto does), or leave out --lanes",
        };
        Some(h.to_string())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config { file, why } => write!(f, "agent: config {file}: {why}"),
            Error::DumpOnUnknown { rule, name } => {
                write!(f, "agent: --dump-on '{rule}': unknown name '{name}'")
            }
            Error::DumpOnWithoutDir => f.write_str("agent: --dump-on needs --dump-dir DIR"),
            Error::DumpDir { dir, error } => {
                write!(f, "agent: dump directory {}: {error}", dir.display())
            }
            Error::NoSource => f.write_str("agent: no source to capture from"),
            Error::NoRdmaDevice { dir } => write!(
                f,
                "agent: --interface auto: no RDMA device in {}",
                dir.display()
            ),
            Error::QpTableLive(e) => write!(f, "agent: --qp-table live: {e}"),
            Error::QpTable(e) => write!(f, "agent: --qp-table: {e}"),
            Error::Budget(e) => write!(f, "agent: --memory-limit {e}"),
            Error::Device(e) => e.fmt(f),
            Error::Listen { addr, error } => write!(f, "agent: listening on {addr}: {error}"),
            Error::Privileges(e) => write!(f, "agent: dropping privileges: {e}"),
            Error::Signals(e) => write!(f, "agent: installing signal handlers: {e}"),
            Error::Http(e) => write!(f, "agent: starting the HTTP server: {e}"),
            Error::Thread(e) => write!(f, "agent: starting a source's thread: {e}"),
            Error::LanesRdma { device, lanes } => write!(
                f,
                "agent: --lanes {lanes}: {device} is an RDMA device, read through libpcap's RDMA \
                 sniffer, which has no AF_PACKET socket to split"
            ),
            Error::SourcesEnded(errs) => {
                f.write_str("agent: every source ended")?;
                if !errs.is_empty() {
                    write!(f, ": {}", errs.join("; "))?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::DumpDir { error: e, .. }
            | Error::Listen { error: e, .. }
            | Error::Signals(e)
            | Error::Http(e)
            | Error::Thread(e) => Some(e),
            Error::QpTableLive(e) | Error::QpTable(e) => Some(e),
            Error::Device(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SessionError> for Error {
    fn from(e: SessionError) -> Self {
        Error::Device(e)
    }
}
