//! Pairing the two directions of an RC connection: a response finds the request stream
//! it answers — the one that sent exactly its PSN (one probe of the recent-PSN table),
//! else, rationed where a host pair has many QPs, the closest one below its next PSN.

use super::store::send_tag;
use super::Analyzer;
use dissectors::Psn;

/// PSN distance within which a response is taken to answer a request stream when the
/// two directions of a connection are paired.
pub(super) const PAIR_WINDOW: i32 = 1 << 16;

/// A host pair with at most this many flows the other way is searched whole.
const WALK_ALL: usize = 64;
/// Beyond that, how many of them one unanswered response looks at (the next ones in
/// turn at the next response).
const WALK_WINDOW: usize = 32;

impl Analyzer {
    /// Finds the request stream this response answers: a flow in the opposite
    /// direction whose recent requests cover PSN `p`. Pairs the two flows for good.
    /// True when a response with PSN `p` fits the recent requests of flow `req_slot`.
    pub(super) fn answers(&self, req_slot: u32, p: Psn) -> bool {
        self.flows
            .get(req_slot)
            .is_some_and(|qf| qf.req.started && (0..=PAIR_WINDOW).contains(&qf.req.next.diff(p)))
    }

    /// When request flow `req_slot` last sent PSN `p` (new or resent), at or before `now`. The
    /// ring is searched newest first: a response answers a recent request, so the search
    /// usually ends after a step or two.
    pub(super) fn sent_at(&self, req_slot: u32, p: Psn, now: u64) -> Option<u64> {
        let sent = &self.flows.get(req_slot)?.req.sent;
        sent.iter()
            .rev()
            .find(|s| s.psn == p && s.t_ns <= now)
            .map(|s| s.t_ns)
    }

    /// Pairs response flow `slot` with the request flow it answers: preferably one that
    /// sent exactly PSN `p`, most recently before `now` (a response follows its request
    /// within a round trip); else, unless `exact_only`, the one whose next PSN is
    /// closest above `p`.
    pub(super) fn pair(&mut self, slot: u32, p: Psn, now: u64, exact_only: bool) -> Option<u32> {
        let f = self.flows.get(slot)?;
        let current = f.peer;
        // One probe: the flow that sent exactly this PSN most recently, if unpaired.
        let found = self
            .flows
            .sender(send_tag(f.pair_hash[1], p))
            .filter(|&c| c != slot && Some(c) != current)
            .filter(|&c| {
                self.flows.get(c).is_some_and(|cf| {
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
        let cands = self.flows.pair(f.key.dst, f.key.src);
        if cands.is_empty() {
            return None;
        }
        // The slow search walks the other direction's flows: all of them while they are
        // few; where a host pair has many QPs, the next WALK_WINDOW of them at each try,
        // in turn, for an exact sender only, so the cost per packet does not grow with
        // them.
        let tries = f.pair_tries;
        let whole = cands.len() <= WALK_ALL;
        let (from, n) = if whole {
            (0, cands.len())
        } else {
            ((tries as usize * WALK_WINDOW) % cands.len(), WALK_WINDOW)
        };
        let mut exact: Option<(u64, u32)> = None;
        let mut near: Option<(i32, u32)> = None;
        for i in 0..n {
            let c = cands[(from + i) % cands.len()];
            if c == slot || Some(c) == current {
                continue;
            }
            let Some(cf) = self.flows.get(c) else {
                continue;
            };
            if !cf.req.started || cf.peer.is_some() {
                continue;
            }
            if let Some(t) = self.sent_at(c, p, now) {
                if exact.is_none_or(|(bt, _)| t > bt) {
                    exact = Some((t, c));
                }
            }
            let dist = cf.req.next.diff(p);
            if (0..=PAIR_WINDOW).contains(&dist) && near.is_none_or(|(d, _)| dist < d) {
                near = Some((dist, c));
            }
        }
        let c = match (exact, near) {
            (Some((_, c)), _) => c,
            // The nearest stream is a guess worth taking only among all of them: in a part
            // of a large host pair, an exact sender may be in another part.
            (None, Some((_, c))) if whole => c,
            _ => {
                if let Some(f) = self.flows.get_mut(slot) {
                    f.pair_tries = f.pair_tries.wrapping_add(1);
                }
                return None;
            }
        };
        Some(self.link(slot, c))
    }

    /// Pairs response flow `slot` with request flow `c` (undoing an earlier pairing).
    pub(super) fn link(&mut self, slot: u32, c: u32) -> u32 {
        let current = self.flows.get(slot).and_then(|f| f.peer);
        if let Some(old) = current {
            let (f, of) = self.flows.two(slot, old);
            of.peer = None;
            of.peer_id = None;
            let pair = (f.id.min(of.id), f.id.max(of.id));
            self.connections.retain(|&x| x != pair);
        }
        let (f, cf) = self.flows.two(slot, c);
        f.peer = Some(c);
        cf.peer = Some(slot);
        f.peer_id = Some(cf.id);
        cf.peer_id = Some(f.id);
        self.connections.push((cf.id.min(f.id), cf.id.max(f.id)));
        c
    }
}
