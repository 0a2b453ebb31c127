//! Playing one message: [`Conn::exchange`] schedules the requests, the responder's
//! answers and the recovery a fault causes, then writes them in time order. One
//! function per kind of message (SEND/WRITE, READ, atomic).

use super::*;

impl Conn {
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
        match op {
            Op::Write { .. } | Op::Send { .. } => self.send_or_write(&mut evs, rng, t0, op, fault),
            Op::Read { len } => self.read(&mut evs, rng, t0, len, fault),
            Op::FetchAdd { .. } | Op::CmpSwap { .. } => self.atomic(&mut evs, rng, t0, op),
        }
        self.flush(out, evs)
    }

    /// A SEND or WRITE of one or more packets, and what `fault` does to it.
    fn send_or_write(&mut self, evs: &mut Vec<Ev>, rng: &mut Rng, t0: u64, op: Op, fault: Fault) {
        let start = self.psn;
        let reqs = self.segments(&op, start);
        let n = reqs.len();
        self.psn = start.plus(n as u32);
        let (times, ce) = self.transmit(evs, rng, t0 + 100, &reqs);
        let last = reqs[n - 1].bth.psn;
        let resend_from = |evs: &mut Vec<Ev>, this: &mut Self, from: usize, at: u64, why: Retx| {
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
                    first_event(evs, i, Mark::default());
                }
                self.completed(evs, times[n - 1] + RESP_DELAY_NS, last, false);
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
                    first_event(evs, i, m);
                }
                // One NAK, when the packet after the missing one arrives.
                let nak_at = times[l + 1] + RESP_DELAY_NS;
                let nak = self.response(0x11, reqs[l].bth.psn, Some(0x60), 0);
                Self::push(evs, nak_at, true, nak, Mark::default());
                // Go back N once the NAK has arrived and the originals are out.
                let at = (nak_at + REACT_DELAY_NS).max(times[n - 1] + 1_000);
                resend_from(evs, self, l, at, Retx::Nak);
            }
            Fault::TailLoss => {
                for i in 0..n {
                    first_event(evs, i, Mark::default());
                }
                // Nothing acknowledges the message: the ACK timer fires and the
                // requester resends from the oldest unacknowledged PSN.
                let at = times[n - 1] + self.timeout_ns();
                resend_from(evs, self, 0, at, Retx::Timeout);
            }
            Fault::Rnr(code) => {
                assert!(matches!(op, Op::Send { .. }), "RNR needs a SEND");
                for i in 0..n {
                    first_event(evs, i, Mark::default());
                }
                let nak_at = times[0] + RESP_DELAY_NS;
                let nak = self.response(0x11, start, Some(0x20 | (code & 0x1f)), 0);
                Self::push(evs, nak_at, true, nak, Mark::default());
                let wait = (dissectors::ib::aeth::rnr_timer_us(code) * 1000.0) as u64;
                let at = (nak_at + REACT_DELAY_NS + wait).max(times[n - 1] + 1_000);
                resend_from(evs, self, 0, at, Retx::Rnr);
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
                    first_event(evs, i, m);
                }
                self.completed(evs, times[n - 1] + RESP_DELAY_NS, last, false);
            }
            Fault::ReadRespLoss { .. } | Fault::CaptureLossResp(_) => {
                unreachable!("READ faults on a READ only")
            }
        }
    }

    /// A READ: the request, the responses, and a lost or uncaptured response.
    fn read(&mut self, evs: &mut Vec<Ev>, rng: &mut Rng, t0: u64, len: u32, fault: Fault) {
        let start = self.psn;
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
        let (times, ce) = self.transmit(evs, rng, t0 + 100, &[req]);
        evs.push(Ev {
            ts: times[0],
            resp: false,
            pkt: req,
            ecn: ce[0].then_some(Ecn::Ce),
            mark: Mark::default(),
        });
        let r0 = times[0] + RESP_DELAY_NS;
        self.ack_now(evs, r0);
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
                    Self::push(evs, ts, true, *p, Mark::default());
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
                    Self::push(evs, ts, true, *p, m);
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
                    Self::push(evs, ts, true, *p, m);
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
                Self::push(evs, at, false, again, mark);
                let mut t = at + RESP_DELAY_NS;
                for p in self.read_responses(start.plus(l as u32), len - off) {
                    let mark = Mark {
                        retx: Retx::Read,
                        ..Mark::default()
                    };
                    Self::push(evs, t, true, p, mark);
                    t += Self::tx_ns(&p, LINE_MBPS);
                }
            }
            _ => unreachable!("only READ faults on a READ"),
        }
        self.va += u64::from(len);
    }

    /// A Fetch&Add or Compare&Swap and its atomic ACK (atomics are not faulted).
    fn atomic(&mut self, evs: &mut Vec<Ev>, rng: &mut Rng, t0: u64, op: Op) {
        let start = self.psn;
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
        let (times, ce) = self.transmit(evs, rng, t0 + 100, &[req]);
        evs.push(Ev {
            ts: times[0],
            resp: false,
            pkt: req,
            ecn: ce[0].then_some(Ecn::Ce),
            mark: Mark::default(),
        });
        let at = times[0] + RESP_DELAY_NS;
        self.ack_now(evs, at);
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
        Self::push(evs, at + 10, true, ack, Mark::default());
    }

    /// Writes the scheduled packets in time order (stable for equal times).
    pub(super) fn flush(&mut self, out: &mut Out, mut evs: Vec<Ev>) -> io::Result<()> {
        evs.sort_by_key(|e| e.ts);
        for e in &evs {
            let ts = e.ts.max(out.now);
            if e.pkt.bth.opcode == Opcode::CNP {
                let path = self.cc.as_ref().map_or(self.resp, |c| c.cnp_path);
                out.roce(ts, &path, Ecn::NotEct, &e.pkt, e.mark)?;
                continue;
            }
            let path = if e.resp { &self.resp } else { &self.req };
            out.roce(ts, path, e.ecn.unwrap_or(path.ecn), &e.pkt, e.mark)?;
        }
        Ok(())
    }
}
