//! The one pipeline: frames from sources → decode → analyzer → sinks. Every command that
//! reads frames runs them through a [`Pipeline`]: `analyze` (files and `-i`), `top`
//! (replay and live), `capture` (its writer is a sink; with `--annotate` the comments come
//! from the analyzer's per-packet events), `netcheck --capture`, and the agent.
//!
//! A pipeline owns the decoder settings, one reused [`Decoded`] and the [`Analyzer`];
//! [`Pipeline::feed`] is the decode-ingest step, written once. Sources drive it: files
//! through [`Pipeline::read_files`] (one input read without copying, several merged),
//! live devices through [`Pipeline::pump`] and [`Pipeline::drain`] (the merger between
//! the capture threads and the analysis). What else happens to a frame — pacing a
//! replay, keeping it for `w`, writing it to a file — is a [`Sink`].
//!
//! Files are read a few frames ahead of the analysis when the sink allows it
//! ([`Sink::lookahead`]): each coming frame's flow is warmed into the cache step by step
//! (`analysis::warm`), which with thousands of QPs overlaps the cache misses of several
//! frames instead of paying them one after another. For a sink that does nothing per
//! frame ([`Sink::detached`]), when asked ([`Pipeline::jobs`] 2 or more: one thread was
//! faster on the 2-core machines measured, `docs/perf.md`), a thread of its own reads and
//! decodes the files while the caller's thread analyzes (`split`).
//!
//! Guarantees: per-frame work allocates nothing here (the sink decides for itself); the
//! analyzer sees every frame the sources deliver, in the merged timestamp order, with its
//! [`IfaceId`]; when a read returns, every frame read has been analyzed.

#![warn(missing_docs)]

use crate::analysis::{Analyzer, Hint, Report};
use crate::capture::input::{for_each_frame_of, CutShort, InputError};
#[cfg(feature = "live")]
use crate::capture::live::LiveSource;
use crate::capture::merge::{Batch, Merger};
use crate::capture::{Frame, IfaceId};
use dissectors::{Decoded, LinkType};
use std::ops::ControlFlow;
use std::path::PathBuf;

pub mod shard;
mod split;
pub use split::BATCH;

/// Where a benchmarking run stops with each frame (`analyze --stop-after`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// After reading it: nothing is decoded.
    Read,
    /// After decoding it: the analyzer sees nothing.
    Decode,
}

/// What happens to a frame besides the analysis.
pub trait Sink {
    /// Called before the frame is decoded (pacing, stopping); `Break` ends the run and
    /// the frame is not used.
    #[inline]
    fn before(&mut self, _frame: &Frame<'_>, _an: &Analyzer) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }

    /// Called once the analyzer has seen the frame. `decoded` is `None` when the pipeline
    /// stops after reading ([`Stage::Read`]). `Break` ends the run.
    fn after(
        &mut self,
        frame: &Frame<'_>,
        decoded: Option<&Decoded>,
        an: &Analyzer,
    ) -> ControlFlow<()>;

    /// Whether the sink lets file reads run ahead of the analysis: `after` then sees the
    /// analyzer up to [`AHEAD`] − 1 frames behind the frame it is given. Only a sink
    /// that reads nothing of the analyzer per frame may say yes.
    fn lookahead(&self) -> bool {
        false
    }

    /// Whether the sink does nothing at all with the frames of a file read (`before` and
    /// `after` change nothing and never break): the read may then decode on one thread
    /// while the analysis runs on another, and the sink is not called.
    fn detached(&self) -> bool {
        false
    }
}

/// Frames a file read decodes ahead of the analysis (see [`Sink::lookahead`]).
pub const AHEAD: usize = 8;

/// How many frames after a frame's hint is started (`Analyzer::warm_index`) it takes its
/// next steps (`warm_slot`, `warm_flow`, `warm_peer`); it is analyzed [`AHEAD`] − 1
/// frames after. The one schedule of both read-ahead paths (`feed_ahead`, `split`).
const WARM_STEPS: [usize; 3] = [2, 4, 6];
const _: () = assert!(WARM_STEPS[2] < AHEAD - 1);

/// Live flows from which reading ahead pays: about what a core's L2 cache holds of the
/// lines every packet touches (measured: below it, the hints cost more than they save).
pub const WARM_FROM: usize = 1024;

/// The sink that does nothing: the frames only feed the analyzer.
pub struct NoSink;

impl Sink for NoSink {
    fn lookahead(&self) -> bool {
        true
    }

    fn detached(&self) -> bool {
        true
    }

    #[inline]
    fn after(&mut self, _: &Frame<'_>, _: Option<&Decoded>, _: &Analyzer) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// A frame decoded ahead of the analysis.
struct Ahead {
    ts: u64,
    iface: u32,
    decoded: Decoded,
    hint: Hint,
}

/// Frames in, analysis out; see the module documentation.
pub struct Pipeline {
    dcfg: dissectors::Config,
    decoded: Decoded,
    /// Frames decoded ahead of the analysis, by `fed % AHEAD`, with their timestamp,
    /// interface and cache hint.
    ahead: Vec<Ahead>,
    /// Frames put into `ahead` so far.
    fed: usize,
    /// How many of the latest of them the analyzer has not seen yet.
    behind: usize,
    /// Live flows from which file reads run ahead ([`WARM_FROM`] unless set).
    warm_from: usize,
    /// Whether file reads for a detached sink decode and analyze on two threads.
    split: bool,
    an: Analyzer,
    stop_after: Option<Stage>,
    frames: u64,
    bytes: u64,
}

impl Pipeline {
    /// A pipeline that decodes with `dcfg` and feeds `an`.
    pub fn new(dcfg: dissectors::Config, an: Analyzer) -> Self {
        Pipeline {
            decoded: dissectors::decode(LinkType::Ethernet, &[], 0, &dcfg),
            ahead: (0..AHEAD)
                .map(|_| Ahead {
                    ts: 0,
                    iface: 0,
                    decoded: dissectors::decode(LinkType::Ethernet, &[], 0, &dcfg),
                    hint: Hint::NONE,
                })
                .collect(),
            fed: 0,
            behind: 0,
            warm_from: WARM_FROM,
            // One thread unless asked: on the 2-core machines measured it was faster than
            // the split read on every trace of `benches/analyze.sh` and `benches/scale.sh`.
            split: false,
            dcfg,
            an,
            stop_after: None,
            frames: 0,
            bytes: 0,
        }
    }

    /// Stops each frame after `stage` (`None`: the whole way).
    pub fn stop_after(mut self, stage: Option<Stage>) -> Self {
        self.stop_after = stage;
        self
    }

    /// Reads files ahead of the analysis from `flows` live flows on, instead of
    /// [`WARM_FROM`] (0: always, `usize::MAX`: never), where the sink allows it. The
    /// report is the same either way; this is for tests and measurements.
    pub fn warm_from(mut self, flows: usize) -> Self {
        self.warm_from = flows;
        self
    }

    /// Whether file reads for a [`Sink::detached`] sink read and decode on a thread of
    /// their own while the calling thread analyzes (not by default). The report is the
    /// same either way; this is for tests and measurements.
    pub fn split(mut self, on: bool) -> Self {
        self.split = on;
        self
    }

    /// The threads a file read uses when `analyze --jobs` is not given: two (the split
    /// read) when a core is free for the second, one otherwise. Measured on two cores:
    /// with both free the split read is 25-35 % faster than one thread; with one core
    /// kept busy by another program, 20-45 % slower (`docs/perf.md`). "Free": the cores
    /// this process may use less the other tasks running now (`/proc/loadavg`'s
    /// runnable count, less this one) leave at least 1.5 (`FREE_CORES`); unknown (no
    /// `/proc`) counts as busy. (The load average itself lags by a minute: a run just
    /// after another would wait for its own shadow.)
    pub fn default_jobs() -> usize {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let running = crate::sysfile::read(std::path::Path::new("/proc/loadavg"), 256)
            .ok()
            .and_then(|l| runnable(&l));
        jobs_for(cores, running.map(|r| r.saturating_sub(1)))
    }

    /// Threads for file reads (`analyze --jobs`): 1 reads, decodes and analyzes on the
    /// calling thread; 2 or more let a [`Sink::detached`] sink's read decode on a thread of
    /// its own while the calling thread analyzes ([`Pipeline::split`]). A third thread is
    /// not used yet: the analysis is one state machine fed in read order (sharding it by
    /// host pair has its routing in [`shard`]; what the merge needs is in `docs/perf.md`).
    /// The report is the same whatever `n`. Without a call, one thread.
    pub fn jobs(self, n: usize) -> Self {
        self.split(n >= 2)
    }

    /// Names the sources for reports: source `i` (a file, a device) is `names[i]`.
    pub fn name_sources(&mut self, names: impl IntoIterator<Item = String>) {
        for (i, n) in names.into_iter().enumerate() {
            self.an.name_iface(IfaceId::source(i as u32).get(), n);
        }
    }

    /// The analyzer, as it stands.
    pub fn analyzer(&self) -> &Analyzer {
        &self.an
    }

    /// The analyzer, to change its settings while running.
    pub fn analyzer_mut(&mut self) -> &mut Analyzer {
        &mut self.an
    }

    /// Frames fed so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Captured bytes of the frames fed so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Ends the analysis: the final report.
    pub fn finish(self) -> Report {
        self.an.finish()
    }

    /// Feeds one frame: `sink.before`, decode, the analyzer, `sink.after`.
    #[inline]
    pub fn feed<S: Sink + ?Sized>(&mut self, f: &Frame<'_>, sink: &mut S) -> ControlFlow<()> {
        self.take(f, sink)?;
        if self.stop_after == Some(Stage::Read) {
            return sink.after(f, None, &self.an);
        }
        dissectors::decode_into(f.link, f.data, f.orig_len, &self.dcfg, &mut self.decoded);
        if self.stop_after == Some(Stage::Decode) {
            std::hint::black_box(&self.decoded);
        } else {
            self.an.ingest(f.ts_ns, f.iface_id().get(), &self.decoded);
        }
        sink.after(f, Some(&self.decoded), &self.an)
    }

    /// [`Pipeline::feed`], with the analysis [`AHEAD`] − 1 frames behind the decoding:
    /// frame `n` is decoded and its hint started; the frames decoded 2, 4 and 6 frames
    /// earlier take their hint's next step, and the one decoded 7 earlier is analyzed.
    ///
    /// While the analyzer holds fewer than [`WARM_FROM`] flows (they stay in the cache on
    /// their own) it is plain [`Pipeline::feed`]: the hints would only cost time.
    /// Frames analyzed are the same, in the same order, either way.
    #[inline]
    fn feed_ahead<S: Sink + ?Sized>(&mut self, f: &Frame<'_>, sink: &mut S) -> ControlFlow<()> {
        if self.an.live_flows() < self.warm_from {
            self.catch_up();
            return self.feed(f, sink);
        }
        self.take(f, sink)?;
        let n = self.fed;
        self.fed += 1;
        let a = &mut self.ahead[n % AHEAD];
        a.ts = f.ts_ns;
        a.iface = f.iface_id().get();
        dissectors::decode_into(f.link, f.data, f.orig_len, &self.dcfg, &mut a.decoded);
        a.hint = self.an.warm_index(&a.decoded);
        let [slot, flow, peer] = WARM_STEPS;
        if self.behind >= slot {
            let a = &mut self.ahead[(n - slot) % AHEAD];
            self.an.warm_slot(&a.decoded, &mut a.hint);
        }
        if self.behind >= flow {
            self.an.warm_flow(&self.ahead[(n - flow) % AHEAD].hint);
        }
        if self.behind >= peer {
            self.an.warm_peer(&self.ahead[(n - peer) % AHEAD].hint);
        }
        if self.behind == AHEAD - 1 {
            let a = &self.ahead[(n + 1) % AHEAD];
            self.an.ingest_warmed(a.ts, a.iface, &a.decoded, &a.hint);
        } else {
            self.behind += 1;
        }
        sink.after(f, Some(&self.ahead[n % AHEAD].decoded), &self.an)
    }

    /// `sink.before`, then counts the frame as fed.
    #[inline]
    fn take<S: Sink + ?Sized>(&mut self, f: &Frame<'_>, sink: &mut S) -> ControlFlow<()> {
        sink.before(f, &self.an)?;
        self.frames += 1;
        self.bytes += f.data.len() as u64;
        ControlFlow::Continue(())
    }

    /// Analyzes the frames decoded ahead and not analyzed yet, in order.
    fn catch_up(&mut self) {
        while self.behind > 0 {
            let a = &self.ahead[(self.fed - self.behind) % AHEAD];
            self.an.ingest_warmed(a.ts, a.iface, &a.decoded, &a.hint);
            self.behind -= 1;
        }
    }

    /// Feeds every frame of `paths` (merged in timestamp order when there are several)
    /// until they end or the sink breaks. Inputs cut short in the middle of a record are
    /// returned (and told to the analyzer); other damage is an error, after every frame
    /// before it was fed.
    pub fn read_files<S: Sink + ?Sized>(
        &mut self,
        paths: &[PathBuf],
        quiet: bool,
        sink: &mut S,
    ) -> Result<Vec<CutShort>, InputError> {
        let cut = if self.split && sink.detached() && self.stop_after.is_none() {
            self.read_split(paths, quiet)?
        } else if sink.lookahead() && self.stop_after.is_none() {
            let cut = for_each_frame_of(paths, quiet, |f| self.feed_ahead(f, sink));
            self.catch_up();
            cut?
        } else {
            for_each_frame_of(paths, quiet, |f| self.feed(f, sink))?
        };
        for c in &cut {
            self.an.input_cut_short(&c.file, c.frames);
        }
        Ok(cut)
    }

    /// Waits up to `wait` for batches of the live sources, then feeds every frame the
    /// merger can release in timestamp order. `Break` when the sink broke.
    #[cfg(feature = "live")]
    pub fn pump<S: Sink + ?Sized>(
        &mut self,
        live: &LiveSource,
        merger: &mut Merger,
        wait: std::time::Duration,
        sink: &mut S,
    ) -> ControlFlow<()> {
        if let Some(b) = live.recv_timeout(wait) {
            merger.push(b);
            while let Ok(b) = live.receiver().try_recv() {
                merger.push(b);
            }
        }
        merger.drain(false, |f| self.feed(f, sink))
    }

    /// Feeds every frame the one device of a session delivers for about `wait`, straight
    /// from libpcap's buffer (see [`Inline`](crate::capture::live::Inline)). `Break`
    /// when the sink broke.
    #[cfg(feature = "live")]
    pub fn pump_inline<S: Sink + ?Sized>(
        &mut self,
        inline: &mut crate::capture::live::Inline,
        wait: std::time::Duration,
        sink: &mut S,
    ) -> ControlFlow<()> {
        inline.pump(wait, |f| self.feed(f, sink))
    }

    /// At the end of a live run: feeds the batches still queued (from
    /// [`LiveSource::finish`]) and everything the merger holds.
    pub fn drain<S: Sink + ?Sized>(
        &mut self,
        rest: Vec<Batch>,
        merger: &mut Merger,
        sink: &mut S,
    ) -> ControlFlow<()> {
        for b in rest {
            merger.push(b);
        }
        merger.drain(true, |f| self.feed(f, sink))
    }
}

/// Idle cores (cores less the other tasks running) [`Pipeline::default_jobs`] asks for
/// before it uses a second thread: the reading thread needs about one, and the analysis
/// keeps its own.
const FREE_CORES: f64 = 1.5;

/// The tasks running or ready to run, from `/proc/loadavg` (`0.52 0.61 0.70 2/345 1234`:
/// the fourth field's first number).
fn runnable(loadavg: &str) -> Option<usize> {
    loadavg
        .split_whitespace()
        .nth(3)?
        .split('/')
        .next()?
        .parse()
        .ok()
}

/// [`Pipeline::default_jobs`] for `cores` usable cores and `others` other tasks running.
fn jobs_for(cores: usize, others: Option<usize>) -> usize {
    match others {
        Some(o) if cores >= 2 && cores as f64 - o as f64 >= FREE_CORES => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod jobs_tests {
    use super::*;

    #[test]
    fn a_second_thread_only_when_a_core_is_free_for_it() {
        assert_eq!(jobs_for(2, Some(0)), 2);
        assert_eq!(jobs_for(2, Some(1)), 1, "another program holds a core");
        assert_eq!(jobs_for(64, Some(40)), 2);
        assert_eq!(jobs_for(64, Some(63)), 1);
        assert_eq!(jobs_for(1, Some(0)), 1, "one core");
        assert_eq!(jobs_for(8, None), 1, "unknown");
        assert_eq!(runnable("0.52 0.61 0.70 2/345 1234\n"), Some(2));
        assert_eq!(runnable("0.52 0.61 0.70"), None);
        assert_eq!(runnable("0.52 0.61 0.70 x/345 1234"), None);
        let n = Pipeline::default_jobs();
        assert!(n == 1 || n == 2, "{n}");
    }
}
