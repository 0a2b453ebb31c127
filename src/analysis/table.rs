//! The analyzer's side of the flow store (`super::store::FlowStore`): a packet's key
//! ([`Packed`]), its flow found or made, flows that end settled and summarised (which
//! end and when: `super::expire`).

use super::events::EventLog;
use super::flow::{self, Flow, FlowKey, Gap};
use super::gaps::unrecovered;
use super::packed::{addr_bits, ip_bits, Live, Packed};
use super::requester::end_episode;
use super::store::recent::pair_hash;
use super::Analyzer;
use dissectors::{Decoded, Roce};

/// The packed key's constructors and its cache way (the hash is in `packed.rs`).
impl Packed {
    pub(super) fn of(k: &FlowKey) -> Self {
        Packed {
            src: addr_bits(k.src),
            dst: addr_bits(k.dst),
            qp: k.qp.0,
            live: Live::Yes,
        }
    }

    /// The key of a decoded RoCE packet, straight from the IP header when there is one.
    #[inline]
    pub(super) fn from_decoded(d: &Decoded, qp: dissectors::Qpn) -> Option<Self> {
        if let Some(ip) = &d.ip {
            return Some(Packed {
                src: ip_bits(ip.src),
                dst: ip_bits(ip.dst),
                qp: qp.0,
                live: Live::Yes,
            });
        }
        let (src, dst) = d.endpoints()?;
        Some(Packed::of(&FlowKey { src, dst, qp }))
    }
}

impl Analyzer {
    /// Forgets the connections whose flows are no longer all known (retired without a
    /// kept summary, beyond `max_flow_summaries`) once such entries could make up most of
    /// the list, counting them in the totals: the list stays bounded by the live and kept
    /// flows, whatever the number of connections over time (a node agent runs for days).
    pub(super) fn prune_connections(&mut self) {
        let live = self.flows.live();
        if self.connections.len() <= 2 * (live + self.done.len()) + 1024 {
            return;
        }
        let known: rustc_hash::FxHashSet<u32> = self
            .flows
            .iter()
            .map(|f| f.id)
            .chain(self.done.iter().map(|s| s.id))
            .collect();
        let before = self.connections.len();
        self.connections
            .retain(|(a, b)| known.contains(a) && known.contains(b));
        // `sums.connections` holds the forgotten ones; the report adds the listed ones.
        self.sums.connections += (before - self.connections.len()) as u64;
    }

    /// Takes a flow out of the store, settles its open state and stores its summary.
    pub(super) fn retire(&mut self, slot: u32) {
        let Some(mut f) = self.flows.take(slot) else {
            return;
        };
        settle(&mut f, &mut self.log, self.capture.last_ts);
        super::keep(
            &mut self.done,
            &mut self.sums,
            self.cfg.max_flow_summaries,
            &f,
        );
    }

    /// At the end of the run: settles and summarises every flow, leaving the tables that
    /// find flows as they are (they go with the analyzer): no index, pair list or peer
    /// is updated for a flow that is about to go.
    ///
    /// The flows are settled where they are, not moved out, a chunk of slots at a time,
    /// each a few slots behind a cache hint for its lines (`super::store::hint::warm_whole`), and
    /// each chunk's memory goes back before the next one's summaries are made.
    pub(super) fn retire_all(&mut self) {
        // Room for the summaries kept, made once: growing the list by doubling copied
        // up to twice its size (15 MB at 16,384 flows) into freshly faulted pages.
        let room = self.cfg.max_flow_summaries.saturating_sub(self.done.len());
        self.done.reserve(self.live_flows().min(room));
        // Their pages mapped a little ahead of the summaries, by the helper thread that
        // made chunks ahead.
        let mut populate = super::store::populate::Ahead::new(self.flows.helper());
        for mut chunk in self.flows.drain_chunks() {
            populate.room_of(&mut self.done, 2 * super::store::slab::CHUNK);
            for i in 0..chunk.len() {
                super::store::slab::warm_ahead(&chunk[..], i);
                if let Some(next) = chunk.get(i + 1) {
                    super::store::hint::warm_owned(next);
                }
                if let Some(f) = chunk[i].as_mut() {
                    settle(f, &mut self.log, self.capture.last_ts);
                    super::keep(
                        &mut self.done,
                        &mut self.sums,
                        self.cfg.max_flow_summaries,
                        f,
                    );
                }
                // Dropped now, while its lines are loaded.
                chunk[i] = None;
            }
        }
    }

    /// The slot of the flow of a packet keyed `packed`: a live one, or a new one made
    /// for it; `None` when it has none and `max_flows` flows are live.
    #[inline]
    pub(super) fn flow_slot(
        &mut self,
        packed: Packed,
        hint: &super::Hint,
        d: &Decoded,
        r: &Roce,
        ts: u64,
    ) -> Option<u32> {
        if let Some(s) = self.flows.cached(packed) {
            return Some(s);
        }
        // Hashed only past the cache (a hint's hash when the frame was warmed).
        let hash = hint.hash_of(&packed);
        let s = match self.flows.find(packed, hash) {
            Some(s) => s,
            None if self.live_flows() >= self.cfg.max_flows => return None,
            None => self.new_flow(packed, hash, d, r, ts),
        };
        self.flows.cache(packed, s);
        Some(s)
    }

    /// A new flow for the packet `d`, keyed `packed` (filed under `hash`), in the store.
    #[cold]
    pub(super) fn new_flow(
        &mut self,
        packed: Packed,
        hash: u32,
        d: &Decoded,
        r: &Roce,
        ts: u64,
    ) -> u32 {
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
        self.flows.insert(f, hash, ts)
    }
}

/// Closes whatever is still open in a flow that ends (or idles out).
pub(super) fn settle(f: &mut Flow, log: &mut EventLog, end_ns: u64) {
    if let Some(s) = f.req.tentative.take() {
        super::requester::resolve(f, s, None, log);
    }
    end_episode(&mut f.req.episode, log);
    end_episode(&mut f.resp.episode, log);
    let gave_up = super::stop::settle_stop(f, end_ns);
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
    for g in &mut gaps[..n] {
        if gave_up {
            // The requester gave up on a QP that lost these: network loss it never
            // recovered, not packets the capture missed.
            (g.nak, g.acked) = (true, false);
        }
        unrecovered(f, g, log);
    }
    if f.ce_since_cnp > 0 {
        f.counters.ce_without_cnp += f.ce_since_cnp;
        f.ce_since_cnp = 0;
    }
}
