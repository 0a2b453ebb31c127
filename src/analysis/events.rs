//! The events the analyzer records — a gap it opened, a resend it saw, a NAK, a
//! duplicate, an ARP ask unanswered, ... — as values ([`Event`], [`EventKind`]), the
//! capped log they go into, and the events of the last packet.
//!
//! The protocol modules (gaps, requester, responder, congestion, net) push into the log;
//! the report takes the log at the end and never feeds back into it.
//!
//! Per-packet events: what the analyzer concluded on the frame it was fed last, for
//! callers that act on one packet at a time (`capture --annotate` writes them next to the
//! frame in pcapng). The log keeps a copy of the events recorded during the current
//! [`Analyzer::ingest`](super::Analyzer::ingest) in a small fixed-capacity buffer,
//! emptied when the next frame comes in. Nothing is allocated per packet, and the buffer
//! does not depend on the log's cap (`max_events`): the events of the last packet are
//! there even when the log stopped storing them. Some events are about an earlier
//! packet (a tentative resend resolved by this one, a gap closed): their `t_ns` says
//! which.

use super::flow::Trigger;
use serde::Serialize;
use std::net::Ipv4Addr;

/// What happened, for the event list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A request stream's (or a READ's responses') PSN jumped past the next expected one
    /// (`psn`: first missing PSN, `count`: PSNs skipped).
    PsnGap,
    /// A gap's first missing PSN later passed the tap in a resend (`psn`: the gap's start).
    GapRecovered,
    /// A gap never filled by the end of the flow (`capture_loss`: whether the capture most
    /// likely missed the packets rather than the network losing them).
    GapUnrecovered,
    /// A NAK from the responder (`code`: the AETH NAK code, `psn`: the PSN it names).
    Nak,
    /// An RNR NAK from the responder (`code`: the RNR timer code).
    RnrNak,
    /// The requester started a retry: `trigger` says why, `psn`..`psn_end` the PSNs resent,
    /// `count` the packets of the run, `latency_ns` the time since what triggered it.
    Retransmission,
    /// A READ Request re-issued for the rest of an earlier READ (its PSN inside the
    /// original's range).
    ReadRerequest,
    /// A request packet seen again that the requester did not send again (a copy the
    /// network made).
    Duplicate,
    /// An original that passed the tap after later PSNs: it fills its gap, no resend.
    Reordered,
    /// A CNP that found no CE-marked traffic to answer (none since the flow's last CNP, or
    /// no flow in the reverse direction marked at all).
    CnpWithoutCe,
    /// The first request of an ARP ask whose sender and target are in different subnets
    /// (`arp`: sender, target; `iface`: where it was seen).
    ArpCrossSubnet,
    /// An ARP ask no reply on its interface answered, at its first request (`arp`:
    /// sender, target; `count`: requests, retries included).
    ArpUnanswered,
    /// An address's traffic to a peer leaves another interface than the one the peer's
    /// requests came in on (`arp`: address, peer; `iface`: where it leaves).
    ArpReplyPathMismatch,
    /// A second MAC claims an address on an interface (`arp`: the address twice).
    ArpDuplicateAddress,
}

/// One entry of the event list: something that happened at one moment, on one flow or on
/// the link. Which optional fields are set depends on `kind`; unset ones are left out of
/// the JSON.
#[derive(Clone, Debug, Serialize)]
pub struct Event {
    /// Capture timestamp of the event, ns since the Unix epoch (for a gap: when it opened).
    pub t_ns: u64,
    /// Id of the flow it happened on ([`FlowSummary::id`](super::FlowSummary::id));
    /// `None` for link-level events (ARP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<u32>,
    /// What happened.
    pub kind: EventKind,
    /// The PSN the event is about (first missing PSN of a gap, PSN a NAK names, first PSN
    /// resent); `None` for events without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psn: Option<u32>,
    /// Last PSN of a retransmission run, filled in when the run ends; `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psn_end: Option<u32>,
    /// Missing PSNs of a gap, packets of a retransmission run, ARP requests.
    pub count: u64,
    /// What started a retransmission; `None` for other kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Trigger>,
    /// For a retransmission, ns from what triggered it (NAK, RNR NAK, or the original send
    /// for a timeout) to the first resend; `None` when not known or not applicable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<u64>,
    /// NAK code (0 PSN sequence error ... 4 invalid RD request) or RNR timer code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u8>,
    /// For an unrecovered gap, `true` when no NAK named it or the responder acknowledged it
    /// anyway (the capture missed the packets), `false` when the network lost them; `None`
    /// for other kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_loss: Option<bool>,
    /// ARP sender and target address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arp: Option<(Ipv4Addr, Ipv4Addr)>,
    /// Interface index an ARP event was seen on (for a reply-path mismatch: where the
    /// traffic leaves); `None` for flow events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iface: Option<u32>,
}

impl Event {
    /// An event of `kind` on flow `flow` at `t_ns`, every optional field unset.
    pub fn new(t_ns: u64, flow: u32, kind: EventKind) -> Self {
        Event {
            flow: Some(flow),
            ..Event::link(t_ns, kind)
        }
    }
    /// A link-level event (no flow) of `kind` at `t_ns`, every optional field unset.
    pub fn link(t_ns: u64, kind: EventKind) -> Self {
        Event {
            t_ns,
            flow: None,
            kind,
            psn: None,
            psn_end: None,
            count: 0,
            trigger: None,
            latency_ns: None,
            code: None,
            capture_loss: None,
            arp: None,
            iface: None,
        }
    }
    /// Sets the event's PSN (builder style).
    pub fn psn(mut self, p: dissectors::Psn) -> Self {
        self.psn = Some(p.0);
        self
    }
}

/// The recorded events, capped.
#[derive(Debug, Default)]
pub(crate) struct EventLog {
    pub events: Vec<Event>,
    pub dropped: u64,
    pub(super) cap: usize,
    pub(super) packet: PacketEvents,
    /// [`Config::gap_timeout_ns`](super::Config::gap_timeout_ns): what the gap code needs to tell a late fill.
    pub gap_timeout_ns: u64,
}

impl EventLog {
    /// Records `e` (and keeps a copy for the packet's events); the index it got, or
    /// `None` when the log is full and the event was only counted.
    pub(super) fn push(&mut self, e: Event) -> Option<usize> {
        self.packet.note(&e);
        if self.events.len() < self.cap {
            self.events.push(e);
            Some(self.events.len() - 1)
        } else {
            self.dropped += 1;
            None
        }
    }
}

/// Events kept per packet; more are counted in [`PacketEvents::overflow`].
pub const PER_PACKET: usize = 8;

/// The events recorded while the last frame was analyzed.
#[derive(Clone, Debug)]
pub struct PacketEvents {
    buf: [Event; PER_PACKET],
    len: usize,
    overflow: u32,
}

impl Default for PacketEvents {
    fn default() -> Self {
        PacketEvents {
            buf: std::array::from_fn(|_| Event::link(0, EventKind::PsnGap)),
            len: 0,
            overflow: 0,
        }
    }
}

impl PacketEvents {
    /// Forgets the previous packet's events.
    #[inline]
    pub(super) fn clear(&mut self) {
        self.len = 0;
        self.overflow = 0;
    }

    /// Keeps a copy of `e` (a few words: an event owns nothing on the heap).
    #[inline]
    pub(super) fn note(&mut self, e: &Event) {
        if self.len < PER_PACKET {
            self.buf[self.len] = e.clone();
            self.len += 1;
        } else {
            self.overflow += 1;
        }
    }

    /// The events, in the order they were recorded.
    pub fn as_slice(&self) -> &[Event] {
        &self.buf[..self.len]
    }

    /// Events of the packet beyond [`PER_PACKET`] (not kept here; the log has them).
    pub fn overflow(&self) -> u32 {
        self.overflow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_a_packets_events_up_to_its_capacity() {
        let mut p = PacketEvents::default();
        for i in 0..(PER_PACKET as u64 + 3) {
            p.note(&Event::link(i, EventKind::Nak));
        }
        assert_eq!(p.as_slice().len(), PER_PACKET);
        assert_eq!(p.as_slice()[1].t_ns, 1);
        assert_eq!(p.overflow(), 3);
        p.clear();
        assert!(p.as_slice().is_empty());
        assert_eq!(p.overflow(), 0);
    }
}
