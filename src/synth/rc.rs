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

/// The two ends of a connection: the path each way and each end's QP.
#[derive(Clone, Copy, Debug)]
pub struct Ends {
    /// Requester -> responder.
    pub req: Path,
    /// Responder -> requester.
    pub resp: Path,
    pub req_qpn: u32,
    pub resp_qpn: u32,
}

impl Conn {
    /// A connection between `ends` whose first request carries `first_psn`; timeout,
    /// credits, ACK coalescing, VA, R_Key and payload fill come from `rng`.
    pub fn new(ends: Ends, first_psn: u32, pmtu: u32, rng: &mut Rng) -> Self {
        let Ends {
            req,
            resp,
            req_qpn,
            resp_qpn,
        } = ends;
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
}

mod exchange;
#[cfg(test)]
mod tests;
