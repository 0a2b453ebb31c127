//! The analyzer: a deterministic state machine fed `(timestamp, decoded frame)` that
//! follows every queue pair and says what went wrong — PSN gaps and whether they were
//! recovered, go-back-N retransmissions and what triggered them (NAK, RNR NAK, timeout,
//! READ re-request), NAKs by code, READ tracking, ACK latency, ECN marks and the CNPs
//! they caused, PFC pauses and the flows they stalled, ICRC results, ARP trouble.
//!
//! Guarantees: no I/O, no clock, no threads — the same frames give the same report. The
//! per-packet path does not allocate (flows live in a slot vector indexed through an
//! FxHashMap with small `Copy` keys and hold only fixed-size rings and histograms); it
//! allocates only when a new flow, an address pair or an event appears. Flows idle for
//! longer than [`Config::idle_timeout_ns`] of capture time are folded into compact
//! [`FlowSummary`]s, so memory follows the number of live QPs, not the packet count.
//! PSNs are compared with 24-bit serial arithmetic everywhere; wraparound is ordinary.

pub mod flow;
pub mod hist;
mod net;
pub mod report;
mod requester;
mod responder;
pub mod ring;
#[cfg(test)]
mod tests;

use dissectors::{
    Addr, AethKind, Decoded, Ecn, IcrcStatus, NakCode, Operation, Psn, Roce, StopKind, Transport,
};
use flow::{Cause, Flow, FlowKey, Gap, Pending};
pub use report::{Event, EventKind, FlowSummary, Report, Totals};
use requester::{acked, end_episode, unrecovered};
use rustc_hash::FxHashMap;

/// Analyzer settings.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// A flow with no packet for this long (capture time) is summarised and forgotten.
    pub idle_timeout_ns: u64,
    /// Events kept for the report; later ones are counted, not stored.
    pub max_events: usize,
    /// Link speed used to turn PFC pause quanta (512 bit times) into time.
    pub link_bps: u64,
    /// ARP requests whose sender and target differ in this many leading bits are
    /// reported as asking across subnets.
    pub arp_prefix_len: u8,
    /// Summaries of finished flows kept for the report; beyond it a flow only counts in
    /// the totals, so memory stays bounded whatever the number of QPs over time.
    pub max_flow_summaries: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            idle_timeout_ns: 60_000_000_000,
            max_events: 100_000,
            link_bps: 100_000_000_000,
            arp_prefix_len: 24,
            max_flow_summaries: 20_000,
        }
    }
}

/// PSN distance within which a response is taken to answer a request stream when the
/// two directions of a connection are paired.
const PAIR_WINDOW: i32 = 1 << 16;
/// How many frames pass between two looks for idle flows.
const SWEEP_EVERY: u64 = 1 << 14;

/// A flow key as plain integers — what the hash map hashes and compares per packet.
/// Addresses become 128 bits (IPv4 as IPv4-mapped IPv6, a LID tagged in the top bits,
/// which no IPv6 unicast address used by RoCE has).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Packed {
    src: u128,
    dst: u128,
    qp: u32,
}

#[inline]
fn ip_bits(a: std::net::IpAddr) -> u128 {
    match a {
        std::net::IpAddr::V4(v4) => 0xffff_0000_0000 | u128::from(u32::from(v4)),
        std::net::IpAddr::V6(v6) => u128::from(v6),
    }
}

#[inline]
fn addr_bits(a: Addr) -> u128 {
    match a {
        Addr::Ip(ip) => ip_bits(ip),
        Addr::Lid(l) => (0xfffe_u128 << 112) | u128::from(l),
    }
}

impl Packed {
    fn of(k: &FlowKey) -> Self {
        Packed {
            src: addr_bits(k.src),
            dst: addr_bits(k.dst),
            qp: k.qp.0,
        }
    }

    /// The key of a decoded RoCE packet, straight from the IP header when there is one.
    #[inline]
    fn from_decoded(d: &Decoded, qp: dissectors::Qpn) -> Option<Self> {
        if let Some(ip) = &d.ip {
            return Some(Packed {
                src: ip_bits(ip.src),
                dst: ip_bits(ip.dst),
                qp: qp.0,
            });
        }
        let (src, dst) = d.endpoints()?;
        Some(Packed::of(&FlowKey { src, dst, qp }))
    }

    /// Position in the direct-mapped flow cache.
    #[inline]
    fn way(&self) -> usize {
        let x = self.qp ^ (self.src as u32) ^ (self.dst as u32).rotate_left(11);
        (x ^ (x >> 16)) as usize & (CACHE_WAYS - 1)
    }
}

/// One entry of the recent-PSN table.
#[derive(Clone, Copy, Debug, Default)]
struct RecentSend {
    /// [`send_tag`] of (requester, responder, PSN); 0 when empty.
    tag: u64,
    slot: u32,
    ts: u64,
}

/// A hash of an address pair (computed once per flow, for both directions).
fn pair_hash(src: u128, dst: u128) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    (src, dst).hash(&mut h);
    h.finish()
}

/// A non-zero 64-bit tag of a request PSN between a pair of addresses: one multiply per
/// packet on top of the flow's precomputed pair hash.
#[inline]
fn send_tag(pair: u64, psn: Psn) -> u64 {
    (pair ^ u64::from(psn.0).wrapping_mul(0x9e37_79b9_7f4a_7c15)).rotate_left(23) | 1
}

/// Entries of the direct-mapped cache in front of the flow hash map: the flows of the
/// last few packets are found with one compare instead of a hash lookup.
const CACHE_WAYS: usize = 64;
/// An empty cache entry.
const NO_SLOT: u32 = u32::MAX;

/// The recorded events, capped.
#[derive(Debug, Default)]
pub struct EventLog {
    pub events: Vec<Event>,
    pub dropped: u64,
    cap: usize,
}

impl EventLog {
    fn push(&mut self, e: Event) -> Option<usize> {
        if self.events.len() < self.cap {
            self.events.push(e);
            Some(self.events.len() - 1)
        } else {
            self.dropped += 1;
            None
        }
    }
}

/// Counters that are not per flow.
#[derive(Clone, Copy, Debug, Default)]
pub struct Global {
    pub frames: u64,
    pub roce_packets: u64,
    pub ce_marked: u64,
    pub ecn: [u64; 4],
    pub cnp: u64,
    pub cnp_unmatched: u64,
    pub malformed: u64,
    pub truncated: u64,
    pub unsupported: u64,
    pub roce_unknown_opcode: u64,
    pub first_ts: Option<u64>,
    pub last_ts: u64,
}

pub struct Analyzer {
    cfg: Config,
    index: FxHashMap<Packed, u32>,
    /// Direct-mapped cache of recent flows (key, slot); slot `NO_SLOT` when empty.
    cache: [(Packed, u32); CACHE_WAYS],
    /// Live flows, boxed: a retired flow's memory goes back at once (the slot vector
    /// keeps only a pointer per slot).
    slots: Vec<Option<Box<Flow>>>,
    /// Each slot's flow's last packet time (`u64::MAX` for a free slot), dense so the
    /// sweep for idle flows reads 8 bytes per flow instead of touching every flow.
    last_seen: Vec<u64>,
    free: Vec<u32>,
    /// Live flows by (src, dst): where to look for a flow's other direction.
    by_pair: FxHashMap<(Addr, Addr), Vec<u32>>,
    /// Which request flow sent a PSN most recently, by (requester, responder, PSN),
    /// direct-mapped: how a response finds the request stream it answers in one probe.
    recent: Vec<RecentSend>,
    done: Vec<FlowSummary>,
    /// Totals of every retired flow, kept or not.
    sums: Totals,
    connections: Vec<(u32, u32)>,
    next_id: u32,
    log: EventLog,
    g: Global,
    net: net::Net,
    frames_since_sweep: u64,
    /// Inputs cut short, with the complete frames read from each.
    cut_short: Vec<(String, u64)>,
}

impl Analyzer {
    pub fn new(cfg: Config) -> Self {
        Analyzer {
            cfg,
            index: FxHashMap::default(),
            cache: [(
                Packed {
                    src: 0,
                    dst: 0,
                    qp: 0,
                },
                NO_SLOT,
            ); CACHE_WAYS],
            slots: Vec::new(),
            last_seen: Vec::new(),
            free: Vec::new(),
            by_pair: FxHashMap::default(),
            recent: vec![RecentSend::default(); 4096],
            done: Vec::new(),
            sums: Totals::default(),
            connections: Vec::new(),
            next_id: 0,
            log: EventLog {
                cap: cfg.max_events,
                ..EventLog::default()
            },
            g: Global::default(),
            net: net::Net::new(cfg),
            frames_since_sweep: 0,
            cut_short: Vec::new(),
        }
    }

    /// Names an interface id for reports (e.g. the capture file it came from).
    pub fn name_iface(&mut self, iface: u32, name: String) {
        self.net.names.insert(iface, name);
    }

    /// Notes that an input ended in the middle of a record after `frames` complete
    /// frames: a warning finding and `totals.input_cut_short`.
    pub fn input_cut_short(&mut self, file: &str, frames: u64) {
        self.cut_short.push((file.to_string(), frames));
    }

    /// Feeds one frame. `iface` is the capture interface (pcapng interface id); an SLL2
    /// header's ifindex takes precedence.
    pub fn ingest(&mut self, ts: u64, iface: u32, d: &Decoded) {
        let g = &mut self.g;
        g.frames += 1;
        g.first_ts.get_or_insert(ts);
        g.last_ts = g.last_ts.max(ts);
        match d.stop.kind {
            StopKind::Malformed => g.malformed += 1,
            StopKind::Truncated => g.truncated += 1,
            StopKind::Unsupported => g.unsupported += 1,
            StopKind::Complete => {}
        }
        if let Some(e) = d.ecn() {
            g.ecn[e.bits() as usize] += 1;
            if e == Ecn::Ce {
                g.ce_marked += 1;
            }
        }
        if let Some(r) = &d.roce {
            self.g.roce_packets += 1;
            self.roce(ts, d, r);
        } else if let Some(a) = &d.arp {
            let iface = d.sll.and_then(|s| s.ifindex).unwrap_or(iface);
            self.net.arp(ts, iface, a, &mut self.log);
        } else if let Some(p) = &d.pause {
            self.net.pause(ts, d.src_mac(), p, &mut self.log);
        } else if let Some(ip) = &d.ip {
            // Plain IPv4 (ICMP, TCP, ...): only moves reply-path state ARP created.
            if let (std::net::IpAddr::V4(s), std::net::IpAddr::V4(t)) = (ip.src, ip.dst) {
                let iface = d.sll.and_then(|s| s.ifindex).unwrap_or(iface);
                self.net.ip(ts, iface, s, t);
            }
        }
        self.frames_since_sweep += 1;
        if self.frames_since_sweep >= SWEEP_EVERY {
            self.frames_since_sweep = 0;
            self.sweep(ts);
        }
    }

    /// Summarises flows idle since before `now - idle_timeout`.
    fn sweep(&mut self, now: u64) {
        let limit = now.saturating_sub(self.cfg.idle_timeout_ns);
        for slot in 0..self.last_seen.len() {
            if self.last_seen[slot] < limit {
                self.retire(slot as u32);
            }
        }
    }

    /// Settles a flow's open state, stores its summary and frees its slot.
    fn retire(&mut self, slot: u32) {
        let Some(mut f) = self.slots[slot as usize].take() else {
            return;
        };
        self.last_seen[slot as usize] = u64::MAX;
        settle(&mut f, &mut self.log);
        if let Some(p) = f.peer {
            if let Some(pf) = self.slots[p as usize].as_mut() {
                pf.peer = None;
            }
        }
        let packed = Packed::of(&f.key);
        self.index.remove(&packed);
        self.cache[packed.way()].1 = NO_SLOT;
        if let Some(v) = self.by_pair.get_mut(&(f.key.src, f.key.dst)) {
            let pos = f.pair_pos as usize;
            if v.get(pos) == Some(&slot) {
                v.swap_remove(pos);
                if let Some(&moved) = v.get(pos) {
                    if let Some(m) = self.slots[moved as usize].as_mut() {
                        m.pair_pos = pos as u32;
                    }
                }
            }
            if v.is_empty() {
                self.by_pair.remove(&(f.key.src, f.key.dst));
            }
        }
        let summary = report::summarize(&f);
        report::add_flow(&mut self.sums, &summary);
        if self.done.len() < self.cfg.max_flow_summaries {
            self.done.push(summary);
        } else {
            self.sums.flow_summaries_dropped += 1;
        }
        self.free.push(slot);
    }

    #[inline]
    fn flow_slot(&mut self, packed: Packed, d: &Decoded, r: &Roce, ts: u64) -> u32 {
        let way = packed.way();
        let (k, s) = self.cache[way];
        if s != NO_SLOT && k == packed {
            return s;
        }
        let s = match self.index.get(&packed) {
            Some(&s) => s,
            None => self.new_flow(packed, d, r, ts),
        };
        self.cache[way] = (packed, s);
        s
    }

    #[cold]
    fn new_flow(&mut self, packed: Packed, d: &Decoded, r: &Roce, ts: u64) -> u32 {
        let (src, dst) = d.endpoints().expect("a keyed packet has endpoints");
        let key = FlowKey {
            src,
            dst,
            qp: r.bth.dest_qp,
        };
        let mut f = Flow::new(self.next_id, key, r.version, ts);
        f.pair_hash = [
            pair_hash(packed.src, packed.dst),
            pair_hash(packed.dst, packed.src),
        ];
        self.next_id += 1;
        let same_pair = self.by_pair.entry((key.src, key.dst)).or_default();
        f.pair_pos = same_pair.len() as u32;
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(Box::new(f));
                self.last_seen[s as usize] = ts;
                s
            }
            None => {
                self.slots.push(Some(Box::new(f)));
                self.last_seen.push(ts);
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(packed, slot);
        self.by_pair
            .get_mut(&(key.src, key.dst))
            .expect("entry made above")
            .push(slot);
        if self.index.len() * 2 > self.recent.len() {
            // Resized (and forgotten: it is a cache) as flows grow, so lookups stay
            // one probe with few collisions.
            let n = (self.index.len() * 4).next_power_of_two();
            self.recent = vec![RecentSend::default(); n];
        }
        slot
    }

    fn roce(&mut self, ts: u64, d: &Decoded, r: &Roce) {
        let Some(packed) = Packed::from_decoded(d, r.bth.dest_qp) else {
            return;
        };
        let slot = self.flow_slot(packed, d, r, ts);
        // The priority only matters once a pause was seen (PCP, else DSCP's top bits).
        let stall = if self.net.pfc_frames > 0 {
            self.net.pause_started(d.pcp().or(d.dscp().map(|x| x >> 3)))
        } else {
            None
        };
        let f = self.slots[slot as usize]
            .as_mut()
            .expect("slot of a live flow");
        account(f, ts, d, r, stall);
        self.last_seen[slot as usize] = f.last_ts;
        let Some(op) = r.operation else {
            self.g.roce_unknown_opcode += 1;
            return;
        };
        if d.stop.kind == StopKind::Malformed {
            // Counted, but its headers cannot be trusted to move PSN state: a mangled
            // frame must not invent gaps and then retransmissions. A frame cut by the
            // snaplen after a whole BTH still has its PSN (what an extended header cut
            // off would have said is left unknown).
            return;
        }
        if op == Operation::Cnp {
            self.g.cnp += 1;
            self.cnp(slot, ts);
        } else if op.is_response() {
            self.response(slot, ts, op, r);
        } else {
            self.request(slot, ts, op, r, d.ip.map_or(0, |ip| ip.ident));
            let f = self.slots[slot as usize].as_ref().expect("live flow");
            // Only an unpaired request stream can be paired by a response's PSN (a paired
            // one is never taken over), so only its PSNs go into the table.
            if f.peer.is_none() && r.transport() != Transport::Ud {
                let tag = send_tag(f.pair_hash[0], r.bth.psn);
                let mask = self.recent.len() - 1;
                self.recent[tag as usize & mask] = RecentSend { tag, slot, ts };
            }
        }
    }

    /// The connection's PMTU: learned from this direction's full-size packets, else from
    /// the paired direction's (a pairing can still be wrong early on, so the flow's own
    /// evidence wins).
    fn pmtu_of(&self, slot: u32) -> u32 {
        let f = self.slots[slot as usize].as_ref().expect("live flow");
        if f.pmtu > 0 {
            return f.pmtu;
        }
        f.peer
            .and_then(|p| self.slots[p as usize].as_ref())
            .map_or(0, |p| p.pmtu)
    }

    fn request(&mut self, slot: u32, ts: u64, op: Operation, r: &Roce, ident: u16) {
        // Only a READ needs the PMTU (to know how many PSNs it consumes).
        let pmtu = if op == Operation::ReadRequest {
            self.pmtu_of(slot)
        } else {
            0
        };
        let f = self.slots[slot as usize].as_mut().expect("live flow");
        let sent = requester::Sent {
            ts,
            op,
            r,
            pmtu,
            ident,
        };
        requester::request(f, &sent, &mut self.log);
    }

    fn response(&mut self, slot: u32, ts: u64, op: Operation, r: &Roce) {
        let p = r.bth.psn;
        {
            let f = self.slots[slot as usize].as_mut().expect("live flow");
            if let Some(a) = r.aeth {
                match a.kind() {
                    AethKind::Ack { .. } => {}
                    AethKind::RnrNak { timer } => {
                        f.c.rnr_nak += 1;
                        f.rnr_timers.get_or_insert_with(Box::default)[usize::from(timer & 31)] += 1;
                        let mut e = Event::new(ts, f.id, EventKind::RnrNak).psn(p);
                        e.code = Some(timer);
                        self.log.push(e);
                    }
                    AethKind::Nak(code) => {
                        match code {
                            NakCode::PsnSequenceError => f.c.nak_psn_seq += 1,
                            NakCode::InvalidRequest => f.c.nak_invalid_request += 1,
                            NakCode::RemoteAccessError => f.c.nak_remote_access += 1,
                            NakCode::RemoteOperationalError => f.c.nak_remote_operational += 1,
                            NakCode::InvalidRdRequest => f.c.nak_invalid_rd_request += 1,
                            NakCode::Unknown(_) => f.c.nak_reserved += 1,
                        }
                        let mut e = Event::new(ts, f.id, EventKind::Nak).psn(p);
                        e.code = Some(nak_value(code));
                        self.log.push(e);
                    }
                    AethKind::Reserved(_) => {}
                }
            }
        }
        let peer = match self.slots[slot as usize].as_ref().and_then(|f| f.peer) {
            // The paired request stream sent exactly this PSN: the pairing holds.
            Some(old) if self.sent_at(old, p, ts).is_some() => Some(old),
            // Another request stream sent exactly this PSN, or the response does not
            // fit the paired stream at all: the first pairing was wrong (QPs whose PSNs
            // started close together). Otherwise keep it (requests may just be missing
            // from the capture).
            Some(old) => {
                let fits = self.answers(old, p);
                match self.pair(slot, p, ts, fits) {
                    Some(new) => Some(new),
                    None => Some(old),
                }
            }
            None => self.pair(slot, p, ts, false),
        };
        let Some(peer) = peer else {
            return;
        };
        let (f, q) = two(&mut self.slots, slot, peer);
        let log = &mut self.log;
        if let Some(a) = r.aeth {
            match a.kind() {
                AethKind::Ack { .. } => acked(q, p, ts),
                AethKind::RnrNak { timer } => {
                    acked(q, p.minus(1), ts);
                    requester::push_pending(
                        q,
                        Pending {
                            psn: p,
                            t_ns: ts,
                            cause: Cause::Rnr(timer),
                        },
                    );
                }
                AethKind::Nak(NakCode::PsnSequenceError) => {
                    acked(q, p.minus(1), ts);
                    for i in 0..q.req.gaps.len() {
                        let g = q.req.gaps.get_mut(i);
                        if g.contains(p) {
                            g.nak = true;
                        }
                    }
                    requester::push_pending(
                        q,
                        Pending {
                            psn: p,
                            t_ns: ts,
                            cause: Cause::Nak,
                        },
                    );
                }
                AethKind::Nak(_) | AethKind::Reserved(_) => {}
            }
        }
        if matches!(
            op,
            Operation::ReadResponseFirst
                | Operation::ReadResponseMiddle
                | Operation::ReadResponseLast
                | Operation::ReadResponseOnly
        ) {
            responder::read_response(f, q, p, op, ts, log);
        }
    }

    /// Finds the request stream this response answers: a flow in the opposite
    /// direction whose recent requests cover PSN `p`. Pairs the two flows for good.
    /// True when a response with PSN `p` fits the recent requests of flow `q`.
    fn answers(&self, q: u32, p: Psn) -> bool {
        self.slots[q as usize]
            .as_ref()
            .is_some_and(|qf| qf.req.started && (0..=PAIR_WINDOW).contains(&qf.req.next.diff(p)))
    }

    /// When request flow `q` last sent PSN `p` (new or resent), at or before `now`. The
    /// ring is searched newest first: a response answers a recent request, so the search
    /// usually ends after a step or two.
    fn sent_at(&self, q: u32, p: Psn, now: u64) -> Option<u64> {
        let sent = &self.slots[q as usize].as_ref()?.req.sent;
        (0..sent.len())
            .rev()
            .map(|i| *sent.get(i))
            .find(|&(sp, st, _)| sp == p && st <= now)
            .map(|(_, st, _)| st)
    }

    /// Pairs response flow `slot` with the request flow it answers: preferably one that
    /// sent exactly PSN `p`, most recently before `now` (a response follows its request
    /// within a round trip); else, unless `exact_only`, the one whose next PSN is
    /// closest above `p`.
    fn pair(&mut self, slot: u32, p: Psn, now: u64, exact_only: bool) -> Option<u32> {
        let f = self.slots[slot as usize].as_ref()?;
        let current = f.peer;
        // One probe: the flow that sent exactly this PSN most recently, if unpaired.
        let tag = send_tag(f.pair_hash[1], p);
        let hit = self.recent[tag as usize & (self.recent.len() - 1)];
        let found =
            (hit.tag == tag && hit.ts <= now && hit.slot != slot && Some(hit.slot) != current)
                .then_some(hit.slot)
                .filter(|&c| {
                    self.slots[c as usize].as_ref().is_some_and(|cf| {
                        cf.key.src == f.key.dst
                            && cf.key.dst == f.key.src
                            && cf.req.started
                            && cf.peer.is_none()
                    })
                })
                .filter(|&c| self.sent_at(c, p, now).is_some());
        if let Some(c) = found {
            return Some(self.link(slot, c));
        }
        if exact_only {
            // Only an exact sender could take over a pairing that still fits, and the
            // probe above found none.
            return None;
        }
        let cands = self.by_pair.get(&(f.key.dst, f.key.src))?;
        // The slow search walks the other direction's flows: always while they are few,
        // rationed (1st, 2nd, 4th, 8th ... try) where a host pair has many QPs, so the
        // cost per packet does not grow with them.
        let tries = f.pair_tries.saturating_add(1);
        let walk = cands.len() <= 64 || tries.is_power_of_two();
        self.slots[slot as usize].as_mut()?.pair_tries = tries;
        if !walk {
            return None;
        }
        let mut exact: Option<(u64, u32)> = None;
        let mut near: Option<(i32, u32)> = None;
        for &c in cands {
            if c == slot || Some(c) == current {
                continue;
            }
            let Some(cf) = self.slots[c as usize].as_ref() else {
                continue;
            };
            if !cf.req.started || cf.peer.is_some() {
                continue;
            }
            if let Some(t) = self.sent_at(c, p, now) {
                if exact.map_or(true, |(bt, _)| t > bt) {
                    exact = Some((t, c));
                }
            }
            let dist = cf.req.next.diff(p);
            if (0..=PAIR_WINDOW).contains(&dist) && near.map_or(true, |(d, _)| dist < d) {
                near = Some((dist, c));
            }
        }
        let c = match (exact, near) {
            (Some((_, c)), _) => c,
            (None, Some((_, c))) if !exact_only => c,
            _ => return None,
        };
        Some(self.link(slot, c))
    }

    /// Pairs response flow `slot` with request flow `c` (undoing an earlier pairing).
    fn link(&mut self, slot: u32, c: u32) -> u32 {
        let current = self.slots[slot as usize].as_ref().and_then(|f| f.peer);
        if let Some(old) = current {
            let (f, of) = two(&mut self.slots, slot, old);
            of.peer = None;
            of.peer_id = None;
            let pair = (f.id.min(of.id), f.id.max(of.id));
            self.connections.retain(|&x| x != pair);
        }
        let (f, cf) = two(&mut self.slots, slot, c);
        f.peer = Some(c);
        cf.peer = Some(slot);
        f.peer_id = Some(cf.id);
        cf.peer_id = Some(f.id);
        self.connections.push((cf.id.min(f.id), cf.id.max(f.id)));
        c
    }

    /// A CNP in flow `slot` (B -> A, DestQP = A's QP): it answers CE-marked traffic
    /// A -> B, which is this flow's peer when paired, otherwise the flow A -> B that was
    /// marked most recently.
    fn cnp(&mut self, slot: u32, ts: u64) {
        let f = self.slots[slot as usize].as_mut().expect("live flow");
        f.c.cnp_sent += 1;
        let f = self.slots[slot as usize].as_ref().expect("live flow");
        let target = f.peer.filter(|&p| {
            self.slots[p as usize]
                .as_ref()
                .is_some_and(|pf| pf.c.ce_marked > 0)
        });
        let target = target.or_else(|| {
            let key = f.key;
            self.by_pair.get(&(key.dst, key.src)).and_then(|v| {
                v.iter()
                    .copied()
                    .filter_map(|s| self.slots[s as usize].as_ref().map(|x| (s, x)))
                    .filter(|(_, x)| x.c.ce_marked > 0)
                    .max_by_key(|(_, x)| x.last_ce_ts)
                    .map(|(s, _)| s)
            })
        });
        let Some(t) = target else {
            self.g.cnp_unmatched += 1;
            let id = self.slots[slot as usize].as_ref().map_or(0, |f| f.id);
            self.log.push(Event::new(ts, id, EventKind::CnpWithoutCe));
            return;
        };
        let tf = self.slots[t as usize].as_mut().expect("live flow");
        tf.c.cnp_received += 1;
        if tf.ce_since_cnp > 0 {
            let waited = ts.saturating_sub(tf.ce_first_since_cnp);
            tf.delays_mut().ce_to_cnp.record(waited);
            tf.ce_since_cnp = 0;
        } else {
            tf.c.cnp_without_ce += 1;
            let id = tf.id;
            self.log.push(Event::new(ts, id, EventKind::CnpWithoutCe));
        }
        let tf = self.slots[t as usize].as_mut().expect("live flow");
        if tf.first_cnp.is_none() {
            tf.first_cnp = Some((ts, tf.bytes));
        }
        tf.last_cnp = Some((ts, tf.bytes));
    }

    /// The report so far, without ending the run (for the live UI): live flows are
    /// summarised as they stand (their open gaps and episodes are not settled), and
    /// `events` holds only the events recorded from index `events_from` on, so a caller
    /// that keeps the earlier ones copies each event once. Allocates; meant to be called
    /// a few times per second, not per packet.
    pub fn snapshot(&self, events_from: usize) -> Report {
        let mut sums = self.sums;
        let mut flows = self.done.clone();
        for f in self.slots.iter().flatten() {
            let s = report::summarize(f);
            report::add_flow(&mut sums, &s);
            flows.push(s);
        }
        let from = events_from.min(self.log.events.len());
        let log = EventLog {
            events: self.log.events[from..].to_vec(),
            dropped: self.log.dropped,
            cap: usize::MAX,
        };
        // Unanswered ARP requests become events only at the end of the run.
        let net = self.net.clone().finish(&mut EventLog::default());
        report::build(
            self.g,
            sums,
            flows,
            self.connections.clone(),
            log,
            net,
            &self.cut_short,
        )
    }

    /// Events recorded so far (the index the next snapshot's events start from).
    pub fn events_recorded(&self) -> usize {
        self.log.events.len()
    }

    /// Ends the run: settles every live flow and returns the report.
    pub fn finish(mut self) -> Report {
        for slot in 0..self.slots.len() {
            self.retire(slot as u32);
        }
        let net = std::mem::take(&mut self.net).finish(&mut self.log);
        report::build(
            self.g,
            self.sums,
            self.done,
            self.connections,
            self.log,
            net,
            &self.cut_short,
        )
    }
}

/// Two distinct live flows, mutably.
fn two(slots: &mut [Option<Box<Flow>>], a: u32, b: u32) -> (&mut Flow, &mut Flow) {
    let (a, b) = (a as usize, b as usize);
    assert_ne!(a, b);
    if a < b {
        let (x, y) = slots.split_at_mut(b);
        (
            x[a].as_mut().expect("live flow"),
            y[0].as_mut().expect("live flow"),
        )
    } else {
        let (x, y) = slots.split_at_mut(a);
        (
            y[0].as_mut().expect("live flow"),
            x[b].as_mut().expect("live flow"),
        )
    }
}

/// The per-packet bookkeeping every RoCE packet gets in its flow.
fn account(f: &mut Flow, ts: u64, d: &Decoded, r: &Roce, pause_start: Option<u64>) {
    if let Some(ps) = pause_start {
        // The flow's priority was paused after its previous packet: it stalled.
        if ps > f.last_ts && ps <= ts && f.packets > 0 {
            f.c.pfc_stalls += 1;
            f.c.pfc_stall_ns += ts - ps;
        }
    }
    f.packets += 1;
    f.bytes += u64::from(d.orig_len);
    f.first_ts = f.first_ts.min(ts);
    f.last_ts = f.last_ts.max(ts);
    if let Some(e) = d.ecn() {
        f.ecn[e.bits() as usize] += 1;
        if e == Ecn::Ce {
            f.c.ce_marked += 1;
            if f.ce_since_cnp == 0 {
                f.ce_first_since_cnp = ts;
            }
            f.ce_since_cnp += 1;
            f.last_ce_ts = ts;
        }
    }
    // A malformed frame is already counted as such; its ICRC verdict would count the
    // same damage twice.
    match r.icrc {
        _ if d.stop.kind == StopKind::Malformed => f.icrc[2] += 1,
        IcrcStatus::Ok => f.icrc[0] += 1,
        IcrcStatus::Bad => f.icrc[1] += 1,
        IcrcStatus::Truncated | IcrcStatus::Absent => f.icrc[2] += 1,
    }
    if f.dscp.is_none() {
        f.dscp = d.dscp();
    }
    if f.pcp.is_none() {
        f.pcp = d.pcp();
        f.vlan = d.vlans[0].map(|v| v.vid);
    }
    let t = r.transport();
    if f.transport.is_none() && t != Transport::Cnp {
        f.transport = Some(t);
    }
    match r.operation {
        Some(o) => {
            f.ops[o as usize] += 1;
            // First and Middle packets are exactly one PMTU long.
            if matches!(
                o,
                Operation::SendFirst
                    | Operation::SendMiddle
                    | Operation::WriteFirst
                    | Operation::WriteMiddle
                    | Operation::ReadResponseFirst
                    | Operation::ReadResponseMiddle
            ) && r.payload_len.is_power_of_two()
                && (256..=4096).contains(&r.payload_len)
            {
                f.pmtu = f.pmtu.max(r.payload_len);
            }
            if o != Operation::Cnp {
                f.first_psn.get_or_insert(r.bth.psn);
                f.last_psn = Some(r.bth.psn);
            }
        }
        None => f.other_ops += 1,
    }
}

fn nak_value(c: NakCode) -> u8 {
    match c {
        NakCode::PsnSequenceError => 0,
        NakCode::InvalidRequest => 1,
        NakCode::RemoteAccessError => 2,
        NakCode::RemoteOperationalError => 3,
        NakCode::InvalidRdRequest => 4,
        NakCode::Unknown(n) => n,
    }
}

/// Closes whatever is still open in a flow that ends (or idles out).
fn settle(f: &mut Flow, log: &mut EventLog) {
    if let Some(s) = f.req.tentative.take() {
        requester::resolve(f, s, None, log);
    }
    end_episode(&mut f.req.episode, log);
    end_episode(&mut f.resp.episode, log);
    let mut gaps = [Gap::default(); 2 * flow::GAP_SLOTS];
    let mut n = 0;
    f.req.gaps.drain(|g| {
        gaps[n] = g;
        n += 1;
    });
    f.resp.gaps.drain(|g| {
        gaps[n] = g;
        n += 1;
    });
    for g in &gaps[..n] {
        unrecovered(f, g, log);
    }
    f.c.ce_without_cnp += f.ce_since_cnp;
    f.ce_since_cnp = 0;
}
