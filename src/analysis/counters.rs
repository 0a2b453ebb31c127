//! The one list of a flow's counters: each with its meaning, its report key (its name)
//! and the run total it adds to when the flow is retired (`_`: none of that name; the
//! totals count it otherwise or not at all). [`counter_list!`] hands the list to a macro
//! that makes something of every counter: `flow.rs` declares [`FlowCounters`] with it
//! (the struct, all zeros, the keys in report order), the report builder the sums into
//! `Totals`. A counter added here is in the struct, the JSON/CSV keys and the sum, or the
//! sum does not compile until its total is named.
//!
//! [`FlowCounters`]: super::flow::FlowCounters

/// Calls `$then!` with every counter (`/// doc`, `name => total,`), in report order.
macro_rules! counter_list {
    ($then:ident) => {
        $then! {
            /// Times the request stream's PSN (or a READ's response PSNs) jumped past the next
            /// expected one.
            psn_gap_events => psn_gap_events,
            /// PSNs skipped by those jumps.
            missing_psns => missing_psns,
            /// Gaps whose first missing PSN later passed the tap in a resend.
            recovered_gap_events => recovered_gap_events,
            /// Gaps not filled within the gap timeout, or by the time the flow ended.
            unrecovered_gap_events => unrecovered_gap_events,
            /// Of the unrecovered gaps, those no NAK named or that the responder acknowledged
            /// anyway: most likely packets the capture missed.
            capture_loss_gap_events => capture_loss_gap_events,
            /// Of the unrecovered gaps, those filled after all, later than the gap timeout.
            gaps_filled_late => gaps_filled_late,
            /// Packets sent again, whatever the trigger (the sum of the five `*_retransmissions`
            /// below).
            retransmitted_packets => retransmitted_packets,
            /// Retries the requester started (rewinds), by what started them.
            retransmission_episodes => retransmission_episodes,
            /// Episodes started by a NAK (PSN sequence error).
            nak_retransmission_episodes => nak_retransmission_episodes,
            /// Episodes started by an RNR NAK.
            rnr_retransmission_episodes => rnr_retransmission_episodes,
            /// Episodes started by the requester's timer (no NAK, the original was seen).
            timeout_retransmission_episodes => timeout_retransmission_episodes,
            /// READ Requests asked again because READ responses were missing.
            read_retransmission_episodes => read_retransmission_episodes,
            /// Request packets seen again that the requester did not resend: copies made by
            /// the network.
            duplicate_packets => duplicate_packets,
            /// Originals that passed the tap after later PSNs (reordering), not resends.
            reordered_packets => reordered_packets,
            /// Packets resent after a NAK.
            nak_retransmissions => nak_retransmissions,
            /// Packets resent after an RNR NAK.
            rnr_retransmissions => rnr_retransmissions,
            /// Packets resent with no NAK although the original passed the tap (the requester's
            /// timer).
            timeout_retransmissions => timeout_retransmissions,
            /// READ responses sent again for a re-issued READ Request.
            read_retransmissions => read_retransmissions,
            /// Packets resent with no NAK seen and the original never seen either.
            unknown_retransmissions => unknown_retransmissions,
            /// NAKs this side sent with AETH NAK code 0 (PSN sequence error).
            nak_psn_seq => nak_psn_seq,
            /// NAKs with AETH NAK code 1 (invalid request).
            nak_invalid_request => nak_invalid_request,
            /// NAKs with AETH NAK code 2 (remote access error).
            nak_remote_access => nak_remote_access,
            /// NAKs with AETH NAK code 3 (remote operational error).
            nak_remote_operational => nak_remote_operational,
            /// NAKs with AETH NAK code 4 (invalid RD request).
            nak_invalid_rd_request => nak_invalid_rd_request,
            /// NAKs with a reserved AETH NAK code (5 and up).
            nak_reserved => nak_reserved,
            /// RNR NAKs this side sent (AETH syndrome 0x20-0x3F).
            rnr_nak => rnr_nak,
            /// RDMA READ Requests sent (new ones, not re-issued).
            reads => reads,
            /// READ Requests re-issued for the rest of a READ (PSN inside the original's range).
            read_rerequests => read_rerequests,
            /// READ responses sent again (after a re-issued READ or a resent READ Request),
            /// including the ones that fill a response gap.
            read_responses_resent => read_responses_resent,
            /// READ response PSNs that never passed the tap the first time (response gaps).
            read_missing_responses => read_missing_responses,
            /// Packets of this flow with ECN = CE.
            ce_marked => _,
            /// CNPs this flow carried (sent by this side against the other direction's CE marks).
            cnp_sent => _,
            /// CNPs that answered this flow's traffic (received by this flow's sender).
            cnp_received => _,
            /// CE marks after the flow's last CNP, never answered by one (counted when the flow
            /// ends).
            ce_without_cnp => ce_without_cnp,
            /// CNPs received when no CE mark had come since the previous one.
            cnp_without_ce => cnp_without_ce,
            /// Times a packet of this flow came after a PFC pause of its priority began and after
            /// the flow's previous packet: the flow was stalled.
            pfc_stalls => pfc_stalls,
            /// Those stalls' length summed, ns (pause start -> the flow's next packet).
            pfc_stall_ns => _,
            /// Of `nak_psn_seq`, the NAKs that named the PSN of the RNR NAK just before them: the
            /// responder dropped the packet it had no buffer for, and those behind it arrive out
            /// of sequence (an RNR drop, not a network loss).
            nak_psn_seq_after_rnr => nak_psn_seq_after_rnr,
            /// Of `nak_psn_seq`, the NAKs naming a PSN of a gap the tap saw in the request stream:
            /// the packet was lost before the tap.
            nak_psn_seq_gap_at_tap => nak_psn_seq_gap_at_tap,
            /// Timer retries whose first PSN had never passed the tap: lost before it.
            timeout_episodes_gap_at_tap => timeout_episodes_gap_at_tap,
            /// Timer retries of a PSN an ACK that passed the tap had covered: the ACK was lost
            /// between the tap and the requester.
            timeout_episodes_acked => timeout_episodes_acked,
            /// 1 when the requester retried the same PSN again and again with no progress and
            /// then fell silent: it exhausted its retries (the QP failed).
            retry_exhausted => retry_exhausted,
            /// 1 when the request stream stopped in the middle of a message and never resumed.
            stalled => stalled_connections,
            /// UD: times the sender's PSN jumped past the next one (a datagram lost before the
            /// tap, or sent to a destination this flow is not).
            ud_psn_jumps => ud_psn_jumps,
            /// Of `nak_psn_seq`, the NAKs reordering explains: naming a PSN whose late original
            /// the tap then saw, or one that passed the tap ahead of a late original (the
            /// responder, which sees the tap's order, dropped it as out of sequence).
            nak_psn_seq_reorder => nak_psn_seq_reorder,
        }
    };
}
pub(crate) use counter_list;

/// NAKs of every code (RNR NAKs not included) of a value with the NAK counters (a flow's
/// counters, the run's totals): the one place they are summed.
macro_rules! nak_sum {
    ($x:expr) => {
        $x.nak_psn_seq
            + $x.nak_invalid_request
            + $x.nak_remote_access
            + $x.nak_remote_operational
            + $x.nak_invalid_rd_request
            + $x.nak_reserved
    };
}
pub(crate) use nak_sum;
