//! A flow's counters by their report keys: the one list of them, in the order every
//! report writes them. Serde goes through it (`Serialize` for [`FlowCounters`], flattened
//! into a flow's JSON object and CSV row), and so does the JSON writer of flows
//! (`crate::report::pretty_json`), which skips serde for speed.

use crate::analysis::flow::FlowCounters;
use serde::ser::{Serialize, SerializeStruct, Serializer};

/// How many counters a flow has.
pub const N_COUNTERS: usize = 45;

impl FlowCounters {
    /// Every counter with its report key, in report order. (A counter added to the
    /// struct and not here does not compile: the struct is taken apart whole.)
    pub fn named(&self) -> [(&'static str, u64); N_COUNTERS] {
        let FlowCounters {
            psn_gap_events,
            missing_psns,
            recovered_gap_events,
            unrecovered_gap_events,
            capture_loss_gap_events,
            gaps_filled_late,
            retransmitted_packets,
            retransmission_episodes,
            nak_retransmission_episodes,
            rnr_retransmission_episodes,
            timeout_retransmission_episodes,
            read_retransmission_episodes,
            duplicate_packets,
            reordered_packets,
            nak_retransmissions,
            rnr_retransmissions,
            timeout_retransmissions,
            read_retransmissions,
            unknown_retransmissions,
            nak_psn_seq,
            nak_invalid_request,
            nak_remote_access,
            nak_remote_operational,
            nak_invalid_rd_request,
            nak_reserved,
            rnr_nak,
            reads,
            read_rerequests,
            read_responses_resent,
            read_missing_responses,
            ce_marked,
            cnp_sent,
            cnp_received,
            ce_without_cnp,
            cnp_without_ce,
            pfc_stalls,
            pfc_stall_ns,
            nak_psn_seq_after_rnr,
            nak_psn_seq_gap_at_tap,
            timeout_episodes_gap_at_tap,
            timeout_episodes_acked,
            retry_exhausted,
            stalled,
            ud_psn_jumps,
            nak_psn_seq_reorder,
        } = *self;
        [
            ("psn_gap_events", psn_gap_events),
            ("missing_psns", missing_psns),
            ("recovered_gap_events", recovered_gap_events),
            ("unrecovered_gap_events", unrecovered_gap_events),
            ("capture_loss_gap_events", capture_loss_gap_events),
            ("gaps_filled_late", gaps_filled_late),
            ("retransmitted_packets", retransmitted_packets),
            ("retransmission_episodes", retransmission_episodes),
            ("nak_retransmission_episodes", nak_retransmission_episodes),
            ("rnr_retransmission_episodes", rnr_retransmission_episodes),
            (
                "timeout_retransmission_episodes",
                timeout_retransmission_episodes,
            ),
            ("read_retransmission_episodes", read_retransmission_episodes),
            ("duplicate_packets", duplicate_packets),
            ("reordered_packets", reordered_packets),
            ("nak_retransmissions", nak_retransmissions),
            ("rnr_retransmissions", rnr_retransmissions),
            ("timeout_retransmissions", timeout_retransmissions),
            ("read_retransmissions", read_retransmissions),
            ("unknown_retransmissions", unknown_retransmissions),
            ("nak_psn_seq", nak_psn_seq),
            ("nak_invalid_request", nak_invalid_request),
            ("nak_remote_access", nak_remote_access),
            ("nak_remote_operational", nak_remote_operational),
            ("nak_invalid_rd_request", nak_invalid_rd_request),
            ("nak_reserved", nak_reserved),
            ("rnr_nak", rnr_nak),
            ("reads", reads),
            ("read_rerequests", read_rerequests),
            ("read_responses_resent", read_responses_resent),
            ("read_missing_responses", read_missing_responses),
            ("ce_marked", ce_marked),
            ("cnp_sent", cnp_sent),
            ("cnp_received", cnp_received),
            ("ce_without_cnp", ce_without_cnp),
            ("cnp_without_ce", cnp_without_ce),
            ("pfc_stalls", pfc_stalls),
            ("pfc_stall_ns", pfc_stall_ns),
            ("nak_psn_seq_after_rnr", nak_psn_seq_after_rnr),
            ("nak_psn_seq_gap_at_tap", nak_psn_seq_gap_at_tap),
            ("timeout_episodes_gap_at_tap", timeout_episodes_gap_at_tap),
            ("timeout_episodes_acked", timeout_episodes_acked),
            ("retry_exhausted", retry_exhausted),
            ("stalled", stalled),
            ("ud_psn_jumps", ud_psn_jumps),
            ("nak_psn_seq_reorder", nak_psn_seq_reorder),
        ]
    }
}

impl Serialize for FlowCounters {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("FlowCounters", N_COUNTERS)?;
        for (key, v) in self.named() {
            st.serialize_field(key, &v)?;
        }
        st.end()
    }
}
