//! `malformed`: damaged frames of every header kind among good RoCE traffic, for the
//! decoder's "never panic, say where and why" contract. Each damage comes in the forms
//! that occur in practice: cut by the capture (snaplen: captured < wire length, so
//! *truncated*), a frame physically shorter than its headers say, or length / code
//! fields that contradict the protocol (both *malformed*).
//!
//! Guarantees: every case is built from a correct frame (made by [`super::frame`]) by one
//! documented change, and decodes to the stop kind and layer listed with it (a unit test
//! holds the decoder to that list); every case is shorter than the smallest snaplen, so
//! no `--snaplen` can turn a malformed frame into a merely truncated one. All cases
//! appear at least once whatever `--packets` is.

use super::out::Out;
use super::rc::{Fault, Op};
use super::rng::Rng;
use super::traffic::{conn, v4};
use std::io;

mod cases;
mod frames;
use cases::cases;
use dissectors::StopKind;

pub fn malformed(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let cases = cases();
    let mut good = conn(
        rng,
        v4(198, 18, 0, 1),
        v4(198, 18, 0, 2),
        0x000201,
        0x000101,
        1024,
    );
    out.fact(
        "damaged_frames",
        cases
            .iter()
            .map(|c| format!("{}: {} at {}", c.what, c.kind.name(), c.layer.name()))
            .collect::<Vec<_>>(),
    );
    out.notes.push(
        "Damaged frames carry a pcapng comment (with --pcapng) saying what was done to \
         them. Cut frames (captured length < wire length) are 'truncated'; frames whose \
         bytes contradict the protocol are 'malformed'. The protocol counters (NAKs, \
         CE marks, per-opcode counts) count the undamaged frames only, and CNPs also the \
         cut ones whose BTH survived. A cut frame whose BTH survived is each time on a \
         QP of its own with the next PSN of that QP: its PSN counts (as it does on a real \
         stack), and the catalogue must not look like loss on a connection."
            .into(),
    );
    // Per case: where its BTH lies when it is a cut frame that keeps one (its QP and PSN
    // are set at each emission), and whether it is a CNP.
    let bth_of: Vec<Option<(usize, bool)>> = cases
        .iter()
        .map(|c| {
            let d = dissectors::decode(
                dissectors::LinkType::Ethernet,
                &c.data,
                c.orig_len as u32,
                &dissectors::Config::default(),
            );
            d.roce.filter(|_| c.kind == StopKind::Truncated).map(|r| {
                (
                    r.bth_offset as usize,
                    r.operation == Some(dissectors::Operation::Cnp),
                )
            })
        })
        .collect();
    let mut emitted = vec![0u32; cases.len()];
    let mut data = Vec::new();
    let mut next = 0usize;
    while next < cases.len() || out.frames() < target {
        let len = *rng.pick(&[16u32, 200, 1024, 2500]);
        let op = if rng.chance(1, 2) {
            Op::Write { len, imm: None }
        } else {
            Op::Send {
                len,
                imm: None,
                inv: None,
            }
        };
        good.exchange(out, rng, op, Fault::None)?;
        for _ in 0..2 {
            let i = next % cases.len();
            let c = &cases[i];
            next += 1;
            let ts = out.now + rng.range(500, 2_000);
            data.clear();
            data.extend_from_slice(&c.data);
            if let Some((at, is_cnp)) = bth_of[i] {
                let qp = 0x30_0000 + i as u32;
                data[at + 5..at + 8].copy_from_slice(&qp.to_be_bytes()[1..]);
                data[at + 9..at + 12].copy_from_slice(&emitted[i].to_be_bytes()[1..]);
                emitted[i] += 1;
                if is_cnp {
                    out.obs.cnp += 1;
                }
            }
            out.damaged(ts, &data, c.orig_len, c.kind == StopKind::Truncated, c.what)?;
        }
        out.now += rng.range(500, 3_000);
    }
    good.finish(out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dissectors::{decode, Config, LinkType};

    #[test]
    fn every_case_decodes_to_its_listed_stop() {
        let cfg = Config::default();
        let cs = cases();
        assert!(cs.len() >= 40);
        for c in &cs {
            assert!(
                c.data.len() <= super::super::MIN_SNAPLEN as usize,
                "{}",
                c.what
            );
            let d = decode(LinkType::Ethernet, &c.data, c.orig_len as u32, &cfg);
            assert_eq!(
                (d.stop.kind, d.stop.layer),
                (c.kind, c.layer),
                "{}: {} ({})",
                c.what,
                d.stop,
                d.stop.why
            );
            // A frame the capture cut is never "malformed"; a malformed one was whole.
            if c.data.len() < c.orig_len {
                assert_eq!(c.kind, StopKind::Truncated, "{}", c.what);
            }
            if c.kind == StopKind::Malformed {
                assert_eq!(c.data.len(), c.orig_len, "{}", c.what);
            }
        }
    }
}
