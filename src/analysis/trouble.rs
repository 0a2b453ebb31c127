//! What a flow in trouble keeps, as plain values: the retries of one PSN, the resend
//! runs' skips, late originals and the NAKs they may explain, RNR waits, and how the
//! request stream ended (`Stop`). Allocated with a flow's first trouble; `stop` decides
//! and updates them.

use super::ring::Ring;
use dissectors::Psn;

/// A requester retrying one PSN: how often, since when (the first rewind, and the
/// second: the first resend run may still carry PSNs never sent before), until when.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Retry {
    pub psn: Psn,
    pub count: u32,
    pub first_ns: u64,
    pub second_ns: u64,
    pub last_ns: u64,
}

/// Resend-run skips remembered per flow (a NAK for one comes within a run or two).
pub(crate) const SKIP_SLOTS: usize = 8;

/// What only a flow in trouble keeps (allocated with the first RNR NAK it sends, the
/// first rewind of its requests, or its end without finishing).
#[derive(Clone, Debug, Default)]
pub(crate) struct Trouble {
    /// Rewinds to one PSN with no acknowledged progress since the first of them.
    pub retry: Option<Retry>,
    /// How the request stream ended without finishing, once the flow is settled.
    pub stop: Option<Stop>,
    /// The PSN of an RNR NAK that was this side's latest response packet.
    pub rnr_psn: Option<Psn>,
    /// PSNs the latest resend runs skipped at the tap (start, count; the oldest dropped):
    /// resends lost before the tap.
    pub run_skips: Ring<(Psn, u32), SKIP_SLOTS>,
    /// Late originals the tap saw (their PSN, and how many PSNs had passed ahead of them):
    /// the responder, which sees the tap's order, dropped those as out of sequence.
    pub late: Ring<(Psn, u32), SKIP_SLOTS>,
    /// The PSNs just before the stream's first that passed the tap late, as late
    /// originals (bit i: `first` - 1 - i): a resend of one, late too, is not an
    /// original again.
    pub before_first: u32,
    /// The latest rewind: its first packet's identification, and the stream's next new
    /// PSN when it began. A packet sent before it (an earlier identification) with a PSN
    /// from there on was that PSN's original, whatever sighting was taken for new.
    pub rewind: Option<(u16, Psn)>,
    /// PSNs the responder was waiting for when a late copy from an earlier sending, ahead
    /// of them, passed the tap: it NAKs them though nothing was lost.
    pub waiting: Ring<Psn, SKIP_SLOTS>,
    /// NAKs that named a gap a late original then filled, not yet moved from the
    /// responder's `nak_psn_seq_gap_at_tap` to its `nak_psn_seq_reorder`.
    pub reorder_naks: u32,
    /// PSNs the latest sequence NAKs named while the tap saw them missing (or saw their
    /// resend skipped), until a late packet of one of them shows the NAK was reordering's.
    /// A slot is emptied (`None`) once its NAK is explained.
    pub gap_naks: Ring<Option<Psn>, SKIP_SLOTS>,
    /// RNR NAKs by timer code.
    pub rnr_timers: [u32; 32],
    /// The RNR waits the RNR NAKs this side's requests met asked for, summed, µs.
    pub rnr_requested_us: f64,
}

/// How a request stream ended without finishing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopKind {
    /// The same PSN retried `retries` times with no progress, then silence.
    RetryExhausted,
    /// The stream stopped in the middle of a message and never resumed.
    Stalled,
}

/// What a flow that did not finish shows of its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stop {
    /// Gave up or stalled.
    pub kind: StopKind,
    /// The PSN retried (exhausted), or the next PSN that never came (stalled).
    pub psn: Psn,
    /// Rewinds to that PSN (0 for a stall).
    pub retries: u32,
    /// The first of those rewinds (the last new packet for a stall), ns.
    pub first_ns: u64,
    /// The flow's last packet, ns.
    pub last_ns: u64,
}
