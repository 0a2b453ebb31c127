//! Several taps carried in one mirror stream: the taps of [`super::taps`] (one RC
//! connection, drops placed per segment) as a collector receives them from a switch, each
//! tap one mirror session ([`Encap`]: ERSPAN session, GRE key, VNI), every frame wrapped
//! and all sessions merged by time into one capture on the collector's one clock. Also
//! each session alone, as a capture of its own, so a test can compare the split analysis
//! of the one stream with the analysis of separate files.

use super::taps::{write, Spec, Truth};
use crate::capture::writer::{Format, Interface, Writer};
use dissectors::tunnel::encap::{wrap, Encap};
use dissectors::LinkType;
use std::io;

/// One mirror stream and its sessions apart.
pub struct Mirrored {
    /// Every session's frames, merged in time order (classic pcap, ns).
    pub merged: Vec<u8>,
    /// Each session's frames alone, in the order of `sessions` (classic pcap, ns).
    pub apart: Vec<Vec<u8>>,
    /// What the merged analysis must find (tap k is session k).
    pub truth: Truth,
}

/// The taps of `spec` (one clock: `skew_ns` must be empty, capture drops none), tap k
/// mirrored as `sessions[k]`.
pub fn mirror(spec: &Spec, sessions: &[Encap]) -> io::Result<Mirrored> {
    if sessions.len() != spec.taps || !spec.skew_ns.is_empty() || !spec.capture_drops.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "synth taps mirror: one session per tap, one clock, no capture drops",
        ));
    }
    let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); spec.taps];
    let truth = write(spec, bufs.iter_mut().collect())?;
    // (ts, session, frame), wrapped.
    let mut all: Vec<(u64, usize, Vec<u8>, u32)> = Vec::new();
    let mut apart = Vec::with_capacity(spec.taps);
    for (k, b) in bufs.iter().enumerate() {
        let mut recs = Vec::new();
        for (i, (ts, data, orig)) in records(b).into_iter().enumerate() {
            let mut f = Vec::with_capacity(data.len() + 64);
            let usec = ((ts / 1_000) % (1 << 32)) as u32;
            wrap(&sessions[k], i as u32 + 1, usec, data, &mut f).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "synth taps mirror: wrap")
            })?;
            let grow = (f.len() - data.len()) as u32;
            recs.push((ts, k, f, orig + grow));
        }
        apart.push(pcap(recs.iter().map(|r| (r.0, &r.2[..], r.3)))?);
        all.extend(recs);
    }
    // The collector's order: by time, ties by session (the one nearer the sender first).
    all.sort_by_key(|r| (r.0, r.1));
    let merged = pcap(all.iter().map(|r| (r.0, &r.2[..], r.3)))?;
    Ok(Mirrored {
        merged,
        apart,
        truth,
    })
}

/// The records of a classic little-endian nanosecond pcap: (ts ns, frame, wire length).
fn records(b: &[u8]) -> Vec<(u64, &[u8], u32)> {
    let word = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let mut out = Vec::new();
    let mut off = 24;
    while off + 16 <= b.len() {
        let ts = u64::from(word(off)) * 1_000_000_000 + u64::from(word(off + 4));
        let cap = word(off + 8) as usize;
        let orig = word(off + 12);
        out.push((ts, &b[off + 16..off + 16 + cap], orig));
        off += 16 + cap;
    }
    out
}

fn pcap<'a>(frames: impl Iterator<Item = (u64, &'a [u8], u32)>) -> io::Result<Vec<u8>> {
    let iface = [Interface {
        link: LinkType::Ethernet,
        snaplen: 65535,
        name: None,
        description: None,
    }];
    let mut w = Writer::new(Vec::new(), Format::PcapNs, &iface)?;
    for (ts, f, orig) in frames {
        w.write(ts, 0, f, orig, None)?;
    }
    w.into_inner()
}
