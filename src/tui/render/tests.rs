//! Screens drawn into ratatui's `TestBackend` from real analyses of the samples and
//! compared with `tests/golden/tui/*.txt` (regenerate with `UPDATE_EXPECT=1`, then
//! review the diff like code).

use super::render;
use crate::analysis::{Analyzer, Config, Report};
use crate::capture::input::for_each_frame_of;
use crate::tui::app::{Action, App, Drops, FeedState, HwCounter, Mode, Snapshot, View};
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use ratatui::Terminal;
use std::ops::ControlFlow;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// An App fed as the replay feeder feeds it: a snapshot every `every` frames, then the
/// finished report.
pub fn app_of(sample: &str, every: u64, mode: Mode) -> App {
    let mut app = App::new(format!("replay {sample} max"), mode);
    let mut an = Analyzer::new(Config::default());
    let dcfg = dissectors::Config {
        roce_port: 4791,
        check_icrc: true,
    };
    let mut d = dissectors::decode(dissectors::LinkType::Ethernet, &[], 0, &dcfg);
    let mut n = 0u64;
    let mut sent = 0usize;
    for_each_frame_of(&[root().join("samples").join(sample)], true, |f| {
        dissectors::decode_into(f.link, f.data, f.orig_len, &dcfg, &mut d);
        an.ingest(f.ts_ns, f.iface, &d);
        n += 1;
        if n.is_multiple_of(every) {
            let next = an.events_recorded();
            app.apply(Action::Snapshot(Box::new(Snapshot {
                report: an.snapshot(sent),
                events_from: sent,
                complete: false,
                frames_read: n,
                drops: Drops::default(),
                hw: Vec::new(),
                state: FeedState::Running,
                wall_ns: n * 1000,
            })));
            sent = next;
        }
        ControlFlow::Continue(())
    })
    .expect("sample reads");
    app.apply(Action::Snapshot(Box::new(Snapshot {
        report: an.finish(),
        events_from: 0,
        complete: true,
        frames_read: n,
        drops: Drops::default(),
        hw: Vec::new(),
        state: FeedState::Ended,
        wall_ns: n * 1000 + 1,
    })));
    app
}

fn draw(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    t.draw(|f| render(f, app)).expect("draw");
    t
}

fn text(t: &Terminal<TestBackend>) -> String {
    let b = t.backend().buffer();
    let mut out = String::new();
    for y in 0..b.area.height {
        let mut line = String::new();
        for x in 0..b.area.width {
            line.push_str(b[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

pub(super) fn golden(name: &str, app: &App, w: u16, h: u16) -> String {
    let got = text(&draw(app, w, h));
    let path = root().join(format!("tests/golden/tui/{name}-{w}x{h}.txt"));
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_EXPECT=1)", path.display()));
    assert!(
        got == want,
        "{name} {w}x{h} differs from {}:\n--- got ---\n{got}\n--- want ---\n{want}",
        path.display()
    );
    got
}

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

#[test]
fn flows_screen() {
    let app = app_of("congestion.pcap", 16, Mode::Replay);
    for (w, h) in SIZES {
        let s = golden("flows-congestion", &app, w, h);
        assert!(s.contains("198.18.0.1→198.18.0.2 0x000101"), "{s}");
        assert!(s.contains("Flows 8/8 · sort: rate"), "{s}");
        assert!(s.contains("ICRC ok"), "{s}");
        // 304 frames over 0.000178 s of capture.
        assert!(s.contains("frames 304 (1.70M/s) RoCE 304"), "{s}");
        assert!(s.contains("ended"), "{s}");
    }
}

#[test]
fn detail_with_events() {
    let mut app = app_of("loss-upstream.pcap", 8, Mode::Replay);
    app.apply(Action::CycleSort); // problems first
    app.apply(Action::Enter);
    let View::Detail(id) = app.view else {
        panic!("Enter opens the detail");
    };
    let f = app.flow(id).unwrap();
    assert!(crate::tui::app::problems(f) > 0);
    for (w, h) in SIZES {
        let s = golden("detail-loss-upstream", &app, w, h);
        assert!(s.contains(&format!("Flow #{id}")), "{s}");
        assert!(s.contains("Events of this connection"), "{s}");
        assert!(s.contains("NAK") && s.contains("resend"), "{s}");
    }
    let mut cong = app_of("congestion.pcap", 16, Mode::Replay);
    cong.apply(Action::CycleSort);
    cong.apply(Action::CycleSort); // by name: 198.18.0.1 first
    cong.apply(Action::Enter);
    assert_eq!(cong.view, View::Detail(0));
    for (w, h) in SIZES {
        let s = golden("detail-congestion", &cong, w, h);
        if w < 120 {
            assert!(s.contains("CE 15 · CNP rx 4 tx 0"), "{s}");
            assert!(s.contains("Gb/s before/after CNP 74.24/2.76"), "{s}");
        } else {
            assert!(s.contains("CE 15 · CNP sent 0 received 4"), "{s}");
            assert!(
                s.contains("rate before first CNP 74.24 Gb/s · after last CNP 2.76"),
                "{s}"
            );
        }
    }
}

#[test]
fn help_overlay() {
    let mut app = app_of("congestion.pcap", 64, Mode::Replay);
    app.apply(Action::ToggleHelp);
    for (w, h) in SIZES {
        let s = golden("help", &app, w, h);
        for b in crate::tui::keys::HELP {
            assert!(s.contains(b.keys), "{} missing:\n{s}", b.keys);
        }
    }
}

#[test]
fn drops_in_red_and_hw_counters() {
    let mut app = app_of("capture-loss.pcap", 32, Mode::Live);
    let mut snap = Snapshot {
        report: app.report.clone().unwrap(),
        events_from: 0,
        complete: true,
        frames_read: 1,
        drops: Drops {
            kernel: 17,
            iface: 0,
            rocetap: 3,
        },
        hw: vec![
            HwCounter {
                port: "mlx5_0/1".into(),
                name: "out_of_sequence".into(),
                value: 42,
                per_s: Some(7.0),
            },
            HwCounter {
                port: "mlx5_0/1".into(),
                name: "np_cnp_sent".into(),
                value: 0,
                per_s: Some(0.0),
            },
        ],
        state: FeedState::Running,
        wall_ns: u64::MAX / 2,
    };
    snap.report.events.clear();
    snap.complete = false;
    snap.events_from = app.events.len();
    app.apply(Action::Snapshot(Box::new(snap)));
    for (w, h) in SIZES {
        let t = draw(&app, w, h);
        let s = golden("drops", &app, w, h);
        assert!(s.contains("drops kernel 17 iface 0 rocetap 3"), "{s}");
        assert!(s.contains("out_of_sequence") && s.contains("7/s"), "{s}");
        let b = t.backend().buffer();
        let row: String = (0..w).map(|x| b[(x, 1)].symbol().to_string()).collect();
        let x = row.find("drops kernel").unwrap();
        let x = row[..x].chars().count() as u16;
        assert_eq!(b[(x, 1)].bg, Color::Red, "drops are drawn in red");
    }
    // No drops: not red.
    let app = app_of("clean-rc.pcap", 64, Mode::Replay);
    let t = draw(&app, 80, 24);
    let b = t.backend().buffer();
    assert!((0..80).all(|x| b[(x, 1)].bg != Color::Red));
}

#[test]
fn filter_active() {
    let mut app = app_of("congestion.pcap", 16, Mode::Replay);
    app.apply(Action::StartFilter);
    for c in "203.0.113".chars() {
        app.apply(Action::FilterChar(c));
    }
    for (w, h) in SIZES {
        let s = golden("filter-typing", &app, w, h);
        assert!(s.contains("/203.0.113"), "{s}");
        assert!(s.contains("Flows 2/8"), "{s}");
        assert!(!s.contains("198.18.0.1→"), "{s}");
    }
    app.apply(Action::FilterDone);
    let s = golden("filter-active", &app, 80, 24);
    assert!(s.contains("filter: 203.0.113"), "{s}");
}

#[test]
fn events_view_and_too_small() {
    let mut app = app_of("rnr.pcap", 16, Mode::Replay);
    app.apply(Action::ToggleEvents);
    for (w, h) in SIZES {
        let s = golden("events-rnr", &app, w, h);
        assert!(s.contains("RNR NAK"), "{s}");
    }
    let s = text(&draw(&app, 79, 30));
    assert!(s.contains("terminal too small: 79x30"), "{s}");
    assert!(s.contains("at least 80x24"), "{s}");
    let s = text(&draw(&app, 100, 23));
    assert!(s.contains("terminal too small: 100x23"), "{s}");
}

#[test]
fn the_selected_row_stays_on_screen() {
    let mut app = app_of("congestion.pcap", 64, Mode::Replay);
    let mut r = app.report.clone().unwrap();
    let base = r.flows.clone();
    for k in 1..5u32 {
        for f in &base {
            let mut g = f.clone();
            g.id = f.id + 8 * k;
            g.qp = dissectors::Qpn(0x100000 * k + f.id);
            r.flows.push(g);
        }
    }
    app.report = Some(r);
    app.apply(Action::CycleSort);
    app.apply(Action::CycleSort); // by name
    app.apply(Action::Bottom);
    assert_eq!(app.selected, 39);
    let want = app.rows()[39];
    let label = crate::report::findings::flow_short(want);
    let t = draw(&app, 80, 24);
    let s = text(&t);
    let y = s
        .lines()
        .position(|l| l.contains(&label))
        .unwrap_or_else(|| panic!("{label} not on screen:\n{s}"));
    let b = t.backend().buffer();
    assert!(b[(5, y as u16)]
        .modifier
        .contains(ratatui::style::Modifier::REVERSED));
    assert!(s.contains("Flows 40/40"), "{s}");
}

/// A bench, not a test (`cargo test --release --bin rocetap tui_scale -- --ignored
/// --nocapture`): `top` with 16,384 flows (8,192 QPs) at 160x48 — applying a snapshot,
/// ordering the table (what every redraw paid before the order was cached), and a
/// redraw of the flows view, sorted by rate, by problems and filtered. Prints figures,
/// asserts nothing about time.
#[test]
#[ignore = "a benchmark: run by hand, not with the tests"]
fn tui_scale_bench_16384_flows() {
    use std::time::Instant;
    const FLOWS: u32 = 16_384;
    let base = app_of("congestion.pcap", 64, Mode::Replay);
    let template = base.report.clone().unwrap();
    let mut r = template.clone();
    r.flows.clear();
    for id in 0..FLOWS {
        let mut g = template.flows[(id as usize) % template.flows.len()].clone();
        g.id = id;
        g.peer = Some(id ^ 1);
        g.qp = dissectors::Qpn(0x100 + id);
        g.dst = dissectors::Addr::Ip(std::net::IpAddr::from([
            198,
            18,
            (1 + id / 2 / 254) as u8,
            (1 + id / 2 % 254) as u8,
        ]));
        g.bytes += u64::from(id) * 1000;
        g.packets += u64::from(id);
        r.flows.push(g);
    }
    let snap = |r: &Report, ts: u64, state: FeedState| Snapshot {
        report: r.clone(),
        events_from: 0,
        complete: false,
        frames_read: 1,
        drops: Drops::default(),
        hw: Vec::new(),
        state,
        wall_ns: ts,
    };
    let mut app = App::new("replay bench max".into(), Mode::Replay);
    let mut r1 = r.clone();
    r1.last_ts_ns = r.last_ts_ns + 1_000_000;
    for f in &mut r1.flows {
        f.bytes += u64::from(f.id % 97) * 10_000;
        f.packets += 10;
    }
    app.apply(Action::Snapshot(Box::new(snap(&r, 1, FeedState::Running))));
    let s = Box::new(snap(&r1, 2, FeedState::Running));
    let t = Instant::now();
    app.apply(Action::Snapshot(s));
    let apply = t.elapsed();
    const N: u32 = 20;
    let time = |app: &App, f: &dyn Fn(&App)| {
        let t = Instant::now();
        for _ in 0..N {
            f(app);
        }
        t.elapsed() / N
    };
    // Ordering from scratch, as every redraw and key press did before the cache.
    let order = time(&app, &|a| {
        a.forget_order();
        assert_eq!(a.rows().len(), FLOWS as usize);
    });
    // The former per-call order: a sort comparing rates looked up per comparison.
    let before = time(&app, &|a| {
        let r = a.report.as_ref().unwrap();
        let mut v: Vec<&crate::analysis::FlowSummary> = r.flows.iter().collect();
        v.sort_by(|x, y| a.rates(y).0.total_cmp(&a.rates(x).0).then(x.id.cmp(&y.id)));
        assert_eq!(v.len(), FLOWS as usize);
    });
    let mut term = Terminal::new(TestBackend::new(160, 48)).unwrap();
    let redraw = |app: &App, term: &mut Terminal<TestBackend>| {
        let t = Instant::now();
        for _ in 0..N {
            term.draw(|f| render(f, app)).unwrap();
        }
        t.elapsed() / N
    };
    let rate = redraw(&app, &mut term);
    app.apply(Action::CycleSort);
    let t = Instant::now();
    let _ = app.rows();
    let resort = t.elapsed();
    let problems = redraw(&app, &mut term);
    app.apply(Action::StartFilter);
    for c in "198.18.3".chars() {
        app.apply(Action::FilterChar(c));
    }
    app.apply(Action::FilterDone);
    let filtered = redraw(&app, &mut term);
    let shown = app.rows().len();
    for _ in 0..200 {
        app.apply(Action::Down);
    }
    let moved = redraw(&app, &mut term);
    let s = text(&draw(&app, 160, 48));
    assert!(s.contains(&format!("Flows {shown}/{FLOWS}")), "{s}");
    println!("top, {FLOWS} flows, 160x48 (mean of {N}):");
    println!("  apply a snapshot (rates of every flow)   {apply:>10.2?}");
    println!("  order the table from scratch (by rate)   {order:>10.2?}");
    println!("  the former per-redraw sort (by rate)     {before:>10.2?}");
    println!("  re-sort after `s` (by problems)          {resort:>10.2?}");
    println!("  redraw, sorted by rate                   {rate:>10.2?}");
    println!("  redraw, sorted by problems               {problems:>10.2?}");
    println!("  redraw, filtered ({shown} rows)            {filtered:>10.2?}");
    println!("  redraw after 200 x Down                  {moved:>10.2?}");
}

#[test]
fn detail_names_the_kernels_qps_behind_the_flow() {
    let mut app = app_of("clean-rc.pcap", 1_000_000, Mode::Replay);
    let fx = root().join("tests/fixtures/qptable");
    for f in ["clean-rc-h1.json", "clean-rc-h2.json"] {
        app.qp_table
            .extend(crate::qptable::load(&fx.join(f)).expect("fixture table"));
    }
    app.view = View::Detail(0);
    for (w, h) in [(140, 40), (100, 40)] {
        let t = text(&draw(&app, w, h));
        assert!(
            t.contains("kernel: sent by clean-rc-h1 mlx5_0 QP 0x000201 (RC RTS) pid 31337"),
            "{w}x{h}:\n{t}"
        );
    }
    // Without tables the line is not there.
    app.qp_table.clear();
    assert!(!text(&draw(&app, 140, 40)).contains("kernel:"));
}

/// A table whose process names itself with terminal controls (and bidirectional
/// overrides, which ratatui would pass): the detail shows them escaped, as `analyze`
/// does, not stripped or raw.
#[test]
fn detail_escapes_hostile_names_from_a_qp_table() {
    let mut app = app_of("clean-rc.pcap", 1_000_000, Mode::Replay);
    let fx = root().join("tests/fixtures/qptable/clean-rc-hostile.json");
    app.qp_table = crate::qptable::load(&fx).expect("fixture table");
    app.view = View::Detail(0);
    let t = text(&draw(&app, 200, 40));
    assert!(
        t.contains(
            "kernel: sent by clean-rc-hostile mlx5_0\\x1b[31m QP 0x000201 (RC RTS\\u{9b}2J) pid 31337 \\x1b[2J\\x1b]0;pwned\\x07evil"
        ),
        "{t}"
    );
    assert!(
        !t.contains(|c: char| c.is_control() && c != '\n' || c == '\u{202e}'),
        "{t}"
    );
}

/// The source (file or device names), a feeder error and a note are drawn escaped.
#[test]
fn header_and_footer_escape_outside_names() {
    let mut app = app_of("clean-rc.pcap", 1_000_000, Mode::Replay);
    app.source = "replay a\u{1b}]0;pwned\u{7}.pcap max".into();
    app.status = Some("wrote 3 frames to b\u{1b}[2J.pcapng".into());
    let t = text(&draw(&app, 160, 40));
    assert!(t.contains("replay a\\x1b]0;pwned\\x07.pcap max"), "{t}");
    assert!(t.contains("wrote 3 frames to b\\x1b[2J.pcapng"), "{t}");
    app.feed = crate::tui::app::FeedState::Failed("reading c\u{202e}.pcap: cut".into());
    let t = text(&draw(&app, 160, 40));
    assert!(t.contains("error: reading c\\u{202e}.pcap: cut"), "{t}");
}
