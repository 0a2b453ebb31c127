//! What the feeder hands the app a few times a second, and how the app takes it in:
//! the report replaces the last one, events accumulate (capped), and every flow's trend
//! gets a sample for its sparklines.

use super::*;

/// Drop counters of the capture path, summed over the sources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drops {
    /// Packets the kernel dropped before libpcap got them (`ps_drop`).
    pub kernel: u64,
    /// Packets the interface dropped (`ps_ifdrop`).
    pub iface: u64,
    /// Frames rocetap dropped itself because its capture queue was full.
    pub rocetap: u64,
}

impl Drops {
    /// Whether anything was dropped anywhere.
    pub fn any(&self) -> bool {
        self.kernel + self.iface + self.rocetap > 0
    }
}

/// One RDMA hardware counter with its change per second.
#[derive(Clone, Debug, PartialEq)]
pub struct HwCounter {
    /// `mlx5_0/1`
    pub port: String,
    /// The counter's file name in `hw_counters` (e.g. `out_of_sequence`).
    pub name: String,
    /// Its latest value.
    pub value: u64,
    /// Change per second since the previous reading; `None` on the first reading.
    pub per_s: Option<f64>,
}

/// What the feeder is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeedState {
    /// Reading and analyzing.
    Running,
    /// Paused by the user (replay), waiting for resume or a step.
    Paused,
    /// Every frame of the files was read (replay) or every source ended (live).
    Ended,
    /// The feeder stopped on an error (shown in the header).
    Failed(String),
}

/// What the feeder sends a few times a second.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The analyzer's report so far (only the events since the previous snapshot).
    pub report: Report,
    /// Index in the analyzer's event log of `report.events[0]`.
    pub events_from: usize,
    /// `report` is the finished report: its events are the complete, final list.
    pub complete: bool,
    /// Frames read so far, over every source.
    pub frames_read: u64,
    /// Drops of the capture path so far (live only; zero in replay).
    pub drops: Drops,
    /// The hardware counters' latest reading (live on an RDMA device; empty otherwise).
    pub hw: Vec<HwCounter>,
    /// What the feeder is doing.
    pub state: FeedState,
    /// Nanoseconds since the feeder started (its monotonic clock).
    pub wall_ns: u64,
}

/// Per-flow history for the sparklines.
#[derive(Clone, Debug, Default)]
pub struct Trend {
    /// Mb/s per sample interval.
    pub mbps: VecDeque<u64>,
    /// PSNs advanced per sample interval.
    pub psn_step: VecDeque<u64>,
    /// Gb/s and packets/s over the latest interval.
    pub now: Option<(f64, f64)>,
    /// (time, bytes, packets, last PSN) at the latest sample.
    last: Option<(u64, u64, u64, Option<Psn>)>,
}

fn push(samples: &mut VecDeque<u64>, v: u64) {
    if samples.len() == TREND_LEN {
        samples.pop_front();
    }
    samples.push_back(v);
}

impl App {
    pub(super) fn snapshot(&mut self, s: Box<Snapshot>) {
        if self.paused && self.mode == Mode::Live {
            self.held = Some(s);
            return;
        }
        let s = *s;
        let r = s.report;
        if s.complete {
            self.events = r.events.clone();
        } else {
            self.events.truncate(s.events_from);
            self.events.extend(r.events.iter().cloned());
        }
        if self.events.len() > MAX_EVENTS {
            let cut = self.events.len() - MAX_EVENTS;
            self.events.drain(..cut);
        }
        self.last_event.clear();
        for (i, e) in self.events.iter().enumerate() {
            if let Some(id) = e.flow {
                self.last_event.insert(id, i);
            }
        }
        // The clock of the rates: capture time in replay (so a paused or fast replay
        // shows the recorded rates), the feeder's wall clock live (so idle flows fall to 0).
        let now = match self.mode {
            Mode::Replay => r.last_ts_ns,
            Mode::Live => s.wall_ns,
        };
        for f in &r.flows {
            let t = self.trends.entry(f.id).or_default();
            match t.last {
                Some((ts, _, _, _)) if now <= ts => {}
                Some((ts, bytes, packets, psn)) => {
                    let dt = now - ts;
                    let db = f.bytes.saturating_sub(bytes);
                    let dp = f.packets.saturating_sub(packets);
                    push(&mut t.mbps, db * 8_000 / dt);
                    let step = match (psn, f.last_psn) {
                        (Some(a), Some(b)) => u64::from(b.0.wrapping_sub(a.0) & 0xff_ffff),
                        _ => 0,
                    };
                    push(&mut t.psn_step, step);
                    t.now = Some((db as f64 * 8.0 / dt as f64, dp as f64 * 1e9 / dt as f64));
                    t.last = Some((now, f.bytes, f.packets, f.last_psn));
                }
                None => t.last = Some((now, f.bytes, f.packets, f.last_psn)),
            }
        }
        match self.last_frames {
            Some((frames, ts)) if now > ts => {
                self.frame_rate =
                    r.totals.frames.saturating_sub(frames) as f64 * 1e9 / (now - ts) as f64;
            }
            _ => {}
        }
        if self.last_frames.is_none_or(|(_, ts)| now > ts) {
            self.last_frames = Some((r.totals.frames, now));
        }
        if s.complete && r.derived.duration_s > 0.0 {
            // The whole run's average (a replay at full speed sends only this one).
            self.frame_rate = r.totals.frames as f64 / r.derived.duration_s;
        }
        self.frames_read = s.frames_read;
        self.drops = s.drops;
        self.hw = s.hw;
        self.feed = s.state;
        if self.feed == FeedState::Ended {
            self.paused = false;
        }
        self.report = Some(r);
        self.generation += 1;
        self.clamp();
    }
}
