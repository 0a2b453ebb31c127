//! The words for findings about loss, retransmission and connections that ended: what
//! happened, what caused it and where, relative to the tap, as the evidence tells — and,
//! where one tap cannot tell, that it cannot and what would.

use super::duration;
use crate::analysis::report::{AfterStop, Finding, FindingKind, NakError};
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

/// `; ` and what came after a stop: the CM's disconnect, or nothing more of the
/// connection in the capture (whose last frame may be anything else); empty when the
/// stream's last packet is the capture's last frame.
fn after_stop(r: &Report, a: AfterStop, last_ns: u64) -> String {
    match a {
        AfterStop::Nothing if r.last_ts_ns <= last_ns => String::new(),
        AfterStop::Nothing => format!(
            "; after it the capture holds nothing more of this connection's requests and no CM disconnect for it (its last frame came {} later)",
            duration(r.last_ts_ns.saturating_sub(last_ns))
        ),
        AfterStop::Dreq {
            by_requester,
            after_ns,
            dreqs,
            drep_after_ns,
        } => {
            let who = if by_requester {
                "the requester closed the connection"
            } else {
                "the other side closed the connection"
            };
            let sent = if dreqs > 1 {
                format!(", sent {dreqs} times")
            } else {
                String::new()
            };
            let answer = match drep_after_ns {
                Some(d) => format!("a DREP answered it {} later", duration(d)),
                None => "no DREP answered it (the peer's application never closed its side)".to_string(),
            };
            format!(
                "; then {who}: a CM DREQ {} after its last packet{sent}; {answer}",
                duration(after_ns)
            )
        }
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
            after,
        } => format!(
            "{qps} {} gave up: the requester retried PSN {psn} {retries} times over {} with no progress, then fell silent (last packet at {}) — retries exhausted, the QP went to the error state (IBV_WC_RETRY_EXC_ERR, status 12; NCCL's \"error 12\"); the traffic stopped{at}{}; on {w}",
            if *qps == 1 { "QP" } else { "QPs" },
            duration(*over_ns),
            at_time(r, *last_ns),
            after_stop(r, *after, *last_ns),
        ),
        FindingKind::ConnectionStalled {
            connections,
            psn,
            retries,
            over_ns,
            last_ns,
            after,
        } if *retries > 0 => format!(
            "{connections} {} made no progress: the requester retried PSN {psn} {retries} times over {} with no ACK past it and was still retrying when the capture ended (last packet at {}) — it had not given up by then; the requests passed the tap, so they were lost after it, their ACKs were lost, or the responder stopped answering — a capture at the other end would tell{at}{}; on {w}",
            connections_word(*connections),
            duration(*over_ns),
            at_time(r, *last_ns),
            after_stop(r, *after, *last_ns),
        ),
        FindingKind::ConnectionStalled {
            connections,
            psn,
            last_ns,
            after,
            ..
        } => format!(
            "{connections} {} stopped in the middle of a message at {} (PSN {psn} never came) and never resumed, with no retry reaching the tap: the requester's packets stopped arriving before the tap (a link that died, a requester that gave up or crashed){}; a capture at the requester would show its retries{}; on {w}",
            connections_word(*connections),
            at_time(r, *last_ns),
            if *after == AfterStop::Nothing {
                " — or the capture ended mid-transfer"
            } else {
                ""
            },
            after_stop(r, *after, *last_ns),
        ),
        FindingKind::ReorderedPackets {
            packets,
            naks: 0,
            ..
        } => format!(
            "{packets} packets arrived after later PSNs and filled their gap with no resend: reordering on the path, not loss (the responder may still NAK and the requester resend); on {w}"
        ),
        FindingKind::ReorderedPackets {
            packets,
            naks,
            resent,
        } => {
            let resent = if *resent > 0 {
                format!(" — {resent} packets resent after them")
            } else {
                String::new()
            };
            format!(
                "{packets} packets arrived after later PSNs (reordering before the tap, which saw them late, in the order the responder got them), and {naks} NAKs (PSN sequence error) came of it, not of loss: a NAK for a PSN whose late original then arrived, or for one that passed the tap ahead of a late packet, which the responder dropped as out of sequence; the requester resent with go-back-N{resent}; on {w}"
            )
        }
        FindingKind::QpFailed { qps, code, psn } => {
            let (name, wc) = match code {
                NakError::RemoteAccess => (
                    "Remote Access Error (a bad R_Key, address or access right)",
                    "IBV_WC_REM_ACCESS_ERR, status 10",
                ),
                NakError::RemoteOperational => (
                    "Remote Operational Error (the responder could not complete it)",
                    "IBV_WC_REM_OP_ERR, status 11",
                ),
                _ => (
                    "Invalid Request (an operation or length the responder does not accept)",
                    "IBV_WC_REM_INV_REQ_ERR, status 9",
                ),
            };
            let psn = psn.map(|p| format!(" for PSN {p}")).unwrap_or_default();
            format!(
                "{qps} {} failed: the responder answered a request with a NAK {name}{psn} — a fatal NAK: the requester's QP went to the error state ({wc}) and every request after it was flushed; the connection must be set up again{at}; on {w}",
                if *qps == 1 { "QP" } else { "QPs" },
            )
        }
        FindingKind::NakPsnSeq {
            naks,
            gap_at_tap,
            after_rnr,
            reorder,
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
            let reorder = if *reorder > 0 {
                format!(" ({reorder} more came of reordering: not loss, see the reordering finding)")
            } else {
                String::new()
            };
            format!(
                "{naks} NAKs (PSN sequence error): packets {place}, resent with go-back-N — {retransmitted} packets retransmitted after NAKs{lat}{rnr}{reorder}{at}; on {w}"
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
            let what = if *missing > 0 {
                "whose responses went missing (the tap saw them missing: lost before the tap)"
            } else {
                "whose responses all passed the tap (lost after it, the requester's timer fired before they reached it, or a resent run cut short — one tap cannot tell, a capture at the requester would)"
            };
            format!(
                "{rerequests} READ Requests re-issued for the rest of a READ {what}; {resent} READ responses sent again{at}; on {w}"
            )
        }
        _ => return None,
    })
}
