//! The values of the option groups several commands share, and their defaults, defined
//! once: the command line's defaults (`cli`) and the library's (`LiveOptions::default`,
//! the flow writer of `top`) are these constants.

#![warn(missing_docs)]

pub mod limits;

/// Bytes kept of each captured frame unless asked otherwise: whole frames.
pub const DEFAULT_SNAPLEN: u32 = 262_144;

/// `--headers-only` snaplen: Ethernet (14) + two VLAN tags (8) + IPv6 (40) + UDP (8) +
/// BTH (12) + the longest extended-header chain (XRCETH 4 + AtomicETH 28 = 32) = 114,
/// or 120 for Linux cooked v2; rounded up.
pub const HEADERS_ONLY_SNAPLEN: u32 = 128;

/// Kernel capture buffer, KiB.
pub const DEFAULT_BUFFER_KIB: u32 = 8192;

/// Batches queued between the capture threads and their consumer before live sources
/// start dropping (and counting) frames.
pub const DEFAULT_QUEUE_BATCHES: usize = 1024;

/// The UDP destination port of RoCE v2 (IANA).
pub const ROCE_PORT: u16 = 4791;

/// Where sysfs is mounted: the root under which `class/infiniband` and `class/net` are
/// read. Every command's `--sysfs-root` names this directory (see [`sysfs_dir`]).
pub const SYSFS_ROOT: &str = "/sys";

/// The sysfs directory a `--sysfs-root DIR` names. `DIR` is sysfs itself (`/sys`, holding
/// `class/`); for the invocations of `netcheck` that gave the file-system root (`/`,
/// holding `sys/class/`), a `DIR` with a `sys/class` but no `class` means `DIR/sys`.
pub fn sysfs_dir(dir: &std::path::Path) -> std::path::PathBuf {
    if !dir.join("class").is_dir() && dir.join("sys/class").is_dir() {
        dir.join("sys")
    } else {
        dir.to_path_buf()
    }
}

/// The output formats of the reporting commands (`decode`, `analyze`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// For people.
    Text,
    /// One JSON document.
    Json,
    /// CSV with a header row.
    Csv,
}
