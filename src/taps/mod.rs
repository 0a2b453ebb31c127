//! Several taps, one story: captures of the same traffic taken at several points of the
//! path (both ends of a connection, a mirror port, an agent's dumps from two nodes),
//! matched packet by packet, say where each lost packet was lost.
//!
//! **Path order.** Taps are given in path order from the host that sends first: between
//! each pair of addresses, the host whose packet the first tap sees first is the near
//! end, and its packets pass the taps in the order given; the other host's packets pass
//! them in reverse order. A tap that saw nothing of a direction is left out of that
//! direction's path.
//!
//! **Matching.** A packet is known across taps by its direction (source and destination
//! address, destination QP), PSN, opcode and IPv4 identification. Where the sender keeps
//! the identification constant, the k-th copy of a (PSN, opcode) at one tap is matched
//! with the k-th copy at another. A packet is judged once it is `window` older than its
//! first sighting (on the taps' clocks brought together, see below), so memory follows
//! the live directions and the window, never the length of the captures.
//!
//! **Clocks.** Without `clocks_synced` each tap's clock offset to the first tap is
//! estimated from the first packets they share (the middle of the tightest bounds the two
//! directions give, as NTP does), and only the variation of the delay above its minimum
//! is reported; with it, the absolute one-way delay too.
//!
//! **Segments.** Segment 0 is before the first tap (PSNs missing from the request
//! stream at every tap: skipped by new requests or by a go-back-N resend run; a READ
//! request spans one PSN per response packet, the path MTU read from First/Middle
//! payloads), segment k (1 ≤ k < n) between the taps at path positions k-1 and k (seen
//! up to k-1, at none after), segment n after the last tap (PSNs every tap saw that the
//! receiver NAKed or the sender resent on its timer — unless the receiver acknowledged
//! every copy that reached the last tap, or was discarding it behind an earlier loss not
//! yet resent, or it is a READ re-request for a response lost on the way back). NAKs and
//! timer retries are charged to the segment where their PSN was lost. A packet missing at a tap while
//! a tap after it saw it is the tap's fault (its capture dropped the frame), counted
//! against the tap, not as loss.
//!
//! **Mirror sessions.** A tap may be one mirror session of a collector's capture
//! ([`Select`], `--tap FILE@erspan:7`; `FILE@mirrors` makes every session a tap, ordered
//! by first sighting, see [`spec::from_mirrors`]). When every tap is a session of the
//! same file, the taps share the collector's one clock: no offset is estimated (all are
//! zero). The delays between sessions then include the difference of their mirror
//! paths to the collector (constant but unknown), so, as with separate captures, only the
//! variation above the minimum is meaningful unless `clocks_synced` is asserted.

mod isb;
mod matcher;
mod read;
mod sample;
mod session;
pub mod spec;
#[cfg(test)]
mod spec_tests;
#[cfg(test)]
mod tests;

pub use matcher::{Matcher, Sight, MAX_TAPS};
pub use read::{run, TapsError};
pub use sample::Samples;
pub use session::read_session;
pub use spec::Select;

use std::net::IpAddr;
use std::path::PathBuf;

/// One capture point.
#[derive(Clone, Debug)]
pub struct Tap {
    /// Its name in the report.
    pub name: String,
    /// The capture file.
    pub path: PathBuf,
    /// Only this mirror session of the file (None: every frame).
    pub select: Option<Select>,
}

/// What a merged analysis is asked to do.
#[derive(Clone, Debug)]
pub struct Config {
    /// The taps in path order (2 ..= [`MAX_TAPS`]).
    pub taps: Vec<Tap>,
    /// The taps' clocks are synchronised (PTP): report absolute one-way delays.
    pub clocks_synced: bool,
    /// How long after its first sighting a packet is judged, in nanoseconds.
    pub window_ns: u64,
    /// How frames are decoded.
    pub dissect: dissectors::Config,
}

/// The default matching window: 100 ms (far above any one-way delay in a fabric; the
/// estimated clock offsets must stay within an eighth of it for the whole capture).
pub const DEFAULT_WINDOW_NS: u64 = 100_000_000;

/// A direction of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DirKey {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Destination QP.
    pub qpn: u32,
}

/// PSNs listed per segment at most.
pub const LISTED_PSNS: usize = 16;

/// One segment of one direction's path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Segment {
    /// Packets lost here.
    pub lost: u64,
    /// The first [`LISTED_PSNS`] of their PSNs.
    pub psns: Vec<u32>,
    /// Capture time (ns, the first tap's clock) of the first and last loss.
    pub first_ns: Option<u64>,
    /// (see `first_ns`)
    pub last_ns: Option<u64>,
    /// NAKs (PSN sequence error) whose PSN was lost here.
    pub naks: u64,
    /// Resends not preceded by a NAK (the sender's timer) of a PSN lost here.
    pub timer_retries: u64,
}

/// The delay between two adjacent taps of a direction.
#[derive(Clone, Debug, PartialEq)]
pub struct Delay {
    /// Packets seen at both.
    pub count: u64,
    /// Absolute one-way delay in seconds, only with synchronised clocks.
    pub min_s: Option<f64>,
    /// (see `min_s`)
    pub median_s: Option<f64>,
    /// (see `min_s`)
    pub p99_s: Option<f64>,
    /// Variation above the minimum: median − min, p99 − min, max − min (seconds).
    pub median_above_min_s: f64,
    /// (see `median_above_min_s`)
    pub p99_above_min_s: f64,
    /// (see `median_above_min_s`)
    pub max_above_min_s: f64,
}

/// One direction's story.
#[derive(Clone, Debug, PartialEq)]
pub struct Direction {
    /// The direction.
    pub key: DirKey,
    /// Tap indices (into [`Config::taps`]) in this direction's path order.
    pub path: Vec<usize>,
    /// Packets judged, and how many of them more than one tap saw.
    pub packets: u64,
    /// (see `packets`)
    pub matched: u64,
    /// `path.len() + 1` segments: before the first tap, between each pair, after the last.
    /// All zero when no packet was seen by two taps (nothing to compare).
    pub segments: Vec<Segment>,
    /// `path.len() - 1` delays between adjacent taps (None where no packet was matched).
    pub delays: Vec<Option<Delay>>,
}

/// What each tap contributed and where it disagreed with the others.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TapSummary {
    /// The tap's name.
    pub name: String,
    /// Frames read.
    pub frames: u64,
    /// RoCE packets among them.
    pub roce: u64,
    /// Packets a later tap of their path saw and this one did not: its capture dropped
    /// them (not counted as loss).
    pub missed: u64,
    /// Packets only this tap saw, in directions no other tap saw at all.
    pub alone: u64,
    /// Clock offset to the first tap (ns) used to bring the captures together.
    pub offset_ns: i64,
    /// The capture ends in the middle of a record: every complete frame before counts.
    pub cut_short: bool,
    /// Frames its capture says it dropped (pcapng `isb_ifdrop`), where it says.
    pub capture_dropped: Option<u64>,
    /// The mirror session the tap is (its selector), when it is one.
    pub mirror: Option<Select>,
}

impl TapSummary {
    /// Whether the tap's view is complete as far as can be told: it missed nothing a tap
    /// after it saw, its capture reports no drops and does not end mid-record.
    pub fn trusted(&self) -> bool {
        self.missed == 0 && !self.cut_short && self.capture_dropped.unwrap_or(0) == 0
    }
}

/// The merged analysis.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Whether `--clocks-synced` was given.
    pub clocks_synced: bool,
    /// Each tap, in the order given.
    pub taps: Vec<TapSummary>,
    /// Each direction, by address and QP.
    pub directions: Vec<Direction>,
    /// Sums over every direction.
    pub totals: Totals,
}

/// Sums over every direction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// Packets lost before the first tap of their path.
    pub lost_before_first_tap: u64,
    /// Packets lost between two taps.
    pub lost_between_taps: u64,
    /// Packets lost after the last tap (NAKed or resent by timer).
    pub lost_after_last_tap: u64,
    /// The median delay between the first two taps of a direction's path above its
    /// minimum, of the direction where it is largest (the queueing is where the traffic
    /// waits; seconds); None when no packet was seen at two taps.
    pub queueing_delay_median_s: Option<f64>,
}
