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
//! Guarantees: per-frame work allocates nothing here (the sink decides for itself); the
//! analyzer sees every frame the sources deliver, in the merged timestamp order, with its
//! [`IfaceId`].

#![warn(missing_docs)]

use crate::analysis::{Analyzer, Report};
use crate::capture::input::{for_each_frame_of, CutShort};
use crate::capture::live::LiveSource;
use crate::capture::merge::{Batch, Merger};
use crate::capture::{Frame, IfaceId};
use crate::error::Failure;
use dissectors::{Decoded, LinkType};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Duration;

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
}

/// The sink that does nothing: the frames only feed the analyzer.
pub struct NoSink;

impl Sink for NoSink {
    #[inline]
    fn after(&mut self, _: &Frame<'_>, _: Option<&Decoded>, _: &Analyzer) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// Frames in, analysis out; see the module documentation.
pub struct Pipeline {
    dcfg: dissectors::Config,
    decoded: Decoded,
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
        sink.before(f, &self.an)?;
        self.frames += 1;
        self.bytes += f.data.len() as u64;
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

    /// Feeds every frame of `paths` (merged in timestamp order when there are several)
    /// until they end or the sink breaks. Inputs cut short in the middle of a record are
    /// returned (and told to the analyzer); other damage is an error, after every frame
    /// before it was fed.
    pub fn read_files<S: Sink + ?Sized>(
        &mut self,
        paths: &[PathBuf],
        quiet: bool,
        sink: &mut S,
    ) -> Result<Vec<CutShort>, Failure> {
        let cut = for_each_frame_of(paths, quiet, |f| self.feed(f, sink))?;
        for c in &cut {
            self.an.input_cut_short(&c.file, c.frames);
        }
        Ok(cut)
    }

    /// Waits up to `wait` for batches of the live sources, then feeds every frame the
    /// merger can release in timestamp order. `Break` when the sink broke.
    pub fn pump<S: Sink + ?Sized>(
        &mut self,
        live: &LiveSource,
        merger: &mut Merger,
        wait: Duration,
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
