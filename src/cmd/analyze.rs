//! `rocetap analyze`: read captures (or capture live with `-i`), run every frame through
//! the pipeline, write the report (text, JSON or CSV) and turn `--fail-on` rules into the
//! exit code: 0 no rule's condition is true, 1 a rule failed (its condition is true), 2
//! bad rule / unreadable input / write failure. Several files are merged into one capture
//! in timestamp order; the interface of a frame from file `i` is reported as
//! `i * 65536 + its interface id in that file` ([`rocetap::capture::IfaceId`]). SIGINT /
//! SIGTERM end the reading, not the run: what was read is analyzed and reported.

use crate::cli::{AnalyzeArgs, AnalyzeFormat, Stage as CliStage};
use rocetap::analysis::{Analyzer, Config};
use rocetap::capture::{input, session};
use rocetap::config::OutputFormat;
use rocetap::error::{exit, is_broken_pipe, Failure};
use rocetap::pipeline::{NoSink, Pipeline, Stage};
use rocetap::report::analyze::{lookup, write_report_taps, Input, Look};
use rocetap::report::rules;
use std::io::{self, Write};
use std::path::PathBuf;

/// What `analyze` was asked to do, checked.
struct Request {
    paths: Vec<PathBuf>,
    /// `-i`: the live session instead of files.
    live: Option<session::Config>,
    rules: Vec<rules::Rule>,
    analyzer: Config,
    dcfg: dissectors::Config,
    stop_after: Option<Stage>,
    /// No progress on stderr.
    quiet: bool,
    out: Out,
    /// `--qp-table`: the QPs of every table given, read before any capture.
    qp_table: Option<Vec<rocetap::qptable::QpEntry>>,
    /// `--tap`: the taps to merge (the usual analysis is then the first tap's).
    taps: Option<rocetap::taps::Config>,
    /// `--jobs`: threads for reading files (`None`: [`Pipeline::default_jobs`]).
    jobs: Option<usize>,
}

/// How the report is written.
struct Out {
    format: OutputFormat,
    events: bool,
    verbose: bool,
    color: bool,
}

pub fn run(a: AnalyzeArgs, color: bool) -> Result<i32, Failure> {
    let r = request(a, color)?;
    // The merged analysis first: a tap that cannot be read fails before the long part.
    let merged = match &r.taps {
        Some(cfg) => {
            Some(rocetap::taps::run(cfg).map_err(|e| Failure::new(format!("analyze: {e}")))?)
        }
        None => None,
    };
    let mut p = Pipeline::new(r.dcfg, Analyzer::new(r.analyzer)).stop_after(r.stop_after);
    p = p.jobs(r.jobs.unwrap_or_else(Pipeline::default_jobs));
    let mut input = Input::default();
    // A write error of `-i -w` ends the capture, not the analysis of what was captured:
    // the report comes first, then the error (exit 2).
    let mut late = None;
    if let Some(live) = &r.live {
        input.files = live.devices.clone();
        let ended = session::run_to_end(live, &mut p)?;
        if ended.failure.is_none() && ended.code != exit::OK {
            return Ok(ended.code);
        }
        late = ended.failure;
    } else {
        if r.paths.len() > 1 {
            p.name_sources(r.paths.iter().map(|path| {
                path.file_name()
                    .map_or(path.display().to_string(), |n| n.to_string_lossy().into())
            }));
        }
        for path in &r.paths {
            let name = path.display().to_string();
            input
                .files
                .push(if name == "-" { "stdin".into() } else { name });
        }
        // Ctrl-C (or SIGTERM) on a long read or an endless pipe: the analysis of what was
        // read, as tshark gives.
        input::stop_on_signals()
            .map_err(|e| Failure::new(format!("analyze: installing signal handlers: {e}")))?;
        // A tap that is one mirror session: the ordinary analysis is of that session only.
        let cut_short = match r.taps.as_ref().and_then(|t| t.taps[0].select) {
            Some(sel) => {
                rocetap::taps::read_session(&mut p, &r.paths, &sel, &r.dcfg, r.quiet, &mut NoSink)?
            }
            None => p.read_files(&r.paths, r.quiet, &mut NoSink)?,
        };
        for c in &cut_short {
            // The warning names the file: outside text.
            eprintln!("{}", c.warning());
        }
        if input::stopped() {
            eprintln!(
                "rocetap: interrupted: the report covers the {} frames read before the signal",
                p.frames()
            );
        }
        input.cut_short = cut_short;
    }
    input.frames = p.frames();
    input.bytes = p.bytes();
    let code = finish(
        &r.out,
        p,
        input,
        &r.rules,
        r.qp_table.as_deref(),
        merged.as_ref(),
    )?;
    match late {
        Some(f) => Err(f.into()),
        None => Ok(code),
    }
}

/// The arguments, checked: rules before anything is read (a typo must not cost a long run).
fn request(a: AnalyzeArgs, color: bool) -> Result<Request, Failure> {
    let mut paths = a.sources.all();
    let taps = taps_config(&a, &paths)?;
    if let Some(t) = &taps {
        paths = vec![t.taps[0].path.clone()];
    }
    if paths.is_empty() && a.interfaces.is_empty() {
        return Err(Failure::new("analyze: no input").hint(
            "give a capture file, -r - to read a pcap stream from stdin, or -i IFACE to capture",
        ));
    }
    let rules = a
        .fail_on
        .iter()
        .map(|s| rules::parse(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::new(e.to_string()))?;
    if !(a.idle_timeout > 0.0 && a.idle_timeout.is_finite()) {
        return Err(Failure::new(
            "analyze: --idle-timeout must be a positive number of seconds",
        ));
    }
    if !(a.link_speed > 0.0 && a.link_speed.is_finite()) {
        return Err(Failure::new(
            "analyze: --link-speed must be a positive number of Gb/s",
        ));
    }
    let qp_table = qp_tables("analyze", &a.qp_table)?;
    let live = if a.interfaces.is_empty() {
        None
    } else if !paths.is_empty() {
        return Err(Failure::new(
            "analyze: give capture files or -i devices, not both",
        ));
    } else {
        Some(live_config(&a)?)
    };
    Ok(Request {
        paths,
        live,
        rules,
        analyzer: Config {
            idle_timeout_ns: (a.idle_timeout * 1e9) as u64,
            link_bps: (a.link_speed * 1e9) as u64,
            max_flow_summaries: a.max_flows,
            ..Config::default()
        },
        dcfg: dissectors::Config {
            roce_port: a.opts.roce_port,
            check_icrc: !a.opts.no_icrc,
        },
        stop_after: a.stop_after.map(|s| match s {
            CliStage::Read => Stage::Read,
            CliStage::Decode => Stage::Decode,
        }),
        quiet: a.quiet,
        qp_table,
        taps,
        jobs: a.jobs.map(|n| n as usize),
        out: Out {
            format: match a.format {
                AnalyzeFormat::Text => OutputFormat::Text,
                AnalyzeFormat::Json => OutputFormat::Json,
                AnalyzeFormat::Csv => OutputFormat::Csv,
            },
            events: a.events,
            verbose: a.verbose,
            color,
        },
    })
}

/// The capture session of `analyze -i`: that of `capture` with its defaults, no file
/// unless `-w`.
fn live_config(a: &AnalyzeArgs) -> Result<session::Config, Failure> {
    use super::capture::{check_output, duration, file_format, snaplen};
    let duration = duration(a.duration)?;
    check_output(a.write.as_deref(), a.force, None, None)?;
    let mut cfg = session::Config::new(a.interfaces.clone());
    cfg.live.snaplen = snaplen(a.snaplen);
    if let Some(f) = &a.filter {
        cfg.live.filter = rocetap::capture::live::Filter::Expr(f.clone());
    } else {
        cfg.live.filter = rocetap::capture::live::Filter::RoceAndMirrors {
            port: a.opts.roce_port,
        };
    }
    cfg.write = a.write.clone();
    cfg.format = file_format(None, a.write.as_deref());
    cfg.force = a.force;
    cfg.count = a.count;
    cfg.duration = duration;
    cfg.quiet = a.quiet;
    Ok(cfg)
}

/// `--qp-table FILE|live ...`: every table read and checked, `None` without the option
/// (`cmd` names the command in errors).
pub(crate) fn qp_tables(
    cmd: &str,
    sources: &[PathBuf],
) -> Result<Option<Vec<rocetap::qptable::QpEntry>>, Failure> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut all = Vec::new();
    for s in sources {
        let t = if s.as_os_str() == "live" {
            rocetap::qptable::netlink::read()
        } else {
            rocetap::qptable::load_arg(&s.to_string_lossy())
        };
        all.extend(t.map_err(|e| Failure::new(format!("{cmd}: {e}")))?);
    }
    Ok(Some(all))
}

/// Writes the report and turns the rules into the exit code.
fn finish(
    out: &Out,
    p: Pipeline,
    mut input: Input,
    rules: &[rules::Rule],
    qp_table: Option<&[rocetap::qptable::QpEntry]>,
    taps: Option<&rocetap::taps::Report>,
) -> Result<i32, Failure> {
    let report = p.finish();
    if let Some(t) = qp_table {
        let flows = rocetap::qptable::FlowRef::of(&report.flows);
        input.qp_table = Some(rocetap::qptable::match_flows(&flows, t));
    }
    // An unknown rule name is an error even when the output could be written.
    // With --tap, the merged analysis's totals are rule names too.
    let verdicts = rules::check(rules, |n| {
        taps.and_then(|t| tap_total(t, n))
            .or_else(|| lookup(&report, n))
    })
    .map_err(|e| Failure::new(e.to_string()))?;
    let o = out;
    let stdout = io::stdout();
    let mut w = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let look = Look {
        paint: rocetap::report::style::Paint::new(o.color),
        verbose: o.verbose,
    };
    let res = write_report_taps(
        &mut w, o.format, o.events, look, &input, &report, &verdicts, taps,
    )
    .and_then(|()| w.flush());
    if let Err(e) = res {
        if is_broken_pipe(&e) {
            return Ok(exit::OK);
        }
        return Err(Failure::new(format!("writing output: {e}")));
    }
    let failed: Vec<_> = verdicts.iter().filter(|v| v.failed).collect();
    if failed.is_empty() {
        Ok(exit::OK)
    } else {
        for v in &failed {
            eprintln!(
                "rocetap: rule failed: {} (actual {})",
                v.rule,
                rocetap::report::analyze::num(v.actual)
            );
        }
        Ok(exit::FINDINGS)
    }
}

/// `--tap [NAME=]FILE ...`: the taps in path order, checked (`None` without the option).
fn taps_config(
    a: &AnalyzeArgs,
    paths: &[PathBuf],
) -> Result<Option<rocetap::taps::Config>, Failure> {
    if a.taps.is_empty() {
        return Ok(None);
    }
    if !paths.is_empty() {
        return Err(Failure::new(
            "analyze: give the captures as --tap NAME=FILE only, not also as files",
        ));
    }
    let dissect = dissectors::Config {
        roce_port: a.opts.roce_port,
        check_icrc: !a.opts.no_icrc,
    };
    rocetap::taps::spec::config("analyze", &a.taps, a.clocks_synced, a.tap_window, dissect)
        .map(Some)
        .map_err(Failure::new)
}

/// A key the merged analysis adds to `totals`, for `--fail-on` (e.g.
/// `'lost_between_taps > 0'`).
fn tap_total(t: &rocetap::taps::Report, name: &str) -> Option<f64> {
    let x = &t.totals;
    match name {
        "lost_before_first_tap" => Some(x.lost_before_first_tap as f64),
        "lost_between_taps" => Some(x.lost_between_taps as f64),
        "lost_after_last_tap" => Some(x.lost_after_last_tap as f64),
        "queueing_delay_median_s" => Some(x.queueing_delay_median_s.unwrap_or(0.0)),
        _ => None,
    }
}
