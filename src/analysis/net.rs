//! The link-level side of the analysis: PFC / PAUSE frames (per source MAC and priority,
//! with pause time from the quanta at the configured link speed) and ARP, per interface:
//! requests, replies, requests nobody answered, requests that ask across subnets (and
//! whether they were answered — an unanswered one is the symptom of a multi-homed pod
//! without source-based routing), addresses that answer ARP or receive IP on one
//! interface while their own traffic to the same peer leaves another (reply path
//! mismatch), and addresses claimed by two MACs on one interface.
//!
//! State grows with the number of MACs, addresses and address pairs seen, never with the
//! packet count, and every table is capped (what does not fit is counted in
//! `arp_state_dropped`). Plain IP frames cost one emptiness check unless ARP created
//! address pairs to follow; then two lookups, no allocation.

use super::events::{Event, EventKind, EventLog};
use dissectors::{ArpOp, ArpRepr, PauseRepr};
use rustc_hash::FxHashMap;
use std::net::Ipv4Addr;

mod summary;
pub use summary::{
    ArpProblem, ArpSeen, ArpSummary, ArpSymptom, ArpSymptomKind, AskAnswer, NetSummary, Traffic,
    UnansweredAsk,
};

#[derive(Clone, Copy, Debug, Default)]
struct PfcSource {
    frames: u64,
    prio_frames: [u64; 8],
    quanta: [u64; 8],
}

/// (interface, sender, target) ARP asks followed; beyond it requests are only counted.
const MAX_ASKS: usize = 16_384;
/// (address, peer) pairs followed for the reply path.
const MAX_PAIRS: usize = 4_096;
/// Interfaces remembered per (address, peer) pair.
const PAIR_IFACES: usize = 4;
/// (interface, address) -> MAC claims remembered for duplicate detection.
const MAX_CLAIMS: usize = 16_384;
/// Duplicate-address conflicts kept with their evidence (all are counted).
const MAX_CONFLICTS: usize = 64;
/// Requests after the last reply that make an once-answered ask unanswered again.
const RETRIES: u64 = 3;

#[derive(Clone, Copy, Debug)]
struct ArpAsk {
    requests: u64,
    first_ts: u64,
    last_ts: u64,
    answered: bool,
    first_reply_ts: u64,
    /// The MAC the first reply gave.
    reply_mac: [u8; 6],
    /// Requests since the last reply.
    pending: u64,
    /// Sender and target in different subnets (neither link-local).
    cross: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct ArpIface {
    requests: u64,
    replies: u64,
    gratuitous: u64,
    cross_subnet: u64,
}

/// One direction of a pair on one interface.
#[derive(Clone, Copy, Debug, Default)]
struct Side {
    arp: u32,
    ip: u32,
    first_ts: u64,
}

impl Side {
    #[inline]
    fn seen(&self) -> bool {
        self.arp + self.ip > 0
    }
    #[inline]
    fn add(&mut self, ts: u64, arp: bool) {
        if !self.seen() {
            self.first_ts = ts;
        }
        if arp {
            self.arp = self.arp.saturating_add(1);
        } else {
            self.ip = self.ip.saturating_add(1);
        }
    }
}

/// What address X did towards peer P on one interface: `inb` — X answered P's ARP or
/// received IP from P; `out` — X asked ARP for P or sent IP to P.
#[derive(Clone, Copy, Debug, Default)]
struct PathSlot {
    iface: u32,
    used: bool,
    inb: Side,
    out: Side,
}

#[derive(Clone, Copy, Debug, Default)]
struct PairPaths {
    slots: [PathSlot; PAIR_IFACES],
}

impl PairPaths {
    /// The slot of `iface`, taken if new; None when every slot holds another interface.
    #[inline]
    fn slot(&mut self, iface: u32) -> Option<&mut PathSlot> {
        let i = self
            .slots
            .iter()
            .position(|s| s.used && s.iface == iface)
            .or_else(|| self.slots.iter().position(|s| !s.used))?;
        let s = &mut self.slots[i];
        s.used = true;
        s.iface = iface;
        Some(s)
    }

    /// `inbound`: the address answered ARP / received IP from the peer; else it asked
    /// ARP for / sent IP to the peer. False when every slot holds another interface.
    #[inline]
    fn mark(&mut self, iface: u32, ts: u64, inbound: bool, arp: bool) -> bool {
        match self.slot(iface) {
            Some(s) if inbound => s.inb.add(ts, arp),
            Some(s) => s.out.add(ts, arp),
            None => return false,
        }
        true
    }
}

#[derive(Clone, Copy, Debug)]
struct Claim {
    mac: [u8; 6],
    conflict: bool,
}

#[derive(Clone, Copy, Debug)]
struct Conflict {
    iface: u32,
    ip: Ipv4Addr,
    first_mac: [u8; 6],
    other_mac: [u8; 6],
    t_ns: u64,
}

#[derive(Clone, Default)]
pub struct Net {
    link_bps: u64,
    prefix: u8,
    pfc: FxHashMap<[u8; 6], PfcSource>,
    /// PAUSE / PFC frames that pause at least one priority (XOFF).
    pub pfc_frames: u64,
    /// PFC frames whose every enabled priority has quanta 0 (XON: resume).
    pub pfc_resume_frames: u64,
    /// When the current pause of each priority began (0 = never).
    pause_start: [u64; 8],
    /// (interface, sender, target) -> what was asked there. Kept per interface: a reply
    /// that leaves by another interface does not answer the request (ARP flux).
    asks: FxHashMap<(u32, Ipv4Addr, Ipv4Addr), ArpAsk>,
    /// Names given to interface ids (capture file, pcapng interface).
    pub names: FxHashMap<u32, String>,
    ifaces: FxHashMap<u32, ArpIface>,
    /// (address, peer) -> per interface, what came in for the address and what it sent.
    /// Created by ARP only; IP frames update existing pairs.
    pairs: FxHashMap<(Ipv4Addr, Ipv4Addr), PairPaths>,
    /// (interface, address) -> the MAC that claimed it first.
    claims: FxHashMap<(u32, Ipv4Addr), Claim>,
    conflicts: Vec<Conflict>,
    duplicates: u64,
    /// Asks, pairs, pair interfaces and claims not tracked because a table was full.
    dropped: u64,
}

/// True when the address is link-local (169.254.0.0/16): Calico's 169.254.1.1 gateway
/// answered by proxy ARP is never "another subnet".
fn link_local(a: Ipv4Addr) -> bool {
    a.is_link_local()
}

impl Net {
    /// The link state for a link of `link_bps` ([`Config::link_bps`](super::Config)),
    /// ARP asks across `arp_prefix_len` bits ([`Config::arp_prefix_len`](super::Config)).
    pub fn new(link_bps: u64, arp_prefix_len: u8) -> Self {
        Net {
            link_bps: link_bps.max(1),
            prefix: arp_prefix_len.min(32),
            ..Net::default()
        }
    }

    /// When the most recent pause of priority `prio` began, if any was seen.
    #[inline]
    pub fn pause_started(&self, prio: Option<u8>) -> Option<u64> {
        let p = usize::from(prio?);
        self.pause_start.get(p).copied().filter(|&t| t > 0)
    }

    pub fn pause(&mut self, ts: u64, mac: Option<[u8; 6]>, p: &PauseRepr, log: &mut EventLog) {
        let pauses = (0..8u8).any(|prio| p.quanta_for(prio) > 0);
        if pauses {
            self.pfc_frames += 1;
        } else {
            self.pfc_resume_frames += 1;
        }
        let src = self.pfc.entry(mac.unwrap_or([0; 6])).or_default();
        src.frames += 1;
        for prio in 0..8u8 {
            let q = match p {
                PauseRepr::Global { quanta } => Some(*quanta),
                PauseRepr::Pfc { enable, quanta } => {
                    (enable & (1 << prio) != 0).then_some(quanta[usize::from(prio)])
                }
            };
            if let Some(q) = q {
                let i = usize::from(prio);
                src.prio_frames[i] += 1;
                src.quanta[i] += u64::from(q);
                // Quanta 0 releases the pause (XON); anything else starts one.
                if q > 0 {
                    self.pause_start[i] = ts.max(1);
                }
            }
        }
        let _ = log;
    }

    /// Records, for a pair ARP showed (created if new), that `x` did something towards
    /// `peer` on `iface` (`inbound`: answered its ARP; else asked ARP for it).
    fn mark_arp(&mut self, x: Ipv4Addr, peer: Ipv4Addr, iface: u32, ts: u64, inbound: bool) {
        if !self.pairs.contains_key(&(x, peer)) {
            if self.pairs.len() >= MAX_PAIRS {
                self.dropped += 1;
                return;
            }
            self.pairs.insert((x, peer), PairPaths::default());
        }
        if let Some(p) = self.pairs.get_mut(&(x, peer)) {
            if !p.mark(iface, ts, inbound, true) {
                self.dropped += 1;
            }
        }
    }

    /// A plain (non-RoCE) IPv4 packet: moves the reply-path state of pairs ARP showed.
    #[inline]
    pub fn ip(&mut self, ts: u64, iface: u32, src: Ipv4Addr, dst: Ipv4Addr) {
        if self.pairs.is_empty() {
            return;
        }
        if let Some(p) = self.pairs.get_mut(&(dst, src)) {
            if !p.mark(iface, ts, true, false) {
                self.dropped += 1;
            }
        }
        if let Some(p) = self.pairs.get_mut(&(src, dst)) {
            if !p.mark(iface, ts, false, false) {
                self.dropped += 1;
            }
        }
    }

    /// `ip` is claimed by `mac` on `iface` (ARP sender): a second MAC is a conflict.
    fn claim(&mut self, ts: u64, iface: u32, ip: Ipv4Addr, mac: [u8; 6], log: &mut EventLog) {
        if ip.is_unspecified() || mac == [0; 6] {
            return;
        }
        let full = self.claims.len() >= MAX_CLAIMS;
        match self.claims.get_mut(&(iface, ip)) {
            Some(c) if c.mac != mac && !c.conflict => {
                c.conflict = true;
                self.duplicates += 1;
                if self.conflicts.len() < MAX_CONFLICTS {
                    self.conflicts.push(Conflict {
                        iface,
                        ip,
                        first_mac: c.mac,
                        other_mac: mac,
                        t_ns: ts,
                    });
                }
                let mut e = Event::link(ts, EventKind::ArpDuplicateAddress);
                e.arp = Some((ip, ip));
                e.iface = Some(iface);
                e.count = 1;
                log.push(e);
            }
            Some(_) => {}
            None if full => self.dropped += 1,
            None => {
                self.claims.insert(
                    (iface, ip),
                    Claim {
                        mac,
                        conflict: false,
                    },
                );
            }
        }
    }

    pub fn arp(&mut self, ts: u64, iface: u32, a: &ArpRepr, log: &mut EventLog) {
        if a.hlen == 6 {
            let mut mac = [0u8; 6];
            mac.copy_from_slice(&a.sender_hw[..6]);
            self.claim(ts, iface, a.sender_ip, mac, log);
        }
        let st = self.ifaces.entry(iface).or_default();
        match a.op {
            ArpOp::Request if a.is_gratuitous() || a.sender_ip.is_unspecified() => {
                st.gratuitous += 1;
            }
            ArpOp::Request => {
                st.requests += 1;
                let key = (iface, a.sender_ip, a.target_ip);
                let cross = !same_subnet(a.sender_ip, a.target_ip, self.prefix)
                    && !link_local(a.sender_ip)
                    && !link_local(a.target_ip);
                let room = self.asks.len() < MAX_ASKS || self.asks.contains_key(&key);
                let ask = room.then(|| {
                    self.asks.entry(key).or_insert(ArpAsk {
                        requests: 0,
                        first_ts: ts,
                        last_ts: ts,
                        answered: false,
                        first_reply_ts: 0,
                        reply_mac: [0; 6],
                        pending: 0,
                        cross,
                    })
                });
                match ask {
                    Some(ask) => {
                        ask.requests += 1;
                        ask.pending += 1;
                        ask.last_ts = ts;
                        if ask.requests == 1 && cross {
                            st.cross_subnet += 1;
                            let mut e = Event::link(ts, EventKind::ArpCrossSubnet);
                            e.arp = Some((a.sender_ip, a.target_ip));
                            e.iface = Some(iface);
                            log.push(e);
                        }
                    }
                    None => self.dropped += 1,
                }
                // The sender asks for the target here; the target may answer here.
                self.mark_arp(a.sender_ip, a.target_ip, iface, ts, false);
                if !self.pairs.contains_key(&(a.target_ip, a.sender_ip)) {
                    if self.pairs.len() < MAX_PAIRS {
                        self.pairs
                            .insert((a.target_ip, a.sender_ip), PairPaths::default());
                    } else {
                        self.dropped += 1;
                    }
                }
            }
            ArpOp::Reply => {
                st.replies += 1;
                if let Some(ask) = self.asks.get_mut(&(iface, a.target_ip, a.sender_ip)) {
                    if !ask.answered {
                        ask.first_reply_ts = ts;
                        if a.hlen == 6 {
                            ask.reply_mac.copy_from_slice(&a.sender_hw[..6]);
                        }
                    }
                    ask.answered = true;
                    ask.pending = 0;
                }
                if !a.sender_ip.is_unspecified() && !a.target_ip.is_unspecified() {
                    self.mark_arp(a.sender_ip, a.target_ip, iface, ts, true);
                }
            }
            ArpOp::Other(_) => {}
        }
    }
}

impl Net {
    /// How an interface id is shown: its given name; for an unnamed interface of a
    /// named source (`source << 16 | interface`), `name#interface`; else `iface N`.
    pub fn name(&self, iface: u32) -> String {
        if let Some(n) = self.names.get(&iface) {
            return n.clone();
        }
        match self.names.get(&(iface & 0xffff_0000)) {
            Some(base) => format!("{base}#{}", iface & 0xffff),
            None => format!("iface {iface}"),
        }
    }
}

/// True when the first `prefix` bits of both addresses agree.
fn same_subnet(a: Ipv4Addr, b: Ipv4Addr, prefix: u8) -> bool {
    if prefix == 0 {
        return true;
    }
    let mask = u32::MAX << (32 - u32::from(prefix));
    u32::from(a) & mask == u32::from(b) & mask
}
