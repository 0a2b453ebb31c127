//! The whole run's numbers (`Totals`, with the meanings of `captures/README.md`), the
//! rates derived from them and the latency figures every flow and the run carry.

use serde::Serialize;

/// Whole-run numbers. The keys named in `captures/README.md` keep exactly those meanings.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Totals {
    /// Every frame read.
    pub frames: u64,
    /// Frames with a BTH (RoCE v2, RoCE v1, native IB).
    pub roce_packets: u64,
    /// Flows (src, dst, DestQP) seen, live or expired.
    pub flows: u64,
    /// RC connections: pairs of flows found to be the two directions of one connection.
    pub connections: u64,
    /// Flows retired because their last frame was older than the idle timeout (a frame
    /// of the same key after that begins a new flow); flows live at the end are not.
    pub flows_expired: u64,
    /// Times a request came with a PSN no live connection could send next (more than
    /// 2^22 from the expected one): its QP number was reused by a new connection, whose
    /// flows begin anew.
    pub flows_restarted: u64,
    /// NAKs with syndrome 0x60 (PSN sequence error); the others by code below.
    pub nak_psn_seq: u64,
    /// NAKs with AETH NAK code 1 (invalid request).
    pub nak_invalid_request: u64,
    /// NAKs with AETH NAK code 2 (remote access error).
    pub nak_remote_access: u64,
    /// NAKs with AETH NAK code 3 (remote operational error).
    pub nak_remote_operational: u64,
    /// NAKs with AETH NAK code 4 (invalid RD request).
    pub nak_invalid_rd_request: u64,
    /// NAKs with a reserved AETH NAK code (5 and up).
    pub nak_reserved: u64,
    /// RNR NAKs (syndrome 0x20-0x3F).
    pub rnr_nak: u64,
    /// Times a stream's PSN jumped past the next expected one: a request stream, or the
    /// responses of a READ (a packet lost upstream of the tap, or missed by the capture).
    pub psn_gap_events: u64,
    /// PSNs skipped by those jumps.
    pub missing_psns: u64,
    /// Gaps whose first missing PSN later passed the tap in a resend (within the gap
    /// timeout).
    pub recovered_gap_events: u64,
    /// Gaps not filled within the gap timeout (`gaps_filled_late` of them were later).
    pub unrecovered_gap_events: u64,
    /// Unfilled gaps with no NAK naming them (or that the responder acknowledged
    /// anyway): most likely packets the capture missed.
    pub capture_loss_gap_events: u64,
    /// Of the unrecovered gaps, those filled after all, later than the gap timeout
    /// (counted as unrecovered when the timeout passed, while the flow lived).
    pub gaps_filled_late: u64,
    /// Packets sent again: go-back-N resends after a NAK (the one filling a gap
    /// included), after an RNR NAK, after a timeout, and READ responses sent again after a
    /// re-issued READ Request (that request itself is not counted).
    pub retransmitted_packets: u64,
    /// Retries the requester started (go-back-N rewinds, READ requests asked again),
    /// by what started them: a NAK, an RNR NAK, the requester's timer, READ responses
    /// missing.
    pub retransmission_episodes: u64,
    /// Retransmission episodes started by a NAK (PSN sequence error).
    pub nak_retransmission_episodes: u64,
    /// Retransmission episodes started by an RNR NAK.
    pub rnr_retransmission_episodes: u64,
    /// Retransmission episodes started by the requester's timer (no NAK, the original was
    /// seen).
    pub timeout_retransmission_episodes: u64,
    /// READ Requests asked again because READ responses were missing.
    pub read_retransmission_episodes: u64,
    /// Request packets seen again that nothing asked for, within moments of the first
    /// (the same IPv4 identification): copies made by the network, not resends.
    pub duplicate_packets: u64,
    /// Originals that passed the tap after later PSNs and filled their gap with no
    /// rewind: reordering, not loss.
    pub reordered_packets: u64,
    /// Packets resent after a NAK.
    pub nak_retransmissions: u64,
    /// Packets resent after an RNR NAK.
    pub rnr_retransmissions: u64,
    /// Packets resent with no NAK although the original passed the tap.
    pub timeout_retransmissions: u64,
    /// READ responses sent again for a re-issued READ Request.
    pub read_retransmissions: u64,
    /// Packets resent with no NAK seen and the original never seen either.
    pub unknown_retransmissions: u64,
    /// RDMA READ Requests seen (new ones, not re-issued).
    pub reads: u64,
    /// READ Requests re-issued for the rest of a READ (PSN inside the original's range).
    pub read_rerequests: u64,
    /// READ response PSNs that never passed the tap the first time (response gaps).
    pub read_missing_responses: u64,
    /// READ responses sent again (after a re-issued or resent READ Request), including the
    /// ones that fill a response gap.
    pub read_responses_resent: u64,
    /// Packets with ECN = CE (IP or GRH traffic class).
    pub ce_marked: u64,
    /// Packets with ECN = Not-ECT (00).
    pub ecn_not_ect: u64,
    /// Packets with ECN = ECT(0) (10).
    pub ecn_ect0: u64,
    /// Packets with ECN = ECT(1) (01).
    pub ecn_ect1: u64,
    /// CNPs (opcode 0x81).
    pub cnp: u64,
    /// CE marks after a flow's last CNP, never answered.
    pub ce_without_cnp: u64,
    /// CNPs that answered no CE mark: the flows' counts plus CNPs with no CE-marked flow in
    /// the reverse direction at all.
    pub cnp_without_ce: u64,
    /// RoCE packets whose ICRC was computed and matched.
    pub icrc_ok: u64,
    /// RoCE packets whose ICRC was computed and did not match.
    pub icrc_bad: u64,
    /// RoCE packets whose ICRC was cut by the snaplen or not computed.
    pub icrc_unchecked: u64,
    /// Of those, the packets whose ICRC the capture's snaplen cut off.
    pub icrc_cut: u64,
    /// The snaplen that cut them: the captured length of those packets, when they all
    /// have the same (0 when none was cut, or when they were cut at different lengths).
    pub cut_at_bytes: u32,
    /// Frames a dissector rejected as malformed (a header field with an impossible value).
    pub malformed: u64,
    /// Frames cut short before a header they announce was complete.
    pub truncated: u64,
    /// Frames of protocols the decoder does not go into (TCP, IPv6 ND, ...).
    pub unsupported: u64,
    /// MAC control PAUSE and PFC frames that pause at least one priority (XOFF).
    pub pfc_pause_frames: u64,
    /// PFC frames that only resume priorities (every enabled quanta 0, XON).
    pub pfc_resume_frames: u64,
    /// Times a flow's priority was paused by PFC after its previous packet and its next
    /// packet came after the pause started: stalls of live traffic.
    pub pfc_stalls: u64,
    /// ARP requests seen, retries included, over every interface.
    pub arp_requests: u64,
    /// ARP replies seen, over every interface.
    pub arp_replies: u64,
    /// ARP request packets (retries included) that no reply on their interface answered.
    pub arp_unanswered: u64,
    /// ARP asks (interface, sender, target) whose sender and target are in different
    /// subnets (`--arp-prefix-len`, /24), link-local 169.254.0.0/16 never counting.
    pub arp_cross_subnet: u64,
    /// Of those, the asks never answered on their interface (or retried 3+ times after
    /// their last answer): the symptom of a pod without source-based routing.
    pub arp_cross_subnet_unanswered: u64,
    /// (address, peer) pairs where the address answered ARP or received IP from the peer
    /// on one interface, sent nothing back there, and sent ARP/IP to the peer on another.
    pub arp_reply_path_mismatch: u64,
    /// (interface, address) claimed by two different MACs (ARP sender).
    pub arp_duplicate_address: u64,
    /// ARP asks, address pairs and claims not followed because a table was full.
    pub arp_state_dropped: u64,
    /// Events that happened but were not stored because the event list was full
    /// (`max_events`).
    pub events_dropped: u64,
    /// Inputs that end in the middle of a record (a capture killed mid-write, a full
    /// disk, a partial copy): every complete frame before the cut was analyzed.
    pub input_cut_short: u64,
    /// Flows counted in the totals whose summaries were not kept (beyond
    /// `--max-flows`, to bound memory).
    pub flow_summaries_dropped: u64,
    /// RC connections (of the flow summaries kept) whose two directions carry different
    /// DSCPs or VLAN PCPs.
    pub qos_direction_mismatch: u64,
    /// Data packets (CNPs and ACKs aside) off the marked (non-zero) DSCP that carries the
    /// most data; 0 when all data rides one DSCP.
    pub data_dscp_mixed: u64,
    /// Data packets on DSCP 0 when other data is marked (0 otherwise).
    pub data_dscp0: u64,
    /// Not-ECT data packets on a DSCP whose other data packets are ECN-capable.
    pub data_not_ect: u64,
    /// CNPs on another DSCP than the data of the flow they answer.
    pub cnp_other_dscp: u64,
    /// Hosts (source addresses of the flow summaries kept) that sent both RoCE v1 and
    /// RoCE v2.
    pub roce_v1_and_v2: u64,
    /// Of `nak_psn_seq`, the NAKs that follow an RNR NAK for the same PSN (the responder
    /// dropped the packet it had no buffer for): not network loss.
    pub nak_psn_seq_after_rnr: u64,
    /// Of `nak_psn_seq`, the NAKs naming a PSN the tap saw missing: lost before the tap.
    pub nak_psn_seq_gap_at_tap: u64,
    /// Timer retries whose first PSN had never passed the tap: lost before the tap.
    pub timeout_episodes_gap_at_tap: u64,
    /// Timer retries of a PSN an ACK that passed the tap had covered: the ACK was lost
    /// after the tap, on its way to the requester.
    pub timeout_episodes_acked: u64,
    /// Request streams (QPs) that retried one PSN again and again with no progress and
    /// then fell silent: they exhausted their retries.
    pub retry_exhausted: u64,
    /// Request streams that stopped in the middle of a message and never resumed.
    pub stalled_connections: u64,
    /// UD: times a flow's PSN jumped past the next one.
    pub ud_psn_jumps: u64,
    /// QPs a fatal NAK ended (Invalid Request, Remote Access or Remote Operational
    /// Error: the requester's QP goes to the error state), counted once per flow that
    /// carried such a NAK.
    pub qps_failed: u64,
    /// Of `nak_psn_seq`, the NAKs reordering before the tap explains (not loss).
    pub nak_psn_seq_reorder: u64,
}

impl Totals {
    /// Adds the totals of another part of the same traffic, analyzed apart (the agent's
    /// lanes of one interface: each frame in one part, each host pair in one part): every
    /// count summed; `cut_at_bytes` kept where both parts cut at the same length or only
    /// one cut any, 0 where they cut at different lengths.
    pub fn absorb(&mut self, o: &Totals) {
        // Destructured without `..`: a new field does not compile until it is added here.
        let Totals {
            frames,
            roce_packets,
            flows,
            connections,
            flows_expired,
            flows_restarted,
            nak_psn_seq,
            nak_invalid_request,
            nak_remote_access,
            nak_remote_operational,
            nak_invalid_rd_request,
            nak_reserved,
            rnr_nak,
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
            reads,
            read_rerequests,
            read_missing_responses,
            read_responses_resent,
            ce_marked,
            ecn_not_ect,
            ecn_ect0,
            ecn_ect1,
            cnp,
            ce_without_cnp,
            cnp_without_ce,
            icrc_ok,
            icrc_bad,
            icrc_unchecked,
            icrc_cut,
            cut_at_bytes,
            malformed,
            truncated,
            unsupported,
            pfc_pause_frames,
            pfc_resume_frames,
            pfc_stalls,
            arp_requests,
            arp_replies,
            arp_unanswered,
            arp_cross_subnet,
            arp_cross_subnet_unanswered,
            arp_reply_path_mismatch,
            arp_duplicate_address,
            arp_state_dropped,
            events_dropped,
            input_cut_short,
            flow_summaries_dropped,
            qos_direction_mismatch,
            data_dscp_mixed,
            data_dscp0,
            data_not_ect,
            cnp_other_dscp,
            roce_v1_and_v2,
            nak_psn_seq_after_rnr,
            nak_psn_seq_gap_at_tap,
            timeout_episodes_gap_at_tap,
            timeout_episodes_acked,
            retry_exhausted,
            stalled_connections,
            ud_psn_jumps,
            qps_failed,
            nak_psn_seq_reorder,
        } = *o;
        self.cut_at_bytes = match (self.icrc_cut, icrc_cut) {
            (_, 0) => self.cut_at_bytes,
            (0, _) => cut_at_bytes,
            _ if self.cut_at_bytes == cut_at_bytes => cut_at_bytes,
            _ => 0,
        };
        self.frames += frames;
        self.roce_packets += roce_packets;
        self.flows += flows;
        self.connections += connections;
        self.flows_expired += flows_expired;
        self.flows_restarted += flows_restarted;
        self.nak_psn_seq += nak_psn_seq;
        self.nak_invalid_request += nak_invalid_request;
        self.nak_remote_access += nak_remote_access;
        self.nak_remote_operational += nak_remote_operational;
        self.nak_invalid_rd_request += nak_invalid_rd_request;
        self.nak_reserved += nak_reserved;
        self.rnr_nak += rnr_nak;
        self.psn_gap_events += psn_gap_events;
        self.missing_psns += missing_psns;
        self.recovered_gap_events += recovered_gap_events;
        self.unrecovered_gap_events += unrecovered_gap_events;
        self.capture_loss_gap_events += capture_loss_gap_events;
        self.gaps_filled_late += gaps_filled_late;
        self.retransmitted_packets += retransmitted_packets;
        self.retransmission_episodes += retransmission_episodes;
        self.nak_retransmission_episodes += nak_retransmission_episodes;
        self.rnr_retransmission_episodes += rnr_retransmission_episodes;
        self.timeout_retransmission_episodes += timeout_retransmission_episodes;
        self.read_retransmission_episodes += read_retransmission_episodes;
        self.duplicate_packets += duplicate_packets;
        self.reordered_packets += reordered_packets;
        self.nak_retransmissions += nak_retransmissions;
        self.rnr_retransmissions += rnr_retransmissions;
        self.timeout_retransmissions += timeout_retransmissions;
        self.read_retransmissions += read_retransmissions;
        self.unknown_retransmissions += unknown_retransmissions;
        self.reads += reads;
        self.read_rerequests += read_rerequests;
        self.read_missing_responses += read_missing_responses;
        self.read_responses_resent += read_responses_resent;
        self.ce_marked += ce_marked;
        self.ecn_not_ect += ecn_not_ect;
        self.ecn_ect0 += ecn_ect0;
        self.ecn_ect1 += ecn_ect1;
        self.cnp += cnp;
        self.ce_without_cnp += ce_without_cnp;
        self.cnp_without_ce += cnp_without_ce;
        self.icrc_ok += icrc_ok;
        self.icrc_bad += icrc_bad;
        self.icrc_unchecked += icrc_unchecked;
        self.icrc_cut += icrc_cut;
        self.malformed += malformed;
        self.truncated += truncated;
        self.unsupported += unsupported;
        self.pfc_pause_frames += pfc_pause_frames;
        self.pfc_resume_frames += pfc_resume_frames;
        self.pfc_stalls += pfc_stalls;
        self.arp_requests += arp_requests;
        self.arp_replies += arp_replies;
        self.arp_unanswered += arp_unanswered;
        self.arp_cross_subnet += arp_cross_subnet;
        self.arp_cross_subnet_unanswered += arp_cross_subnet_unanswered;
        self.arp_reply_path_mismatch += arp_reply_path_mismatch;
        self.arp_duplicate_address += arp_duplicate_address;
        self.arp_state_dropped += arp_state_dropped;
        self.events_dropped += events_dropped;
        self.input_cut_short += input_cut_short;
        self.flow_summaries_dropped += flow_summaries_dropped;
        self.qos_direction_mismatch += qos_direction_mismatch;
        self.data_dscp_mixed += data_dscp_mixed;
        self.data_dscp0 += data_dscp0;
        self.data_not_ect += data_not_ect;
        self.cnp_other_dscp += cnp_other_dscp;
        self.roce_v1_and_v2 += roce_v1_and_v2;
        self.nak_psn_seq_after_rnr += nak_psn_seq_after_rnr;
        self.nak_psn_seq_gap_at_tap += nak_psn_seq_gap_at_tap;
        self.timeout_episodes_gap_at_tap += timeout_episodes_gap_at_tap;
        self.timeout_episodes_acked += timeout_episodes_acked;
        self.retry_exhausted += retry_exhausted;
        self.stalled_connections += stalled_connections;
        self.ud_psn_jumps += ud_psn_jumps;
        self.qps_failed += qps_failed;
        self.nak_psn_seq_reorder += nak_psn_seq_reorder;
    }
}

/// Rates derived from the totals (usable in `--fail-on` rules).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Derived {
    /// Capture time from the earliest to the latest frame, in seconds (0 for fewer than
    /// two timestamps).
    pub duration_s: f64,
    /// CNPs per second of capture time (0 when the duration is 0).
    pub cnp_per_s: f64,
    /// CE-marked packets per second of capture time (0 when the duration is 0).
    pub ce_per_s: f64,
    /// NAKs (every code, RNR NAKs not included) per second of capture time.
    pub nak_per_s: f64,
    /// NAKs of every code, RNR NAKs not included.
    pub naks: u64,
    /// Retransmitted packets divided by RoCE packets (0 when there were none).
    pub retransmit_ratio: f64,
    /// CE-marked packets divided by RoCE packets (0 when there were none).
    pub ce_ratio: f64,
}

/// min / median / p99 / max of a latency, every key always present (CSV columns).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Latency {
    /// Samples recorded.
    pub count: u64,
    /// Smallest sample, ns; `None` (every field below too) when there are no samples.
    pub min_ns: Option<u64>,
    /// Median sample, ns (approximate: the log histogram's bucket); `None` without samples.
    pub median_ns: Option<u64>,
    /// 99th percentile, ns (approximate, as the median); `None` without samples.
    pub p99_ns: Option<u64>,
    /// Largest sample, ns; `None` without samples.
    pub max_ns: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::Totals;

    #[test]
    fn absorb_adds_every_count_and_keeps_a_common_cut() {
        let a = Totals {
            frames: 10,
            nak_psn_seq: 2,
            icrc_cut: 3,
            cut_at_bytes: 128,
            ..Totals::default()
        };
        let b = Totals {
            frames: 5,
            nak_psn_seq: 1,
            retry_exhausted: 1,
            ..Totals::default()
        };
        let mut t = a;
        t.absorb(&b);
        assert_eq!((t.frames, t.nak_psn_seq, t.retry_exhausted), (15, 3, 1));
        // Only one side cut any ICRC: its length.
        assert_eq!((t.icrc_cut, t.cut_at_bytes), (3, 128));
        let mut t = b;
        t.absorb(&a);
        assert_eq!((t.icrc_cut, t.cut_at_bytes), (3, 128));
        // Both cut at the same length: kept; at different lengths: 0, as one analyzer says.
        let mut t = a;
        t.absorb(&a);
        assert_eq!((t.icrc_cut, t.cut_at_bytes), (6, 128));
        let other = Totals {
            icrc_cut: 1,
            cut_at_bytes: 96,
            ..Totals::default()
        };
        t.absorb(&other);
        assert_eq!((t.icrc_cut, t.cut_at_bytes), (7, 0));
    }
}
