//! The output side of a scenario: builds each frame, writes it through the capture
//! writer (which applies the snaplen), and counts the ground truth *as it writes*, so
//! `FILE.truth.json` describes exactly the frames in `FILE`.
//!
//! What the writer can see for itself (CE marks, CNPs, NAK and RNR NAK syndromes, ARP
//! operations, PFC quanta, opcodes, cut frames) it counts from the frame; what only the
//! model knows (this packet is a retransmission, a gap precedes it, the capture missed
//! PSNs) the scenario says with a [`Mark`]. The meanings follow
//! `/work/shared/captures/README.md`; extra keys are documented on [`Observable`].

use super::frame::{self, Link, Path, Pkt};
use crate::capture::writer::{Format, Interface, Writer};
use dissectors::{ArpOp, ArpRepr, Ecn, LinkType, Opcode, PauseRepr};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::IpAddr;

/// Why a packet is on the wire a second time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Retx {
    #[default]
    No,
    /// Go-back-N after a PSN sequence error NAK (the gap-filling packet included).
    Nak,
    /// Resent after an RNR NAK's timer.
    Rnr,
    /// Resent after the requester's ACK timeout, with no NAK.
    Timeout,
    /// A READ response sent again after a re-issued READ Request.
    Read,
}

/// What the model knows about a packet that the bytes do not say.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mark {
    pub retx: Retx,
    /// PSNs of this flow that the tap never saw, just before this packet (0: no gap).
    pub gap: u32,
    /// The gap will never be filled: the capture missed those packets.
    pub unrecovered: bool,
    /// A READ Request re-issued for the rest of a READ whose response went missing.
    pub reread: bool,
    /// A bit error on the link after the ICRC was computed.
    pub corrupt: bool,
}

/// The `observable` object of the truth file: what an analyzer watching this tap can
/// know. The first eight keys are those of `captures/README.md`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Observable {
    /// NAKs with syndrome 0x60 (PSN sequence error).
    pub nak_psn_seq: u64,
    /// RNR NAKs (syndrome 0x20-0x3F).
    pub rnr_nak: u64,
    /// Times a flow's PSN jumped past the next expected one at the tap.
    pub psn_gap_events: u64,
    /// Go-back-N resends after a NAK (gap filler included), resends after an RNR NAK or
    /// a timeout, READ responses sent again after a re-issued READ Request.
    pub retransmitted_packets: u64,
    /// Packets resent after a timeout with no NAK.
    pub timeout_retransmissions: u64,
    /// READ Requests re-issued for the rest of a READ.
    pub read_rerequests: u64,
    /// Packets with IP ECN = CE.
    pub ce_marked: u64,
    /// CNPs (opcode 0x81).
    pub cnp: u64,
    /// NAKs with syndrome 0x61 (invalid request).
    pub nak_invalid_request: u64,
    /// PSNs that never appear at the tap because the capture missed them.
    pub missing_psns: u64,
    /// PSN gaps never filled: no NAK, no retransmission (capture loss).
    pub unrecovered_gap_events: u64,
    /// Frames with a complete ICRC that does not match.
    pub icrc_bad: u64,
    /// Frames whose bytes contradict the protocol (decoding stops as malformed).
    pub malformed: u64,
    /// Frames cut by the capture (captured length < length on the wire).
    pub truncated: u64,
    /// PFC frames pausing at least one priority (quanta > 0).
    pub pfc_pause_frames: u64,
    /// PFC frames that only resume priorities (quanta 0, "XON").
    pub pfc_resume_frames: u64,
    pub arp_requests: u64,
    pub arp_replies: u64,
    /// ARP requests that got no reply.
    pub arp_unanswered: u64,
    /// RC connections seen in both directions (many-qp only: absent elsewhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// Flows, one per direction of a QP (many-qp only: absent elsewhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows: Option<u64>,
}

pub struct Out<'w> {
    w: Writer<&'w mut dyn Write>,
    buf: Vec<u8>,
    /// The model's clock, nanoseconds since the epoch.
    pub now: u64,
    last_ts: u64,
    snaplen: usize,
    pcapng: bool,
    pub obs: Observable,
    ops: [u64; 256],
    per_qp: BTreeMap<(IpAddr, IpAddr, u32), u64>,
    /// Scenario-specific facts for the truth file (addresses, QPs, timer codes, ...).
    pub facts: serde_json::Map<String, serde_json::Value>,
    pub notes: Vec<String>,
    /// The scenario options of the command line (`--qps`, `--peers`, ...).
    pub knobs: super::Knobs,
}

/// 2026-01-01T00:00:00Z: every trace starts here, so timestamps are reproducible.
pub const EPOCH_NS: u64 = 1_767_225_600_000_000_000;

impl<'w> Out<'w> {
    pub fn new(
        w: &'w mut dyn Write,
        link: LinkType,
        snaplen: u32,
        pcapng: bool,
        ifname: &str,
    ) -> io::Result<Self> {
        // Nanosecond pcap: at 100 Gb/s packets are ~80 ns apart, which microseconds would hide.
        let format = if pcapng {
            Format::PcapNg
        } else {
            Format::PcapNs
        };
        let ifaces = [Interface {
            link,
            snaplen,
            name: Some(ifname.to_string()),
            description: None,
        }];
        Ok(Out {
            w: Writer::new(w, format, &ifaces)?,
            buf: Vec::with_capacity(16 << 10),
            now: EPOCH_NS,
            last_ts: EPOCH_NS,
            snaplen: snaplen as usize,
            pcapng,
            obs: Observable::default(),
            ops: [0; 256],
            per_qp: BTreeMap::new(),
            facts: serde_json::Map::new(),
            notes: Vec::new(),
            knobs: super::Knobs::default(),
        })
    }

    pub fn frames(&self) -> u64 {
        self.w.frames
    }

    pub fn fact(&mut self, key: &str, v: impl Into<serde_json::Value>) {
        self.facts.insert(key.to_string(), v.into());
    }

    /// Writes a RoCE packet. `ecn` overrides the path's ECN (CE marks).
    pub fn roce(
        &mut self,
        ts: u64,
        path: &Path,
        ecn: Ecn,
        pkt: &Pkt,
        mark: Mark,
    ) -> io::Result<()> {
        let lay = frame::roce(&mut self.buf, path, ecn, pkt);
        let complete = lay.len <= self.snaplen;
        if mark.corrupt {
            // A bit error in the payload (or the ICRC when there is none): the PSN and
            // every header stay readable, only the ICRC check fails.
            let at = if pkt.payload_len > 0 {
                lay.payload
            } else {
                lay.icrc
            };
            self.buf[at] ^= 0x10;
            if complete {
                self.obs.icrc_bad += 1;
            }
        }
        if ecn == Ecn::Ce {
            self.obs.ce_marked += 1;
        }
        let op = pkt.bth.opcode;
        if op == Opcode::CNP {
            self.obs.cnp += 1;
        }
        if let Some(a) = pkt.aeth {
            match a.syndrome {
                0x60 => self.obs.nak_psn_seq += 1,
                0x61 => self.obs.nak_invalid_request += 1,
                0x20..=0x3f => self.obs.rnr_nak += 1,
                _ => {}
            }
        }
        match mark.retx {
            Retx::No => {}
            Retx::Timeout => {
                self.obs.retransmitted_packets += 1;
                self.obs.timeout_retransmissions += 1;
            }
            Retx::Nak | Retx::Rnr | Retx::Read => self.obs.retransmitted_packets += 1,
        }
        if mark.gap > 0 {
            // `missing_psns`: every PSN a gap skipped, whether a resend fills it later.
            self.obs.psn_gap_events += 1;
            self.obs.missing_psns += u64::from(mark.gap);
            if mark.unrecovered {
                self.obs.unrecovered_gap_events += 1;
            }
        }
        if mark.reread {
            // The re-issued READ Request is a packet sent again too (issue 38, item 4).
            self.obs.read_rerequests += 1;
            self.obs.retransmitted_packets += 1;
        }
        self.ops[usize::from(op.0)] += 1;
        *self
            .per_qp
            .entry((path.src, path.dst, pkt.bth.dest_qp.0))
            .or_insert(0) += 1;
        let comment = if self.pcapng {
            comment_for(&mark, pkt)
        } else {
            None
        };
        self.put(ts, lay.len, lay.len, comment.as_deref())
    }

    /// Writes a RoCE packet whose payload is `payload` (a MAD): `pkt.payload_len` must
    /// be its length. Counted like [`Out::roce`] (opcode, direction and QP).
    pub fn roce_payload(
        &mut self,
        ts: u64,
        path: &Path,
        pkt: &Pkt,
        payload: &[u8],
    ) -> io::Result<()> {
        let lay = frame::roce(&mut self.buf, path, path.ecn, pkt);
        self.buf[lay.payload..lay.payload + payload.len()].copy_from_slice(payload);
        frame::reseal(&mut self.buf, path, &lay);
        self.ops[usize::from(pkt.bth.opcode.0)] += 1;
        *self
            .per_qp
            .entry((path.src, path.dst, pkt.bth.dest_qp.0))
            .or_insert(0) += 1;
        self.put(ts, lay.len, lay.len, None)
    }

    /// Writes an ARP frame and counts requests and replies.
    pub fn arp(
        &mut self,
        ts: u64,
        src_mac: [u8; 6],
        dst_mac: [u8; 6],
        link: &Link,
        a: &ArpRepr,
        pad: bool,
    ) -> io::Result<()> {
        let n = frame::arp(&mut self.buf, src_mac, dst_mac, link, a, pad);
        match a.op {
            ArpOp::Request => self.obs.arp_requests += 1,
            ArpOp::Reply => self.obs.arp_replies += 1,
            ArpOp::Other(_) => {}
        }
        self.put(ts, n, n, None)
    }

    /// Writes a PFC / PAUSE frame and counts it as pause or resume.
    pub fn pause(&mut self, ts: u64, src_mac: [u8; 6], p: &PauseRepr) -> io::Result<()> {
        let n = frame::pause(&mut self.buf, src_mac, p);
        if (0..8).any(|i| p.quanta_for(i) > 0) {
            self.obs.pfc_pause_frames += 1;
        } else {
            self.obs.pfc_resume_frames += 1;
        }
        self.put(ts, n, n, None)
    }

    /// Writes a deliberately damaged frame: `data` is what the capture holds, `orig_len`
    /// the length on the wire, `truncated` whether a reader must see it as cut by the
    /// capture (shorter than the wire, or shorter than its own IP length with no wire
    /// length recorded) rather than malformed. Damaged frames are never longer than the
    /// smallest snaplen, so the snaplen cannot hide the damage.
    pub fn damaged(
        &mut self,
        ts: u64,
        data: &[u8],
        orig_len: usize,
        truncated: bool,
        comment: &str,
    ) -> io::Result<()> {
        debug_assert!(data.len() <= super::MIN_SNAPLEN as usize);
        if truncated {
            self.obs.truncated += 1;
        } else {
            self.obs.malformed += 1;
        }
        self.buf.clear();
        self.buf.extend_from_slice(data);
        let c = self.pcapng.then_some(comment);
        // `put` counts snaplen cuts; this frame is already counted.
        self.write_raw(ts, data.len(), orig_len, c)
    }

    /// Writes `self.buf[..cap]` (wire length `orig`), counting a snaplen cut.
    fn put(&mut self, ts: u64, cap: usize, orig: usize, comment: Option<&str>) -> io::Result<()> {
        if cap.min(self.snaplen) < orig {
            self.obs.truncated += 1;
        }
        self.write_raw(ts, cap, orig, comment)
    }

    fn write_raw(
        &mut self,
        ts: u64,
        cap: usize,
        orig: usize,
        comment: Option<&str>,
    ) -> io::Result<()> {
        debug_assert!(
            ts >= self.last_ts,
            "time went backwards: {ts} < {}",
            self.last_ts
        );
        self.last_ts = ts;
        self.now = self.now.max(ts);
        self.w.write(ts, 0, &self.buf[..cap], orig as u32, comment)
    }

    pub fn finish(self) -> io::Result<Summary> {
        let frames = self.w.frames;
        self.w.into_inner()?;
        let mut counts = serde_json::Map::new();
        for (op, n) in self.ops.iter().enumerate() {
            if *n > 0 {
                let o = Opcode(op as u8);
                let name = format!("op_0x{:02x} {}", op, dissectors::OpName(o, o.operation()));
                counts.insert(name, (*n).into());
            }
        }
        let per_qp = self
            .per_qp
            .iter()
            .map(|((s, d, q), n)| (format!("{s}>{d} qp=0x{q:06x}"), (*n).into()))
            .collect();
        Ok(Summary {
            frames,
            obs: self.obs,
            counts,
            per_direction_qp: per_qp,
            facts: self.facts,
            notes: self.notes,
        })
    }
}

/// Everything the truth file needs once the trace is written.
pub struct Summary {
    pub frames: u64,
    pub obs: Observable,
    pub counts: serde_json::Map<String, serde_json::Value>,
    pub per_direction_qp: serde_json::Map<String, serde_json::Value>,
    pub facts: serde_json::Map<String, serde_json::Value>,
    pub notes: Vec<String>,
}

/// The pcapng comment Wireshark shows on a packet the model singled out.
fn comment_for(m: &Mark, pkt: &Pkt) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    if m.gap > 0 {
        parts.push(if m.unrecovered {
            format!(
                "PSN gap: the capture missed {} packet(s) before this one (no NAK, no resend)",
                m.gap
            )
        } else {
            format!(
                "PSN gap: {} packet(s) lost upstream of the tap before this one",
                m.gap
            )
        });
    }
    match m.retx {
        Retx::No => {}
        Retx::Nak => parts.push("retransmission (go-back-N after a NAK)".into()),
        Retx::Rnr => parts.push("retransmission after the RNR NAK timer".into()),
        Retx::Timeout => parts.push("retransmission after the ACK timeout (no NAK)".into()),
        Retx::Read => parts.push("READ response sent again after a re-issued READ".into()),
    }
    if m.reread {
        parts.push("READ Request re-issued for the rest of the READ".into());
    }
    if m.corrupt {
        parts.push("bit error on the link: bad ICRC, the receiver drops it".into());
    }
    if let Some(a) = pkt.aeth {
        match a.syndrome {
            0x60 => parts.push(format!(
                "NAK: PSN sequence error, expected PSN {}",
                pkt.bth.psn
            )),
            0x20..=0x3f => parts.push(format!(
                "RNR NAK, timer code {} ({} us)",
                a.syndrome & 0x1f,
                dissectors::ib::aeth::rnr_timer_us(a.syndrome & 0x1f)
            )),
            _ => {}
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}
