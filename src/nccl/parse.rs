//! The messages NCCL writes after its prefix that the triage reads, from their format
//! strings in NCCL's public source (`src/transport/net_ib.cc`, later
//! `src/transport/net_ib/{init,connect,p2p}.cc`, `src/transport/net.cc`,
//! `src/misc/param.cc`, `src/init.cc`):
//!
//! - the completion error, `NET/IB : Got completion from peer %s with error %d, opcode %d,
//!   len %d, vendor err %d` (2.12), with ` (%s)` and ` localGid %s remoteGid %s` from
//!   2.18.3, `with status=%d opcode=%d len=%d vendor err %d (%s) localGid %s remoteGids%s`
//!   from 2.20, ` hca %s` from 2.23 (`NET/IB: `), `status=%s(%d) opcode=%s(%d)
//!   reqSize=%d vendor_err=%u req_type=%s` in 2.28, `status=%s(%d) opcode=%s(%d)
//!   vendor_err=%u` from 2.29 (also `NET/IB/GIN: `);
//! - `NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>`
//!   (rail and plane ids after the port from 2.27: `[0]mlx5_0:1:0/RoCE`);
//! - `%s set by environment to %s` / `%lld.` and `NCCL_IB_HCA set to %s`;
//! - a QP's `NET/IB: Dev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX)` (2.12; `NCCL Dev %d
//!   IbDev %d`, `qp_num` later);
//! - `Channel %02d/%d : %d[%x] -> %d[%x] [send] via NET/IB/%d...`;
//! - `NCCL version %s`, `comm %p rank %d nranks %d ... Init COMPLETE`;
//! - `NET/IB : Got async event : %s` (to 2.22) and `NET/IB : %s:%d async fatal event...`.

use std::net::{IpAddr, Ipv6Addr};

/// What one message says, for the messages the triage reads.
#[derive(Clone, Debug, PartialEq)]
pub enum Message<'a> {
    /// A work completion with an error status.
    Completion(Completion<'a>),
    /// The HCA ports NCCL uses and its out-of-band interface.
    Using(Using<'a>),
    /// `NAME set by environment to VALUE` / `NCCL_IB_HCA set to VALUE`.
    Env(&'a str, &'a str),
    /// A QP NCCL connected: device, QPN, GID index and GID.
    Qp(QpLine),
    /// A channel's connection to a peer rank.
    Channel(ChannelLine<'a>),
    /// `NCCL version X`.
    Version(&'a str),
    /// `comm ... rank R nranks N ...`.
    Rank(u32, u32),
    /// An asynchronous event of the HCA (port down, fatal error).
    AsyncEvent(&'a str),
    /// A completion-error line whose numbers could not be read.
    BadCompletion,
}

/// The completion-error line's fields.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Completion<'a> {
    /// The peer's address as printed (`10.0.0.2<54321>`).
    pub peer_text: &'a str,
    /// Its address without the port.
    pub peer: Option<IpAddr>,
    /// `ibv_wc_status`.
    pub status: u32,
    /// `ibv_wc_opcode`.
    pub opcode: Option<u32>,
    /// Bytes (`len`, `reqSize`).
    pub len: Option<u64>,
    /// The vendor's syndrome.
    pub vendor_err: Option<u32>,
    /// NCCL's request type (`Send`, `Recv`, `Flush`, ...).
    pub req: Option<&'a str>,
    /// The local GID.
    pub local_gid: Option<Ipv6Addr>,
    /// The remote GID.
    pub remote_gid: Option<Ipv6Addr>,
    /// The HCA (2.23 on).
    pub hca: Option<&'a str>,
}

/// One `[i]name:port/LINK` of the Using line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HcaPort<'a> {
    /// NCCL's device index.
    pub index: u32,
    /// The RDMA device.
    pub name: &'a str,
    /// The port.
    pub port: u32,
    /// `RoCE` or `IB`.
    pub link: &'a str,
}

/// The Using line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Using<'a> {
    /// The HCA ports, in NCCL's order.
    pub hcas: Vec<HcaPort<'a>>,
    /// Relaxed ordering on.
    pub relaxed_ordering: bool,
    /// The out-of-band (bootstrap) interface.
    pub oob_if: Option<&'a str>,
    /// Its address.
    pub oob_addr: Option<IpAddr>,
}

/// A QP's connection line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QpLine {
    /// NCCL's device index (`IbDev` where given, else `Dev`).
    pub dev: Option<u32>,
    /// Its QPN.
    pub qpn: u32,
    /// The GID index in use (`GID %ld`).
    pub gid_index: Option<i64>,
    /// The local GID, from the subnet prefix and interface id NCCL prints.
    pub gid: Option<Ipv6Addr>,
}

/// A channel line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelLine<'a> {
    /// Channel number.
    pub channel: u32,
    /// The sending rank.
    pub from: u32,
    /// The receiving rank.
    pub to: u32,
    /// `[send]` (this process is `from`) or `[receive]` (it is `to`).
    pub send: bool,
    /// The network plugin (`IB`, `Socket`, ...).
    pub net: &'a str,
    /// NCCL's device index.
    pub dev: u32,
}

/// What `body` says; `None` for a message the triage does not read.
pub fn message(body: &str) -> Option<Message<'_>> {
    let b = body.trim_end();
    if let Some(i) = b.find("Got completion from peer ") {
        if b[..i].starts_with("NET/IB") {
            return Some(
                completion(&b[i + "Got completion from peer ".len()..])
                    .map_or(Message::BadCompletion, Message::Completion),
            );
        }
    }
    if let Some(r) = b.strip_prefix("NET/IB : Using") {
        return using(r).map(Message::Using);
    }
    if let Some((name, v)) = b.split_once(" set by environment to ") {
        if is_env_name(name) {
            return Some(Message::Env(name, v.strip_suffix('.').unwrap_or(v)));
        }
    }
    if let Some(v) = b.strip_prefix("NCCL_IB_HCA set to ") {
        return Some(Message::Env("NCCL_IB_HCA", v));
    }
    if b.starts_with("NET/IB") && (b.contains(" qpn ") || b.contains(" qp_num ")) {
        return qp_line(b).map(Message::Qp);
    }
    if let Some(r) = b.strip_prefix("Channel ") {
        return channel(r).map(Message::Channel);
    }
    if let Some(v) = b.strip_prefix("NCCL version ") {
        return Some(Message::Version(v.split(' ').next().unwrap_or(v)));
    }
    if b.starts_with("comm ") && b.contains(" nranks ") {
        let rank = after_word(b, "rank")?;
        let n = after_word(b, "nranks")?;
        return Some(Message::Rank(rank, n));
    }
    if b.starts_with("NET/IB") && (b.contains("async event") || b.contains("async fatal event")) {
        return Some(Message::AsyncEvent(b));
    }
    None
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
}

/// The number after the word `w` (a whole word) in `s`.
fn after_word(s: &str, w: &str) -> Option<u32> {
    let mut it = s.split_ascii_whitespace();
    while let Some(t) = it.next() {
        if t == w {
            return it.next()?.trim_end_matches(',').parse().ok();
        }
    }
    None
}

/// `10.0.0.2<54321>` → the address.
fn peer_addr(s: &str) -> Option<IpAddr> {
    let host = s.split_once('<').map_or(s, |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = host.split_once('%').map_or(host, |(h, _)| h);
    host.parse().ok()
}

fn gid(s: &str) -> Option<Ipv6Addr> {
    s.parse().ok()
}

/// `NAME(N)` or `N`.
fn named_number(s: &str) -> Option<u32> {
    let s = s.trim_end_matches(',');
    match s.split_once('(') {
        Some((_, n)) => n.strip_suffix(')')?.parse().ok(),
        None => s.parse().ok(),
    }
}

/// The completion line after `Got completion from peer `.
fn completion(r: &str) -> Option<Completion<'_>> {
    let (peer_text, rest) = r.split_once(" with ")?;
    let mut c = Completion {
        peer_text,
        peer: peer_addr(peer_text),
        ..Completion::default()
    };
    let mut status = None;
    let toks: Vec<&str> = rest.split_ascii_whitespace().take(64).collect();
    let mut i = 0;
    let next = |i: usize| toks.get(i + 1).copied();
    while i < toks.len() {
        let t = toks[i];
        if let Some(v) = t.strip_prefix("status=") {
            status = Some(named_number(v)?);
        } else if let Some(v) = t.strip_prefix("opcode=") {
            c.opcode = named_number(v);
        } else if let Some(v) = t.strip_prefix("len=").or(t.strip_prefix("reqSize=")) {
            c.len = v.trim_end_matches(',').parse().ok();
        } else if let Some(v) = t.strip_prefix("vendor_err=") {
            c.vendor_err = v.parse().ok();
        } else if let Some(v) = t.strip_prefix("req_type=") {
            c.req = Some(v);
        } else if t == "error" && status.is_none() {
            status = Some(named_number(next(i)?)?);
            i += 1;
        } else if t == "opcode" {
            c.opcode = next(i).and_then(named_number);
            i += 1;
        } else if t == "len" {
            c.len = next(i).and_then(|v| v.trim_end_matches(',').parse().ok());
            i += 1;
        } else if t == "vendor" && next(i) == Some("err") {
            c.vendor_err = toks.get(i + 2).and_then(|v| named_number(v));
            i += 2;
        } else if t.starts_with('(') && t.ends_with(')') && t.len() > 2 {
            c.req = Some(&t[1..t.len() - 1]);
        } else if t == "localGid" {
            c.local_gid = next(i).and_then(gid);
            i += 1;
        } else if t == "remoteGid" || t == "remoteGids" {
            c.remote_gid = next(i).and_then(gid);
            i += 1;
        } else if let Some(g) = t.strip_prefix("remoteGids") {
            c.remote_gid = gid(g);
        } else if t == "hca" {
            c.hca = next(i);
            i += 1;
        }
        i += 1;
    }
    c.status = status?;
    Some(c)
}

/// The Using line after `NET/IB : Using`.
fn using(r: &str) -> Option<Using<'_>> {
    let (devs, oob) = match r.split_once("; OOB ") {
        Some((d, o)) => (d, Some(o)),
        None => (r, None),
    };
    let mut u = Using {
        hcas: Vec::new(),
        relaxed_ordering: false,
        oob_if: None,
        oob_addr: None,
    };
    for t in devs.split_ascii_whitespace() {
        if t == "[RO]" {
            u.relaxed_ordering = true;
            continue;
        }
        let Some((idx, rest)) = t.strip_prefix('[').and_then(|t| t.split_once(']')) else {
            continue;
        };
        let Ok(index) = idx.parse() else { continue };
        let (name_port, link) = rest.rsplit_once('/').unwrap_or((rest, ""));
        let (name, port) = name_port.split_once(':').unwrap_or((name_port, ""));
        let port = port
            .split(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if u.hcas.len() < 64 {
            u.hcas.push(HcaPort {
                index,
                name,
                port,
                link,
            });
        }
    }
    if let Some(o) = oob {
        if let Some((i, a)) = o.trim().split_once(':') {
            u.oob_if = Some(i);
            u.oob_addr = peer_addr(a);
        }
    }
    Some(u)
}

/// A QP line.
fn qp_line(b: &str) -> Option<QpLine> {
    let qpn = after_word(b, "qpn").or_else(|| after_word(b, "qp_num"))?;
    let dev = after_word(b, "IbDev").or_else(|| after_word(b, "Dev"));
    let mut gid_index = None;
    let mut g = None;
    let mut it = b.split_ascii_whitespace();
    while let Some(t) = it.next() {
        if t == "GID" {
            gid_index = it.next().and_then(|v| v.parse().ok());
            if let Some(pair) = it.next() {
                g = gid_from_pair(pair);
            }
            break;
        }
    }
    Some(QpLine {
        dev,
        qpn,
        gid_index,
        gid: g,
    })
}

/// `(%lX/%lX)`: the GID's subnet prefix and interface id as NCCL prints them, each the
/// GID's 8 bytes read as a little-endian number (x86 and Arm hosts).
fn gid_from_pair(s: &str) -> Option<Ipv6Addr> {
    let (a, b) = s.strip_prefix('(')?.strip_suffix(')')?.split_once('/')?;
    let a = u64::from_str_radix(a, 16).ok()?;
    let b = u64::from_str_radix(b, 16).ok()?;
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_le_bytes());
    bytes[8..].copy_from_slice(&b.to_le_bytes());
    Some(Ipv6Addr::from(bytes))
}

/// A channel line after `Channel `.
fn channel(r: &str) -> Option<ChannelLine<'_>> {
    let (ch, rest) = r.split_once(" : ")?;
    let channel = ch.split('/').next()?.parse().ok()?;
    let (from, rest) = rest.split_once(" -> ")?;
    let from = from.split('[').next()?.parse().ok()?;
    let (to, rest) = rest.split_once(' ')?;
    let to = to.split('[').next()?.parse().ok()?;
    let send = if rest.starts_with("[send]") {
        true
    } else if rest.starts_with("[receive]") {
        false
    } else {
        return None;
    };
    let via = rest.split_once("via NET/")?.1;
    let (net, dev) = via.split_once('/')?;
    let dev: String = dev.chars().take_while(char::is_ascii_digit).collect();
    Some(ChannelLine {
        channel,
        from,
        to,
        send,
        net,
        dev: dev.parse().ok()?,
    })
}

#[cfg(test)]
mod tests;
