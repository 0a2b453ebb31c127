//! Per-flow state: one flow is the packets from one address to another for one
//! destination QP, `(src, dst, DestQP)`. A flow holds two streams that are never mixed:
//! the *request* stream (what this side sends as requester: SEND, WRITE, READ Request,
//! atomics) and the *response* stream (ACKs, NAKs, READ responses, atomic ACKs it sends
//! back for the other side's requests). The two flows of an RC connection are peers.
//!
//! Every field has a fixed size (rings, arrays, histograms): a flow costs the same
//! whether it saw ten packets or ten million.

use super::hist::LogHist;
use super::ring::{LazyRing, Ring, SplitRing};
use dissectors::{Addr, Psn, Qpn, RoceVersion, Transport};

/// Identifies a flow: network source and destination and the BTH DestQP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// Network source address (IP, or GID/LID for RoCE v1 and native IB).
    pub src: Addr,
    /// Network destination address.
    pub dst: Addr,
    /// The BTH DestQP: the queue pair the packets are addressed to.
    pub qp: Qpn,
}

/// Why a run of retransmitted packets was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// A NAK (PSN sequence error) from the responder preceded it.
    Nak,
    /// An RNR NAK preceded it.
    Rnr,
    /// No NAK: the original was seen, so the requester's ACK timer expired.
    Timeout,
    /// READ responses sent again for a re-issued READ Request.
    ReadRerequest,
    /// No NAK seen and the original was never seen either.
    Unknown,
}

impl Trigger {
    /// The trigger as worded in text reports (`NAK`, `RNR NAK`, `timeout`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Nak => "NAK",
            Trigger::Rnr => "RNR NAK",
            Trigger::Timeout => "timeout",
            Trigger::ReadRerequest => "READ re-request",
            Trigger::Unknown => "unknown",
        }
    }
}

/// PSNs a stream skipped: `[start, start + len)`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Gap {
    pub start: Psn,
    pub len: u32,
    pub t_ns: u64,
    /// A PSN-sequence-error NAK named a PSN inside it.
    pub nak: bool,
    /// An ACK covered it although no resend passed the tap: the responder got the
    /// packet, only the capture missed it.
    pub acked: bool,
    /// The tail of a gap a late original split in two: its filling is not another
    /// recovered gap (the gap was counted once).
    pub part: bool,
    /// Open longer than the gap timeout: already counted as unrecovered (a fill now
    /// counts in `gaps_filled_late`, not as recovered).
    pub late: bool,
}

impl Gap {
    pub fn contains(&self, p: Psn) -> bool {
        let d = p.diff(self.start);
        d >= 0 && (d as u32) < self.len
    }
}

/// A gap a resend filled (for the request stream, go-back-N: the resend covers the rest of
/// it), with the IPv4 identification of that resend.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ResentGap {
    pub start: Psn,
    pub len: u32,
    pub ident: u16,
}

impl ResentGap {
    /// Whether a packet of PSN `p` with identification `ident` was sent before the resend
    /// that filled this gap: one of the gap's originals, overtaken on the way by the
    /// resend of its own PSN.
    pub fn overtook(&self, p: Psn, ident: u16) -> bool {
        let d = p.diff(self.start);
        d >= 0 && (d as u32) < self.len && (self.ident.wrapping_sub(ident) as i16) > 0
    }
}

/// One RDMA READ as its request announced it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Read {
    pub start: Psn,
    /// PSNs the READ consumes (ceil(len / PMTU)); 0 while the PMTU is unknown.
    pub n: u32,
    pub len: u32,
    pub va: u64,
    /// The next response PSN expected for it.
    pub resp_next: Psn,
    /// Responses were seen up to its end, or the tail was counted as a gap.
    pub closed: bool,
    /// A re-issued READ Request covers part of it: responses again are expected.
    pub rereq: bool,
    /// The PSN the latest re-request for it asked from.
    pub rereq_psn: Psn,
}

impl Read {
    /// The most PSNs it can consume (the smallest PMTU when the PMTU is unknown).
    pub fn max_span(&self) -> u32 {
        if self.n > 0 {
            self.n
        } else {
            span_for(self.len, 256)
        }
    }
    pub fn contains(&self, p: Psn) -> bool {
        let d = p.diff(self.start);
        d >= 0 && (d as u32) < self.max_span()
    }
}

/// PSNs a READ of `len` bytes consumes at a given PMTU (a zero-length READ uses one).
pub(crate) fn span_for(len: u32, pmtu: u32) -> u32 {
    len.div_ceil(pmtu).max(1)
}

/// What can make the requester rewind, besides its timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    /// A NAK (PSN sequence error).
    Nak,
    /// An RNR NAK with its timer code.
    Rnr(u8),
    /// READ responses skipped PSNs (the requester sees the gap itself).
    ReadGap,
}

/// A NAK, RNR NAK or READ response gap the requester has not acted on yet: the PSN it
/// names (the first one missing) and when it passed the tap.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    pub psn: Psn,
    pub t_ns: u64,
    pub cause: Cause,
}

/// A request packet behind the stream that did not continue a run, held until the next
/// packet says whether it started a rewind.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stray {
    pub psn: Psn,
    /// The PSN after it (its span for a READ).
    pub end: Psn,
    pub t_ns: u64,
    pub ident: u16,
    /// Its PSN had never passed the tap.
    pub in_gap: bool,
    /// What would have made the requester rewind to it, as it stood then (an ACK that
    /// passes before the next packet must not erase it).
    pub cause: Option<Pending>,
}

/// A run of retransmitted packets with one trigger.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Episode {
    pub trigger: Trigger,
    pub last: Psn,
    /// Index of its event, to fill in the packet count when it ends.
    pub event: Option<usize>,
    pub packets: u32,
}

pub(crate) const GAP_SLOTS: usize = 32;
/// Gaps filled by a resend remembered per flow, for originals that arrive after the resend
/// of their PSN.
pub(crate) const RESENT_GAP_SLOTS: usize = 16;
/// READs followed per flow: as many as a requester keeps outstanding (rxe allows 128).
pub(crate) const READ_SLOTS: usize = 128;
/// NAKs / RNR NAKs / READ response gaps waiting for the rewind they cause.
pub(crate) const PENDING_SLOTS: usize = 8;
pub(crate) const ACKREQ_SLOTS: usize = 16;
pub(crate) const SENT_SLOTS: usize = 32;

/// One sighting of a request PSN in [`ReqStream::sent`]: when it passed the tap, with
/// which IPv4 identification, and whether it was taken for new (it moved the stream on).
/// 16 bytes, as the tuple it replaces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SentPsn {
    pub psn: Psn,
    pub t_ns: u64,
    pub ident: u16,
    pub new: bool,
}

/// What this side sent as requester. Laid out in declaration order (`repr(C)`): what
/// every request and every ACK touches comes first, so a packet of a flow that is not in
/// the cache costs few cache lines, then the rings' heads (the sent-PSN and AckReq
/// records are allocated with the first request, the others with their first use).
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub(crate) struct ReqStream {
    pub started: bool,
    /// The sender varies the IPv4 identification: a copy keeps it, a resend does not.
    pub idents_vary: bool,
    /// The latest identification sent.
    pub max_ident: u16,
    pub first_ident: Option<u16>,
    /// The next new PSN.
    pub next: Psn,
    /// The PSN of the first request seen (once `started`).
    pub first: Psn,
    /// The PSN after the last request packet, new or resent: where a resend run goes on.
    pub cursor: Psn,
    /// Packets whose identification came after / before the latest one. Where nearly all
    /// that come after it come a short step after it, the identification is this flow's
    /// send order (Soft-RoCE and mlx5 count it up per packet), and a packet with an
    /// earlier one was sent earlier and arrives late.
    pub idents_ahead: u32,
    pub idents_behind: u32,
    /// Of `idents_ahead`, those more than `requester::ident::NEAR_IDENT` after the latest one
    /// (what a random identification mostly does, and a counter seldom).
    pub idents_far: u32,
    /// When the last new (not resent) request was seen.
    pub last_new_ts: u64,
    pub episode: Option<Episode>,
    /// What started the latest episode (responses to it may come after it ended).
    pub last_trigger: Option<Trigger>,
    /// An ACK passed the tap (`acked_to` holds its PSN).
    pub acked_any: bool,
    /// The latest new request packet was not the last of its message.
    pub mid_message: bool,
    /// A READ whose PSN span is not known yet (PMTU unknown): start and length.
    pub open_read: Option<(Psn, u32)>,
    /// The highest PSN an ACK (or a NAK, up to the one before it) that passed the tap
    /// acknowledged, once `acked_any`.
    pub acked_to: Psn,
    pub gaps: LazyRing<Gap, GAP_SLOTS>,
    /// The latest gaps a resend filled, allocated with the first.
    pub resent_gaps: LazyRing<ResentGap, RESENT_GAP_SLOTS>,
    /// The READs, allocated for a flow's first READ only (most flows never read).
    pub reads: Option<Box<Ring<Read, READ_SLOTS>>>,
    /// Allocated with the first NAK / RNR NAK / READ response gap.
    pub pending: Option<Box<[Option<Pending>; PENDING_SLOTS]>>,
    pub tentative: Option<Stray>,
    /// When recent PSNs were last sent and with which IPv4 identification: how long a
    /// timeout took, and whether a PSN seen again is a copy; and whether that sighting
    /// was taken for new (it moved the stream on). Its records are allocated with the
    /// first request (an ACK-only flow never has one).
    pub sent: SplitRing<SentPsn, SENT_SLOTS>,
    /// Requests with AckReq set, waiting for the ACK that covers them.
    pub ackreq: SplitRing<(Psn, u64), ACKREQ_SLOTS>,
}

impl ReqStream {
    /// The highest PSN acknowledged at the tap, if any.
    pub fn acked(&self) -> Option<Psn> {
        self.acked_any.then_some(self.acked_to)
    }
}

impl ReqStream {
    /// The causes waiting for a rewind (none when nothing was ever pending).
    pub fn pending(&self) -> &[Option<Pending>] {
        self.pending.as_deref().map_or(&[], |p| p.as_slice())
    }

    pub fn pending_mut(&mut self) -> &mut [Option<Pending>] {
        self.pending
            .as_deref_mut()
            .map_or(&mut [], |p| p.as_mut_slice())
    }

    pub fn reads_mut(&mut self) -> &mut Ring<Read, READ_SLOTS> {
        self.reads.get_or_insert_with(Box::default)
    }
}

/// What this side sent as responder.
#[derive(Clone, Debug, Default)]
pub(crate) struct RespStream {
    pub gaps: LazyRing<Gap, GAP_SLOTS>,
    pub episode: Option<Episode>,
    /// The PSN after the last READ response sent again: where a resent run goes on.
    pub cursor: Psn,
}

/// Declares [`FlowCounters`] from [`counter_list!`](super::counters::counter_list): the
/// struct, all zeros, and every counter by its report key in report order.
macro_rules! declare_counters {
    ($( $(#[$m:meta])* $name:ident => $total:tt, )*) => {
        /// Counters per flow, as they appear in reports (the list: `super::counters`).
        /// Serialized by their keys in `super::report::counters` ([`FlowCounters::named`]).
        #[derive(Clone, Copy, Debug, Default)]
        pub struct FlowCounters {
            $( $(#[$m])* pub $name: u64, )*
        }

        /// All zero: what a flow that never counted anything reports.
        const NO_COUNTS: FlowCounters = FlowCounters { $( $name: 0, )* };

        /// How many counters a flow has.
        pub const N_COUNTERS: usize = [$( stringify!($name) ),*].len();

        impl FlowCounters {
            /// Every counter with its report key, in report order.
            pub fn named(&self) -> [(&'static str, u64); N_COUNTERS] {
                [$( (stringify!($name), self.$name) ),*]
            }
        }
    };
}
super::counters::counter_list!(declare_counters);

/// A flow's [`FlowCounters`], allocated with its first count: clean traffic never
/// counts a gap, a NAK or a CE mark, and pays 8 bytes instead of the counters' 288.
/// Reading gives zeros until then; writing (through `DerefMut`) allocates.
#[derive(Clone, Debug, Default)]
pub(crate) struct LazyCounters(Option<Box<FlowCounters>>);

impl std::ops::Deref for LazyCounters {
    type Target = FlowCounters;
    #[inline]
    fn deref(&self) -> &FlowCounters {
        self.0.as_deref().unwrap_or(&NO_COUNTS)
    }
}

impl std::ops::DerefMut for LazyCounters {
    #[inline]
    fn deref_mut(&mut self) -> &mut FlowCounters {
        self.0.get_or_insert_with(Box::default)
    }
}

/// The delays only a flow with trouble has: NAK -> resend, RNR NAK -> resend, the
/// requester's timeouts, CE mark -> CNP.
#[derive(Clone, Debug, Default)]
pub(crate) struct Delays {
    pub nak_to_resend: LogHist,
    pub rnr_wait: LogHist,
    pub timeout_observed: LogHist,
    pub ce_to_cnp: LogHist,
}

/// Number of distinct BTH operations counted in the opcode mix.
pub(crate) const N_OPS: usize = dissectors::Operation::ALL.len();

/// Operations counted inline per flow; a flow using more (a READ flow: requests,
/// response kinds, ACKs) moves its counts to a full table, allocated then.
const INLINE_OPS: usize = 6;

/// A flow's packets by BTH operation: most flows use a handful of operations (a WRITE
/// stream: First, Middle, Last; its ACK stream: one), so they are counted in a few inline
/// slots (64 bytes instead of a table of every operation).
#[derive(Clone, Debug, Default)]
pub(crate) struct OpCounts {
    /// `Operation as u8 + 1` of each inline slot; 0 when free.
    ids: [u8; INLINE_OPS],
    counts: [u64; INLINE_OPS],
    /// Every operation's count, once more than `INLINE_OPS` were seen.
    all: Option<Box<[u64; N_OPS]>>,
}

impl OpCounts {
    /// Counts a packet of operation `o`.
    #[inline]
    pub fn add(&mut self, o: dissectors::Operation) {
        if let Some(all) = self.all.as_deref_mut() {
            all[o as usize] += 1;
            return;
        }
        let id = o as u8 + 1;
        for i in 0..INLINE_OPS {
            if self.ids[i] == id {
                self.counts[i] += 1;
                return;
            }
            if self.ids[i] == 0 {
                self.ids[i] = id;
                self.counts[i] = 1;
                return;
            }
        }
        let mut all = Box::new([0u64; N_OPS]);
        for i in 0..INLINE_OPS {
            all[usize::from(self.ids[i] - 1)] = self.counts[i];
        }
        all[o as usize] += 1;
        self.all = Some(all);
    }

    /// Every operation's count, once more operations were seen than fit inline.
    pub fn all(&self) -> Option<&[u64; N_OPS]> {
        self.all.as_deref()
    }

    /// `(Operation as usize, count)` of each inline slot in use, in order of first use
    /// (only while [`OpCounts::all`] is `None`).
    pub fn each_inline(&self, mut f: impl FnMut(usize, u64)) {
        for i in 0..INLINE_OPS {
            if self.ids[i] > 0 {
                f(usize::from(self.ids[i] - 1), self.counts[i]);
            }
        }
    }

    /// Each operation's count, indexed by `Operation as usize` (zeros for the unused).
    #[cfg(test)]
    pub fn table(&self) -> [u64; N_OPS] {
        if let Some(all) = self.all.as_deref() {
            return *all;
        }
        let mut t = [0u64; N_OPS];
        self.each_inline(|o, n| t[o] = n);
        t
    }
}

/// Everything the analyzer keeps about one live flow. Laid out in declaration order
/// (`repr(C)`): the fields every packet updates first, then the request stream (whose
/// hot part leads), the opcode mix and the ACK latency; what only trouble, pairing or the
/// report touches comes last. With thousands of QPs a packet's flow is rarely in the
/// cache, and the cost of a packet is the number of cache lines it touches.
#[derive(Clone, Debug)]
#[repr(C)]
pub(crate) struct Flow {
    /// The key as the flow index compares it, first: a lookup confirms its hit here, on
    /// the line the packet's counts go to.
    pub(super) packed: super::packed::Packed,
    pub last_ts: u64,
    pub packets: u64,
    pub bytes: u64,
    pub first_ts: u64,
    pub ecn: [u64; 4],
    /// ok, bad, unchecked
    pub icrc: [u64; 3],
    pub messages: u64,
    /// Slot of the peer flow (the other direction of the RC connection).
    pub peer: Option<u32>,
    pub first_psn: Option<Psn>,
    pub last_psn: Option<Psn>,
    pub pmtu: u32,
    pub id: u32,
    pub vlan: Option<u16>,
    pub dscp: Option<u8>,
    pub pcp: Option<u8>,
    pub transport: Option<Transport>,
    pub version: RoceVersion,
    /// The latest DSCP, PCP and RoCE version of the flow's packets other than CNPs, and
    /// the first CNP's DSCP and PCP (`super::account::track`; CNPs ride their own class).
    pub marks: super::qos::Marks,
    /// How often the QoS marks changed (`super::account::track`), CNPs on another DSCP.
    pub mark_counts: super::qos::MarkCounts,
    /// Hashes of (src, dst) and (dst, src), for the analyzer's recent-PSN table.
    pub pair_hash: [u64; 2],
    pub ops: OpCounts,
    pub other_ops: u64,
    pub ack_latency: LogHist,
    pub req: ReqStream,
    pub key: FlowKey,
    pub peer_id: Option<u32>,
    /// Its place in the analyzer's list of flows of its address pair.
    pub pair_pos: u32,
    /// Responses that found no request stream to pair with (the slow search is rationed).
    pub pair_tries: u32,
    pub counters: LazyCounters,
    pub resp: RespStream,
    /// Recovery and congestion delays, allocated with the first one.
    pub delays: Option<Box<Delays>>,
    /// CE marks since the last CNP for this flow, and when the first of them came.
    pub ce_since_cnp: u64,
    pub ce_first_since_cnp: u64,
    pub last_ce_ts: u64,
    /// Bytes and time at the first and the last CNP this flow's sender received.
    pub first_cnp: Option<(u64, u64)>,
    pub last_cnp: Option<(u64, u64)>,
    /// Retries, RNR NAKs, how the stream ended: allocated with the first of them.
    pub trouble: Option<Box<super::trouble::Trouble>>,
}

impl Flow {
    /// The flow's delay histograms, allocated when the first delay is recorded.
    pub fn delays_mut(&mut self) -> &mut Delays {
        self.delays.get_or_insert_with(Box::default)
    }

    /// The flow's trouble state, allocated with its first use.
    pub fn trouble_mut(&mut self) -> &mut super::trouble::Trouble {
        self.trouble.get_or_insert_with(Box::default)
    }

    pub fn new(id: u32, key: FlowKey, version: RoceVersion, ts: u64) -> Self {
        Flow {
            packed: super::packed::Packed::of(&key),
            id,
            key,
            peer: None,
            peer_id: None,
            pair_pos: 0,
            pair_hash: [0; 2],
            pair_tries: 0,
            transport: None,
            version,
            first_ts: ts,
            last_ts: ts,
            packets: 0,
            bytes: 0,
            messages: 0,
            ops: OpCounts::default(),
            other_ops: 0,
            pmtu: 0,
            dscp: None,
            pcp: None,
            vlan: None,
            ecn: [0; 4],
            icrc: [0; 3],
            first_psn: None,
            last_psn: None,
            counters: LazyCounters::default(),
            req: ReqStream::default(),
            resp: RespStream::default(),
            ack_latency: LogHist::default(),
            delays: None,
            ce_since_cnp: 0,
            ce_first_since_cnp: 0,
            last_ce_ts: 0,
            first_cnp: None,
            last_cnp: None,
            trouble: None,
            marks: super::qos::Marks::new(version),
            mark_counts: Default::default(),
        }
    }
}
