//! What the join reads of a tap: its RC flows with the counters and the stop that tell a
//! connection's story, from an analysis [`Report`] (a capture) or from the
//! `rocetap.analyze/1` JSON a node agent's `/report` serves.

use crate::analysis::stop::StopKind;
use crate::analysis::Report;
use dissectors::Addr;
use serde_json::Value;
use std::net::IpAddr;

/// How a request stream ended without finishing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopView {
    /// Gave up or stalled.
    pub kind: StopKind,
    /// The PSN retried (or that never came); `None` when the source does not say (an
    /// agent's JSON).
    pub psn: Option<u32>,
    /// How often it was retried.
    pub retries: Option<u32>,
    /// The first retry, ns.
    pub first_ns: Option<u64>,
    /// The flow's last packet, ns.
    pub last_ns: u64,
}

/// One flow of a tap.
#[derive(Clone, Debug, PartialEq)]
pub struct WireFlow {
    /// Its id in the tap.
    pub id: u32,
    /// Source address (IPv4-mapped GIDs as IPv4).
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// DestQP.
    pub qp: u32,
    /// The other direction's id.
    pub peer: Option<u32>,
    /// RC or XRC.
    pub rc: bool,
    /// First packet, ns.
    pub first_ts_ns: u64,
    /// Last packet, ns.
    pub last_ts_ns: u64,
    /// Packets.
    pub packets: u64,
    /// Packets resent.
    pub retransmitted_packets: u64,
    /// Timer retries.
    pub timeout_retransmission_episodes: u64,
    /// Of them, whose PSN never passed the tap.
    pub timeout_episodes_gap_at_tap: u64,
    /// Of them, of a PSN an ACK at the tap had covered.
    pub timeout_episodes_acked: u64,
    /// PSN-sequence NAKs.
    pub nak_psn_seq: u64,
    /// Of them, naming a PSN the tap saw missing.
    pub nak_psn_seq_gap_at_tap: u64,
    /// RNR NAKs.
    pub rnr_nak: u64,
    /// CNPs received by its sender.
    pub cnp_received: u64,
    /// CE-marked packets.
    pub ecn_ce: u64,
    /// How it ended.
    pub stop: Option<StopView>,
}

/// One tap: a capture's or an agent's flows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tap {
    /// RC flows with an IP address (RoCE v2; RoCE v1 GIDs as addresses).
    pub flows: Vec<WireFlow>,
    /// PAUSE / PFC frames, every sender.
    pub pfc_frames: u64,
}

fn ip(a: &Addr) -> Option<IpAddr> {
    match a {
        Addr::Ip(IpAddr::V6(v6)) => Some(v6.to_ipv4_mapped().map_or(IpAddr::V6(*v6), IpAddr::V4)),
        Addr::Ip(a) => Some(*a),
        Addr::Lid(_) => None,
    }
}

fn rc(t: &str) -> bool {
    matches!(t, "RC" | "XRC")
}

impl Tap {
    /// The other direction of `f`: its paired flow, else the flow back with the same
    /// transport.
    pub fn peer_of(&self, f: &WireFlow) -> Option<&WireFlow> {
        f.peer
            .and_then(|p| self.flows.iter().find(|g| g.id == p))
            .or_else(|| {
                self.flows
                    .iter()
                    .find(|g| g.src == f.dst && g.dst == f.src && g.rc == f.rc)
            })
    }

    /// A capture's analysis.
    pub fn from_report(r: &Report) -> Tap {
        let flows = r
            .flows
            .iter()
            .filter_map(|f| {
                let c = &f.counters;
                Some(WireFlow {
                    id: f.id,
                    src: ip(&f.src)?,
                    dst: ip(&f.dst)?,
                    qp: f.qp.0,
                    peer: f.peer,
                    rc: rc(f.transport),
                    first_ts_ns: f.first_ts_ns,
                    last_ts_ns: f.last_ts_ns,
                    packets: f.packets,
                    retransmitted_packets: c.retransmitted_packets,
                    timeout_retransmission_episodes: c.timeout_retransmission_episodes,
                    timeout_episodes_gap_at_tap: c.timeout_episodes_gap_at_tap,
                    timeout_episodes_acked: c.timeout_episodes_acked,
                    nak_psn_seq: c.nak_psn_seq,
                    nak_psn_seq_gap_at_tap: c.nak_psn_seq_gap_at_tap,
                    rnr_nak: c.rnr_nak,
                    cnp_received: c.cnp_received,
                    ecn_ce: f.ecn_ce,
                    stop: f.stop.map(|s| StopView {
                        kind: s.kind,
                        psn: Some(s.psn.0),
                        retries: Some(s.retries),
                        first_ns: Some(s.first_ns),
                        last_ns: s.last_ns,
                    }),
                })
            })
            .collect();
        Tap {
            flows,
            pfc_frames: r.pfc.iter().map(|p| p.frames).sum(),
        }
    }

    /// A `rocetap.analyze/1` document (an agent's `/report`). It states no PSN nor retry
    /// count of a stop (the text finding does): those stay `None`.
    pub fn from_analyze_json(v: &Value) -> Result<Tap, String> {
        if v.get("schema").and_then(Value::as_str) != Some("rocetap.analyze/1") {
            return Err("not a rocetap.analyze/1 document".into());
        }
        let flows = v
            .get("flows")
            .and_then(Value::as_array)
            .ok_or("no flows in the report")?;
        let u = |f: &Value, k: &str| f.get(k).and_then(Value::as_u64).unwrap_or(0);
        let first_retry = |id: u64| {
            v.get("findings")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|x| {
                    x.get("kind").and_then(Value::as_str) == Some("retry_exhausted")
                        && x.get("flow").and_then(Value::as_u64) == Some(id)
                })
                .and_then(|x| x.get("t_ns").and_then(Value::as_u64))
        };
        let mut out = Vec::new();
        for f in flows {
            let addr = |k: &str| -> Option<IpAddr> {
                let a: IpAddr = f.get(k)?.as_str()?.parse().ok()?;
                Some(match a {
                    IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(a, IpAddr::V4),
                    IpAddr::V4(_) => a,
                })
            };
            let (Some(src), Some(dst)) = (addr("src"), addr("dst")) else {
                continue;
            };
            let qp = f
                .get("qp")
                .and_then(Value::as_str)
                .and_then(|q| u32::from_str_radix(q.trim_start_matches("0x"), 16).ok())
                .unwrap_or(0);
            let id = u(f, "id");
            let last = u(f, "last_ts_ns");
            let stop = if u(f, "retry_exhausted") > 0 {
                Some(StopKind::RetryExhausted)
            } else if u(f, "stalled") > 0 {
                Some(StopKind::Stalled)
            } else {
                None
            };
            out.push(WireFlow {
                id: u32::try_from(id).unwrap_or(u32::MAX),
                src,
                dst,
                qp,
                peer: f
                    .get("peer")
                    .and_then(Value::as_u64)
                    .and_then(|p| u32::try_from(p).ok()),
                rc: rc(f.get("transport").and_then(Value::as_str).unwrap_or("")),
                first_ts_ns: u(f, "first_ts_ns"),
                last_ts_ns: last,
                packets: u(f, "packets"),
                retransmitted_packets: u(f, "retransmitted_packets"),
                timeout_retransmission_episodes: u(f, "timeout_retransmission_episodes"),
                timeout_episodes_gap_at_tap: u(f, "timeout_episodes_gap_at_tap"),
                timeout_episodes_acked: u(f, "timeout_episodes_acked"),
                nak_psn_seq: u(f, "nak_psn_seq"),
                nak_psn_seq_gap_at_tap: u(f, "nak_psn_seq_gap_at_tap"),
                rnr_nak: u(f, "rnr_nak"),
                cnp_received: u(f, "cnp_received"),
                ecn_ce: u(f, "ecn_ce"),
                stop: stop.map(|kind| StopView {
                    kind,
                    psn: None,
                    retries: None,
                    first_ns: first_retry(id),
                    last_ns: last,
                }),
            });
        }
        let pfc_frames = v
            .get("pfc")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("frames").and_then(Value::as_u64))
            .sum();
        Ok(Tap {
            flows: out,
            pfc_frames,
        })
    }
}
