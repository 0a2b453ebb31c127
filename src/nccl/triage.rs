//! Per error, the likely causes ranked by what the log, the captures and the hosts'
//! state show: each cause with its evidence (values; `report::nccl` words them and the
//! next command to run).

use super::config::Issue;
use super::host::{GidVerdict, HostCheck};
use super::join::{self, Story};
use super::status::*;
use super::{Log, WcError};
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr};

/// A likely cause of an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CauseKind {
    /// The GID in use is wrong (link-local, RoCE v1, missing): the packets cannot reach
    /// the peer.
    WrongGid,
    /// The HCA has no route to the peer.
    NoRoute,
    /// Ranks use different RoCE modes.
    MixedModes,
    /// The path lost the packets: a link or port down or flapping, a cable, a switch
    /// dropping.
    PathLoss,
    /// The peer stopped answering: its process, node or NIC went away first.
    PeerDown,
    /// Traffic on a lossy class: drops under congestion.
    LossyClass,
    /// Congestion: CNP storms, PFC pauses.
    Congestion,
    /// The receiver did not post buffers in time (RNR).
    ReceiverNotReady,
    /// A memory registration or key problem (remote or local access, protection).
    Memory,
    /// The QP was already in error: an earlier error is the cause.
    Flushed,
    /// The responder could not perform the request.
    RemoteOp,
    /// Nothing more specific.
    Unknown,
}

impl CauseKind {
    /// JSON code.
    pub fn code(self) -> &'static str {
        match self {
            CauseKind::WrongGid => "wrong_gid",
            CauseKind::NoRoute => "no_route",
            CauseKind::MixedModes => "mixed_roce_modes",
            CauseKind::PathLoss => "path_loss",
            CauseKind::PeerDown => "peer_down",
            CauseKind::LossyClass => "lossy_traffic_class",
            CauseKind::Congestion => "congestion",
            CauseKind::ReceiverNotReady => "receiver_not_ready",
            CauseKind::Memory => "memory_registration",
            CauseKind::Flushed => "flushed_after_earlier_error",
            CauseKind::RemoteOp => "remote_operation_error",
            CauseKind::Unknown => "unknown",
        }
    }
}

/// One piece of evidence.
#[derive(Clone, Debug, PartialEq)]
pub enum Evidence {
    /// The status itself says it.
    Status(u32),
    /// A configuration mistake (index into the issues).
    Issue(usize),
    /// The host's GID table (index into the host checks).
    Host(usize),
    /// The connection on the wire.
    Wire(Box<Story>),
    /// The capture shows the connection, and no loss on it.
    WireClean(Box<Story>),
    /// Other peers failed over the same local HCA.
    SameHca {
        /// The HCA.
        hca: String,
        /// Distinct peers it failed with.
        peers: usize,
    },
    /// Other hosts failed with the same peer.
    SamePeer {
        /// Distinct hosts.
        hosts: usize,
    },
    /// The peer's process logged an error first (input, line).
    PeerFailedFirst {
        /// Input index.
        source: usize,
        /// Line.
        line: u64,
        /// Its status.
        status: u32,
    },
    /// An earlier error of the same process (input, line, status).
    Earlier {
        /// Input index.
        source: usize,
        /// Line.
        line: u64,
        /// Its status.
        status: u32,
    },
    /// The HCA reported an asynchronous event (the text NCCL logged).
    AsyncEvent(String),
    /// No capture was given.
    NoCapture,
}

/// A cause with its score and evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    /// What.
    pub kind: CauseKind,
    /// Rank key: higher first.
    pub score: u32,
    /// Why.
    pub evidence: Vec<Evidence>,
}

/// One error's triage.
#[derive(Clone, Debug, PartialEq)]
pub struct Triaged {
    /// The error (index into `Log::errors`).
    pub error: usize,
    /// The connection on the wire, when captures were given and it was found.
    pub story: Option<Story>,
    /// Causes, most likely first.
    pub causes: Vec<Cause>,
}

struct Acc(Vec<Cause>);

impl Acc {
    fn add(&mut self, kind: CauseKind, score: u32, ev: Option<Evidence>) {
        match self.0.iter_mut().find(|c| c.kind == kind) {
            Some(c) => {
                c.score += score;
                c.evidence.extend(ev);
            }
            None => self.0.push(Cause {
                kind,
                score,
                evidence: ev.into_iter().collect(),
            }),
        }
    }
}

/// Every error triaged, in the log's order. `captures` empty: no join.
pub fn triage(
    log: &Log,
    issues: &[Issue],
    hosts: &[HostCheck],
    captures: &[super::wire::Tap],
) -> Vec<Triaged> {
    let ctx = Ctx::new(log);
    let index = join::Index::new(captures);
    log.errors
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let story = if captures.is_empty() {
                None
            } else {
                join::join(log, e, captures, &index)
            };
            let causes = causes(
                log,
                &ctx,
                i,
                e,
                issues,
                hosts,
                story.as_ref(),
                !captures.is_empty(),
            );
            Triaged {
                error: i,
                story,
                causes,
            }
        })
        .collect()
}

/// What every error's triage reads of the other errors, computed once (the log holds up
/// to `NCCL_ERRORS` of them).
struct Ctx<'a> {
    /// Each error's (local, remote) addresses.
    ends: Vec<(Option<IpAddr>, Option<IpAddr>)>,
    /// (host, HCA) -> the distinct peers its errors went to.
    hca_peers: HashMap<(&'a str, &'a str), HashSet<Ipv4Addr>>,
    /// Remote address -> the distinct hosts whose errors went to it.
    peer_hosts: HashMap<IpAddr, HashSet<&'a str>>,
    /// Address -> the first error logged by a process at it (its local end, or its
    /// out-of-band address).
    first_by: HashMap<IpAddr, usize>,
    /// Process -> its first error that is not a flush.
    first_real: HashMap<usize, usize>,
}

impl<'a> Ctx<'a> {
    fn new(log: &'a Log) -> Self {
        let ends: Vec<_> = log.errors.iter().map(|e| join::ends(log, e)).collect();
        let mut c = Ctx {
            ends,
            hca_peers: HashMap::new(),
            peer_hosts: HashMap::new(),
            first_by: HashMap::new(),
            first_real: HashMap::new(),
        };
        for (i, e) in log.errors.iter().enumerate() {
            let host = log.procs[e.proc].host.as_str();
            if let (Some(h), Some(r)) = (e.hca.as_deref(), super::config::remote_v4(e)) {
                c.hca_peers.entry((host, h)).or_default().insert(r);
            }
            let (l, r) = c.ends[i];
            if let Some(r) = r {
                c.peer_hosts.entry(r).or_default().insert(host);
            }
            for a in [l, log.procs[e.proc].oob_addr].into_iter().flatten() {
                c.first_by.entry(a).or_insert(i);
            }
            if e.status != WR_FLUSH_ERR {
                c.first_real.entry(e.proc).or_insert(i);
            }
        }
        c
    }
}

#[allow(clippy::too_many_arguments)]
fn causes(
    log: &Log,
    ctx: &Ctx,
    i: usize,
    e: &WcError,
    issues: &[Issue],
    hosts: &[HostCheck],
    story: Option<&Story>,
    captured: bool,
) -> Vec<Cause> {
    let mut a = Acc(Vec::new());
    let st = Some(Evidence::Status(e.status));
    match e.status {
        RETRY_EXC_ERR => {
            a.add(CauseKind::PathLoss, 50, st);
            a.add(CauseKind::PeerDown, 35, None);
            a.add(CauseKind::LossyClass, 10, None);
            a.add(CauseKind::Congestion, 5, None);
        }
        RNR_RETRY_EXC_ERR => {
            a.add(CauseKind::ReceiverNotReady, 60, st);
            a.add(CauseKind::PeerDown, 25, None);
        }
        REM_ACCESS_ERR | LOC_PROT_ERR | LOC_ACCESS_ERR => {
            a.add(CauseKind::Memory, 60, st);
            a.add(CauseKind::PeerDown, 20, None);
        }
        WR_FLUSH_ERR => {
            a.add(CauseKind::Flushed, 70, st);
        }
        REM_INV_REQ_ERR | REM_OP_ERR => {
            a.add(CauseKind::RemoteOp, 55, st);
            a.add(CauseKind::PeerDown, 30, None);
            a.add(CauseKind::Memory, 15, None);
        }
        _ => a.add(CauseKind::Unknown, 10, st),
    }
    let unreachable = matches!(e.status, RETRY_EXC_ERR | WR_FLUSH_ERR);
    // What the log alone shows.
    for (k, is) in issues.iter().enumerate() {
        if !is.concerns(log, e.proc) {
            continue;
        }
        let ev = Some(Evidence::Issue(k));
        match is {
            Issue::LinkLocalGid { .. } | Issue::RoceV1 { .. } if unreachable => {
                a.add(CauseKind::WrongGid, 80, ev);
            }
            Issue::HcaNoRoute { hca, .. } if unreachable && e.hca.as_deref() == Some(hca) => {
                a.add(CauseKind::NoRoute, 85, ev);
            }
            Issue::MixedModes { .. } if unreachable => a.add(CauseKind::MixedModes, 60, ev),
            Issue::TcNotLossless { .. } if e.status == RETRY_EXC_ERR => {
                a.add(CauseKind::LossyClass, 45, ev);
            }
            _ => {}
        }
    }
    for (k, h) in hosts.iter().enumerate() {
        if !h.concerns(log, e) {
            continue;
        }
        match h.verdict {
            GidVerdict::Ok => {}
            GidVerdict::NoRoute | GidVerdict::OtherDevice if unreachable => {
                a.add(CauseKind::NoRoute, 85, Some(Evidence::Host(k)));
            }
            GidVerdict::NoRoute | GidVerdict::OtherDevice => {}
            _ if unreachable => a.add(CauseKind::WrongGid, 90, Some(Evidence::Host(k))),
            _ => {}
        }
    }
    // Other errors of the log.
    let me = &log.procs[e.proc];
    if let Some(hca) = &e.hca {
        let peers = ctx
            .hca_peers
            .get(&(me.host.as_str(), hca.as_str()))
            .map_or(0, HashSet::len);
        if peers >= 2 && e.status == RETRY_EXC_ERR {
            a.add(
                CauseKind::PathLoss,
                15,
                Some(Evidence::SameHca {
                    hca: hca.clone(),
                    peers,
                }),
            );
        }
    }
    let (_, remote) = ctx.ends[i];
    if let Some(r) = remote {
        let hs = ctx.peer_hosts.get(&r).map_or(0, HashSet::len);
        if hs >= 2 {
            a.add(
                CauseKind::PeerDown,
                15,
                Some(Evidence::SamePeer { hosts: hs }),
            );
        }
        // The peer's own process failed before this one did.
        let first = ctx
            .first_by
            .get(&r)
            .filter(|&&j| j < i)
            .map(|&j| &log.errors[j]);
        if let Some(o) = first {
            if o.status != RETRY_EXC_ERR || e.status != RETRY_EXC_ERR {
                a.add(
                    CauseKind::PeerDown,
                    20,
                    Some(Evidence::PeerFailedFirst {
                        source: o.source,
                        line: o.line,
                        status: o.status,
                    }),
                );
            }
        }
    }
    if e.status == WR_FLUSH_ERR {
        if let Some(o) = ctx
            .first_real
            .get(&e.proc)
            .filter(|&&j| j < i)
            .map(|&j| &log.errors[j])
        {
            a.add(
                CauseKind::Flushed,
                10,
                Some(Evidence::Earlier {
                    source: o.source,
                    line: o.line,
                    status: o.status,
                }),
            );
        }
    }
    for ev in me.async_events.iter().take(2) {
        a.add(
            CauseKind::PathLoss,
            10,
            Some(Evidence::AsyncEvent(ev.clone())),
        );
    }
    // The wire.
    match story {
        Some(s) => {
            let b = Some(Evidence::Wire(Box::new(s.clone())));
            if join::exhausted(s) || s.retransmitted > 0 {
                let peer_silent = s.responder_silent && s.place == join::Place::AfterTap;
                a.add(CauseKind::PathLoss, 40, b.clone());
                if peer_silent {
                    a.add(CauseKind::PeerDown, 10, None);
                }
            } else {
                a.add(
                    CauseKind::PeerDown,
                    10,
                    Some(Evidence::WireClean(Box::new(s.clone()))),
                );
                a.add(CauseKind::PathLoss, 0, None);
                if let Some(c) = a.0.iter_mut().find(|c| c.kind == CauseKind::PathLoss) {
                    c.score = c.score.saturating_sub(25);
                }
            }
            if s.rnr_naks > 0 {
                a.add(CauseKind::ReceiverNotReady, 30, b.clone());
            }
            if s.cnps > 100 || s.pfc_frames > 100 {
                a.add(CauseKind::Congestion, 30, b);
            }
        }
        None if !captured => {
            if let Some(c) = a.0.iter_mut().find(|c| c.kind == CauseKind::PathLoss) {
                c.evidence.push(Evidence::NoCapture);
            }
        }
        None => {}
    }
    let mut v = a.0;
    v.sort_by(|x, y| y.score.cmp(&x.score).then(x.kind.cmp(&y.kind)));
    v
}
