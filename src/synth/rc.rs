//! Both ends of a reliable connection (RC, and XRC) as the tap sees them: the requester's
//! packets, the responder's ACKs / READ responses / atomic ACKs / NAKs, and the recovery
//! that IBTA go-back-N prescribes when something is lost (ROCE.md, "What loss and recovery
//! look like on the wire").
//!
//! One call to [`Conn::exchange`] plays one message and everything it causes, schedules
//! the packets by time, and writes them in time order. What it guarantees:
//! - PSNs advance by one per packet (a READ consumes one PSN per response), modulo 2^24;
//!   retransmissions reuse the PSNs, opcodes and headers of the originals.
//! - The responder's MSN counts completed messages; ACKs coalesce (PSN = last PSN
//!   acknowledged) and a PSN sequence error NAK carries the first missing PSN.
//! - Every fault is modelled with its full consequence, and its truth counted through
//!   [`Mark`]s: a loss before the tap is a gap and one NAK, a loss after the tap is a NAK
//!   and duplicates, a tail loss is silence for the QP timeout and a resend, an RNR NAK
//!   waits its timer, a missing READ response is a re-issued READ for the rest.

use super::frame::{Path, Pkt};
use super::out::{Mark, Out, Retx};
use super::rng::Rng;
use dissectors::{
    AethRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, Ecn, IethRepr, ImmDtRepr, Msn, Opcode,
    PKey, Psn, Qpn, RethRepr, XrcethRepr,
};
use std::io;

/// Time from the tap seeing a request to it seeing the responder's answer.
pub const RESP_DELAY_NS: u64 = 1_800;
/// Time from the tap seeing a response (or NAK) to it seeing the requester react.
pub const REACT_DELAY_NS: u64 = 900;
/// Line rate of every port, Mb/s.
pub const LINE_MBPS: u64 = 100_000;

/// A message the requester posts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Write {
        len: u32,
        imm: Option<u32>,
    },
    Send {
        len: u32,
        imm: Option<u32>,
        inv: Option<u32>,
    },
    Read {
        len: u32,
    },
    FetchAdd {
        add: u64,
    },
    CmpSwap {
        compare: u64,
        swap: u64,
    },
}

/// What goes wrong with one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    /// Request packet `i` is lost before the tap (needs a later packet in the message).
    LossUpstream(usize),
    /// Request packet `i` passes the tap and is lost before the responder.
    LossDownstream(usize),
    /// The last request packet passes the tap and is lost; nothing follows it.
    TailLoss,
    /// The responder has no receive WQE for this SEND: RNR NAK with this timer code.
    Rnr(u8),
    /// READ response `i` (not the last) is lost before or after the tap.
    ReadRespLoss {
        i: usize,
        before_tap: bool,
    },
    /// Request packets `i..i+count` reach the responder, but the capture misses them.
    CaptureLoss {
        i: usize,
        count: usize,
    },
    /// READ response `i` reaches the requester, but the capture misses it.
    CaptureLossResp(usize),
    /// Request packet `i` takes a bit error on the link (the tap sees a bad ICRC, the
    /// responder drops it and NAKs the next one).
    Corrupt(usize),
}

/// DCQCN-like congestion state of a requester QP (reaction point) and the responder's
/// CNP pacing for it (notification point).
#[derive(Clone, Debug)]
pub struct Cc {
    pub rate_mbps: u64,
    /// Probability (per mille) that a switch marks a packet of this QP CE.
    pub mark_permille: u64,
    /// Minimum time between two CNPs to this QP.
    pub cnp_interval_ns: u64,
    last_cnp: Option<u64>,
    /// CNPs sent but not yet acted on: the time the requester reacts.
    pending_cut: Vec<u64>,
    last_change: u64,
    /// Path of the CNPs (DSCP 48, not ECN-capable).
    pub cnp_path: Path,
    pub cnps: u64,
}

impl Cc {
    pub fn new(cnp_path: Path, cnp_interval_ns: u64) -> Self {
        Cc {
            rate_mbps: LINE_MBPS,
            mark_permille: 0,
            cnp_interval_ns,
            last_cnp: None,
            pending_cut: Vec::new(),
            last_change: 0,
            cnp_path,
            cnps: 0,
        }
    }

    /// Applies rate cuts whose CNP has arrived by `t`, and the timer-driven recovery.
    fn update(&mut self, t: u64) {
        if self.last_change == 0 {
            self.last_change = t;
        }
        let mut cut = false;
        self.pending_cut.retain(|&at| {
            if at <= t {
                cut = true;
                false
            } else {
                true
            }
        });
        if cut {
            self.rate_mbps = (self.rate_mbps / 2).max(LINE_MBPS / 50);
            self.last_change = t;
        }
        // Recovery: a tenth of the line rate back for each 55 us without a cut.
        while t >= self.last_change + 55_000 {
            self.rate_mbps = (self.rate_mbps + LINE_MBPS / 10).min(LINE_MBPS);
            self.last_change += 55_000;
        }
    }
}

/// One RC (or XRC) connection: requester on `req`'s source, responder on its destination.
#[derive(Clone, Debug)]
pub struct Conn {
    /// Requester -> responder.
    pub req: Path,
    /// Responder -> requester (ACKs, READ responses, NAKs).
    pub resp: Path,
    /// The requester's QP: DestQP of every response and CNP.
    pub req_qpn: u32,
    /// The responder's QP (XRC: the target QP): DestQP of every request.
    pub resp_qpn: u32,
    /// XRC: the SRQ number requests carry in their XRCETH; opcodes use the XRC range.
    pub xrc_srq: Option<u32>,
    pub pkey: u16,
    pub pmtu: u32,
    /// Next PSN the requester will use.
    pub psn: Psn,
    /// The responder's message sequence number.
    pub msn: u32,
    /// QP timeout exponent: the ACK timer is 4.096 us * 2^timeout.
    pub timeout: u8,
    /// AETH credit code in ACKs (0x1f: no credit information).
    pub credits: u8,
    /// The responder acknowledges every this many SEND/WRITE messages.
    pub ack_every: u32,
    pending: u32,
    last_done: Psn,
    pub va: u64,
    pub rkey: u32,
    atomic_value: u64,
    pub cc: Option<Cc>,
    fill: u8,
}

/// A packet waiting to be written, ordered by time then by scheduling order.
struct Ev {
    ts: u64,
    resp: bool,
    pkt: Pkt,
    ecn: Option<Ecn>,
    mark: Mark,
}

impl Conn {
    pub fn new(
        req: Path,
        resp: Path,
        req_qpn: u32,
        resp_qpn: u32,
        first_psn: u32,
        pmtu: u32,
        rng: &mut Rng,
    ) -> Self {
        Conn {
            req,
            resp,
            req_qpn,
            resp_qpn,
            xrc_srq: None,
            pkey: 0xffff,
            pmtu,
            psn: Psn::new(first_psn),
            msn: 0,
            timeout: rng.range(10, 14) as u8,
            credits: *rng.pick(&[0x1f, 0x0e, 0x10]),
            ack_every: rng.range(1, 3) as u32,
            pending: 0,
            last_done: Psn::new(first_psn).minus(1),
            va: 0x7f00_0000_0000 + (rng.below(0x1000) << 20),
            rkey: rng.next_u64() as u32,
            atomic_value: 0,
            cc: None,
            fill: rng.next_u64() as u8,
        }
    }

    /// The QP timeout in nanoseconds (4.096 us * 2^timeout).
    pub fn timeout_ns(&self) -> u64 {
        4_096u64 << self.timeout
    }

    /// The responder has completed messages it has not acknowledged yet.
    pub fn owes_ack(&self) -> bool {
        self.pending > 0
    }

    /// Number of packets (PSNs) a message of `len` bytes takes.
    pub fn packets_for(&self, len: u32) -> usize {
        len.div_ceil(self.pmtu).max(1) as usize
    }

    fn opcode(&self, rc: u8) -> Opcode {
        Opcode(if self.xrc_srq.is_some() {
            0xA0 | rc
        } else {
            rc
        })
    }

    fn bth(&self, rc_op: u8, psn: Psn, dest_qp: u32) -> BthRepr {
        BthRepr {
            opcode: self.opcode(rc_op),
            pkey: PKey(self.pkey),
            dest_qp: Qpn::new(dest_qp),
            psn,
            ..Default::default()
        }
    }

    fn request(&self, rc_op: u8, psn: Psn, payload: u32) -> Pkt {
        Pkt {
            bth: self.bth(rc_op, psn, self.resp_qpn),
            xrceth: self.xrc_srq.map(|s| XrcethRepr {
                xrc_srq: Qpn::new(s),
            }),
            payload_len: payload,
            fill: self.fill,
            ..Default::default()
        }
    }

    fn aeth(&self, syndrome: u8) -> AethRepr {
        AethRepr {
            syndrome,
            msn: Msn(self.msn & 0xff_ffff),
        }
    }

    fn response(&self, rc_op: u8, psn: Psn, syndrome: Option<u8>, payload: u32) -> Pkt {
        Pkt {
            bth: self.bth(rc_op, psn, self.req_qpn),
            aeth: syndrome.map(|s| self.aeth(s)),
            payload_len: payload,
            fill: self.fill.wrapping_add(0x55),
            ..Default::default()
        }
    }

    fn ack(&self, psn: Psn) -> Pkt {
        self.response(0x11, psn, Some(self.credits), 0)
    }

    /// The request packets of a WRITE or SEND of `len` bytes starting at `psn`.
    fn segments(&self, op: &Op, start: Psn) -> Vec<Pkt> {
        let (len, first, middle, last, only) = match *op {
            Op::Write { len, imm } => (
                len,
                0x06,
                0x07,
                if imm.is_some() { 0x09 } else { 0x08 },
                if imm.is_some() { 0x0B } else { 0x0A },
            ),
            Op::Send { len, imm, inv } => {
                let (last, only) = match (imm, inv) {
                    (Some(_), _) => (0x03, 0x05),
                    (None, Some(_)) => (0x16, 0x17),
                    (None, None) => (0x02, 0x04),
                };
                (len, 0x00, 0x01, last, only)
            }
            _ => unreachable!("segments of a WRITE or SEND only"),
        };
        let n = self.packets_for(len);
        let mut v = Vec::with_capacity(n);
        for i in 0..n {
            let size = if i + 1 < n {
                self.pmtu
            } else {
                len - self.pmtu * (n as u32 - 1)
            };
            let code = match (n, i) {
                (1, _) => only,
                (_, 0) => first,
                (_, i) if i + 1 == n => last,
                _ => middle,
            };
            let mut p = self.request(code, start.plus(i as u32), size);
            if code == 0x06 || code == 0x0A || code == 0x0B {
                p.reth = Some(RethRepr {
                    va: self.va,
                    rkey: self.rkey,
                    dma_len: len,
                });
            }
            if i + 1 == n {
                p.bth.ack_req = true;
                p.bth.se = matches!(code, 0x03 | 0x05 | 0x09 | 0x0B);
                match *op {
                    Op::Write { imm: Some(d), .. } | Op::Send { imm: Some(d), .. } => {
                        p.immdt = Some(ImmDtRepr { data: d });
                    }
                    Op::Send { inv: Some(k), .. } => p.ieth = Some(IethRepr { rkey: k }),
                    _ => {}
                }
            }
            v.push(p);
        }
        v
    }

    /// The READ responses carrying `len` bytes from PSN `start` on (one PSN per PMTU).
    fn read_responses(&self, start: Psn, len: u32) -> Vec<Pkt> {
        let n = self.packets_for(len);
        (0..n)
            .map(|i| {
                let size = if i + 1 < n {
                    self.pmtu
                } else {
                    len - self.pmtu * (n as u32 - 1)
                };
                let (code, aeth) = match (n, i) {
                    (1, _) => (0x10, true),
                    (_, 0) => (0x0D, true),
                    (_, i) if i + 1 == n => (0x0F, true),
                    _ => (0x0E, false),
                };
                self.response(
                    code,
                    start.plus(i as u32),
                    aeth.then_some(self.credits),
                    size,
                )
            })
            .collect()
    }

    /// Serialization time of a packet at `rate` Mb/s (headers, preamble and gap included).
    fn tx_ns(p: &Pkt, rate_mbps: u64) -> u64 {
        (p.transport_len() as u64 + 66) * 8 * 1000 / rate_mbps
    }

    /// Sends the requester's packets from `t`, pacing by the current rate (congestion
    /// control), CE-marking and generating CNPs; returns the send times.
    fn transmit(
        &mut self,
        evs: &mut Vec<Ev>,
        rng: &mut Rng,
        mut t: u64,
        pkts: &[Pkt],
    ) -> (Vec<u64>, Vec<bool>) {
        let mut times = Vec::with_capacity(pkts.len());
        let mut ce = Vec::with_capacity(pkts.len());
        for p in pkts {
            let rate = match &mut self.cc {
                Some(cc) => {
                    cc.update(t);
                    cc.rate_mbps
                }
                None => LINE_MBPS,
            };
            times.push(t);
            let marked = match &mut self.cc {
                Some(cc) if rng.chance(cc.mark_permille, 1000) => {
                    // The responder (notification point) answers a CE mark with a CNP
                    // to the sending QP, at most one per interval.
                    let at = t + RESP_DELAY_NS / 2;
                    if cc.last_cnp.is_none_or(|l| at >= l + cc.cnp_interval_ns) {
                        cc.last_cnp = Some(at);
                        cc.pending_cut.push(at + REACT_DELAY_NS);
                        cc.cnps += 1;
                        let cnp = Pkt {
                            bth: BthRepr {
                                opcode: Opcode::CNP,
                                pkey: PKey(0xffff),
                                becn: true,
                                dest_qp: Qpn::new(self.req_qpn),
                                psn: Psn(0),
                                ..Default::default()
                            },
                            ..Default::default()
                        };
                        evs.push(Ev {
                            ts: at,
                            resp: true,
                            pkt: cnp,
                            ecn: Some(Ecn::NotEct),
                            // Sent on the CNP path, not the ACK path: see `flush`.
                            mark: Mark::default(),
                        });
                    }
                    true
                }
                _ => false,
            };
            ce.push(marked);
            t += Self::tx_ns(p, rate) + rng.below(16);
        }
        (times, ce)
    }

    /// Schedules the coalesced ACK for everything completed so far, if one is owed.
    fn ack_now(&mut self, evs: &mut Vec<Ev>, ts: u64) {
        if self.pending > 0 {
            evs.push(Ev {
                ts,
                resp: true,
                pkt: self.ack(self.last_done),
                ecn: None,
                mark: Mark::default(),
            });
            self.pending = 0;
        }
    }

    /// A SEND/WRITE message completed at the responder at `ts`.
    fn completed(&mut self, evs: &mut Vec<Ev>, ts: u64, last: Psn, force_ack: bool) {
        self.msn = (self.msn + 1) & 0xff_ffff;
        self.pending += 1;
        self.last_done = last;
        if force_ack || self.pending >= self.ack_every {
            self.ack_now(evs, ts);
        }
    }

    /// Sends an ACK for anything still unacknowledged (end of the trace).
    pub fn finish(&mut self, out: &mut Out) -> io::Result<()> {
        let mut evs = Vec::new();
        self.ack_now(&mut evs, out.now + RESP_DELAY_NS);
        self.flush(out, evs)
    }

    fn push(evs: &mut Vec<Ev>, ts: u64, resp: bool, pkt: Pkt, mark: Mark) {
        evs.push(Ev {
            ts,
            resp,
            pkt,
            ecn: None,
            mark,
        });
    }

    /// Plays one message and its consequences, and writes them.
    pub fn exchange(
        &mut self,
        out: &mut Out,
        rng: &mut Rng,
        op: Op,
        fault: Fault,
    ) -> io::Result<()> {
        let mut evs: Vec<Ev> = Vec::new();
        let t0 = out.now;
        if fault != Fault::None {
            // Recovery is easier to read when no coalesced ACK is still owed.
            self.ack_now(&mut evs, t0);
        }
        let start = self.psn;
        match op {
            Op::Write { .. } | Op::Send { .. } => {
                let reqs = self.segments(&op, start);
                let n = reqs.len();
                self.psn = start.plus(n as u32);
                let (times, ce) = self.transmit(&mut evs, rng, t0 + 100, &reqs);
                let last = reqs[n - 1].bth.psn;
                let resend_from =
                    |evs: &mut Vec<Ev>, this: &mut Self, from: usize, at: u64, why: Retx| {
                        let mut t = at;
                        for p in &reqs[from..] {
                            Self::push(
                                evs,
                                t,
                                false,
                                *p,
                                Mark {
                                    retx: why,
                                    ..Mark::default()
                                },
                            );
                            t += Self::tx_ns(p, LINE_MBPS);
                        }
                        this.completed(evs, t + RESP_DELAY_NS, last, true);
                    };
                let first_event = |evs: &mut Vec<Ev>, i: usize, mark: Mark| {
                    evs.push(Ev {
                        ts: times[i],
                        resp: false,
                        pkt: reqs[i],
                        ecn: ce[i].then_some(Ecn::Ce),
                        mark,
                    });
                };
                match fault {
                    Fault::None => {
                        for i in 0..n {
                            first_event(&mut evs, i, Mark::default());
                        }
                        self.completed(&mut evs, times[n - 1] + RESP_DELAY_NS, last, false);
                    }
                    Fault::LossUpstream(l) | Fault::LossDownstream(l) | Fault::Corrupt(l) => {
                        assert!(l + 1 < n, "a NAK needs a packet after the lost one");
                        for i in 0..n {
                            let mut m = Mark::default();
                            match fault {
                                Fault::LossUpstream(_) if i == l => continue,
                                Fault::LossUpstream(_) if i == l + 1 => m.gap = 1,
                                Fault::Corrupt(_) if i == l => m.corrupt = true,
                                _ => {}
                            }
                            first_event(&mut evs, i, m);
                        }
                        // One NAK, when the packet after the missing one arrives.
                        let nak_at = times[l + 1] + RESP_DELAY_NS;
                        let nak = self.response(0x11, reqs[l].bth.psn, Some(0x60), 0);
                        Self::push(&mut evs, nak_at, true, nak, Mark::default());
                        // Go back N once the NAK has arrived and the originals are out.
                        let at = (nak_at + REACT_DELAY_NS).max(times[n - 1] + 1_000);
                        resend_from(&mut evs, self, l, at, Retx::Nak);
                    }
                    Fault::TailLoss => {
                        for i in 0..n {
                            first_event(&mut evs, i, Mark::default());
                        }
                        // Nothing acknowledges the message: the ACK timer fires and the
                        // requester resends from the oldest unacknowledged PSN.
                        let at = times[n - 1] + self.timeout_ns();
                        resend_from(&mut evs, self, 0, at, Retx::Timeout);
                    }
                    Fault::Rnr(code) => {
                        assert!(matches!(op, Op::Send { .. }), "RNR needs a SEND");
                        for i in 0..n {
                            first_event(&mut evs, i, Mark::default());
                        }
                        let nak_at = times[0] + RESP_DELAY_NS;
                        let nak = self.response(0x11, start, Some(0x20 | (code & 0x1f)), 0);
                        Self::push(&mut evs, nak_at, true, nak, Mark::default());
                        let wait = (dissectors::ib::aeth::rnr_timer_us(code) * 1000.0) as u64;
                        let at = (nak_at + REACT_DELAY_NS + wait).max(times[n - 1] + 1_000);
                        resend_from(&mut evs, self, 0, at, Retx::Rnr);
                    }
                    Fault::CaptureLoss { i: l, count } => {
                        assert!(l + count < n, "a capture gap needs a later packet");
                        for i in 0..n {
                            let mut m = Mark::default();
                            if (l..l + count).contains(&i) {
                                continue;
                            }
                            if i == l + count {
                                m.gap = count as u32;
                                m.unrecovered = true;
                            }
                            first_event(&mut evs, i, m);
                        }
                        self.completed(&mut evs, times[n - 1] + RESP_DELAY_NS, last, false);
                    }
                    Fault::ReadRespLoss { .. } | Fault::CaptureLossResp(_) => {
                        unreachable!("READ faults on a READ only")
                    }
                }
            }
            Op::Read { len } => {
                // Responses follow the request; the responder finishes owed ACKs first.
                let mut req = self.request(0x0C, start, 0);
                req.reth = Some(RethRepr {
                    va: self.va,
                    rkey: self.rkey,
                    dma_len: len,
                });
                req.bth.ack_req = true;
                let n = self.packets_for(len);
                self.psn = start.plus(n as u32);
                let (times, ce) = self.transmit(&mut evs, rng, t0 + 100, &[req]);
                evs.push(Ev {
                    ts: times[0],
                    resp: false,
                    pkt: req,
                    ecn: ce[0].then_some(Ecn::Ce),
                    mark: Mark::default(),
                });
                let r0 = times[0] + RESP_DELAY_NS;
                self.ack_now(&mut evs, r0);
                self.msn = (self.msn + 1) & 0xff_ffff;
                let resps = self.read_responses(start, len);
                let mut t = r0 + 50;
                let mut rt = Vec::with_capacity(n);
                for p in &resps {
                    rt.push(t);
                    t += Self::tx_ns(p, LINE_MBPS);
                }
                match fault {
                    Fault::None => {
                        for (p, &ts) in resps.iter().zip(&rt) {
                            Self::push(&mut evs, ts, true, *p, Mark::default());
                        }
                    }
                    Fault::CaptureLossResp(l) => {
                        assert!(l + 1 < n, "a capture gap needs a later response");
                        for (i, (p, &ts)) in resps.iter().zip(&rt).enumerate() {
                            let mut m = Mark::default();
                            if i == l {
                                continue;
                            }
                            if i == l + 1 {
                                m.gap = 1;
                                m.unrecovered = true;
                            }
                            Self::push(&mut evs, ts, true, *p, m);
                        }
                    }
                    Fault::ReadRespLoss { i: l, before_tap } => {
                        assert!(
                            l + 1 < n,
                            "the requester notices a hole at a later response"
                        );
                        for (i, (p, &ts)) in resps.iter().zip(&rt).enumerate() {
                            let mut m = Mark::default();
                            if before_tap && i == l {
                                continue;
                            }
                            if before_tap && i == l + 1 {
                                m.gap = 1;
                            }
                            Self::push(&mut evs, ts, true, *p, m);
                        }
                        // The requester re-issues the READ from the first missing PSN,
                        // for the rest of the data.
                        let off = self.pmtu * l as u32;
                        let mut again = self.request(0x0C, start.plus(l as u32), 0);
                        again.reth = Some(RethRepr {
                            va: self.va + u64::from(off),
                            rkey: self.rkey,
                            dma_len: len - off,
                        });
                        again.bth.ack_req = true;
                        let at = rt[l + 1] + REACT_DELAY_NS;
                        let mark = Mark {
                            reread: true,
                            ..Mark::default()
                        };
                        Self::push(&mut evs, at, false, again, mark);
                        let mut t = at + RESP_DELAY_NS;
                        for p in self.read_responses(start.plus(l as u32), len - off) {
                            let mark = Mark {
                                retx: Retx::Read,
                                ..Mark::default()
                            };
                            Self::push(&mut evs, t, true, p, mark);
                            t += Self::tx_ns(&p, LINE_MBPS);
                        }
                    }
                    _ => unreachable!("only READ faults on a READ"),
                }
                self.va += u64::from(len);
            }
            Op::FetchAdd { .. } | Op::CmpSwap { .. } => {
                let (code, swap_add, compare) = match op {
                    Op::FetchAdd { add } => (0x14, add, 0),
                    Op::CmpSwap { compare, swap } => (0x13, swap, compare),
                    _ => unreachable!(),
                };
                let mut req = self.request(code, start, 0);
                req.atomic_eth = Some(AtomicEthRepr {
                    va: self.va & !7,
                    rkey: self.rkey,
                    swap_add,
                    compare,
                });
                req.bth.ack_req = true;
                self.psn = start.next();
                let (times, ce) = self.transmit(&mut evs, rng, t0 + 100, &[req]);
                evs.push(Ev {
                    ts: times[0],
                    resp: false,
                    pkt: req,
                    ecn: ce[0].then_some(Ecn::Ce),
                    mark: Mark::default(),
                });
                let at = times[0] + RESP_DELAY_NS;
                self.ack_now(&mut evs, at);
                self.msn = (self.msn + 1) & 0xff_ffff;
                let orig = self.atomic_value;
                self.atomic_value = match op {
                    Op::FetchAdd { add } => orig.wrapping_add(add),
                    _ if orig == compare => swap_add,
                    _ => orig,
                };
                let mut ack = self.response(0x12, start, Some(self.credits), 0);
                ack.atomic_ack_eth = Some(AtomicAckEthRepr {
                    orig_rem_data: orig,
                });
                Self::push(&mut evs, at + 10, true, ack, Mark::default());
            }
        }
        self.flush(out, evs)
    }

    /// Writes the scheduled packets in time order (stable for equal times).
    fn flush(&mut self, out: &mut Out, mut evs: Vec<Ev>) -> io::Result<()> {
        evs.sort_by_key(|e| e.ts);
        for e in &evs {
            let ts = e.ts.max(out.now);
            if e.pkt.bth.opcode == Opcode::CNP {
                let path = self.cc.as_ref().map(|c| c.cnp_path).unwrap_or(self.resp);
                out.roce(ts, &path, Ecn::NotEct, &e.pkt, e.mark)?;
                continue;
            }
            let path = if e.resp { &self.resp } else { &self.req };
            out.roce(ts, path, e.ecn.unwrap_or(path.ecn), &e.pkt, e.mark)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::file::for_each_frame;
    use crate::synth::traffic::{conn_at, v4};
    use dissectors::{decode, Config, IcrcStatus, LinkType};
    use std::ops::ControlFlow;

    /// (opcode, PSN, AETH syndrome, READ RETH (VA offset, length)) of every frame, plus
    /// the counted truth and the timestamps.
    type Seen = (u8, u32, Option<u8>, Option<(u64, u32)>);

    fn play(op: Op, fault: Fault) -> (Vec<Seen>, Vec<u64>, super::super::out::Observable, u64) {
        let mut rng = Rng::new(5);
        let mut c = conn_at(
            &mut rng,
            v4(198, 18, 0, 1),
            v4(198, 18, 0, 2),
            0x201,
            0x101,
            1024,
            100,
        );
        c.ack_every = 1;
        let va = c.va;
        let timeout = c.timeout_ns();
        let mut buf = Vec::new();
        let obs = {
            let mut out = Out::new(&mut buf, LinkType::Ethernet, 65535, false, "t").unwrap();
            c.exchange(&mut out, &mut rng, op, fault).unwrap();
            c.finish(&mut out).unwrap();
            out.finish().unwrap().obs
        };
        let mut seen = Vec::new();
        let mut ts = Vec::new();
        let cfg = Config::default();
        for_each_frame(&buf[..], |f| {
            let d = decode(f.link, f.data, f.orig_len, &cfg);
            let r = d.roce.unwrap();
            if !matches!(fault, Fault::Corrupt(_)) {
                assert_eq!(r.icrc, IcrcStatus::Ok);
            }
            seen.push((
                r.bth.opcode.0,
                r.bth.psn.0,
                r.aeth.map(|a| a.syndrome),
                r.reth
                    .filter(|_| r.bth.opcode.0 == 0x0C)
                    .map(|h| (h.va - va, h.dma_len)),
            ));
            ts.push(f.ts_ns);
            ControlFlow::Continue(())
        })
        .unwrap();
        (seen, ts, obs, timeout)
    }

    fn ops(seen: &[Seen]) -> Vec<(u8, u32)> {
        seen.iter().map(|s| (s.0, s.1)).collect()
    }

    const W4: Op = Op::Write {
        len: 4096,
        imm: None,
    };

    #[test]
    fn loss_before_the_tap_is_a_gap_one_nak_and_go_back_n() {
        let (seen, _, obs, _) = play(W4, Fault::LossUpstream(1));
        assert_eq!(
            ops(&seen),
            [
                (6, 100),
                (7, 102),
                (8, 103),
                (0x11, 101),
                (7, 101),
                (7, 102),
                (8, 103),
                (0x11, 103)
            ]
        );
        assert_eq!(seen[3].2, Some(0x60));
        assert!(
            seen[7].2.is_some_and(|s| s <= 0x1f),
            "the final ACK is an ACK"
        );
        assert_eq!(
            (
                obs.psn_gap_events,
                obs.nak_psn_seq,
                obs.retransmitted_packets
            ),
            (1, 1, 3)
        );
    }

    #[test]
    fn loss_after_the_tap_shows_every_psn_then_duplicates() {
        let (seen, _, obs, _) = play(W4, Fault::LossDownstream(2));
        assert_eq!(
            ops(&seen),
            [
                (6, 100),
                (7, 101),
                (7, 102),
                (8, 103),
                (0x11, 102),
                (7, 102),
                (8, 103),
                (0x11, 103)
            ]
        );
        assert_eq!(
            (
                obs.psn_gap_events,
                obs.nak_psn_seq,
                obs.retransmitted_packets
            ),
            (0, 1, 2)
        );
    }

    #[test]
    fn tail_loss_waits_for_the_qp_timeout() {
        let op = Op::Write {
            len: 2000,
            imm: None,
        };
        let (seen, ts, obs, timeout) = play(op, Fault::TailLoss);
        assert_eq!(
            ops(&seen),
            [(6, 100), (8, 101), (6, 100), (8, 101), (0x11, 101)]
        );
        assert!(ts[2] - ts[1] >= timeout);
        assert_eq!((obs.nak_psn_seq, obs.retransmitted_packets), (0, 2));
        assert_eq!(obs.timeout_retransmissions, 2);
    }

    #[test]
    fn rnr_nak_carries_the_timer_and_the_resend_waits_for_it() {
        let op = Op::Send {
            len: 1500,
            imm: None,
            inv: None,
        };
        let (seen, ts, obs, _) = play(op, Fault::Rnr(14));
        assert_eq!(
            ops(&seen),
            [
                (0, 100),
                (2, 101),
                (0x11, 100),
                (0, 100),
                (2, 101),
                (0x11, 101)
            ]
        );
        assert_eq!(seen[2].2, Some(0x2e));
        // Timer code 14 is 1.28 ms.
        assert!(ts[3] - ts[2] >= 1_280_000);
        assert_eq!((obs.rnr_nak, obs.retransmitted_packets), (1, 2));
    }

    #[test]
    fn missing_read_response_is_re_requested_for_the_rest() {
        let op = Op::Read { len: 4000 };
        let (seen, _, obs, _) = play(
            op,
            Fault::ReadRespLoss {
                i: 1,
                before_tap: true,
            },
        );
        assert_eq!(
            ops(&seen),
            [
                (0x0C, 100),
                (0x0D, 100),
                (0x0E, 102),
                (0x0F, 103),
                (0x0C, 101),
                (0x0D, 101),
                (0x0E, 102),
                (0x0F, 103)
            ]
        );
        assert_eq!(seen[0].3, Some((0, 4000)));
        assert_eq!(seen[4].3, Some((1024, 4000 - 1024)));
        assert_eq!(
            (
                obs.psn_gap_events,
                obs.read_rerequests,
                obs.retransmitted_packets
            ),
            (1, 1, 3)
        );
        let (_, _, obs, _) = play(
            op,
            Fault::ReadRespLoss {
                i: 2,
                before_tap: false,
            },
        );
        assert_eq!(
            (
                obs.psn_gap_events,
                obs.read_rerequests,
                obs.retransmitted_packets
            ),
            (0, 1, 2)
        );
    }

    #[test]
    fn capture_loss_is_a_gap_nothing_repairs() {
        let (seen, _, obs, _) = play(W4, Fault::CaptureLoss { i: 1, count: 2 });
        assert_eq!(ops(&seen), [(6, 100), (8, 103), (0x11, 103)]);
        assert_eq!(
            (
                obs.psn_gap_events,
                obs.unrecovered_gap_events,
                obs.missing_psns
            ),
            (1, 1, 2)
        );
        assert_eq!((obs.nak_psn_seq, obs.retransmitted_packets), (0, 0));
    }

    #[test]
    fn a_corrupted_packet_is_seen_then_nakked_and_resent() {
        let (seen, _, obs, _) = play(W4, Fault::Corrupt(0));
        assert_eq!(
            ops(&seen),
            [
                (6, 100),
                (7, 101),
                (7, 102),
                (8, 103),
                (0x11, 100),
                (6, 100),
                (7, 101),
                (7, 102),
                (8, 103),
                (0x11, 103)
            ]
        );
        assert_eq!(
            (obs.icrc_bad, obs.nak_psn_seq, obs.retransmitted_packets),
            (1, 1, 4)
        );
    }

    #[test]
    fn atomics_and_coalesced_acks() {
        let (seen, _, _, _) = play(Op::FetchAdd { add: 3 }, Fault::None);
        assert_eq!(ops(&seen), [(0x14, 100), (0x12, 100)]);
        let mut rng = Rng::new(1);
        let mut c = conn_at(
            &mut rng,
            v4(198, 18, 0, 1),
            v4(198, 18, 0, 2),
            0x201,
            0x101,
            1024,
            0xff_fffe,
        );
        c.ack_every = 3;
        let mut buf = Vec::new();
        {
            let mut out = Out::new(&mut buf, LinkType::Ethernet, 65535, false, "t").unwrap();
            for _ in 0..3 {
                c.exchange(&mut out, &mut rng, W4, Fault::None).unwrap();
            }
            let s = out.finish().unwrap();
            // 12 WRITE packets, one ACK for all three messages (PSN wrapped to 9, MSN 3).
            assert_eq!(s.frames, 13);
        }
        let mut last = None;
        for_each_frame(&buf[..], |f| {
            last = decode(f.link, f.data, f.orig_len, &Config::default()).roce;
            ControlFlow::Continue(())
        })
        .unwrap();
        let ack = last.unwrap();
        assert_eq!((ack.bth.opcode.0, ack.bth.psn.0), (0x11, 9));
        assert_eq!(ack.aeth.unwrap().msn.0, 3);
    }
}
