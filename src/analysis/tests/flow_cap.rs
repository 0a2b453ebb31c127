//! `Config::max_flows`: the analyzer follows at most that many live flows; packets of
//! any further flow are counted, not followed.

use super::*;

#[test]
fn flows_beyond_the_cap_are_counted_not_followed() {
    let cfg = Config {
        max_flows: 2,
        ..Config::default()
    };
    let mut a = Analyzer::new(cfg);
    let mut t = 1_000_000;
    for qp in [10u32, 11, 12, 12, 10] {
        let d = pkt([192, 0, 2, 1], [192, 0, 2, 2], qp, SEND_ONLY, qp * 100);
        a.ingest(t, 0, &d);
        t += 1000;
    }
    assert_eq!(a.live_flows(), 2, "the third flow is not held");
    assert_eq!(
        a.untracked_packets(),
        2,
        "both packets of QP 12 are counted"
    );
    let snap = a.snapshot(0);
    let r = a.finish();
    assert_eq!(r.totals.flows, 2);
    assert_eq!(r.totals.frames, 5, "every frame still counts as a frame");
    // Said in the report, live and at the end.
    for rep in [&snap, &r] {
        let f = rep
            .findings
            .iter()
            .find(|f| f.code() == "flows_not_followed")
            .expect("a finding");
        assert_eq!(f.count, 2);
        assert_eq!(f.severity, Severity::Warning);
    }
}

#[test]
fn no_cap_by_default() {
    let mut a = Analyzer::new(Config::default());
    for qp in 0..100u32 {
        let d = pkt([192, 0, 2, 1], [192, 0, 2, 2], qp, SEND_ONLY, 1);
        a.ingest(1_000_000 + u64::from(qp), 0, &d);
    }
    assert_eq!((a.live_flows(), a.untracked_packets()), (100, 0));
}

#[test]
fn the_cap_can_move_while_running() {
    let mut a = Analyzer::new(Config {
        max_flows: 1,
        ..Config::default()
    });
    let d = |qp| pkt([192, 0, 2, 1], [192, 0, 2, 2], qp, SEND_ONLY, 1);
    a.ingest(1_000_000, 0, &d(1));
    a.ingest(1_001_000, 0, &d(2));
    assert_eq!((a.live_flows(), a.untracked_packets()), (1, 1));
    a.set_max_flows(2);
    a.ingest(1_002_000, 0, &d(2));
    assert_eq!((a.live_flows(), a.untracked_packets()), (2, 1));
}
