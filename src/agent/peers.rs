//! The per-peer counters behind `rocetap_peer_*_total`: per (local address, peer
//! address) and direction, what the flows between them counted — packets, NAKs, PSN gap
//! events, resent packets, CNPs, requesters that gave up — for the fleet's loss matrix.
//!
//! A flow is oriented once, when first seen: one that carries requests is `sent` from
//! its source (`local`, the requester) to its destination (`peer`); any other (the
//! responses, ACKs and NAKs of the other direction, CNPs) is `received` by its
//! destination from its source. So `local` is the requester of the connection, on every
//! node that sees it, and both agents of a pair export the same pair.
//!
//! The counters only grow: each update adds what every flow counted since the previous
//! one (a flow's counts at the previous update are kept while the analyzer reports the
//! flow, so memory follows the live flows). Pairs are bounded: at most `max_peers` pairs
//! get series of their own; a flow of any other pair counts in `peer="other"` of its
//! local address (if that address has a pair of its own, else of `local="other"`), and
//! is counted in `aggregated_flows`.

use super::topology::Topology;
use crate::analysis::FlowSummary;
use rustc_hash::FxHashMap;

/// The counters of a direction, in this order: packets, NAKs (every code, RNR NAKs
/// included), PSN gap events, resent packets, CNPs, requesters that gave up.
pub type PeerCounts = [u64; 6];

/// The counts of one flow.
fn counts(f: &FlowSummary) -> PeerCounts {
    let c = &f.counters;
    [
        f.packets,
        c.naks() + c.rnr_nak,
        c.psn_gap_events,
        c.retransmitted_packets,
        c.cnp_sent,
        c.retry_exhausted,
    ]
}

/// Bytes of one pair (its series, ten short strings, its index entry), estimated.
const PAIR_COST: u64 = 640;
/// Bytes of one followed flow's last counts and its map entry, estimated.
const FLOW_SEEN_COST: u64 = 96;

/// One pair's series.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerSeries {
    /// The local (requester's) address, or `other`.
    pub local: String,
    /// The peer's address, or `other`.
    pub peer: String,
    /// Topology names of `local` (node, tor, rail, switch), empty when unknown.
    pub local_names: [String; 4],
    /// Topology names of `peer`.
    pub peer_names: [String; 4],
    /// What `local` sent to `peer`.
    pub sent: PeerCounts,
    /// What `local` received from `peer`.
    pub received: PeerCounts,
}

/// What an update needs of a flow.
struct Item {
    id: u32,
    src: dissectors::Addr,
    dst: dissectors::Addr,
    requests: bool,
    counts: PeerCounts,
}

struct Seen {
    pair: usize,
    sent: bool,
    last: PeerCounts,
    tick: u64,
}

/// The per-peer counters of one source.
pub struct Peers {
    max: usize,
    pairs: Vec<PeerSeries>,
    index: FxHashMap<(String, String), usize>,
    flows: FxHashMap<u32, Seen>,
    tick: u64,
    /// Pairs with a series of their own (not `other`).
    named: usize,
    /// The local addresses of those pairs.
    locals: rustc_hash::FxHashSet<String>,
    /// Flows counted in a `peer="other"` series because `max` pairs had series.
    pub aggregated_flows: u64,
}

impl Peers {
    /// At most `max` pairs get series of their own.
    pub fn new(max: usize) -> Self {
        Peers {
            max,
            pairs: Vec::new(),
            index: FxHashMap::default(),
            flows: FxHashMap::default(),
            tick: 0,
            named: 0,
            locals: Default::default(),
            aggregated_flows: 0,
        }
    }

    /// The pair's slot, created (with `topo`'s names) if there is room or it is an
    /// `other` pair (at most one per local address with a pair, and one more).
    fn slot(&mut self, local: String, peer: String, topo: Option<&Topology>) -> usize {
        if let Some(&i) = self.index.get(&(local.clone(), peer.clone())) {
            return i;
        }
        let (local, peer) = if self.named < self.max {
            self.named += 1;
            self.locals.insert(local.clone());
            (local, peer)
        } else {
            self.aggregated_flows += 1;
            let known = self
                .pairs
                .iter()
                .any(|p| p.local == local && p.peer != "other");
            let local = if known { local } else { "other".to_string() };
            if let Some(&i) = self.index.get(&(local.clone(), "other".to_string())) {
                return i;
            }
            (local, "other".to_string())
        };
        let names = |a: &str| topo.map(|t| t.names(a)).unwrap_or_default();
        self.pairs.push(PeerSeries {
            local_names: names(&local),
            peer_names: names(&peer),
            local: local.clone(),
            peer: peer.clone(),
            ..PeerSeries::default()
        });
        self.index.insert((local, peer), self.pairs.len() - 1);
        self.pairs.len() - 1
    }

    /// Adds what `flows` (the analyzer's live flows and kept summaries) counted since the
    /// last update.
    pub fn update(&mut self, flows: &[FlowSummary], topo: Option<&Topology>) {
        let items = flows.iter().map(|f| Item {
            id: f.id,
            src: f.src,
            dst: f.dst,
            requests: f.first_request_psn.is_some(),
            counts: counts(f),
        });
        self.add(items, topo);
    }

    /// [`Peers::update`] on the flows' items.
    fn add(&mut self, flows: impl Iterator<Item = Item>, topo: Option<&Topology>) {
        self.tick += 1;
        for f in flows {
            let now = f.counts;
            let (pair, sent, last) = match self.flows.get(&f.id) {
                Some(s) => (s.pair, s.sent, s.last),
                None => {
                    let sent = f.requests;
                    let (l, p) = if sent { (f.src, f.dst) } else { (f.dst, f.src) };
                    (self.slot(l.to_string(), p.to_string(), topo), sent, [0; 6])
                }
            };
            let s = &mut self.pairs[pair];
            let dir = if sent { &mut s.sent } else { &mut s.received };
            for (k, d) in dir.iter_mut().enumerate() {
                *d += now[k].saturating_sub(last[k]);
            }
            self.flows.insert(
                f.id,
                Seen {
                    pair,
                    sent,
                    last: now,
                    tick: self.tick,
                },
            );
        }
        let t = self.tick;
        self.flows.retain(|_, s| s.tick == t);
    }

    /// What it holds, in bytes (estimated): its pairs (their strings and map entry) and
    /// the counts of the flows it follows; added to the analyzers' part of the budget.
    pub fn bytes(&self) -> u64 {
        self.pairs.len() as u64 * PAIR_COST + self.flows.len() as u64 * FLOW_SEEN_COST
    }

    /// The series, in the order the pairs were first seen.
    pub fn series(&self) -> &[PeerSeries] {
        &self.pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dissectors::Addr;

    fn flow(id: u32, src: [u8; 4], dst: [u8; 4], req: bool, packets: u64, gaps: u64) -> Item {
        Item {
            id,
            src: Addr::Ip(src.into()),
            dst: Addr::Ip(dst.into()),
            requests: req,
            counts: [packets, 0, gaps, 0, 0, 0],
        }
    }

    #[test]
    fn requester_is_local_and_counts_only_grow() {
        let mut p = Peers::new(8);
        let a = [198, 51, 100, 1];
        let b = [198, 51, 100, 2];
        p.add(
            [flow(1, a, b, true, 10, 1), flow(2, b, a, false, 5, 0)].into_iter(),
            None,
        );
        p.add([flow(1, a, b, true, 15, 2)].into_iter(), None);
        // flow 2 forgotten, then flow 1 too: nothing is taken back
        p.add(std::iter::empty(), None);
        let s = p.series();
        assert_eq!(s.len(), 1);
        assert_eq!(
            (s[0].local.as_str(), s[0].peer.as_str()),
            ("198.51.100.1", "198.51.100.2")
        );
        assert_eq!(s[0].sent[0], 15);
        assert_eq!(s[0].sent[2], 2);
        assert_eq!(s[0].received[0], 5);
    }

    #[test]
    fn peers_beyond_the_bound_go_to_other_and_are_counted() {
        let mut p = Peers::new(2);
        let a = [198, 51, 100, 1];
        let flows = (0..50u8).map(|i| flow(u32::from(i), a, [203, 0, 113, i], true, 1, 0));
        p.add(flows, None);
        // a stranger requester beyond the bound goes to local="other"
        p.add(
            [flow(99, [192, 0, 2, 9], [192, 0, 2, 10], true, 3, 0)].into_iter(),
            None,
        );
        let s = p.series();
        assert_eq!(s.len(), 4, "{s:?}");
        let other = s
            .iter()
            .find(|x| x.local == "198.51.100.1" && x.peer == "other")
            .unwrap();
        assert_eq!(other.sent[0], 48);
        assert!(s.iter().any(|x| x.local == "other" && x.sent[0] == 3));
        assert_eq!(p.aggregated_flows, 49);
        let total: u64 = s.iter().map(|x| x.sent[0]).sum();
        assert_eq!(total, 53);
    }
}
