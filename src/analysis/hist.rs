//! A fixed-size log-bucket histogram of nanosecond durations: 4 sub-buckets per power of
//! two, so any quantile it reports is within about 19 % of the true sample (and always
//! inside the exact min/max it also keeps). Its buckets are allocated with the first
//! sample (most flows never see most kinds of latency) and never grow, so it has the same
//! size whatever the number of samples, which is what lets every flow carry several.

/// Sub-buckets per octave (2 bits of mantissa).
const SUB: u32 = 4;
/// Octaves covered: up to 2^48 ns (about 78 hours); longer samples land in the last bucket.
const OCTAVES: u32 = 48;
const BUCKETS: usize = (OCTAVES * SUB) as usize;

/// Buckets of the first window: 8 octaves (a 256x range) around the first sample, which
/// is where most of a flow's latencies fall; a sample outside it widens the window to
/// every bucket, once.
const WINDOW: usize = 32;

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

    /// The first sample (allocates the window) or one outside the window (widens it to
    /// every bucket, once).
    #[cold]
    fn record_slow(&mut self, b: usize) {
        let counts = match self.counts.as_mut() {
            Some(c) => {
                let mut all = vec![0u32; BUCKETS].into_boxed_slice();
                all[self.base..self.base + c.len()].copy_from_slice(c);
                self.base = 0;
                *c = all;
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
}
