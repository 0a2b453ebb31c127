//! The sliding window the agent judges by: the node's totals sampled once a tick, so a
//! `--dump-on` rule (the `--fail-on` language) and the notable-event log see what
//! happened in the last N seconds, not since the agent started.
//!
//! Totals keys mean "how many in the window"; the `derived` keys are recomputed from
//! those counts over the window's span (`duration_s` is the span, `cnp_per_s` the CNPs in
//! the window per second of it, and so on), so every name `analyze --fail-on` takes means
//! the same here, windowed.

use crate::analysis::Totals;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The names of [`Totals`], in its serialization order.
pub fn totals_keys() -> Vec<String> {
    match serde_json::to_value(Totals::default()) {
        Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// The names of `derived`, recomputed over the window.
pub const DERIVED_KEYS: [&str; 7] = [
    "duration_s",
    "cnp_per_s",
    "ce_per_s",
    "nak_per_s",
    "naks",
    "retransmit_ratio",
    "ce_ratio",
];

/// `totals` as numbers in the order of [`totals_keys`].
pub fn values(totals: &Totals) -> Vec<f64> {
    match serde_json::to_value(totals) {
        Ok(serde_json::Value::Object(m)) => m.values().map(|v| v.as_f64().unwrap_or(0.0)).collect(),
        _ => Vec::new(),
    }
}

/// Samples of the node's totals over the last `span`.
pub struct Window {
    keys: Vec<String>,
    span: Duration,
    samples: VecDeque<(Instant, Vec<f64>)>,
}

impl Window {
    /// A window over the last `span` (at least one second).
    pub fn new(span: Duration) -> Self {
        Window {
            keys: totals_keys(),
            span: span.max(Duration::from_secs(1)),
            samples: VecDeque::new(),
        }
    }

    /// The window's length.
    pub fn span(&self) -> Duration {
        self.span
    }

    /// Whether `name` is a key rules may use.
    pub fn knows(&self, name: &str) -> bool {
        self.keys.iter().any(|k| k == name) || DERIVED_KEYS.contains(&name)
    }

    /// Adds the totals as they stand at `now` (values in [`totals_keys`] order) and drops
    /// the samples the window no longer needs (the newest one older than the span stays:
    /// it is the window's start).
    pub fn push(&mut self, now: Instant, vals: Vec<f64>) {
        self.samples.push_back((now, vals));
        while self.samples.len() > 2 && now.duration_since(self.samples[1].0) >= self.span {
            self.samples.pop_front();
        }
    }

    /// The value of `name` over the window: the change of a totals key between the
    /// window's first and last sample, or a derived key recomputed from those changes.
    /// `None` for an unknown name.
    pub fn value(&self, name: &str) -> Option<f64> {
        let delta = |key: &str| -> f64 {
            let Some(i) = self.keys.iter().position(|k| k == key) else {
                return 0.0;
            };
            match (self.samples.front(), self.samples.back()) {
                (Some((_, a)), Some((_, b))) => {
                    (b.get(i).copied().unwrap_or(0.0) - a.get(i).copied().unwrap_or(0.0)).max(0.0)
                }
                _ => 0.0,
            }
        };
        if self.keys.iter().any(|k| k == name) {
            return Some(delta(name));
        }
        let secs = match (self.samples.front(), self.samples.back()) {
            (Some((a, _)), Some((b, _))) => b.duration_since(*a).as_secs_f64(),
            _ => 0.0,
        };
        let per_s = |n: f64| if secs > 0.0 { n / secs } else { 0.0 };
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let naks = [
            "nak_psn_seq",
            "nak_invalid_request",
            "nak_remote_access",
            "nak_remote_operational",
            "nak_invalid_rd_request",
            "nak_reserved",
        ]
        .iter()
        .map(|k| delta(k))
        .sum::<f64>();
        Some(match name {
            "duration_s" => secs,
            "cnp_per_s" => per_s(delta("cnp")),
            "ce_per_s" => per_s(delta("ce_marked")),
            "nak_per_s" => per_s(naks),
            "naks" => naks,
            "retransmit_ratio" => ratio(delta("retransmitted_packets"), delta("roce_packets")),
            "ce_ratio" => ratio(delta("ce_marked"), delta("roce_packets")),
            _ => return None,
        })
    }
}

/// Sums the totals of several sources (values in [`totals_keys`] order).
pub fn sum(all: impl IntoIterator<Item = Vec<f64>>) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for v in all {
        if out.len() < v.len() {
            out.resize(v.len(), 0.0);
        }
        for (o, x) in out.iter_mut().zip(v) {
            *o += x;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(naks: u64, cnp: u64, packets: u64) -> Vec<f64> {
        values(&Totals {
            nak_psn_seq: naks,
            cnp,
            roce_packets: packets,
            ..Totals::default()
        })
    }

    #[test]
    fn counts_only_what_happened_inside_the_window() {
        let t0 = Instant::now();
        let mut w = Window::new(Duration::from_secs(10));
        w.push(t0, totals(5, 0, 100));
        w.push(t0 + Duration::from_secs(5), totals(8, 10, 200));
        assert_eq!(w.value("nak_psn_seq"), Some(3.0));
        assert_eq!(w.value("naks"), Some(3.0));
        assert_eq!(w.value("cnp_per_s"), Some(2.0));
        assert_eq!(w.value("duration_s"), Some(5.0));
        // 12 s later the first two samples are out: only the last change counts.
        w.push(t0 + Duration::from_secs(17), totals(8, 10, 300));
        w.push(t0 + Duration::from_secs(18), totals(9, 10, 400));
        assert_eq!(w.value("nak_psn_seq"), Some(1.0));
        assert_eq!(w.value("cnp"), Some(0.0));
        assert!(w.knows("arp_cross_subnet_unanswered") && w.knows("ce_ratio"));
        assert!(!w.knows("nak_psn_sequence") && w.value("bogus").is_none());
    }

    #[test]
    fn sums_sources_key_by_key() {
        let s = sum([totals(1, 2, 3), totals(10, 20, 30)]);
        let keys = totals_keys();
        let at = |k: &str| s[keys.iter().position(|x| x == k).unwrap()];
        assert_eq!(
            (at("nak_psn_seq"), at("cnp"), at("roce_packets")),
            (11.0, 22.0, 33.0)
        );
    }
}
