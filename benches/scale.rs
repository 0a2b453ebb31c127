//! The in-process half of `benches/scale.sh` (issue #17): for each trace given, what
//! the wall-clock run of `analyze` cannot show apart —
//! - the analysis alone (frames/s of reading, decoding and analysing, no report);
//! - memory per live flow: resident memory grown while the trace was analysed (the
//!   flows, their tables, the index), divided by the flows live at the end, before any is
//!   summarised. Only the first trace of a process gets a true figure: the memory an
//!   earlier trace freed stays resident and is reused, so later traces grow less (the
//!   line says so; `benches/scale.sh` runs one process per trace);
//! - the end of the run (settling and summarising every flow) and each report writer
//!   (JSON, CSV, text) on the final report, best of `RUNS` (3), into a discarding writer;
//! - `top`: a snapshot of the live analyzer (what the feeder takes a few times a second),
//!   applying it to the UI, a redraw of the flows view at 160x48, one after a sort change
//!   and one while a filter is typed.
//! - what sharding the analysis by host pair would buy (`pipeline::shard`, issue 45 item
//!   3), before any merge exists: reading with and without the shard peek, and one thread
//!   against `SHARDS` (2) threads that each read every frame and analyze their own.
//!
//! `cargo bench --bench scale -- TRACE...`; prints one block per trace. Figures, not
//! assertions: this machine is shared.

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use rocetap::analysis::{Analyzer, Config};
use rocetap::config::OutputFormat;
use rocetap::pipeline::{NoSink, Pipeline};
use rocetap::report::analyze::{write_report, Input, Look};
use rocetap::tui::app::{Action, App, Drops, FeedState, Mode, Snapshot};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Resident memory of this process, bytes (`/proc/self/statm`).
fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// The best of `runs` timings of `f`.
fn best(runs: u32, mut f: impl FnMut()) -> Duration {
    (0..runs.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn snapshot_of(an: &Analyzer, n: u64) -> Snapshot {
    Snapshot {
        report: an.snapshot(0),
        events_from: 0,
        complete: false,
        frames_read: n,
        drops: Drops::default(),
        hw: Vec::new(),
        state: FeedState::Running,
        wall_ns: n,
    }
}

fn bench(path: &str, runs: u32, first: bool) {
    let rss0 = rss();
    let dcfg = dissectors::Config::default();
    let mut p = Pipeline::new(dcfg, Analyzer::new(Config::default()));
    let t = Instant::now();
    if let Err(e) = p.read_files(&[PathBuf::from(path)], true, &mut NoSink) {
        eprintln!("scale: {e}");
        std::process::exit(2);
    }
    let ingest = t.elapsed();
    let live = p.analyzer().live_flows();
    let grown = rss().saturating_sub(rss0);
    let frames = p.frames();

    // top: the feeder's snapshot, the UI applying it, redraws.
    let an = p.analyzer();
    let mut snap = None;
    let take = best(runs, || snap = Some(snapshot_of(an, frames)));
    let mut app = App::new(format!("bench {path}"), Mode::Replay);
    app.apply(Action::Snapshot(Box::new(snapshot_of(an, frames))));
    let mut next = snap;
    let apply = best(1, || {
        if let Some(s) = next.take() {
            app.apply(Action::Snapshot(Box::new(s)));
        }
    });
    let mut term = Terminal::new(TestBackend::new(160, 48)).expect("test backend");
    let mut draw = |app: &App| {
        best(runs.max(10), || {
            term.draw(|f| rocetap::tui::render::render(f, app))
                .expect("draw");
        })
    };
    let redraw = draw(&app);
    let t = Instant::now();
    app.apply(Action::CycleSort);
    let sort = t.elapsed() + draw(&app);
    let t = Instant::now();
    app.apply(Action::StartFilter);
    for c in "198.18.".chars() {
        app.apply(Action::FilterChar(c));
    }
    let filter = t.elapsed() + draw(&app);

    let t = Instant::now();
    let report = p.finish();
    let finish = t.elapsed();
    let input = Input {
        files: vec![path.to_string()],
        frames,
        bytes: 0,
        cut_short: Vec::new(),
        qp_table: None,
    };
    let write = |format| {
        best(runs, || {
            let mut out = std::io::BufWriter::new(std::io::sink());
            write_report(
                &mut out,
                format,
                false,
                Look::default(),
                &input,
                &report,
                &[],
            )
            .expect("write");
        })
    };
    let (json, csv, text) = (
        write(OutputFormat::Json),
        write(OutputFormat::Csv),
        write(OutputFormat::Text),
    );
    println!("{path}");
    println!(
        "  analysis     {frames} frames in {:.3} s: {:.2} M frames/s (no report)",
        ingest.as_secs_f64(),
        frames as f64 / ingest.as_secs_f64() / 1e6
    );
    println!(
        "  memory       {live} live flows, {:.1} MiB grown: {:.0} bytes per live flow",
        grown as f64 / 1048576.0,
        grown as f64 / live.max(1) as f64
    );
    if !first {
        println!("               (not this process's first trace: memory an earlier one freed was reused, so less grew)");
    }
    println!(
        "  report       {} flows: finish {:.1} ms, JSON {:.1} ms, CSV {:.1} ms, text {:.1} ms",
        report.flows.len(),
        ms(finish),
        ms(json),
        ms(csv),
        ms(text)
    );
    println!(
        "  top          snapshot {:.1} ms, apply {:.1} ms, redraw {:.2} ms, sort+redraw {:.2} ms, filter+redraw {:.2} ms",
        ms(take),
        ms(apply),
        ms(redraw),
        ms(sort),
        ms(filter)
    );
    shards(path, runs);
}

/// What sharding the analysis by host pair (issue 45 item 3, `pipeline::shard`) would
/// buy on this trace, before any merge exists: one thread reading, decoding and
/// analyzing every frame (`--jobs 1`'s work), against `SHARDS` (2) threads that each read
/// every frame and peek at it (`pipeline::shard::route`) and decode and analyze only
/// their own (PAUSE frames in every shard). Each shard's analyzer is dropped unfinished:
/// no merge, no report, and the skipped frames move no clock. Also reading alone and
/// reading with the peek, on one thread (the cost every shard pays for every frame).
fn shards(path: &str, runs: u32) {
    use rocetap::capture::input::for_each_frame_of;
    use rocetap::pipeline::shard::route;
    use std::ops::ControlFlow;
    let n: usize = std::env::var("SHARDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(2);
    let paths = [PathBuf::from(path)];
    let dcfg = dissectors::Config::default();
    let port = dcfg.roce_port;
    let read = |peek: bool| {
        let mut frames = 0u64;
        let mut pairs = 0u64;
        let _ = for_each_frame_of(&paths, true, |f| {
            frames += 1;
            if peek {
                let r = std::hint::black_box(route(f.link, f.data, port));
                pairs += u64::from(matches!(r, rocetap::pipeline::shard::Route::Pair(_)));
            }
            ControlFlow::Continue(())
        });
        (frames, pairs)
    };
    let mut counts = (0, 0);
    let read_only = best(runs, || counts = read(false));
    let read_peek = best(runs, || counts = read(true));
    let (frames, pairs) = counts;
    // One shard's whole run: read and peek every frame, analyze its own.
    let shard = |me: usize| {
        let mut an = Analyzer::new(Config::default());
        let mut d = dissectors::decode(dissectors::LinkType::Ethernet, &[], 0, &dcfg);
        let mut own = 0u64;
        let t = Instant::now();
        let _ = for_each_frame_of(&paths, true, |f| {
            if route(f.link, f.data, port).shard(n).is_none_or(|s| s == me) {
                own += 1;
                dissectors::decode_into(f.link, f.data, f.orig_len, &dcfg, &mut d);
                an.ingest(f.ts_ns, f.iface_id().get(), &d);
            }
            ControlFlow::Continue(())
        });
        let took = t.elapsed();
        (own, took, an)
    };
    let one = best(runs, || {
        let mut p = Pipeline::new(dcfg, Analyzer::new(Config::default())).jobs(1);
        let _ = p.read_files(&paths, true, &mut NoSink);
        std::hint::black_box(p.frames());
    });
    // The best run's wall, with its shards' times.
    let mut sharded = Duration::MAX;
    let mut per: Vec<(u64, Duration)> = Vec::new();
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let (wall, out) = std::thread::scope(|s| {
            let hs: Vec<_> = (1..n).map(|me| s.spawn(move || shard(me))).collect();
            let mut out = vec![shard(0)];
            out.extend(hs.into_iter().map(|h| h.join().expect("a shard thread")));
            (t.elapsed(), out)
        });
        // The analyzers went after the clock stopped (as a merge would take them).
        if wall < sharded {
            sharded = wall;
            per = out
                .into_iter()
                .map(|(own, took, _an)| (own, took))
                .collect();
        }
    }
    let pct = |k: u64| 100.0 * k as f64 / frames.max(1) as f64;
    let ns = |d: Duration| d.as_secs_f64() * 1e9 / frames.max(1) as f64;
    println!(
        "  peek         read {:.1} ms ({:.1} ns/frame), read + peek {:.1} ms ({:.1} ns/frame); {} of {frames} frames RoCE v2 ({:.0} %)",
        ms(read_only),
        ns(read_only),
        ms(read_peek),
        ns(read_peek),
        pairs,
        pct(pairs)
    );
    let split: Vec<String> = per
        .iter()
        .enumerate()
        .map(|(i, (own, took))| format!("{i}: {:.0} % in {:.1} ms", pct(*own), ms(*took)))
        .collect();
    println!(
        "  shards       one thread {:.1} ms; {n} shards {:.1} ms wall ({:.2}x), no merge; shard {}",
        ms(one),
        ms(sharded),
        one.as_secs_f64() / sharded.as_secs_f64().max(1e-9),
        split.join(", ")
    );
}

fn main() {
    let runs = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let traces: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if traces.is_empty() {
        eprintln!("usage: cargo bench --bench scale -- TRACE...");
        std::process::exit(2);
    }
    for (i, t) in traces.iter().enumerate() {
        bench(t, runs, i == 0);
    }
}
