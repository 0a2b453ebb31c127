//! The end of a run: what is still pending judged, each direction's segments and
//! delays gathered over the taps that saw it, and the totals.

use super::*;

impl Matcher {
    /// Judges what is still pending and returns the report.
    pub fn finish(mut self, offsets: &[i64]) -> Report {
        self.expire(i64::MAX);
        let mut keys: Vec<DirKey> = self.dirs.keys().copied().collect();
        keys.sort();
        let mut totals = Totals::default();
        let mut queueing: Option<i64> = None;
        let mut directions = Vec::new();
        for (i, o) in offsets.iter().enumerate().take(self.n) {
            self.taps[i].offset_ns = *o;
        }
        for k in keys {
            let full = self.path_of(&k);
            let d = &self.dirs[&k];
            for t in 0..self.n {
                self.taps[t].missed += d.missed[t];
                if d.matched == 0 {
                    self.taps[t].alone += d.alone[t];
                }
            }
            let inc: Vec<usize> = (0..self.n)
                .filter(|&p| d.seen_by & (1 << full[p]) != 0)
                .collect();
            let mut segments = vec![d.segments[0].clone()];
            let mut delays = Vec::new();
            for w in inc.windows(2) {
                // Losses placed at an excluded position belong to the next included one.
                let mut s = Segment::default();
                for p in w[0] + 1..=w[1] {
                    merge(&mut s, &d.segments[p]);
                }
                segments.push(s);
                delays.push(delay(&d.delays[w[1] - 1], self.synced));
            }
            segments.push(d.segments[self.n].clone());
            if d.matched == 0 {
                segments.fill(Segment::default());
            } else {
                let m = segments.len() - 1;
                totals.lost_before_first_tap += segments[0].lost;
                totals.lost_after_last_tap += segments[m].lost;
                totals.lost_between_taps += segments[1..m].iter().map(|s| s.lost).sum::<u64>();
                if let Some(first) = inc.windows(2).next() {
                    let x = &d.delays[first[1] - 1];
                    if let (Some(m), Some(min)) = (x.quantile(0.5), x.min()) {
                        queueing = queueing.max(Some(m.saturating_sub(min)));
                    }
                }
            }
            directions.push(Direction {
                key: k,
                path: inc.iter().map(|&p| full[p]).collect(),
                packets: d.packets,
                matched: d.matched,
                segments,
                delays,
            });
        }
        totals.queueing_delay_median_s = queueing.map(secs);
        Report {
            clocks_synced: self.synced,
            taps: self.taps,
            directions,
            totals,
        }
    }
}

fn secs(ns: i64) -> f64 {
    ns as f64 / 1e9
}

fn delay(s: &Samples, synced: bool) -> Option<Delay> {
    let min = s.min()?;
    let median = s.quantile(0.5)?;
    let p99 = s.quantile(0.99)?;
    let max = s.max()?;
    Some(Delay {
        count: s.count(),
        min_s: synced.then(|| secs(min)),
        median_s: synced.then(|| secs(median)),
        p99_s: synced.then(|| secs(p99)),
        median_above_min_s: secs(median.saturating_sub(min)),
        p99_above_min_s: secs(p99.saturating_sub(min)),
        max_above_min_s: secs(max.saturating_sub(min)),
    })
}

fn merge(into: &mut Segment, s: &Segment) {
    into.lost += s.lost;
    for &p in &s.psns {
        if into.psns.len() < LISTED_PSNS {
            into.psns.push(p);
        }
    }
    into.first_ns = match (into.first_ns, s.first_ns) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    into.last_ns = into.last_ns.max(s.last_ns);
    into.naks += s.naks;
    into.timer_retries += s.timer_retries;
}
