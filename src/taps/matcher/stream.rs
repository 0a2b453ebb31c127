//! A direction's request stream and its recent losses: PSN gaps at the first tap are
//! losses before it, resends are charged to the loss of their PSN.

use super::*;

pub(super) fn note_loss(s: &mut Segment, psn: u32, when: u64) {
    s.lost += 1;
    if s.psns.len() < LISTED_PSNS {
        s.psns.push(psn);
    }
    s.first_ns.get_or_insert(when);
    s.last_ns = Some(when);
}

pub(super) fn push_loss(d: &mut DirState, psn: u32, seg: usize, nakd: bool) {
    if d.losses.len() == LOSSES {
        d.losses.pop_front();
    }
    d.losses.push_back(Loss {
        psn,
        seg,
        nakd,
        resent: false,
    });
}

/// The request stream's PSNs: a jump ahead is loss before the first tap, a PSN behind a
/// resend (charged to its loss, or a timer retry of a packet every tap saw).
pub(super) fn sequence(d: &mut DirState, psn: u32, when: u64, n: usize, last_capturing: bool) {
    let Some(next) = d.next_psn else {
        d.next_psn = Some((psn + 1) & PSN_MASK);
        return;
    };
    let ahead = psn.wrapping_sub(next) & PSN_MASK;
    if ahead < HALF {
        if ahead <= MAX_GAP {
            for i in 0..ahead {
                let q = (next + i) & PSN_MASK;
                note_loss(&mut d.segments[0], q, when);
                push_loss(d, q, 0, false);
            }
        }
        d.next_psn = Some((psn + 1) & PSN_MASK);
        d.in_resend = false;
        return;
    }
    let first_of_run = !d.in_resend;
    d.in_resend = true;
    if let Some(l) = d.losses.iter_mut().find(|l| l.psn == psn && !l.resent) {
        l.resent = true;
        if !l.nakd && first_of_run {
            d.segments[l.seg].timer_retries += 1;
        }
        return;
    }
    // Only a PSN the last tap could have seen is known to have passed every tap.
    if first_of_run && last_capturing && !d.losses.iter().any(|l| l.psn == psn) {
        note_loss(&mut d.segments[n], psn, when);
        d.segments[n].timer_retries += 1;
        push_loss(d, psn, n, false);
        if let Some(l) = d.losses.back_mut() {
            l.resent = true;
        }
    }
}
