//! Frame sources and sinks: reading pcap / pcapng files and streams, writing pcap /
//! pcapng. Everything that touches capture files lives here; the analysis and report
//! code only ever sees [`Frame`]s.

pub mod file;
pub mod merge;
#[allow(dead_code)] // used by synth and capture
pub mod writer;

use dissectors::LinkType;

/// One captured frame, borrowed from the reader's buffer for the duration of a callback.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    /// Capture timestamp, nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    pub link: LinkType,
    pub data: &'a [u8],
    /// Length on the wire.
    pub orig_len: u32,
    /// Interface index within the source (pcapng interface id, 0 for pcap).
    pub iface: u32,
}
