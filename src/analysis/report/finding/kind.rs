//! What each kind of finding states: the [`FindingKind`] variants with their numbers, and
//! the values some of them carry (NAK error codes, RNR waits, congestion).

use super::AfterStop;
use crate::analysis::net::ArpSymptomKind;
use crate::analysis::report::Totals;

/// A NAK code other than PSN sequence error: the QP goes to the error state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NakError {
    /// AETH NAK code 1: invalid request.
    InvalidRequest,
    /// AETH NAK code 2: remote access error (bad R_Key, address or permissions).
    RemoteAccess,
    /// AETH NAK code 3: remote operational error.
    RemoteOperational,
    /// AETH NAK code 4: invalid RD request.
    InvalidRdRequest,
    /// A reserved AETH NAK code (5 and up).
    Reserved,
}

impl NakError {
    /// Every error code, in AETH code order.
    pub const ALL: [NakError; 5] = [
        NakError::InvalidRequest,
        NakError::RemoteAccess,
        NakError::RemoteOperational,
        NakError::InvalidRdRequest,
        NakError::Reserved,
    ];

    /// The counter name: `nak_invalid_request`, ...
    pub fn code(self) -> &'static str {
        match self {
            NakError::InvalidRequest => "nak_invalid_request",
            NakError::RemoteAccess => "nak_remote_access",
            NakError::RemoteOperational => "nak_remote_operational",
            NakError::InvalidRdRequest => "nak_invalid_rd_request",
            NakError::Reserved => "nak_reserved",
        }
    }

    /// This code's NAKs in a flow's counters.
    pub fn of(self, c: &crate::analysis::flow::FlowCounters) -> u64 {
        match self {
            NakError::InvalidRequest => c.nak_invalid_request,
            NakError::RemoteAccess => c.nak_remote_access,
            NakError::RemoteOperational => c.nak_remote_operational,
            NakError::InvalidRdRequest => c.nak_invalid_rd_request,
            NakError::Reserved => c.nak_reserved,
        }
    }

    pub(super) fn total(self, t: &Totals) -> u64 {
        match self {
            NakError::InvalidRequest => t.nak_invalid_request,
            NakError::RemoteAccess => t.nak_remote_access,
            NakError::RemoteOperational => t.nak_remote_operational,
            NakError::InvalidRdRequest => t.nak_invalid_rd_request,
            NakError::Reserved => t.nak_reserved,
        }
    }
}

/// One flow's RNR wait: what the RNR NAKs asked for (mean) and the median actual wait.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RnrWait {
    pub flow: u32,
    pub requested_us_mean: f64,
    pub waited_median_ns: u64,
}

/// One flow's sender rate before its first CNP and after its last.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateChange {
    pub flow: u32,
    pub gbps_before: f64,
    pub gbps_after: f64,
}

/// CE marks and CNPs; the largest per-flow median CE→CNP latency; sender rates.
#[derive(Clone, Debug, PartialEq)]
pub struct Congestion {
    /// Packets marked ECN = CE ([`Totals::ce_marked`]).
    pub ce_marked: u64,
    /// CNPs ([`Totals::cnp`]).
    pub cnp: u64,
    /// CE marks no CNP answered ([`Totals::ce_without_cnp`]).
    pub ce_without_cnp: u64,
    /// CNPs that answered no CE mark ([`Totals::cnp_without_ce`]).
    pub cnp_without_ce: u64,
    /// The largest per-flow median CE -> CNP delay, ns; `None` when no flow measured one.
    pub ce_to_cnp_ns: Option<u64>,
    /// The first flows with a rate before their first CNP and after their last.
    pub rates: Vec<RateChange>,
}

/// What a finding is about, with the numbers it states.
#[derive(Clone, Debug, PartialEq)]
pub enum FindingKind {
    /// NAKs (PSN sequence error) and the go-back-N resends they caused; the largest
    /// per-flow median NAK→resend latency.
    NakPsnSeq {
        /// NAKs with code 0 (PSN sequence error) that no RNR drop explains.
        naks: u64,
        /// Of them, those naming a PSN the tap saw missing (lost before the tap); the
        /// rest named a PSN that passed the tap (lost after it).
        gap_at_tap: u64,
        /// Sequence NAKs that followed an RNR NAK for the same PSN (not counted in `naks`).
        after_rnr: u64,
        /// Sequence NAKs reordering explains ([`Totals::nak_psn_seq_reorder`], not
        /// counted in `naks`).
        reorder: u64,
        /// Packets resent after a NAK.
        retransmitted: u64,
        /// The largest per-flow median NAK -> resend delay, ns; `None` when none was
        /// measured.
        nak_to_resend_ns: Option<u64>,
    },
    /// Resends after a transport timeout with no NAK (tail loss); the largest per-flow
    /// median observed timeout.
    TimeoutRetransmissions {
        /// Packets resent by the requester's timer.
        packets: u64,
        /// Timer retries (rewinds).
        episodes: u64,
        /// Of them, those whose first PSN had never passed the tap (lost before it).
        gap_at_tap: u64,
        /// Of them, those of a PSN an ACK that passed the tap had covered (the ACK was
        /// lost after the tap).
        acked: u64,
        /// The largest per-flow median observed timeout, ns; `None` when none was measured.
        observed_ns: Option<u64>,
    },
    /// Gaps NAKed (or not capture loss) whose resend was never captured.
    UnrecoveredGaps {
        /// Gaps never filled ([`Totals::unrecovered_gap_events`] minus capture loss).
        gaps: u64,
        /// QPs that gave up ([`Totals::retry_exhausted`]): their gaps were never resent.
        exhausted: u64,
    },
    /// Requesters that retried one PSN again and again with no progress and then fell
    /// silent: they exhausted their retries and the QP failed (`IBV_WC_RETRY_EXC_ERR`).
    RetryExhausted {
        /// QPs (request streams) that gave up.
        qps: u64,
        /// The first one's PSN retried.
        psn: u32,
        /// How many times it was retried.
        retries: u32,
        /// From its first retry to its last packet, ns.
        over_ns: u64,
        /// Its last packet, ns.
        last_ns: u64,
        /// What came after (filled from the CM sessions at the end of a run).
        after: AfterStop,
    },
    /// Request streams that made no progress to the end: stopped in the middle of a
    /// message with no retry at the tap (the requester's packets stopped reaching the
    /// tap), or retried one PSN again and again and were still retrying at the end.
    ConnectionStalled {
        /// Such streams.
        connections: u64,
        /// The first one's next PSN, which never came (or the PSN it kept retrying).
        psn: u32,
        /// How often the first one retried that PSN with no progress before the capture
        /// ended (0: it stopped, with no retry at the tap).
        retries: u32,
        /// From its first retry to its last packet, ns (0 without retries).
        over_ns: u64,
        /// The first one's last packet, ns.
        last_ns: u64,
        /// What came after (filled from the CM sessions at the end of a run).
        after: AfterStop,
    },
    /// Requester QPs a fatal NAK ended: the responder answered a request with NAK
    /// Invalid Request, Remote Access Error or Remote Operational Error, and the QP went to
    /// the error state (every request after it flushed).
    QpFailed {
        /// QPs that failed ([`Totals::qps_failed`]).
        qps: u64,
        /// The first one's NAK code.
        code: NakError,
        /// The PSN that NAK named, when the event was kept.
        psn: Option<u32>,
    },
    /// UD: the sender's PSN jumped past the next one.
    UdPsnJumps {
        /// Jumps ([`Totals::ud_psn_jumps`]).
        jumps: u64,
    },
    /// NAKs with an error code.
    NakError {
        /// Which error code.
        code: NakError,
        /// NAKs with that code.
        naks: u64,
    },
    /// Every checked ICRC fails: the capture path rewrites it.
    IcrcNotPreserved {
        /// ICRCs that did not match.
        bad: u64,
        /// ICRCs computed (matched or not).
        checked: u64,
    },
    /// Some ICRCs fail.
    IcrcBad {
        /// ICRCs that did not match.
        bad: u64,
        /// ICRCs computed (matched or not).
        checked: u64,
    },
    /// Gaps never filled with no NAK: the capture missed them.
    CaptureLoss {
        /// Unfilled gaps counted as capture loss.
        gaps: u64,
        /// PSNs those gaps skipped.
        missing_psns: u64,
    },
    /// RNR NAKs, the packets resent after the wait, and the waits of the first flows.
    RnrNak {
        /// RNR NAKs.
        naks: u64,
        /// Sequence NAKs that followed them (the packets behind the one dropped).
        followup_naks: u64,
        /// The RNR NAKs answered READ Requests (no receive buffer is involved: the
        /// responder could not take on more READs).
        reads: bool,
        /// Packets resent after an RNR NAK.
        resent: u64,
        /// The first flows' requested and actual RNR waits.
        waits: Vec<RnrWait>,
    },
    /// READ Requests asked again and the responses sent again.
    ReadRerequests {
        /// READ Requests re-issued.
        rerequests: u64,
        /// READ responses sent again.
        resent: u64,
        /// READ response PSNs the tap saw missing ([`Totals::read_missing_responses`]).
        missing: u64,
    },
    /// Packets sent again with no NAK seen and no original captured.
    UnknownRetransmissions {
        /// Packets resent with no NAK seen and no original captured.
        packets: u64,
    },
    /// Copies made by the network.
    DuplicatePackets {
        /// Request packets the network duplicated.
        packets: u64,
    },
    /// Originals overtaken on the way, and the sequence NAKs that caused.
    ReorderedPackets {
        /// Originals that arrived after later PSNs.
        packets: u64,
        /// Sequence NAKs reordering explains ([`Totals::nak_psn_seq_reorder`]).
        naks: u64,
        /// Packets resent after NAKs, when every NAK was reordering's (else 0: the loss
        /// finding states them).
        resent: u64,
    },
    /// PFC / PAUSE frames (per sender and priority: `Report::pfc`) and flow stalls.
    PfcPause {
        /// PAUSE / PFC frames that paused at least one priority.
        frames: u64,
        /// Times a flow's traffic was stalled by a pause ([`Totals::pfc_stalls`]).
        stalls: u64,
    },
    /// ARP / reply-path symptoms of one kind (`Report::arp_symptoms`, the first in full).
    Arp {
        /// Which symptom.
        kind: ArpSymptomKind,
        /// How many times it was seen (the matching `arp_*` total).
        total: u64,
    },
    /// ARP requests nobody answered (the asks: `Report::arp`).
    ArpUnanswered {
        /// ARP request packets no reply answered.
        requests: u64,
    },
    /// CE marks and CNPs.
    Congestion(Congestion),
    /// Frames a dissector rejected as malformed.
    Malformed {
        /// How many ([`Totals::malformed`]).
        frames: u64,
    },
    /// Frames cut by the snaplen.
    Truncated {
        /// How many ([`Totals::truncated`]).
        frames: u64,
        /// Of the RoCE packets, those whose ICRC was cut ([`Totals::icrc_cut`]).
        icrc_cut: u64,
        /// Where the capture cut them ([`Totals::cut_at_bytes`]).
        snaplen: u32,
    },
    /// QoS marking the packets carry (`crate::analysis::qos`).
    Qos(crate::analysis::report::Qos),
    /// RoCE packets of flows not followed because `max_flows` flows were live (a memory
    /// bound, e.g. the agent's budget).
    FlowsNotFollowed {
        /// How many packets.
        packets: u64,
        /// The cap.
        max_flows: u64,
    },
    /// An input that ends in the middle of a record after `frames` complete frames.
    InputCutShort {
        /// The input's name as given on the command line.
        file: String,
        /// Complete frames read from it before the cut.
        frames: u64,
    },
    /// Connection setups the CM rejected, with one reason (a finding per reason).
    CmRejected {
        /// Sessions rejected with this reason.
        sessions: u64,
        /// The IBTA reason code (`dissectors::cm::RejReason`).
        reason: u16,
        /// The service the first of them asked for, when its REQ was captured.
        service_id: Option<u64>,
        /// The first one's requester.
        requester: dissectors::Addr,
        /// The first one's responder.
        responder: dissectors::Addr,
    },
    /// REQs that no REP (nor REJ) answered: the peer's CM is unreachable or not there.
    CmUnanswered {
        /// Sessions whose REQs went unanswered.
        sessions: u64,
        /// REQs they sent, retries included.
        reqs: u64,
        /// The longest mean interval between a session's REQ retries (the CM timeout
        /// as seen), ns; `None` when no session retried.
        retry_interval_ns: Option<u64>,
        /// The first one's requester.
        requester: dissectors::Addr,
        /// The first one's responder.
        responder: dissectors::Addr,
    },
    /// REPs that no RTU confirmed.
    CmNoRtu {
        /// Sessions with a REP and no RTU.
        sessions: u64,
    },
    /// DREQs that no DREP answered.
    CmNoDrep {
        /// Sessions with a DREQ and no DREP.
        sessions: u64,
    },
    /// Flows set up by the CM whose first packets are not in the capture: the first PSN
    /// captured is after the starting PSN the REQ / REP announced.
    CmFirstPacketsMissing {
        /// Flows missing their first packets.
        flows: u64,
        /// PSNs missing before their first captured packets, summed.
        psns: u64,
    },
    /// RC flows of a capture with CM setups that no captured setup covers: set up before
    /// the capture started (it started mid-stream for them), or without the CM.
    CmNotSetUp {
        /// Such flows.
        flows: u64,
    },
    /// Flows whose DSCP is not the one the CM path's traffic class asked for.
    CmTrafficClass {
        /// Flows whose DSCP differs.
        flows: u64,
        /// The first one's traffic class in the REQ (DSCP << 2 | ECN).
        traffic_class: u8,
        /// The DSCP the first one's data carried.
        dscp: u8,
    },
    /// Connections the CM set up (REQ → REP → RTU), and how long that took.
    CmSetup {
        /// Setups completed with an RTU.
        connections: u64,
        /// Median REQ → RTU time, ns.
        median_ns: u64,
        /// Longest REQ → RTU time, ns.
        max_ns: u64,
    },
}
