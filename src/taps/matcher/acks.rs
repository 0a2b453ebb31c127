//! What the receiver said: its ACKs, as seen at the tap nearest to it (a resend of a
//! packet that reached the receiver — its ACK was late, or the resend overtook the
//! original — is no loss after the last tap), its NAKs (charged to the segment where their
//! PSN was lost) and the READ requests that ask again for a response lost on the way.

use super::*;

/// PSNs of a direction remembered (direct-mapped by PSN: a direction's recent PSNs are
/// nearly consecutive, so the window's worth of them keep their own slots).
const TALLY: usize = 1024;

/// How often each recent PSN was seen (fixed size: noting a PSN allocates nothing; a
/// PSN [`TALLY`] further on takes its slot).
#[derive(Clone)]
pub(super) struct Tally {
    psn: Box<[u32; TALLY]>,
    count: Box<[u16; TALLY]>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            psn: Box::new([u32::MAX; TALLY]),
            count: Box::new([0; TALLY]),
        }
    }
}

impl Tally {
    pub(super) fn note(&mut self, psn: u32) {
        let i = psn as usize % TALLY;
        if self.psn[i] == psn {
            self.count[i] = self.count[i].saturating_add(1);
        } else {
            self.psn[i] = psn;
            self.count[i] = 1;
        }
    }

    pub(super) fn get(&self, psn: u32) -> u16 {
        let i = psn as usize % TALLY;
        if self.psn[i] == psn {
            self.count[i]
        } else {
            0
        }
    }
}

/// Opcodes that acknowledge their own PSN: an ACK, a READ response First or Only.
fn acknowledges(op: u8) -> bool {
    op >> 5 == 0 && matches!(op & 0x1f, 0x11 | 0x0d | 0x10)
}

impl Matcher {
    /// The tap nearest the receiver of direction `d` (its path's last).
    fn receiver_tap(&self, d: &DirKey) -> usize {
        // Without deciding the near end, as path_of does.
        let near = self.near.get(&pair(d)).copied().unwrap_or(d.src);
        if near == d.src {
            self.n - 1
        } else {
            0
        }
    }

    /// Notes what a sighting says about acknowledgements (feed order: time); returns
    /// whether it is a request arriving at the last tap of its path with its PSN already
    /// acknowledged.
    pub(super) fn acknowledged(&mut self, s: &Sight) -> bool {
        if is_request(s.opcode) {
            let last = self.receiver_tap(&s.dir);
            let Some(d) = self.dirs.get_mut(&s.dir) else {
                return false;
            };
            if d.fed_psn
                .is_none_or(|f| s.psn.wrapping_sub(f) & PSN_MASK < HALF)
            {
                d.fed_psn = Some(s.psn);
            }
            if s.tap != last {
                return false;
            }
            d.arrivals.note(s.psn);
            d.last_arrival = Some(s.psn);
            return d
                .acked
                .is_some_and(|a| a.wrapping_sub(s.psn) & PSN_MASK < HALF);
        }
        if !acknowledges(s.opcode) {
            return false;
        }
        // The data direction is the opposite one: at its receiver's tap, this is the
        // acknowledgement leaving the receiver.
        let data_side = DirKey {
            src: s.dir.dst,
            dst: s.dir.src,
            qpn: 0,
        };
        let at_receiver = s.tap == self.receiver_tap(&data_side);
        // A NAK: the receiver has every PSN before the one it asks for.
        let a = if s.nak {
            s.psn.wrapping_sub(1) & PSN_MASK
        } else {
            s.psn
        };
        let mut best: Option<(u32, &mut DirState)> = None;
        for (k, d) in &mut self.dirs {
            if k.src != s.dir.dst || k.dst != s.dir.src {
                continue;
            }
            if let Some(f) = d.fed_psn {
                let behind = f.wrapping_sub(a) & PSN_MASK;
                if behind < HALF && best.as_ref().is_none_or(|(b, _)| behind < *b) {
                    best = Some((behind, d));
                }
            }
        }
        if let Some((_, d)) = best {
            if d.acked.is_none_or(|x| a.wrapping_sub(x) & PSN_MASK < HALF) {
                d.acked = Some(a);
            }
            // The receiver answers a copy of the PSN it names that is still unanswered,
            // else the packet that reached it last (a duplicate is acknowledged with the
            // latest PSN).
            if at_receiver && !s.nak {
                let p = if d.arrivals.get(s.psn) > d.acks.get(s.psn) {
                    s.psn
                } else {
                    d.last_arrival.unwrap_or(s.psn)
                };
                d.acks.note(p);
            }
        }
        false
    }

    /// A READ request of direction `req_dir` for `psn` asks again for a READ response
    /// lost on the way back (the requester saw the gap): that loss is resent, and the
    /// request is no loss of its own.
    pub(super) fn read_gap(&mut self, req_dir: &DirKey, psn: u32) -> bool {
        for (k, d) in &mut self.dirs {
            if k.src != req_dir.dst || k.dst != req_dir.src {
                continue;
            }
            if let Some(l) = d.losses.iter_mut().find(|l| l.psn == psn && !l.resent) {
                l.resent = true;
                return true;
            }
        }
        false
    }

    /// A NAK of direction `nak_dir` for PSN `psn` of the opposite direction.
    pub(super) fn charge_nak(&mut self, nak_dir: &DirKey, psn: u32, when: u64, at_sender: i64) {
        let n = self.n;
        let mut best: Option<(u32, DirKey)> = None;
        for (k, d) in &mut self.dirs {
            if k.src != nak_dir.dst || k.dst != nak_dir.src {
                continue;
            }
            // The latest loss of the PSN (a resend of it may be lost again).
            if let Some(l) = d.losses.iter_mut().rev().find(|l| l.psn == psn) {
                if !l.nakd {
                    l.nakd = true;
                    d.segments[l.seg].naks += 1;
                }
                d.nak_from = Some(psn);
                d.nak_at = at_sender;
                return;
            }
            if let Some(next) = d.next_psn {
                let behind = next.wrapping_sub(psn) & PSN_MASK;
                if behind < HALF && best.is_none_or(|(b, _)| behind < b) {
                    best = Some((behind, *k));
                }
            }
        }
        // Every tap saw the PSN, and the receiver asked for it again.
        let last = |k: &DirKey| {
            let near = self.near.get(&pair(k)).copied().unwrap_or(k.src);
            if near == k.src {
                n - 1
            } else {
                0
            }
        };
        // Only when the last tap of that direction was capturing did every tap see it.
        let best = best.filter(|(_, k)| self.spans[last(k)].covers(when as i64));
        if let Some((_, k)) = best {
            let d = self.dirs.get_mut(&k).expect("found above");
            d.nak_from = Some(psn);
            d.nak_at = at_sender;
            // A PSN before the first any tap saw: the stream's first packets never
            // reached the first tap. Each spanned as many PSNs as the requests seen (a
            // READ request one per response packet), as in a gap later on.
            let before = d
                .first_psn
                .map(|f| f.wrapping_sub(psn) & PSN_MASK)
                .filter(|&g| (1..=MAX_GAP).contains(&g));
            if let Some(g) = before {
                let per = d.last_span.max(1);
                for i in (0..g).step_by(per as usize) {
                    let q = (psn + i) & PSN_MASK;
                    note_loss(&mut d.segments[0], q, when);
                    push_loss(d, q, 0, i == 0);
                }
                d.segments[0].naks += 1;
                d.first_psn = Some(psn);
                return;
            }
            note_loss(&mut d.segments[n], psn, when);
            d.segments[n].naks += 1;
            push_loss(d, psn, n, true);
        }
    }
}
