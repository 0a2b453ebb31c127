//! Whole-capture latency distributions in fixed buckets, for exporters that need
//! cumulative bucket counts (the agent's Prometheus histograms). The per-flow log
//! histograms give quantiles per flow; these add every flow's samples into one fixed
//! array per kind, so they cost the same whatever the number of flows or samples.

/// Upper bounds of the buckets, in nanoseconds (1 µs to 1 s in 1-2-5 steps); samples above
/// the last bound land in the overflow bucket (`+Inf`).
pub const BOUNDS_NS: [u64; 19] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
];

/// Samples per bucket (not cumulative): `counts[i]` holds samples `<= BOUNDS_NS[i]` and
/// above the previous bound; the last entry holds the samples above every bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Buckets {
    /// Samples per bucket, the overflow bucket last.
    pub counts: [u64; BOUNDS_NS.len() + 1],
    /// Sum of every sample, ns (saturating).
    pub sum_ns: u64,
    /// Samples recorded.
    pub count: u64,
}

impl Buckets {
    /// Adds one sample of `ns` nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let i = BOUNDS_NS.partition_point(|&b| b < ns);
        self.counts[i] += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.count += 1;
    }

    /// Adds the samples of another distribution of the same bounds.
    pub fn absorb(&mut self, o: &Buckets) {
        for (a, b) in self.counts.iter_mut().zip(o.counts) {
            *a += b;
        }
        self.sum_ns = self.sum_ns.saturating_add(o.sum_ns);
        self.count += o.count;
    }

    /// Cumulative counts, one per bound and then `+Inf` (= `count`), as Prometheus
    /// histograms expose them.
    pub fn cumulative(&self) -> [u64; BOUNDS_NS.len() + 1] {
        let mut out = self.counts;
        for i in 1..out.len() {
            out[i] += out[i - 1];
        }
        out
    }
}

/// The latency distributions of the whole capture.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencyBuckets {
    /// Request with AckReq → the ACK covering it, over every flow.
    pub ack: Buckets,
    /// First CE mark since the last CNP → the CNP answering it, over every flow.
    pub ce_to_cnp: Buckets,
}

impl LatencyBuckets {
    /// Adds the samples of another part of the same traffic (`Totals::absorb`).
    pub fn absorb(&mut self, o: &LatencyBuckets) {
        self.ack.absorb(&o.ack);
        self.ce_to_cnp.absorb(&o.ce_to_cnp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_land_in_the_bucket_of_their_upper_bound() {
        let mut b = Buckets::default();
        for ns in [
            0,
            1_000,
            1_001,
            999_999_999,
            1_000_000_000,
            1_000_000_001,
            u64::MAX,
        ] {
            b.record(ns);
        }
        assert_eq!(b.counts[0], 2); // 0 and exactly 1 µs
        assert_eq!(b.counts[1], 1); // 1 µs + 1 ns
        assert_eq!(b.counts[18], 2); // up to and including 1 s
        assert_eq!(b.counts[19], 2); // above 1 s
        assert_eq!(b.count, 7);
        assert_eq!(b.sum_ns, u64::MAX);
        let c = b.cumulative();
        assert_eq!(c[0], 2);
        assert_eq!(c[19], 7);
        assert!(c.windows(2).all(|w| w[0] <= w[1]));
    }
}
