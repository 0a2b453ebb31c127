//! Every limit rocetap puts on what it reads, stated once. A reader that meets one of
//! these refuses its input with a one-line error or truncates it and counts what it left
//! out; it never grows with an input beyond them. The numbers are chosen so that no input
//! of up to 10 MB makes a command use more than 256 MiB or 10 s.

// ---- sysfs, procfs and other single-value files ----

// ---- JSON inputs (`ip -j` dumps, QP tables, kubectl output) ----

// ---- YAML inputs (NADs, the agent's configuration) ----

// ---- captures (pcap, pcapng) ----

// ---- other ----
