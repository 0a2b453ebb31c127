//! What the agent publishes for its HTTP endpoints: the analysis loop and the netcheck
//! thread write it once a tick, `/metrics` and `/healthz` read it. Values only; the
//! exposition format is `metrics.rs`.

use super::topn::{Counts, Series};
use crate::analysis::buckets::LatencyBuckets;
use crate::analysis::Totals;
use std::time::{Instant, SystemTime};

/// One captured source as the last tick saw it.
#[derive(Clone, Debug, Default)]
pub struct SourceState {
    /// The device or netdev.
    pub name: String,
    /// The analysis totals since the agent started.
    pub totals: Totals,
    /// PFC per priority, every sender together: (frames, pause time in seconds).
    pub pfc: [(u64, f64); 8],
    /// ACK and CE→CNP latencies.
    pub latency: LatencyBuckets,
    /// Live flows the analyzer holds.
    pub tracked: u64,
    /// Frames the capture delivered to the agent.
    pub received: u64,
    /// Dropped by the kernel (no room in the capture buffer).
    pub kernel_dropped: u64,
    /// Dropped by the interface or driver.
    pub if_dropped: u64,
    /// Dropped by the agent's own queue (the analysis fell behind).
    pub queue_dropped: u64,
    /// The top-N connections by trouble, counting since they were chosen.
    pub top: Vec<Series>,
    /// Every other connection's counts summed.
    pub other: Counts,
    /// The capture's error, if it stopped; while it is down, why.
    pub error: Option<String>,
    /// The device is open and capturing.
    pub up: bool,
    /// Times the device was lost.
    pub losses: u64,
    /// Times it was opened again after a loss.
    pub reopens: u64,
    /// RoCE packets of flows not followed: the analyzers' share of the budget was full.
    pub untracked_packets: u64,
    /// Frames the flight recorder holds now.
    pub recorded_frames: u64,
    /// The per-peer series (`peers.rs`).
    pub peers: Vec<super::peers::PeerSeries>,
    /// Flows counted in a `peer="other"` series.
    pub peer_flows_aggregated: u64,
}

impl SourceState {
    /// Adds the state of another lane of the same interface (`--lanes`): each frame was
    /// analyzed in one lane and each host pair, both ways, in one lane, so counts add up,
    /// a connection's or a peer pair's series is in one lane only (the `other` ones, which
    /// every lane has, are summed), and the interface is up when every lane is. Every lane
    /// loses the device when it goes: its losses and reopens are the most any lane counts.
    pub fn absorb(&mut self, o: SourceState) {
        // Destructured without `..`: a new field does not compile until it is added here.
        let SourceState {
            name: _,
            totals,
            pfc,
            latency,
            tracked,
            received,
            kernel_dropped,
            if_dropped,
            queue_dropped,
            top,
            other,
            error,
            up,
            losses,
            reopens,
            untracked_packets,
            recorded_frames,
            peers,
            peer_flows_aggregated,
        } = o;
        self.totals.absorb(&totals);
        for (a, b) in self.pfc.iter_mut().zip(pfc) {
            a.0 += b.0;
            a.1 += b.1;
        }
        self.latency.absorb(&latency);
        for (a, b) in [
            (&mut self.tracked, tracked),
            (&mut self.received, received),
            (&mut self.kernel_dropped, kernel_dropped),
            (&mut self.if_dropped, if_dropped),
            (&mut self.queue_dropped, queue_dropped),
            (&mut self.untracked_packets, untracked_packets),
            (&mut self.recorded_frames, recorded_frames),
            (&mut self.peer_flows_aggregated, peer_flows_aggregated),
        ] {
            *a += b;
        }
        self.losses = self.losses.max(losses);
        self.reopens = self.reopens.max(reopens);
        self.top.extend(top);
        for (a, b) in self.other.iter_mut().zip(other) {
            *a += b;
        }
        if self.error.is_none() {
            self.error = error;
        }
        self.up &= up;
        for p in peers {
            let same = self
                .peers
                .iter_mut()
                .find(|q| q.local == p.local && q.peer == p.peer);
            match same {
                Some(q) => {
                    for (a, b) in q.sent.iter_mut().zip(p.sent) {
                        *a += b;
                    }
                    for (a, b) in q.received.iter_mut().zip(p.received) {
                        *a += b;
                    }
                }
                None => self.peers.push(p),
            }
        }
    }
}

/// A pod a network namespace belongs to, as far as the node can tell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pod {
    /// Pod name.
    pub name: String,
    /// Kubernetes namespace.
    pub namespace: String,
}

/// One netcheck finding, as a metric sees it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NsFinding {
    /// The netcheck finding id (`reply-path`, `node-source`, `arp-sysctl`, `roce-…`).
    pub check: String,
    /// `info`, `warning` or `error`.
    pub severity: String,
    /// Its one-line title (for the log, not a label).
    pub title: String,
}

/// The last netcheck of one network namespace.
#[derive(Clone, Debug, Default)]
pub struct NsState {
    /// The namespace's name: its `/run/netns` name, or `pid:PID` for one only a process
    /// holds, `host` for the agent's own.
    pub netns: String,
    /// Its pod, when known.
    pub pod: Option<Pod>,
    /// The findings.
    pub findings: Vec<NsFinding>,
    /// Why it could not be checked.
    pub error: Option<String>,
}

/// Netcheck over every namespace.
#[derive(Clone, Debug, Default)]
pub struct NetcheckState {
    /// Runs completed.
    pub runs: u64,
    /// When the last one ended.
    pub last_run: Option<SystemTime>,
    /// The namespaces of the last run.
    pub namespaces: Vec<NsState>,
}

/// Dumps of the flight recorder.
#[derive(Clone, Copy, Debug, Default)]
pub struct DumpCounts {
    /// Written because a `--dump-on` rule held.
    pub rule: u64,
    /// Written on SIGUSR1.
    pub signal: u64,
    /// Asked for by a rule inside the rate limit, not written.
    pub suppressed: u64,
    /// Could not be written (full disk, permissions): nothing half-written was left.
    pub failed: u64,
}

/// The memory budget and how much of each part is in use.
#[derive(Clone, Debug, Default)]
pub struct MemoryState {
    /// `--memory-limit`.
    pub budget: u64,
    /// Each part's share: (part, bytes).
    pub shares: Vec<(&'static str, u64)>,
    /// Each part's estimated use: (part, bytes).
    pub used: Vec<(&'static str, u64)>,
    /// The process' resident size and its peak, as the kernel counts them.
    pub resident: Option<(u64, u64)>,
}

/// Everything `/metrics` and `/healthz` show.
#[derive(Clone, Debug)]
pub struct Published {
    /// The node's name (label `node`).
    pub node: String,
    /// The sources, in `--interface` order.
    pub sources: Vec<SourceState>,
    /// The per-namespace checks.
    pub netcheck: NetcheckState,
    /// The flight recorder's dumps.
    pub dumps: DumpCounts,
    /// When the analysis loop last published.
    pub tick: Instant,
    /// Why the agent is not healthy, if it is not.
    pub unhealthy: Option<String>,
    /// The memory budget and its use.
    pub memory: MemoryState,
    /// The per-peer series carry topology labels (`--topology` was given).
    pub topology: bool,
}

impl Published {
    /// Nothing measured yet, for `node` and the named sources.
    pub fn new(node: String, sources: &[String]) -> Self {
        Published {
            node,
            sources: sources
                .iter()
                .map(|n| SourceState {
                    name: n.clone(),
                    up: true,
                    ..SourceState::default()
                })
                .collect(),
            netcheck: NetcheckState::default(),
            dumps: DumpCounts::default(),
            tick: Instant::now(),
            unhealthy: None,
            memory: MemoryState::default(),
            topology: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::peers::PeerSeries;
    use super::super::topn::Series;
    use super::SourceState;

    fn peer(local: &str, peer: &str, packets: u64) -> PeerSeries {
        PeerSeries {
            local: local.into(),
            peer: peer.into(),
            sent: [packets, 0, 0, 0, 0, 0],
            ..PeerSeries::default()
        }
    }

    #[test]
    fn lanes_add_up_into_one_state() {
        let series = |qp: &str| Series {
            qp: qp.into(),
            ..Series::default()
        };
        let mut a = SourceState {
            name: "eth0".into(),
            received: 10,
            pfc: [(1, 0.5); 8],
            top: vec![series("0x11")],
            other: [1, 0, 0, 0, 0],
            up: true,
            losses: 1,
            peers: vec![
                peer("198.18.0.1", "198.18.0.2", 4),
                peer("other", "other", 1),
            ],
            ..SourceState::default()
        };
        a.totals.frames = 10;
        let mut b = SourceState {
            name: "eth0 lane 2/2".into(),
            received: 5,
            pfc: [(0, 0.0); 8],
            top: vec![series("0x22")],
            other: [2, 0, 0, 0, 1],
            up: false,
            losses: 1,
            error: Some("down (lost), reopening".into()),
            peers: vec![
                peer("198.18.1.1", "198.18.1.2", 7),
                peer("other", "other", 2),
            ],
            ..SourceState::default()
        };
        b.totals.frames = 5;
        b.latency.ack.record(1_000);
        a.absorb(b);
        assert_eq!(a.name, "eth0");
        assert_eq!(
            (a.received, a.totals.frames, a.latency.ack.count),
            (15, 15, 1)
        );
        assert_eq!((a.pfc[3], a.other), ((1, 0.5), [3, 0, 0, 0, 1]));
        assert_eq!(a.top.len(), 2);
        // Down when a lane is, with its reason; one loss of the device, seen by each lane.
        assert!(!a.up && a.error.as_deref() == Some("down (lost), reopening"));
        assert_eq!(a.losses, 1);
        // A pair is in one lane; `other` is in every lane: summed into one series.
        let sent: Vec<(&str, u64)> = a
            .peers
            .iter()
            .map(|p| (p.local.as_str(), p.sent[0]))
            .collect();
        assert_eq!(sent, [("198.18.0.1", 4), ("other", 3), ("198.18.1.1", 7)]);
    }
}
