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
