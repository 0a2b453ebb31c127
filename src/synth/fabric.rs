//! Fabric-level scenarios: ECN/CNP congestion control (an incast whose senders are
//! CE-marked, told to slow down by CNPs, and recover) and a PFC pause storm.
//!
//! Guarantees: every CNP answers a CE-marked packet of the QP it names (so #CNP <= #CE),
//! at most one CNP per QP per pacing interval; a sender's packets are spaced by its
//! current rate, which halves when a CNP reaches it and climbs back with time. In the
//! PFC storm no frame of the paused priority appears between the first pause and the
//! resume, while the other priority keeps flowing.

use super::frame::{mac_for, Link, Vlan};
use super::out::Out;
use super::rc::{Cc, Conn, Fault, Op, LINE_MBPS};
use super::rng::Rng;
use super::traffic::{conn, multi_packet, random_op, v4};
use dissectors::{Ecn, PauseRepr};
use std::io;

/// Minimum time between two CNPs to one QP (the NIC's CNP pacing).
const CNP_INTERVAL_NS: u64 = 10_000;

pub fn congestion(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let hot = v4(198, 18, 0, 2);
    let senders = [
        (v4(198, 18, 0, 1), 0x000201u32, 0x000101u32),
        (v4(198, 18, 0, 3), 0x000301, 0x000103),
        (v4(198, 18, 0, 4), 0x000401, 0x000104),
    ];
    let mut conns: Vec<Conn> = senders
        .iter()
        .map(|&(a, qa, qb)| {
            let mut c = conn(rng, a, hot, qa, qb, 1024);
            // CNPs: DSCP 48, not ECN-capable, from the receiver to the sender's QP.
            let mut cnp_path = c.resp;
            cnp_path.dscp = 48;
            cnp_path.ecn = Ecn::NotEct;
            c.cc = Some(Cc::new(cnp_path, CNP_INTERVAL_NS));
            c
        })
        .collect();
    // A flow elsewhere in the fabric that never crosses the congested port.
    let mut cold = conn(
        rng,
        v4(203, 0, 113, 6),
        v4(203, 0, 113, 5),
        0x001f3a,
        0x002e4b,
        2048,
    );
    out.fact("hot_receiver", hot.to_string());
    out.fact("cnp_interval_ns", CNP_INTERVAL_NS);
    out.notes.push(
        "Three senders write to 198.18.0.2 through one 100 Gb/s port. The switch marks CE \
         with a probability that grows with the excess of their summed rate over the \
         port; the receiver answers a CE mark with a CNP to the sender's QP (at most one \
         per QP per cnp_interval_ns); a sender halves its rate when a CNP arrives (wider \
         gaps between its packets) and regains a tenth of the line rate per 55 us."
            .into(),
    );
    while out.frames() < target {
        for i in 0..conns.len() {
            if out.frames() >= target {
                break;
            }
            let total: u64 = conns
                .iter()
                .map(|c| c.cc.as_ref().map_or(LINE_MBPS, |cc| cc.rate_mbps))
                .sum();
            let excess = total.saturating_sub(LINE_MBPS);
            let permille = (excess * 1000 / total).min(900);
            let c = &mut conns[i];
            if let Some(cc) = c.cc.as_mut() {
                cc.mark_permille = permille;
            }
            let op = multi_packet(rng, c, 2, 8, 4);
            c.exchange(out, rng, op, Fault::None)?;
            out.now += rng.range(200, 1_500);
        }
        if rng.chance(1, 3) {
            let op = random_op(rng, &cold);
            cold.exchange(out, rng, op, Fault::None)?;
            out.now += rng.range(200, 1_500);
        }
    }
    for c in &mut conns {
        c.finish(out)?;
    }
    cold.finish(out)?;
    let per_qp: serde_json::Map<String, serde_json::Value> = conns
        .iter()
        .map(|c| {
            let n = c.cc.as_ref().map_or(0, |cc| cc.cnps);
            (format!("{} qp=0x{:06x}", c.req.src, c.req_qpn), n.into())
        })
        .collect();
    out.fact("cnp_per_sender_qp", serde_json::Value::Object(per_qp));
    Ok(())
}

/// Time one PFC pause quantum lasts at 100 Gb/s: 512 bit times.
const QUANTUM_NS_X100: u64 = 512; // 512 bits / 100 Gb/s = 5.12 ns
const PAUSED_PRIORITY: u8 = 3;

pub fn pfc_storm(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let a = v4(198, 18, 0, 1);
    let b = v4(198, 18, 0, 2);
    let tag = |c: &mut Conn, pcp: u8, dscp: u8| {
        for p in [&mut c.req, &mut c.resp] {
            p.link = Link::Ethernet {
                vlan: Some(Vlan { vid: 100, pcp }),
            };
            p.dscp = dscp;
        }
    };
    // The lossless RoCE class (PCP 3) and a second class (PCP 0) on the same link.
    let mut lossless = conn(rng, a, b, 0x000201, 0x000101, 4096);
    tag(&mut lossless, PAUSED_PRIORITY, 26);
    let mut other = conn(rng, a, b, 0x000202, 0x000102, 1024);
    tag(&mut other, 0, 0);
    let stuck_mac = mac_for(b);
    let quanta = 0xffffu16;
    // Refresh the pause before it expires, as a stuck receiver does.
    let pause_ns = u64::from(quanta) * QUANTUM_NS_X100 / 100;
    let refresh_ns = pause_ns / 2;
    let xoff = PauseRepr::Pfc {
        enable: 1 << PAUSED_PRIORITY,
        quanta: {
            let mut q = [0u16; 8];
            q[usize::from(PAUSED_PRIORITY)] = quanta;
            q
        },
    };
    let xon = PauseRepr::Pfc {
        enable: 1 << PAUSED_PRIORITY,
        quanta: [0; 8],
    };
    out.fact("paused_priority", PAUSED_PRIORITY);
    out.fact(
        "pause_sender_mac",
        dissectors::ethernet::Mac(&stuck_mac).to_string(),
    );
    out.fact("pause_quanta", quanta);
    out.fact("pause_refresh_ns", refresh_ns);
    out.notes.push(
        "198.18.0.2's NIC stops draining its receive buffers for priority 3 and sends PFC \
         XOFF frames (enable bit 3, quanta 0xffff) every pause_refresh_ns; the switch \
         holds everything on VLAN PCP 3, so RC traffic on PCP 3 stalls while PCP 0 \
         continues. A PFC frame with quanta 0 (XON) ends each storm."
            .into(),
    );
    let mut storms = 0u64;
    let mut sent = [0usize; 2];
    while out.frames() < target {
        // Normal operation: both classes.
        for _ in 0..rng.range(4, 8) {
            for (k, c) in [&mut lossless, &mut other].into_iter().enumerate() {
                if out.frames() >= target {
                    break;
                }
                let op = if sent[k] < 2 {
                    Op::Write {
                        len: 3 * c.pmtu,
                        imm: None,
                    }
                } else {
                    random_op(rng, c)
                };
                c.exchange(out, rng, op, Fault::None)?;
                sent[k] += 1;
                out.now += rng.range(500, 3_000);
            }
        }
        lossless.finish(out)?;
        other.finish(out)?;
        if out.frames() >= target {
            break;
        }
        // The storm: pauses on priority 3 while a light PCP 0 flow goes on.
        storms += 1;
        for _ in 0..rng.range(8, 12) {
            let t = out.now + 1_000;
            out.pause(t, stuck_mac, &xoff)?;
            out.now = t + rng.range(20_000, 60_000);
            let len = *rng.pick(&[64u32, 512, 1024, 2048]);
            other.exchange(out, rng, Op::Write { len, imm: None }, Fault::None)?;
            other.finish(out)?;
            out.now = out.now.max(t + refresh_ns);
        }
        let t = out.now + 1_000;
        out.pause(t, stuck_mac, &xon)?;
        out.now = t + 2_000;
    }
    lossless.finish(out)?;
    other.finish(out)?;
    out.fact("pfc_storms", storms);
    Ok(())
}
