//! The flight recorder: the most recent frames of one source in a fixed ring, bounded by
//! bytes and by seconds, so that a dump can hold the minutes before something went wrong.
//!
//! Frames are kept in fixed-size slots of the capture's snapshot length (the agent
//! captures headers only, 128 bytes by default), so recording a frame is a copy into a
//! buffer sized once: nothing is allocated per frame and memory is the same after a
//! minute or a week. The buffer is zeroed memory that the kernel maps in as it is first
//! written, so a quiet source costs little.

use super::private::Privacy;
use crate::capture::Frame;
use dissectors::Decoded;

/// One recorded frame's place and metadata.
#[derive(Clone, Copy, Debug, Default)]
struct Meta {
    ts_ns: u64,
    caplen: u32,
    orig_len: u32,
    iface: u32,
}

/// A frame read back from the recorder.
#[derive(Clone, Copy, Debug)]
pub struct Recorded<'a> {
    /// Capture timestamp, ns since the Unix epoch.
    pub ts_ns: u64,
    /// The captured bytes (at most the slot size).
    pub data: &'a [u8],
    /// Length on the wire.
    pub orig_len: u32,
    /// Interface within the source.
    pub iface: u32,
}

/// The ring of one source.
pub struct Recorder {
    slot: usize,
    buf: Vec<u8>,
    meta: Vec<Meta>,
    /// Index of the oldest frame.
    head: usize,
    len: usize,
    max_age_ns: u64,
    /// Frames pushed out by the byte or age bound (for `/metrics` and the dump notes).
    pub evicted: u64,
}

impl Recorder {
    /// A recorder of `bytes` bytes (at least one slot) in slots of `slot` bytes, keeping
    /// frames at most `max_age_ns` older than the newest.
    pub fn new(bytes: u64, slot: u32, max_age_ns: u64) -> Self {
        let slot = slot.max(1) as usize;
        let slots = ((bytes / slot as u64) as usize).max(1);
        Recorder {
            slot,
            buf: vec![0; slots * slot],
            meta: vec![Meta::default(); slots],
            head: 0,
            len: 0,
            max_age_ns,
            evicted: 0,
        }
    }

    /// Frames the ring can hold.
    pub fn capacity(&self) -> usize {
        self.meta.len()
    }

    /// Frames held now.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no frame.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Records a frame (cut to the slot size), pushing out the oldest when full and every
    /// frame older than the age bound.
    #[inline]
    pub fn push(&mut self, f: &Frame<'_>) {
        self.push_with(f, f.data.len(), |b| b.len());
    }

    /// Records what `privacy` keeps of a frame the decoder read as `d`: headers only,
    /// redacted (see [`super::private`]).
    #[inline]
    pub fn record(&mut self, f: &Frame<'_>, d: Option<&Decoded>, privacy: &Privacy) {
        let keep = privacy.keep(f.data.len(), d);
        self.push_with(f, keep, |b| privacy.redact(b, d));
    }

    /// Copies the first `keep` bytes of `f` (at most a slot) into the next slot, lets
    /// `fix` change them and say how many stay.
    #[inline]
    fn push_with(&mut self, f: &Frame<'_>, keep: usize, fix: impl FnOnce(&mut [u8]) -> usize) {
        let cap = self.meta.len();
        if self.len == cap {
            self.head = wrap(self.head + 1, cap);
            self.len -= 1;
            self.evicted += 1;
        }
        let i = wrap(self.head + self.len, cap);
        // The next frame's slot and entry, on their way into the cache while this one is
        // recorded and analyzed: the ring is far larger than the caches, so each slot is
        // a miss, and the redaction reads back what was just written.
        let next = wrap(i + 1, cap);
        let next_slot = &self.buf[next * self.slot..(next + 1) * self.slot];
        crate::prefetch::lines(next_slot, 0, next_slot.len());
        crate::prefetch::prefetch(std::ptr::from_ref(&self.meta[next]));
        let n = keep.min(f.data.len()).min(self.slot);
        let slot = &mut self.buf[i * self.slot..i * self.slot + n];
        slot.copy_from_slice(&f.data[..n]);
        let n = fix(slot).min(n);
        self.meta[i] = Meta {
            ts_ns: f.ts_ns,
            caplen: n as u32,
            orig_len: f.orig_len,
            iface: f.iface,
        };
        self.len += 1;
        self.expire(f.ts_ns);
    }

    /// Drops the frames older than the age bound before `now_ns`.
    pub fn expire(&mut self, now_ns: u64) {
        let oldest = now_ns.saturating_sub(self.max_age_ns);
        while self.len > 0 && self.meta[self.head].ts_ns < oldest {
            self.head = wrap(self.head + 1, self.meta.len());
            self.len -= 1;
            self.evicted += 1;
        }
    }

    /// Timestamp of the newest frame.
    pub fn newest_ts(&self) -> Option<u64> {
        (self.len > 0).then(|| self.meta[(self.head + self.len - 1) % self.meta.len()].ts_ns)
    }

    /// The frames held with a timestamp at or after `from_ns`, oldest first.
    pub fn since(&self, from_ns: u64) -> impl Iterator<Item = Recorded<'_>> + '_ {
        let cap = self.meta.len();
        (0..self.len)
            .map(move |k| (self.head + k) % cap)
            .filter(move |&i| self.meta[i].ts_ns >= from_ns)
            .map(move |i| {
                let m = self.meta[i];
                Recorded {
                    ts_ns: m.ts_ns,
                    data: &self.buf[i * self.slot..i * self.slot + m.caplen as usize],
                    orig_len: m.orig_len,
                    iface: m.iface,
                }
            })
    }
}

/// `i % cap` for an `i` below `2 * cap` (a ring index plus at most its length): a
/// compare instead of a division on every recorded frame.
#[inline]
fn wrap(i: usize, cap: usize) -> usize {
    debug_assert!(i < 2 * cap);
    if i >= cap {
        i - cap
    } else {
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dissectors::LinkType;

    fn frame(ts: u64, data: &[u8]) -> Frame<'_> {
        Frame {
            ts_ns: ts,
            link: LinkType::Ethernet,
            data,
            orig_len: data.len() as u32 + 10,
            iface: 0,
            source: 0,
        }
    }

    #[test]
    fn keeps_the_newest_frames_within_bytes_and_age() {
        let mut r = Recorder::new(4 * 8, 8, 1_000);
        for t in 0..10u64 {
            r.push(&frame(t * 10, &[t as u8; 12]));
        }
        assert_eq!(r.capacity(), 4);
        let got: Vec<_> = r.since(0).map(|f| (f.ts_ns, f.data.to_vec())).collect();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], (60, vec![6; 8]), "cut to the slot size");
        assert_eq!(got[3].0, 90);
        assert_eq!(r.evicted, 6);
        assert_eq!(r.since(80).count(), 2);
        // Age: a frame 2 µs later pushes out everything older than 1 µs before it.
        r.push(&frame(2_000, b"x"));
        assert_eq!(r.len(), 1);
        assert_eq!(r.newest_ts(), Some(2_000));
        let f = r.since(0).next().unwrap();
        assert_eq!((f.data, f.orig_len), (&b"x"[..], 11));
    }

    #[test]
    fn an_empty_or_tiny_recorder_is_safe() {
        let mut r = Recorder::new(0, 0, 0);
        assert!(r.is_empty());
        assert_eq!(r.newest_ts(), None);
        r.push(&frame(5, b"abc"));
        assert_eq!(r.len(), 1);
        assert_eq!(r.since(0).next().unwrap().data, b"a");
    }
}
