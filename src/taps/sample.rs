//! A bounded sample of delays: every value while there is room, then a deterministic
//! reservoir (the same captures give the same report). The minimum and maximum are exact.

/// Values kept at most.
pub const CAP: usize = 4096;

#[derive(Clone, Debug, Default)]
/// Delays of one segment.
pub struct Samples {
    vals: Vec<i64>,
    seen: u64,
    min: i64,
    max: i64,
    rng: u64,
}

impl Samples {
    /// Adds a value.
    pub fn add(&mut self, v: i64) {
        if self.seen == 0 {
            self.min = v;
            self.max = v;
            self.rng = 0x9E37_79B9_7F4A_7C15;
        }
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.seen += 1;
        if self.vals.len() < CAP {
            self.vals.push(v);
            return;
        }
        // xorshift64*: which slot, if any, the new value takes.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) % self.seen;
        if (r as usize) < CAP {
            self.vals[r as usize] = v;
        }
    }

    /// Values added (not only kept).
    pub fn count(&self) -> u64 {
        self.seen
    }

    /// The smallest value added.
    pub fn min(&self) -> Option<i64> {
        (self.seen > 0).then_some(self.min)
    }

    /// The largest value added.
    pub fn max(&self) -> Option<i64> {
        (self.seen > 0).then_some(self.max)
    }

    /// The q-quantile (nearest rank) of the values kept.
    pub fn quantile(&self, q: f64) -> Option<i64> {
        if self.vals.is_empty() {
            return None;
        }
        let mut v = self.vals.clone();
        v.sort_unstable();
        let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
        Some(v[i])
    }
}
