//! The link-level side of the analysis: PFC / PAUSE frames (per source MAC and priority,
//! with pause time from the quanta at the configured link speed) and ARP (requests,
//! replies, requests nobody answered, requests that ask across subnets — the symptom of
//! a multi-homed host without source-based routing). State grows with the number of
//! MACs and IP pairs seen, never with the packet count.

use super::report::{ArpSummary, Event, EventKind, PfcSummary};
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

#[derive(Clone, Copy, Debug)]
struct ArpAsk {
    requests: u64,
    first_ts: u64,
    answered: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct ArpIface {
    requests: u64,
    replies: u64,
    gratuitous: u64,
    cross_subnet: u64,
}

/// What the link-level analysis found.
pub struct NetSummary {
    pub pfc: Vec<PfcSummary>,
    pub arp: Vec<ArpSummary>,
    pub arp_unanswered: u64,
    pub pfc_frames: u64,
    pub pfc_resume_frames: u64,
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

    pub fn arp(&mut self, ts: u64, iface: u32, a: &ArpRepr, log: &mut EventLog) {
        let st = self.ifaces.entry(iface).or_default();
        match a.op {
            ArpOp::Request if a.is_gratuitous() || a.sender_ip.is_unspecified() => {
                st.gratuitous += 1;
            }
            ArpOp::Request => {
                st.requests += 1;
                let key = (iface, a.sender_ip, a.target_ip);
                let ask = self.asks.entry(key).or_insert(ArpAsk {
                    requests: 0,
                    first_ts: ts,
                    answered: false,
                });
                ask.requests += 1;
                let first = ask.requests == 1;
                if first && !same_subnet(a.sender_ip, a.target_ip, self.prefix) {
                    st.cross_subnet += 1;
                    let mut e = Event::link(ts, EventKind::ArpCrossSubnet);
                    e.arp = Some((a.sender_ip, a.target_ip));
                    e.iface = Some(iface);
                    log.push(e);
                }
            }
            ArpOp::Reply => {
                st.replies += 1;
                if let Some(ask) = self.asks.get_mut(&(iface, a.target_ip, a.sender_ip)) {
                    ask.answered = true;
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
        let mut asks: Vec<_> = self.asks.iter().collect();
        asks.sort_by_key(|(k, a)| (a.first_ts, **k));
        let mut unanswered_total = 0;
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
        }
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
