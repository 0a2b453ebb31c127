//! The analyzer: a deterministic state machine fed `(timestamp, decoded frame)` that
//! follows every queue pair and says what went wrong — PSN gaps and whether they were
//! recovered, go-back-N retransmissions and what triggered them (NAK, RNR NAK, timeout,
//! READ re-request), NAKs by code, READ tracking, ACK latency, ECN marks and the CNPs
//! they caused, PFC pauses and the flows they stalled, ICRC results, ARP trouble.
//!
//! Guarantees: no I/O, no clock — the same frames give the same report, computed on the
//! caller's thread. The one other thread is a helper that only makes memory ahead (chunks
//! of flow slots, the pages of the summary list; started once there are hundreds of
//! flows, see `store/mod.rs`), and nothing it does changes a result. The per-packet path
//! does not allocate (flows live in chunked slots found through a flow index of small
//! hashes, and hold only fixed-size rings and histograms); it allocates only when a new
//! flow, an address pair or an event appears. Flows idle for longer than
//! [`Config::idle_timeout_ns`] of capture time are folded into compact [`FlowSummary`]s
//! (found so by their next frame, which then begins a new flow, by a sweep every 16,384
//! frames, or by a live caller's clock, [`Analyzer::advance`]), so memory follows the
//! number of live QPs, not the packet count, and a QP number reused after a pause is a
//! new connection.
//! PSNs are compared with 24-bit serial arithmetic everywhere; wraparound is ordinary.
#![warn(missing_docs)]

mod account;
pub mod buckets;
pub mod cm;
mod congestion;
mod counters;
mod dispatch;
pub mod events;
mod expire;
pub mod flow;
mod gaps;
pub(crate) mod hist;
pub mod mirrors;
mod net;
mod packed;
mod pairing;
mod qos;
pub mod report;
mod requester;
mod responder;
pub mod ring;
pub mod stop;
mod store;
mod table;
#[cfg(test)]
mod tests;
mod trouble;
mod warm;

use dissectors::{Decoded, Ecn, StopKind};
pub(crate) use events::EventLog;
pub use events::{Event, EventKind};
pub use net::{
    ArpProblem, ArpSeen, ArpSummary, ArpSymptom, ArpSymptomKind, AskAnswer, Traffic, UnansweredAsk,
};
pub use report::{FlowSummary, Report, Totals};
pub(crate) use warm::Hint;

/// Analyzer settings.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// A flow with no packet for this long (capture time) is summarised and forgotten.
    pub idle_timeout_ns: u64,
    /// A PSN gap still open this long after it opened (capture time) is counted as
    /// unrecovered then, while its flow lives; filled later, it also counts in
    /// `gaps_filled_late`. Longer than any transport retry: 7 retries at the timeout
    /// rdma_cm sets for RoCE (exponent 18, 1.07 s) take 8.6 s; in the samples the
    /// longest NAK to resend is 16.9 ms (rxe-loss-upstream), timer retry 33.6 ms
    /// (tail-loss-timeout), RNR wait 132 ms (rxe-rnr).
    pub gap_timeout_ns: u64,
    /// Events kept for the report; later ones are counted, not stored.
    pub max_events: usize,
    /// Link speed used to turn PFC pause quanta (512 bit times) into time.
    pub link_bps: u64,
    /// ARP requests whose sender and target differ in this many leading bits are
    /// reported as asking across subnets.
    pub arp_prefix_len: u8,
    /// Summaries of finished flows kept for the report; beyond it a flow only counts in
    /// the totals, so memory stays bounded whatever the number of QPs over time.
    pub max_flow_summaries: usize,
    /// Live flows held at most; a packet of a new flow beyond it is counted
    /// ([`Analyzer::untracked_packets`]) and not followed, so memory stays bounded
    /// whatever the number of live QPs (the agent's memory budget sets it).
    pub max_flows: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            idle_timeout_ns: 60_000_000_000,
            gap_timeout_ns: 30_000_000_000,
            max_events: 100_000,
            link_bps: 100_000_000_000,
            arp_prefix_len: 24,
            max_flow_summaries: 20_000,
            max_flows: usize::MAX,
        }
    }
}

/// How many frames pass between two looks for idle flows (a flow's own next frame sees
/// at once that it idled out).
const SWEEP_EVERY: u64 = 1 << 14;

/// Counters that are not per flow.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Global {
    pub frames: u64,
    pub roce_packets: u64,
    pub ce_marked: u64,
    pub ecn: [u64; 4],
    pub cnp: u64,
    pub cnp_unmatched: u64,
    pub malformed: u64,
    pub truncated: u64,
    pub unsupported: u64,
    pub roce_unknown_opcode: u64,
    /// Data and CNP packets by DSCP.
    pub qos: qos::QosTally,
    pub first_ts: Option<u64>,
    /// The latest timestamp (not necessarily the last frame's).
    pub last_ts: u64,
    /// The earliest timestamp (not necessarily the first frame's).
    pub min_ts: u64,
    /// The previous frame's timestamp.
    pub prev_ts: u64,
    /// Frames timed before the frame read just before them.
    pub time_backwards: u64,
    /// Latency samples of every flow, in fixed buckets.
    pub latency: buckets::LatencyBuckets,
    /// RoCE packets whose ICRC the snaplen cut off (not malformed ones).
    pub icrc_cut: u64,
    /// The shortest and the longest captured length of those (the capture's snaplen when
    /// they agree).
    pub cut_at: (u32, u32),
}

/// The analyzer: feed it every frame in capture order with [`Analyzer::ingest`], then take
/// the [`Report`] with [`Analyzer::finish`] (or a [`Analyzer::snapshot`] while it runs).
/// Deterministic: the same frames give the same report.
pub struct Analyzer {
    cfg: Config,
    /// The live flows (see `store`): found by key or slot, their pairs, the recent-PSN
    /// table.
    flows: store::FlowStore,
    done: Vec<FlowSummary>,
    /// Totals of every retired flow, kept or not.
    sums: Totals,
    connections: Vec<(u32, u32)>,
    next_id: u32,
    log: EventLog,
    /// Counters of the whole capture (not per flow).
    capture: Global,
    net: net::Net,
    frames_since_sweep: u64,
    /// Capture time from which open gaps are next looked at for the gap timeout.
    next_gap_check: u64,
    /// For [`Analyzer::advance`]: the latest capture time and the wall time at which a
    /// call first saw it.
    clock: Option<(u64, u64)>,
    /// Inputs cut short, with the complete frames read from each.
    cut_short: Vec<(String, u64)>,
    /// Connection setups from the CM MADs.
    cm: cm::CmTracker,
    /// RoCE packets of flows not followed: `max_flows` were live.
    untracked: u64,
    /// Mirror sessions (ERSPAN, GRE, VXLAN, Geneve) the frames came in.
    mirrors: mirrors::Mirrors,
}

impl Analyzer {
    /// An analyzer with no flows yet, using `cfg`.
    pub fn new(cfg: Config) -> Self {
        Analyzer {
            cfg,
            flows: store::FlowStore::default(),
            done: Vec::new(),
            sums: Totals::default(),
            connections: Vec::new(),
            next_id: 0,
            log: EventLog {
                cap: cfg.max_events,
                gap_timeout_ns: cfg.gap_timeout_ns,
                ..EventLog::default()
            },
            capture: Global::default(),
            net: net::Net::new(cfg.link_bps, cfg.arp_prefix_len),
            frames_since_sweep: 0,
            next_gap_check: 0,
            clock: None,
            cut_short: Vec::new(),
            cm: cm::CmTracker::default(),
            untracked: 0,
            mirrors: mirrors::Mirrors::default(),
        }
    }

    /// Names an interface id for reports (e.g. the capture file it came from).
    pub fn name_iface(&mut self, iface: u32, name: String) {
        self.net.names.insert(iface, name);
    }

    /// Notes that an input ended in the middle of a record after `frames` complete
    /// frames: a warning finding and `totals.input_cut_short`.
    pub fn input_cut_short(&mut self, file: &str, frames: u64) {
        self.cut_short.push((file.to_string(), frames));
    }

    /// Feeds one frame. `iface` is the capture interface (pcapng interface id); an SLL2
    /// header's ifindex takes precedence.
    pub fn ingest(&mut self, ts: u64, iface: u32, d: &Decoded) {
        self.ingest_warmed(ts, iface, d, &Hint::NONE);
    }

    /// [`Analyzer::ingest`] for a frame warmed with `hint` ([`Analyzer::warm_index`] of
    /// this very frame, or [`Hint::NONE`]): the same analysis, without hashing the
    /// frame's flow key again.
    pub(crate) fn ingest_warmed(&mut self, ts: u64, iface: u32, d: &Decoded, hint: &Hint) {
        self.log.packet.clear();
        if d.tunnel.is_some() {
            self.mirrors.see(d);
        }
        let capture = &mut self.capture;
        capture.frames += 1;
        capture.first_ts.get_or_insert(ts);
        capture.last_ts = capture.last_ts.max(ts);
        capture.min_ts = if capture.frames == 1 {
            ts
        } else {
            capture.min_ts.min(ts)
        };
        capture.time_backwards += u64::from(ts < capture.prev_ts);
        capture.prev_ts = ts;
        match d.stop.kind {
            StopKind::Malformed => capture.malformed += 1,
            StopKind::Truncated => capture.truncated += 1,
            StopKind::Unsupported => capture.unsupported += 1,
            StopKind::Complete => {}
        }
        if let Some(e) = d.ecn() {
            capture.ecn[e.bits() as usize] += 1;
            if e == Ecn::Ce {
                capture.ce_marked += 1;
            }
        }
        if let Some(r) = &d.roce {
            self.capture.roce_packets += 1;
            if r.icrc == dissectors::IcrcStatus::Truncated && d.stop.kind != StopKind::Malformed {
                self.capture.icrc_cut += 1;
                let (lo, hi) = self.capture.cut_at;
                self.capture.cut_at = match self.capture.icrc_cut {
                    1 => (d.captured_len(), d.captured_len()),
                    _ => (lo.min(d.captured_len()), hi.max(d.captured_len())),
                };
            }
            self.roce(ts, d, r, hint);
        } else if let Some(a) = &d.arp {
            let iface = d.sll.and_then(|s| s.ifindex).unwrap_or(iface);
            self.net.arp(ts, iface, a, &mut self.log);
        } else if let Some(p) = &d.pause {
            self.net.pause(ts, d.src_mac(), p, &mut self.log);
        } else if let Some(ip) = &d.ip {
            // Plain IPv4 (ICMP, TCP, ...): only moves reply-path state ARP created.
            if let (std::net::IpAddr::V4(s), std::net::IpAddr::V4(t)) = (ip.src, ip.dst) {
                let iface = d.sll.and_then(|s| s.ifindex).unwrap_or(iface);
                self.net.ip(ts, iface, s, t);
            }
        }
        self.frames_since_sweep += 1;
        if self.frames_since_sweep >= SWEEP_EVERY {
            self.frames_since_sweep = 0;
            self.sweep(ts);
        }
    }

    /// The report so far, without ending the run (for the live UI): live flows are
    /// summarised as they stand (their open gaps and episodes are not settled), and
    /// `events` holds only the events recorded from index `events_from` on, so a caller
    /// that keeps the earlier ones copies each event once. Allocates; meant to be called
    /// a few times per second, not per packet.
    pub fn snapshot(&self, events_from: usize) -> Report {
        let mut sums = self.sums;
        let mut flows = self.done.clone();
        self.flows.each(|f| {
            let s = report::summarize(f);
            report::add_flow(&mut sums, &s);
            flows.push(s);
        });
        let from = events_from.min(self.log.events.len());
        let log = EventLog {
            events: self.log.events[from..].to_vec(),
            dropped: self.log.dropped,
            cap: usize::MAX,
            packet: Default::default(),
            gap_timeout_ns: self.cfg.gap_timeout_ns,
        };
        // Unanswered ARP requests become events only at the end of the run.
        let net = self.net.clone().finish(&mut EventLog::default());
        let mut r = report::build(
            self.capture,
            sums,
            flows,
            self.connections.clone(),
            log,
            net,
            &self.cut_short,
        );
        note_not_followed(self.untracked, self.cfg.max_flows, &mut r);
        r.mirrors = self.mirrors.summaries();
        r.mirrors_other_frames = self.mirrors.other();
        r
    }

    /// Flows (one per direction and QP) held live now, not yet retired.
    pub fn live_flows(&self) -> usize {
        self.flows.live()
    }

    /// RoCE packets not followed because `max_flows` flows were live when their flow
    /// appeared.
    pub fn untracked_packets(&self) -> u64 {
        self.untracked
    }

    /// Changes [`Config::max_flows`] while running (flows already live stay).
    pub fn set_max_flows(&mut self, n: usize) {
        self.cfg.max_flows = n;
    }

    /// Events recorded so far (the index the next snapshot's events start from).
    pub fn events_recorded(&self) -> usize {
        self.log.events.len()
    }

    /// Ends the run: settles every live flow and returns the report.
    pub fn finish(mut self) -> Report {
        self.retire_all();
        let net = std::mem::take(&mut self.net).finish(&mut self.log);
        let mut r = report::build(
            self.capture,
            self.sums,
            self.done,
            self.connections,
            self.log,
            net,
            &self.cut_short,
        );
        note_not_followed(self.untracked, self.cfg.max_flows, &mut r);
        r.mirrors = self.mirrors.summaries();
        r.mirrors_other_frames = self.mirrors.other();
        self.cm.finish(&mut r);
        r
    }
}

impl Analyzer {
    /// The events recorded while the last frame was fed (see [`events`]).
    pub fn packet_events(&self) -> &events::PacketEvents {
        &self.log.packet
    }
}

/// Packets of flows beyond `max_flows` are a warning finding: nothing is lost silently.
fn note_not_followed(untracked: u64, max_flows: usize, r: &mut Report) {
    if untracked > 0 {
        r.findings.push(report::not_followed(untracked, max_flows));
    }
}

/// A retired flow's summary kept (while fewer than `max` are), or its counts added to the
/// totals beyond the summaries kept (the table calls it when it retires a flow; the
/// table itself never touches the report).
fn keep(
    done: &mut Vec<report::FlowSummary>,
    sums: &mut report::Totals,
    max: usize,
    f: &flow::Flow,
) {
    if done.len() < max {
        let summary = report::summarize(f);
        report::add_flow(sums, &summary);
        done.push(summary);
    } else {
        report::add_live(sums, f);
        sums.flow_summaries_dropped += 1;
    }
}
