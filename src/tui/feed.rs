//! The feeder threads: read frames (files at recorded speed, a multiple of it, or as fast
//! as possible; or live devices through [`LiveSource`]), decode, analyze, and send the UI
//! a [`Snapshot`] at most every [`SNAPSHOT_EVERY`] over a bounded channel with
//! `try_send`, so neither side waits for the other (a snapshot the UI has no room for is
//! skipped; the next one carries everything). The final report is sent with a blocking
//! send: it is the one that must arrive.
//!
//! `w` (write a flow): the feeder keeps, for every flow, a ring of its most recent frames
//! ([`RING_FRAMES`] frames and [`RING_BYTES`] bytes at most, for at most [`RING_FLOWS`]
//! flows; buffers are reused, so a full ring allocates nothing), in replay and live alike,
//! and writes the selected flow's and its peer's frames to a pcapng on request. So
//! for a long flow the file holds its newest frames, not all of them.
//!
//! RDMA devices (given as `mlx5_0` or as the netdev of one) also get their
//! `hw_counters` read from sysfs once a second, with per-second deltas.

use super::app::{Action, Drops, FeedState, HwCounter, Snapshot};
use crate::analysis::flow::FlowKey;
use crate::analysis::{Analyzer, Config};
use crate::capture::live::LiveSource;
use crate::capture::merge::Merger;
use crate::capture::writer::{Format, Interface, Writer};
use crate::capture::{rdma, Frame};
use crate::pipeline::{Pipeline, Sink};
use dissectors::{Addr, Decoded, LinkType, Qpn};
use std::collections::{HashMap, VecDeque};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::time::{Duration, Instant};

mod hw;
mod rings;
pub use hw::HwReader;
pub use rings::{Rings, WriteError};

/// Shortest time between two snapshots sent to the UI.
pub const SNAPSHOT_EVERY: Duration = Duration::from_millis(200);
/// Most frames kept per flow for `w` (the oldest go first).
pub const RING_FRAMES: usize = 2048;
/// Most captured bytes kept per flow for `w` (2 MiB).
pub const RING_BYTES: usize = 2 << 20;
/// Most flows that get a frame ring; later flows' frames are not kept.
pub const RING_FLOWS: usize = 128;

/// Replay speed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Speed {
    /// Times the recorded speed.
    Factor(f64),
    /// As fast as the frames can be read and analyzed, no pacing.
    Max,
}

impl Speed {
    /// Parses `--speed`: `realtime`, `max`, or a positive multiple such as `0.5`, `10` or
    /// `10x`; the error is the one-line message for the user.
    pub fn parse(s: &str) -> Result<Speed, BadSpeed> {
        match s {
            "max" => Ok(Speed::Max),
            "realtime" => Ok(Speed::Factor(1.0)),
            _ => match s.trim_end_matches('x').parse::<f64>() {
                Ok(v) if v > 0.0 && v.is_finite() => Ok(Speed::Factor(v)),
                _ => Err(BadSpeed(s.to_string())),
            },
        }
    }
}

/// A `--speed` that is none of realtime, max or a positive multiple (the text given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadSpeed(pub String);

impl std::fmt::Display for BadSpeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--speed {}: give realtime, max, or a positive multiple such as 0.5 or 10",
            self.0
        )
    }
}

impl std::error::Error for BadSpeed {}

/// What the UI asks of the feeder.
#[derive(Debug)]
pub enum Control {
    /// Pause (`true`) or resume (`false`) reading.
    Pause(bool),
    /// Read one more frame, then stay paused (replay).
    Step,
    /// Write the frames kept for some flows to a pcapng; the result comes back as
    /// [`Action::Written`].
    Write {
        /// The flow id the file is named after.
        id: u32,
        /// Keys of the flows whose frames go into the file.
        keys: Vec<FlowKey>,
    },
    /// Stop reading and end the thread.
    Quit,
}

fn pipeline(dcfg: dissectors::Config) -> Pipeline {
    Pipeline::new(dcfg, Analyzer::new(Config::default()))
}

/// The replay's sink: pacing before each frame, the rings and snapshots after it.
struct Replay<'a> {
    rings: Rings,
    tx: &'a SyncSender<Action>,
    ctl: &'a Receiver<Control>,
    speed: Speed,
    paused: bool,
    /// Frames still allowed while paused (single step).
    steps: u32,
    /// Wall clock and capture time of the pacing origin.
    base: Option<(Instant, u64)>,
    last_snap: Instant,
    sent_events: usize,
    frames: u64,
    quit: bool,
    dir: PathBuf,
    started: Instant,
}

impl Replay<'_> {
    fn snapshot(&mut self, an: &Analyzer, force: bool) {
        let state = if self.paused {
            FeedState::Paused
        } else {
            FeedState::Running
        };
        let s = Snapshot {
            report: an.snapshot(self.sent_events),
            events_from: self.sent_events,
            complete: false,
            frames_read: self.frames,
            drops: Drops::default(),
            hw: Vec::new(),
            state,
            wall_ns: self.started.elapsed().as_nanos() as u64,
        };
        let n = an.events_recorded();
        let res = if force {
            self.tx.send(Action::Snapshot(Box::new(s))).map_or_else(
                |_| {
                    self.quit = true;
                    false
                },
                |()| true,
            )
        } else {
            match self.tx.try_send(Action::Snapshot(Box::new(s))) {
                Ok(()) => true,
                Err(TrySendError::Full(_)) => false,
                Err(TrySendError::Disconnected(_)) => {
                    self.quit = true;
                    false
                }
            }
        };
        if res {
            self.sent_events = n;
        }
        self.last_snap = Instant::now();
    }

    fn control(&mut self, an: &Analyzer, c: Control) {
        match c {
            Control::Pause(p) => {
                self.paused = p;
                self.steps = 0;
                self.base = None;
                self.snapshot(an, true);
            }
            Control::Step => {
                self.paused = true;
                self.steps += 1;
                self.base = None;
            }
            Control::Write { id, keys } => {
                let r = self.rings.write(&self.dir, id, &keys);
                let _ = self.tx.send(Action::Written(r));
            }
            Control::Quit => self.quit = true,
        }
    }

    fn poll(&mut self, an: &Analyzer) {
        loop {
            match self.ctl.try_recv() {
                Ok(c) => self.control(an, c),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.quit = true;
                    break;
                }
            }
        }
    }

    /// Waits while paused (no step pending) or until the frame's time has come.
    fn wait_for(&mut self, an: &Analyzer, ts: u64) {
        loop {
            self.poll(an);
            if self.quit {
                return;
            }
            if self.paused {
                if self.steps > 0 {
                    return;
                }
                match self.ctl.recv_timeout(Duration::from_millis(100)) {
                    Ok(c) => self.control(an, c),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => self.quit = true,
                }
                continue;
            }
            let Speed::Factor(x) = self.speed else {
                return;
            };
            let (w0, t0) = *self.base.get_or_insert((Instant::now(), ts));
            // A tiny factor can ask for more time than an Instant holds: wait "forever"
            // (still answering keys) rather than overflow.
            let target = Duration::try_from_secs_f64(ts.saturating_sub(t0) as f64 / 1e9 / x)
                .ok()
                .and_then(|d| w0.checked_add(d));
            let now = Instant::now();
            let target = match target {
                Some(t) if now >= t => return,
                Some(t) => t,
                None => now + Duration::from_millis(50),
            };
            if self.last_snap.elapsed() >= SNAPSHOT_EVERY {
                self.snapshot(an, false);
            }
            std::thread::sleep((target - now).min(Duration::from_millis(50)));
        }
    }
}

impl Sink for Replay<'_> {
    fn before(&mut self, f: &Frame<'_>, an: &Analyzer) -> ControlFlow<()> {
        self.wait_for(an, f.ts_ns);
        if self.quit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    fn after(&mut self, f: &Frame<'_>, d: Option<&Decoded>, an: &Analyzer) -> ControlFlow<()> {
        if let Some(d) = d {
            self.rings.push(f, d);
        }
        self.frames += 1;
        if self.paused && self.steps > 0 {
            self.steps -= 1;
            self.snapshot(an, true);
        } else if self.last_snap.elapsed() >= SNAPSHOT_EVERY {
            self.snapshot(an, false);
        }
        ControlFlow::Continue(())
    }
}

/// Replays `paths` (merged in timestamp order) into the UI until they end or the UI
/// quits; then serves `w` requests until told to quit.
pub fn replay(
    paths: Vec<PathBuf>,
    select: Option<crate::taps::Select>,
    speed: Speed,
    dcfg: dissectors::Config,
    dir: PathBuf,
    tx: SyncSender<Action>,
    ctl: Receiver<Control>,
) {
    let mut p = pipeline(dcfg);
    if paths.len() > 1 {
        p.name_sources(paths.iter().map(|p| {
            p.file_name()
                .map_or(p.display().to_string(), |n| n.to_string_lossy().into())
        }));
    }
    let mut r = Replay {
        rings: Rings::default(),
        tx: &tx,
        ctl: &ctl,
        speed,
        paused: false,
        steps: 0,
        base: None,
        last_snap: Instant::now(),
        sent_events: 0,
        frames: 0,
        quit: false,
        dir,
        started: Instant::now(),
    };
    // A file cut short is a finding of the report, not a failure of the replay.
    // `top --tap FILE@SESSION ...`: the first tap's session only.
    let res = match &select {
        Some(sel) => crate::taps::read_session(&mut p, &paths, sel, &dcfg, true, &mut r),
        None => p.read_files(&paths, true, &mut r),
    };
    if r.quit {
        return;
    }
    let state = match res {
        Ok(_) => FeedState::Ended,
        Err(e) => FeedState::Failed(e.to_string()),
    };
    let Replay {
        rings,
        frames,
        started,
        ..
    } = r;
    let report = p.finish();
    let s = Snapshot {
        report,
        events_from: 0,
        complete: true,
        frames_read: frames,
        drops: Drops::default(),
        hw: Vec::new(),
        state,
        wall_ns: started.elapsed().as_nanos() as u64,
    };
    if tx.send(Action::Snapshot(Box::new(s))).is_err() {
        return;
    }
    serve_writes(&rings, &r.dir, &tx, &ctl);
}

fn serve_writes(rings: &Rings, dir: &Path, tx: &SyncSender<Action>, ctl: &Receiver<Control>) {
    while let Ok(c) = ctl.recv() {
        match c {
            Control::Write { id, keys } => {
                let _ = tx.send(Action::Written(rings.write(dir, id, &keys)));
            }
            Control::Quit => return,
            Control::Pause(_) | Control::Step => {}
        }
    }
}

fn drops(live: &LiveSource) -> Drops {
    let mut d = Drops::default();
    for s in live.stats() {
        let p = s.pcap_stats().unwrap_or_default();
        d.kernel += p.kernel_dropped;
        d.iface += p.if_dropped;
        d.rocetap += s.queue_dropped.load(Ordering::Relaxed);
    }
    d
}

/// Analyzes live sources until the UI quits (or every source ends).
pub fn live(
    live: LiveSource,
    mut hw: HwReader,
    dcfg: dissectors::Config,
    dir: PathBuf,
    tx: SyncSender<Action>,
    ctl: Receiver<Control>,
) {
    let names: Vec<String> = live.sources().iter().map(|s| s.name.clone()).collect();
    let mut p = pipeline(dcfg);
    p.name_sources(names.iter().cloned());
    let mut merger = Merger::new(names.len());
    let mut rings = Rings::default();
    let mut sent_events = 0usize;
    let mut last_snap = Instant::now();
    let mut hw_last: Option<Instant> = None;
    let mut counters = Vec::new();
    let mut quit = false;
    let started = Instant::now();
    loop {
        let _ = p.pump(&live, &mut merger, Duration::from_millis(50), &mut rings);
        loop {
            match ctl.try_recv() {
                Ok(Control::Write { id, keys }) => {
                    let _ = tx.send(Action::Written(rings.write(&dir, id, &keys)));
                }
                Ok(Control::Quit) | Err(TryRecvError::Disconnected) => {
                    quit = true;
                    break;
                }
                Ok(Control::Pause(_) | Control::Step) => {}
                Err(TryRecvError::Empty) => break,
            }
        }
        if quit {
            live.stop();
            let _ = live.finish();
            return;
        }
        if !hw.is_empty() && hw_last.is_none_or_elapsed(Duration::from_secs(1)) {
            let now = Instant::now();
            counters = hw.read(now);
            hw_last = Some(now);
        }
        if merger.is_done() {
            let dr = drops(&live);
            let mut errors = Vec::new();
            for (n, s) in names.iter().zip(live.stats()) {
                if let Some(e) = s.error() {
                    errors.push(format!("{n}: {e}"));
                }
            }
            let _ = live.finish();
            let frames = p.frames();
            let s = Snapshot {
                report: p.finish(),
                events_from: 0,
                complete: true,
                frames_read: frames,
                drops: dr,
                hw: counters,
                state: if errors.is_empty() {
                    FeedState::Ended
                } else {
                    FeedState::Failed(errors.join("; "))
                },
                wall_ns: started.elapsed().as_nanos() as u64,
            };
            if tx.send(Action::Snapshot(Box::new(s))).is_ok() {
                serve_writes(&rings, &dir, &tx, &ctl);
            }
            return;
        }
        if last_snap.elapsed() >= SNAPSHOT_EVERY {
            last_snap = Instant::now();
            let n = p.analyzer().events_recorded();
            let s = Snapshot {
                report: p.analyzer().snapshot(sent_events),
                events_from: sent_events,
                complete: false,
                frames_read: p.frames(),
                drops: drops(&live),
                hw: counters.clone(),
                state: FeedState::Running,
                wall_ns: started.elapsed().as_nanos() as u64,
            };
            match tx.try_send(Action::Snapshot(Box::new(s))) {
                Ok(()) => sent_events = n,
                Err(TrySendError::Full(_)) => {}
                Err(TrySendError::Disconnected(_)) => {
                    live.stop();
                    let _ = live.finish();
                    return;
                }
            }
        }
    }
}

trait Due {
    fn is_none_or_elapsed(&self, d: Duration) -> bool;
}

impl Due for Option<Instant> {
    fn is_none_or_elapsed(&self, d: Duration) -> bool {
        self.is_none_or(|t| t.elapsed() >= d)
    }
}

#[cfg(test)]
mod tests;
