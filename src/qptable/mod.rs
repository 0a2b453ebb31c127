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
use crate::config::limits::{QP_TABLE_MAX_BYTES, QP_TABLE_MAX_QPS};
use dissectors::{Addr, Psn, Qpn};
use rustc_hash::FxHashMap;
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

/// Reads a table file (or a pipe: `--qp-table <(rdma res show qp -j)`); the node is the
/// file's name without its extension. At most [`QP_TABLE_MAX_BYTES`] are read: a longer
/// input is refused, not held.
pub fn load(path: &Path) -> Result<Vec<QpEntry>, TableError> {
    use std::io::Read as _;
    let source = path.display().to_string();
    let err = |why: String| TableError {
        source: source.clone(),
        why,
    };
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(QP_TABLE_MAX_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| err(e.to_string()))?;
    if text.len() as u64 > QP_TABLE_MAX_BYTES {
        return Err(err(too_big(QP_TABLE_MAX_BYTES)));
    }
    let node = path
        .file_stem()
        .map_or_else(|| source.clone(), |s| s.to_string_lossy().into_owned());
    parse(&source, &node, &text)
}

/// How much of one table is read: [`QP_TABLE_MAX_BYTES`] and [`QP_TABLE_MAX_QPS`]
/// ([`Limits::default`]), or less where a test or the fuzz target asks for less.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of JSON text.
    pub bytes: u64,
    /// Entries (QPs).
    pub qps: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            bytes: QP_TABLE_MAX_BYTES,
            qps: QP_TABLE_MAX_QPS,
        }
    }
}

/// Parses the text of `rdma res show qp -j` taken on `node`; `source` names it in errors.
/// One entry is held as JSON at a time, duplicates are found with a map: time and memory
/// are linear in the table, which has at most [`QP_TABLE_MAX_QPS`] entries.
pub fn parse(source: &str, node: &str, text: &str) -> Result<Vec<QpEntry>, TableError> {
    parse_within(source, node, text, Limits::default())
}

/// [`parse`] within `limits`: a longer text or more entries is a [`TableError`].
pub fn parse_within(
    source: &str,
    node: &str,
    text: &str,
    limits: Limits,
) -> Result<Vec<QpEntry>, TableError> {
    use serde::Deserializer as _;
    let err = |why: String| TableError {
        source: source.to_string(),
        why,
    };
    if text.len() as u64 > limits.bytes {
        return Err(err(too_big(limits.bytes)));
    }
    let mut why = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let read = de
        .deserialize_any(Entries {
            node,
            max: limits.qps,
            why: &mut why,
        })
        .and_then(|t| de.end().map(|()| t));
    match (read, why) {
        (Ok(t), _) => Ok(t),
        (Err(_), Some(why)) => Err(err(why)),
        (Err(e), None) if e.classify() == serde_json::error::Category::Data => Err(err(
            "not a JSON array (expected the output of `rdma res show qp -j`)".into(),
        )),
        (Err(e), None) => Err(err(format!(
            "line {} column {}: not the JSON of `rdma res show qp -j`: {e}",
            e.line(),
            e.column()
        ))),
    }
}

fn too_big(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!(
            "larger than {} MiB, the most rocetap reads of one QP table",
            bytes >> 20
        )
    } else {
        format!("larger than {bytes} bytes, the most rocetap reads of one QP table")
    }
}

/// Reads the array of a table entry by entry; what is wrong with an entry goes to `why`
/// (the error returned to serde only stops the reading).
struct Entries<'a> {
    node: &'a str,
    max: usize,
    why: &'a mut Option<String>,
}

impl<'de> serde::de::Visitor<'de> for Entries<'_> {
    type Value = Vec<QpEntry>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error as _;
        let mut out: Vec<QpEntry> = Vec::new();
        let mut seen: FxHashMap<(String, Qpn), usize> = FxHashMap::default();
        while let Some(item) = seq.next_element::<Value>()? {
            let i = out.len();
            let mut fail = |why: String| {
                *self.why = Some(why);
                A::Error::custom("bad entry")
            };
            if i == self.max {
                return Err(fail(format!(
                    "more than {} QPs, the most rocetap reads of one table",
                    self.max
                )));
            }
            let e =
                entry(self.node, &item).map_err(|why| fail(format!("entry {}: {why}", i + 1)))?;
            match seen.entry((e.device.clone(), e.lqpn)) {
                std::collections::hash_map::Entry::Occupied(j) => {
                    return Err(fail(format!(
                        "entries {} and {} are both QP {} of {}",
                        j.get() + 1,
                        i + 1,
                        e.lqpn,
                        e.device
                    )));
                }
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(i);
                }
            }
            out.push(e);
        }
        Ok(out)
    }
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
/// fits are left out. For more than [`FEW_FLOWS`] flows the table is indexed once
/// (`Fits`): time is linear in flows plus entries, however many QPs share a number;
/// for a few (the TUI's detail asks for one flow and its peer at every redraw) one walk
/// of the table per flow costs less than the index.
pub fn match_flows(flows: &[FlowRef], table: &[QpEntry]) -> Vec<FlowQps> {
    let fits = (flows.len() > FEW_FLOWS).then(|| Fits::new(table));
    let mut out = Vec::new();
    for f in flows {
        let (recv, send) = match &fits {
            Some(x) => (x.receivers(f), x.senders(f)),
            None => scan(f, table),
        };
        if recv.count == 0 && send.count == 0 {
            continue;
        }
        let one = |h: Hit| (h.count == 1).then(|| table[h.first].clone());
        let sender = one(send);
        let receiver = one(recv);
        let ambiguous = [send, recv]
            .iter()
            .filter(|h| h.count > 1)
            .map(|h| h.count)
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

/// Up to this many flows, [`match_flows`] walks the table for each instead of indexing it.
pub const FEW_FLOWS: usize = 4;

/// The receivers and senders of `f` in `table`, found by walking it.
fn scan(f: &FlowRef, table: &[QpEntry]) -> (Hit, Hit) {
    let at = |e: &QpEntry, a: Addr| e.addr.is_none_or(|x| Addr::Ip(x) == a);
    let (mut recv, mut send) = (Hit::default(), Hit::default());
    for (i, e) in table.iter().enumerate() {
        if e.lqpn == f.qp && (f.peer_qp.is_none() || e.rqpn == f.peer_qp) && at(e, f.dst) {
            recv.add(i);
        }
        if e.rqpn == Some(f.qp) && f.peer_qp.is_none_or(|p| e.lqpn == p) && at(e, f.src) {
            send.add(i);
        }
    }
    (recv, send)
}

/// The entries that fit one role of one flow: how many, and the first (in table order).
#[derive(Clone, Copy, Debug, Default)]
struct Hit {
    count: u32,
    first: usize,
}

impl Hit {
    fn add(&mut self, i: usize) {
        if self.count == 0 {
            self.first = i;
        }
        self.count = self.count.saturating_add(1);
    }

    /// The entries of two disjoint groups (those without an address and those at the
    /// flow's address) together.
    fn and(self, o: Option<&Hit>) -> Hit {
        match o {
            None => self,
            Some(o) if self.count == 0 => *o,
            Some(o) => Hit {
                count: self.count.saturating_add(o.count),
                first: self.first.min(o.first),
            },
        }
    }
}

/// The table counted by what a flow asks of it: the QP's own number (`lqpn`) or its
/// remote's (`rqpn`), with or without the other one, and the node address (`None` when
/// the table's node has none).
#[derive(Default)]
struct Fits {
    lqpn: FxHashMap<(Qpn, Option<IpAddr>), Hit>,
    lqpn_rqpn: FxHashMap<(Qpn, Qpn, Option<IpAddr>), Hit>,
    rqpn: FxHashMap<(Qpn, Option<IpAddr>), Hit>,
}

impl Fits {
    fn new(table: &[QpEntry]) -> Fits {
        let mut f = Fits::default();
        for (i, e) in table.iter().enumerate() {
            f.lqpn.entry((e.lqpn, e.addr)).or_default().add(i);
            if let Some(r) = e.rqpn {
                f.lqpn_rqpn.entry((e.lqpn, r, e.addr)).or_default().add(i);
                f.rqpn.entry((r, e.addr)).or_default().add(i);
            }
        }
        f
    }

    /// Entries without an address plus those at `at` (only an IP address can be a node's).
    fn at<K: Eq + std::hash::Hash>(
        map: &FxHashMap<K, Hit>,
        key: impl Fn(Option<IpAddr>) -> K,
        at: Addr,
    ) -> Hit {
        let none = map.get(&key(None)).copied().unwrap_or_default();
        match at {
            Addr::Ip(ip) => none.and(map.get(&key(Some(ip)))),
            Addr::Lid(_) => none,
        }
    }

    /// `lqpn` = the flow's DestQP (and `rqpn` = its peer's), on the flow's destination.
    fn receivers(&self, f: &FlowRef) -> Hit {
        match f.peer_qp {
            None => Self::at(&self.lqpn, |a| (f.qp, a), f.dst),
            Some(p) => Self::at(&self.lqpn_rqpn, |a| (f.qp, p, a), f.dst),
        }
    }

    /// `rqpn` = the flow's DestQP (and `lqpn` = its peer's), on the flow's source.
    fn senders(&self, f: &FlowRef) -> Hit {
        match f.peer_qp {
            None => Self::at(&self.rqpn, |a| (f.qp, a), f.src),
            Some(p) => Self::at(&self.lqpn_rqpn, |a| (p, f.qp, a), f.src),
        }
    }
}

#[cfg(test)]
mod tests;
