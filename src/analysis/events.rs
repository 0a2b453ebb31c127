//! Per-packet events: what the analyzer concluded on the frame it was fed last — a gap
//! it opened, a resend it saw, a NAK, a duplicate, ... — for callers that act on one
//! packet at a time (`capture --annotate` writes them next to the frame in pcapng).
//!
//! Every event the analyzer records goes through its event log; the log also keeps a
//! copy of those recorded during the current [`Analyzer::ingest`](super::Analyzer::ingest)
//! in a small fixed-capacity buffer, emptied when the next frame comes in. Nothing is
//! allocated per packet, and the buffer does not depend on the log's cap (`max_events`):
//! the events of the last packet are there even when the log stopped storing them.
//! Some events are about an earlier packet (a tentative resend resolved by this one, a
//! gap closed): their `t_ns` says which.

use super::report::{Event, EventKind};
use super::Analyzer;

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

impl Analyzer {
    /// The events recorded while the last frame was fed (see the module documentation).
    pub fn packet_events(&self) -> &PacketEvents {
        &self.log.packet
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
