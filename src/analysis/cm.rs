//! Connection setup as the CM saw it (IBTA Vol. 1 chapter 12): every REQ, REP, RTU, REJ,
//! MRA, DREQ and DREP of the capture, grouped into sessions by the requester's
//! communication ID. At the end of a run the sessions pair the two flows of each
//! connection exactly (the requester's flow goes to the QPN in the REP, the responder's
//! to the QPN in the REQ), give each flow the first PSN its receiver announced — so the
//! first packets of a connection missing from the capture are found — and name the
//! setups that failed: rejected (with the reason), REQs that no REP answered (with the
//! retries and the interval between them), REPs that no RTU confirmed, DREQs no DREP
//! answered; and the traffic class the CM path asked for next to the DSCP the data
//! carries.
//!
//! Memory: one session per connection set up, capped at [`MAX_SESSIONS`] (beyond it
//! sessions are counted in `dropped`, not kept); nothing per packet.

mod findings;

use super::report::{Connection, FlowSummary, Report};
use dissectors::cm::{CmMsg, ServiceId};
use dissectors::{Addr, Decoded, Mad, Operation, Psn, Qpn};
use findings::{after_stops, findings};
use rustc_hash::FxHashMap;
use serde::{Serialize, Serializer};

/// Sessions kept; more are counted, not stored.
pub const MAX_SESSIONS: usize = 1 << 16;

/// What the REQ announced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReqSeen {
    /// The requester's QP.
    pub qpn: Qpn,
    /// The PSN the requester expects first: where the responder's sends start.
    pub start_psn: Psn,
    /// The service asked for.
    pub service_id: ServiceId,
    /// The primary path's traffic class (DSCP << 2 | ECN).
    pub traffic_class: u8,
    /// Path MTU code.
    pub path_mtu: u8,
}

/// What the REP answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepSeen {
    /// When (ns).
    pub ts: u64,
    /// The responder's QP.
    pub qpn: Qpn,
    /// The PSN the responder expects first: where the requester's sends start.
    pub start_psn: Psn,
}

/// A REJ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RejSeen {
    /// When (ns).
    pub ts: u64,
    /// The IBTA reason code (table 109).
    pub reason: u16,
    /// Sent by the responder (rejecting the REQ) rather than the requester (the REP).
    pub by_responder: bool,
}

/// One connection setup, from its first REQ on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmSession {
    /// The active side (sender of the REQ).
    pub requester: Addr,
    /// The passive side.
    pub responder: Addr,
    /// The requester's communication ID.
    pub comm_id: u32,
    /// The REQ's announcements; `None` when the capture has no REQ of this session.
    pub req: Option<ReqSeen>,
    /// REQs sent (the first and its retries).
    pub reqs: u32,
    /// Time of the first and of the last REQ (ns).
    pub req_ns: Option<(u64, u64)>,
    /// MRAs (the other side asking for more time).
    pub mras: u32,
    /// The REP.
    pub rep: Option<RepSeen>,
    /// Time of the RTU (ns).
    pub rtu_ns: Option<u64>,
    /// The REJ.
    pub rej: Option<RejSeen>,
    /// Time of the first DREQ (ns).
    pub dreq_ns: Option<u64>,
    /// Who sent the first DREQ.
    pub dreq_from: Option<Addr>,
    /// DREQs sent (the first and its retries).
    pub dreqs: u32,
    /// Time of the first DREP (ns).
    pub drep_ns: Option<u64>,
    /// Filled at the end: the requester's and the responder's flow ids.
    pub flows: [Option<u32>; 2],
    /// Filled at the end: PSNs missing before each flow's first captured packet.
    pub missing_at_start: [Option<u32>; 2],
}

impl CmSession {
    fn new(requester: Addr, responder: Addr, comm_id: u32) -> Self {
        CmSession {
            requester,
            responder,
            comm_id,
            req: None,
            reqs: 0,
            req_ns: None,
            mras: 0,
            rep: None,
            rtu_ns: None,
            rej: None,
            dreq_ns: None,
            dreq_from: None,
            dreqs: 0,
            drep_ns: None,
            flows: [None; 2],
            missing_at_start: [None; 2],
        }
    }

    /// REQ → RTU, ns.
    pub fn setup_ns(&self) -> Option<u64> {
        Some(self.rtu_ns?.saturating_sub(self.req_ns?.0))
    }

    /// The mean interval between REQ retries (the CM's response timeout as seen).
    pub fn retry_interval_ns(&self) -> Option<u64> {
        let (a, b) = self.req_ns?;
        (self.reqs > 1).then(|| (b - a) / u64::from(self.reqs - 1))
    }
}

/// The sessions of a run.
#[derive(Debug, Default)]
pub struct CmTracker {
    sessions: Vec<CmSession>,
    index: FxHashMap<(Addr, Addr, u32), usize>,
    /// Sessions not kept (beyond [`MAX_SESSIONS`]).
    pub dropped: u64,
}

impl CmTracker {
    fn find(&self, a: Addr, b: Addr, id: u32) -> Option<usize> {
        self.index.get(&(a, b, id)).copied()
    }

    fn get_or_add(&mut self, requester: Addr, responder: Addr, id: u32) -> Option<usize> {
        if let Some(i) = self.find(requester, responder, id) {
            return Some(i);
        }
        if self.sessions.len() >= MAX_SESSIONS {
            self.dropped += 1;
            return None;
        }
        self.sessions.push(CmSession::new(requester, responder, id));
        let i = self.sessions.len() - 1;
        self.index.insert((requester, responder, id), i);
        Some(i)
    }

    /// The session a message from `src` to `dst` belongs to, whichever side sent it:
    /// the sender as requester (its own ID) or as responder (the requester's ID is then
    /// the remote one).
    fn either(&self, src: Addr, dst: Addr, local: u32, remote: u32) -> Option<usize> {
        self.find(src, dst, local)
            .or_else(|| self.find(dst, src, remote))
    }

    /// Notes one MAD sent at `ts`.
    pub fn note(&mut self, ts: u64, d: &Decoded, m: &Mad) {
        let (Some(msg), Some((src, dst))) = (m.cm, d.endpoints()) else {
            return;
        };
        match msg {
            CmMsg::Req(q) => {
                let Some(i) = self.get_or_add(src, dst, q.local_comm_id) else {
                    return;
                };
                let s = &mut self.sessions[i];
                s.reqs += 1;
                s.req_ns = Some(s.req_ns.map_or((ts, ts), |(a, _)| (a, ts)));
                s.req.get_or_insert(ReqSeen {
                    qpn: q.local_qpn,
                    start_psn: q.start_psn,
                    service_id: q.service_id,
                    traffic_class: q.primary.traffic_class,
                    path_mtu: q.path_mtu,
                });
            }
            CmMsg::Rep(p) => {
                if let Some(i) = self.get_or_add(dst, src, p.ids.remote) {
                    self.sessions[i].rep.get_or_insert(RepSeen {
                        ts,
                        qpn: p.local_qpn,
                        start_psn: p.start_psn,
                    });
                }
            }
            CmMsg::Rtu(ids) => {
                if let Some(i) = self.get_or_add(src, dst, ids.local) {
                    self.sessions[i].rtu_ns.get_or_insert(ts);
                }
            }
            CmMsg::Rej(j) => {
                let by_responder = self.find(dst, src, j.ids.remote).is_some()
                    || self.find(src, dst, j.ids.local).is_none();
                let i = if by_responder {
                    self.get_or_add(dst, src, j.ids.remote)
                } else {
                    self.find(src, dst, j.ids.local)
                };
                if let Some(i) = i {
                    self.sessions[i].rej.get_or_insert(RejSeen {
                        ts,
                        reason: j.reason.0,
                        by_responder,
                    });
                }
            }
            CmMsg::Mra(x) => {
                if let Some(i) = self.either(src, dst, x.ids.local, x.ids.remote) {
                    self.sessions[i].mras += 1;
                }
            }
            CmMsg::Dreq(x) => {
                if let Some(i) = self.either(src, dst, x.ids.local, x.ids.remote) {
                    let s = &mut self.sessions[i];
                    s.dreq_ns.get_or_insert(ts);
                    s.dreq_from.get_or_insert(src);
                    s.dreqs += 1;
                }
            }
            CmMsg::Drep(x) => {
                if let Some(i) = self.either(src, dst, x.local, x.remote) {
                    self.sessions[i].drep_ns.get_or_insert(ts);
                }
            }
            CmMsg::SidrReq(_) | CmMsg::SidrRep(_) | CmMsg::Lap(_) | CmMsg::Apr(_) => {}
        }
    }

    /// Settles the run: pairs the flows of every session exactly, notes the first
    /// packets each flow misses, and adds the CM findings and sessions to `r`.
    pub fn finish(self, r: &mut Report) {
        let mut sessions = self.sessions;
        let listed = r.connections.len() as u64;
        for s in &mut sessions {
            settle(s, r);
        }
        after_stops(&sessions, r);
        let mut found = findings(&sessions, r);
        r.findings.append(&mut found);
        r.findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
        // The sessions paired listed flows anew (undoing other pairings of them): the
        // totals move by as much. (They also count connections whose flows' summaries
        // were not kept, which the list does not hold.)
        r.totals.connections =
            (r.totals.connections + r.connections.len() as u64).saturating_sub(listed);
        r.cm = sessions;
    }
}

fn flow_index(r: &Report, src: Addr, dst: Addr, qp: Qpn) -> Option<usize> {
    r.flows
        .iter()
        .position(|f| f.src == src && f.dst == dst && f.qp == qp)
}

/// True when every packet of the flow was a request, so its PSNs are its sender's own
/// send sequence (an ACK or READ response carries the PSN of the request it answers).
pub fn requests_only(f: &FlowSummary) -> bool {
    !f.opcodes.iter().any(|(name, _)| {
        Operation::ALL
            .iter()
            .any(|o| o.is_response() && o.name() == name)
    })
}

/// Pairs the session's two flows (undoing another pairing of either) and measures the
/// PSNs missing before each one's first packet.
fn settle(s: &mut CmSession, r: &mut Report) {
    let (Some(q), Some(p)) = (s.req, s.rep) else {
        return;
    };
    let a = flow_index(r, s.requester, s.responder, p.qpn);
    let b = flow_index(r, s.responder, s.requester, q.qpn);
    s.flows = [a.map(|i| r.flows[i].id), b.map(|i| r.flows[i].id)];
    // Each side announces the PSN it expects to receive: the requester's flow starts at
    // the REP's starting PSN, the responder's at the REQ's.
    for (k, (i, start)) in [(a, p.start_psn), (b, q.start_psn)].into_iter().enumerate() {
        let Some(i) = i else { continue };
        let f = &r.flows[i];
        // The request stream's own first PSN: the flow may also carry responses to the
        // other side's requests, whose PSNs are the other side's sequence.
        if let Some(first) = f.first_request_psn {
            let d = first.diff(start);
            if d >= 0 {
                s.missing_at_start[k] = Some(d as u32);
            }
        }
    }
    if let (Some(a), Some(b)) = (a, b) {
        pair(r, a, b);
    }
}

/// Makes flows `a` and `b` of the report each other's peer.
fn pair(r: &mut Report, a: usize, b: usize) {
    let (ia, ib) = (r.flows[a].id, r.flows[b].id);
    if r.flows[a].peer == Some(ib) && r.flows[b].peer == Some(ia) {
        return;
    }
    for id in [ia, ib] {
        if let Some(old) = r.flows.iter().find(|f| f.id == id).and_then(|f| f.peer) {
            if let Some(o) = r.flows.iter_mut().find(|f| f.id == old) {
                o.peer = None;
            }
        }
    }
    r.connections
        .retain(|c| !c.flows.contains(&ia) && !c.flows.contains(&ib));
    r.flows[a].peer = Some(ib);
    r.flows[b].peer = Some(ia);
    r.connections.push(Connection {
        flows: [ia.min(ib), ia.max(ib)],
        a: if ia < ib {
            r.flows[a].src
        } else {
            r.flows[b].src
        },
        b: if ia < ib {
            r.flows[a].dst
        } else {
            r.flows[b].dst
        },
        qps: if ia < ib {
            [r.flows[a].qp, r.flows[b].qp]
        } else {
            [r.flows[b].qp, r.flows[a].qp]
        },
    });
    r.connections.sort_by_key(|c| c.flows);
}

fn display<T: std::fmt::Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// A session as the JSON report's `cm` list shows it.
#[derive(Serialize)]
struct SessionJson {
    #[serde(serialize_with = "display")]
    requester: Addr,
    #[serde(serialize_with = "display")]
    responder: Addr,
    comm_id: u32,
    service_id: Option<String>,
    requester_qpn: Option<String>,
    /// The first PSN of the requester's flow (the REP's starting PSN).
    requester_first_psn: Option<u32>,
    responder_qpn: Option<String>,
    /// The first PSN of the responder's flow (the REQ's starting PSN).
    responder_first_psn: Option<u32>,
    traffic_class: Option<u8>,
    reqs: u32,
    mras: u32,
    rej_reason: Option<u16>,
    setup_ns: Option<u64>,
    retry_interval_ns: Option<u64>,
    disconnected: bool,
    drep: bool,
    flows: [Option<u32>; 2],
    missing_at_start: [Option<u32>; 2],
}

impl Serialize for CmSession {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SessionJson {
            requester: self.requester,
            responder: self.responder,
            comm_id: self.comm_id,
            service_id: self.req.map(|q| format!("0x{:016x}", q.service_id.0)),
            requester_qpn: self.req.map(|q| q.qpn.to_string()),
            requester_first_psn: self.rep.map(|p| p.start_psn.0),
            responder_qpn: self.rep.map(|p| p.qpn.to_string()),
            responder_first_psn: self.req.map(|q| q.start_psn.0),
            traffic_class: self.req.map(|q| q.traffic_class),
            reqs: self.reqs,
            mras: self.mras,
            rej_reason: self.rej.map(|j| j.reason),
            setup_ns: self.setup_ns(),
            retry_interval_ns: self.retry_interval_ns(),
            disconnected: self.dreq_ns.is_some(),
            drep: self.drep_ns.is_some(),
            flows: self.flows,
            missing_at_start: self.missing_at_start,
        }
        .serialize(s)
    }
}
