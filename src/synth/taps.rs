//! Several taps of one RC connection: A SENDs to B (go-back-N, B ACKs in order and
//! NAKs the first PSN missing), seen at `taps` points in path order from A, with drops
//! placed before, between and after the taps, frames a tap's capture misses, queueing
//! delay between the taps and skewed tap clocks. The truth per segment is known by
//! construction, not analyzed.

use super::frame::{self, Pkt};
use super::traffic::{path, v4};
use crate::capture::writer::{Format, Interface, Writer};
use dissectors::{AethRepr, BthRepr, Ecn, LinkType, Msn, Opcode, PKey, Psn, Qpn};
use std::collections::VecDeque;
use std::io::{self, Write};

/// What to generate.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Taps in path order from A (2 ..= 8).
    pub taps: usize,
    /// New SEND Only packets A sends.
    pub packets: u32,
    /// (packet index, segment): the original is dropped in that segment (0 before the
    /// first tap, k between taps k-1 and k, `taps` after the last).
    pub drops: Vec<(u32, usize)>,
    /// (packet index, tap): the tap's capture misses the original.
    pub misses: Vec<(u32, usize)>,
    /// Fixed delay between adjacent taps (ns).
    pub hop_ns: u64,
    /// Queueing above it, spread evenly over 0 ..= jitter_ns on every hop (ns).
    pub jitter_ns: u64,
    /// Added to each tap's timestamps (ns): clocks that disagree.
    pub skew_ns: Vec<i64>,
    /// First PSN.
    pub first_psn: u32,
    /// (tap, n): that tap is written as pcapng whose Interface Statistics Block says its
    /// capture dropped n frames (`isb_ifdrop`).
    pub capture_drops: Vec<(usize, u64)>,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            taps: 2,
            packets: 200,
            drops: Vec::new(),
            misses: Vec::new(),
            hop_ns: 2_000,
            jitter_ns: 4_000,
            skew_ns: Vec::new(),
            first_psn: 1000,
            capture_drops: Vec::new(),
        }
    }
}

/// What the merged analysis must find.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Truth {
    /// Per segment (`taps + 1`) of A → B: PSNs lost there, in order.
    pub lost: Vec<Vec<u32>>,
    /// Per segment: NAKs B sent for a PSN lost there.
    pub naks: Vec<u64>,
    /// Per segment: A's timer resends of a PSN lost there.
    pub timer_retries: Vec<u64>,
    /// Per tap: frames its capture missed.
    pub missed: Vec<u64>,
    /// The median queueing added between the first two taps (ns).
    pub queueing_median_ns: u64,
}

const A_QPN: u32 = 0x11;
const B_QPN: u32 = 0x22;
/// Between A's packets: more than the jitter, so no packet overtakes another.
const GAP_NS: u64 = 10_000;
const LINK_NS: u64 = 1_000;
const TIMEOUT_NS: u64 = 500_000;
const EPOCH_NS: u64 = 1_700_000_000_000_000_000;

fn jitter(i: u32, hop: usize, j: u64) -> u64 {
    (u64::from(i) * 7919 + hop as u64 * 131) % (j + 1)
}

/// Writes one classic pcap (ns) per tap into `outs` and returns the truth (an
/// `InvalidInput` error for a spec out of range).
pub fn write<W: Write>(spec: &Spec, outs: Vec<W>) -> io::Result<Truth> {
    let n = spec.taps;
    if !(2..=8).contains(&n) || outs.len() != n || spec.jitter_ns >= GAP_NS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "synth taps: 2 to 8 taps, one output each, jitter below 10 us",
        ));
    }
    let (a, b) = (v4(192, 0, 2, 1), v4(192, 0, 2, 2));
    let (fwd, rev) = (path(a, b, 49152), path(b, a, 49153));
    let mut frames: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); n];
    let mut truth = Truth {
        lost: vec![Vec::new(); n + 1],
        naks: vec![0; n + 1],
        timer_retries: vec![0; n + 1],
        missed: vec![0; n],
        queueing_median_ns: 0,
    };
    let mut first_hop = Vec::new();
    let psn = |i: u32| (spec.first_psn + i) & 0xff_ffff;
    let seg_of = |i: u32| spec.drops.iter().find(|d| d.0 == i).map(|d| d.1);
    let pkt = |op: u8, p: u32, qp: u32, aeth: Option<u8>| Pkt {
        bth: BthRepr {
            opcode: Opcode(op),
            pkey: PKey(0xffff),
            dest_qp: Qpn::new(qp),
            psn: Psn::new(p),
            ack_req: op == 0x04,
            ..Default::default()
        },
        aeth: aeth.map(|syndrome| AethRepr {
            syndrome,
            msn: Msn(0),
        }),
        payload_len: if op == 0x04 { 64 } else { 0 },
        ..Default::default()
    };
    let mut buf = Vec::new();
    // B's state, A's resend queue and the NAKs on their way back.
    let mut expected = 0u32;
    let mut nakd_for = None;
    let mut queue: VecDeque<u32> = VecDeque::new();
    let mut naks: Vec<(u64, u32)> = Vec::new();
    let (mut now, mut next_new, mut max_sent) = (0u64, 0u32, None::<u32>);
    let mut sent_once = vec![false; spec.packets as usize];
    loop {
        naks.retain(|&(at, i)| {
            if at <= now {
                queue = (i..=max_sent.unwrap_or(i)).collect();
                false
            } else {
                true
            }
        });
        let i = if let Some(i) = queue.pop_front() {
            i
        } else if next_new < spec.packets {
            next_new += 1;
            next_new - 1
        } else if expected < spec.packets && naks.is_empty() {
            // The tail went missing: A's timer resends from the first PSN not ACKed.
            now += TIMEOUT_NS;
            if let Some(s) = seg_of(expected) {
                truth.timer_retries[s] += 1;
            }
            queue = (expected..spec.packets).collect();
            continue;
        } else if !naks.is_empty() {
            now += GAP_NS;
            continue;
        } else {
            break;
        };
        let original = !sent_once[i as usize];
        sent_once[i as usize] = true;
        max_sent = Some(max_sent.map_or(i, |m| m.max(i)));
        let drop = if original { seg_of(i) } else { None };
        frame::roce(&mut buf, &fwd, Ecn::Ect0, &pkt(0x04, psn(i), B_QPN, None));
        let mut t = now + LINK_NS;
        for (k, tap) in frames.iter_mut().enumerate() {
            if k > 0 {
                let j = jitter(i, k, spec.jitter_ns);
                if k == 1 && original {
                    first_hop.push(j);
                }
                t += spec.hop_ns + j;
            }
            if drop.is_some_and(|s| s <= k) {
                break;
            }
            if original && spec.misses.contains(&(i, k)) {
                truth.missed[k] += 1;
                continue;
            }
            tap.push((t, buf.clone()));
        }
        if let Some(s) = drop {
            truth.lost[s].push(psn(i));
        }
        now += GAP_NS;
        if drop.is_some() {
            continue;
        }
        // B: in order ACKed, ahead NAKed once per missing PSN (and dropped).
        let (resp, nak) = if i == expected {
            expected += 1;
            nakd_for = None;
            (pkt(0x11, psn(i), A_QPN, Some(0x1f)), false)
        } else if i > expected && nakd_for != Some(expected) {
            nakd_for = Some(expected);
            if let Some(s) = seg_of(expected) {
                truth.naks[s] += 1;
            }
            (pkt(0x11, psn(expected), A_QPN, Some(0x60)), true)
        } else {
            continue;
        };
        frame::roce(&mut buf, &rev, Ecn::Ect0, &resp);
        let mut t = t + 2 * LINK_NS;
        for k in (0..n).rev() {
            frames[k].push((t, buf.clone()));
            t += spec.hop_ns;
        }
        if nak {
            naks.push((t + LINK_NS, expected));
        }
    }
    first_hop.sort_unstable();
    truth.queueing_median_ns = first_hop
        .get(first_hop.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0);
    let iface = [Interface {
        link: LinkType::Ethernet,
        snaplen: 65535,
        name: None,
        description: None,
    }];
    for (k, w) in outs.into_iter().enumerate() {
        let drops = spec.capture_drops.iter().find(|d| d.0 == k).map(|d| d.1);
        let format = if drops.is_some() {
            Format::PcapNg
        } else {
            Format::PcapNs
        };
        let mut w = Writer::new(w, format, &iface)?;
        let skew = spec.skew_ns.get(k).copied().unwrap_or(0);
        frames[k].sort_by_key(|f| f.0);
        for (t, f) in &frames[k] {
            let ts = (EPOCH_NS + t).saturating_add_signed(skew);
            w.write(ts, 0, f, f.len() as u32, None)?;
        }
        if let Some(n) = drops {
            w.get_mut().write_all(&isb(n))?;
        }
        w.flush()?;
    }
    Ok(truth)
}

/// A pcapng Interface Statistics Block for interface 0 with `isb_ifdrop` = `n`.
fn isb(n: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(40);
    b.extend_from_slice(&5u32.to_le_bytes()); // block type
    b.extend_from_slice(&40u32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes()); // interface id
    b.extend_from_slice(&0u64.to_le_bytes()); // timestamp (high, low)
    b.extend_from_slice(&5u16.to_le_bytes()); // isb_ifdrop
    b.extend_from_slice(&8u16.to_le_bytes());
    b.extend_from_slice(&n.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes()); // opt_endofopt
    b.extend_from_slice(&40u32.to_le_bytes());
    b
}
