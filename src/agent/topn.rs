//! Which connections get their own Prometheus series: at most N flows per source, chosen
//! by trouble (NAKs, resends, gaps, CE marks, CNPs), the rest summed into one `other`
//! series — so a node with thousands of QPs exports a bounded number of series.
//!
//! Every series must stay a counter (never decreasing) while flows enter and leave the
//! top N. So a flow's series counts from the update before it was chosen (what `other`
//! showed of it until then stays there; a flow new since then has all of its counts in its
//! own series), a chosen flow keeps its place until it is gone or has had no new trouble
//! for [`STALE`], and `other` is the node's total minus the chosen flows' counts since
//! they were chosen: when a flow leaves, what it counted moves to `other`, which only
//! grows.

use crate::analysis::{FlowSummary, Totals};
use std::time::{Duration, Instant};

/// A chosen flow with no new trouble for this long gives its place to a flow in trouble.
pub const STALE: Duration = Duration::from_secs(300);

/// The five per-connection counters, in this order: NAKs (every code and RNR), resent
/// packets, PSN gap events, CE-marked packets, CNPs its sender received.
pub type Counts = [u64; 5];

/// The counters of a flow summary.
pub fn counts(f: &FlowSummary) -> Counts {
    let c = &f.counters;
    [
        c.naks() + c.rnr_nak,
        c.retransmitted_packets,
        c.psn_gap_events,
        f.ecn_ce,
        c.cnp_received,
    ]
}

/// The same counters over the whole source.
pub fn totals(t: &Totals) -> Counts {
    [
        t.naks() + t.rnr_nak,
        t.retransmitted_packets,
        t.psn_gap_events,
        t.ce_marked,
        t.cnp,
    ]
}

fn trouble(c: &Counts) -> u64 {
    c.iter().sum()
}

/// One chosen flow's series.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Series {
    /// Source address.
    pub src: String,
    /// Destination address.
    pub dst: String,
    /// DestQP, `0x…`.
    pub qp: String,
    /// Counts since the flow was chosen.
    pub counts: Counts,
}

struct Chosen {
    id: u32,
    series: Series,
    base: Counts,
    last: Counts,
    changed: Instant,
}

/// The choice for one source.
pub struct TopN {
    n: usize,
    chosen: Vec<Chosen>,
    /// Every flow's counts at the previous update: what `other` already counted of it.
    prev: rustc_hash::FxHashMap<u32, Counts>,
}

impl TopN {
    /// At most `n` flows get their own series.
    pub fn new(n: usize) -> Self {
        TopN {
            n,
            chosen: Vec::new(),
            prev: Default::default(),
        }
    }

    /// Updates the choice from the flows as they stand (`flows`: live and kept summaries,
    /// sorted by id; `total`: the source's [`totals`]); returns the chosen series and
    /// `other`.
    pub fn update(
        &mut self,
        now: Instant,
        flows: &[FlowSummary],
        total: Counts,
    ) -> (Vec<Series>, Counts) {
        let items: Vec<(u32, Counts)> = flows.iter().map(|f| (f.id, counts(f))).collect();
        let label = |id: u32| {
            let f = flows
                .binary_search_by_key(&id, |f| f.id)
                .ok()
                .map(|i| &flows[i]);
            f.map_or_else(Series::default, |f| Series {
                src: f.src.to_string(),
                dst: f.dst.to_string(),
                qp: f.qp.to_string(),
                counts: [0; 5],
            })
        };
        self.choose(now, &items, &label, total)
    }

    /// [`TopN::update`] on (id, counts) sorted by id, `label` naming a flow's series.
    fn choose(
        &mut self,
        now: Instant,
        items: &[(u32, Counts)],
        label: &dyn Fn(u32) -> Series,
        total: Counts,
    ) -> (Vec<Series>, Counts) {
        let find = |id: u32| {
            items
                .binary_search_by_key(&id, |x| x.0)
                .ok()
                .map(|i| items[i].1)
        };
        // Refresh the chosen; forget those gone from the report.
        self.chosen.retain_mut(|c| match find(c.id) {
            Some(now_counts) => {
                if now_counts != c.last {
                    c.last = now_counts;
                    c.changed = now;
                }
                true
            }
            None => false,
        });
        let mut candidates: Vec<(u32, Counts)> = items
            .iter()
            .filter(|(id, c)| trouble(c) > 0 && !self.chosen.iter().any(|x| x.id == *id))
            .copied()
            .collect();
        candidates.sort_by_key(|(id, c)| (std::cmp::Reverse(trouble(c)), *id));
        let mut next = candidates.into_iter();
        let prev = &self.prev;
        let mk = |(id, c): (u32, Counts)| Chosen {
            id,
            series: label(id),
            base: prev.get(&id).copied().unwrap_or_default(),
            last: c,
            changed: now,
        };
        // Stale places go to flows in trouble, when there are any.
        for c in &mut self.chosen {
            if now.duration_since(c.changed) < STALE {
                continue;
            }
            let Some(x) = next.next() else { break };
            *c = mk(x);
        }
        while self.chosen.len() < self.n {
            let Some(x) = next.next() else { break };
            self.chosen.push(mk(x));
        }
        self.prev.clear();
        self.prev.extend(items.iter().copied());
        let mut other = total;
        let series = self
            .chosen
            .iter()
            .map(|c| {
                let mut s = c.series.clone();
                for (k, o) in other.iter_mut().enumerate() {
                    s.counts[k] = c.last[k].saturating_sub(c.base[k]);
                    *o = o.saturating_sub(s.counts[k]);
                }
                s
            })
            .collect();
        (series, other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(id: u32) -> Series {
        Series {
            src: format!("f{id}"),
            ..Series::default()
        }
    }

    fn naks(n: u64) -> Counts {
        [n, 0, 0, 0, 0]
    }

    /// Checks the series of one update: every value at least the last one of the same
    /// series, and the sum equal to the total.
    /// `retired`: the counts of flows gone from the report (still in the total).
    fn step(
        t: &mut TopN,
        now: Instant,
        items: &[(u32, Counts)],
        retired: u64,
        seen: &mut Vec<(String, u64)>,
    ) -> Vec<(String, u64)> {
        let total = items.iter().map(|x| x.1[0]).sum::<u64>() + retired;
        let (series, other) = t.choose(now, items, &label, naks(total));
        let mut out: Vec<(String, u64)> = series
            .iter()
            .map(|s| (s.src.clone(), s.counts[0]))
            .collect();
        out.push(("other".into(), other[0]));
        assert_eq!(
            out.iter().map(|x| x.1).sum::<u64>(),
            total,
            "the series add up to the total"
        );
        for (name, v) in &out {
            if let Some((_, old)) = seen.iter().find(|(n, _)| n == name) {
                assert!(v >= old, "{name} went down: {old} -> {v}");
            }
        }
        seen.retain(|(n, _)| out.iter().any(|(m, _)| m == n));
        for (name, v) in &out {
            match seen.iter_mut().find(|(n, _)| n == name) {
                Some(e) => e.1 = *v,
                None => seen.push((name.clone(), *v)),
            }
        }
        out
    }

    #[test]
    fn series_only_grow_while_flows_come_and_go() {
        let t0 = Instant::now();
        let mut t = TopN::new(2);
        let mut seen = Vec::new();
        // Three flows in trouble: the two worst get series with all their counts (new).
        let out = step(
            &mut t,
            t0,
            &[(1, naks(5)), (2, naks(50)), (3, naks(20))],
            100,
            &mut seen,
        );
        assert_eq!(
            out,
            vec![("f2".into(), 50), ("f3".into(), 20), ("other".into(), 105)]
        );
        // Flow 1 overtakes: it has no place (none is stale), its growth goes to other.
        let out = step(
            &mut t,
            t0 + Duration::from_secs(1),
            &[(1, naks(500)), (2, naks(51)), (3, naks(20))],
            100,
            &mut seen,
        );
        assert_eq!(out[2], ("other".into(), 600));
        // Flow 3 goes quiet for STALE: flow 1 takes its place, counting from the last update.
        let later = t0 + STALE + Duration::from_secs(2);
        let out = step(
            &mut t,
            later,
            &[(1, naks(510)), (2, naks(52)), (3, naks(20))],
            100,
            &mut seen,
        );
        assert!(out.contains(&("f1".into(), 10)), "{out:?}");
        assert!(!out.iter().any(|(n, _)| n == "f3"));
        // Flow 2 is retired and forgotten: its series goes, other takes it over.
        let out = step(
            &mut t,
            later + Duration::from_secs(1),
            &[(1, naks(511))],
            172,
            &mut seen,
        );
        assert_eq!(out, vec![("f1".into(), 11), ("other".into(), 672)]);
        // A new flow takes the free place with all its counts.
        let out = step(
            &mut t,
            later + Duration::from_secs(2),
            &[(1, naks(511)), (9, naks(7))],
            172,
            &mut seen,
        );
        assert!(out.contains(&("f9".into(), 7)), "{out:?}");
    }

    #[test]
    fn no_trouble_no_series() {
        let mut t = TopN::new(5);
        let (s, other) = t.choose(
            Instant::now(),
            &[(1, [0; 5]), (2, [0; 5])],
            &label,
            [3, 0, 0, 0, 0],
        );
        assert!(s.is_empty());
        assert_eq!(other, [3, 0, 0, 0, 0]);
    }
}
