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
