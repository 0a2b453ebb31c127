//! The per-frame field table behind `rocetap decode --format csv|json`: one list of
//! (Wireshark field name, extractor), so CSV columns and JSON keys can never disagree and
//! output can be diffed against `tshark -T fields`. Integers print in decimal, or as `0x`
//! hex where Wireshark shows hex (QPNs, keys, addresses); absent fields are empty in CSV
//! and omitted in JSON.

use crate::capture::Frame;
use dissectors::ethernet::Mac;
use dissectors::{AethKind, ArpOp, Decoded, PauseRepr};
use std::fmt::Write as _;
use std::net::IpAddr;

mod cm;
pub mod tunnel;

/// A field value.
#[derive(Clone, Copy, Debug)]
pub enum Value {
    /// An unsigned integer, printed in decimal.
    Int(u64),
    /// Hex with the given number of digits.
    Hex(u64, usize),
    /// A flag, printed `1` / `0` (a JSON boolean).
    Bool(bool),
    /// A fixed word (an opcode name, a protocol, ...).
    Str(&'static str),
    /// An IPv4 or IPv6 address.
    Ip(IpAddr),
    /// A MAC address, printed `aa:bb:cc:dd:ee:ff`.
    Mac([u8; 6]),
    /// Nanoseconds since the epoch, printed as seconds with 9 decimals.
    Time(u64),
    /// Signed nanoseconds, printed as seconds with 9 decimals.
    RelTime(i64),
    /// A 128-bit GID, printed as an IPv6 address.
    Gid([u8; 16]),
    /// PFC per-priority quanta, printed `q0,q1,...,q7`.
    Quanta([u16; 8]),
    /// Where and why the dissectors stopped, printed as its `Display` text.
    Stop(dissectors::Stop),
}

impl Value {
    /// Appends the CSV / text form.
    pub fn write_to(&self, out: &mut String) {
        let _ = match *self {
            Value::Int(v) => write!(out, "{v}"),
            Value::Hex(v, w) => write!(out, "0x{v:0w$x}"),
            Value::Bool(b) => write!(out, "{}", u8::from(b)),
            Value::Str(s) => write!(out, "{s}"),
            Value::Ip(a) => write!(out, "{a}"),
            Value::Mac(m) => write!(out, "{}", Mac(&m)),
            Value::Time(t) => write!(out, "{}.{:09}", t / 1_000_000_000, t % 1_000_000_000),
            Value::RelTime(t) => {
                let sign = if t < 0 { "-" } else { "" };
                let a = t.unsigned_abs();
                write!(out, "{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
            }
            Value::Gid(g) => write!(out, "{}", std::net::Ipv6Addr::from(g)),
            Value::Quanta(q) => {
                for (i, v) in q.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{v}");
                }
                Ok(())
            }
            Value::Stop(s) => write!(out, "{s}"),
        };
    }

    /// The JSON form: numbers stay numbers, everything else is a string.
    pub fn to_json(self) -> serde_json::Value {
        match self {
            Value::Int(v) => v.into(),
            Value::Bool(b) => b.into(),
            _ => {
                let mut s = String::new();
                self.write_to(&mut s);
                s.into()
            }
        }
    }
}

/// Everything a field extractor can see about one frame.
pub struct Ctx<'a> {
    /// The frame's number in the input, from 1.
    pub number: u64,
    /// The frame as read (timestamp, captured bytes, link type).
    pub frame: &'a Frame<'a>,
    /// Timestamp of the input's first frame, ns (for relative times).
    pub first_ts: u64,
    /// What the dissectors made of the frame.
    pub d: &'a Decoded,
}

/// A column's extractor: the value of one field of a frame, if it has it.
pub type Extract = fn(&Ctx<'_>) -> Option<Value>;

/// A column: its name and its extractor.
type Field = (&'static str, Extract);

macro_rules! roce {
    ($c:ident, $r:ident => $e:expr) => {
        $c.d.roce.as_ref().and_then(|$r| $e)
    };
}

/// Every column, in order. Names follow Wireshark where it has the field; `rocetap.*`
/// fields are our own. The MAD / CM columns (`fields/cm.rs`) come last.
pub const FIELDS: &[(&str, Extract)] =
    &concat::<{ BASE.len() + cm::FIELDS.len() }>(BASE, cm::FIELDS);

/// `a` then `b` as one array (the table is built at compile time from two files).
const fn concat<const N: usize>(a: &[Field], b: &[Field]) -> [Field; N] {
    let mut out = [b[0]; N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    let mut j = 0;
    while j < b.len() {
        out[a.len() + j] = b[j];
        j += 1;
    }
    out
}

/// The columns of every frame before the MAD / CM ones.
const BASE: &[(&str, Extract)] = &[
    ("frame.number", |c| Some(Value::Int(c.number))),
    ("frame.time_epoch", |c| Some(Value::Time(c.frame.ts_ns))),
    ("frame.time_relative", |c| {
        Some(Value::RelTime(c.frame.ts_ns as i64 - c.first_ts as i64))
    }),
    ("frame.interface_id", |c| {
        Some(Value::Int(u64::from(c.frame.iface)))
    }),
    ("rocetap.source", |c| {
        Some(Value::Int(u64::from(c.frame.source)))
    }),
    ("frame.len", |c| Some(Value::Int(u64::from(c.d.orig_len)))),
    ("frame.cap_len", |c| {
        Some(Value::Int(u64::from(c.d.cap_len)))
    }),
    ("eth.src", |c| c.d.eth.map(|e| Value::Mac(e.src))),
    ("eth.dst", |c| c.d.eth.map(|e| Value::Mac(e.dst))),
    ("eth.type", |c| {
        c.d.ethertype.map(|t| Value::Hex(u64::from(t), 4))
    }),
    ("vlan.id", |c| {
        c.d.vlans[0].map(|v| Value::Int(u64::from(v.vid)))
    }),
    ("vlan.priority", |c| {
        c.d.vlans[0].map(|v| Value::Int(u64::from(v.pcp)))
    }),
    ("rocetap.vlan.inner_id", |c| {
        c.d.vlans[1].map(|v| Value::Int(u64::from(v.vid)))
    }),
    ("rocetap.vlan.inner_priority", |c| {
        c.d.vlans[1].map(|v| Value::Int(u64::from(v.pcp)))
    }),
    ("sll.ifindex", |c| {
        c.d.sll
            .and_then(|s| s.ifindex)
            .map(|i| Value::Int(u64::from(i)))
    }),
    ("sll.pkttype", |c| {
        c.d.sll.map(|s| Value::Int(u64::from(s.pkt_type)))
    }),
    ("infiniband.lrh.slid", |c| {
        c.d.lrh.map(|l| Value::Int(u64::from(l.slid)))
    }),
    ("infiniband.lrh.dlid", |c| {
        c.d.lrh.map(|l| Value::Int(u64::from(l.dlid)))
    }),
    ("infiniband.lrh.sl", |c| {
        c.d.lrh.map(|l| Value::Int(u64::from(l.sl)))
    }),
    ("infiniband.grh.sgid", |c| {
        c.d.grh.map(|g| Value::Gid(g.sgid))
    }),
    ("infiniband.grh.dgid", |c| {
        c.d.grh.map(|g| Value::Gid(g.dgid))
    }),
    ("infiniband.grh.tclass", |c| {
        c.d.grh.map(|g| Value::Int(u64::from(g.tclass)))
    }),
    ("ip.src", |c| c.d.ip.map(|i| Value::Ip(i.src))),
    ("ip.dst", |c| c.d.ip.map(|i| Value::Ip(i.dst))),
    ("ip.dsfield.dscp", |c| {
        c.d.dscp().map(|v| Value::Int(u64::from(v)))
    }),
    ("ip.dsfield.ecn", |c| {
        c.d.ecn().map(|e| Value::Int(u64::from(e.bits())))
    }),
    ("ip.ttl", |c| c.d.ip.map(|i| Value::Int(u64::from(i.ttl)))),
    ("ipv6.flow", |c| {
        c.d.ip
            .filter(dissectors::IpRepr::is_ipv6)
            .map(|i| Value::Hex(u64::from(i.flow_label), 5))
    }),
    ("ip.proto", |c| {
        c.d.ip.map(|i| Value::Int(u64::from(i.protocol)))
    }),
    ("udp.srcport", |c| {
        c.d.udp.map(|u| Value::Int(u64::from(u.src_port)))
    }),
    ("udp.dstport", |c| {
        c.d.udp.map(|u| Value::Int(u64::from(u.dst_port)))
    }),
    ("udp.length", |c| {
        c.d.udp.map(|u| Value::Int(u64::from(u.length)))
    }),
    ("rocetap.roce", |c| {
        roce!(c, r => Some(Value::Str(match r.version {
            dissectors::RoceVersion::V1 => "v1",
            dissectors::RoceVersion::V2 => "v2",
            dissectors::RoceVersion::Ib => "ib",
        })))
    }),
    (
        "rocetap.transport",
        |c| roce!(c, r => Some(Value::Str(r.transport().name()))),
    ),
    (
        "rocetap.operation",
        |c| roce!(c, r => r.operation.map(|o| Value::Str(o.name()))),
    ),
    (
        "infiniband.bth.opcode",
        |c| roce!(c, r => Some(Value::Int(u64::from(r.bth.opcode.0)))),
    ),
    (
        "infiniband.bth.se",
        |c| roce!(c, r => Some(Value::Bool(r.bth.se))),
    ),
    (
        "infiniband.bth.m",
        |c| roce!(c, r => Some(Value::Bool(r.bth.mig_req))),
    ),
    (
        "infiniband.bth.padcnt",
        |c| roce!(c, r => Some(Value::Int(u64::from(r.bth.pad_cnt)))),
    ),
    (
        "infiniband.bth.tver",
        |c| roce!(c, r => Some(Value::Int(u64::from(r.bth.tver)))),
    ),
    (
        "infiniband.bth.p_key",
        |c| roce!(c, r => Some(Value::Hex(u64::from(r.bth.pkey.0), 4))),
    ),
    (
        "infiniband.bth.fecn",
        |c| roce!(c, r => Some(Value::Bool(r.bth.fecn))),
    ),
    (
        "infiniband.bth.becn",
        |c| roce!(c, r => Some(Value::Bool(r.bth.becn))),
    ),
    (
        "infiniband.bth.destqp",
        |c| roce!(c, r => Some(Value::Hex(u64::from(r.bth.dest_qp.0), 6))),
    ),
    (
        "infiniband.bth.a",
        |c| roce!(c, r => Some(Value::Bool(r.bth.ack_req))),
    ),
    (
        "infiniband.bth.psn",
        |c| roce!(c, r => Some(Value::Int(u64::from(r.bth.psn.0)))),
    ),
    (
        "infiniband.rdeth.eecnxt",
        |c| roce!(c, r => r.rdeth.map(|h| Value::Hex(u64::from(h.ee_context), 6))),
    ),
    (
        "infiniband.deth.q_key",
        |c| roce!(c, r => r.deth.map(|h| Value::Hex(u64::from(h.qkey), 8))),
    ),
    (
        "infiniband.deth.srcqp",
        |c| roce!(c, r => r.deth.map(|h| Value::Hex(u64::from(h.src_qp.0), 6))),
    ),
    (
        "infiniband.xrceth.xrcsrq",
        |c| roce!(c, r => r.xrceth.map(|h| Value::Hex(u64::from(h.xrc_srq.0), 6))),
    ),
    (
        "infiniband.feth",
        |c| roce!(c, r => r.feth.map(|h| Value::Hex(u64::from(h.word), 8))),
    ),
    (
        "infiniband.reth.va",
        |c| roce!(c, r => r.reth.map(|h| Value::Hex(h.va, 16))),
    ),
    (
        "infiniband.reth.r_key",
        |c| roce!(c, r => r.reth.map(|h| Value::Hex(u64::from(h.rkey), 8))),
    ),
    (
        "infiniband.reth.dmalen",
        |c| roce!(c, r => r.reth.map(|h| Value::Int(u64::from(h.dma_len)))),
    ),
    (
        "infiniband.atomiceth.va",
        |c| roce!(c, r => r.atomic_eth.map(|h| Value::Hex(h.va, 16))),
    ),
    (
        "infiniband.atomiceth.r_key",
        |c| roce!(c, r => r.atomic_eth.map(|h| Value::Hex(u64::from(h.rkey), 8))),
    ),
    (
        "infiniband.atomiceth.swapdt",
        |c| roce!(c, r => r.atomic_eth.map(|h| Value::Hex(h.swap_add, 16))),
    ),
    (
        "infiniband.atomiceth.cmpdt",
        |c| roce!(c, r => r.atomic_eth.map(|h| Value::Hex(h.compare, 16))),
    ),
    (
        "infiniband.aeth.syndrome",
        |c| roce!(c, r => r.aeth.map(|h| Value::Hex(u64::from(h.syndrome), 2))),
    ),
    ("rocetap.aeth.kind", |c| {
        roce!(c, r => r.aeth.map(|h| Value::Str(match h.kind() {
            AethKind::Ack { .. } => "ACK",
            AethKind::RnrNak { .. } => "RNR NAK",
            AethKind::Nak(_) => "NAK",
            AethKind::Reserved(_) => "reserved",
        })))
    }),
    (
        "rocetap.aeth.value",
        |c| roce!(c, r => r.aeth.map(|h| Value::Int(u64::from(h.syndrome & 0x1f)))),
    ),
    (
        "infiniband.aeth.msn",
        |c| roce!(c, r => r.aeth.map(|h| Value::Int(u64::from(h.msn.0)))),
    ),
    (
        "infiniband.atomicacketh.origremdt",
        |c| roce!(c, r => r.atomic_ack_eth.map(|h| Value::Hex(h.orig_rem_data, 16))),
    ),
    (
        "infiniband.immdt",
        |c| roce!(c, r => r.immdt.map(|h| Value::Hex(u64::from(h.data), 8))),
    ),
    (
        "infiniband.ieth",
        |c| roce!(c, r => r.ieth.map(|h| Value::Hex(u64::from(h.rkey), 8))),
    ),
    (
        "rocetap.cnp",
        |c| roce!(c, r => Some(Value::Bool(r.is_cnp()))),
    ),
    (
        "rocetap.payload_len",
        |c| roce!(c, r => r.operation.map(|_| Value::Int(u64::from(r.payload_len)))),
    ),
    (
        "infiniband.invariant.crc",
        |c| roce!(c, r => r.icrc_stored.map(|v| Value::Hex(u64::from(v), 8))),
    ),
    (
        "rocetap.icrc.computed",
        |c| roce!(c, r => r.icrc_computed.map(|v| Value::Hex(u64::from(v), 8))),
    ),
    (
        "rocetap.icrc.status",
        |c| roce!(c, r => Some(Value::Str(r.icrc.name()))),
    ),
    ("arp.opcode", |c| {
        c.d.arp.map(|a| {
            Value::Int(match a.op {
                ArpOp::Request => 1,
                ArpOp::Reply => 2,
                ArpOp::Other(n) => u64::from(n),
            })
        })
    }),
    ("arp.src.hw_mac", |c| {
        c.d.arp
            .filter(|a| a.hlen == 6)
            .map(|a| Value::Mac(mac6(a.sender_hw())))
    }),
    ("arp.src.proto_ipv4", |c| {
        c.d.arp.map(|a| Value::Ip(IpAddr::V4(a.sender_ip)))
    }),
    ("arp.dst.hw_mac", |c| {
        c.d.arp
            .filter(|a| a.hlen == 6)
            .map(|a| Value::Mac(mac6(a.target_hw())))
    }),
    ("arp.dst.proto_ipv4", |c| {
        c.d.arp.map(|a| Value::Ip(IpAddr::V4(a.target_ip)))
    }),
    ("arp.isgratuitous", |c| {
        c.d.arp.map(|a| Value::Bool(a.is_gratuitous()))
    }),
    ("rocetap.pause.kind", |c| {
        c.d.pause.map(|p| {
            Value::Str(match p {
                PauseRepr::Global { .. } => "pause",
                PauseRepr::Pfc { .. } => "pfc",
            })
        })
    }),
    ("macc.quanta", |c| match c.d.pause {
        Some(PauseRepr::Global { quanta }) => Some(Value::Int(u64::from(quanta))),
        _ => None,
    }),
    ("pfc.enable", |c| match c.d.pause {
        Some(PauseRepr::Pfc { enable, .. }) => Some(Value::Hex(u64::from(enable), 2)),
        _ => None,
    }),
    ("pfc.quanta", |c| match c.d.pause {
        Some(PauseRepr::Pfc { quanta, .. }) => Some(Value::Quanta(quanta)),
        _ => None,
    }),
    ("rocetap.stop", |c| Some(Value::Stop(c.d.stop))),
    ("rocetap.stop.why", |c| {
        (!c.d.stop.why.is_empty()).then_some(Value::Str(c.d.stop.why))
    }),
];

fn mac6(b: &[u8]) -> [u8; 6] {
    let mut m = [0u8; 6];
    let n = b.len().min(6);
    m[..n].copy_from_slice(&b[..n]);
    m
}
