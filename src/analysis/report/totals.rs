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
