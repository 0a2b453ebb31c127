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

/// Bytes read of one QP table (`rdma res show qp -j`, `--qp-table FILE`, `qp-table
/// FILE`); a longer file or pipe is refused. An entry takes about 170 bytes, so this
/// holds several times [`QP_TABLE_MAX_QPS`] entries with room for long names, and bounds
/// the text held while it is parsed (a `/dev/zero` given as a table stops here).
pub const QP_TABLE_MAX_BYTES: u64 = 64 << 20;

/// QPs read of one QP table; a table with more is refused. mlx5 NICs create some
/// hundred thousand QPs at most in practice (a GPU node with NCCL over every peer uses a
/// few tens of thousands); 262,144 entries take about 90 MiB once read.
pub const QP_TABLE_MAX_QPS: usize = 1 << 18;

/// The largest CNI configuration a NAD's `spec.config` may hold, in bytes (256 KiB): a
/// chain of a dozen plugins is 2–4 KiB; the text is parsed twice (strict JSON, then with
/// positions), so a larger one is refused with a finding instead.
pub const CNI_CONFIG_MAX_BYTES: usize = 256 << 10;

/// The most plugins a NAD's `spec.config` chain may hold (64): real chains have two to
/// five (main plugin, sbr, tuning, ...); a longer list is a mistake or hostile, and is a
/// finding that says so.
pub const CNI_MAX_PLUGINS: usize = 64;

// ---- YAML inputs (NADs, the agent's configuration) ----

/// The most text the YAML reader (`crate::yaml`) takes in one input, in bytes (64 MiB):
/// `kubectl get net-attach-def -A -o yaml` of a large cluster fits many times over, and a
/// larger file is refused before it is read into memory (the NAD lint's files and standard
/// input are read up to this many bytes and no further).
pub const YAML_MAX_BYTES: usize = 64 << 20;

/// The most YAML text that is not JSON the reader takes (1 MiB, ~1,000 NADs as
/// `kubectl ... -o yaml` writes them). yaml-rust2 holds every token of a flow collection
/// that starts a document or a block entry (`- [x, x, ...]`) until it closes, about 120
/// bytes of memory per byte of input: 1 MiB stays near 125 MiB where 10 MB took 1.2 GB.
/// JSON streams through the scanner (see `crate::yaml`) and is read up to
/// [`YAML_MAX_BYTES`]; the error says to give a larger input as JSON.
pub const YAML_TEXT_MAX_BYTES: usize = 1 << 20;

/// The deepest nesting of YAML mappings and sequences (64): Kubernetes objects nest a
/// dozen levels; deeper input is an error, not a stack overflow.
pub const YAML_MAX_DEPTH: usize = 64;

/// The most values one YAML input may hold, aliases counted with the size of what they
/// expand to (500,000): a NAD is a dozen values, so 3,000 of them are 40,000, and 10,000
/// with their managedFields about 300,000. A 10 MB block list of one-letter items is
/// refused at this limit at 72 MiB RSS (at 1,000,000 it was 116 MiB).
pub const YAML_MAX_VALUES: usize = 500_000;

/// The most values YAML anchors and aliases may copy in one input, each anchor and alias
/// counted with the size of what it names (100,000): anchors and merge keys in real
/// manifests copy a few hundred; an alias bomb, or anchors nested over one big value, is
/// refused here after ~20 MiB of copies.
pub const YAML_MAX_ALIAS_VALUES: usize = 100_000;

/// The largest agent `--config` file (1 MiB): it holds a few dozen options.
pub const AGENT_CONFIG_MAX_BYTES: u64 = 1 << 20;

/// The largest `--web-config-file` (1 MiB): a TLS section and a few hundred users.
pub const WEB_CONFIG_MAX_BYTES: u64 = 1 << 20;

/// The largest PEM file a web config names (certificate, key, client CA; 1 MiB): a chain
/// is a few KiB, a CA bundle of every public root about 200 KiB.
pub const WEB_PEM_MAX_BYTES: u64 = 1 << 20;

// ---- captures (pcap, pcapng) ----

/// Bytes of one capture record (a pcap record or a pcapng block, headers included): a
/// larger one is refused as corrupt, and the reader's buffer never grows beyond it.
/// libpcap's own limit is 256 KiB per packet; 64 MiB leaves room for any real block (a
/// name-resolution block of a large capture) while bounding memory.
pub const CAPTURE_RECORD_BYTES: usize = 64 << 20;

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

// ---- NCCL logs (`rocetap nccl`) ----

/// Bytes of one NCCL log line kept (NCCL's own lines are at most 1 KiB; a `kubectl`
/// prefix adds a hundred): the rest of a longer line is skipped, the line counted as
/// overlong.
pub const NCCL_LINE_BYTES: usize = 16 << 10;

/// NCCL processes (host, pid) kept from the logs: 64 per node of a 1,024-node job.
pub const NCCL_PROCS: usize = 65_536;

/// Completion errors kept from the logs (each is triaged and joined); the rest are
/// counted.
pub const NCCL_ERRORS: usize = 10_000;

/// Environment settings, QPs and channel lines kept per process; the rest are counted.
pub const NCCL_PER_PROC: usize = 256;

/// Bytes of a node agent's `/report` (or a saved one) `rocetap nccl --agent` reads: the
/// agent's own report budget is far below.
pub const NCCL_AGENT_REPORT_BYTES: usize = 256 << 20;

/// Settings, QPs, channel lines and HCA events kept over all processes of `rocetap
/// nccl`'s logs (each at most a few hundred bytes: about 250 MB at worst); past it they
/// are counted per process. A 1,024-node job with 64 ranks per node logs about 20 each.
pub const NCCL_ITEMS: usize = 1 << 20;

// ---- the agent's topology file (`--topology`) ----

/// The largest `--topology` file (4 MiB; YAML that is not JSON is held to the YAML
/// reader's own smaller limit): 16,384 prefixes with four names each fit in about 1.5 MiB.
pub const TOPOLOGY_MAX_BYTES: u64 = 4 << 20;

/// Prefixes in one topology file (16,384): a fleet of 4,096 nodes with four RDMA
/// addresses each. Every new peer is looked up once (not per packet or scrape).
pub const TOPOLOGY_MAX_PREFIXES: usize = 16_384;

/// Characters of one name (node, ToR, rail, switch) of a topology file: a label value.
pub const TOPOLOGY_MAX_NAME: usize = 128;
