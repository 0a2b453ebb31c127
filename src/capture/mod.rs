//! Frame sources and sinks: live libpcap devices on their own threads ([`live`]), pcap /
//! pcapng files and streams ([`file`](mod@file), opened by name in [`input`]), the one merger that
//! puts several sources back into timestamp order ([`merge`]), writing pcap / pcapng with
//! rotation ([`writer`], [`output`]) and per-packet annotations ([`annotate`]), and the
//! headless capture session ([`session`], with its counters in [`stats`]). Everything that
//! touches libpcap or capture files lives here; the analysis and report code only ever
//! sees [`Frame`]s.

#![warn(missing_docs)]

pub mod annotate;
pub mod file;
pub mod input;
#[cfg(feature = "live")]
pub mod live;
pub mod merge;
pub mod output;
pub mod privileges;
pub mod rdma;
#[cfg(feature = "live")]
pub mod session;
#[cfg(feature = "live")]
pub mod stats;
pub mod writer;

use dissectors::LinkType;

/// One captured frame, borrowed from the reader's buffer for the duration of a callback.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    /// Capture timestamp, nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Link layer of `data`.
    pub link: LinkType,
    /// The captured bytes (at most the snaplen).
    pub data: &'a [u8],
    /// Length on the wire.
    pub orig_len: u32,
    /// Interface index within the source (pcapng interface id, 0 for pcap).
    pub iface: u32,
    /// Which of several merged sources the frame came from (0 for the first / only one).
    pub source: u32,
}

impl Frame<'_> {
    /// The frame's interface across every source of a run.
    #[inline]
    pub fn iface_id(&self) -> IfaceId {
        IfaceId::new(self.source, self.iface)
    }
}

/// An interface across the several sources of one run: source `s` (a file, a device)
/// and its interface `i` (pcapng interface id) are `s * 65536 + i`. This is the id the
/// analyzer keys interfaces by and reports show; it is packed here and nowhere else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IfaceId(u32);

impl IfaceId {
    /// Interface `iface` of source `source` (only the low 16 bits of each count).
    #[inline]
    pub const fn new(source: u32, iface: u32) -> Self {
        IfaceId((source << 16) | (iface & 0xffff))
    }

    /// The first interface of source `source` (what names a whole file or device).
    #[inline]
    pub const fn source(source: u32) -> Self {
        Self::new(source, 0)
    }

    /// The packed value, as the analyzer and the reports use it.
    #[inline]
    pub const fn get(self) -> u32 {
        self.0
    }
}
