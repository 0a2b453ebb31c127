//! What the link-level analysis hands back at the end of a run, as values: PFC per
//! sender and priority, ARP per interface (with the asks nobody answered), and the ARP /
//! reply-path symptoms with the observations behind them. Nothing here is worded: the
//! sentences (and the JSON `message` / `what` strings) are written by
//! `crate::report::findings`.

use super::{Net, PathSlot, RETRIES};
use crate::analysis::events::{Event, EventKind, EventLog};
use crate::analysis::report::{PfcPrio, PfcSummary, Severity};
use rustc_hash::FxHashMap;
use std::net::Ipv4Addr;

/// Symptoms of each kind kept with their evidence (all are counted).
const MAX_SYMPTOMS: usize = 64;

/// ARP on one interface.
#[derive(Clone, Debug)]
pub struct ArpSummary {
    /// The interface index the frames were read on.
    pub iface: u32,
    /// The interface's name (as the capture named it), or its index as text when unnamed.
    pub name: String,
    /// ARP requests (retries included), gratuitous ones and probes from 0.0.0.0 not
    /// counted.
    pub requests: u64,
    /// ARP replies.
    pub replies: u64,
    /// Gratuitous ARP requests and probes (sender 0.0.0.0).
    pub gratuitous: u64,
    /// ARP request packets (retries included) that no reply on this interface answered.
    pub unanswered: u64,
    /// Asks (sender, target) across subnets, counted once per ask at its first request.
    pub cross_subnet_requests: u64,
    /// Of those, the asks never answered (or retried 3+ times after their last answer).
    pub cross_subnet_unanswered: u64,
    /// The asks on this interface that no reply answered, oldest first.
    pub unanswered_asks: Vec<UnansweredAsk>,
}

/// `who-has target tell sender`, asked `requests` times and never answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnansweredAsk {
    /// The address asked for.
    pub target: Ipv4Addr,
    /// The address asking.
    pub sender: Ipv4Addr,
    /// Requests sent for it, retries included.
    pub requests: u64,
}

/// The kinds of ARP / reply-path symptom (their `kind` code in JSON and `--fail-on`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArpSymptomKind {
    /// A cross-subnet ask never answered (or retried after its last answer).
    CrossSubnetUnanswered,
    /// An address answers on one interface while its traffic to the peer leaves another.
    ReplyPathMismatch,
    /// An address claimed by two MACs on one interface.
    DuplicateAddress,
    /// A cross-subnet ask that was answered (context).
    CrossSubnet,
}

impl ArpSymptomKind {
    /// The stable code: `arp_cross_subnet_unanswered`, `arp_reply_path_mismatch`,
    /// `arp_duplicate_address`, `arp_cross_subnet`.
    pub fn code(self) -> &'static str {
        match self {
            ArpSymptomKind::CrossSubnetUnanswered => "arp_cross_subnet_unanswered",
            ArpSymptomKind::ReplyPathMismatch => "arp_reply_path_mismatch",
            ArpSymptomKind::DuplicateAddress => "arp_duplicate_address",
            ArpSymptomKind::CrossSubnet => "arp_cross_subnet",
        }
    }

    /// How bad a symptom of this kind is: cross-subnet unanswered and reply-path mismatch
    /// are errors, a duplicate address a warning, an answered cross-subnet ask context.
    pub fn severity(self) -> Severity {
        match self {
            ArpSymptomKind::CrossSubnetUnanswered | ArpSymptomKind::ReplyPathMismatch => {
                Severity::Error
            }
            ArpSymptomKind::DuplicateAddress => Severity::Warning,
            ArpSymptomKind::CrossSubnet => Severity::Info,
        }
    }
}

/// What became of an ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AskAnswer {
    /// No reply came.
    Never,
    /// A reply came, and no request after it went unanswered.
    Answered,
    /// Answered, then asked `pending` more times with no reply.
    AnsweredThenSilent {
        /// Requests after the last reply.
        pending: u64,
    },
}

/// A symptom's own facts, by kind.
#[derive(Clone, Debug, PartialEq)]
pub enum ArpProblem {
    /// `peer` asked for `addr` across subnets `requests` times.
    CrossSubnetUnanswered {
        /// Requests of the ask, retries included.
        requests: u64,
        /// What became of it.
        answer: AskAnswer,
    },
    /// `peer` asked for `addr` across subnets and was answered (context, not a problem).
    CrossSubnet {
        /// Requests of the ask, retries included.
        requests: u64,
    },
    /// `addr` took `came_in` (ARP requests answered, IP packets received) from `peer` on
    /// `other_iface` and sent nothing back there; its traffic to `peer` leaves `out_ifaces`
    /// (the first is the symptom's `iface`).
    ReplyPathMismatch {
        /// What came in on the other interface.
        came_in: Traffic,
        /// Names of the interfaces its traffic to the peer leaves by.
        out_ifaces: Vec<String>,
    },
    /// The MAC that claimed `addr` first, then the other.
    DuplicateAddress {
        /// First claimant, then the other.
        macs: [[u8; 6]; 2],
    },
}

/// ARP and plain IP packets counted for one direction of a pair on one interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// ARP packets.
    pub arp: u32,
    /// IPv4 packets other than ARP.
    pub ip: u32,
}

/// One observation behind an ARP symptom.
#[derive(Clone, Debug, PartialEq)]
pub struct ArpEvidence {
    pub t_ns: u64,
    pub iface: String,
    pub seen: ArpSeen,
}

/// What one observation showed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ArpSeen {
    /// `who-has target tell sender`, asked `requests` times, and what answered it.
    Asks {
        /// The address asked for.
        target: Ipv4Addr,
        /// The address asking.
        sender: Ipv4Addr,
        /// Requests, retries included.
        requests: u64,
        /// What became of the ask.
        answer: AskAnswer,
    },
    /// The first request of an ask (`who-has target tell sender`).
    FirstAsk {
        /// The address asked for.
        target: Ipv4Addr,
        /// The address asking.
        sender: Ipv4Addr,
    },
    /// The last request of an ask (`who-has target tell sender`).
    LastAsk {
        /// The address asked for.
        target: Ipv4Addr,
        /// The address asking.
        sender: Ipv4Addr,
    },
    /// `target is-at mac`, to `to`.
    Reply {
        /// The address answered for.
        target: Ipv4Addr,
        /// The MAC it is at.
        mac: [u8; 6],
        /// Who the reply went to.
        to: Ipv4Addr,
    },
    /// `addr` took `traffic` from `peer` here, and nothing from it to `peer` left here.
    CameIn {
        /// The address whose traffic this is.
        addr: Ipv4Addr,
        /// The other end.
        peer: Ipv4Addr,
        /// ARP and IP packets counted.
        traffic: Traffic,
    },
    /// `addr` sent `traffic` to `peer` here, and nothing from `peer` came in here.
    WentOut {
        /// The address whose traffic this is.
        addr: Ipv4Addr,
        /// The other end.
        peer: Ipv4Addr,
        /// ARP and IP packets counted.
        traffic: Traffic,
    },
    /// `ip is-at first`, then `ip is-at other`.
    Claimed {
        /// The claimed address.
        ip: Ipv4Addr,
        /// The first MAC that claimed it.
        first: [u8; 6],
        /// The second MAC that claimed it.
        other: [u8; 6],
    },
}

/// A capture-side ARP / reply-path symptom with its evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct ArpSymptom {
    /// The symptom's own facts, by kind.
    pub problem: ArpProblem,
    /// Where it shows (for a reply-path mismatch: where the traffic leaves).
    pub iface: String,
    /// For a reply-path mismatch: where the peer's requests came in.
    pub other_iface: Option<String>,
    /// The address asked for / the address whose replies go astray / the claimed one.
    pub addr: Ipv4Addr,
    /// The asking host / the peer (the address itself for a duplicate).
    pub peer: Ipv4Addr,
    /// When it first showed, capture time in ns.
    pub t_ns: u64,
    /// How many times it showed (ARP requests unanswered, requests of the ask, or 1 per
    /// pair or claim).
    pub count: u64,
    /// The observations behind it, in the order they support the claim.
    pub evidence: Vec<ArpEvidence>,
}

impl ArpSymptom {
    /// The symptom's kind, from its problem.
    pub fn kind(&self) -> ArpSymptomKind {
        match self.problem {
            ArpProblem::CrossSubnetUnanswered { .. } => ArpSymptomKind::CrossSubnetUnanswered,
            ArpProblem::CrossSubnet { .. } => ArpSymptomKind::CrossSubnet,
            ArpProblem::ReplyPathMismatch { .. } => ArpSymptomKind::ReplyPathMismatch,
            ArpProblem::DuplicateAddress { .. } => ArpSymptomKind::DuplicateAddress,
        }
    }

    /// How bad it is (its kind's severity).
    pub fn severity(&self) -> Severity {
        self.kind().severity()
    }

    /// The MACs involved (a duplicate address's two claimants), else none.
    pub fn macs(&self) -> &[[u8; 6]] {
        match &self.problem {
            ArpProblem::DuplicateAddress { macs } => macs,
            _ => &[],
        }
    }
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

/// The asks, tallied: unanswered ones per interface and the cross-subnet symptoms.
#[derive(Default)]
struct AskTally {
    unanswered_by_iface: FxHashMap<u32, (u64, Vec<UnansweredAsk>)>,
    cross_unanswered_by_iface: FxHashMap<u32, u64>,
    unanswered_total: u64,
    cross_unanswered: u64,
}

impl Net {
    /// Ends the run: PFC per sender, ARP per interface, and every symptom found.
    pub fn finish(self, log: &mut EventLog) -> NetSummary {
        let mut symptoms = Vec::new();
        let mut tally = self.tally_asks(&mut symptoms, log);
        let mismatches = self.reply_paths(&mut symptoms, log);
        self.duplicate_claims(&mut symptoms);
        symptoms.sort_by_key(|s| (std::cmp::Reverse(s.severity()), s.t_ns));
        let mut arp: Vec<ArpSummary> = self
            .ifaces
            .iter()
            .map(|(i, s)| {
                let (unanswered, asks) = tally.unanswered_by_iface.remove(i).unwrap_or_default();
                ArpSummary {
                    iface: *i,
                    name: self.name(*i),
                    requests: s.requests,
                    replies: s.replies,
                    gratuitous: s.gratuitous,
                    unanswered,
                    cross_subnet_requests: s.cross_subnet,
                    cross_subnet_unanswered: tally
                        .cross_unanswered_by_iface
                        .get(i)
                        .copied()
                        .unwrap_or(0),
                    unanswered_asks: asks,
                }
            })
            .collect();
        arp.sort_by_key(|a| a.iface);
        NetSummary {
            pfc: self.pfc_summaries(),
            arp,
            arp_unanswered: tally.unanswered_total,
            pfc_frames: self.pfc_frames,
            pfc_resume_frames: self.pfc_resume_frames,
            arp_cross_subnet_unanswered: tally.cross_unanswered,
            arp_reply_path_mismatch: mismatches,
            arp_duplicate_address: self.duplicates,
            arp_state_dropped: self.dropped,
            symptoms,
        }
    }

    /// PFC per source MAC, in MAC order, with the pause time of each priority's quanta.
    fn pfc_summaries(&self) -> Vec<PfcSummary> {
        let link_bps = self.link_bps;
        let mut pfc: Vec<PfcSummary> = self
            .pfc
            .iter()
            .map(|(mac, s)| PfcSummary {
                src_mac: *mac,
                frames: s.frames,
                per_priority: (0..8)
                    .filter(|&i| s.prio_frames[i] > 0)
                    .map(|i| PfcPrio {
                        priority: i as u8,
                        frames: s.prio_frames[i],
                        quanta: s.quanta[i],
                        pause_ns: (u128::from(s.quanta[i]) * 512 * 1_000_000_000
                            / u128::from(link_bps)) as u64,
                    })
                    .collect(),
            })
            .collect();
        // Byte order is the order of the printed (fixed-width, lower-case hex) MACs.
        pfc.sort_by_key(|a| a.src_mac);
        pfc
    }

    /// Every ask in time order: unanswered ones are counted (and logged) per interface;
    /// cross-subnet ones become symptoms, unanswered (error) or answered (info).
    fn tally_asks(&self, symptoms: &mut Vec<ArpSymptom>, log: &mut EventLog) -> AskTally {
        let mut tally = AskTally::default();
        let mut asks: Vec<_> = self.asks.iter().collect();
        asks.sort_by_key(|(k, a)| (a.first_ts, **k));
        let (mut n_unans, mut n_ans) = (0usize, 0usize);
        for (&(iface, sender, target), a) in asks {
            if !a.answered {
                tally.unanswered_total += a.requests;
                let e = tally.unanswered_by_iface.entry(iface).or_default();
                e.0 += a.requests;
                e.1.push(UnansweredAsk {
                    target,
                    sender,
                    requests: a.requests,
                });
                let mut ev = Event::link(a.first_ts, EventKind::ArpUnanswered);
                ev.arp = Some((sender, target));
                ev.iface = Some(iface);
                ev.count = a.requests;
                log.push(ev);
            }
            if !a.cross {
                continue;
            }
            let name = self.name(iface);
            let evidence = |t_ns, seen| ArpEvidence {
                t_ns,
                iface: name.clone(),
                seen,
            };
            if !a.answered || a.pending >= RETRIES {
                tally.cross_unanswered += 1;
                *tally.cross_unanswered_by_iface.entry(iface).or_default() += 1;
                n_unans += 1;
                if n_unans > MAX_SYMPTOMS {
                    continue;
                }
                let answer = if a.answered {
                    AskAnswer::AnsweredThenSilent { pending: a.pending }
                } else {
                    AskAnswer::Never
                };
                symptoms.push(ArpSymptom {
                    problem: ArpProblem::CrossSubnetUnanswered {
                        requests: a.requests,
                        answer,
                    },
                    iface: name.clone(),
                    other_iface: None,
                    addr: target,
                    peer: sender,
                    t_ns: a.first_ts,
                    count: if a.answered { a.pending } else { a.requests },
                    evidence: vec![
                        evidence(
                            a.first_ts,
                            ArpSeen::Asks {
                                target,
                                sender,
                                requests: a.requests,
                                answer,
                            },
                        ),
                        evidence(a.last_ts, ArpSeen::LastAsk { target, sender }),
                    ],
                });
            } else {
                n_ans += 1;
                if n_ans > MAX_SYMPTOMS {
                    continue;
                }
                symptoms.push(ArpSymptom {
                    problem: ArpProblem::CrossSubnet {
                        requests: a.requests,
                    },
                    iface: name.clone(),
                    other_iface: None,
                    addr: target,
                    peer: sender,
                    t_ns: a.first_ts,
                    count: a.requests,
                    evidence: vec![
                        evidence(a.first_ts, ArpSeen::FirstAsk { target, sender }),
                        evidence(
                            a.first_reply_ts,
                            ArpSeen::Reply {
                                target,
                                mac: a.reply_mac,
                                to: sender,
                            },
                        ),
                    ],
                });
            }
        }
        tally
    }

    /// Reply paths: the address took requests from the peer on one interface (and sent
    /// nothing back there) while its own traffic to the peer leaves another. Returns how
    /// many pairs show it; the first [`MAX_SYMPTOMS`] in time order become symptoms.
    fn reply_paths(&self, symptoms: &mut Vec<ArpSymptom>, log: &mut EventLog) -> u64 {
        let mut pairs: Vec<_> = self.pairs.iter().collect();
        pairs.sort_by_key(|(k, _)| **k);
        let mut found = Vec::new();
        for (&(x, peer), pp) in pairs {
            let used = || pp.slots.iter().filter(|s| s.used);
            let Some(i) = used()
                .filter(|s| s.inb.seen() && !s.out.seen())
                .min_by_key(|s| (s.inb.first_ts, s.iface))
            else {
                continue;
            };
            let js: Vec<PathSlot> = used()
                .filter(|s| {
                    s.iface != i.iface
                        && s.out.seen()
                        && !s.inb.seen()
                        && s.out.first_ts >= i.inb.first_ts
                })
                .copied()
                .collect();
            let Some(j) = js.first() else { continue };
            found.push((j.out.first_ts, x, peer, *i, js));
        }
        let mismatches = found.len() as u64;
        found.sort_by_key(|f| (f.0, f.1, f.2));
        for (ts, x, peer, i, js) in found.into_iter().take(MAX_SYMPTOMS) {
            let iname = self.name(i.iface);
            let came_in = Traffic {
                arp: i.inb.arp,
                ip: i.inb.ip,
            };
            let mut evidence = vec![ArpEvidence {
                t_ns: i.inb.first_ts,
                iface: iname.clone(),
                seen: ArpSeen::CameIn {
                    addr: x,
                    peer,
                    traffic: came_in,
                },
            }];
            let mut out_ifaces = Vec::with_capacity(js.len());
            for s in &js {
                let name = self.name(s.iface);
                evidence.push(ArpEvidence {
                    t_ns: s.out.first_ts,
                    iface: name.clone(),
                    seen: ArpSeen::WentOut {
                        addr: x,
                        peer,
                        traffic: Traffic {
                            arp: s.out.arp,
                            ip: s.out.ip,
                        },
                    },
                });
                out_ifaces.push(name);
            }
            let count = u64::from(js[0].out.arp + js[0].out.ip);
            let mut ev = Event::link(ts, EventKind::ArpReplyPathMismatch);
            ev.arp = Some((x, peer));
            ev.iface = Some(js[0].iface);
            ev.count = count;
            log.push(ev);
            symptoms.push(ArpSymptom {
                iface: out_ifaces[0].clone(),
                problem: ArpProblem::ReplyPathMismatch {
                    came_in,
                    out_ifaces,
                },
                other_iface: Some(iname),
                addr: x,
                peer,
                t_ns: ts,
                count,
                evidence,
            });
        }
        mismatches
    }

    /// Addresses claimed by a second MAC on one interface.
    fn duplicate_claims(&self, symptoms: &mut Vec<ArpSymptom>) {
        for c in &self.conflicts {
            let name = self.name(c.iface);
            symptoms.push(ArpSymptom {
                problem: ArpProblem::DuplicateAddress {
                    macs: [c.first_mac, c.other_mac],
                },
                iface: name.clone(),
                other_iface: None,
                addr: c.ip,
                peer: c.ip,
                t_ns: c.t_ns,
                count: 1,
                evidence: vec![ArpEvidence {
                    t_ns: c.t_ns,
                    iface: name,
                    seen: ArpSeen::Claimed {
                        ip: c.ip,
                        first: c.first_mac,
                        other: c.other_mac,
                    },
                }],
            });
        }
    }
}
