//! The analysis held to a real RoCE stack: Linux Soft-RoCE (rdma_rxe) between two qemu VMs,
//! faults from netem, the kernel's own counters as ground truth (`lab/rxe/`, see its
//! README.md).
//!
//! * `lab_rxe_scenarios` runs `lab/rxe/run.sh OUT all` (13-20 minutes under TCG), or
//!   reuses the results in `$ROCETAP_LAB_OUT` (`NAME.pcap` + `NAME.truth.json`), then holds
//!   `rocetap analyze --format json` of every capture to the counters. It needs root and the
//!   lab (`lab/rxe/build.sh`); without them it prints `SKIP:` and passes — unless `CI` is
//!   set, then it fails.
//! * `rxe_samples` does the same for the committed `samples/rxe-*.pcap` (no VM; always runs).
//! * `lab_readers_selftest` runs `lab/rxe/selftest.py`: the lab's Python readers on cases
//!   made by hand (needs python3).
//!
//! Every equality is evaluated and printed (truth vs rocetap, with the reason it holds at
//! that tap) before the test fails, so one run shows everything the analyzer gets wrong.
//! Besides rocetap-vs-truth rows there are `lab` rows: the test's own reading of the wire
//! (IPv4/UDP/BTH headers parsed here, not by rocetap) against the kernel's counters; they
//! check that the truth means what the rows assume.

use crate::common;
mod lab_cm;
mod lab_qos;
mod lab_story;

use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const A_IP: [u8; 4] = [198, 18, 0, 1];
const B_IP: [u8; 4] = [198, 18, 0, 2];
/// The whole lab run must leave CI (90 minutes, about 60 used) room for the rest. Measured
/// on this 2-core machine: 13-16 minutes on some days, 64-84 s per scenario (over 18 minutes
/// for the 15) on others; the two rdma_cm scenarios add 105-141 s. The budget is 34 minutes.
const LAB_BUDGET: Duration = Duration::from_secs(34 * 60);

// ---------------------------------------------------------------------------------------
// Reading the capture (independently of rocetap's decoder)
// ---------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Pkt {
    /// Position in the capture.
    idx: usize,
    src: [u8; 4],
    dst: [u8; 4],
    /// IPv4 ID, unwrapped per direction in capture order: rxe takes it from one counter per
    /// (src, dst, UDP) in the sending kernel, so it orders a direction's packets as sent.
    id: i64,
    /// Capture time, ns.
    ts_ns: u64,
    ecn: u8,
    op: u8,
    qp: u32,
    psn: u32,
    syndrome: Option<u8>,
    /// A READ request's DMA length (its RETH).
    read_len: Option<u32>,
}

impl Pkt {
    fn a_to_b(&self) -> bool {
        self.src == A_IP && self.dst == B_IP
    }
    fn b_to_a(&self) -> bool {
        self.src == B_IP && self.dst == A_IP
    }
    /// The PSNs this request consumes: a READ one per `pmtu` of its length (at least
    /// one), anything else one.
    fn span(&self, pmtu: u32) -> u32 {
        self.read_len.map_or(1, |n| n.div_ceil(pmtu.max(1)).max(1))
    }
    fn is_read_response(&self) -> bool {
        (0x0D..=0x10).contains(&self.op)
    }
    /// An RC request (SEND, WRITE, READ Request, atomics), not a response or ACK.
    fn is_rc_request(&self) -> bool {
        self.qp != 1 && self.op < 0x20 && !(0x0D..=0x12).contains(&self.op)
    }
    fn is_rc_response(&self) -> bool {
        self.qp != 1 && (0x0D..=0x12).contains(&self.op)
    }
    fn nak_kind(&self) -> Option<Nak> {
        let s = self.syndrome?;
        match s >> 5 {
            1 => Some(Nak::Rnr),
            3 if s & 0x1f == 0 => Some(Nak::Seq),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Nak {
    Seq,
    Rnr,
}

fn read_pcap(path: &Path) -> Vec<Pkt> {
    let d = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(d.len() >= 24, "{}: not a pcap file", path.display());
    let magic = u32::from_le_bytes(d[0..4].try_into().unwrap());
    let le = match magic {
        0xA1B2_C3D4 | 0xA1B2_3C4D => true,
        0xD4C3_B2A1 | 0x4D3C_B2A1 => false,
        _ => panic!("{}: not a classic pcap file", path.display()),
    };
    let nanos = matches!(magic, 0xA1B2_3C4D | 0x4D3C_B2A1);
    let u32at = |o: usize| {
        let b: [u8; 4] = d[o..o + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let mut out = Vec::new();
    let mut last_id: HashMap<([u8; 4], [u8; 4]), (i64, i64)> = HashMap::new();
    let (mut off, mut idx) = (24usize, 0usize);
    while off + 16 <= d.len() {
        let caplen = u32at(off + 8) as usize;
        let frac = u64::from(u32at(off + 4));
        let ts_ns = u64::from(u32at(off)) * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
        off += 16;
        let p = &d[off..(off + caplen).min(d.len())];
        off += caplen;
        idx += 1;
        if p.len() < 14 + 20 || p[12..14] != [0x08, 0x00] {
            continue;
        }
        let ip = &p[14..];
        let ihl = usize::from(ip[0] & 15) * 4;
        if ip[9] != 17 || ip.len() < ihl + 8 + 12 {
            continue;
        }
        let udp = &ip[ihl..];
        if u16::from_be_bytes([udp[2], udp[3]]) != 4791 {
            continue;
        }
        let bth = &udp[8..];
        let src: [u8; 4] = ip[12..16].try_into().unwrap();
        let dst: [u8; 4] = ip[16..20].try_into().unwrap();
        let raw = i64::from(u16::from_be_bytes([ip[4], ip[5]]));
        let e = last_id.entry((src, dst)).or_insert((raw, 0));
        if raw - e.0 < -32768 {
            e.1 += 65536;
        } else if raw - e.0 > 32768 {
            e.1 -= 65536;
        }
        e.0 = raw;
        let op = bth[0];
        out.push(Pkt {
            idx,
            src,
            dst,
            id: raw + e.1,
            ts_ns,
            ecn: ip[1] & 3,
            op,
            qp: u32::from_be_bytes([0, bth[5], bth[6], bth[7]]),
            psn: u32::from_be_bytes([0, bth[9], bth[10], bth[11]]),
            syndrome: (matches!(op, 0x11 | 0x12) && bth.len() > 12).then(|| bth[12]),
            read_len: (op == 0x0C && bth.len() >= 28)
                .then(|| u32::from_be_bytes([bth[24], bth[25], bth[26], bth[27]])),
        });
    }
    out
}

/// Retries the tap may not show: when the packets A lost before the tap were the last it
/// had sent, B saw nothing after them and sent no NAK; A's retry timer then resends them,
/// and the tap sees each resent PSN for the first time: no rewind, only the next PSN of
/// the stream after a silence of A's as long as the timer. Each request that continues
/// its QP's PSN stream exactly after a silence of [`TIMER_SILENCE_NS`] or more counts once
/// per such length (the resend may be lost again). An upper bound: a pause looks the same.
fn hidden_retry_room(pkts: &[Pkt], pmtu: u32) -> u64 {
    let mut next_new: HashMap<u32, u32> = HashMap::new();
    let mut last_ts: Option<u64> = None;
    let mut room = 0;
    for p in pkts.iter().filter(|p| p.a_to_b()) {
        if p.is_rc_request() {
            let next = next_new.get(&p.qp).copied();
            if next == Some(p.psn) {
                room += p.ts_ns.saturating_sub(last_ts.unwrap_or(p.ts_ns)) / TIMER_SILENCE_NS;
            }
            if next.is_none_or(|n| psn_le(n, p.psn)) {
                next_new.insert(p.qp, p.psn.wrapping_add(p.span(pmtu)) & 0xFF_FFFF);
            }
        }
        last_ts = Some(p.ts_ns);
    }
    room
}

/// How A's RC request stream ends on the wire: its last request's opcode, and whether
/// that is a First or Middle packet of a SEND or WRITE (the message never ended).
fn wire_end(pkts: &[Pkt]) -> lab_story::WireEnd {
    let Some(at) = pkts.iter().rposition(|p| p.a_to_b() && p.is_rc_request()) else {
        return lab_story::WireEnd::default();
    };
    let last = &pkts[at];
    let name = match last.op {
        0x00 => "SEND First",
        0x01 => "SEND Middle",
        0x06 => "WRITE First",
        0x07 => "WRITE Middle",
        0x02..=0x05 => "SEND Last/Only",
        0x08..=0x0B => "WRITE Last/Only",
        _ => "another request",
    };
    // B's ACK of it (an ACK, not a NAK, for its PSN or a later one) came after it
    let acked = pkts[at..]
        .iter()
        .any(|p| p.b_to_a() && p.op == 0x11 && p.nak_kind().is_none() && psn_le(last.psn, p.psn));
    lab_story::WireEnd {
        mid_message: Some(matches!(last.op, 0x00 | 0x01 | 0x06 | 0x07)),
        last_op: format!(
            "{name} (0x{:02x}) PSN {}, {}",
            last.op,
            last.psn,
            if acked {
                "acknowledged"
            } else {
                "not acknowledged"
            }
        ),
    }
}

/// a < b in 24-bit PSN space.
fn psn_lt(a: u32, b: u32) -> bool {
    let d = b.wrapping_sub(a) & 0xFF_FFFF;
    d != 0 && d < 0x80_0000
}

fn psn_le(a: u32, b: u32) -> bool {
    a == b || psn_lt(a, b)
}

/// What the test reads off the wire itself.
#[derive(Default, Debug)]
struct Wire {
    a_to_b: u64,
    b_to_a: u64,
    /// A→B packets to QP1 (CM MADs, UD) and their count the other way.
    qp1_a_to_b: u64,
    qp1_b_to_a: u64,
    /// Distinct (QP, PSN) of A→B RC requests.
    req_distinct: u64,
    /// A→B RC requests that advanced their QP's PSN stream in A's send order (first
    /// transmissions; a READ re-request carries a PSN never used before but is not one).
    req_originals: u64,
    /// A→B RC responses (ACKs A sends as the responder of B's requests, e.g. on perftest's
    /// rdma_cm control QP).
    a_responses: u64,
    /// A→B packets whose IPv4 ID repeats an earlier one: copies made after the sender.
    repeated_ids: u64,
    nak_seq: u64,
    nak_rnr: u64,
    ce_a_to_b: u64,
    /// Late originals: first transmissions (by IP ID order) that reached the tap after a
    /// higher PSN of their QP, whether or not the resend of their PSN overtook them.
    late_originals: u64,
    /// Rewinds of A's PSNs (in A's send order), by what preceded them at the tap.
    rewinds_nak: u64,
    rewinds_rnr: u64,
    rewinds_read: u64,
    rewinds_timer: u64,
    /// RNR NAKs with no rewind of their own: another RNR NAK came before A resent (one
    /// RNR wait answers both), or none came after them at all.
    rnr_absorbed: u64,
    read_responses: u64,
    read_response_distinct: u64,
    /// READ response PSNs skipped the first time they were due (gaps ahead of the stream).
    read_missing: u64,
    /// Retries of A's the tap may not show ([`TIMER_SILENCE_NS`]).
    hidden_retry_room: u64,
}

/// A silence of A's this long (or longer) may be a retry timer running. In the stored
/// `loss-upstream-atomic` run whose kernel count the tap fell short of, A's rewinds after
/// silences of 30 ms or more came after 41-71 ms, and its other gaps stayed under 20 ms.
/// A silence as long also comes without any retry (the VM descheduled, the send queue
/// empty: one of 46.8 ms in a `loss-downstream` run), which only makes the room wider.
const TIMER_SILENCE_NS: u64 = 30_000_000;

impl Wire {
    fn rewinds(&self) -> u64 {
        self.rewinds_nak + self.rewinds_rnr + self.rewinds_read + self.rewinds_timer
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Ev {
    Nak(Nak),
    ReadGap,
}

/// `qp_a_of_b`: B's QPN (the A→B packets' DestQP) -> A's QPN, from perftest's output.
fn read_wire(pkts: &[Pkt], qp_a_of_b: &HashMap<u32, u32>, pmtu: u32) -> Wire {
    let mut w = Wire::default();
    let a_of = |qp_b: u32| *qp_a_of_b.get(&qp_b).unwrap_or(&qp_b);

    // --- plain counts ---
    let mut distinct = HashSet::new();
    let mut seen_ids = HashSet::new();
    for p in pkts {
        if p.a_to_b() {
            w.a_to_b += 1;
            w.ce_a_to_b += u64::from(p.ecn == 3);
            if !seen_ids.insert(p.id) {
                w.repeated_ids += 1;
            }
            if p.qp == 1 {
                w.qp1_a_to_b += 1;
            } else if p.is_rc_request() {
                distinct.insert((p.qp, p.psn));
            } else if p.is_rc_response() {
                w.a_responses += 1;
            }
        } else if p.b_to_a() {
            w.b_to_a += 1;
            w.qp1_b_to_a += u64::from(p.qp == 1);
            match p.nak_kind() {
                Some(Nak::Seq) => w.nak_seq += 1,
                Some(Nak::Rnr) => w.nak_rnr += 1,
                None => {}
            }
        }
    }
    w.req_distinct = distinct.len() as u64;

    // --- B→A events that make A rewind: NAKs, and gaps in the READ responses ---
    // (qp of A, capture idx, event, psn)
    let mut events: Vec<(u32, usize, Ev, u32)> = Vec::new();
    let mut resp: HashMap<u32, (u32, u32)> = HashMap::new(); // qp -> (last, max)
                                                             // A's first READ Request per QP of A (its PSN is the first response's): a stream whose
                                                             // first response was lost before the tap is missing it too.
    let mut first_read: HashMap<u32, u32> = HashMap::new();
    for p in pkts.iter().filter(|p| p.a_to_b() && p.op == 0x0C) {
        first_read.entry(a_of(p.qp)).or_insert(p.psn);
    }
    let mut resp_distinct = HashSet::new();
    for p in pkts.iter().filter(|p| p.b_to_a() && p.is_rc_response()) {
        if let Some(k) = p.nak_kind() {
            events.push((p.qp, p.idx, Ev::Nak(k), p.psn));
        }
        if p.is_read_response() {
            w.read_responses += 1;
            resp_distinct.insert((p.qp, p.psn));
            if let Some(&f) = first_read.get(&p.qp).filter(|&&f| psn_lt(f, p.psn)) {
                let before = f.wrapping_sub(1) & 0xFF_FFFF;
                resp.entry(p.qp).or_insert((before, before));
            }
            match resp.get_mut(&p.qp) {
                None => {
                    resp.insert(p.qp, (p.psn, p.psn));
                }
                Some((last, max)) => {
                    let next = last.wrapping_add(1) & 0xFF_FFFF;
                    if psn_lt(next, p.psn) {
                        // a response the requester expected next is missing: it asks again
                        events.push((p.qp, p.idx, Ev::ReadGap, next));
                    }
                    let after_max = max.wrapping_add(1) & 0xFF_FFFF;
                    if psn_lt(after_max, p.psn) {
                        w.read_missing += u64::from(p.psn.wrapping_sub(after_max) & 0xFF_FFFF);
                    }
                    *last = p.psn;
                    if psn_lt(*max, p.psn) {
                        *max = p.psn;
                    }
                }
            }
        }
    }
    w.read_response_distinct = resp_distinct.len() as u64;

    // --- A→B in A's send order (IP ID), copies dropped ---
    let mut sent: Vec<&Pkt> = pkts
        .iter()
        .filter(|p| p.a_to_b() && p.is_rc_request())
        .collect();
    sent.sort_by_key(|p| (p.id, p.idx));
    sent.dedup_by_key(|p| p.id);
    let mut original: HashSet<usize> = HashSet::new();
    // Per QP: the PSN after the previous request's span, and the next new PSN (after the
    // furthest span sent). A READ consumes a PSN per response packet, so a READ asked
    // again from a lost response on has a PSN above the READ's own but inside its span:
    // a rewind too (rxe counts it as a retry), though above the previous request's PSN.
    let mut prev_end: HashMap<u32, u32> = HashMap::new();
    let mut next_new: HashMap<u32, u32> = HashMap::new();
    let mut consumed: HashMap<u32, usize> = HashMap::new(); // qp of A -> events before idx used
                                                            // A packet was sent before every packet with a later identification, so it left A no
                                                            // later than the first of those passed the tap: a rewind whose first packet came late
                                                            // (reordered) is placed there, not where it arrived. (The CI's reorder run: the rewind
                                                            // to 4226906 arrived 60 packets late, after the NAK of the next rewind, and that NAK
                                                            // was charged to it, which made the next rewind a "timer" retry.)
    let mut sent_by = vec![usize::MAX; sent.len()];
    for i in (0..sent.len()).rev() {
        sent_by[i] = sent[i]
            .idx
            .min(sent_by.get(i + 1).copied().unwrap_or(usize::MAX));
    }
    for (p, &by) in sent.iter().zip(&sent_by) {
        let end = p.psn.wrapping_add(p.span(pmtu)) & 0xFF_FFFF;
        let is_new = next_new.get(&p.qp).is_none_or(|&n| psn_le(n, p.psn));
        if is_new {
            original.insert(p.idx);
            next_new.insert(p.qp, end);
        } else if prev_end.get(&p.qp).is_some_and(|&e| psn_lt(p.psn, e)) {
            // A rewind: A went back to p.psn. What did the tap show since the last one?
            let qa = a_of(p.qp);
            let from = consumed.get(&qa).copied().unwrap_or(0);
            // Any NAK / READ gap since the previous rewind counts, whatever PSN it names: rxe
            // resumes from its completer's PSN, which after an RNR NAK, and often under
            // reordering (a NAK that completes a WQE is consumed as an ACK), lags below the
            // NAK's PSN. (Requiring PSN <= the rewind point turns 82 of reorder's 104 rewinds
            // into "timer" retries without any silence before them.)
            let pending: Vec<_> = events
                .iter()
                .filter(|e| e.0 == qa && e.1 >= from && e.1 < by)
                .map(|e| e.2)
                .collect();
            let rnrs = pending.iter().filter(|e| **e == Ev::Nak(Nak::Rnr)).count() as u64;
            if rnrs > 0 {
                w.rewinds_rnr += 1;
                w.rnr_absorbed += rnrs - 1;
            } else if pending.contains(&Ev::Nak(Nak::Seq)) {
                w.rewinds_nak += 1;
            } else if pending.contains(&Ev::ReadGap) {
                w.rewinds_read += 1;
            } else {
                w.rewinds_timer += 1;
            }
            consumed.insert(qa, by);
        }
        prev_end.insert(p.qp, end);
    }

    // RNR NAKs after A's last rewind of their QP: no resend answered them on the wire.
    w.rnr_absorbed += events
        .iter()
        .filter(|(qa, idx, ev, _)| {
            *ev == Ev::Nak(Nak::Rnr) && *idx >= consumed.get(qa).copied().unwrap_or(0)
        })
        .count() as u64;
    w.req_originals = original.len() as u64;
    w.hidden_retry_room = hidden_retry_room(pkts, pmtu);

    // --- late originals, in capture order ---
    let mut max_cap: HashMap<u32, u32> = HashMap::new();
    for p in pkts.iter().filter(|p| p.a_to_b() && p.is_rc_request()) {
        let behind = max_cap.get(&p.qp).is_some_and(|&m| psn_lt(p.psn, m));
        if behind && original.contains(&p.idx) {
            w.late_originals += 1;
        }
        if !behind {
            max_cap.insert(p.qp, p.psn);
        }
    }
    w
}

// ---------------------------------------------------------------------------------------
// Truth, analysis, and the table
// ---------------------------------------------------------------------------------------

struct Row {
    kind: &'static str,
    what: String,
    truth: String,
    rocetap: String,
    ok: bool,
    why: String,
}

#[derive(Default)]
struct Table {
    rows: Vec<Row>,
}

impl Table {
    /// rocetap's figure must equal the truth.
    fn eq(&mut self, what: &str, truth: i64, src: &str, rocetap: Option<i64>, why: &str) {
        self.rows.push(Row {
            kind: "rocetap",
            what: what.into(),
            truth: format!("{truth} ({src})"),
            rocetap: rocetap.map_or("missing".into(), |v| v.to_string()),
            ok: rocetap == Some(truth),
            why: why.into(),
        });
    }
    /// rocetap's figure must be within `tol` of the test's own reading of the wire, for
    /// splits no kernel counter gives (the totals they add up to are held exactly).
    fn near(
        &mut self,
        what: &str,
        truth: i64,
        src: &str,
        rocetap: Option<i64>,
        tol: i64,
        why: &str,
    ) {
        self.rows.push(Row {
            kind: "rocetap",
            what: what.into(),
            truth: format!("{truth} ({src}, ±{tol})"),
            rocetap: rocetap.map_or("missing".into(), |v| v.to_string()),
            ok: rocetap.is_some_and(|v| (v - truth).abs() <= tol),
            why: why.into(),
        });
    }
    /// The test's own wire reading must equal the kernel's counter (the lab is what it claims).
    fn lab(&mut self, what: &str, kernel: i64, src: &str, wire: i64, why: &str) {
        self.rows.push(Row {
            kind: "lab",
            what: what.into(),
            truth: format!("{kernel} ({src})"),
            rocetap: format!("wire {wire}"),
            ok: wire == kernel,
            why: why.into(),
        });
    }
    /// Printed for context, never fails.
    fn info(&mut self, what: &str, value: String, why: &str) {
        self.rows.push(Row {
            kind: "info",
            what: what.into(),
            truth: value,
            rocetap: String::new(),
            ok: true,
            why: why.into(),
        });
    }
    fn check(&mut self, kind: &'static str, what: &str, ok: bool, detail: String, why: &str) {
        self.rows.push(Row {
            kind,
            what: what.into(),
            truth: "holds".into(),
            rocetap: detail,
            ok,
            why: why.into(),
        });
    }
    fn render(&self, name: &str) -> String {
        let mut s = String::new();
        let bad = self.rows.iter().filter(|r| !r.ok).count();
        let _ = writeln!(s, "\n== {name}: {} checks, {bad} failed", self.rows.len());
        let w = |f: fn(&Row) -> &str, min: usize| {
            self.rows
                .iter()
                .map(|r| f(r).len())
                .max()
                .unwrap_or(0)
                .max(min)
        };
        let (w1, w2, w3) = (w(|r| &r.what, 8), w(|r| &r.truth, 5), w(|r| &r.rocetap, 12));
        let _ = writeln!(
            s,
            "   {:4} {:7} {:w1$} {:w2$} {:w3$} why",
            "", "kind", "quantity", "truth", "rocetap/wire"
        );
        for r in &self.rows {
            let _ = writeln!(
                s,
                "   {:4} {:7} {:w1$} {:w2$} {:w3$} {}",
                if r.kind == "info" {
                    ""
                } else if r.ok {
                    "ok"
                } else {
                    "FAIL"
                },
                r.kind,
                r.what,
                r.truth,
                r.rocetap,
                r.why
            );
        }
        s
    }
}

fn get(v: &Value, path: &str) -> Option<i64> {
    let mut cur = v;
    for k in path.split('.') {
        cur = cur.get(k)?;
    }
    cur.as_i64()
}

fn counter(truth: &Value, vm: &str, name: &str) -> i64 {
    get(&truth["hw_counters_delta"][vm], name).unwrap_or(0)
}

fn analyze(pcap: &Path) -> Result<Value, String> {
    let out = Command::new(common::bin())
        .args(["analyze", "--format", "json"])
        .arg(pcap)
        .output()
        .map_err(|e| format!("run rocetap: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "rocetap analyze {} failed: {}",
            pcap.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("analysis JSON: {e}"))
}

fn ip_of(v: &Value, k: &str, ip: [u8; 4]) -> bool {
    v[k].as_str() == Some(&format!("{}.{}.{}.{}", ip[0], ip[1], ip[2], ip[3]))
}

fn flow_qp(f: &Value) -> Option<u32> {
    u32::from_str_radix(f["qp"].as_str()?.trim_start_matches("0x"), 16).ok()
}

/// Sum of a counter over the A→B RC flows (the requester's request flows).
fn a_to_b_sum(an: &Value, key: &str) -> Option<i64> {
    let flows = an["flows"].as_array()?;
    let mut sum = 0;
    for f in flows {
        if ip_of(f, "src", A_IP) && ip_of(f, "dst", B_IP) && f["transport"] == "RC" {
            sum += f.get(key)?.as_i64()?;
        }
    }
    Some(sum)
}

/// Holds one scenario's capture to its truth; returns the table.
fn check_scenario(name: &str, pcap: &Path, truth: &Value) -> Table {
    let mut t = Table::default();
    let an = match analyze(pcap) {
        Ok(v) => v,
        Err(e) => {
            t.check("rocetap", "analyze runs", false, e, "");
            return t;
        }
    };
    let tot = &an["totals"];
    let tv = |k: &str| get(tot, k);
    let scen = truth["scenario"].as_str().unwrap_or(name).to_string();
    let tap = &truth["tap"];
    let tap_vm = tap["vm"].as_str().unwrap_or("?").to_string();
    let sees_all_a = tap["sees_all_requester_packets"].as_bool().unwrap_or(false);
    let sees_all_b = tap["sees_all_responder_packets"].as_bool().unwrap_or(false);
    let netem: Vec<Value> = truth["netem"].as_array().cloned().unwrap_or_default();
    let lost_before = |dir: &str| -> i64 {
        netem
            .iter()
            .filter(|n| n["direction"] == dir && n["relative_to_tap"] == "before")
            .filter_map(|n| n["lost"].as_i64())
            .sum()
    };
    let dups: i64 = netem.iter().filter_map(|n| n["duplicates"].as_i64()).sum();
    let ce_marks: Option<i64> = netem.iter().find_map(|n| n["ce_marks"].as_i64());
    let c_a = |k: &str| counter(truth, "A", k);
    let c_b = |k: &str| counter(truth, "B", k);

    let mut qp_a_of_b = HashMap::new();
    let mut data_qps = Vec::new(); // (A's QPN, B's QPN)
    for q in truth["perftest"]["client_qps"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        let (la, rb) = (q["local_qpn"].as_u64(), q["remote_qpn"].as_u64());
        if let (Some(la), Some(rb)) = (la, rb) {
            qp_a_of_b.insert(rb as u32, la as u32);
            data_qps.push((la as u32, rb as u32));
        }
    }
    let pmtu =
        get(truth, "pmtu").expect("truth.pmtu: lab.py records the scenario's path MTU") as u32;
    let pkts = read_pcap(pcap);
    let w = read_wire(&pkts, &qp_a_of_b, pmtu);
    let end = wire_end(&pkts);
    let dropped_by_kernel = get(truth, "capture.dropped_by_kernel").unwrap_or(-1);

    // ---- preconditions: the lab did what the truth says ----
    // (rdma-cm-no-server's client fails by design; check_cm_failure checks that.)
    if scen != "rdma-cm-no-server" {
        t.check(
            "lab",
            "perftest completed",
            get(truth, "perftest.client_rc") == Some(0),
            format!("rc {:?}", get(truth, "perftest.client_rc")),
            "every message was delivered, so every PSN eventually crossed the tap",
        );
    }
    t.lab(
        "capture dropped by kernel",
        0,
        "tcpdump",
        dropped_by_kernel,
        "the capture itself lost nothing: every gap at the tap is a netem loss",
    );
    let a_expect = c_a("sent_pkts") - lost_before("A->B") + dups;
    t.lab(
        "A->B packets at the tap",
        a_expect,
        "A sent_pkts - netem lost before tap + dups",
        w.a_to_b as i64,
        "faults before the tap remove (or copy) packets the tap would see; faults after it do not",
    );
    t.lab(
        "B->A packets at the tap",
        c_b("sent_pkts") - lost_before("B->A"),
        "B sent_pkts - netem lost before tap",
        w.b_to_a as i64,
        "the same for the responder's packets",
    );
    if sees_all_b || c_b("out_of_seq_request") == 0 {
        t.lab(
            "PSN-sequence NAKs on the wire",
            c_b("out_of_seq_request"),
            "B out_of_seq_request",
            w.nak_seq as i64,
            "B sends one NAK per sequence error and nothing drops B's packets before this tap",
        );
        t.lab(
            "RNR NAKs on the wire",
            c_b("send_rnr_err"),
            "B send_rnr_err",
            w.nak_rnr as i64,
            "as above, for RNR NAKs",
        );
    }
    // rxe's completer counts a retry (completer_retry_err) for each NAK, READ response gap
    // or timer expiry that finds something to resend; after an RNR NAK, though, A resends
    // when its RNR timer fires, which is not counted, and the PSN-sequence NAK rxe sends right
    // after the RNR NAK is counted only when A had sent beyond it. So with RNR NAKs (and no
    // other fault) the retries are B's RNR NAKs: one rewind each.
    // Any other retry (a timer expiry, under load) shows on the wire as a rewind with no
    // RNR NAK before it.
    // An RNR NAK that reaches A while it already waits on an earlier one's RNR timer is
    // answered by that same resend: the wire shows two RNR NAKs before one rewind
    // (`rnr_absorbed`, measured on the wire; seen in the rnr scenario, 1 of 82).
    let rnr = c_b("send_rnr_err") > 0;
    // Retries the tap may not show, when A's packets are lost before it.
    let hidden = if lost_before("A->B") > 0 {
        w.hidden_retry_room as i64
    } else {
        0
    };
    let rnr_retries = c_b("send_rnr_err") - w.rnr_absorbed as i64;
    let (episodes, episodes_src) = if rnr {
        (
            rnr_retries + (w.rewinds() - w.rewinds_rnr) as i64,
            "B send_rnr_err - RNR NAKs absorbed + wire's non-RNR rewinds",
        )
    } else {
        (c_a("completer_retry_err"), "A completer_retry_err")
    };
    if rnr {
        t.info(
            "RNR NAKs absorbed (wire)",
            format!("{}", w.rnr_absorbed),
            "RNR NAKs that came while A already waited on an earlier RNR NAK's timer, or after A's last resend",
        );
        t.lab(
            "RNR-triggered rewinds on the wire",
            rnr_retries,
            "B send_rnr_err - RNR NAKs absorbed",
            w.rewinds_rnr as i64,
            "every RNR NAK B sent made A wait its RNR timer and resend from its oldest \
             unacknowledged PSN, one resend for RNR NAKs that came during the same wait",
        );
    } else if hidden > 0 {
        let wire = w.rewinds() as i64;
        t.check(
            "lab",
            "rewinds of A's PSNs on the wire",
            wire <= episodes && episodes <= wire + hidden,
            format!(
                "wire {wire}, and up to {hidden} the tap cannot show; {episodes_src} {episodes}"
            ),
            "each retry rxe's completer starts resends from a PSN behind the next new one, \
             except a timer retry of packets that were all lost before the tap: the tap \
             never saw the PSNs it resends (room: A's silences of a retry timer before the \
             next PSN of its stream)",
        );
    } else {
        t.lab(
            "rewinds of A's PSNs on the wire",
            episodes,
            episodes_src,
            w.rewinds() as i64,
            "each retry rxe's completer starts (NAK, READ gap or timer) resends from a PSN \
             behind the next new one: at or below the last one sent, or inside the span of \
             the READ sent last (a READ asked again from its first lost response)",
        );
    }
    if rnr {
        t.info(
            "A completer_retry_err / rcvd_rnr_err",
            format!("{} / {}", c_a("completer_retry_err"), c_a("rcvd_rnr_err")),
            "not the RNR retries: RNR-timer resends are not completer retries, and A does not \
             count every RNR NAK it gets (lower bounds; compare B send_rnr_err)",
        );
    }
    if dups > 0 {
        t.lab(
            "repeated IPv4 IDs A->B",
            dups,
            "netem sent - offered",
            w.repeated_ids as i64,
            "netem copies the skb, so a duplicate carries the original's IP ID",
        );
    }
    if let Some(m) = ce_marks {
        t.lab(
            "CE marks A->B on the wire",
            m,
            "netem 'dropped' with ecn",
            w.ce_a_to_b as i64,
            "with ecn netem marks ECT packets CE instead of dropping them and counts each in 'dropped'",
        );
    }

    // ---- rocetap against the truth ----
    if sees_all_b || c_b("out_of_seq_request") == 0 {
        t.eq(
            "totals.nak_psn_seq",
            c_b("out_of_seq_request"),
            "B out_of_seq_request",
            tv("nak_psn_seq"),
            if tap_vm == "B" {
                "B sends the NAKs; its own tap sees all it sent (no fault on B's egress)"
            } else if c_b("out_of_seq_request") == 0 {
                "B sent no NAK, so no tap can see one"
            } else {
                "B's egress is not lossy, so A's tap sees every NAK B sent"
            },
        );
        t.eq(
            "totals.rnr_nak",
            c_b("send_rnr_err"),
            "B send_rnr_err",
            tv("rnr_nak"),
            "B sends the RNR NAKs and nothing drops them before the tap",
        );
    }
    let why_episodes = if rnr {
        "each RNR NAK B sent is one retry of A's (after its RNR timer; the NAK-seq rxe sends \
         right after it belongs to the same event), plus any timer retry the wire shows"
    } else {
        "rxe's completer counts each retry it starts (NAK-, READ- or timer-triggered); \
         each shows at the tap as one rewind of A's PSNs"
    };
    if scen.starts_with("reorder") {
        // netem has delivered bursts of a hundred packets in reverse order: a rewind whose
        // packets all arrive after the run before it, last first, reads at the tap as that
        // run going on. One such in a run's ~120 retries is allowed here; the packets
        // resent are held exactly below.
        t.near(
            "totals.retransmission_episodes",
            episodes,
            episodes_src,
            tv("retransmission_episodes"),
            1,
            why_episodes,
        );
    } else if c_b("completer_retry_err") > 0 {
        // B is a requester too (bidir: -b): its retries are in the totals.
        t.eq(
            "totals.retransmission_episodes",
            episodes + c_b("completer_retry_err"),
            "A completer_retry_err + B completer_retry_err",
            tv("retransmission_episodes"),
            "with traffic both ways each side's completer counts the retries it starts",
        );
    } else if hidden > 0 && !rnr {
        // The kernel's count is held to the wire above, within what the tap cannot show;
        // rocetap reads what the tap shows.
        t.eq(
            "totals.retransmission_episodes",
            w.rewinds() as i64,
            "rewinds of A's PSNs on the wire",
            tv("retransmission_episodes"),
            "a retry shows at this tap as a rewind, unless it resent only packets lost \
             before the tap (see the lab row)",
        );
    } else {
        t.eq(
            "totals.retransmission_episodes",
            episodes,
            episodes_src,
            tv("retransmission_episodes"),
            why_episodes,
        );
    }
    let parts = [
        "nak_retransmission_episodes",
        "rnr_retransmission_episodes",
        "timeout_retransmission_episodes",
        "read_retransmission_episodes",
    ];
    let sum = parts
        .iter()
        .map(|k| tv(k))
        .try_fold(0i64, |a, v| v.map(|v| a + v));
    t.eq(
        "sum of episodes by trigger",
        tv("retransmission_episodes").unwrap_or(-1),
        "rocetap retransmission_episodes",
        sum,
        "every episode has exactly one trigger",
    );
    let why_trigger = "the test's reading of the wire: a rewind (in A's send order, by IP ID) after a \
                       NAK / RNR NAK / READ response gap at the tap since the QP's previous rewind, \
                       else the retransmit timer; rocetap reads causes in arrival order at the tap, so \
                       where a cause and a rewind cross on the way one retry in 50 may be read \
                       differently (the total is held exactly above)";
    // No kernel counter splits the retries by cause: allow one in 50 (at least one).
    let tol = 1 + tv("retransmission_episodes").unwrap_or(0) / 50;
    t.near(
        "totals.nak_retransmission_episodes",
        w.rewinds_nak as i64,
        "wire",
        tv("nak_retransmission_episodes"),
        tol,
        why_trigger,
    );
    t.eq(
        "totals.rnr_retransmission_episodes",
        w.rewinds_rnr as i64,
        "wire",
        tv("rnr_retransmission_episodes"),
        "rxe shows an RNR event as RNR NAK(p) then NAK-seq(p); the retry after the RNR timer is one, RNR-triggered",
    );
    t.near(
        "totals.timeout_retransmission_episodes",
        w.rewinds_timer as i64,
        "wire",
        tv("timeout_retransmission_episodes"),
        tol,
        why_trigger,
    );
    t.near(
        "totals.read_retransmission_episodes",
        w.rewinds_read as i64,
        "wire",
        tv("read_retransmission_episodes"),
        tol,
        why_trigger,
    );
    if rnr {
        t.eq(
            "totals.rnr_retransmission_episodes",
            rnr_retries,
            "B send_rnr_err - RNR NAKs absorbed",
            tv("rnr_retransmission_episodes"),
            "every RNR NAK B sent was followed by one resend run of A's, after its RNR timer \
             (one run for RNR NAKs that came during the same wait)",
        );
    }
    if lost_before("A->B") == 0 {
        let resent =
            c_a("sent_pkts") - w.req_originals as i64 - w.a_responses as i64 - w.qp1_a_to_b as i64;
        // (Re-issued READ Requests are in retransmitted_packets: issue 38, item 4.)
        let rocetap = a_to_b_sum(&an, "retransmitted_packets");
        t.eq(
            "A->B retransmitted_packets",
            resent,
            "A sent_pkts - first transmissions - A's ACKs - QP1",
            rocetap,
            if dups > 0 {
                "the tap sees every packet A sent (netem only copies); the copies are not resends"
            } else if sees_all_a {
                "the tap sees every packet A sent (no fault before it on A->B)"
            } else {
                "nothing A sent is lost before the tap"
            },
        );
    }
    t.eq(
        "totals.duplicate_packets",
        dups,
        "netem sent - offered",
        tv("duplicate_packets"),
        "only netem copies packets in this lab (rxe never sends the same packet twice without a rewind)",
    );
    if scen.starts_with("reorder") {
        t.eq(
            "totals.reordered_packets",
            w.late_originals as i64,
            "wire: late originals",
            tv("reordered_packets"),
            "first transmissions (by IP ID) that reached the tap after a higher PSN of their QP, \
             also after the resend of their own PSN (that one is the retransmission, not they)",
        );
    }
    t.eq(
        "totals.ce_marked",
        ce_marks.unwrap_or(0),
        "netem ecn marks",
        tv("ce_marked"),
        "netem is the only source of CE marks here, and it marks before the tap",
    );
    if w.read_responses > 0 {
        t.eq(
            "totals.read_missing_responses",
            w.read_missing as i64,
            "wire",
            tv("read_missing_responses"),
            "READ response PSNs skipped ahead of the response stream (lost before the tap the first time)",
        );
        t.eq(
            "totals.read_responses_resent",
            (w.read_responses - w.read_response_distinct + w.read_missing) as i64,
            "wire: responses - distinct PSNs + missing",
            tv("read_responses_resent"),
            "every response that is not the first pass of its PSN is a resend, and the first pass \
             of each missing PSN (filled later) is one too",
        );
    }
    if dropped_by_kernel == 0 && get(truth, "perftest.client_rc") == Some(0) {
        t.eq(
            "totals.unrecovered_gap_events",
            0,
            "perftest rc 0",
            tv("unrecovered_gap_events"),
            "every PSN eventually crossed the tap (perftest completed), so every gap was filled",
        );
        t.eq(
            "totals.capture_loss_gap_events",
            0,
            "tcpdump 0 dropped",
            tv("capture_loss_gap_events"),
            "the capture dropped nothing; every gap is a real loss with a NAK or a timeout",
        );
    }
    // input_cut_short may be a flag or a count; either way 0 here
    let cut = tot
        .get("input_cut_short")
        .and_then(|v| v.as_i64().or_else(|| v.as_bool().map(i64::from)));
    t.eq(
        "totals.input_cut_short",
        0,
        "tcpdump stopped by SIGINT",
        cut,
        "tcpdump flushed and closed the file; the last record is whole",
    );
    if tap["full_frames"].as_bool() == Some(true) {
        t.eq(
            "totals.icrc_bad",
            0,
            "rxe",
            tv("icrc_bad"),
            "rxe computes every ICRC and nothing corrupts frames in this lab",
        );
    }
    // ---- structure ----
    let pmtu = get(truth, "pmtu").unwrap_or(1024);
    for &(qa, qb) in &data_qps {
        let flows = an["flows"].as_array().cloned().unwrap_or_default();
        let ab = flows
            .iter()
            .find(|f| ip_of(f, "src", A_IP) && ip_of(f, "dst", B_IP) && flow_qp(f) == Some(qb));
        let ba = flows
            .iter()
            .find(|f| ip_of(f, "src", B_IP) && ip_of(f, "dst", A_IP) && flow_qp(f) == Some(qa));
        let paired = match (ab, ba) {
            (Some(x), Some(y)) => x["peer"] == y["id"] && y["peer"] == x["id"],
            _ => false,
        };
        t.check(
            "rocetap",
            &format!("QP A 0x{qa:x} <-> B 0x{qb:x} paired"),
            paired,
            format!("A->B flow {}, B->A flow {}", ab.is_some(), ba.is_some()),
            "perftest connected these QPs (its QPN lines); each direction's flow names the other as peer",
        );
        if let Some(ab) = ab {
            t.eq(
                &format!("pmtu of A->B 0x{qb:x}"),
                pmtu,
                "eth MTU",
                ab["pmtu"].as_i64(),
                "rxe's path MTU is the largest IB MTU that fits the eth MTU; full-size packets show it",
            );
        }
    }
    if scen.starts_with("multi-qp") {
        t.eq(
            "totals.connections",
            data_qps.len() as i64,
            "perftest -q",
            tv("connections"),
            "one RC connection per QP pair perftest printed",
        );
    }
    if scen == "rdma-cm-no-server" {
        lab_cm::check_cm_failure(&mut t, &an, truth);
    } else if scen.starts_with("rdma-cm") {
        t.check(
            "rocetap",
            "totals.connections >= 1",
            tv("connections").unwrap_or(0) >= 1,
            format!("{:?}", tv("connections")),
            "the data QP (and perftest's rdma_cm control QP) are RC connections",
        );
        t.check(
            "lab",
            "CM MADs on the wire",
            w.qp1_a_to_b > 0 && w.qp1_b_to_a > 0,
            format!("QP1 A->B {} B->A {}", w.qp1_a_to_b, w.qp1_b_to_a),
            "rdma_cm's REQ/REP/RTU are UD SENDs to QP1 on UDP 4791",
        );
        lab_cm::check_cm(&mut t, &an, truth);
    }
    if truth.get("qp_table_live").is_some() {
        lab_cm::check_live_table(&mut t, truth);
    }
    let mut rows = Vec::new();
    let mut infos = Vec::new();
    lab_qos::rows(
        truth,
        |what, ok, detail, why| rows.push((what.to_string(), ok, detail, why.to_string())),
        |what, value, why| infos.push((what.to_string(), value, why.to_string())),
    );
    for (what, ok, detail, why) in rows {
        t.check("rocetap", &what, ok, detail, &why);
    }
    for (what, value, why) in infos {
        t.info(&what, value, &why);
    }
    let mut story = Vec::new();
    lab_story::rows(truth, &an, &end, |what, ok, detail, why| {
        story.push((what.to_string(), ok, detail, why.to_string()));
    });
    for (what, ok, detail, why) in story {
        t.check("rocetap", &what, ok, detail, &why);
    }
    // What a scenario cannot be held to, and why: a failing row is shown, not failed.
    for (prefix, why) in lab_story::waivers(truth) {
        for r in t
            .rows
            .iter_mut()
            .filter(|r| !r.ok && r.what.starts_with(prefix))
        {
            r.ok = true;
            r.kind = "waived";
            r.why = why.clone();
        }
    }
    t
}

/// Checks every scenario in `dir` that has both files; returns the report and failures.
fn check_dir(
    dir: &Path,
    names: &[String],
    pcap_suffix: &str,
    truth_suffix: &str,
    require_all: bool,
) -> (String, Vec<String>) {
    let mut report = String::new();
    let mut failed = Vec::new();
    for n in names {
        let pcap = dir.join(format!("{n}{pcap_suffix}"));
        let truth_path = dir.join(format!("{n}{truth_suffix}"));
        if !pcap.is_file() || !truth_path.is_file() {
            if require_all {
                failed.push(format!(
                    "{n}: no {} / {}",
                    pcap.display(),
                    truth_path.display()
                ));
            } else {
                let _ = writeln!(report, "\n== {n}: not in {} (skipped)", dir.display());
            }
            continue;
        }
        let truth: Value = serde_json::from_slice(&std::fs::read(&truth_path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", truth_path.display()));
        let t = check_scenario(n, &pcap, &truth);
        report.push_str(&t.render(n));
        for r in t.rows.iter().filter(|r| !r.ok) {
            failed.push(format!(
                "{n}: {} [{}]: truth {} vs {}",
                r.what, r.kind, r.truth, r.rocetap
            ));
        }
    }
    (report, failed)
}

fn finish(report: &str, failed: &[String]) {
    println!("{report}");
    if !failed.is_empty() {
        let mut s = format!("{} equalities failed:\n", failed.len());
        for f in failed {
            let _ = writeln!(s, "  {f}");
        }
        panic!("{s}");
    }
}

// ---------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn lab_dir() -> PathBuf {
    std::env::var_os("RXE_LAB").map_or_else(|| PathBuf::from("/var/tmp/rxe-lab"), PathBuf::from)
}

/// The lab's scenarios: every one (`list`), or those CI runs (`list-ci`: not the extended).
fn scenario_names(which: &str) -> Vec<String> {
    let out = Command::new("bash")
        .arg(repo().join("lab/rxe/run.sh"))
        .arg(which)
        .output()
        .expect("run lab/rxe/run.sh list");
    assert!(out.status.success(), "lab/rxe/run.sh list failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Why the lab cannot run here, if it cannot.
fn lab_unavailable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("the rxe lab needs root (debootstrap, qemu, tc inside the VMs' build)".into());
    }
    let l = lab_dir();
    let qemu_ok = l.join("qemu/usr/bin/qemu-system-x86_64").is_file()
        || Path::new("/usr/bin/qemu-system-x86_64").is_file();
    if !(qemu_ok && l.join("rocetap-initrd.img").is_file() && l.join("vmlinuz").is_file()) {
        // try to build it (idempotent); CI builds it before the tests
        let st = Command::new("timeout")
            .args(["1800", "bash"])
            .arg(repo().join("lab/rxe/build.sh"))
            .stdout(Stdio::null())
            .status();
        if !matches!(st, Ok(s) if s.success()) {
            return Some(format!(
                "{} is not built and lab/rxe/build.sh failed ({st:?})",
                l.display()
            ));
        }
    }
    None
}

#[test]
fn lab_rxe_scenarios() {
    let (dir, ran) = match std::env::var_os("ROCETAP_LAB_OUT") {
        Some(d) => (PathBuf::from(d), false),
        None => {
            if let Some(why) = lab_unavailable() {
                common::skip(&why);
                return;
            }
            let dir = std::env::temp_dir().join(format!("rocetap-lab-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            // the other labs (switch, mirror) boot VMs too: one lab at a time on the cores
            let _serial = common::serial();
            let took = run_sh(&dir, "ci", LAB_BUDGET);
            println!("lab results in {} ({took:?})", dir.display());
            (dir, true)
        }
    };
    // a directory given by ROCETAP_LAB_OUT may hold any subset of them all (run.sh OUT NAME...)
    let names = scenario_names(if ran { "list-ci" } else { "list" });
    if !ran {
        assert!(
            names
                .iter()
                .any(|n| dir.join(format!("{n}.truth.json")).is_file()),
            "ROCETAP_LAB_OUT={}: no NAME.truth.json of any scenario",
            dir.display()
        );
    }
    let (report, failed) = check_dir(&dir, &names, ".pcap", ".truth.json", ran);
    if ran && failed.is_empty() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    finish(&report, &failed);
}

/// The lab's own readers (`lab/rxe/selftest.py`: the QP-table merge, the wire's first
/// transmissions) on cases made by hand; no VM needed.
#[test]
fn lab_readers_selftest() {
    let out = match Command::new("python3")
        .arg(repo().join("lab/rxe/selftest.py"))
        .output()
    {
        Ok(o) => o,
        Err(e) => return common::skip(&format!("python3 is needed: {e}")),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "lab/rxe/selftest.py failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn rxe_samples() {
    let dir = repo().join("samples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let n = e.ok()?.file_name().into_string().ok()?;
            let stem = n.strip_suffix(".pcap")?;
            stem.starts_with("rxe-").then(|| stem.to_string())
        })
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no samples/rxe-*.pcap");
    let (report, failed) = check_dir(&dir, &names, ".pcap", ".pcap.truth.json", true);
    finish(&report, &failed);
}

/// `lab/rxe/run.sh DIR WHAT` with this binary for the VMs' rocetap, stopped (SIGTERM: it
/// stops its VMs) once `budget` has passed; the scenarios it wrote are checked either way.
/// How long it ran.
pub(crate) fn run_sh(dir: &Path, what: &str, budget: Duration) -> Duration {
    let t0 = Instant::now();
    let mut child = Command::new("bash")
        .arg(repo().join("lab/rxe/run.sh"))
        .arg(dir)
        .arg(what)
        // the binary under test goes into the VMs (rocetap qp-table vs rdma)
        .env("ROCETAP_BIN", common::bin())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start lab/rxe/run.sh");
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            if !st.success() {
                eprintln!("lab/rxe/run.sh: {st} (the scenarios it wrote are checked)");
            }
            break;
        }
        if t0.elapsed() > budget {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let _ = child.wait();
            eprintln!("lab/rxe/run.sh stopped after {:?}", t0.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    t0.elapsed()
}

/// The room for retries the tap cannot show: a request that continues its QP's PSN stream
/// exactly after a silence of A's counts once per [`TIMER_SILENCE_NS`] of it; a rewind, a
/// jump past a PSN, a short silence or B's silence does not.
#[test]
fn hidden_retry_room_reads_silences_before_the_next_psn() {
    let ms = 1_000_000u64;
    let req = |idx: usize, psn: u32, ts_ns: u64| Pkt {
        idx,
        src: A_IP,
        dst: B_IP,
        id: idx as i64,
        ts_ns,
        ecn: 0,
        op: 0x14, // atomic fetch-and-add
        qp: 17,
        psn,
        syndrome: None,
        read_len: None,
    };
    let ack = |idx: usize, psn: u32, ts_ns: u64| Pkt {
        src: B_IP,
        dst: A_IP,
        op: 0x12,
        ..req(idx, psn, ts_ns)
    };
    let stream = [
        req(1, 100, 0),
        req(2, 101, ms),
        ack(3, 101, 2 * ms),
        req(4, 102, 46 * ms),  // the next PSN after 45 ms of A's silence: 1
        req(5, 100, 90 * ms),  // a rewind after a silence: shown at the tap, 0
        req(6, 103, 91 * ms),  // next after a short silence: 0
        req(7, 105, 140 * ms), // a jump past 104: a loss the tap saw, 0
        req(8, 106, 240 * ms), // next after 100 ms: up to 3 timer expiries
    ];
    assert_eq!(hidden_retry_room(&stream, 1024), 4);
    assert_eq!(hidden_retry_room(&stream[..3], 1024), 0);
}
