//! The one-line, tshark-like summary of a decoded frame used by `rocetap decode` text
//! output: `3 0.000001 198.18.1.12 → 198.18.1.11 RC RDMA WRITE First QP=0x00a022 PSN=123`.

use crate::report::style::{Paint, Tone};
use dissectors::ethernet::Mac;
use dissectors::{
    AethKind, AethRepr, ArpOp, ArpRepr, Decoded, Ecn, IcrcStatus, PauseRepr, Roce, StopKind,
};
use std::fmt::Write as _;

mod mad;

/// Appends the protocol part of the summary (after the addresses) to `out`, with the
/// trouble words in color when `paint` is on: NAKs and bad ICRCs red, RNR NAKs yellow,
/// congestion marks (CNP, ECN CE, FECN/BECN) magenta, a malformed frame's stop reason red.
pub fn describe(d: &Decoded, out: &mut String, paint: Paint) {
    if let Some(r) = &d.roce {
        roce(d, r, out, paint);
    } else if let Some(a) = &d.arp {
        arp(a, out);
    } else if let Some(p) = &d.pause {
        pause(p, out);
    } else if let Some(ip) = &d.ip {
        let _ = match (ip.protocol, d.udp) {
            (17, Some(u)) => write!(out, "UDP {} → {}", u.src_port, u.dst_port),
            (6, _) => write!(out, "TCP"),
            (1, _) => write!(out, "ICMP"),
            (58, _) => write!(out, "ICMPv6"),
            (p, _) => write!(out, "IP proto {p}"),
        };
    } else if let Some(et) = d.ethertype {
        let _ = write!(out, "EtherType 0x{et:04x}");
    } else {
        out.push_str("(link layer)");
    }
    if d.stop.kind != StopKind::Complete
        && !(d.stop.kind == StopKind::Unsupported && d.roce.is_none())
    {
        out.push(' ');
        let tone = (d.stop.kind == StopKind::Malformed).then_some(Tone::Bad);
        paint.wrap(out, tone, |o| {
            let _ = write!(
                o,
                "[{}{}{}]",
                d.stop,
                if d.stop.why.is_empty() { "" } else { ": " },
                d.stop.why
            );
        });
    }
}

/// The BTH and the extended headers of a RoCE frame, its ECN and ICRC verdict.
fn roce(d: &Decoded, r: &Roce, out: &mut String, paint: Paint) {
    if let Some(m) = &r.mad {
        mad::describe(m, out, paint);
        trailer(d, r, out, paint);
        return;
    }
    paint.wrap(out, r.is_cnp().then_some(Tone::Mark), |o| {
        let _ = write!(o, "{}", r.describe());
    });
    let _ = write!(out, " QP={} PSN={}", r.bth.dest_qp, r.bth.psn);
    if r.bth.ack_req {
        out.push_str(" A");
    }
    if r.bth.se {
        out.push_str(" SE");
    }
    if r.bth.fecn {
        out.push(' ');
        paint.push(out, Tone::Mark, "FECN");
    }
    if r.bth.becn && !r.is_cnp() {
        out.push(' ');
        paint.push(out, Tone::Mark, "BECN");
    }
    if let Some(x) = r.xrceth {
        let _ = write!(out, " SRQ={}", x.xrc_srq);
    }
    if let Some(dt) = r.deth {
        let _ = write!(out, " SrcQP={} QKey=0x{:08x}", dt.src_qp, dt.qkey);
    }
    if let Some(h) = r.reth {
        let _ = write!(
            out,
            " VA=0x{:x} RKey=0x{:08x} Len={}",
            h.va, h.rkey, h.dma_len
        );
    }
    if let Some(h) = r.atomic_eth {
        let _ = write!(
            out,
            " VA=0x{:x} RKey=0x{:08x} SwapAdd=0x{:x} Cmp=0x{:x}",
            h.va, h.rkey, h.swap_add, h.compare
        );
    }
    if let Some(a) = r.aeth {
        aeth(a, out, paint);
    }
    if let Some(h) = r.atomic_ack_eth {
        let _ = write!(out, " Orig=0x{:x}", h.orig_rem_data);
    }
    if let Some(h) = r.immdt {
        let _ = write!(out, " Imm=0x{:08x}", h.data);
    }
    if let Some(h) = r.ieth {
        let _ = write!(out, " Inv=0x{:08x}", h.rkey);
    }
    if r.operation.is_some() && r.payload_len > 0 {
        let _ = write!(out, " Len={}", r.payload_len);
    }
    trailer(d, r, out, paint);
}

/// The ECN and ICRC marks that end every RoCE summary.
fn trailer(d: &Decoded, r: &Roce, out: &mut String, paint: Paint) {
    if d.ecn() == Some(Ecn::Ce) {
        out.push(' ');
        paint.push(out, Tone::Mark, "ECN=CE");
    }
    match r.icrc {
        IcrcStatus::Bad => {
            out.push(' ');
            paint.push(out, Tone::Bad, "ICRC-BAD");
        }
        IcrcStatus::Ok | IcrcStatus::Truncated | IcrcStatus::Absent => {}
    }
}

/// `ACK MSN=..`, `RNR-NAK timer=..`, `NAK (..)`.
fn aeth(a: AethRepr, out: &mut String, paint: Paint) {
    match a.kind() {
        AethKind::Ack { .. } => {
            let _ = write!(out, " ACK MSN={}", a.msn.0);
        }
        AethKind::RnrNak { timer } => {
            out.push(' ');
            paint.wrap(out, Some(Tone::Warn), |o| {
                let _ = write!(
                    o,
                    "RNR-NAK timer={} ({} us)",
                    timer,
                    dissectors::ib::aeth::rnr_timer_us(timer)
                );
            });
            let _ = write!(out, " MSN={}", a.msn.0);
        }
        AethKind::Nak(code) => {
            out.push(' ');
            paint.wrap(out, Some(Tone::Bad), |o| {
                let _ = write!(o, "NAK ({})", code.name());
            });
            let _ = write!(out, " MSN={}", a.msn.0);
        }
        AethKind::Reserved(s) => {
            let _ = write!(out, " AETH syndrome=0x{s:02x}");
        }
    }
}

fn arp(a: &ArpRepr, out: &mut String) {
    let _ = match a.op {
        ArpOp::Request if a.is_gratuitous() => {
            write!(out, "ARP Gratuitous ARP for {}", a.sender_ip)
        }
        ArpOp::Request => write!(out, "ARP Who has {}? Tell {}", a.target_ip, a.sender_ip),
        ArpOp::Reply => {
            if a.hlen == 6 {
                write!(out, "ARP {} is at {}", a.sender_ip, Mac(a.sender_hw()))
            } else {
                write!(
                    out,
                    "ARP {} is at (IPoIB) {}",
                    a.sender_ip,
                    Mac(a.sender_hw())
                )
            }
        }
        ArpOp::Other(n) => write!(out, "ARP opcode {n}"),
    };
}

fn pause(p: &PauseRepr, out: &mut String) {
    let _ = match p {
        PauseRepr::Global { quanta } => write!(out, "PAUSE quanta={quanta}"),
        PauseRepr::Pfc { enable, quanta } => {
            let _ = write!(out, "PFC");
            for prio in 0..8u8 {
                if enable & (1 << prio) != 0 {
                    let _ = write!(out, " p{}={}", prio, quanta[usize::from(prio)]);
                }
            }
            Ok(())
        }
    };
}
