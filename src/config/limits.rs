//! Every limit rocetap puts on what it reads, stated once. A reader that meets one of
//! these refuses its input with a one-line error or truncates it and counts what it left
//! out; it never grows with an input beyond them. The numbers are chosen so that no input
//! of up to 10 MB makes a command use more than 256 MiB or 10 s.

// ---- sysfs, procfs and other single-value files ----

// ---- JSON inputs (`ip -j` dumps, QP tables, kubectl output) ----

/// Bytes read of one QP table (`rdma res show qp -j`, `--qp-table FILE`, `qp-table
/// FILE`); a longer file or pipe is refused. An entry takes about 170 bytes, so this
/// holds several times [`QP_TABLE_MAX_QPS`] entries with room for long names, and bounds
/// the text held while it is parsed (a `/dev/zero` given as a table stops here).
pub const QP_TABLE_MAX_BYTES: u64 = 64 << 20;

/// QPs read of one QP table; a table with more is refused. mlx5 NICs create some
/// hundred thousand QPs at most in practice (a GPU node with NCCL over every peer uses a
/// few tens of thousands); 262,144 entries take about 90 MiB once read.
pub const QP_TABLE_MAX_QPS: usize = 1 << 18;

// ---- YAML inputs (NADs, the agent's configuration) ----

// ---- captures (pcap, pcapng) ----

/// Bytes of one capture record (a pcap record or a pcapng block, headers included): a
/// larger one is refused as corrupt, and the reader's buffer never grows beyond it.
/// libpcap's own limit is 256 KiB per packet; 64 MiB leaves room for any real block (a
/// name-resolution block of a large capture) while bounding memory.
pub const CAPTURE_RECORD_BYTES: usize = 64 << 20;

// ---- other ----
