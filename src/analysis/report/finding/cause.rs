//! The values findings carry about cause and place: what caused a loss or
//! retransmission, where relative to the tap, and what came after a connection stopped.

/// What a finding about loss or retransmission says caused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Packets lost on the path.
    NetworkLoss,
    /// ACKs lost on their way back: the requests had arrived.
    AckLoss,
    /// The receiver had no receive buffer (RNR).
    ReceiverNotReady,
    /// Sequence NAKs after an RNR drop: the packets behind the one dropped.
    RnrFollowup,
    /// The tail of a burst lost: nothing behind it to cause a NAK, the timer fired.
    TailLoss,
    /// Copies made on the way.
    Duplicate,
    /// Packets overtaken on the way.
    Reorder,
    /// The responder could not keep up (RNR NAKs for READs).
    ResponderOverload,
    /// The requester gave up.
    RetryExhausted,
    /// One tap cannot tell.
    Unknown,
}

impl Cause {
    /// The JSON value: `network_loss`, ...
    pub fn code(self) -> &'static str {
        match self {
            Cause::NetworkLoss => "network_loss",
            Cause::AckLoss => "ack_loss",
            Cause::ReceiverNotReady => "receiver_not_ready",
            Cause::RnrFollowup => "rnr_followup",
            Cause::TailLoss => "tail_loss",
            Cause::Duplicate => "duplicate",
            Cause::Reorder => "reorder",
            Cause::ResponderOverload => "responder_overload",
            Cause::RetryExhausted => "retry_exhausted",
            Cause::Unknown => "unknown",
        }
    }
}

/// Where, relative to the tap, what a finding describes happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Between the sender and the tap.
    BeforeTap,
    /// Between the tap and the receiver.
    AfterTap,
    /// One tap cannot tell (a capture at the other end would).
    Unknown,
}

impl Location {
    /// The JSON value: `before_tap`, `after_tap`, `unknown`.
    pub fn code(self) -> &'static str {
        match self {
            Location::BeforeTap => "before_tap",
            Location::AfterTap => "after_tap",
            Location::Unknown => "unknown",
        }
    }

    /// `BeforeTap` when all `n` have the evidence, `AfterTap` when none has and
    /// `after` says the rest is evidence of that, else `Unknown`.
    pub(crate) fn of(n: u64, before: u64, after: bool) -> Location {
        if n > 0 && before == n {
            Location::BeforeTap
        } else if before == 0 && after {
            Location::AfterTap
        } else {
            Location::Unknown
        }
    }
}

/// What the capture shows of a connection after its request stream stopped (a requester
/// that gave up, or a stall): the CM's disconnect, or nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AfterStop {
    /// Nothing more of the connection until the capture ended.
    #[default]
    Nothing,
    /// A CM DREQ (disconnect request) for the connection.
    Dreq {
        /// From the side whose request stream stopped (the requester), else its peer.
        by_requester: bool,
        /// From the stream's last packet to the first DREQ, ns (0 when it came first).
        after_ns: u64,
        /// DREQs sent (the first and its retries).
        dreqs: u32,
        /// From the first DREQ to the DREP that answered it, ns; `None`: unanswered.
        drep_after_ns: Option<u64>,
    },
}
