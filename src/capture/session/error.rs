//! Why a capture session failed: opening a device, dropping privileges, the output file,
//! a device that stopped. The command layer turns a [`SessionError`] into its one line
//! (the `Display`) and hint ([`SessionError::hint`]).

use super::super::live::OpenError;
use super::super::output::{Cut, OutputError};
use super::super::writer::Format;
use super::super::{privileges, rdma};
use dissectors::LinkType;
use std::fmt;
use std::path::Path;

/// Why a capture session failed.
#[derive(Debug)]
pub enum SessionError {
    /// The capture filter does not compile on a device.
    Filter {
        /// The device.
        name: String,
        /// The filter as given.
        filter: String,
        /// libpcap's message.
        message: String,
    },
    /// Opening a device needs CAP_NET_RAW.
    Permission {
        /// The device.
        name: String,
        /// libpcap's message.
        message: String,
    },
    /// An RDMA device this libpcap cannot capture from.
    RdmaUnsupported {
        /// The device as given.
        name: String,
        /// The RDMA device.
        dev: String,
        /// Its netdevs.
        netdevs: Vec<String>,
        /// libpcap's message.
        message: String,
    },
    /// No such device.
    NoSuchDevice {
        /// The device.
        name: String,
    },
    /// A device that cannot be read in lanes (`--lanes`).
    Lanes {
        /// The device.
        name: String,
        /// Why.
        why: String,
    },
    /// Any other failure to open a device.
    Device {
        /// The device.
        name: String,
        /// libpcap's message.
        message: String,
    },
    /// Dropping privileges failed.
    Privileges(crate::capture::privileges::DropError),
    /// Devices of different link types and a pcap file.
    LinkTypes {
        /// The first device and its link type.
        first: (String, LinkType),
        /// One that differs.
        other: (String, LinkType),
    },
    /// Installing the signal handlers failed.
    Signals(std::io::Error),
    /// The output file could not be created or written.
    Output(OutputError),
    /// Writing failed once capturing had started.
    WriteFailed {
        /// What failed.
        error: OutputError,
        /// Whether the cut was noted in the file.
        kept: &'static str,
        /// Frames written in all.
        written: u64,
    },
    /// Devices that stopped delivering ("name: why" each).
    Reading(Vec<String>),
}

impl SessionError {
    /// A write error after capturing started, in a file of `format`.
    pub(super) fn write_failed(error: OutputError, format: Format, written: u64) -> Self {
        let kept = match error.cut {
            Some(Cut { noted: true, .. }) => {
                "; it ends with a comment that says where and why it was cut"
            }
            Some(_) if format == Format::PcapNg => "; there was no room left to note the cut in it",
            _ => "",
        };
        SessionError::WriteFailed {
            error,
            kept,
            written,
        }
    }

    /// How to fix it, when known.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            SessionError::Filter { .. } => {
                "the filter is a BPF expression as tcpdump takes it, e.g. 'udp dst port 4791'"
                    .to_string()
            }
            SessionError::Permission { .. } => privileges::FIX_HINT.to_string(),
            SessionError::RdmaUnsupported { dev, netdevs, .. } => {
                let nd = if netdevs.is_empty() {
                    String::new()
                } else {
                    format!(
                        "{dev} is the RDMA device of netdev {} (offloaded RoCE bypasses the kernel, so -i {} sees little of it); ",
                        netdevs.join(", "),
                        netdevs[0]
                    )
                };
                format!(
                    "{nd}use a libpcap built with RDMA support (Fedora/RHEL, or build libpcap with rdma-core), the mellanox/tcpdump-rdma container, or: ibdump -d {dev} -w - | rocetap analyze -r -"
                )
            }
            SessionError::NoSuchDevice { .. } => {
                "rocetap interfaces lists the devices to capture from".to_string()
            }
            SessionError::Lanes { .. } => {
                "lanes split a network interface read through an AF_PACKET socket (an Ethernet \
                 netdev, a VF, a mirror port); leave out --lanes for other devices"
                    .to_string()
            }
            SessionError::LinkTypes { .. } => {
                "write pcapng (a .pcapng file name or --format pcapng)".to_string()
            }
            SessionError::Output(e) => return output_hint(e).map(str::to_string),
            SessionError::WriteFailed { kept, written, .. } => format!(
                "the file is valid up to the last complete frame{kept}; {written} frames were written in all"
            ),
            SessionError::Device { .. }
            | SessionError::Privileges(_)
            | SessionError::Signals(_)
            | SessionError::Reading(_) => return None,
        })
    }
}

/// The hint for an output file that could not be written.
fn output_hint(e: &OutputError) -> Option<&'static str> {
    if e.exists {
        Some("add --force to replace it")
    } else if e.error.kind() == std::io::ErrorKind::PermissionDenied {
        Some(
            "rocetap drops root (to SUDO_UID under sudo) before creating files: \
             the directory must be writable by that user",
        )
    } else {
        None
    }
}

/// The one line for an output file that could not be written.
fn output_line(f: &mut fmt::Formatter<'_>, e: &OutputError) -> fmt::Result {
    let name = e.path.display();
    if e.exists {
        write!(f, "writing {name}: the file exists")
    } else {
        write!(f, "writing {name}: {}", e.error)
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Filter {
                name,
                filter,
                message,
            } => write!(f, "capture filter {filter:?} on {name}: {message}"),
            SessionError::Permission { name, message } => write!(
                f,
                "capturing on {name}: permission denied: capturing needs the CAP_NET_RAW capability ({message})"
            ),
            SessionError::RdmaUnsupported { name, message, .. } => write!(
                f,
                "capturing on {name}: {name} is an RDMA device, and this libpcap cannot capture from RDMA devices: it was built without RDMA sniffer support, as Debian and Ubuntu build it (libpcap: {message})"
            ),
            SessionError::NoSuchDevice { name } => {
                write!(f, "capturing on {name}: no such device")
            }
            SessionError::Device { name, message } => write!(f, "capturing on {name}: {message}"),
            SessionError::Lanes { name, why } => {
                write!(f, "capturing on {name} in lanes: {why}")
            }
            SessionError::Privileges(e) => write!(f, "capture: dropping privileges: {e}"),
            SessionError::LinkTypes { first, other } => write!(
                f,
                "capture: {} ({:?}) and {} ({:?}) have different link types, which pcap cannot hold",
                first.0, first.1, other.0, other.1
            ),
            SessionError::Signals(e) => write!(f, "capture: installing signal handlers: {e}"),
            SessionError::Output(e) | SessionError::WriteFailed { error: e, .. } => {
                output_line(f, e)
            }
            SessionError::Reading(errors) => {
                write!(f, "capture: reading from {}", errors.join("; "))
            }
        }
    }
}

impl std::error::Error for SessionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SessionError::Signals(e) => Some(e),
            SessionError::Output(e) | SessionError::WriteFailed { error: e, .. } => Some(&e.error),
            _ => None,
        }
    }
}

impl From<OutputError> for SessionError {
    fn from(e: OutputError) -> Self {
        SessionError::Output(e)
    }
}

/// Turns a failure to open a device into the error that says why and what to do.
pub fn explain(e: OpenError, sysfs_root: &Path) -> SessionError {
    match e {
        OpenError::Filter {
            name,
            filter,
            message,
        } => SessionError::Filter {
            name,
            filter,
            message,
        },
        OpenError::Lanes { name, why } => SessionError::Lanes { name, why },
        OpenError::Device {
            name,
            message,
            permission,
            no_such_device,
        } => {
            if permission || (privileges::lacks_net_raw() && message.contains("not permitted")) {
                return SessionError::Permission { name, message };
            }
            if let Some((dev, _port)) = rdma::parse_name(sysfs_root, &name) {
                let netdevs = rdma::device(sysfs_root, &dev)
                    .map(|d| d.netdevs)
                    .unwrap_or_default();
                return SessionError::RdmaUnsupported {
                    name,
                    dev,
                    netdevs,
                    message,
                };
            }
            if no_such_device {
                return SessionError::NoSuchDevice { name };
            }
            SessionError::Device { name, message }
        }
    }
}
