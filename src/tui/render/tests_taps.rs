//! `top --tap`: the flows table's `lost at` column and the detail view's segments, drawn
//! into `TestBackend` from the merged analysis of `samples/taps/*` (as `top` computes it)
//! and the first tap's replay, compared with `tests/golden/tui/taps-*.txt`
//! (`UPDATE_EXPECT=1` rewrites them); and the replay feeder of a mirror capture: the
//! inner RoCE of every session, or of the first tap's session alone.

use super::tests::{app_of, golden};
use crate::taps::{run, spec, Report};
use crate::tui::app::{Action, App, Mode, View};
use std::path::PathBuf;
use std::sync::Arc;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples/taps")
}

fn dcfg() -> dissectors::Config {
    dissectors::Config {
        roce_port: 4791,
        check_icrc: true,
    }
}

/// The merged analysis of `--tap ARGS` (files under samples/taps), as `top` computes it.
fn merged(args: &[&str]) -> Report {
    let args: Vec<String> = args
        .iter()
        .map(|a| match a.split_once('=') {
            Some((n, f)) => format!("{n}={}", dir().join(f).display()),
            None => dir().join(a).display().to_string(),
        })
        .collect();
    let cfg = spec::config("top", &args, false, 0.1, dcfg()).expect("taps parse");
    run(&cfg).expect("taps merge")
}

fn with_taps(first: &str, r: Report) -> App {
    let mut app = app_of(&format!("taps/{first}"), 64, Mode::Replay);
    app.taps = Some(Arc::new(r));
    app
}

#[test]
fn flows_show_where_each_flow_lost_packets() {
    let app = with_taps(
        "two-taps.a.pcap",
        merged(&["a=two-taps.a.pcap", "s=two-taps.s.pcap"]),
    );
    for (w, h) in SIZES {
        let s = golden("taps-flows-two", &app, w, h);
        assert!(s.contains("lost at"), "{s}");
        // The requests: 4 lost between the taps, 1 before a, 1 after s; the ACKs none.
        assert!(s.contains("before a 1, a→s 4"), "{s}");
        assert!(s.contains("no loss"), "{s}");
    }
    let s = golden("taps-flows-two", &app, 160, 48);
    assert!(s.contains("before a 1, a→s 4, after s 1"), "{s}");
    let three = with_taps(
        "three-taps.a.pcap",
        merged(&[
            "a=three-taps.a.pcap",
            "s=three-taps.s.pcap",
            "b=three-taps.b.pcap",
        ]),
    );
    let s = golden("taps-flows-three", &three, 160, 48);
    // The generator's drops: 1 before a, 1 between a and s, 2 between s and b, (2 after
    // b, cut at the column's width).
    assert!(s.contains("before a 1, a→s 1, s→b 2, afte"), "{s}");
}

#[test]
fn detail_lists_segments_psns_and_delays() {
    let mut app = with_taps(
        "two-taps.a.pcap",
        merged(&["a=two-taps.a.pcap", "s=two-taps.s.pcap"]),
    );
    app.apply(Action::CycleSort);
    app.apply(Action::CycleSort); // by name: 192.0.2.1 → 192.0.2.2 first
    app.apply(Action::Enter);
    assert_eq!(app.view, View::Detail(0));
    for (w, h) in SIZES {
        let s = golden("taps-detail-two", &app, w, h);
        assert!(
            s.contains("Where the loss is (taps in path order: a, s)"),
            "{s}"
        );
        assert!(s.contains("309 seen at more than one tap"), "{s}");
        assert!(s.contains("a→s: lost 4, NAKs 2, timer retries 1"), "{s}");
        assert!(s.contains("before a: lost 1"), "{s}");
        assert!(s.contains("delay a→s: above min median 2.0 us"), "{s}");
    }
}

#[test]
fn mirror_sessions_as_taps_in_the_table() {
    let app = with_taps(
        "mirror-two-sessions.pcap",
        merged(&["mirror-two-sessions.pcap@mirrors"]),
    );
    let s = golden("taps-flows-mirror", &app, 160, 48);
    // Named by session, cut at the column's width (the detail view has it all).
    assert!(s.contains("before erspan-9-in 1, erspan-9"), "{s}");
    assert!(
        s.contains("replay taps erspan-9-in, erspan-4-out") || s.contains("lost at"),
        "{s}"
    );
}

/// The replay feeder run to its end at full speed: the final report's packets per flow.
fn replayed(select: Option<crate::taps::Select>) -> Vec<(String, u64)> {
    use crate::tui::feed::{replay, Control, Speed};
    let (tx, rx) = std::sync::mpsc::sync_channel(64);
    let (ctl_tx, ctl_rx) = std::sync::mpsc::channel();
    let path = dir().join("mirror-two-sessions.pcap");
    let t = std::thread::spawn(move || {
        replay(
            vec![path],
            select,
            Speed::Max,
            dcfg(),
            std::env::temp_dir(),
            tx,
            ctl_rx,
        );
    });
    let mut last = None;
    while let Ok(a) = rx.recv() {
        if let Action::Snapshot(s) = a {
            if s.complete {
                last = Some(s);
                break;
            }
        }
    }
    let _ = ctl_tx.send(Control::Quit);
    t.join().unwrap();
    let s = last.expect("a final snapshot");
    s.report
        .flows
        .iter()
        .map(|f| (crate::report::findings::flow_short(f), f.packets))
        .collect()
}

#[test]
fn replay_of_a_mirror_sees_the_inner_roce() {
    // Every session: each packet twice (ingress at a, egress at s), less the losses.
    let all = replayed(None);
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all.iter().map(|f| f.1).sum::<u64>(), 617 + 613, "{all:?}");
    // The first tap's session alone: what a capture at a saw (two-taps.a.pcap).
    let sel = spec::Select::parse("erspan:9").unwrap();
    let one = replayed(Some(sel));
    assert_eq!(one.iter().map(|f| f.1).sum::<u64>(), 617, "{one:?}");
    assert!(
        one.iter().any(|f| f.0.contains("192.0.2.1→192.0.2.2")),
        "{one:?}"
    );
}
