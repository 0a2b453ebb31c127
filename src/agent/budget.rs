//! One memory budget for the whole agent (`--memory-limit`), split into parts that each
//! have a fixed share whatever the number of sources, so that the process' resident size
//! stays under the budget with one source or many:
//!
//! | part       | share of what is left after `BASE` | what it bounds                              |
//! |------------|-----------------------------------|---------------------------------------------|
//! | `recorder` | 35 %, split evenly over sources   | the flight-recorder rings (`--recorder-bytes` at most) |
//! | `analyzer` | 30 %, pooled over sources         | live flows, kept events and flow summaries, the per-second snapshot |
//! | `report`   | 15 %                              | one `/report` or dump re-analysis at a time |
//! | `capture`  | 20 %, split evenly over sources   | libpcap's kernel rings (each source is read by its own thread, without a queue) |
//!
//! `BASE` is the program, its threads, the HTTP server and netcheck (measured: 26 MB of
//! mapped code and libraries in a release build, see docs/perf.md). A part that is full degrades instead of growing: rings evict
//! their oldest frames, an analyzer stops following new flows (their packets are
//! counted), events and summaries beyond their caps are counted, the kernel drops
//! frames (counted). The costs below are upper estimates per item, checked
//! against `size_of` in the tests.

use std::fmt::Write as _;

/// The default budget: the DaemonSet's memory limit (256Mi) with a quarter of headroom
/// for the allocator and the kernel's share.
pub const DEFAULT_LIMIT: u64 = 192 << 20;
/// The program (its mapped code and libraries: 26 MB of a release build), its threads,
/// HTTP and netcheck.
pub const BASE: u64 = 32 << 20;
/// A live flow: its slot (`size_of::<Flow>()`), parts allocated on first use, its index
/// and pair entries, and its summary in the once-a-second snapshot.
pub const FLOW_COST: u64 = 3 << 10;
/// A kept event (and its share of a JSON rendering).
pub const EVENT_COST: u64 = 512;
/// A kept flow summary, its copy in the snapshot, and its JSON rendering.
pub const SUMMARY_COST: u64 = 4 << 10;
/// A recorder slot's metadata next to its `snaplen` bytes.
pub const SLOT_META: u64 = 24;
/// A recorded frame's entry in the time-ordered index a `/report` or dump re-analysis
/// builds (transient, but there for every frame recorded).
pub const REPLAY_ENTRY: u64 = 48;
/// Bytes each frame of a queued batch reserves (buffer and metadata).
pub const BATCH_FRAME_COST: u64 = 256 + 40;

/// How the budget is spent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The whole budget.
    pub limit: u64,
    /// Each part's share in bytes: (part, bytes), `base` first.
    pub shares: Vec<(&'static str, u64)>,
    /// Ring bytes per source to give the recorder (its slots' data; metadata is on top).
    pub recorder_bytes: u64,
    /// libpcap's kernel ring per source.
    pub pcap_buffer: u32,
    /// Live flows, every analyzer together.
    pub flows: usize,
    /// Events each analyzer keeps.
    pub events: usize,
    /// Flow summaries each analyzer keeps.
    pub summaries: usize,
    /// The `/report` and dump re-analysis: live flows, events, summaries.
    pub report: (usize, usize, usize),
}

/// What the plan starts from.
#[derive(Clone, Copy, Debug)]
pub struct Wanted {
    /// `--memory-limit`.
    pub limit: u64,
    /// Sources captured.
    pub sources: usize,
    /// Bytes kept per frame (the recorder's slot).
    pub snaplen: u32,
    /// `--recorder-bytes`: the most a ring gets.
    pub recorder_bytes: u64,
    /// The libpcap buffer asked for: the most a kernel ring gets.
    pub pcap_buffer: u32,
    /// The queue asked for: the most it gets.
    pub queue_batches: usize,
    /// Frames per batch.
    pub batch_frames: usize,
    /// Events and summaries an analyzer keeps at most.
    pub events: usize,
    /// Summaries an analyzer keeps at most.
    pub summaries: usize,
}

/// The least budget for `sources` sources.
pub fn minimum(sources: usize) -> u64 {
    BASE + 16 * (1 << 20) + sources as u64 * (4 << 20)
}

/// Splits the budget; an error (for the one-line message) when it is too small.
pub fn plan(w: &Wanted) -> Result<Plan, TooSmall> {
    let n = w.sources.max(1) as u64;
    let min = minimum(w.sources.max(1));
    if w.limit < min {
        return Err(TooSmall {
            limit: w.limit,
            sources: n,
            min,
        });
    }
    let rest = w.limit - BASE;
    let (rec, ana, rep) = (rest * 35 / 100, rest * 30 / 100, rest * 15 / 100);
    let cap = rest - rec - ana - rep;
    // Recorder: slot data plus its metadata fit the source's share.
    let slot = u64::from(w.snaplen.max(1));
    let per_source = rec / n;
    let recorder_bytes =
        (per_source / (slot + SLOT_META + REPLAY_ENTRY) * slot).min(w.recorder_bytes);
    // Capture: each source is read on its own thread with no queue, so its ring takes
    // the queue's half of its share too (the frames that come while its analysis is lent
    // to a `/report` or a dump wait in it): at most what the ring and the queue were
    // asked for together (libpcap takes a buffer size that fits an i32).
    let batch = w.batch_frames.max(1) as u64 * BATCH_FRAME_COST;
    let queue = (w.queue_batches as u64).saturating_mul(batch);
    let ring = (cap / 2 / n).min(u64::from(w.pcap_buffer)) + (cap / 2 / n).min(queue);
    let pcap_buffer = ring.min(i32::MAX as u64) as u32;
    // Analyzers: a tenth each for events and summaries per source, the rest flows.
    let events = ((ana / 10 / n / EVENT_COST) as usize).min(w.events);
    let summaries = ((ana / 10 / n / SUMMARY_COST) as usize).min(w.summaries);
    let kept = n * (events as u64 * EVENT_COST + summaries as u64 * SUMMARY_COST);
    let flows = ((ana - kept) / FLOW_COST) as usize;
    // /report: half flows, a fifth events, the rest summaries.
    let report = (
        (rep / 2 / FLOW_COST) as usize,
        (rep / 5 / EVENT_COST) as usize,
        (rep * 3 / 10 / SUMMARY_COST) as usize,
    );
    Ok(Plan {
        limit: w.limit,
        shares: vec![
            ("base", BASE),
            ("recorder", rec),
            ("analyzer", ana),
            ("report", rep),
            ("capture", cap),
        ],
        recorder_bytes,
        pcap_buffer,
        flows,
        events,
        summaries,
        report,
    })
}

/// A memory limit too small for the sources: [`plan`]'s error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooSmall {
    /// The limit given, in bytes.
    pub limit: u64,
    /// The sources it is for.
    pub sources: u64,
    /// The least that would do, in bytes.
    pub min: u64,
}

impl std::fmt::Display for TooSmall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is too small for {} source{}: give at least {}",
            size(self.limit),
            self.sources,
            if self.sources == 1 { "" } else { "s" },
            size(self.min)
        )
    }
}

impl std::error::Error for TooSmall {}

/// A size as the options write it (`192M`, `1536K`).
pub fn size(b: u64) -> String {
    let mut s = String::new();
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        let _ = write!(s, "{}M", b >> 20);
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        let _ = write!(s, "{}K", b >> 10);
    } else {
        let _ = write!(s, "{b}");
    }
    s
}

/// The flows each analyzer may hold now so that together they stay within `total`:
/// what each holds plus an even part of what is left (none is taken from anyone).
pub fn flow_caps(live: &[usize], total: usize) -> Vec<usize> {
    let used: usize = live.iter().sum();
    let each = total.saturating_sub(used) / live.len().max(1);
    live.iter().map(|&l| l + each).collect()
}

/// The process' resident size now and its peak (`VmRSS`, `VmHWM` of `/proc/self/status`).
pub fn resident_bytes() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib = |key: &str| -> Option<u64> {
        let l = text.lines().find(|l| l.starts_with(key))?;
        l[key.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    };
    Some((kib("VmRSS:")? << 10, kib("VmHWM:")? << 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(limit: u64, sources: usize) -> Wanted {
        Wanted {
            limit,
            sources,
            snaplen: 128,
            recorder_bytes: 32 << 20,
            pcap_buffer: 8 << 20,
            queue_batches: 1024,
            batch_frames: 256,
            events: 10_000,
            summaries: 1_024,
        }
    }

    /// Everything the plan lets grow, at its most.
    fn most(p: &Plan, w: &Wanted) -> u64 {
        let n = w.sources as u64;
        let slot = u64::from(w.snaplen);
        let rec = n * (p.recorder_bytes / slot) * (slot + SLOT_META + REPLAY_ENTRY);
        let cap = n * u64::from(p.pcap_buffer);
        let ana = p.flows as u64 * FLOW_COST
            + n * (p.events as u64 * EVENT_COST + p.summaries as u64 * SUMMARY_COST);
        let rep = p.report.0 as u64 * FLOW_COST
            + p.report.1 as u64 * EVENT_COST
            + p.report.2 as u64 * SUMMARY_COST;
        BASE + rec + cap + ana + rep
    }

    #[test]
    fn every_part_fits_the_budget_whatever_the_sources() {
        for limit in [64u64 << 20, 96 << 20, DEFAULT_LIMIT, 1 << 30] {
            for n in [1, 2, 4, 8, 16] {
                let w = wanted(limit, n);
                let Ok(p) = plan(&w) else {
                    assert!(limit < minimum(n), "{limit} {n}");
                    continue;
                };
                assert!(most(&p, &w) <= limit, "{limit} B, {n} sources: {p:?}");
                assert_eq!(p.shares.iter().map(|s| s.1).sum::<u64>(), limit);
                assert!(p.recorder_bytes >= 64 << 10 && p.pcap_buffer >= 256 << 10);
                assert!(p.flows >= 1_000 && p.report.0 > 0, "{p:?}");
            }
        }
    }

    #[test]
    fn defaults_for_eight_sources_and_for_one() {
        let p = plan(&wanted(DEFAULT_LIMIT, 8)).unwrap();
        // 160 MiB after the base: 56 MiB of rings (and their index) over 8 sources, and
        // 32 MiB of capture share: 4 MiB of kernel ring each, no queue.
        assert_eq!(p.recorder_bytes >> 20, 4);
        assert_eq!(p.pcap_buffer >> 10, 4096);
        assert!(p.flows > 12_000, "{}", p.flows);
        let p = plan(&wanted(DEFAULT_LIMIT, 1)).unwrap();
        // One source: what was asked for, not more; no queue, whose half of the 32 MiB
        // capture share goes to the ring.
        assert_eq!(p.recorder_bytes, 32 << 20);
        assert_eq!(p.pcap_buffer, 24 << 20);
        assert_eq!((p.events, p.summaries), (9_830, 1_024));
        // A large budget: the one ring is still what ring and queue were asked for.
        let w = wanted(4 << 30, 1);
        let p = plan(&w).unwrap();
        let asked = u64::from(w.pcap_buffer) + w.queue_batches as u64 * 256 * BATCH_FRAME_COST;
        assert_eq!(u64::from(p.pcap_buffer), asked);
    }

    #[test]
    fn too_small_a_budget_says_how_much() {
        let e = plan(&wanted(40 << 20, 8)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "40M is too small for 8 sources: give at least 80M"
        );
    }

    #[test]
    fn costs_cover_the_types() {
        use crate::analysis::{flow::Flow, Event, FlowSummary};
        assert!(
            FLOW_COST as usize >= std::mem::size_of::<Flow>() + std::mem::size_of::<FlowSummary>()
        );
        assert!(SUMMARY_COST as usize >= 2 * std::mem::size_of::<FlowSummary>());
        assert!(EVENT_COST as usize >= 2 * std::mem::size_of::<Event>());
    }

    #[test]
    fn flow_caps_share_what_is_left() {
        assert_eq!(flow_caps(&[10, 0, 0], 40), vec![20, 10, 10]);
        // Over the total (a cap lowered): nobody gets more, nobody loses flows.
        assert_eq!(flow_caps(&[30, 20], 40), vec![30, 20]);
        assert_eq!(flow_caps(&[], 40), Vec::<usize>::new());
    }

    #[test]
    fn resident_size_is_read() {
        let (rss, hwm) = resident_bytes().unwrap();
        assert!(rss > 0 && hwm >= rss);
    }

    #[test]
    fn sizes_read_like_the_options() {
        assert_eq!(size(192 << 20), "192M");
        assert_eq!(size(1536 << 10), "1536K");
        assert_eq!(size(1000), "1000");
    }
}
