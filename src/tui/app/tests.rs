//! State transitions of the app, without a terminal.

use super::*;
use crate::tui::render::tests::app_of;

#[test]
fn navigation_detail_and_back() {
    let mut app = app_of("congestion.pcap", 16, Mode::Replay);
    assert_eq!(app.rows().len(), 8);
    // Sorted by rate: the first row is the fastest flow.
    let rates: Vec<f64> = app.rows().iter().map(|f| f.gbps).collect();
    assert!(rates.windows(2).all(|w| w[0] >= w[1]), "{rates:?}");
    assert_eq!(app.apply(Action::Up), Effect::None);
    assert_eq!(app.selected, 0);
    for _ in 0..20 {
        app.apply(Action::Down);
    }
    assert_eq!(app.selected, 7, "clamped to the last row");
    app.apply(Action::Top);
    assert_eq!(app.selected, 0);
    app.apply(Action::Down);
    let id = app.rows()[1].id;
    app.apply(Action::Enter);
    assert_eq!(app.view, View::Detail(id));
    app.apply(Action::Back);
    assert_eq!(app.view, View::Flows);
    assert_eq!(app.selected, 1, "the selection survives the detail");
    assert_eq!(app.apply(Action::Quit), Effect::Quit);
}

#[test]
fn sort_cycles_and_orders() {
    let mut app = app_of("loss-upstream.pcap", 16, Mode::Replay);
    app.apply(Action::CycleSort);
    assert_eq!(app.sort, Sort::Problems);
    let p: Vec<u64> = app.rows().iter().map(|f| problems(f)).collect();
    assert!(p.windows(2).all(|w| w[0] >= w[1]), "{p:?}");
    assert!(p[0] > 0);
    app.apply(Action::CycleSort);
    assert_eq!(app.sort, Sort::Name);
    let names: Vec<_> = app.rows().iter().map(|f| f.src).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    app.apply(Action::CycleSort);
    assert_eq!(app.sort, Sort::Rate);
}

#[test]
fn filter_typing_keeps_and_clears() {
    let mut app = app_of("congestion.pcap", 16, Mode::Replay);
    app.apply(Action::StartFilter);
    assert!(app.editing.is_some());
    // While typing, command letters are text: `q` does not quit.
    for c in "0x0001".chars() {
        assert_eq!(app.apply(Action::FilterChar(c)), Effect::None);
    }
    assert_eq!(app.rows().len(), 3, "QPs 0x000101, 0x000103, 0x000104");
    app.apply(Action::FilterBackspace);
    assert_eq!(app.filter, "0x000");
    for c in "103".chars() {
        app.apply(Action::FilterChar(c));
    }
    assert_eq!(app.rows().len(), 1);
    assert_eq!(app.rows()[0].qp, dissectors::Qpn(0x103));
    app.apply(Action::FilterDone);
    assert!(app.editing.is_none());
    assert_eq!(app.filter, "0x000103");
    // Esc on the flows view clears a kept filter.
    app.apply(Action::Back);
    assert_eq!(app.rows().len(), 8);
    // Esc while typing drops the filter.
    app.apply(Action::StartFilter);
    app.apply(Action::FilterChar('2'));
    app.apply(Action::FilterCancel);
    assert!(app.filter.is_empty() && app.editing.is_none());
    // An IP filter.
    app.apply(Action::StartFilter);
    for c in "203.0.113.6".chars() {
        app.apply(Action::FilterChar(c));
    }
    assert_eq!(app.rows().len(), 2);
}

#[test]
fn pause_step_write_effects() {
    let mut app = App::new("replay x".into(), Mode::Replay);
    assert_eq!(app.apply(Action::TogglePause), Effect::Pause(true));
    assert!(app.paused);
    assert_eq!(app.apply(Action::TogglePause), Effect::Pause(false));
    assert_eq!(app.apply(Action::Step), Effect::Step);
    assert!(app.paused, "a step leaves the replay paused");
    assert_eq!(app.apply(Action::WriteFlow), Effect::None);
    assert_eq!(app.status.as_deref(), Some("no flow selected"));

    let mut app = app_of("congestion.pcap", 16, Mode::Replay);
    assert_eq!(
        app.apply(Action::Step),
        Effect::None,
        "the replay has ended"
    );
    let f = app.rows()[0].clone();
    let peer = app.flow(f.peer.unwrap()).unwrap().clone();
    match app.apply(Action::WriteFlow) {
        Effect::Write { id, keys } => {
            assert_eq!(id, f.id);
            assert_eq!(keys.len(), 2);
            assert_eq!(keys[0].qp, f.qp);
            assert_eq!(keys[1].qp, peer.qp);
        }
        e => panic!("{e:?}"),
    }
    app.apply(Action::Written(Ok(("x.pcapng".into(), 12))));
    assert_eq!(app.status.as_deref(), Some("wrote 12 frames to x.pcapng"));
}

#[test]
fn live_pause_freezes_the_display_only() {
    let mut app = app_of("congestion.pcap", 16, Mode::Live);
    app.feed = FeedState::Running;
    assert_eq!(app.apply(Action::TogglePause), Effect::None);
    let before = app.report.as_ref().unwrap().totals.frames;
    let mut r = app.report.clone().unwrap();
    r.totals.frames += 100;
    r.events.clear();
    let s = Snapshot {
        report: r,
        events_from: app.events.len(),
        complete: false,
        frames_read: 0,
        drops: Drops::default(),
        hw: Vec::new(),
        state: FeedState::Running,
        wall_ns: 1,
    };
    app.apply(Action::Snapshot(Box::new(s)));
    assert_eq!(app.report.as_ref().unwrap().totals.frames, before);
    app.apply(Action::TogglePause);
    assert_eq!(app.report.as_ref().unwrap().totals.frames, before + 100);
    assert_eq!(app.apply(Action::Step), Effect::None);
    assert!(app.status.as_deref().unwrap().contains("replay"));
}

#[test]
fn snapshots_accumulate_events_like_the_final_report() {
    // Fed 5 frames at a time, the events assembled from snapshots before the final
    // report are a prefix of the finished report's events.
    let app = app_of("loss-upstream.pcap", 5, Mode::Replay);
    let r = app.report.as_ref().unwrap();
    assert_eq!(app.events.len(), r.events.len());
    assert!(app
        .events
        .iter()
        .any(|e| e.kind == crate::analysis::EventKind::Nak));
    assert!(
        app.trends.values().any(|t| t.mbps.len() > 3),
        "trends recorded"
    );
}

#[test]
fn help_and_events_views() {
    let mut app = app_of("rnr.pcap", 16, Mode::Replay);
    app.apply(Action::ToggleHelp);
    assert!(app.help);
    // Keys other than quit / close are ignored under the help.
    app.apply(Action::Down);
    assert_eq!(app.selected, 0);
    app.apply(Action::Back);
    assert!(!app.help);
    app.apply(Action::ToggleEvents);
    assert_eq!(app.view, View::Events);
    app.apply(Action::Down);
    assert_eq!(app.scroll, 1);
    app.apply(Action::ToggleEvents);
    assert_eq!(app.view, View::Flows);
}

#[test]
fn rates_are_averages_when_ended_and_fall_to_zero_when_idle_live() {
    let app = app_of("congestion.pcap", 16, Mode::Replay);
    for f in app.rows() {
        assert_eq!(app.rates(f), (f.gbps, f.pps));
    }
    let mut live = app_of("congestion.pcap", 16, Mode::Live);
    let mut r = live.report.clone().unwrap();
    r.events.clear();
    for wall in [10_000_000_000u64, 11_000_000_000] {
        live.apply(Action::Snapshot(Box::new(Snapshot {
            report: r.clone(),
            events_from: live.events.len(),
            complete: false,
            frames_read: 0,
            drops: Drops::default(),
            hw: Vec::new(),
            state: FeedState::Running,
            wall_ns: wall,
        })));
    }
    assert_eq!(live.frame_rate, 0.0);
    for f in live.rows() {
        assert_eq!(live.rates(f), (0.0, 0.0), "flow {} is idle", f.id);
        assert_eq!(live.trends[&f.id].mbps.back(), Some(&0));
    }
    // Ties in rate keep the id order.
    let ids: Vec<u32> = live.rows().iter().map(|f| f.id).collect();
    assert_eq!(ids, (0..8).collect::<Vec<u32>>());
    r.flows[3].bytes += 125_000_000;
    r.flows[3].packets += 1000;
    live.apply(Action::Snapshot(Box::new(Snapshot {
        report: r,
        events_from: live.events.len(),
        complete: false,
        frames_read: 0,
        drops: Drops::default(),
        hw: Vec::new(),
        state: FeedState::Running,
        wall_ns: 12_000_000_000,
    })));
    let top = live.rows()[0];
    assert_eq!(top.id, 3);
    assert_eq!(
        live.rates(top),
        (1.0, 1000.0),
        "125 MB and 1000 packets in 1 s"
    );
}
