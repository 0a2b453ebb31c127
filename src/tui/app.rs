//! The UI state and its transitions: every key becomes an [`Action`], and
//! [`App::apply`] turns the state into the next one, returning the [`Effect`] the run loop
//! must carry out (tell the feeder to pause, step or write a flow; quit). No terminal, no
//! clock, no I/O here, so every transition is a unit test.

use crate::analysis::flow::FlowKey;
use crate::analysis::{Event, FlowSummary, Report};
use dissectors::Psn;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};

mod snapshot;
pub use snapshot::{Drops, FeedState, HwCounter, Snapshot, Trend};

/// Samples kept per flow for the trend sparklines.
pub const TREND_LEN: usize = 60;
/// Events kept by the UI (the analyzer caps its own log as well).
pub const MAX_EVENTS: usize = 100_000;

/// How the flows table is ordered (`s` cycles through them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    /// Fastest first (the latest interval's Gb/s while the feed runs, the average once it
    /// ended), ties by flow id.
    Rate,
    /// Most trouble first (gaps, resends, NAKs, RNR NAKs, timeouts, CE marks and CNPs
    /// summed, see [`problems`]), ties by flow id.
    Problems,
    /// By flow key (source, destination, DestQP), then id.
    Name,
}

impl Sort {
    /// The name shown in the header: `rate`, `problems`, `name`.
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

/// The screen being shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// The flows table.
    Flows,
    /// The flow with this id.
    Detail(u32),
    /// The event list of the whole run.
    Events,
}

/// Where the frames come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Replaying a file (`-r`): pause and single-step work, the feed ends.
    Replay,
    /// A live capture on an interface: pausing holds snapshots, the feed never ends by
    /// itself.
    Live,
}

/// What a key press (or the feeder) asks of the [`App`]; applied by [`App::apply`].
#[derive(Clone, Debug)]
pub enum Action {
    /// Leave the UI.
    Quit,
    /// Move the selection (or scroll) up one row.
    Up,
    /// Move the selection (or scroll) down one row.
    Down,
    /// Move up 10 rows.
    PageUp,
    /// Move down 10 rows.
    PageDown,
    /// Go to the first row.
    Top,
    /// Go to the last row.
    Bottom,
    /// Open the selected flow's detail (or close the help overlay).
    Enter,
    /// Go back to the previous view (or close the help overlay).
    Back,
    /// Next sort order ([`Sort`]).
    CycleSort,
    /// Start typing a filter (`/`).
    StartFilter,
    /// A character typed into the filter.
    FilterChar(char),
    /// Delete the filter's last character.
    FilterBackspace,
    /// Keep the filter typed and stop editing.
    FilterDone,
    /// Drop the filter being typed and stop editing.
    FilterCancel,
    /// Pause or resume the feed.
    TogglePause,
    /// Replay: read one more frame, then pause.
    Step,
    /// Write the selected flow's frames (and its peer's) to a file.
    WriteFlow,
    /// Show or leave the event list.
    ToggleEvents,
    /// Show or hide the help overlay.
    ToggleHelp,
    /// A new snapshot from the feeder.
    Snapshot(Box<Snapshot>),
    /// The feeder wrote a flow's frames (path and frame count) or failed (message).
    Written(Result<(String, u64), super::feed::WriteError>),
}

/// What the run loop must do after a transition.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Nothing to do.
    None,
    /// Leave the UI.
    Quit,
    /// Pause (`true`) or resume (`false`) the feeder.
    Pause(bool),
    /// Ask the feeder for one more frame (replay).
    Step,
    /// Write the frames of these flows (the selected one and its peer) as flow `id`.
    Write {
        /// The flow id the file is named after.
        id: u32,
        /// Keys of the flows whose frames go into the file.
        keys: Vec<FlowKey>,
    },
}

/// The UI's whole state: the latest snapshot's data and what the user is looking at. Keys
/// become [`Action`]s, [`App::apply`] changes the state, and the render functions only read
/// it.
pub struct App {
    /// What is being shown: `replay congestion.pcap x1` / `live eth2`.
    pub source: String,
    /// Replay or live.
    pub mode: Mode,
    /// The latest report from the feeder; `None` before the first snapshot.
    pub report: Option<Report>,
    /// Every event so far, oldest first.
    pub events: Vec<Event>,
    /// Frames read so far by the feeder.
    pub frames_read: u64,
    /// Packets lost before they reached rocetap, by where.
    pub drops: Drops,
    /// NIC hardware counters, latest reading (empty when none are readable).
    pub hw: Vec<HwCounter>,
    /// Whether the feeder runs, is paused or has ended.
    pub feed: FeedState,
    /// Recent throughput samples per flow id, for the sparklines.
    pub trends: HashMap<u32, Trend>,
    /// Index in `events` of each flow's latest event.
    last_event: HashMap<u32, usize>,
    /// Frames per second over the last snapshot interval (capture time in replay, wall
    /// time live); the whole run's average once a replay has ended.
    pub frame_rate: f64,
    last_frames: Option<(u64, u64)>,
    /// The kernel's QP tables (`top --qp-table`): the detail view names the QPs behind a
    /// flow; empty without the option.
    pub qp_table: Vec<crate::qptable::QpEntry>,
    /// The merged analysis of several taps (`top --tap`): the flows table gains the
    /// segment where each flow's packets were lost, the detail view the segments and
    /// delays; `None` without the option.
    pub taps: Option<std::sync::Arc<crate::taps::Report>>,
    /// The screen shown.
    pub view: View,
    /// The help overlay is shown.
    pub help: bool,
    /// The flows table's order.
    pub sort: Sort,
    /// The filter applied to the flows table (case-insensitive substring; empty for none).
    pub filter: String,
    /// The filter being typed, while `/` is active.
    pub editing: Option<String>,
    /// Row selected in the flows table (index into [`App::rows`]).
    pub selected: usize,
    /// First row shown in the events pane / the detail's event log.
    pub scroll: usize,
    /// Live mode paused: snapshots are held here and shown on resume.
    held: Option<Box<Snapshot>>,
    /// The feeder is paused (replay) or snapshots are being held (live).
    pub paused: bool,
    /// A one-line message for the footer (the last action's result); `None` when there is
    /// none.
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
    /// A UI with no data yet, showing `source` in the header.
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
            qp_table: Vec::new(),
            taps: None,
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
        if cache.as_ref().is_none_or(|(k, _)| *k != key) {
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
                v.sort_by_cached_key(|&i| (std::cmp::Reverse(problems(&flows[i])), flows[i].id));
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

    /// The summary of flow `id` in the latest report; `None` when there is none.
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

    /// One state transition: the action applied, and what the run loop must do.
    pub fn apply(&mut self, a: Action) -> Effect {
        if self.editing.is_some() {
            return self.apply_editing(a);
        }
        if self.help {
            return self.apply_help(a);
        }
        match a {
            Action::TogglePause => self.toggle_pause(),
            Action::Step => self.step(),
            Action::WriteFlow => self.write_flow(),
            a => self.apply_view(a),
        }
    }

    /// While the filter is typed: every key edits it.
    fn apply_editing(&mut self, a: Action) -> Effect {
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
        }
        Effect::None
    }

    /// While the help overlay is up: it closes, or the app quits.
    fn apply_help(&mut self, a: Action) -> Effect {
        match a {
            Action::Quit => return Effect::Quit,
            Action::Snapshot(s) => self.snapshot(s),
            Action::Written(r) => self.written(r),
            Action::ToggleHelp | Action::Back | Action::Enter => self.help = false,
            _ => {}
        }
        Effect::None
    }

    /// Navigation, views, sort and filter.
    fn apply_view(&mut self, a: Action) -> Effect {
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
            Action::TogglePause | Action::Step | Action::WriteFlow => {}
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

    /// `p`: a replay pauses; a live capture goes on and only the display freezes.
    fn toggle_pause(&mut self) -> Effect {
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
        match self.mode {
            Mode::Replay => Effect::Pause(self.paused),
            // Live capture goes on; only the display is frozen.
            Mode::Live => Effect::None,
        }
    }

    /// `.`: one frame of a replay.
    fn step(&mut self) -> Effect {
        match self.mode {
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
        }
    }

    /// `w`: the selected flow (or the one in detail) and its peer, to a pcapng.
    fn write_flow(&mut self) -> Effect {
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
        Effect::Write { id, keys }
    }

    fn written(&mut self, r: Result<(String, u64), super::feed::WriteError>) {
        self.status = Some(match r {
            Ok((path, n)) => format!("wrote {n} frames to {path}"),
            Err(e) => format!("write failed: {e}"),
        });
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
    let c = &f.counters;
    c.psn_gap_events
        + c.retransmitted_packets
        + f.counters.naks()
        + c.rnr_nak
        + c.timeout_retransmissions
        + c.ce_marked
        + c.cnp_sent
        + c.cnp_received
}

#[cfg(test)]
mod tests;
