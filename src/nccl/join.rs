//! The join of NCCL's errors with captures: for each error, the RC connection on the wire
//! between its two GIDs (addresses), in its time window when the log's timestamps are
//! UTC, the QPN when NCCL's QP lines name it; and that connection's story — a requester
//! that exhausted its retries (the PSN, how often, over how long), where the loss was,
//! NAKs, RNR NAKs, CNPs, PFC pauses — with, over several captures given in path order,
//! the segment where the resends stopped being seen.

use super::config::{gid_v4, remote_v4};
pub use super::wire::{StopView, Tap, WireFlow};
use super::{Log, WcError};
use crate::analysis::stop::StopKind;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

/// How far after a flow's last packet an error still belongs to it: NCCL reports the
/// error when the retries run out (the QP's timeout times its retry count: up to ~70 s
/// with NCCL_IB_TIMEOUT=20 and 7 retries), plus clock skew.
pub const AFTER_LAST_NS: u64 = 180_000_000_000;

/// Where a connection's loss was, relative to the tap that saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The resent requests never passed the tap: lost between the requester and the tap.
    BeforeTap,
    /// The requests passed the tap and nothing acknowledged them: lost between the tap
    /// and the responder, or the responder's answers lost before the tap.
    AfterTap,
    /// ACKs passed the tap and still the requester resent: the ACKs were lost between
    /// the tap and the requester.
    AcksLostAfterTap,
    /// The capture does not say.
    Unknown,
}

impl Place {
    /// JSON code.
    pub fn code(self) -> &'static str {
        match self {
            Place::BeforeTap => "before_tap",
            Place::AfterTap => "after_tap",
            Place::AcksLostAfterTap => "acks_lost_after_tap",
            Place::Unknown => "unknown",
        }
    }
}

/// What one capture saw of the connection's request stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// Capture (index into the captures given).
    pub capture: usize,
    /// Packets of the request stream.
    pub packets: u64,
    /// Of them, resent.
    pub retransmitted: u64,
}

/// The connection behind an error, as the wire shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Story {
    /// The capture it was found in (index).
    pub capture: usize,
    /// The request stream's flow id in that capture.
    pub flow: u32,
    /// Its source (the requester).
    pub src: IpAddr,
    /// Its destination (the responder).
    pub dst: IpAddr,
    /// Its DestQP (the responder's QPN).
    pub qp: u32,
    /// The requester's own QPN (the DestQP of the other direction), when paired or seen.
    pub src_qp: Option<u32>,
    /// The requester is the process that logged the error (else its peer).
    pub local_requester: bool,
    /// How the stream ended, when it did not finish.
    pub stop: Option<StopView>,
    /// Where the loss was.
    pub place: Place,
    /// The responder sent nothing back after the stream's trouble began (at this tap).
    pub responder_silent: bool,
    /// Packets resent.
    pub retransmitted: u64,
    /// Timer retries.
    pub timeouts: u64,
    /// PSN-sequence NAKs received.
    pub naks: u64,
    /// RNR NAKs received.
    pub rnr_naks: u64,
    /// CNPs received by the requester.
    pub cnps: u64,
    /// CE-marked packets of the stream.
    pub ce: u64,
    /// PAUSE / PFC frames in the capture (every sender).
    pub pfc_frames: u64,
    /// A QP the log names is this connection's.
    pub qpn_matched: bool,
    /// The error's UTC time is inside the flow's window (`None`: no UTC time in the log).
    pub in_window: Option<bool>,
    /// Every capture's view of the stream, when several were given.
    pub seen: Vec<Seen>,
    /// With several captures: the resends were seen at the first and not at the second
    /// (indexes): the loss is between those two taps.
    pub segment: Option<(usize, usize)>,
}

/// The error's two ends: (local, remote) addresses.
pub fn ends(log: &Log, e: &WcError) -> (Option<IpAddr>, Option<IpAddr>) {
    let local = e
        .local_gid
        .as_ref()
        .map(|g| gid_v4(g).map_or(IpAddr::V6(*g), IpAddr::V4))
        .or(log.procs[e.proc].oob_addr);
    let remote = remote_v4(e).map(IpAddr::V4).or(e.peer);
    (local, remote)
}

fn place_of(c: &WireFlow) -> Place {
    let ep = c.timeout_retransmission_episodes;
    if ep == 0 && c.nak_psn_seq == 0 {
        return Place::Unknown;
    }
    if ep > 0 && c.timeout_episodes_gap_at_tap == ep {
        Place::BeforeTap
    } else if c.timeout_episodes_acked > 0 {
        Place::AcksLostAfterTap
    } else if ep > 0 && c.timeout_episodes_gap_at_tap == 0 {
        Place::AfterTap
    } else if c.nak_psn_seq > 0 && c.nak_psn_seq_gap_at_tap == c.nak_psn_seq {
        Place::BeforeTap
    } else if c.nak_psn_seq > 0 && c.nak_psn_seq_gap_at_tap == 0 {
        Place::AfterTap
    } else {
        Place::Unknown
    }
}

/// The QPNs the logs name: this process's own, and its peer's — the processes at the
/// remote address (by their QP lines' GIDs or their out-of-band address), narrowed to
/// the ranks this process has channels with when the log says.
fn qpns(log: &Log, e: &WcError, remote: IpAddr) -> (Vec<u32>, Vec<u32>) {
    let me = &log.procs[e.proc];
    let own = me.qps.iter().map(|q| q.qpn).collect();
    let peer_ranks: Vec<u32> = me
        .channels
        .iter()
        .map(|c| if c.send { c.to } else { c.from })
        .collect();
    let at_remote = |p: &&super::Proc| {
        p.oob_addr == Some(remote)
            || p.qps
                .iter()
                .any(|q| q.gid.and_then(|g| gid_v4(&g)).map(IpAddr::V4) == Some(remote))
    };
    let all: Vec<&super::Proc> = log.procs.iter().filter(at_remote).collect();
    let ranked: Vec<&super::Proc> = all
        .iter()
        .filter(|p| p.rank.is_some_and(|r| peer_ranks.contains(&r)))
        .copied()
        .collect();
    let peers = if ranked.is_empty() { all } else { ranked };
    (
        own,
        peers
            .iter()
            .flat_map(|p| p.qps.iter().map(|q| q.qpn))
            .collect(),
    )
}

/// The taps' flows by (source, destination), built once for all errors.
pub struct Index {
    by: HashMap<(IpAddr, IpAddr), Vec<(usize, usize)>>,
}

impl Index {
    /// Every RC flow of every tap, by its two addresses.
    pub fn new(taps: &[Tap]) -> Self {
        let mut by: HashMap<(IpAddr, IpAddr), Vec<(usize, usize)>> = HashMap::new();
        for (t, tap) in taps.iter().enumerate() {
            for (i, f) in tap.flows.iter().enumerate() {
                if f.rc {
                    by.entry((f.src, f.dst)).or_default().push((t, i));
                }
            }
        }
        Index { by }
    }

    /// The flows of tap `t` between `a` and `b`, both directions.
    fn between<'a>(
        &'a self,
        taps: &'a [Tap],
        t: usize,
        a: IpAddr,
        b: IpAddr,
    ) -> impl Iterator<Item = &'a WireFlow> + 'a {
        [(a, b), (b, a)]
            .into_iter()
            .filter_map(|k| self.by.get(&k))
            .flatten()
            .filter(move |(ti, _)| *ti == t)
            .map(move |&(ti, i)| &taps[ti].flows[i])
    }
}

/// The best request stream between the error's two ends in one tap, with its score.
fn best<'a>(
    log: &Log,
    e: &WcError,
    r: &'a Tap,
    flows: impl Iterator<Item = &'a WireFlow>,
    local: IpAddr,
    remote: IpAddr,
) -> Option<(u32, &'a WireFlow, bool, bool, Option<bool>)> {
    let (own, theirs) = qpns(log, e, remote);
    let mut out: Option<(u32, &WireFlow, bool, bool, Option<bool>)> = None;
    for f in flows {
        if !f.rc {
            continue;
        }
        let (s, d) = (f.src, f.dst);
        let local_req = s == local && d == remote;
        if !(local_req || (s == remote && d == local)) {
            continue;
        }
        let peer = r.peer_of(f);
        // A request stream's DestQP is its responder's QPN; the other direction's is the
        // requester's.
        let (req_side, resp_side) = if local_req {
            (&own, &theirs)
        } else {
            (&theirs, &own)
        };
        let qpn_matched =
            resp_side.contains(&f.qp) || peer.is_some_and(|g| req_side.contains(&g.qp));
        let in_window = e.time_ns.map(|t| {
            t + 60_000_000_000 >= f.first_ts_ns && t <= f.last_ts_ns.saturating_add(AFTER_LAST_NS)
        });
        let mut score = 1;
        score += 8 * u32::from(f.stop.is_some());
        score += 4 * u32::from(qpn_matched);
        score += 2 * u32::from(local_req);
        score += u32::from(f.retransmitted_packets > 0);
        if in_window == Some(false) {
            score = score.saturating_sub(6);
        }
        if out.as_ref().is_none_or(|o| score > o.0) {
            out = Some((score, f, local_req, qpn_matched, in_window));
        }
    }
    out
}

/// The connection behind `e` in `taps` (in the order given: along the path from one
/// end to the other when several taps are given), or `None`.
pub fn join(log: &Log, e: &WcError, taps: &[Tap], index: &Index) -> Option<Story> {
    let (Some(local), Some(remote)) = ends(log, e) else {
        return None;
    };
    type Top<'a> = (u32, usize, &'a WireFlow, bool, bool, Option<bool>);
    let mut top: Option<Top> = None;
    for (ci, r) in taps.iter().enumerate() {
        let flows = index.between(taps, ci, local, remote);
        if let Some((s, f, lr, qm, w)) = best(log, e, r, flows, local, remote) {
            if top.as_ref().is_none_or(|t| s > t.0) {
                top = Some((s, ci, f, lr, qm, w));
            }
        }
    }
    let (_, ci, f, local_requester, qpn_matched, in_window) = top?;
    let r = &taps[ci];
    let peer = r.peer_of(f);
    let trouble_from = f.stop.and_then(|s| s.first_ns);
    let responder_silent = match (trouble_from, peer) {
        (Some(t), Some(g)) => g.last_ts_ns < t,
        (Some(_), None) => true,
        _ => false,
    };
    let (src, dst) = (f.src, f.dst);
    let mut seen = Vec::new();
    let mut segment = None;
    if taps.len() > 1 {
        for i in 0..taps.len() {
            let (packets, retransmitted) = index
                .between(taps, i, src, dst)
                .filter(|g| g.qp == f.qp && g.src == src && g.dst == dst)
                .fold((0, 0), |a, g| {
                    (a.0 + g.packets, a.1 + g.retransmitted_packets)
                });
            seen.push(Seen {
                capture: i,
                packets,
                retransmitted,
            });
        }
        segment = seen
            .windows(2)
            .find(|w| w[0].retransmitted > 0 && w[1].retransmitted == 0)
            .map(|w| (w[0].capture, w[1].capture));
    }
    Some(Story {
        capture: ci,
        flow: f.id,
        src,
        dst,
        qp: f.qp,
        src_qp: peer.map(|g| g.qp),
        local_requester,
        stop: f.stop,
        place: place_of(f),
        responder_silent,
        retransmitted: f.retransmitted_packets,
        timeouts: f.timeout_retransmission_episodes,
        naks: f.nak_psn_seq,
        rnr_naks: f.rnr_nak,
        cnps: f.cnp_received,
        ce: f.ecn_ce,
        pfc_frames: r.pfc_frames,
        qpn_matched,
        in_window,
        seen,
        segment,
    })
}

/// Whether the story is of a requester that gave up.
pub fn exhausted(s: &Story) -> bool {
    s.stop.is_some_and(|s| s.kind == StopKind::RetryExhausted)
}

/// IPv4 of an address, for the words.
pub fn v4(a: IpAddr) -> Option<Ipv4Addr> {
    match a {
        IpAddr::V4(a) => Some(a),
        IpAddr::V6(a) => a.to_ipv4_mapped(),
    }
}
