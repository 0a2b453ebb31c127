//! The kernel's QP table as an input to `analyze`: what `rdma res show qp -j` (with or
//! without `-d`) prints on each node — every QP's device, local and remote QPN, type,
//! state, send and receive PSN, pid and command — read from a file ([`load`]) or
//! from the local node over RDMA netlink ([`netlink`]). [`match_flows`] then labels
//! each flow of an analysis with the QPs that sent and received it, paired by (local
//! QPN, remote QPN), and says where the table's PSNs lie against the PSNs captured.
//!
//! The JSON is iproute2's: an array of objects with `ifindex`, `ifname`, `port`,
//! `lqpn`, `rqpn`, `type`, `state`, `rq-psn`, `sq-psn`, `path-mig-state`, `pdn`, `pid`,
//! `comm`, and with `-d` driver keys (`drv_*`), which are ignored.

#![warn(missing_docs)]

pub mod json;
pub mod netlink;

use crate::analysis::FlowSummary;
use dissectors::{Addr, Psn, Qpn};
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::net::IpAddr;
use std::path::Path;

/// One QP of the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QpEntry {
    /// The node the table was taken on (the file's name without extension, or `live`).
    pub node: String,
    /// The node's address, when the command line gave it (`ADDR=FILE`): the flows it
    /// sends have it as source, those it receives as destination.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addr: Option<IpAddr>,
    /// The RDMA device (`ifname`: `rxe0`, `mlx5_0`).
    pub device: String,
    /// The device's port, when the table gives it.
    pub port: Option<u32>,
    /// The QP's own number.
    #[serde(serialize_with = "qpn")]
    pub lqpn: Qpn,
    /// The QP it is connected to (RC / UC), when the table gives it.
    #[serde(serialize_with = "opt_qpn")]
    pub rqpn: Option<Qpn>,
    /// `RC`, `UC`, `UD`, `GSI`, `SMI`, `XRC_INI`, ...
    #[serde(rename = "type")]
    pub qp_type: String,
    /// `RESET`, `INIT`, `RTR`, `RTS`, `SQD`, `SQE`, `ERR`.
    pub state: String,
    /// The next PSN the QP expects to receive (RC / UC).
    #[serde(serialize_with = "opt_psn")]
    pub rq_psn: Option<Psn>,
    /// The next PSN the QP sends with.
    #[serde(serialize_with = "opt_psn")]
    pub sq_psn: Option<Psn>,
    /// The owning process, when a user process owns it.
    pub pid: Option<u32>,
    /// The owner's command (`ib_write_bw`, or a kernel user such as `ib_core`).
    pub comm: Option<String>,
}

fn qpn<S: serde::Serializer>(q: &Qpn, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(q)
}

fn opt_qpn<S: serde::Serializer>(q: &Option<Qpn>, s: S) -> Result<S::Ok, S::Error> {
    match q {
        Some(q) => s.collect_str(q),
        None => s.serialize_none(),
    }
}

fn opt_psn<S: serde::Serializer>(p: &Option<Psn>, s: S) -> Result<S::Ok, S::Error> {
    p.map(|p| p.0).serialize(s)
}

/// Why a QP table could not be read: one line naming the file and the entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableError {
    /// The file (or `live`).
    pub source: String,
    /// What is wrong, with the line or entry.
    pub why: String,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QP table {}: {}", self.source, self.why)
    }
}

impl std::error::Error for TableError {}

/// Reads a table given as `FILE` or `ADDR=FILE` (the node's IP address, which then
/// tells its QPs from those of other nodes with the same numbers).
pub fn load_arg(arg: &str) -> Result<Vec<QpEntry>, TableError> {
    if let Some((a, file)) = arg.split_once('=') {
        if let Ok(addr) = a.parse::<IpAddr>() {
            let mut t = load(Path::new(file))?;
            for e in &mut t {
                e.addr = Some(addr);
            }
            return Ok(t);
        }
    }
    load(Path::new(arg))
}

/// Reads a table file; the node is the file's name without its extension.
pub fn load(path: &Path) -> Result<Vec<QpEntry>, TableError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| TableError {
        source: source.clone(),
        why: e.to_string(),
    })?;
    let node = path
        .file_stem()
        .map_or_else(|| source.clone(), |s| s.to_string_lossy().into_owned());
    parse(&source, &node, &text)
}

/// Parses the text of `rdma res show qp -j` taken on `node`; `source` names it in errors.
pub fn parse(source: &str, node: &str, text: &str) -> Result<Vec<QpEntry>, TableError> {
    let err = |why: String| TableError {
        source: source.to_string(),
        why,
    };
    let v: Value = serde_json::from_str(text).map_err(|e| {
        err(format!(
            "line {} column {}: not the JSON of `rdma res show qp -j`: {e}",
            e.line(),
            e.column()
        ))
    })?;
    let Value::Array(items) = v else {
        return Err(err(
            "not a JSON array (expected the output of `rdma res show qp -j`)".into(),
        ));
    };
    let mut out: Vec<QpEntry> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let e = entry(node, item).map_err(|why| err(format!("entry {}: {why}", i + 1)))?;
        if let Some(j) = out
            .iter()
            .position(|o| o.device == e.device && o.lqpn == e.lqpn)
        {
            return Err(err(format!(
                "entries {} and {} are both QP {} of {}",
                j + 1,
                i + 1,
                e.lqpn,
                e.device
            )));
        }
        out.push(e);
    }
    Ok(out)
}

/// One object of the array.
fn entry(node: &str, v: &Value) -> Result<QpEntry, String> {
    let Value::Object(m) = v else {
        return Err("not a JSON object".into());
    };
    let uint = |k: &str| -> Result<Option<u64>, String> {
        match m.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("\"{k}\" is not a non-negative integer: {x}")),
        }
    };
    let u24 = |k: &str| -> Result<Option<u32>, String> {
        match uint(k)? {
            Some(x) if x > 0xff_ffff => Err(format!("\"{k}\" {x} does not fit in 24 bits")),
            x => Ok(x.map(|x| x as u32)),
        }
    };
    let text = |k: &str| -> Result<Option<String>, String> {
        match m.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(x) => Err(format!("\"{k}\" is not a string: {x}")),
        }
    };
    let lqpn = u24("lqpn")?.ok_or("no \"lqpn\"")?;
    let device = text("ifname")?.ok_or("no \"ifname\"")?;
    let pid = match uint("pid")? {
        Some(p) if p > u64::from(u32::MAX) => return Err(format!("\"pid\" {p} is not a pid")),
        p => p.map(|p| p as u32),
    };
    let port = match uint("port")? {
        Some(p) if p > 255 => return Err(format!("\"port\" {p} is not a port number")),
        p => p.map(|p| p as u32),
    };
    Ok(QpEntry {
        node: node.to_string(),
        addr: None,
        device,
        port,
        lqpn: Qpn(lqpn),
        rqpn: u24("rqpn")?.map(Qpn),
        qp_type: text("type")?.unwrap_or_default(),
        state: text("state")?.unwrap_or_default(),
        rq_psn: u24("rq-psn")?.map(Psn),
        sq_psn: u24("sq-psn")?.map(Psn),
        pid,
        comm: text("comm")?,
    })
}

/// Where a table PSN (the next one a QP sends) lies against the PSNs a flow carried in
/// the capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "where", content = "packets")]
pub enum PsnBound {
    /// This many PSNs before the capture's first: the table was taken before the
    /// traffic; 0 means the capture has the first packet sent after it, more means that
    /// many were sent and not captured (lost, or sent before the capture started).
    Before(u32),
    /// After the first PSN captured and before the last: the table was taken while the
    /// capture ran.
    Within,
    /// This many PSNs after the one following the last captured: 0 means the capture
    /// has everything the QP sent up to the table, more that it went on sending.
    After(u32),
}
/// The QPs of the table behind one flow of the capture.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FlowQps {
    /// The flow's id in the report.
    pub flow: u32,
    /// The QP that sent the flow (its `rqpn` is the flow's DestQP, its `lqpn` the peer
    /// flow's), when exactly one entry fits.
    pub sender: Option<QpEntry>,
    /// The QP that received it (`lqpn` = the flow's DestQP), when exactly one fits.
    pub receiver: Option<QpEntry>,
    /// Entries that fit a role when more than one did (no label is given then).
    pub ambiguous: u32,
    /// Where the sender's `sq-psn` lies against the flow's PSNs (flows of requests
    /// only).
    pub sq_psn: Option<PsnBound>,
}

/// Places `next` (a "next PSN" from the table) against a flow that carried `first..=last`.
pub fn bound(next: Psn, first: Psn, last: Psn) -> PsnBound {
    let before = first.diff(next);
    let after = next.diff(last.next());
    if before >= 0 {
        PsnBound::Before(before as u32)
    } else if after >= 0 {
        PsnBound::After(after as u32)
    } else {
        PsnBound::Within
    }
}

/// What the matching needs of a flow of the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowRef {
    /// The flow's id.
    pub id: u32,
    /// Its source address.
    pub src: Addr,
    /// Its destination address.
    pub dst: Addr,
    /// Its DestQP.
    pub qp: Qpn,
    /// The DestQP of its peer flow (the other direction), when paired.
    pub peer_qp: Option<Qpn>,
    /// PSN of its first packet.
    pub first_psn: Option<Psn>,
    /// PSN of its last packet.
    pub last_psn: Option<Psn>,
    /// Every packet was a request: its PSNs are its sender's send sequence (only then
    /// can the sender's `sq-psn` be placed against them).
    pub requests_only: bool,
}

impl FlowRef {
    /// The flows of a report.
    pub fn of(flows: &[FlowSummary]) -> Vec<FlowRef> {
        flows
            .iter()
            .map(|f| FlowRef {
                id: f.id,
                src: f.src,
                dst: f.dst,
                qp: f.qp,
                // A report's flows are sorted by id: one binary search, not a walk.
                peer_qp: f
                    .peer
                    .and_then(|p| match flows.binary_search_by_key(&p, |g| g.id) {
                        Ok(i) => Some(&flows[i]),
                        Err(_) => flows.iter().find(|g| g.id == p),
                    })
                    .map(|g| g.qp),
                first_psn: f.first_psn,
                last_psn: f.last_psn,
                requests_only: crate::analysis::cm::requests_only(f),
            })
            .collect()
    }
}

/// Labels every flow whose QPs are in `table`: the receiver is the entry whose `lqpn`
/// is the flow's DestQP, the sender the entry whose `rqpn` it is; with a peer flow, both
/// must also agree with the peer's DestQP, and an entry whose node address is known
/// must be on the flow's destination (receiver) or source (sender). Flows no entry
/// fits are left out.
pub fn match_flows(flows: &[FlowRef], table: &[QpEntry]) -> Vec<FlowQps> {
    let mut out = Vec::new();
    for f in flows {
        let at = |e: &QpEntry, a: Addr| e.addr.is_none_or(|x| Addr::Ip(x) == a);
        let recv: Vec<&QpEntry> = table
            .iter()
            .filter(|e| e.lqpn == f.qp && (f.peer_qp.is_none() || e.rqpn == f.peer_qp))
            .filter(|e| at(e, f.dst))
            .collect();
        let send: Vec<&QpEntry> = table
            .iter()
            .filter(|e| e.rqpn == Some(f.qp) && f.peer_qp.is_none_or(|p| e.lqpn == p))
            .filter(|e| at(e, f.src))
            .collect();
        if recv.is_empty() && send.is_empty() {
            continue;
        }
        let one = |v: &[&QpEntry]| (v.len() == 1).then(|| v[0].clone());
        let sender = one(&send);
        let receiver = one(&recv);
        let ambiguous = [&send, &recv]
            .iter()
            .filter(|v| v.len() > 1)
            .map(|v| v.len() as u32)
            .sum();
        let sq_psn = match (&sender, f.first_psn, f.last_psn) {
            (Some(s), Some(a), Some(b)) if f.requests_only => s.sq_psn.map(|n| bound(n, a, b)),
            _ => None,
        };
        out.push(FlowQps {
            flow: f.id,
            sender,
            receiver,
            ambiguous,
            sq_psn,
        });
    }
    out
}

#[cfg(test)]
mod tests;
