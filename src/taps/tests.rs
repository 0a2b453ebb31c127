use super::*;
use std::net::{IpAddr, Ipv4Addr};

const A: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
const B: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
const AB: DirKey = DirKey {
    src: A,
    dst: B,
    qpn: 0x22,
};
const BA: DirKey = DirKey {
    src: B,
    dst: A,
    qpn: 0x11,
};

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("t{i}")).collect()
}

fn s(tap: usize, at: i64, dir: DirKey, psn: u32, opcode: u8, nak: bool) -> Sight {
    Sight {
        tap,
        ts_ns: at as u64,
        at,
        dir,
        psn,
        opcode,
        ident: 0,
        nak,
        len: 0,
    }
}

/// Feeds sightings in time order.
fn run(n: usize, mut v: Vec<Sight>, synced: bool) -> Report {
    v.sort_by_key(|s| s.at);
    let mut m = Matcher::new(&names(n), 1_000_000, synced);
    for x in v {
        m.feed(x);
    }
    m.finish(&vec![0; n])
}

fn dir<'a>(r: &'a Report, k: &DirKey) -> &'a Direction {
    r.directions.iter().find(|d| d.key == *k).unwrap()
}

#[test]
fn loss_between_two_taps_and_its_nak() {
    let mut v = Vec::new();
    for p in 0..10u32 {
        let t = i64::from(p) * 10_000;
        v.push(s(0, t, AB, p, 0x0a, false));
        if p != 4 {
            v.push(s(1, t + 2_000 + i64::from(p % 3) * 100, AB, p, 0x0a, false));
        }
    }
    v.push(s(1, 52_000, BA, 4, 0x11, true));
    v.push(s(0, 54_000, BA, 4, 0x11, true));
    v.push(s(0, 120_000, AB, 4, 0x0a, false));
    v.push(s(1, 122_000, AB, 4, 0x0a, false));
    let r = run(2, v, false);
    let d = dir(&r, &AB);
    assert_eq!(d.path, vec![0, 1]);
    assert_eq!(d.segments[1].lost, 1);
    assert_eq!(d.segments[1].psns, vec![4]);
    assert_eq!(d.segments[1].naks, 1);
    assert_eq!(d.segments[1].timer_retries, 0);
    assert_eq!((d.segments[0].lost, d.segments[2].lost), (0, 0));
    let dl = d.delays[0].as_ref().unwrap();
    assert_eq!(dl.count, 10);
    assert!(
        dl.min_s.is_none(),
        "no absolute delay without synced clocks"
    );
    assert!((dl.max_above_min_s - 200e-9).abs() < 1e-12);
    // The NAK's direction runs the other way.
    assert_eq!(dir(&r, &BA).path, vec![1, 0]);
    assert_eq!(r.totals.lost_between_taps, 1);
}

#[test]
fn gap_at_first_tap_is_loss_before_it() {
    let v: Vec<Sight> = (0..6u32)
        .filter(|&p| p != 2 && p != 3)
        .flat_map(|p| {
            let t = i64::from(p) * 10_000;
            [
                s(0, t, AB, p, 0x0a, false),
                s(1, t + 1_000, AB, p, 0x0a, false),
            ]
        })
        .collect();
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(d.segments[0].psns, vec![2, 3]);
    assert_eq!(r.totals.lost_before_first_tap, 2);
    assert_eq!(d.delays[0].as_ref().unwrap().min_s, Some(1e-6));
}

#[test]
fn nak_for_a_psn_every_tap_saw_is_loss_after_the_last() {
    let mut v = Vec::new();
    for p in 0..4u32 {
        let t = i64::from(p) * 10_000;
        v.push(s(0, t, AB, p, 0x0a, false));
        v.push(s(1, t + 1_000, AB, p, 0x0a, false));
    }
    v.push(s(1, 32_000, BA, 2, 0x11, true));
    v.push(s(0, 33_000, BA, 2, 0x11, true));
    let r = run(2, v, false);
    let d = dir(&r, &AB);
    assert_eq!((d.segments[2].lost, d.segments[2].naks), (1, 1));
    assert_eq!(d.segments[2].psns, vec![2]);
    assert_eq!(r.totals.lost_after_last_tap, 1);
}

#[test]
fn a_tap_that_missed_a_frame_is_blamed_not_the_path() {
    let mut v = Vec::new();
    for p in 0..5u32 {
        let t = i64::from(p) * 10_000;
        for k in 0..3 {
            if !(p == 1 && k == 1) {
                v.push(s(k, t + k as i64 * 1_000, AB, p, 0x0a, false));
            }
        }
    }
    let r = run(3, v, false);
    assert_eq!(r.taps[1].missed, 1);
    assert_eq!(r.totals.lost_between_taps, 0);
}

#[test]
fn unrelated_taps_report_no_loss() {
    let other = DirKey {
        src: B,
        dst: A,
        qpn: 0x99,
    };
    let v = (0..5u32)
        .flat_map(|p| {
            let t = i64::from(p) * 10_000;
            [
                s(0, t, AB, p, 0x0a, false),
                s(1, t, other, p + 100, 0x0a, false),
            ]
        })
        .collect();
    let r = run(2, v, false);
    assert_eq!(r.totals, Totals::default());
    assert_eq!((r.taps[0].alone, r.taps[1].alone), (5, 5));
}

#[test]
fn a_resend_is_not_matched_with_the_original() {
    // PSN 1 lost between the taps, resent by the timer 50 µs later (same identification).
    let v = vec![
        s(0, 0, AB, 0, 0x0a, false),
        s(1, 1_000, AB, 0, 0x0a, false),
        s(0, 10_000, AB, 1, 0x0a, false),
        s(0, 60_000, AB, 1, 0x0a, false),
        s(1, 61_000, AB, 1, 0x0a, false),
    ];
    let r = run(2, v, false);
    let d = dir(&r, &AB);
    assert_eq!(d.segments[1].psns, vec![1]);
    assert_eq!(d.segments[1].timer_retries, 1);
    let dl = d.delays[0].as_ref().unwrap();
    assert_eq!(dl.max_above_min_s, 0.0);
}

#[test]
fn memory_follows_the_window_not_the_packets() {
    let mut m = Matcher::new(&names(2), 100_000, false);
    for p in 0..100_000u32 {
        let t = i64::from(p) * 1_000;
        m.feed(s(0, t, AB, p, 0x0a, false));
        m.feed(s(1, t + 500, AB, p, 0x0a, false));
        assert!(m.pending() <= 102);
    }
}

#[test]
fn samples_keep_exact_extremes_and_bounded_values() {
    let mut x = Samples::default();
    for v in 0..100_000i64 {
        x.add(v % 1000);
    }
    assert_eq!((x.min(), x.max(), x.count()), (Some(0), Some(999), 100_000));
    let med = x.quantile(0.5).unwrap();
    assert!((400..600).contains(&med), "{med}");
}

#[test]
fn a_tap_that_missed_a_frame_leaves_no_delay_across_it() {
    let mut v = Vec::new();
    for p in 0..5u32 {
        let t = i64::from(p) * 10_000;
        for k in 0..3 {
            if !(p == 1 && k == 1) {
                v.push(s(k, t + k as i64 * 1_000, AB, p, 0x04, false));
            }
        }
    }
    let r = run(3, v, true);
    let d = dir(&r, &AB);
    for dl in &d.delays {
        let dl = dl.as_ref().unwrap();
        assert_eq!(
            (dl.count, dl.max_above_min_s, dl.min_s),
            (4, 0.0, Some(1e-6))
        );
    }
}

#[test]
fn a_tap_that_started_late_and_ended_early_is_judged_on_its_span_only() {
    // Tap 1 captured PSNs 3..=6 of 0..10 only; PSN 5 was lost between the taps.
    let mut m = Matcher::new(&names(2), 1_000_000, false);
    let mut v = Vec::new();
    for p in 0..10u32 {
        let t = i64::from(p) * 10_000;
        v.push(s(0, t, AB, p, 0x04, false));
        if (3..=6).contains(&p) && p != 5 {
            v.push(s(1, t + 1_000, AB, p, 0x04, false));
        }
    }
    v.sort_by_key(|s| s.at);
    for x in v {
        let (tap, p) = (x.tap, x.psn);
        m.feed(x);
        if tap == 1 && p == 6 {
            m.tap_ended(1);
        }
    }
    let r = m.finish(&[0, 0]);
    let d = dir(&r, &AB);
    assert_eq!(d.segments[1].psns, vec![5]);
    assert_eq!(r.totals.lost_between_taps, 1);
    assert_eq!(r.taps[1].missed, 0);
}

#[test]
fn pcapng_statistics_say_what_a_capture_dropped() {
    use crate::synth::taps::{write, Spec};
    let dir = std::env::temp_dir().join(format!("rocetap-taps-isb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files: Vec<_> = (0..2).map(|k| dir.join(format!("t{k}"))).collect();
    let outs = files
        .iter()
        .map(|f| std::fs::File::create(f).unwrap())
        .collect();
    let spec = Spec {
        packets: 20,
        capture_drops: vec![(1, 17)],
        ..Spec::default()
    };
    write(&spec, outs).unwrap();
    let got = (
        super::isb::dropped(&files[0]),
        super::isb::dropped(&files[1]),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(got, (None, Some(17)));
}

/// A sighting with a length (a READ request's DMA length, else the payload's).
fn sl(tap: usize, at: i64, dir: DirKey, psn: u32, opcode: u8, len: u32) -> Sight {
    Sight {
        len,
        ..s(tap, at, dir, psn, opcode, false)
    }
}

/// A packet seen at both taps, 1 µs apart (tap 1 first for B's packets).
fn both(v: &mut Vec<Sight>, t: i64, dir: DirKey, psn: u32, opcode: u8, len: u32) {
    let (first, second) = if dir.src == A { (0, 1) } else { (1, 0) };
    v.push(sl(first, t, dir, psn, opcode, len));
    v.push(sl(second, t + 1_000, dir, psn, opcode, len));
}

#[test]
fn a_resend_run_that_skips_a_psn_lost_it_before_the_first_tap() {
    // 3 never reaches a tap; B NAKs it; the resend run 3..7 skips 5 (lost again before
    // the first tap); B NAKs 5; the run 5..7 completes.
    let mut v = Vec::new();
    for p in (0..8u32).filter(|&p| p != 3) {
        both(&mut v, i64::from(p) * 10_000, AB, p, 0x0a, 0);
    }
    v.push(s(1, 80_000, BA, 3, 0x11, true));
    v.push(s(0, 81_000, BA, 3, 0x11, true));
    for (k, p) in [3u32, 4, 6, 7].into_iter().enumerate() {
        both(&mut v, 90_000 + k as i64 * 10_000, AB, p, 0x0a, 0);
    }
    v.push(s(1, 130_000, BA, 5, 0x11, true));
    v.push(s(0, 131_000, BA, 5, 0x11, true));
    for (k, p) in [5u32, 6, 7].into_iter().enumerate() {
        both(&mut v, 140_000 + k as i64 * 10_000, AB, p, 0x0a, 0);
    }
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(d.segments[0].psns, vec![3, 5]);
    assert_eq!(d.segments[0].naks, 2);
    assert_eq!((d.segments[1].lost, d.segments[2].lost), (0, 0));
}

#[test]
fn a_resend_run_that_starts_above_the_naked_psn_lost_its_first_again() {
    // 3 never reaches a tap; B NAKs it; the resend of 3 is lost before the first tap
    // too, so the run the taps see starts at 4; B, already waiting for 3, sends no
    // second NAK; the sender's timer resends 3..7.
    let mut v = Vec::new();
    for p in (0..8u32).filter(|&p| p != 3) {
        both(&mut v, i64::from(p) * 10_000, AB, p, 0x0a, 0);
    }
    v.push(s(1, 80_000, BA, 3, 0x11, true));
    v.push(s(0, 81_000, BA, 3, 0x11, true));
    for (k, p) in [4u32, 5, 6, 7].into_iter().enumerate() {
        both(&mut v, 90_000 + k as i64 * 10_000, AB, p, 0x0a, 0);
    }
    for (k, p) in (3u32..8).enumerate() {
        both(&mut v, 500_000 + k as i64 * 10_000, AB, p, 0x0a, 0);
    }
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(d.segments[0].psns, vec![3, 3]);
    assert_eq!(d.segments[0].naks, 1);
    assert_eq!(d.segments[0].timer_retries, 1);
    assert_eq!((d.segments[1].lost, d.segments[2].lost), (0, 0));
}

#[test]
fn a_timer_resend_of_a_packet_the_receiver_acknowledged_is_no_loss() {
    // One packet in flight. PSN 2: the ACK of the original leaves B after the resend
    // arrived (B was slow), and B acknowledges both copies: nothing was lost. PSN 4: B
    // acknowledges only the resend: the original was lost after B's tap.
    let mut v = Vec::new();
    for p in 0..6u32 {
        let t = i64::from(p) * 100_000;
        both(&mut v, t, AB, p, 0x0a, 0);
        if p == 2 || p == 4 {
            both(&mut v, t + 50_000, AB, p, 0x0a, 0);
        }
        let acks: &[i64] = match p {
            2 => &[51_500, 51_800],
            4 => &[51_500],
            _ => &[2_000],
        };
        for &a in acks {
            both(&mut v, t + a, BA, p, 0x11, 0);
        }
    }
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(d.segments[2].psns, vec![4]);
    assert_eq!(d.segments[2].timer_retries, 1);
    assert_eq!((d.segments[0].lost, d.segments[1].lost), (0, 0));
}

#[test]
fn read_requests_span_their_responses_and_a_re_request_is_no_loss() {
    // READs of 4 KiB over a 1 KiB path MTU: each request spans 4 PSNs. Response 5 is lost
    // between the taps (B's tap saw it, A's did not); A asks again from PSN 5.
    let mut v = Vec::new();
    for k in 0..4u32 {
        let (p, t) = (k * 4, i64::from(k) * 100_000);
        both(&mut v, t, AB, p, 0x0c, 4096);
        for (i, op) in [0x0d, 0x0e, 0x0e, 0x0f].into_iter().enumerate() {
            let (q, tq) = (p + i as u32, t + 10_000 + i as i64 * 2_000);
            if q == 5 {
                v.push(sl(1, tq, BA, q, op, 1024));
            } else {
                both(&mut v, tq, BA, q, op, 1024);
            }
        }
    }
    both(&mut v, 450_000, AB, 5, 0x0c, 3072);
    for (i, op) in [0x0d, 0x0e, 0x0f].into_iter().enumerate() {
        both(
            &mut v,
            460_000 + i as i64 * 2_000,
            BA,
            5 + i as u32,
            op,
            1024,
        );
    }
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(
        (d.segments[0].lost, d.segments[1].lost, d.segments[2].lost),
        (0, 0, 0),
        "{:?}",
        d.segments
    );
    let back = dir(&r, &BA);
    assert_eq!(back.segments[1].psns, vec![5]);
    assert_eq!(r.totals.lost_between_taps, 1);
}

#[test]
fn a_nak_for_the_psn_before_the_first_seen_is_loss_before_the_first_tap() {
    // The stream's first packet (PSN 10) never reached a tap; B NAKs it.
    let mut v = Vec::new();
    for p in 11..14u32 {
        both(&mut v, i64::from(p) * 10_000, AB, p, 0x0a, 0);
    }
    v.push(s(1, 150_000, BA, 10, 0x11, true));
    v.push(s(0, 151_000, BA, 10, 0x11, true));
    for (k, p) in (10..14u32).enumerate() {
        both(&mut v, 160_000 + k as i64 * 10_000, AB, p, 0x0a, 0);
    }
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(d.segments[0].psns, vec![10]);
    assert_eq!(d.segments[0].naks, 1);
    assert_eq!(d.segments[2].lost, 0);
}

#[test]
fn a_read_request_before_the_first_seen_is_one_loss_not_one_per_psn() {
    // READs of 4 KiB over a 1 KiB path MTU (another QP's responses between the two hosts
    // taught it): each request spans 4 PSNs. The stream's first request (PSN 0) never
    // reached a tap; B, given the second (PSN 4), NAKs PSN 0 and A asks again from there.
    // Lost: one request, not the 4 PSNs it spans (the lab's switch-read-before run said 4).
    let read = |v: &mut Vec<Sight>, t: i64, (req, resp): (DirKey, DirKey), psn: u32| {
        both(v, t, req, psn, 0x0c, 4096);
        for (i, op) in [0x0d, 0x0e, 0x0e, 0x0f].into_iter().enumerate() {
            both(
                v,
                t + 2_000 + i as i64 * 1_000,
                resp,
                psn + i as u32,
                op,
                1024,
            );
        }
    };
    let other = (DirKey { qpn: 0x33, ..AB }, DirKey { qpn: 0x44, ..BA });
    let mut v = Vec::new();
    read(&mut v, 0, other, 100);
    both(&mut v, 20_000, AB, 4, 0x0c, 4096);
    v.push(s(1, 30_000, BA, 0, 0x11, true));
    v.push(s(0, 31_000, BA, 0, 0x11, true));
    for k in 0..3u32 {
        read(&mut v, 40_000 + i64::from(k) * 10_000, (AB, BA), k * 4);
    }
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(d.segments[0].psns, vec![0], "{:?}", d.segments);
    assert_eq!(d.segments[0].naks, 1);
    assert_eq!((d.segments[1].lost, d.segments[2].lost), (0, 0));
}

/// WRITE Middle packets `psns` from A, seen at both taps from `t` every `step` ns.
fn writes(v: &mut Vec<Sight>, t: i64, step: i64, psns: impl IntoIterator<Item = u32>) {
    for (k, p) in psns.into_iter().enumerate() {
        both(v, t + k as i64 * step, AB, p, 0x0a, 0);
    }
}

/// B's sequence NAK for `psn`, at B's tap at `at_b` and at A's at `at_a`.
fn nak(v: &mut Vec<Sight>, at_b: i64, at_a: i64, psn: u32) {
    v.push(s(1, at_b, BA, psn, 0x11, true));
    v.push(s(0, at_a, BA, psn, 0x11, true));
}

/// Packets lost before the first tap, between the two, after the last.
fn lost(d: &Direction) -> Vec<u64> {
    d.segments.iter().map(|s| s.lost).collect()
}

#[test]
fn a_late_nak_for_a_psn_every_tap_saw_is_no_timer_loss_after_the_last() {
    // 3 never reaches a tap (lost before the first); B acknowledges 0..2; the sender's
    // timer resends 3..5 and every tap sees 3 this time; B's NAK for 3, answering the
    // first run, leaves after that copy reached it (a responder behind its receive queue,
    // as in the switch lab's write-before run); the run it asks for, 3..5, is no loss
    // after the last tap.
    let mut v = Vec::new();
    writes(&mut v, 0, 10_000, [0, 1, 2, 4, 5]);
    both(&mut v, 25_000, BA, 2, 0x11, 0);
    writes(&mut v, 500_000, 10_000, 3..6);
    nak(&mut v, 540_000, 541_000, 3);
    writes(&mut v, 550_000, 10_000, 3..6);
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(d.segments[0].psns, vec![3], "{:?}", d.segments);
    assert_eq!(lost(d), vec![1, 0, 0], "{:?}", d.segments);
}

#[test]
fn a_timer_run_between_a_nak_and_its_run_leaves_the_run_the_naks() {
    // 5 never reaches a tap; B acknowledges 0..2 and NAKs 5 (at B's tap at 100 µs, at
    // A's at 250 µs); the sender's timer run 3..7, at 200 µs, left before the NAK reached
    // it, so the NAK is left to the run it asked for, 5..7: no loss after the last tap
    // (the switch lab's read-before run).
    let mut v = Vec::new();
    writes(&mut v, 0, 10_000, (0..8).filter(|&p| p != 5));
    both(&mut v, 25_000, BA, 2, 0x11, 0);
    nak(&mut v, 100_000, 250_000, 5);
    writes(&mut v, 200_000, 10_000, 3..8);
    writes(&mut v, 300_000, 10_000, 5..8);
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(d.segments[0].psns, vec![5], "{:?}", d.segments);
    assert_eq!(lost(d), vec![1, 0, 0], "{:?}", d.segments);
}

#[test]
fn a_run_the_sender_started_before_a_nak_reached_it_is_not_the_naks() {
    // 3 is lost between the taps; B NAKs it (at B's tap at 100 µs, at A's at 130 µs).
    // At 110 µs, before the NAK reached A, every tap sees 8 again; the NAK's run, 3..9,
    // comes at 140 µs. The copy of 8 does not start the NAK's run: nothing was lost
    // before the first tap (the switch lab's write-s run said 119).
    let mut v = Vec::new();
    for p in 0..10u32 {
        if p == 3 {
            v.push(sl(0, 3_000, AB, p, 0x0a, 0));
        } else {
            both(&mut v, i64::from(p) * 1_000, AB, p, 0x0a, 0);
        }
    }
    both(&mut v, 25_000, BA, 2, 0x11, 0);
    nak(&mut v, 100_000, 130_000, 3);
    writes(&mut v, 110_000, 0, [8]);
    writes(&mut v, 140_000, 1_000, 3..10);
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(d.segments[1].psns, vec![3], "{:?}", d.segments);
    assert_eq!(lost(d), vec![0, 1, 0], "{:?}", d.segments);
}

#[test]
fn an_original_seen_just_after_the_next_psn_is_reordered_not_lost() {
    // Every tap sees 4 before 3 (reordered before the first tap, 100 µs apart); no NAK,
    // no timer: nothing was lost (the switch lab's write-s run said 2 before A).
    let mut v = Vec::new();
    writes(&mut v, 0, 100_000, [0, 1, 2, 4, 3, 5, 6]);
    both(&mut v, 700_000, BA, 6, 0x11, 0);
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(lost(d), vec![0, 0, 0], "{:?}", d.segments);
}

#[test]
fn a_timer_run_from_a_messages_start_is_the_loss_above_it() {
    // The switch lab's write-s run: the message 4..7 (WRITE First..Last) reached B but for
    // its last packet, 7, lost between the taps; B acknowledged 3 and, waiting for the
    // message's end, nothing after it. The sender's timer resent the whole message from 4:
    // the loss it answers is 7's, between the taps; 4, which every tap saw, was not lost
    // after the last (it said 1).
    let mut v = Vec::new();
    writes(&mut v, 0, 10_000, 0..7);
    v.push(sl(0, 70_000, AB, 7, 0x0a, 0));
    both(&mut v, 35_000, BA, 3, 0x11, 0);
    writes(&mut v, 500_000, 10_000, 4..8);
    both(&mut v, 540_000, BA, 7, 0x11, 0);
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(d.segments[1].psns, vec![7], "{:?}", d.segments);
    assert_eq!(lost(d), vec![0, 1, 0], "{:?}", d.segments);
    assert_eq!(d.segments[1].timer_retries, 1, "{:?}", d.segments);
}

#[test]
fn a_timer_run_from_a_psn_whose_next_passed_un_naked_is_no_loss() {
    // The switch lab's write-before run: 4..7 reached both taps; B, stalled, acknowledged
    // nothing for a while and the sender's timer resent 4..7; B then acknowledged 7 for
    // every copy. Had 4 been lost after B's tap, B would have NAKed it on meeting 5: no
    // loss anywhere (it said 1 after the last tap).
    let mut v = Vec::new();
    writes(&mut v, 0, 10_000, 0..8);
    both(&mut v, 35_000, BA, 3, 0x11, 0);
    writes(&mut v, 500_000, 10_000, 4..8);
    for k in 0..5 {
        both(&mut v, 540_000 + k * 1_000, BA, 7, 0x11, 0);
    }
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(lost(d), vec![0, 0, 0], "{:?}", d.segments);
}

#[test]
fn a_run_psn_seen_just_after_the_next_ones_is_reordered_by_the_clocks_not_lost() {
    // The switch lab's write-s run: in the sender's timer run 3..9, B's copies of 6..8
    // come (after the clock-offset correction) 50 µs before A's copy of 5: the run seems
    // to skip 5 and then go back to it. Nothing was lost (it said 5..8 before A).
    let mut v = Vec::new();
    writes(&mut v, 0, 10_000, 0..10);
    both(&mut v, 25_000, BA, 2, 0x11, 0);
    for (p, a, b) in [
        (3u32, 500_000, 500_200),
        (4, 500_100, 500_300),
        (6, 500_500, 500_350),
        (7, 500_510, 500_360),
        (8, 500_520, 500_370),
        (5, 500_400, 500_600),
        (9, 500_700, 500_900),
    ] {
        v.push(sl(0, a, AB, p, 0x0a, 0));
        v.push(sl(1, b, AB, p, 0x0a, 0));
    }
    both(&mut v, 600_000, BA, 9, 0x11, 0);
    let r = run(2, v, true);
    let d = dir(&r, &AB);
    assert_eq!(lost(d), vec![0, 0, 0], "{:?}", d.segments);
}
