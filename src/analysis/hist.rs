//! A fixed-size log-bucket histogram of nanosecond durations: 4 sub-buckets per power of
//! two, so any quantile it reports is within about 19 % of the true sample (and always
//! inside the exact min/max it also keeps). Its buckets are allocated with the first
//! sample (most flows never see most kinds of latency), a window of 32 around it that
//! widens toward a sample outside it, at most to every bucket (768 bytes): its size is
//! bounded whatever the number of samples, which is what lets every flow carry several.

/// Sub-buckets per octave (2 bits of mantissa).
const SUB: u32 = 4;
/// Octaves covered: up to 2^48 ns (about 78 hours); longer samples land in the last bucket.
const OCTAVES: u32 = 48;
const BUCKETS: usize = (OCTAVES * SUB) as usize;

/// Buckets of the first window: 8 octaves (a 256x range) around the first sample, which
/// is where most of a flow's latencies fall. A sample outside it widens the window to
/// the samples' range and [`ROOM`] beyond, in steps of 16 buckets, at most to every
/// bucket. Each widening follows a sample outside the window, which widens the samples'
/// range, so it happens at most once per bucket that range gains, on the cold path.
const WINDOW: usize = 32;
/// Buckets (two octaves) a widened window keeps beyond its samples, on the side it grew.
const ROOM: usize = 8;

#[derive(Clone, Debug)]
pub struct LogHist {
    /// Counts of buckets `base..base + counts.len()`.
    counts: Option<Box<[u32]>>,
    base: usize,
    n: u64,
    min: u64,
    max: u64,
    sum: u128,
}

impl Default for LogHist {
    fn default() -> Self {
        LogHist {
            counts: None,
            base: 0,
            n: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }
}

fn bucket(v: u64) -> usize {
    if v < u64::from(SUB) {
        return v as usize;
    }
    let octave = v.ilog2(); // >= 2
    let mantissa = (v >> (octave - 2)) & u64::from(SUB - 1);
    let b = (octave - 1) * SUB + mantissa as u32;
    (b as usize).min(BUCKETS - 1)
}

/// Lowest value that falls in bucket `b`.
fn bucket_low(b: usize) -> u64 {
    let b = b as u32;
    if b < SUB {
        return u64::from(b);
    }
    let octave = b / SUB + 1;
    let mantissa = u64::from(b % SUB);
    (1u64 << octave) | (mantissa << (octave - 2))
}

impl LogHist {
    #[inline]
    pub fn record(&mut self, v: u64) {
        let b = bucket(v);
        match self.counts.as_mut() {
            Some(c) if b.wrapping_sub(self.base) < c.len() => {
                let i = b - self.base;
                c[i] = c[i].saturating_add(1);
            }
            _ => self.record_slow(b),
        }
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += u128::from(v);
    }

    /// The first sample (allocates the window) or one outside the window: the window
    /// widens to the samples' range and [`ROOM`] beyond on the sample's side, keeping its
    /// counts.
    #[cold]
    fn record_slow(&mut self, b: usize) {
        let counts = match self.counts.as_mut() {
            Some(c) => {
                // The samples so far lie between the buckets of min and max: the rest of
                // the window is empty and need not come along.
                let (lo, hi) = (bucket(self.min).min(b), bucket(self.max).max(b));
                let len = (hi - lo + 1 + ROOM).next_multiple_of(16).min(BUCKETS);
                // Room on the side the sample came from: later samples may go further.
                let base = if b < self.base {
                    (hi + 1).saturating_sub(len)
                } else {
                    lo.min(BUCKETS - len)
                };
                let mut wider = vec![0u32; len].into_boxed_slice();
                let (from, to) = (self.base.max(base), (self.base + c.len()).min(base + len));
                wider[from - base..to - base].copy_from_slice(&c[from - self.base..to - self.base]);
                self.base = base;
                *c = wider;
                c
            }
            None => {
                self.base = b.saturating_sub(WINDOW / 4).min(BUCKETS - WINDOW);
                self.counts.insert(vec![0u32; WINDOW].into_boxed_slice())
            }
        };
        let i = b - self.base;
        counts[i] = counts[i].saturating_add(1);
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// The counts, once the first sample allocated them (for a cache hint).
    #[inline]
    pub(crate) fn buckets(&self) -> Option<&[u32]> {
        self.counts.as_deref()
    }

    /// The `q` quantile (0..=1), or `None` without samples. The value is the middle of
    /// the bucket holding it, clamped to the exact min and max.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let counts = self.counts.as_deref()?;
        let rank = ((q.clamp(0.0, 1.0) * self.n as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &c) in counts.iter().enumerate() {
            let b = self.base + i;
            seen += u64::from(c);
            if seen >= rank {
                let lo = bucket_low(b);
                let hi = if b + 1 < BUCKETS {
                    bucket_low(b + 1)
                } else {
                    lo
                };
                let mid = lo + (hi.saturating_sub(lo)) / 2;
                return Some(mid.clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    pub fn summary(&self) -> Option<Quantiles> {
        if self.n == 0 {
            return None;
        }
        Some(Quantiles {
            count: self.n,
            min_ns: self.min,
            median_ns: self.quantile(0.5).unwrap_or(self.min),
            p99_ns: self.quantile(0.99).unwrap_or(self.max),
            max_ns: self.max,
            mean_ns: (self.sum / u128::from(self.n)) as u64,
        })
    }
}

/// What a histogram says, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Quantiles {
    pub count: u64,
    pub min_ns: u64,
    pub median_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub mean_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_cover_their_values() {
        let mut last = 0;
        for v in [
            0u64,
            1,
            2,
            3,
            4,
            5,
            6,
            7,
            8,
            9,
            15,
            16,
            100,
            1000,
            123_456,
            1 << 40,
        ] {
            let b = bucket(v);
            assert!(b >= last, "{v}");
            last = b;
            assert!(bucket_low(b) <= v, "{v}");
            if b + 1 < BUCKETS {
                assert!(bucket_low(b + 1) > v, "{v}");
            }
        }
    }

    #[test]
    fn quantiles_are_close_and_inside_min_max() {
        let mut h = LogHist::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let s = h.summary().unwrap();
        assert_eq!(s.count, 1000);
        assert_eq!(s.min_ns, 1000);
        assert_eq!(s.max_ns, 1_000_000);
        let med = s.median_ns as f64;
        assert!((med - 500_000.0).abs() / 500_000.0 < 0.2, "{med}");
        let p99 = s.p99_ns as f64;
        assert!((p99 - 990_000.0).abs() / 990_000.0 < 0.2, "{p99}");
        assert!(LogHist::default().summary().is_none());
    }

    /// Every bucket from the start: what the growing window must equal.
    fn whole() -> LogHist {
        LogHist {
            counts: Some(vec![0u32; BUCKETS].into_boxed_slice()),
            ..LogHist::default()
        }
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_growing_window_counts_as_every_bucket_would(
            v in prop::collection::vec(
                prop_oneof![0u64..64, 1000u64..100_000, 1u64 << 20..1 << 30, any::<u64>()],
                1..80,
            ),
        ) {
            let (mut h, mut all) = (LogHist::default(), whole());
            for &x in &v {
                h.record(x);
                all.record(x);
                let c = h.buckets().unwrap();
                prop_assert!(c.len() <= BUCKETS && h.base + c.len() <= BUCKETS);
                prop_assert!(c.len() % 16 == 0);
            }
            for q in [0.0, 0.1, 0.5, 0.9, 0.99, 1.0] {
                prop_assert_eq!(h.quantile(q), all.quantile(q), "q {}", q);
            }
            let c = h.buckets().unwrap();
            let w = all.buckets().unwrap();
            prop_assert_eq!(c, &w[h.base..h.base + c.len()]);
            prop_assert_eq!(c.iter().map(|&n| u64::from(n)).sum::<u64>(), v.len() as u64);
        }
    }

    #[test]
    fn a_window_grows_toward_its_samples_not_to_every_bucket() {
        let mut h = LogHist::default();
        // An ACK latency from 1.8 us to 20 ms: 14 octaves, 64 buckets, not 192.
        for v in [9_000_000, 1_800, 19_800_000, 5_000] {
            h.record(v);
        }
        assert_eq!(h.buckets().unwrap().len(), 64);
        h.record(1);
        h.record(u64::MAX);
        assert_eq!(h.buckets().unwrap().len(), BUCKETS);
    }
}
