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

// JSON depth: serde_json refuses a document nested deeper than 128 arrays/objects (its
// recursion limit, left on), so no JSON input can exhaust the stack.

/// Bytes of one file of a `netcheck --from DIR` state (`addr.json`, `route.json`,
/// `rule.json`, `sysctl.json`); a larger file is refused before it is read. A full
/// Internet table printed by `ip -j route` is about 100 MB, a pod's or a node's a few KB;
/// 16 MiB keeps any accepted state under 256 MiB and a few seconds.
pub const JSON_FILE_BYTES: usize = 16 << 20;

/// Links in one `ip -j addr` dump (`netcheck --from`): far above any node's devices.
pub const NETCHECK_LINKS: usize = 65_536;

/// Addresses in one `ip -j addr` dump, all links together.
pub const NETCHECK_ADDRESSES: usize = 65_536;

/// Routes in one `ip -j route show table all` dump. A node running BGP to its top-of-rack
/// switch holds hundreds to thousands; 100,000 bounds the state and each route lookup
/// (which scans the routes: the checks' lookups are bounded by `REPLY_PATH_CHECKS` and
/// `NODE_SOURCE_LOOKUPS`) while leaving room for large tables.
pub const NETCHECK_ROUTES: usize = 100_000;

/// Policy rules in one `ip -j rule` dump (priorities are 32 bits, but `sbr` adds one rule per
/// pod interface: a few hundred on a busy node).
pub const NETCHECK_RULES: usize = 65_536;

/// Entries of one `sysctl.json` (`net.ipv4.conf.DEV.KEY`: about ten per interface).
pub const NETCHECK_SYSCTLS: usize = 1 << 20;

// ---- YAML inputs (NADs, the agent's configuration) ----

// ---- captures (pcap, pcapng) ----

// ---- other ----

/// Reply paths `netcheck` checks in one namespace: (local address, another interface's
/// shared subnet) pairs, a few route lookups each (each scans the routes). A pod has a
/// few interfaces (8 make 56 pairs), a node's veths carry /32s (none); past this the
/// check stops and says how many pairs it left out (finding `reply-path-truncated`).
pub const REPLY_PATH_CHECKS: usize = 64;

/// Routes through an address-less device (Calico's `cali*`: one per pod on a node, 110
/// by Kubernetes' default) whose borrowed source `netcheck` looks up, one route lookup
/// each (a scan of the routes); past this the check stops and says how many it left out
/// (finding `node-source-truncated`).
pub const NODE_SOURCE_LOOKUPS: usize = 256;
