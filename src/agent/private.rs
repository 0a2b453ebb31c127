//! What the flight recorder keeps of a frame: headers only, and with `--redact` (on by
//! default) no remote address or key.
//!
//! Cut (from what the decoder found, nothing parsed again):
//! - a RoCE packet with payload ends right after its last transport header (BTH and the
//!   extended headers of its opcode: RETH, AETH, DETH, AtomicETH, AtomicAckETH, ImmDt,
//!   IETH, …): zero payload bytes, its length on the wire kept. Its ICRC goes with the
//!   payload, so a dump or `/report` counts it as unchecked;
//! - a RoCE packet without payload (ACK, NAK, READ request, atomic, CNP) is kept as
//!   captured, ICRC included;
//! - a CM MAD (a UD SEND to QP1) is kept as captured: the analyzer's CM analysis reads
//!   it, and at the agent's 128-byte snaplen it ends before the private data of a REQ;
//! - ARP, PFC pause frames, and frames the decoder found malformed or unsupported, are
//!   kept as captured: the first carry no application data, and a dump must show the
//!   anomaly that was counted (cut, a malformed packet could read as a good one).
//!
//! Redact: the RETH virtual address becomes VA + a secret offset of its connection (its
//! destination address and QP, keyed once per agent run): addresses no longer show, while
//! the analysis, which compares where a READ re-request ends with where its READ ended,
//! sees the same differences; the rkey becomes 0. The AtomicETH's VA, rkey, swap/add and
//! compare operands become 0. The ICRC of a packet so changed is patched to stay exactly
//! as right or wrong as it was.

use dissectors::ib::icrc;
use dissectors::{AtomicEthRepr, Decoded, RethRepr, StopKind};
use std::cell::Cell;
use std::hash::BuildHasher;

/// A connection as its secret offset is keyed: destination address, GID and QP.
type Conn = (
    Option<std::net::IpAddr>,
    Option<[u8; 16]>,
    Option<dissectors::Qpn>,
);

/// Connections whose offsets are remembered (direct-mapped by QP): the keyed hash costs
/// more than the rest of a RETH's redaction, and a busy link has few connections at once.
const REMEMBERED: usize = 64;

/// A remembered connection and its offset.
type Known = Cell<Option<(Conn, u64)>>;

/// How frames are kept.
#[derive(Clone, Debug)]
pub struct Privacy {
    /// Mask RETH and AtomicETH values.
    pub redact: bool,
    key: std::collections::hash_map::RandomState,
    /// Offsets already computed: a cache of [`Privacy::offset`]'s keyed hash, so the
    /// same connection gets the same offset whether or not it is remembered.
    known: Box<[Known; REMEMBERED]>,
}

impl Privacy {
    /// Headers only, redacting when `redact`, with a fresh secret.
    pub fn new(redact: bool) -> Self {
        Privacy {
            redact,
            key: std::collections::hash_map::RandomState::new(),
            known: Box::new(std::array::from_fn(|_| Cell::new(None))),
        }
    }

    /// How many of the captured bytes of a frame decoded as `d` are kept.
    pub fn keep(&self, cap: usize, d: Option<&Decoded>) -> usize {
        let Some(d) = d.filter(|d| matches!(d.stop.kind, StopKind::Complete | StopKind::Truncated))
        else {
            return cap;
        };
        let Some(r) = d.roce.as_ref() else {
            return cap;
        };
        if r.mad.is_some() || r.payload_len == 0 || r.payload_offset <= r.bth_offset {
            return cap;
        }
        (r.payload_offset as usize).min(cap)
    }

    /// Masks the RETH and AtomicETH of `buf` (the kept bytes of a frame decoded as `d`)
    /// and patches its ICRC; returns the bytes to keep, fewer when a header could not be
    /// masked (it is cut off instead).
    pub fn redact(&self, buf: &mut [u8], d: Option<&Decoded>) -> usize {
        let n = buf.len();
        if !self.redact {
            return n;
        }
        let Some((d, r)) = d.and_then(|d| Some((d, d.roce.as_ref()?))) else {
            return n;
        };
        if r.reth.is_none() && r.atomic_eth.is_none() {
            return n;
        }
        // Extended headers come in the IBTA's order, each where the ones before it end:
        // BTH, RDETH, DETH, XRCETH, FETH, then RETH or AtomicETH.
        use dissectors::ib::{atomic_eth, bth, deth, feth, rdeth, reth, xrceth};
        let off = r.bth_offset as usize
            + bth::LEN
            + rdeth::LEN * usize::from(r.rdeth.is_some())
            + deth::LEN * usize::from(r.deth.is_some())
            + xrceth::LEN * usize::from(r.xrceth.is_some())
            + feth::LEN * usize::from(r.feth.is_some());
        let icrc_at =
            r.payload_offset as usize + r.payload_len as usize + usize::from(r.bth.pad_cnt);
        let stored = r.icrc_stored.filter(|_| r.payload_offset > r.bth_offset);
        if let Some(x) = r.reth {
            let end = off + reth::LEN;
            if end > n || RethRepr::parse(&buf[off..end]) != Ok(x) {
                return off.min(n);
            }
            let m = RethRepr {
                va: x.va.wrapping_add(self.offset(d)),
                rkey: 0,
                dma_len: x.dma_len,
            };
            let mut was = [0u8; reth::LEN];
            was.copy_from_slice(&buf[off..end]);
            m.emit(&mut buf[off..end]);
            return patch_icrc(buf, &was, off, icrc_at, stored);
        }
        let end = off + atomic_eth::LEN;
        if end > n || AtomicEthRepr::parse(&buf[off..end]).ok() != r.atomic_eth {
            return off.min(n);
        }
        let mut was = [0u8; atomic_eth::LEN];
        was.copy_from_slice(&buf[off..end]);
        AtomicEthRepr::default().emit(&mut buf[off..end]);
        patch_icrc(buf, &was, off, icrc_at, stored)
    }

    /// The secret offset of a packet's connection (destination address and QP).
    fn offset(&self, d: &Decoded) -> u64 {
        let dst = d.ip.map(|ip| ip.dst);
        let gid = d.grh.map(|g| g.dgid);
        let qp = d.roce.map(|r| r.bth.dest_qp);
        self.offset_of((dst, gid, qp))
    }

    /// The secret offset of a connection: remembered, or hashed and remembered.
    fn offset_of(&self, conn: Conn) -> u64 {
        let qp = conn.2;
        let slot = &self.known[qp.map_or(0, |q| q.0 as usize) % REMEMBERED];
        if let Some((c, off)) = slot.get() {
            if c == conn {
                return off;
            }
        }
        let off = self.key.hash_one(conn);
        slot.set(Some((conn, off)));
        off
    }
}

/// Rewrites the ICRC after `buf[off..off + was.len()]` changed from `was`; returns the
/// bytes to keep (the ICRC cut off when it cannot be patched).
fn patch_icrc(buf: &mut [u8], was: &[u8], off: usize, at: usize, stored: Option<u32>) -> usize {
    let n = buf.len();
    let end = off + was.len();
    let Some(stored) = stored else {
        return n;
    };
    if at + 4 > n || at < end {
        return n.min(at);
    }
    match icrc::patched(stored, was, &buf[off..end], at - end) {
        Some(c) => {
            buf[at..at + 4].copy_from_slice(&c.to_le_bytes());
            n
        }
        None => at,
    }
}

#[cfg(test)]
mod tests;
