//! Every limit rocetap puts on what it reads, stated once. A reader that meets one of
//! these refuses its input with a one-line error or truncates it and counts what it left
//! out; it never grows with an input beyond them. The numbers are chosen so that no input
//! of up to 10 MB makes a command use more than 256 MiB or 10 s.

// ---- sysfs, procfs and other single-value files ----

/// Bytes read from one sysfs or procfs file (`crate::sysfile::value`: counters, GIDs,
/// sysctls, `/proc/PID/comm`, a pod's `cgroup` and `hostname`); a longer file is an error
/// naming it. sysfs hands out at most one 4 KiB page per attribute and these procfs files
/// are a few hundred bytes; 64 KiB leaves room and keeps a 1 GiB or endless file cheap.
pub const SYSFS_FILE_BYTES: usize = 64 * 1024;

/// Bytes read from one recorded tool output of `netcheck --qos-from` (`IF.mlnx_qos`,
/// `IF.dcb-app`, ...): these print a few KiB per interface; 1 MiB is far above any.
pub const TOOL_OUTPUT_BYTES: usize = 1 << 20;

// ---- JSON inputs (`ip -j` dumps, QP tables, kubectl output) ----

// ---- YAML inputs (NADs, the agent's configuration) ----

// ---- captures (pcap, pcapng) ----

// ---- other ----
