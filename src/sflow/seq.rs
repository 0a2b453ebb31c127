//! Collector-side loss from an exporter's datagram sequence numbers.
//!
//! Each agent / sub-agent numbers its datagrams 1, 2, 3, ... A number past the next one
//! counts the numbers skipped as lost; a number already passed is a late (reordered)
//! datagram, which takes back one of the numbers counted lost, or a duplicate (seen
//! within the last [`WINDOW`] numbers). A restarted exporter begins again at 1 with its
//! uptime reset: a number at or below the last one, with an uptime below the last one's,
//! that is not a late datagram (already seen, or further back than [`WINDOW`]) is a
//! reset, counted, and the count starts over from it. (A late datagram's uptime is older
//! too, so the uptime alone cannot tell the two apart.)

/// How many recent sequence numbers are remembered for telling a late datagram from a
/// duplicate (a bitmap, fixed size).
pub const WINDOW: u32 = 64;

/// The sequence state of one agent / sub-agent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeqTrack {
    started: bool,
    /// The highest sequence number seen since the last reset.
    pub last: u32,
    /// Its uptime, milliseconds.
    pub uptime_ms: u32,
    /// Bit `i` set: `last - i` was received.
    seen: u64,
    /// Datagrams missing (skipped and not arrived late).
    pub lost: u64,
    /// Datagrams that arrived after a later one.
    pub reordered: u64,
    /// Datagrams received again.
    pub duplicates: u64,
    /// Exporter restarts (uptime went backwards with the sequence).
    pub resets: u64,
}

/// What one datagram's sequence number meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// The first datagram of the agent.
    First,
    /// The next one in order.
    Next,
    /// This many numbers were skipped.
    Gap(u32),
    /// Older than the last one and not seen before.
    Late,
    /// Seen before.
    Duplicate,
    /// The exporter restarted.
    Reset,
}

impl SeqTrack {
    /// Counts datagram `seq` sent at `uptime_ms` and says what it was.
    pub fn see(&mut self, seq: u32, uptime_ms: u32) -> Seen {
        if !self.started {
            self.started = true;
            self.restart(seq, uptime_ms);
            return Seen::First;
        }
        if seq > self.last {
            let gap = seq - self.last - 1;
            self.lost += u64::from(gap);
            let shift = seq - self.last;
            self.seen = if shift >= 64 { 0 } else { self.seen << shift } | 1;
            self.last = seq;
            self.uptime_ms = uptime_ms;
            return if gap == 0 { Seen::Next } else { Seen::Gap(gap) };
        }
        let back = self.last - seq;
        let seen = back < WINDOW && self.seen & (1 << back) != 0;
        if uptime_ms < self.uptime_ms && (seen || back >= WINDOW) {
            self.resets += 1;
            self.restart(seq, uptime_ms);
            return Seen::Reset;
        }
        if seen {
            self.duplicates += 1;
            return Seen::Duplicate;
        }
        if back < WINDOW {
            self.seen |= 1 << back;
        }
        self.reordered += 1;
        self.lost = self.lost.saturating_sub(1);
        Seen::Late
    }

    fn restart(&mut self, seq: u32, uptime_ms: u32) {
        self.last = seq;
        self.uptime_ms = uptime_ms;
        self.seen = 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_late_duplicates_and_resets() {
        let mut s = SeqTrack::default();
        assert_eq!(s.see(1, 10), Seen::First);
        assert_eq!(s.see(2, 20), Seen::Next);
        assert_eq!(s.see(5, 50), Seen::Gap(2));
        assert_eq!(s.lost, 2);
        assert_eq!(s.see(3, 30), Seen::Late);
        assert_eq!((s.lost, s.reordered), (1, 1));
        assert_eq!(s.see(3, 50), Seen::Duplicate);
        assert_eq!(s.see(5, 50), Seen::Duplicate);
        assert_eq!((s.lost, s.duplicates), (1, 2));
        // the exporter restarts: the uptime goes back with the number
        assert_eq!(s.see(1, 5), Seen::Reset);
        assert_eq!(s.see(2, 6), Seen::Next);
        assert_eq!((s.lost, s.resets), (1, 1));
        // a gap wider than the window
        assert_eq!(s.see(1000, 100), Seen::Gap(997));
        assert_eq!(s.see(999, 99), Seen::Late);
        assert_eq!(s.lost, 1 + 997 - 1);
    }
}
