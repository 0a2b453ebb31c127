//! Each fault played on one connection, read back through the decoder.

use super::*;
use crate::capture::file::for_each_frame;
use crate::synth::traffic::{conn_at, v4};
use dissectors::{decode, Config, IcrcStatus, LinkType};
use std::ops::ControlFlow;

/// (opcode, PSN, AETH syndrome, READ RETH (VA offset, length)) of every frame, plus
/// the counted truth and the timestamps.
type Seen = (u8, u32, Option<u8>, Option<(u64, u32)>);

fn play(op: Op, fault: Fault) -> (Vec<Seen>, Vec<u64>, crate::synth::out::Observable, u64) {
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
        (1, 1, 4)
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
        (0, 1, 3)
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
