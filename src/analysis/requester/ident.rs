//! The IPv4 identification as evidence of send order: whether a flow's sender varies it
//! and counts it up, so that a late arrival is told from a packet sent now and a copy
//! made by the network from a resend.

use super::*;

/// Whether a late packet of PSN `p` (identification `ident`) belongs to a gap a resend
/// filled and was sent before that resend: an original the resend of its PSN overtook.
pub(super) fn overtaken_by_its_resend(f: &Flow, p: Psn, ident: u16) -> bool {
    let g = &f.req.resent_gaps;
    (0..g.len()).any(|i| g.get(i).overtook(p, ident))
}

/// Whether a sighting of PSN `p` taken for its original (it moved the stream on) carries
/// an identification later than `ident`: it was a resend that overtook the original.
pub(super) fn original_sent_later(f: &Flow, p: Psn, ident: u16) -> bool {
    f.req
        .sent
        .iter()
        .any(|s| s.psn == p && s.new && (s.ident.wrapping_sub(ident) as i16) > 0)
        || sent_new_before_rewind(f, p, ident)
}

/// Whether `p` (identification `ident`) was sent before the latest rewind and was not
/// yet passed as new when that rewind began: the original of its PSN, which the rewind's
/// resend overtook (also once that resend's record has left the recent-PSN ring).
fn sent_new_before_rewind(f: &Flow, p: Psn, ident: u16) -> bool {
    f.trouble
        .as_deref()
        .and_then(|t| t.rewind)
        .is_some_and(|(id, next)| (id.wrapping_sub(ident) as i16) > 0 && p.diff(next) >= 0)
}

/// Watches the IPv4 identification: only a sender that varies it lets a copy be told
/// from a resend by it, and only one that counts it up in send order tells a late
/// arrival from a packet sent now. Returns whether `ident` is earlier than the latest
/// one sent (always false where the identification is not the send order).
pub(super) fn note_ident(f: &mut Flow, ident: u16) -> bool {
    let r = &mut f.req;
    let Some(first) = r.first_ident else {
        r.first_ident = Some(ident);
        r.max_ident = ident;
        return false;
    };
    if ident != first {
        r.idents_vary = true;
    }
    let step = ident.wrapping_sub(r.max_ident) as i16;
    let ahead = step > 0;
    if ahead {
        r.max_ident = ident;
        r.idents_ahead = r.idents_ahead.saturating_add(1);
        if step > NEAR_IDENT {
            r.idents_far = r.idents_far.saturating_add(1);
        }
    } else {
        r.idents_behind = r.idents_behind.saturating_add(1);
    }
    !ahead && idents_in_order(f)
}

/// How far after the latest identification a counting sender's next packet of the flow
/// may come (other flows sharing its counter take the numbers between): a random
/// identification lands within it about once in 64 packets.
pub(in crate::analysis) const NEAR_IDENT: i16 = 1024;

/// The identification is the send order: it varies, and nearly every packet that carries
/// a later one than any before carries one a short step later (a counter; a random or
/// constant identification does not pass). Packets behind the latest one do not count
/// against it: reordering makes them — netem in the lab has delivered bursts of a hundred
/// in reverse order, each one behind, which once made the count of those behind outgrow
/// the rest and turned each late packet into a retransmission of its own. A flow's first
/// packets are judged sooner, while no step has been far: [`FIRST_NEAR_STEPS`] near steps
/// and none far (the lab's reorder scenario delays the capture's fifth packet; a random
/// identification passes about once in a million flows).
pub(super) fn idents_in_order(f: &Flow) -> bool {
    let r = &f.req;
    let near = r.idents_ahead - r.idents_far;
    r.idents_vary
        && ((near >= 8 && near >= 8 * r.idents_far)
            || (r.idents_far == 0 && near >= FIRST_NEAR_STEPS))
}

/// Near steps up, and none far, after which a flow's identification is taken for its send
/// order even before [`idents_in_order`]'s eight.
pub(super) const FIRST_NEAR_STEPS: u32 = 4;

/// Is `p` (seen at `ts` with `ident`) a copy of its last sighting?
pub(super) fn is_copy(f: &Flow, p: Psn, ts: u64, ident: u16) -> bool {
    let Some(SentPsn {
        t_ns: t0,
        ident: id0,
        ..
    }) = f.req.sent.iter().rev().find(|s| s.psn == p)
    else {
        return false;
    };
    let known = f.req.idents_ahead + f.req.idents_behind >= 8;
    if f.req.idents_vary || (!known && ident != 0) {
        // Where it varies (or, in a flow's first packets, before that is known, when it
        // is not the 0 that senders without an identification write) the same
        // identification is the same transmission.
        id0 == ident
    } else {
        ts.saturating_sub(t0) <= COPY_WINDOW_NS
    }
}
