//! The UI state and its transitions: every key becomes an [`Action`], and
//! [`App::apply`] turns the state into the next one, returning the [`Effect`] the run loop
//! must carry out (tell the feeder to pause, step or write a flow; quit). No terminal, no
//! clock, no I/O here, so every transition is a unit test.

use crate::analysis::flow::FlowKey;
use crate::analysis::{Event, FlowSummary, Report};
use dissectors::Psn;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};

/// Samples kept per flow for the trend sparklines.
pub const TREND_LEN: usize = 60;
/// Events kept by the UI (the analyzer caps its own log as well).
pub const MAX_EVENTS: usize = 100_000;

/// Drop counters of the capture path, summed over the sources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drops {
    pub kernel: u64,
    pub iface: u64,
    pub rocetap: u64,
}

impl Drops {
    pub fn any(&self) -> bool {
        self.kernel + self.iface + self.rocetap > 0
    }
}

/// One RDMA hardware counter with its change per second.
#[derive(Clone, Debug, PartialEq)]
pub struct HwCounter {
    /// `mlx5_0/1`
    pub port: String,
    pub name: String,
    pub value: u64,
    pub per_s: Option<f64>,
}

/// What the feeder is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeedState {
    Running,
    Paused,
    /// Every frame of the files was read (replay) or every source ended (live).
    Ended,
    /// The feeder stopped on an error (shown in the header).
    Failed(String),
}

/// What the feeder sends a few times a second.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub report: Report,
    /// Index in the analyzer's event log of `report.events[0]`.
    pub events_from: usize,
    /// `report` is the finished report: its events are the complete, final list.
    pub complete: bool,
    pub frames_read: u64,
    pub drops: Drops,
    pub hw: Vec<HwCounter>,
    pub state: FeedState,
    /// Nanoseconds since the feeder started (its monotonic clock).
    pub wall_ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    Rate,
    Problems,
    Name,
}

impl Sort {
    pub fn name(self) -> &'static str {
        match self {
            Sort::Rate => "rate",
            Sort::Problems => "problems",
            Sort::Name => "name",
        }
    }
    fn next(self) -> Sort {
        match self {
            Sort::Rate => Sort::Problems,
            Sort::Problems => Sort::Name,
            Sort::Name => Sort::Rate,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Flows,
    /// The flow with this id.
    Detail(u32),
    Events,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Replay,
    Live,
}

#[derive(Clone, Debug)]
pub enum Action {
    Quit,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Enter,
    Back,
    CycleSort,
    StartFilter,
    FilterChar(char),
    FilterBackspace,
    FilterDone,
    FilterCancel,
    TogglePause,
    Step,
    WriteFlow,
    ToggleEvents,
    ToggleHelp,
    Snapshot(Box<Snapshot>),
    /// The feeder wrote a flow's frames (path and frame count) or failed (message).
    Written(Result<(String, u64), String>),
}

/// What the run loop must do after a transition.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    None,
    Quit,
    Pause(bool),
    Step,
    /// Write the frames of these flows (the selected one and its peer) as flow `id`.
    Write {
        id: u32,
        keys: Vec<FlowKey>,
    },
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

fn push(q: &mut VecDeque<u64>, v: u64) {
    if q.len() == TREND_LEN {
        q.pop_front();
    }
    q.push_back(v);
}

pub struct App {
    /// What is being shown: `replay congestion.pcap x1` / `live eth2`.
    pub source: String,
    pub mode: Mode,
    pub report: Option<Report>,
    /// Every event so far, oldest first.
    pub events: Vec<Event>,
    pub frames_read: u64,
    pub drops: Drops,
    pub hw: Vec<HwCounter>,
    pub feed: FeedState,
    pub trends: HashMap<u32, Trend>,
    /// Index in `events` of each flow's latest event.
    last_event: HashMap<u32, usize>,
    /// Frames per second over the last snapshot interval (capture time in replay, wall
    /// time live); the whole run's average once a replay has ended.
    pub frame_rate: f64,
    last_frames: Option<(u64, u64)>,
    pub view: View,
    pub help: bool,
    pub sort: Sort,
    pub filter: String,
    /// The filter being typed, while `/` is active.
    pub editing: Option<String>,
    /// Row selected in the flows table (index into [`App::rows`]).
    pub selected: usize,
    /// First row shown in the events pane / the detail's event log.
    pub scroll: usize,
    /// Live mode paused: snapshots are held here and shown on resume.
    held: Option<Box<Snapshot>>,
    pub paused: bool,
    pub status: Option<String>,
    /// Snapshots applied: the table's order is computed once per snapshot (and per
    /// sort or filter change), not once per redraw or key press.
    generation: u64,
    order: RefCell<Option<(OrderKey, Vec<usize>)>>,
}

/// What the table's order depends on.
#[derive(Clone, Debug, PartialEq)]
struct OrderKey {
    generation: u64,
    sort: Sort,
    filter: String,
    ended: bool,
    /// The report's flows (a report assigned directly, as tests do, is a new one).
    flows: (usize, usize),
}

impl App {
    pub fn new(source: String, mode: Mode) -> Self {
        App {
            source,
            mode,
            report: None,
            events: Vec::new(),
            frames_read: 0,
            drops: Drops::default(),
            hw: Vec::new(),
            feed: FeedState::Running,
            trends: HashMap::new(),
            last_event: HashMap::new(),
            frame_rate: 0.0,
            last_frames: None,
            view: View::Flows,
            help: false,
            sort: Sort::Rate,
            filter: String::new(),
            editing: None,
            selected: 0,
            scroll: 0,
            held: None,
            paused: false,
            status: None,
            generation: 0,
            order: RefCell::new(None),
        }
    }

    /// The flows shown in the table: filtered, sorted. The order is cached until the
    /// next snapshot, sort or filter; a call costs one pointer per row.
    pub fn rows(&self) -> Vec<&FlowSummary> {
        let Some(r) = &self.report else {
            return Vec::new();
        };
        let key = OrderKey {
            generation: self.generation,
            sort: self.sort,
            filter: self.filter.clone(),
            ended: self.feed == FeedState::Ended,
            flows: (r.flows.as_ptr() as usize, r.flows.len()),
        };
        let mut cache = self.order.borrow_mut();
        if cache.as_ref().map_or(true, |(k, _)| *k != key) {
            *cache = Some((key, self.order_of(&r.flows)));
        }
        let order = &cache.as_ref().expect("just filled").1;
        order.iter().map(|&i| &r.flows[i]).collect()
    }

    /// Drops the cached order (benchmarks time the ordering itself).
    #[cfg(test)]
    pub fn forget_order(&self) {
        self.order.replace(None);
    }

    /// Indices of the flows the table shows, filtered and sorted (each sort key
    /// computed once per flow).
    fn order_of(&self, flows: &[FlowSummary]) -> Vec<usize> {
        let needle = self.filter.to_lowercase();
        let mut v: Vec<usize> = (0..flows.len())
            .filter(|&i| needle.is_empty() || matches_filter(&flows[i], &needle))
            .collect();
        match self.sort {
            Sort::Rate => {
                let mut k: Vec<(f64, u32, usize)> = v
                    .iter()
                    .map(|&i| (self.rates(&flows[i]).0, flows[i].id, i))
                    .collect();
                k.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                v = k.into_iter().map(|x| x.2).collect();
            }
            Sort::Problems => {
                v.sort_by_cached_key(|&i| (std::cmp::Reverse(problems(&flows[i])), flows[i].id))
            }
            Sort::Name => v.sort_by(|&a, &b| {
                let (a, b) = (&flows[a], &flows[b]);
                (a.key(), a.id).cmp(&(b.key(), b.id))
            }),
        }
        v
    }

    /// Gb/s and packets/s shown for a flow: the latest interval's while the feed runs,
    /// the flow's average once it has ended.
    pub fn rates(&self, f: &FlowSummary) -> (f64, f64) {
        match self.trends.get(&f.id).and_then(|t| t.now) {
            Some(r) if self.feed != FeedState::Ended => r,
            _ => (f.gbps, f.pps),
        }
    }

    pub fn flow(&self, id: u32) -> Option<&FlowSummary> {
        self.report.as_ref()?.flows.iter().find(|f| f.id == id)
    }

    /// The latest event of a flow.
    pub fn last_event(&self, id: u32) -> Option<&Event> {
        self.last_event.get(&id).and_then(|&i| self.events.get(i))
    }

    /// Events of a flow and of its peer direction, newest first.
    pub fn flow_events(&self, id: u32) -> Vec<&Event> {
        let peer = self.flow(id).and_then(|f| f.peer);
        self.events
            .iter()
            .rev()
            .filter(|e| e.flow.is_some() && (e.flow == Some(id) || e.flow == peer))
            .collect()
    }

    fn selected_flow(&self) -> Option<u32> {
        self.rows().get(self.selected).map(|f| f.id)
    }

    fn clamp(&mut self) {
        let n = self.rows().len();
        self.selected = self.selected.min(n.saturating_sub(1));
    }

    fn scroll_len(&self) -> usize {
        match self.view {
            View::Events => self.events.len(),
            View::Detail(id) => self.flow_events(id).len(),
            View::Flows => 0,
        }
    }

    fn move_by(&mut self, d: isize) {
        if self.view == View::Flows {
            let n = self.rows().len();
            self.selected =
                (self.selected as isize + d).clamp(0, n.saturating_sub(1) as isize) as usize;
        } else {
            let n = self.scroll_len();
            self.scroll =
                (self.scroll as isize + d).clamp(0, n.saturating_sub(1) as isize) as usize;
        }
    }

    pub fn apply(&mut self, a: Action) -> Effect {
        if let Some(text) = self.editing.as_mut() {
            match a {
                Action::FilterChar(c) => {
                    text.push(c);
                    self.filter = text.clone();
                    self.selected = 0;
                }
                Action::FilterBackspace => {
                    text.pop();
                    self.filter = text.clone();
                    self.selected = 0;
                }
                Action::FilterDone => self.editing = None,
                Action::FilterCancel => {
                    self.editing = None;
                    self.filter.clear();
                    self.selected = 0;
                }
                Action::Snapshot(s) => self.snapshot(s),
                Action::Written(r) => self.written(r),
                Action::Quit => return Effect::Quit,
                _ => {}
            }
            return Effect::None;
        }
        if self.help {
            match a {
                Action::Quit => return Effect::Quit,
                Action::Snapshot(s) => self.snapshot(s),
                Action::Written(r) => self.written(r),
                Action::ToggleHelp | Action::Back | Action::Enter => self.help = false,
                _ => {}
            }
            return Effect::None;
        }
        match a {
            Action::Quit => return Effect::Quit,
            Action::Up => self.move_by(-1),
            Action::Down => self.move_by(1),
            Action::PageUp => self.move_by(-10),
            Action::PageDown => self.move_by(10),
            Action::Top => self.move_by(isize::MIN / 2),
            Action::Bottom => self.move_by(isize::MAX / 2),
            Action::Enter => {
                if self.view == View::Flows {
                    if let Some(id) = self.selected_flow() {
                        self.view = View::Detail(id);
                        self.scroll = 0;
                    }
                }
            }
            Action::Back => {
                if self.view != View::Flows {
                    self.view = View::Flows;
                    self.scroll = 0;
                } else if !self.filter.is_empty() {
                    self.filter.clear();
                    self.selected = 0;
                }
            }
            Action::CycleSort => {
                self.sort = self.sort.next();
                self.selected = 0;
            }
            Action::StartFilter => {
                self.view = View::Flows;
                self.editing = Some(self.filter.clone());
            }
            Action::FilterChar(_)
            | Action::FilterBackspace
            | Action::FilterDone
            | Action::FilterCancel => {}
            Action::TogglePause => {
                if self.feed == FeedState::Ended {
                    self.status = Some("the replay has ended".into());
                    return Effect::None;
                }
                self.paused = !self.paused;
                if !self.paused {
                    if let Some(s) = self.held.take() {
                        self.snapshot(s);
                    }
                }
                return match self.mode {
                    Mode::Replay => Effect::Pause(self.paused),
                    // Live capture goes on; only the display is frozen.
                    Mode::Live => Effect::None,
                };
            }
            Action::Step => {
                return match self.mode {
                    Mode::Replay if self.feed != FeedState::Ended => {
                        self.paused = true;
                        Effect::Step
                    }
                    Mode::Replay => {
                        self.status = Some("the replay has ended".into());
                        Effect::None
                    }
                    Mode::Live => {
                        self.status = Some("single-step works in replay (-r) only".into());
                        Effect::None
                    }
                };
            }
            Action::WriteFlow => {
                let id = match self.view {
                    View::Detail(id) => Some(id),
                    _ => self.selected_flow(),
                };
                let Some(f) = id.and_then(|id| self.flow(id)) else {
                    self.status = Some("no flow selected".into());
                    return Effect::None;
                };
                let mut keys = vec![key_of(f)];
                if let Some(p) = f.peer.and_then(|p| self.flow(p)) {
                    keys.push(key_of(p));
                }
                let id = f.id;
                self.status = Some(format!("writing flow #{id}..."));
                return Effect::Write { id, keys };
            }
            Action::ToggleEvents => {
                self.view = if self.view == View::Events {
                    View::Flows
                } else {
                    View::Events
                };
                self.scroll = 0;
            }
            Action::ToggleHelp => self.help = true,
            Action::Snapshot(s) => self.snapshot(s),
            Action::Written(r) => self.written(r),
        }
        Effect::None
    }

    fn written(&mut self, r: Result<(String, u64), String>) {
        self.status = Some(match r {
            Ok((path, n)) => format!("wrote {n} frames to {path}"),
            Err(e) => format!("write failed: {e}"),
        });
    }

    fn snapshot(&mut self, s: Box<Snapshot>) {
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
        if self.last_frames.map_or(true, |(_, ts)| now > ts) {
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

    /// The ICRC verdict of the capture path, in a few words.
    pub fn icrc_verdict(&self) -> (&'static str, bool) {
        let Some(r) = &self.report else {
            return ("ICRC -", false);
        };
        let t = &r.totals;
        match (t.icrc_ok, t.icrc_bad) {
            (0, 0) => ("ICRC unchecked", false),
            (_, 0) => ("ICRC ok", false),
            (0, _) => ("ICRC not preserved by capture", true),
            _ => ("ICRC BAD", true),
        }
    }
}

fn key_of(f: &FlowSummary) -> FlowKey {
    f.key()
}

fn matches_filter(f: &FlowSummary, needle: &str) -> bool {
    let has = |v: &dyn std::fmt::Display| v.to_string().to_lowercase().contains(needle);
    has(&f.src) || has(&f.dst) || has(&f.qp) || format!("#{}", f.id) == needle
}

/// Everything that went wrong on a flow, as one number to sort by.
pub fn problems(f: &FlowSummary) -> u64 {
    let c = &f.c;
    c.psn_gap_events
        + c.retransmitted_packets
        + f.c.naks()
        + c.rnr_nak
        + c.timeout_retransmissions
        + c.ce_marked
        + c.cnp_sent
        + c.cnp_received
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::render::tests::app_of;

    #[test]
    fn navigation_detail_and_back() {
        let mut app = app_of("congestion.pcap", 16, Mode::Replay);
        assert_eq!(app.rows().len(), 8);
        // Sorted by rate: the first row is the fastest flow.
        let rates: Vec<f64> = app.rows().iter().map(|f| f.gbps).collect();
        assert!(rates.windows(2).all(|w| w[0] >= w[1]), "{rates:?}");
        assert_eq!(app.apply(Action::Up), Effect::None);
        assert_eq!(app.selected, 0);
        for _ in 0..20 {
            app.apply(Action::Down);
        }
        assert_eq!(app.selected, 7, "clamped to the last row");
        app.apply(Action::Top);
        assert_eq!(app.selected, 0);
        app.apply(Action::Down);
        let id = app.rows()[1].id;
        app.apply(Action::Enter);
        assert_eq!(app.view, View::Detail(id));
        app.apply(Action::Back);
        assert_eq!(app.view, View::Flows);
        assert_eq!(app.selected, 1, "the selection survives the detail");
        assert_eq!(app.apply(Action::Quit), Effect::Quit);
    }

    #[test]
    fn sort_cycles_and_orders() {
        let mut app = app_of("loss-upstream.pcap", 16, Mode::Replay);
        app.apply(Action::CycleSort);
        assert_eq!(app.sort, Sort::Problems);
        let p: Vec<u64> = app.rows().iter().map(|f| problems(f)).collect();
        assert!(p.windows(2).all(|w| w[0] >= w[1]), "{p:?}");
        assert!(p[0] > 0);
        app.apply(Action::CycleSort);
        assert_eq!(app.sort, Sort::Name);
        let names: Vec<_> = app.rows().iter().map(|f| f.src).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        app.apply(Action::CycleSort);
        assert_eq!(app.sort, Sort::Rate);
    }

    #[test]
    fn filter_typing_keeps_and_clears() {
        let mut app = app_of("congestion.pcap", 16, Mode::Replay);
        app.apply(Action::StartFilter);
        assert!(app.editing.is_some());
        // While typing, command letters are text: `q` does not quit.
        for c in "0x0001".chars() {
            assert_eq!(app.apply(Action::FilterChar(c)), Effect::None);
        }
        assert_eq!(app.rows().len(), 3, "QPs 0x000101, 0x000103, 0x000104");
        app.apply(Action::FilterBackspace);
        assert_eq!(app.filter, "0x000");
        for c in "103".chars() {
            app.apply(Action::FilterChar(c));
        }
        assert_eq!(app.rows().len(), 1);
        assert_eq!(app.rows()[0].qp, dissectors::Qpn(0x103));
        app.apply(Action::FilterDone);
        assert!(app.editing.is_none());
        assert_eq!(app.filter, "0x000103");
        // Esc on the flows view clears a kept filter.
        app.apply(Action::Back);
        assert_eq!(app.rows().len(), 8);
        // Esc while typing drops the filter.
        app.apply(Action::StartFilter);
        app.apply(Action::FilterChar('2'));
        app.apply(Action::FilterCancel);
        assert!(app.filter.is_empty() && app.editing.is_none());
        // An IP filter.
        app.apply(Action::StartFilter);
        for c in "203.0.113.6".chars() {
            app.apply(Action::FilterChar(c));
        }
        assert_eq!(app.rows().len(), 2);
    }

    #[test]
    fn pause_step_write_effects() {
        let mut app = App::new("replay x".into(), Mode::Replay);
        assert_eq!(app.apply(Action::TogglePause), Effect::Pause(true));
        assert!(app.paused);
        assert_eq!(app.apply(Action::TogglePause), Effect::Pause(false));
        assert_eq!(app.apply(Action::Step), Effect::Step);
        assert!(app.paused, "a step leaves the replay paused");
        assert_eq!(app.apply(Action::WriteFlow), Effect::None);
        assert_eq!(app.status.as_deref(), Some("no flow selected"));

        let mut app = app_of("congestion.pcap", 16, Mode::Replay);
        assert_eq!(
            app.apply(Action::Step),
            Effect::None,
            "the replay has ended"
        );
        let f = app.rows()[0].clone();
        let peer = app.flow(f.peer.unwrap()).unwrap().clone();
        match app.apply(Action::WriteFlow) {
            Effect::Write { id, keys } => {
                assert_eq!(id, f.id);
                assert_eq!(keys.len(), 2);
                assert_eq!(keys[0].qp, f.qp);
                assert_eq!(keys[1].qp, peer.qp);
            }
            e => panic!("{e:?}"),
        }
        app.apply(Action::Written(Ok(("x.pcapng".into(), 12))));
        assert_eq!(app.status.as_deref(), Some("wrote 12 frames to x.pcapng"));
    }

    #[test]
    fn live_pause_freezes_the_display_only() {
        let mut app = app_of("congestion.pcap", 16, Mode::Live);
        app.feed = FeedState::Running;
        assert_eq!(app.apply(Action::TogglePause), Effect::None);
        let before = app.report.as_ref().unwrap().totals.frames;
        let mut r = app.report.clone().unwrap();
        r.totals.frames += 100;
        r.events.clear();
        let s = Snapshot {
            report: r,
            events_from: app.events.len(),
            complete: false,
            frames_read: 0,
            drops: Drops::default(),
            hw: Vec::new(),
            state: FeedState::Running,
            wall_ns: 1,
        };
        app.apply(Action::Snapshot(Box::new(s)));
        assert_eq!(app.report.as_ref().unwrap().totals.frames, before);
        app.apply(Action::TogglePause);
        assert_eq!(app.report.as_ref().unwrap().totals.frames, before + 100);
        assert_eq!(app.apply(Action::Step), Effect::None);
        assert!(app.status.as_deref().unwrap().contains("replay"));
    }

    #[test]
    fn snapshots_accumulate_events_like_the_final_report() {
        // Fed 5 frames at a time, the events assembled from snapshots before the final
        // report are a prefix of the finished report's events.
        let app = app_of("loss-upstream.pcap", 5, Mode::Replay);
        let r = app.report.as_ref().unwrap();
        assert_eq!(app.events.len(), r.events.len());
        assert!(app
            .events
            .iter()
            .any(|e| e.kind == crate::analysis::EventKind::Nak));
        assert!(
            app.trends.values().any(|t| t.mbps.len() > 3),
            "trends recorded"
        );
    }

    #[test]
    fn help_and_events_views() {
        let mut app = app_of("rnr.pcap", 16, Mode::Replay);
        app.apply(Action::ToggleHelp);
        assert!(app.help);
        // Keys other than quit / close are ignored under the help.
        app.apply(Action::Down);
        assert_eq!(app.selected, 0);
        app.apply(Action::Back);
        assert!(!app.help);
        app.apply(Action::ToggleEvents);
        assert_eq!(app.view, View::Events);
        app.apply(Action::Down);
        assert_eq!(app.scroll, 1);
        app.apply(Action::ToggleEvents);
        assert_eq!(app.view, View::Flows);
    }

    #[test]
    fn rates_are_averages_when_ended_and_fall_to_zero_when_idle_live() {
        let app = app_of("congestion.pcap", 16, Mode::Replay);
        for f in app.rows() {
            assert_eq!(app.rates(f), (f.gbps, f.pps));
        }
        let mut live = app_of("congestion.pcap", 16, Mode::Live);
        let mut r = live.report.clone().unwrap();
        r.events.clear();
        for wall in [10_000_000_000u64, 11_000_000_000] {
            live.apply(Action::Snapshot(Box::new(Snapshot {
                report: r.clone(),
                events_from: live.events.len(),
                complete: false,
                frames_read: 0,
                drops: Drops::default(),
                hw: Vec::new(),
                state: FeedState::Running,
                wall_ns: wall,
            })));
        }
        assert_eq!(live.frame_rate, 0.0);
        for f in live.rows() {
            assert_eq!(live.rates(f), (0.0, 0.0), "flow {} is idle", f.id);
            assert_eq!(live.trends[&f.id].mbps.back(), Some(&0));
        }
        // Ties in rate keep the id order.
        let ids: Vec<u32> = live.rows().iter().map(|f| f.id).collect();
        assert_eq!(ids, (0..8).collect::<Vec<u32>>());
        r.flows[3].bytes += 125_000_000;
        r.flows[3].packets += 1000;
        live.apply(Action::Snapshot(Box::new(Snapshot {
            report: r,
            events_from: live.events.len(),
            complete: false,
            frames_read: 0,
            drops: Drops::default(),
            hw: Vec::new(),
            state: FeedState::Running,
            wall_ns: 12_000_000_000,
        })));
        let top = live.rows()[0];
        assert_eq!(top.id, 3);
        assert_eq!(
            live.rates(top),
            (1.0, 1000.0),
            "125 MB and 1000 packets in 1 s"
        );
    }
}
