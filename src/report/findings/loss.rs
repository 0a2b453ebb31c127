//! The words for findings about loss, retransmission and connections that ended: what
//! happened, what caused it and where, relative to the tap, as the evidence tells — and,
//! where one tap cannot tell, that it cannot and what would.

use super::duration;
use crate::analysis::report::{Finding, FindingKind};
use crate::analysis::Report;

/// `, first at 1.234567 s` of a time, from the report's first frame.
fn at_time(r: &Report, t_ns: u64) -> String {
    let first = r.first_ts_ns.unwrap_or(0);
    format!("{:.6} s", t_ns.saturating_sub(first) as f64 / 1e9)
}

fn connections_word(n: u64) -> &'static str {
    if n == 1 {
        "connection"
    } else {
        "connections"
    }
}

/// The sentence of a loss / retransmission / stop finding; `None` for the other kinds.
/// `w` names the worst flows, `at` is `, first at ... s` or empty.
pub(super) fn message(f: &Finding, r: &Report, w: &str, at: &str) -> Option<String> {
    Some(match &f.kind {
        FindingKind::RetryExhausted {
            qps,
            psn,
            retries,
            over_ns,
            last_ns,
        } => format!(
            "{qps} {} gave up: the requester retried PSN {psn} {retries} times over {} with no progress, then fell silent (last packet at {}) — retries exhausted, the QP went to the error state (IBV_WC_RETRY_EXC_ERR, status 12; NCCL's \"error 12\"); the traffic stopped{at}; on {w}",
            if *qps == 1 { "QP" } else { "QPs" },
            duration(*over_ns),
            at_time(r, *last_ns),
        ),
        FindingKind::ConnectionStalled {
            connections,
            psn,
            retries,
            over_ns,
            last_ns,
        } if *retries > 0 => format!(
            "{connections} {} made no progress: the requester retried PSN {psn} {retries} times over {} with no ACK past it and was still retrying when the capture ended (last packet at {}) — it had not given up by then; the requests passed the tap, so they were lost after it or their ACKs were lost — a capture at the other end would tell{at}; on {w}",
            connections_word(*connections),
            duration(*over_ns),
            at_time(r, *last_ns),
        ),
        FindingKind::ConnectionStalled {
            connections,
            psn,
            last_ns,
            ..
        } => format!(
            "{connections} {} stopped in the middle of a message at {} (PSN {psn} never came) and never resumed, with no retry reaching the tap: the requester's packets stopped arriving before the tap (a link that died, a requester that gave up or crashed) — or the capture ended mid-transfer; a capture at the requester would show its retries; on {w}",
            connections_word(*connections),
            at_time(r, *last_ns),
        ),
        FindingKind::NakPsnSeq {
            naks,
            gap_at_tap,
            after_rnr,
            retransmitted,
            nak_to_resend_ns,
        } => {
            let lat = nak_to_resend_ns
                .map(|l| format!("; NAK→resend up to {} (per-flow median)", duration(l)))
                .unwrap_or_default();
            let after = naks.saturating_sub(*gap_at_tap);
            let place = match (gap_at_tap, after) {
                (_, 0) => "lost before the tap (the tap saw them missing too)".to_string(),
                (0, _) => "lost after the tap (they passed it; the responder never got them)"
                    .to_string(),
                (b, a) => format!(
                    "{b} lost before the tap (the tap saw them missing too), {a} after it (they passed it)"
                ),
            };
            let rnr = if *after_rnr > 0 {
                format!(" ({after_rnr} more sequence NAKs followed RNR NAKs: not loss, see the RNR finding)")
            } else {
                String::new()
            };
            format!(
                "{naks} NAKs (PSN sequence error): packets {place}, resent with go-back-N — {retransmitted} packets retransmitted after NAKs{lat}{rnr}{at}; on {w}"
            )
        }
        FindingKind::TimeoutRetransmissions {
            packets,
            episodes,
            gap_at_tap,
            acked,
            observed_ns,
        } => {
            let obs = observed_ns
                .map(|l| format!(" after about {}", duration(l)))
                .unwrap_or_default();
            let why = if acked == episodes {
                "the tap saw the responder acknowledge them before the retry: the ACKs were lost after the tap, or were still on their way when the requester's timer fired — a capture at the requester would tell".to_string()
            } else if gap_at_tap == episodes {
                "the PSNs they resent from had not passed the tap (never, or not in their latest sending): the tail of a burst was lost before the tap, so nothing behind it could cause a NAK".to_string()
            } else {
                let other = episodes - gap_at_tap - acked;
                format!(
                    "of {episodes} timer retries, {gap_at_tap} resent from a PSN that never passed the tap (lost before it), {acked} from a PSN the tap saw acknowledged (its ACK lost between the tap and the requester, or late), and {other} from a PSN that passed the tap unacknowledged (the packet lost after the tap, the rest of its burst lost before it, or its ACK lost) — one tap cannot tell, a capture at the other end would"
                )
            };
            format!(
                "{packets} packets resent after a transport timeout{obs} with no NAK: {why}{at}; on {w}"
            )
        }
        FindingKind::UnrecoveredGaps { gaps, exhausted } => {
            let why = if *exhausted > 0 {
                "lost before the tap and never resent: the requester gave up (see the retries exhausted)"
            } else {
                "lost before the tap and NAKed, but no resend of the missing PSNs was captured"
            };
            format!("{gaps} PSN gaps never filled: {why}; on {w}")
        }
        FindingKind::UdPsnJumps { jumps } => format!(
            "{jumps} times a UD sender's PSN jumped past the next one: a datagram lost before the tap (UD never resends), or one sent to a destination this flow is not (a UD QP numbers all it sends in one sequence) — one tap cannot tell, a capture at the sender would; on {w}"
        ),
        FindingKind::RnrNak {
            naks,
            followup_naks,
            reads,
            resent,
            waits,
        } => {
            let waits: Vec<String> = waits
                .iter()
                .map(|x| {
                    format!(
                        "requested {:.0} µs, waited {} median",
                        x.requested_us_mean,
                        duration(x.waited_median_ns)
                    )
                })
                .collect();
            let waits = if waits.is_empty() {
                String::new()
            } else {
                format!(" ({})", waits.join("; "))
            };
            let why = if *reads {
                "the responder refused READ Requests it could not take on (overloaded: too many READs outstanding; no receive buffer is involved), not a network loss"
            } else {
                "the receiver had no receive buffer posted (not a network loss)"
            };
            let followup = if *followup_naks > 0 {
                format!("; {followup_naks} sequence NAKs followed them (the packets behind each one dropped arrived out of sequence: not loss)")
            } else {
                String::new()
            };
            format!(
                "{naks} RNR NAKs: {why}; {resent} packets resent after the wait{waits}{followup}{at}; on {w}"
            )
        }
        FindingKind::ReadRerequests {
            rerequests,
            resent,
            missing,
        } => {
            let place = if *missing > 0 {
                "the tap saw them missing: lost before the tap"
            } else {
                "the tap saw none missing: lost after the tap, or a resent run cut short"
            };
            format!(
                "{rerequests} READ Requests re-issued for the rest of a READ whose responses went missing ({place}); {resent} READ responses sent again{at}; on {w}"
            )
        }
        _ => return None,
    })
}
