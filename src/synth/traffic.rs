//! RC traffic scenarios: clean traffic, and one scenario per way an RC flow loses or
//! delays packets (loss before / after the tap, tail loss, RNR, READ response loss,
//! capture loss, bit errors), plus PSN wraparound. All share the host pairs, the
//! message mix and the round-robin driver here; the recovery itself is modelled in
//! [`super::rc`].
//!
//! Guarantees: every scenario reaches roughly the requested packet count by repeating
//! message rounds, streams (one message exchange in memory at a time), injects its
//! fault periodically so a trace of any size shows it, and never injects a fault on a
//! QP's first messages (so every gap has a packet before it at the tap).

use super::frame::{mac_for, Encap, Link, Path};
use super::out::Out;
use super::rc::{Conn, Ends, Fault, Op};
use super::rng::Rng;
use dissectors::Ecn;
use std::io;
use std::net::{IpAddr, Ipv4Addr};

pub fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

/// A RoCE v2 path over plain Ethernet, DSCP 26, ECT(0).
pub fn path(src: IpAddr, dst: IpAddr, sport: u16) -> Path {
    Path {
        src_mac: mac_for(src),
        dst_mac: mac_for(dst),
        link: Link::Ethernet { vlan: None },
        src,
        dst,
        encap: Encap::V2 { sport },
        dscp: 26,
        ecn: Ecn::Ect0,
        ttl: 64,
        flow_label: if src.is_ipv6() {
            u32::from(sport) << 4 & 0xf_ffff
        } else {
            0
        },
    }
}

/// An RC connection from `a` (requester) to `b`, with a random first PSN. The UDP source
/// ports are ECMP entropy derived from the QP pair, one per direction.
pub fn conn(rng: &mut Rng, a: IpAddr, b: IpAddr, qa: u32, qb: u32, pmtu: u32) -> Conn {
    let first = rng.below(1 << 24) as u32;
    conn_at(rng, a, b, qa, qb, pmtu, first)
}

pub fn conn_at(
    rng: &mut Rng,
    a: IpAddr,
    b: IpAddr,
    qa: u32,
    qb: u32,
    pmtu: u32,
    first_psn: u32,
) -> Conn {
    let sport = 0xc000 | ((qa ^ (qb << 3)) & 0x3fff) as u16;
    let rport = 0xc000 | ((qb ^ (qa << 3)) & 0x3fff) as u16;
    let req = path(a, b, sport);
    let resp = req.reversed(rport);
    let ends = Ends {
        req,
        resp,
        req_qpn: qa,
        resp_qpn: qb,
    };
    Conn::new(ends, first_psn, pmtu, rng)
}

/// The first messages of every QP: each opcode the scenario should show at least once,
/// whatever the packet count.
fn tour(c: &Conn, k: usize) -> Option<Op> {
    let m = c.pmtu;
    Some(match k {
        0 => Op::Write {
            len: 3 * m,
            imm: None,
        },
        1 => Op::Send {
            len: 2 * m + 100,
            imm: Some(0x1001),
            inv: None,
        },
        2 => Op::Read { len: 3 * m - 7 },
        3 => Op::Write {
            len: 2 * m,
            imm: Some(0xfeed_0001),
        },
        4 => Op::Send {
            len: 300,
            imm: None,
            inv: Some(0x0bad_cafe),
        },
        5 => Op::FetchAdd { add: 1 },
        6 => Op::Write {
            len: 512,
            imm: None,
        },
        7 => Op::Send {
            len: 64,
            imm: Some(7),
            inv: None,
        },
        8 => Op::Read { len: 200 },
        9 => Op::CmpSwap {
            compare: 1,
            swap: 0x55,
        },
        10 => Op::Write {
            len: 96,
            imm: Some(0x600d),
        },
        11 => Op::Send {
            len: m + 1,
            imm: None,
            inv: Some(0x1234_5678),
        },
        12 => Op::Send {
            len: 2 * m,
            imm: None,
            inv: None,
        },
        _ => return None,
    })
}

/// A message drawn from the mix: mostly WRITE / SEND / READ of sizes from a few bytes
/// to 16 KiB, some atomics.
pub fn random_op(rng: &mut Rng, c: &Conn) -> Op {
    const SIZES: [u32; 11] = [8, 64, 200, 512, 1024, 1500, 2048, 4096, 6000, 8192, 16384];
    let len = *rng.pick(&SIZES);
    let op = match rng.below(100) {
        0..=34 => Op::Write {
            len,
            imm: rng.chance(1, 4).then(|| rng.next_u64() as u32),
        },
        35..=59 => {
            let imm = rng.chance(1, 4).then(|| rng.next_u64() as u32);
            let inv = (imm.is_none() && rng.chance(1, 6)).then(|| rng.next_u64() as u32);
            Op::Send { len, imm, inv }
        }
        60..=84 => Op::Read { len },
        85..=92 => Op::FetchAdd {
            add: rng.range(1, 16),
        },
        _ => Op::CmpSwap {
            compare: rng.below(4),
            swap: rng.next_u64() >> 40,
        },
    };
    clamp_to(op, c)
}

/// Keeps a message under 16 packets so one exchange stays small.
fn clamp_to(op: Op, c: &Conn) -> Op {
    let max = 16 * c.pmtu;
    match op {
        Op::Write { len, imm } => Op::Write {
            len: len.min(max),
            imm,
        },
        Op::Send { len, imm, inv } => Op::Send {
            len: len.min(max),
            imm,
            inv,
        },
        Op::Read { len } => Op::Read { len: len.min(max) },
        other => other,
    }
}

/// A message of `lo..=hi` packets (the last one partial at random): a SEND once in
/// `send_one_in` draws, a WRITE otherwise.
pub fn multi_packet(rng: &mut Rng, c: &Conn, lo: u32, hi: u32, send_one_in: u64) -> Op {
    let send = rng.chance(1, send_one_in);
    let n = rng.range(u64::from(lo), u64::from(hi)) as u32;
    let len = n * c.pmtu - rng.below(u64::from(c.pmtu / 2)) as u32;
    if send {
        Op::Send {
            len,
            imm: rng.chance(1, 3).then_some(0x5eed),
            inv: None,
        }
    } else {
        Op::Write {
            len,
            imm: rng.chance(1, 3).then_some(0x5eed),
        }
    }
}

/// Chooses the faulty message and its fault.
type Inject<'a> = &'a mut dyn FnMut(&mut Rng, &Conn) -> (Op, Fault);

/// Round-robin over the QPs, one message each, until `target` frames are written. Every
/// `every`-th message (counted over all QPs) is the faulty one `inject` makes.
pub fn drive(
    out: &mut Out,
    rng: &mut Rng,
    conns: &mut [Conn],
    target: u64,
    every: u64,
    inject: Inject<'_>,
) -> io::Result<()> {
    let mut sent = vec![0usize; conns.len()];
    let mut k = 0u64;
    'outer: loop {
        for (i, c) in conns.iter_mut().enumerate() {
            if out.frames() >= target {
                break 'outer;
            }
            let due = every > 0 && k % every == every / 2 && sent[i] >= 2;
            let (op, fault) = if due {
                inject(rng, c)
            } else {
                let op = tour(c, sent[i]).unwrap_or_else(|| random_op(rng, c));
                (op, Fault::None)
            };
            c.exchange(out, rng, op, fault)?;
            out.now += rng.range(400, 4_000);
            sent[i] += 1;
            k += 1;
        }
    }
    for c in conns.iter_mut() {
        c.finish(out)?;
    }
    Ok(())
}

/// The host pairs and QPs of the RC scenarios: several pairs, PMTU 1024-4096.
pub fn standard_conns(rng: &mut Rng) -> Vec<Conn> {
    vec![
        conn(
            rng,
            v4(198, 18, 0, 1),
            v4(198, 18, 0, 2),
            0x000201,
            0x000101,
            4096,
        ),
        conn(
            rng,
            v4(198, 18, 0, 1),
            v4(198, 18, 0, 2),
            0x000202,
            0x000102,
            1024,
        ),
        conn(
            rng,
            v4(203, 0, 113, 6),
            v4(203, 0, 113, 5),
            0x001f3a,
            0x002e4b,
            2048,
        ),
        conn(
            rng,
            v4(198, 51, 100, 10),
            v4(198, 51, 100, 20),
            0x00a011,
            0x00b011,
            1024,
        ),
    ]
}

fn note_conns(out: &mut Out, conns: &[Conn]) {
    let v: Vec<serde_json::Value> = conns
        .iter()
        .map(|c| {
            serde_json::json!({
                "requester": c.req.src.to_string(),
                "responder": c.req.dst.to_string(),
                "requester_qp": format!("0x{:06x}", c.req_qpn),
                "responder_qp": format!("0x{:06x}", c.resp_qpn),
                "pmtu": c.pmtu,
                "first_psn": c.psn.0,
                "timeout_exponent": c.timeout,
            })
        })
        .collect();
    out.fact("qps", v);
}

pub fn clean_rc(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let mut conns = standard_conns(rng);
    note_conns(out, &conns);
    drive(out, rng, &mut conns, target, 0, &mut |_, _| unreachable!())
}

pub fn loss_upstream(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let mut conns = standard_conns(rng);
    note_conns(out, &conns);
    out.notes.push(
        "Each fault: one request packet lost before the tap (a PSN gap), one NAK (0x60) \
         naming it, go-back-N resend from it (the first resend fills the gap, the rest \
         are duplicates at the tap)."
            .into(),
    );
    drive(out, rng, &mut conns, target, 7, &mut |rng, c| {
        let op = multi_packet(rng, c, 3, 8, 3);
        let n = pkts(c, &op);
        (op, Fault::LossUpstream(rng.below(n as u64 - 1) as usize))
    })
}

pub fn loss_downstream(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let mut conns = standard_conns(rng);
    note_conns(out, &conns);
    out.notes.push(
        "Each fault: a request packet passes the tap and is lost after it: every PSN is \
         seen once, then the NAK (0x60) naming the lost PSN, then the same PSNs again."
            .into(),
    );
    drive(out, rng, &mut conns, target, 7, &mut |rng, c| {
        let op = multi_packet(rng, c, 3, 8, 3);
        let n = pkts(c, &op);
        (op, Fault::LossDownstream(rng.below(n as u64 - 1) as usize))
    })
}

pub fn tail_loss(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let mut conns = standard_conns(rng);
    note_conns(out, &conns);
    out.notes.push(
        "Each fault: the last packet of a message passes the tap and is lost; no NAK \
         follows. After the QP timeout (4.096 us * 2^timeout_exponent) the requester \
         resends the message from its first (oldest unacknowledged) PSN."
            .into(),
    );
    drive(out, rng, &mut conns, target, 9, &mut |rng, c| {
        (multi_packet(rng, c, 1, 3, 2), Fault::TailLoss)
    })
}

pub fn rnr(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let mut conns = standard_conns(rng);
    note_conns(out, &conns);
    out.notes.push(
        "Each fault: a SEND finds no receive WQE; the responder answers its first PSN \
         with an RNR NAK (syndrome 0x20 | timer code) and the requester resends the \
         whole SEND after the encoded time. Not a network loss."
            .into(),
    );
    let mut codes = Vec::new();
    drive(out, rng, &mut conns, target, 8, &mut |rng, c| {
        let code = *rng.pick(&[1u8, 4, 8, 12, 14, 16]);
        codes.push(code);
        (multi_packet(rng, c, 1, 3, 1), Fault::Rnr(code))
    })?;
    out.fact("rnr_timer_codes", codes);
    Ok(())
}

pub fn read_loss(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let mut conns = standard_conns(rng);
    note_conns(out, &conns);
    out.notes.push(
        "Each fault: one READ response goes missing (before the tap: a gap in the \
         response PSNs; after it: no gap). The requester re-issues a READ Request whose \
         PSN is the first missing response PSN and whose RETH covers the rest; the \
         responses restart there (counted as retransmitted)."
            .into(),
    );
    let mut before = 0u64;
    let mut after = 0u64;
    drive(out, rng, &mut conns, target, 6, &mut |rng, c| {
        let n = rng.range(3, 8) as u32;
        let len = n * c.pmtu - rng.below(u64::from(c.pmtu / 2)) as u32;
        let before_tap = rng.chance(1, 2);
        if before_tap {
            before += 1;
        } else {
            after += 1;
        }
        let i = rng.below(u64::from(n) - 1) as usize;
        (Op::Read { len }, Fault::ReadRespLoss { i, before_tap })
    })?;
    out.fact("read_responses_lost_before_tap", before);
    out.fact("read_responses_lost_after_tap", after);
    Ok(())
}

pub fn capture_loss(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let mut conns = standard_conns(rng);
    note_conns(out, &conns);
    out.notes.push(
        "Each fault: the capture misses 1-3 consecutive packets of a flow (sniffer ring \
         overrun). The receiver got them: no NAK, no retransmission, the gap is never \
         filled."
            .into(),
    );
    drive(out, rng, &mut conns, target, 6, &mut |rng, c| {
        if rng.chance(1, 3) {
            let n = rng.range(3, 8) as u32;
            let len = n * c.pmtu;
            let i = rng.below(u64::from(n) - 1) as usize;
            (Op::Read { len }, Fault::CaptureLossResp(i))
        } else {
            let op = multi_packet(rng, c, 4, 10, 3);
            let n = pkts(c, &op);
            let count = rng.range(1, 3).min(n as u64 - 1) as usize;
            let i = rng.below((n - count) as u64) as usize;
            (op, Fault::CaptureLoss { i, count })
        }
    })
}

pub fn icrc_corrupt(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let mut conns = standard_conns(rng);
    note_conns(out, &conns);
    out.notes.push(
        "Each fault: a request packet takes a bit error on the link between sender and \
         tap: the tap sees it with a bad ICRC (headers intact), the responder drops it and \
         NAKs (0x60) at the next packet, and the requester resends from it."
            .into(),
    );
    drive(out, rng, &mut conns, target, 11, &mut |rng, c| {
        let op = multi_packet(rng, c, 2, 6, 3);
        let n = pkts(c, &op);
        (op, Fault::Corrupt(rng.below(n as u64 - 1) as usize))
    })
}

pub fn psn_wrap(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    // Start every QP a few dozen PSNs before 0xFFFFFF so its PSNs (and READ response
    // ranges) pass through the wrap early in the trace.
    let pairs = [
        (
            v4(198, 18, 0, 1),
            v4(198, 18, 0, 2),
            0x000201,
            0x000101,
            4096,
        ),
        (
            v4(198, 18, 0, 1),
            v4(198, 18, 0, 2),
            0x000202,
            0x000102,
            1024,
        ),
        (
            v4(203, 0, 113, 6),
            v4(203, 0, 113, 5),
            0x001f3a,
            0x002e4b,
            2048,
        ),
    ];
    let mut conns: Vec<Conn> = pairs
        .iter()
        .map(|&(a, b, qa, qb, pmtu)| {
            let first = 0xff_ffff - rng.below(40) as u32;
            conn_at(rng, a, b, qa, qb, pmtu, first)
        })
        .collect();
    note_conns(out, &conns);
    out.notes
        .push("Clean traffic whose PSNs wrap from 0xFFFFFF to 0: no gap, no loss.".into());
    drive(out, rng, &mut conns, target, 0, &mut |_, _| unreachable!())
}

/// Packets (PSNs) a WRITE or SEND takes.
pub fn pkts(c: &Conn, op: &Op) -> usize {
    match *op {
        Op::Write { len, .. } | Op::Send { len, .. } | Op::Read { len } => c.packets_for(len),
        _ => 1,
    }
}
