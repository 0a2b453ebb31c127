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

use super::report::{ArpEvidence, ArpSummary, ArpSymptom, Event, EventKind, PfcSummary, Severity};
use super::{Config, EventLog};
use dissectors::{ArpOp, ArpRepr, PauseRepr};
use rustc_hash::FxHashMap;
use std::net::Ipv4Addr;

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
/// Symptoms of each kind kept with their evidence (all are counted).
const MAX_SYMPTOMS: usize = 64;
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

/// What the link-level analysis found.
pub struct NetSummary {
    pub pfc: Vec<PfcSummary>,
    pub arp: Vec<ArpSummary>,
    pub arp_unanswered: u64,
    pub pfc_frames: u64,
    pub pfc_resume_frames: u64,
    /// Cross-subnet asks never answered (or retried after their last answer).
    pub arp_cross_subnet_unanswered: u64,
    pub arp_reply_path_mismatch: u64,
    pub arp_duplicate_address: u64,
    pub arp_state_dropped: u64,
    /// The evidence, worst first, at most [`MAX_SYMPTOMS`] of each kind.
    pub symptoms: Vec<ArpSymptom>,
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
    pub fn new(cfg: Config) -> Self {
        Net {
            link_bps: cfg.link_bps.max(1),
            prefix: cfg.arp_prefix_len.min(32),
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
                if self.conflicts.len() < MAX_SYMPTOMS {
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

    pub fn finish(self, log: &mut EventLog) -> NetSummary {
        let link_bps = self.link_bps;
        let mut pfc: Vec<PfcSummary> = self
            .pfc
            .iter()
            .map(|(mac, s)| PfcSummary {
                src_mac: dissectors::ethernet::Mac(mac).to_string(),
                frames: s.frames,
                per_priority: (0..8)
                    .filter(|&i| s.prio_frames[i] > 0)
                    .map(|i| super::report::PfcPrio {
                        priority: i as u8,
                        frames: s.prio_frames[i],
                        quanta: s.quanta[i],
                        pause_ns: (u128::from(s.quanta[i]) * 512 * 1_000_000_000
                            / u128::from(link_bps)) as u64,
                    })
                    .collect(),
            })
            .collect();
        pfc.sort_by(|a, b| a.src_mac.cmp(&b.src_mac));
        let mut unanswered_by_iface: FxHashMap<u32, (u64, Vec<String>)> = FxHashMap::default();
        let mut cross_unanswered_by_iface: FxHashMap<u32, u64> = FxHashMap::default();
        let mut asks: Vec<_> = self.asks.iter().collect();
        asks.sort_by_key(|(k, a)| (a.first_ts, **k));
        let mut unanswered_total = 0;
        let mut cross_unanswered = 0;
        let mut symptoms = Vec::new();
        let (mut n_unans, mut n_ans) = (0usize, 0usize);
        for ((iface, s, t), a) in asks {
            if !a.answered {
                unanswered_total += a.requests;
                let e = unanswered_by_iface.entry(*iface).or_default();
                e.0 += a.requests;
                e.1.push(format!("who-has {t} tell {s} x{}", a.requests));
                let mut ev = Event::link(a.first_ts, EventKind::ArpUnanswered);
                ev.arp = Some((*s, *t));
                ev.iface = Some(*iface);
                ev.count = a.requests;
                log.push(ev);
            }
            if !a.cross {
                continue;
            }
            let name = self.name(*iface);
            let unanswered = !a.answered || a.pending >= RETRIES;
            if unanswered {
                cross_unanswered += 1;
                *cross_unanswered_by_iface.entry(*iface).or_default() += 1;
                n_unans += 1;
                if n_unans > MAX_SYMPTOMS {
                    continue;
                }
                let what = if a.answered {
                    format!(
                        "who-has {t} tell {s} x{}, answered, then {} more requests with no reply",
                        a.requests, a.pending
                    )
                } else {
                    format!("who-has {t} tell {s} x{}, never answered", a.requests)
                };
                symptoms.push(ArpSymptom {
                    kind: "arp_cross_subnet_unanswered",
                    severity: Severity::Error,
                    iface: name.clone(),
                    other_iface: None,
                    addr: *t,
                    peer: *s,
                    macs: Vec::new(),
                    t_ns: a.first_ts,
                    count: if a.answered { a.pending } else { a.requests },
                    evidence: vec![
                        ArpEvidence {
                            t_ns: a.first_ts,
                            iface: name.clone(),
                            what: what.clone(),
                        },
                        ArpEvidence {
                            t_ns: a.last_ts,
                            iface: name.clone(),
                            what: format!("last who-has {t} tell {s}"),
                        },
                    ],
                    message: format!(
                        "{s} asks who-has {t} on {name} from outside {t}'s subnet and gets no answer ({what}): \
                         a multi-homed host uses the address of one interface for traffic that belongs to another. \
                         Typical in an RDMA pod without source-based routing: the node resolves the pod's \
                         eth0 (Calico) address from its RDMA address (its route to the pod goes through an \
                         address-less cali* device, so the kernel picks its first global address), and the \
                         pod's route back to that address leads out of its RDMA interface (net1), so \
                         rp_filter drops the request — or, with loose rp_filter, the pod answers but its own \
                         traffic from the eth0 address leaves net1 and asks there, unanswered. Traffic towards \
                         {t} fails. Fix: the sbr CNI plugin on the pod's RDMA interface (ip rule from <RDMA \
                         address> table <n>, that interface's subnet route moved there); `rocetap netcheck \
                         --netns/--pid/--from` shows the pod's reply route"
                    ),
                });
            } else {
                n_ans += 1;
                if n_ans > MAX_SYMPTOMS {
                    continue;
                }
                let what = format!("who-has {t} tell {s} x{}, answered", a.requests);
                symptoms.push(ArpSymptom {
                    kind: "arp_cross_subnet",
                    severity: Severity::Info,
                    iface: name.clone(),
                    other_iface: None,
                    addr: *t,
                    peer: *s,
                    macs: Vec::new(),
                    t_ns: a.first_ts,
                    count: a.requests,
                    evidence: vec![
                        ArpEvidence {
                            t_ns: a.first_ts,
                            iface: name.clone(),
                            what: format!("who-has {t} tell {s}"),
                        },
                        ArpEvidence {
                            t_ns: a.first_reply_ts,
                            iface: name.clone(),
                            what: format!(
                                "reply {t} is-at {} to {s}",
                                dissectors::ethernet::Mac(&a.reply_mac)
                            ),
                        },
                    ],
                    message: format!(
                        "{s} asks who-has {t} on {name} from another subnet, and {t} answers ({what}): \
                         the asking host uses an address of another interface as the ARP source; harmless \
                         while the pod routes its replies to {s} back out of {name}"
                    ),
                });
            }
        }
        // Reply paths: the address took requests from the peer on one interface (and
        // sent nothing back there) while its own traffic to the peer leaves another.
        let mut mismatches = 0u64;
        let mut pairs: Vec<_> = self.pairs.iter().collect();
        pairs.sort_by_key(|(k, _)| **k);
        let mut found = Vec::new();
        for ((x, peer), pp) in pairs {
            let used = || pp.slots.iter().filter(|s| s.used);
            let Some(i) = used()
                .filter(|s| s.inb.seen() && !s.out.seen())
                .min_by_key(|s| (s.inb.first_ts, s.iface))
            else {
                continue;
            };
            let js: Vec<&PathSlot> = used()
                .filter(|s| {
                    s.iface != i.iface
                        && s.out.seen()
                        && !s.inb.seen()
                        && s.out.first_ts >= i.inb.first_ts
                })
                .collect();
            let Some(j) = js.first() else { continue };
            mismatches += 1;
            found.push((
                j.out.first_ts,
                *x,
                *peer,
                *i,
                js.iter().map(|s| **s).collect::<Vec<_>>(),
            ));
            let _ = j;
        }
        found.sort_by_key(|f| (f.0, f.1, f.2));
        for (ts, x, peer, i, js) in found.into_iter().take(MAX_SYMPTOMS) {
            let iname = self.name(i.iface);
            let jnames: Vec<String> = js.iter().map(|s| self.name(s.iface)).collect();
            let came = match (i.inb.arp, i.inb.ip) {
                (a, 0) => format!("{x} answered {a} ARP request(s) from {peer}"),
                (0, n) => format!("{x} received {n} IP packet(s) from {peer}"),
                (a, n) => format!(
                    "{x} answered {a} ARP request(s) from {peer} and received {n} IP packet(s) from it"
                ),
            };
            let mut evidence = vec![ArpEvidence {
                t_ns: i.inb.first_ts,
                iface: iname.clone(),
                what: format!("{came}; nothing from {x} to {peer} leaves here"),
            }];
            for (s, n) in js.iter().zip(&jnames) {
                let what = match (s.out.arp, s.out.ip) {
                    (a, 0) => format!("who-has {peer} tell {x} x{a}"),
                    (0, p) => format!("{x} > {peer}: {p} IP packet(s)"),
                    (a, p) => {
                        format!("who-has {peer} tell {x} x{a}, then {p} IP packet(s) {x} > {peer}")
                    }
                };
                evidence.push(ArpEvidence {
                    t_ns: s.out.first_ts,
                    iface: n.clone(),
                    what: format!("{what}; nothing from {peer} to {x} arrives here"),
                });
            }
            let mut ev = Event::link(ts, EventKind::ArpReplyPathMismatch);
            ev.arp = Some((x, peer));
            ev.iface = Some(js[0].iface);
            ev.count = u64::from(js[0].out.arp + js[0].out.ip);
            log.push(ev);
            let j = &jnames[0];
            symptoms.push(ArpSymptom {
                kind: "arp_reply_path_mismatch",
                severity: Severity::Error,
                iface: j.clone(),
                other_iface: Some(iname.clone()),
                addr: x,
                peer,
                macs: Vec::new(),
                t_ns: ts,
                count: u64::from(js[0].out.arp + js[0].out.ip),
                evidence,
                message: format!(
                    "replies to {peer} leave {} instead of {iname}: {came} on {iname}, but {x}'s own traffic to \
                     {peer} goes out of {} (asymmetric routing — the route back to {peer} follows the \
                     destination, typically the subnet route of a second interface, not the interface the \
                     request came in on); the far side drops it (rp_filter) or never answers. Fix: \
                     source-based routing for the second interface (the sbr CNI plugin: ip rule from <its \
                     address> table <n>, its subnet route moved there) so that traffic from {x} follows \
                     {iname}; see `rocetap netcheck`",
                    jnames.join(", "),
                    jnames.join(", ")
                ),
            });
        }
        for c in &self.conflicts {
            let name = self.name(c.iface);
            let (a, b) = (
                dissectors::ethernet::Mac(&c.first_mac).to_string(),
                dissectors::ethernet::Mac(&c.other_mac).to_string(),
            );
            symptoms.push(ArpSymptom {
                kind: "arp_duplicate_address",
                severity: Severity::Warning,
                iface: name.clone(),
                other_iface: None,
                addr: c.ip,
                peer: c.ip,
                macs: vec![a.clone(), b.clone()],
                t_ns: c.t_ns,
                count: 1,
                evidence: vec![ArpEvidence {
                    t_ns: c.t_ns,
                    iface: name.clone(),
                    what: format!("{} is-at {a}, then {} is-at {b}", c.ip, c.ip),
                }],
                message: format!(
                    "{} is claimed by two MACs on {name}: {a} and {b} (ARP sender) — an address \
                     conflict (two hosts configured with the same IP), a failover that moved it, or a \
                     proxy ARP answering for a host that is present",
                    c.ip
                ),
            });
        }
        symptoms.sort_by_key(|s| (s.severity, s.t_ns));
        let mut arp: Vec<ArpSummary> = self
            .ifaces
            .iter()
            .map(|(i, s)| {
                let (unanswered, asks) = unanswered_by_iface.remove(i).unwrap_or_default();
                ArpSummary {
                    iface: *i,
                    name: self.name(*i),
                    requests: s.requests,
                    replies: s.replies,
                    gratuitous: s.gratuitous,
                    unanswered,
                    cross_subnet_requests: s.cross_subnet,
                    cross_subnet_unanswered: cross_unanswered_by_iface.get(i).copied().unwrap_or(0),
                    unanswered_asks: asks,
                }
            })
            .collect();
        arp.sort_by_key(|a| a.iface);
        NetSummary {
            pfc,
            arp,
            arp_unanswered: unanswered_total,
            pfc_frames: self.pfc_frames,
            pfc_resume_frames: self.pfc_resume_frames,
            arp_cross_subnet_unanswered: cross_unanswered,
            arp_reply_path_mismatch: mismatches,
            arp_duplicate_address: self.duplicates,
            arp_state_dropped: self.dropped,
            symptoms,
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
