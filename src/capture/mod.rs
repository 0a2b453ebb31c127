//! Frame sources and sinks: live libpcap devices and files behind one threaded source
//! API, reading pcap / pcapng files and streams, writing pcap / pcapng with
//! rotation. Everything that touches libpcap or capture files lives here; the analysis
//! and report code only ever sees [`Frame`]s.

pub mod annotate;
pub mod file;
// The reusable source API (files, stdin, merged devices) is also for analyze/top -i.
#[allow(dead_code)]
pub mod live;
pub mod output;
pub mod privileges;
pub mod rdma;
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
    /// Which of several merged sources the frame came from (0 for the first / only one).
    pub source: u32,
}
