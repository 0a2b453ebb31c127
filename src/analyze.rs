//! `rocetap analyze`: read captures, feed every frame to the analyzer, write the report
//! (text, JSON or CSV) and turn `--fail-on` rules into the exit code: 0 all rules hold,
//! 1 a rule failed, 2 bad rule / unreadable input / write failure. Several files are
//! merged into one capture in timestamp order; the interface of a frame from file `i`
//! is reported as `i * 65536 + its interface id in that file`.

use crate::analysis::{Analyzer, Config};
use crate::capture::file::for_each_frame;
use crate::capture::merge::for_each_merged;
use crate::capture::Frame;
use crate::cli::{AnalyzeArgs, Stage};
use crate::decode::read_failure;
use crate::error::{exit, is_broken_pipe, Failure};
use crate::report::analyze::{lookup, write_report, Input};
use crate::report::rules;
use crate::source::{open, Progress};
use std::io::{self, Write};
use std::ops::ControlFlow;

pub fn run(a: AnalyzeArgs) -> Result<i32, Failure> {
    let paths = a.sources.all();
    if paths.is_empty() {
        return Err(Failure::new("analyze: no input")
            .hint("give a capture file, or -r - to read a pcap stream from stdin"));
    }
    // Rules are checked before reading anything: a typo must not cost a long run.
    let rules = a
        .fail_on
        .iter()
        .map(|s| rules::parse(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Failure::new)?;
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
    let dcfg = dissectors::Config {
        roce_port: a.opts.roce_port,
        check_icrc: !a.opts.no_icrc,
    };
    let mut an = Analyzer::new(Config {
        idle_timeout_ns: (a.idle_timeout * 1e9) as u64,
        link_bps: (a.link_speed * 1e9) as u64,
        max_flow_summaries: a.max_flows,
        ..Config::default()
    });
    let mut input = Input::default();
    // Read, decode and feed one frame; `iface` already tells the sources apart.
    let feed = |an: &mut Analyzer, f: &Frame<'_>, iface: u32| {
        if a.stop_after == Some(Stage::Read) {
            return;
        }
        let d = dissectors::decode(f.link, f.data, f.orig_len, &dcfg);
        if a.stop_after == Some(Stage::Decode) {
            std::hint::black_box(&d);
            return;
        }
        an.ingest(f.ts_ns, iface, &d);
    };
    if paths.len() == 1 {
        let (reader, name, size) = open(&paths[0])?;
        let mut progress = Progress::new(&name, size, a.quiet);
        let r = for_each_frame(reader, |f: &Frame<'_>| {
            progress.tick(f.data.len());
            feed(&mut an, f, f.iface);
            ControlFlow::Continue(())
        });
        progress.done();
        let stats = r.map_err(|e| read_failure(&name, e))?;
        input.files.push(name);
        input.frames = stats.frames;
        input.bytes = stats.bytes;
    } else {
        let mut readers = Vec::new();
        let mut total = Some(0u64);
        for (i, path) in paths.iter().enumerate() {
            let (reader, name, size) = open(path)?;
            readers.push(reader);
            let short = path
                .file_name()
                .map_or(name.clone(), |n| n.to_string_lossy().into());
            an.name_iface((i as u32) << 16, short);
            input.files.push(name);
            total = total.zip(size).map(|(t, s)| t + s);
        }
        let label = format!("{} files", paths.len());
        let mut progress = Progress::new(&label, total, a.quiet);
        let r = for_each_merged(readers, |i, f| {
            progress.tick(f.data.len());
            feed(&mut an, f, ((i as u32) << 16) | (f.iface & 0xffff));
            ControlFlow::Continue(())
        });
        progress.done();
        let stats = r.map_err(|(i, e)| read_failure(&input.files[i], e))?;
        input.frames = stats.iter().map(|s| s.frames).sum();
        input.bytes = stats.iter().map(|s| s.bytes).sum();
    }
    let report = an.finish();
    // An unknown rule name is an error even when the output could be written.
    let verdicts = rules::check(&rules, |n| lookup(&report, n)).map_err(Failure::new)?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let res = write_report(&mut out, a.format, a.events, &input, &report, &verdicts)
        .and_then(|_| out.flush());
    if let Err(e) = res {
        if is_broken_pipe(&e) {
            return Ok(exit::OK);
        }
        return Err(Failure::new(format!("writing output: {e}")));
    }
    let failed: Vec<_> = verdicts.iter().filter(|v| !v.holds).collect();
    if failed.is_empty() {
        Ok(exit::OK)
    } else {
        for v in &failed {
            eprintln!(
                "rocetap: rule failed: {} (actual {})",
                v.rule,
                crate::report::analyze::num(v.actual)
            );
        }
        Ok(exit::FINDINGS)
    }
}
