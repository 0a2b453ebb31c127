//! The matcher: sightings of packets at the taps in, merged in time order; each packet
//! judged once the window has passed its first sighting; a [`Report`] out.

use super::sample::Samples;
use super::{Delay, DirKey, Direction, Report, Segment, TapSummary, Totals, LISTED_PSNS};
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

mod acks;
mod finish;
mod stream;

use acks::Tally;
use stream::{full_payload, is_request, note_loss, push_loss, sequence};

/// Taps merged at most.
pub const MAX_TAPS: usize = 8;
const PSN_MASK: u32 = 0x00ff_ffff;
const HALF: u32 = 1 << 23;
/// A PSN jump larger than this is a new stream, not a loss.
const MAX_GAP: u32 = 4096;
/// Recent losses remembered per direction, to charge NAKs and resends to them.
const LOSSES: usize = 256;
/// Copies of one (PSN, opcode, identification) told apart within the window.
const MAX_COPIES: u8 = 64;
const RC_ACK: u8 = 0x11;
const READ_REQUEST: u8 = 0x0c;

/// A packet seen at a tap.
#[derive(Clone, Copy, Debug)]
pub struct Sight {
    /// Which tap (index into the taps given).
    pub tap: usize,
    /// The tap's own timestamp (ns).
    pub ts_ns: u64,
    /// On the common clock: the first tap's, `ts_ns` minus the tap's offset.
    pub at: i64,
    /// The direction.
    pub dir: DirKey,
    /// BTH PSN.
    pub psn: u32,
    /// BTH opcode.
    pub opcode: u8,
    /// IPv4 identification (0 for IPv6).
    pub ident: u16,
    /// An ACK carrying a NAK (PSN sequence error); its PSN is the one expected.
    pub nak: bool,
    /// A READ request's DMA length (its RETH), else the payload length.
    pub len: u32,
}

type PKey = (DirKey, u32, u8, u16, u8);

struct Pending {
    first: i64,
    at: [Option<i64>; MAX_TAPS],
    nak: bool,
    len: u32,
    /// At the last tap of its path the receiver had already acknowledged its PSN: a
    /// resend of a packet that arrived (its ACK was late), not of one lost after the tap.
    acked: bool,
}

#[derive(Clone, Copy)]
struct Loss {
    psn: u32,
    seg: usize,
    nakd: bool,
    resent: bool,
}

struct DirState {
    seen_by: u16,
    next_psn: Option<u32>,
    first_psn: Option<u32>, // the first request PSN any tap saw
    in_resend: bool,
    /// In a resend run, the PSN the sender resends next (it resends consecutively).
    run_next: u32,
    /// PSNs the last new request spanned (a READ request one per response packet).
    last_span: u32,
    /// The highest request PSN fed so far, and the highest the receiver acknowledged.
    fed_psn: Option<u32>,
    acked: Option<u32>,
    /// Copies of recent PSNs that reached the last tap (the last of them), and the
    /// receiver's ACKs of each (see `acks.rs`).
    arrivals: Tally,
    last_arrival: Option<u32>,
    /// (see `arrivals`)
    acks: Tally,
    /// Recent request PSNs settled (in first-sighting order) as having passed the last tap.
    passed_last: Tally,
    losses: VecDeque<Loss>,
    /// The PSN the receiver's latest NAK asked for, until the sender's next resend run
    /// starts: a run that starts above it lost its first packets again (see `sequence`).
    nak_from: Option<u32>,
    /// When the latest NAK passed the tap nearest the sender (that tap's clock): a run
    /// the sender started before then is not the NAK's.
    nak_at: i64,
    /// The one PSN the last request's jump ahead left missing (see `sequence`).
    fresh_hole: Option<u32>,
    /// The one PSN the resend run in progress skipped, and when (see `sequence`).
    run_hole: Option<(u32, u64)>,
    /// Indexed by full path position: 0 before, k the way into position k, n after.
    segments: Vec<Segment>,
    /// Indexed by the later full path position minus one.
    delays: Vec<Samples>,
    packets: u64,
    matched: u64,
    missed: [u64; MAX_TAPS],
    alone: [u64; MAX_TAPS],
}

/// Up to [`MAX_TAPS`] path positions, without allocating (judging a packet allocates
/// nothing).
#[derive(Clone, Copy)]
struct Small {
    v: [usize; MAX_TAPS],
    len: usize,
}

impl FromIterator<usize> for Small {
    fn from_iter<I: IntoIterator<Item = usize>>(it: I) -> Self {
        let mut s = Small {
            v: [0; MAX_TAPS],
            len: 0,
        };
        for x in it.into_iter().take(MAX_TAPS) {
            s.v[s.len] = x;
            s.len += 1;
        }
        s
    }
}

impl std::ops::Deref for Small {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.v[..self.len]
    }
}

/// Matches sightings across taps and judges each packet once.
pub struct Matcher {
    n: usize,
    window: i64,
    /// How far a sighting may precede the copy it belongs to: an eighth of the window.
    slack: i64,
    synced: bool,
    pending: HashMap<PKey, Pending>,
    order: VecDeque<(i64, PKey)>,
    dirs: HashMap<DirKey, DirState>,
    /// (lower address, higher address) → the host nearest the first tap.
    near: HashMap<(IpAddr, IpAddr), IpAddr>,
    /// (lower address, higher address) → the largest First/Middle payload: the path MTU.
    pmtu: HashMap<(IpAddr, IpAddr), u32>,
    taps: Vec<TapSummary>,
    spans: Vec<Span>,
}

/// When a tap was capturing, in first sightings of the packets it saw: from the first
/// sighting of its first packet to that of its last once its capture has ended. (On a
/// path packets keep their order, so a packet first seen before a tap's first one passed
/// it before it started.) A tap is judged only on the packets of its span.
#[derive(Clone, Copy, Default)]
struct Span {
    start: Option<i64>,
    last: i64,
    ended: bool,
}

impl Span {
    fn covers(&self, t: i64) -> bool {
        self.start.is_some_and(|s| t >= s) && !(self.ended && t > self.last)
    }
}

fn pair(d: &DirKey) -> (IpAddr, IpAddr) {
    (d.src.min(d.dst), d.src.max(d.dst))
}

impl Matcher {
    /// A matcher for taps named `names` (path order), judging packets `window_ns` after
    /// their first sighting.
    ///
    /// # Panics
    /// With no name or more than [`MAX_TAPS`] (`run` refuses those inputs first).
    pub fn new(names: &[String], window_ns: u64, clocks_synced: bool) -> Self {
        assert!((1..=MAX_TAPS).contains(&names.len()));
        Matcher {
            n: names.len(),
            window: window_ns.min(i64::MAX as u64) as i64,
            slack: (window_ns / 8).min(i64::MAX as u64) as i64,
            synced: clocks_synced,
            pending: HashMap::new(),
            order: VecDeque::new(),
            dirs: HashMap::new(),
            near: HashMap::new(),
            pmtu: HashMap::new(),
            taps: names
                .iter()
                .map(|n| TapSummary {
                    name: n.clone(),
                    ..TapSummary::default()
                })
                .collect(),
            spans: vec![Span::default(); names.len()],
        }
    }

    /// Tap `i`'s capture has ended: packets first seen after its last are not judged on it.
    pub fn tap_ended(&mut self, i: usize) {
        self.spans[i].ended = true;
    }

    fn note_span(&mut self, tap: usize, first: i64) {
        let sp = &mut self.spans[tap];
        sp.start.get_or_insert(first);
        sp.last = sp.last.max(first);
    }

    /// What the reader counted of tap `i`.
    pub fn tap_mut(&mut self, i: usize) -> &mut TapSummary {
        &mut self.taps[i]
    }

    /// Sightings must come in `at` order (as the merged reading gives them).
    pub fn feed(&mut self, s: Sight) {
        self.expire(s.at.saturating_sub(self.window));
        self.taps[s.tap].roce += 1;
        if s.tap == 0 {
            self.near.entry(pair(&s.dir)).or_insert(s.dir.src);
        }
        if full_payload(s.opcode) {
            let m = self.pmtu.entry(pair(&s.dir)).or_insert(0);
            *m = (*m).max(s.len);
        }
        let n = self.n;
        self.dirs
            .entry(s.dir)
            .or_insert_with(|| DirState {
                seen_by: 0,
                next_psn: None,
                first_psn: None,
                in_resend: false,
                run_next: 0,
                last_span: 1,
                fed_psn: None,
                acked: None,
                arrivals: Tally::default(),
                last_arrival: None,
                acks: Tally::default(),
                passed_last: Tally::default(),
                losses: VecDeque::new(),
                nak_from: None,
                nak_at: i64::MIN,
                fresh_hole: None,
                run_hole: None,
                segments: vec![Segment::default(); n + 1],
                delays: vec![Samples::default(); n.saturating_sub(1)],
                packets: 0,
                matched: 0,
                missed: [0; MAX_TAPS],
                alone: [0; MAX_TAPS],
            })
            .seen_by |= 1 << s.tap;
        let acked = self.acknowledged(&s);
        // The copy this sighting is: among the copies pending that this tap has not seen,
        // the one first seen last before it (a resend seen at one tap is not matched with
        // the original another tap saw); a new copy when there is none. "Before" allows
        // for the estimated clock offsets' error (`slack`): a tap after another on the path
        // may be put a little before it.
        let mut best: Option<(i64, u8)> = None;
        let mut free = None;
        for copy in 0..MAX_COPIES {
            match self.pending.get(&(s.dir, s.psn, s.opcode, s.ident, copy)) {
                Some(p) if p.at[s.tap].is_none() && p.first <= s.at.saturating_add(self.slack) => {
                    if best.is_none_or(|(f, _)| p.first >= f) {
                        best = Some((p.first, copy));
                    }
                }
                Some(_) => {}
                None => {
                    free = Some(copy);
                    break;
                }
            }
        }
        if let Some((_, copy)) = best {
            if let Some(p) = self
                .pending
                .get_mut(&(s.dir, s.psn, s.opcode, s.ident, copy))
            {
                p.at[s.tap] = Some(s.at);
                p.acked |= acked;
                let first = p.first;
                self.note_span(s.tap, first);
            }
            return;
        }
        if let Some(copy) = free {
            let key = (s.dir, s.psn, s.opcode, s.ident, copy);
            let mut at = [None; MAX_TAPS];
            at[s.tap] = Some(s.at);
            self.pending.insert(
                key,
                Pending {
                    first: s.at,
                    at,
                    nak: s.nak,
                    len: s.len,
                    acked,
                },
            );
            self.order.push_back((s.at, key));
            self.note_span(s.tap, s.at);
        }
        // More copies than that within the window: counted at the tap, not matched.
    }

    /// Packets still waiting for other taps' sightings.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    fn expire(&mut self, before: i64) {
        while let Some(&(first, key)) = self.order.front() {
            if first >= before {
                break;
            }
            self.order.pop_front();
            if let Some(p) = self.pending.remove(&key) {
                self.judge(key, p);
            }
        }
    }

    /// The full path positions of a direction: tap indices in its order.
    fn path_of(&mut self, d: &DirKey) -> Small {
        let near = *self.near.entry(pair(d)).or_insert(d.src);
        if near == d.src {
            (0..self.n).collect()
        } else {
            (0..self.n).rev().collect()
        }
    }

    fn judge(&mut self, key: PKey, p: Pending) {
        let (dk, psn, opcode, _, _) = key;
        let path = self.path_of(&dk);
        let n = self.n;
        let read_gap = opcode == READ_REQUEST && self.read_gap(&dk, psn);
        let spans = &self.spans;
        let Some(d) = self.dirs.get_mut(&dk) else {
            return;
        };
        d.packets += 1;
        // Positions of the taps that see this direction at all and were capturing.
        let included: Small = (0..n)
            .filter(|&k| d.seen_by & (1 << path[k]) != 0 && spans[path[k]].covers(p.first))
            .collect();
        let seen: Small = included
            .iter()
            .copied()
            .filter(|&k| p.at[path[k]].is_some())
            .collect();
        let Some(&last) = seen.last() else {
            return;
        };
        if seen.len() > 1 {
            d.matched += 1;
        } else {
            d.alone[path[last]] += 1;
        }
        for &k in included.iter().take_while(|&&k| k < last) {
            if p.at[path[k]].is_none() {
                d.missed[path[k]] += 1;
            }
        }
        // Delays between adjacent taps of the path only: one that missed the packet
        // leaves no delay for either of its segments.
        for w in included.windows(2) {
            if let (Some(a), Some(b)) = (p.at[path[w[0]]], p.at[path[w[1]]]) {
                d.delays[w[1] - 1].add(b.saturating_sub(a));
            }
        }
        let when = p.first.max(0) as u64;
        let lost_at = included.iter().copied().find(|&k| k > last);
        // The stream first (a resend lost between the taps is a resend of an earlier
        // loss), then this packet's own loss; only a packet that passed the last tap can
        // have been lost after it.
        if is_request(opcode) {
            let last_capturing =
                spans[path[n - 1]].covers(p.first) && lost_at.is_none() && !read_gap;
            let span = self
                .pmtu
                .get(&pair(&dk))
                .map_or(1, |&m| p.len.div_ceil(m).max(1));
            let span = if opcode & 0x1f == READ_REQUEST {
                span
            } else {
                1
            };
            sequence(d, psn, span, when, n, last_capturing, p.acked);
            if p.at[path[n - 1]].is_some() {
                d.passed_last.note(psn);
            }
        }
        if let Some(next) = lost_at {
            note_loss(&mut d.segments[next], psn, when);
            push_loss(d, psn, next, false);
        }
        if opcode == RC_ACK && p.nak {
            // The NAK at the last tap of its path: the one nearest the sender it goes to.
            let at_sender = p.at[path[last]].unwrap_or(p.first);
            self.charge_nak(&dk, psn, when, at_sender);
        }
    }
}
