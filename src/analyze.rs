//! `rocetap analyze`: read captures, feed every frame to the analyzer, write the report
//! (text, JSON or CSV) and turn `--fail-on` rules into the exit code: 0 no rule's
//! condition is true, 1 a rule failed (its condition is true), 2 bad rule / unreadable input / write failure. Several files are
//! merged into one capture in timestamp order; the interface of a frame from file `i`
//! is reported as `i * 65536 + its interface id in that file`.

use crate::analysis::{Analyzer, Config};
use crate::capture::Frame;
use crate::cli::{AnalyzeArgs, CaptureArgs, Stage};
use crate::error::{exit, is_broken_pipe, Failure};
use crate::report::analyze::{lookup, write_report, Input, Look};
use crate::report::rules;
use crate::source::for_each_frame_of;
use std::io::{self, Write};
use std::ops::ControlFlow;

pub fn run(a: AnalyzeArgs, color: bool) -> Result<i32, Failure> {
    let paths = a.sources.all();
    if paths.is_empty() && a.interfaces.is_empty() {
        return Err(Failure::new("analyze: no input").hint(
            "give a capture file, -r - to read a pcap stream from stdin, or -i IFACE to capture",
        ));
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
    if !a.interfaces.is_empty() {
        if !paths.is_empty() {
            return Err(Failure::new(
                "analyze: give capture files or -i devices, not both",
            ));
        }
        input.files = a.interfaces.clone();
        let mut d = dissectors::decode(dissectors::LinkType::Ethernet, &[], 0, &dcfg);
        let (mut frames, mut bytes) = (0u64, 0u64);
        let code = crate::capture_cmd::session(&live_args(&a), &mut |f: &Frame<'_>| {
            frames += 1;
            bytes += f.data.len() as u64;
            dissectors::decode_into(f.link, f.data, f.orig_len, &dcfg, &mut d);
            an.ingest(f.ts_ns, (f.source << 16) | (f.iface & 0xffff), &d);
        })?;
        if code != exit::OK {
            return Ok(code);
        }
        input.frames = frames;
        input.bytes = bytes;
        return finish(a, color, an, input, &rules);
    }
    for (i, path) in paths.iter().enumerate() {
        let name = path.display().to_string();
        if paths.len() > 1 {
            let short = path
                .file_name()
                .map_or(name.clone(), |n| n.to_string_lossy().into());
            an.name_iface((i as u32) << 16, short);
        }
        input
            .files
            .push(if name == "-" { "stdin".into() } else { name });
    }
    // One `Decoded` reused for every frame: the hot path moves nothing per packet.
    let mut d = dissectors::decode(dissectors::LinkType::Ethernet, &[], 0, &dcfg);
    let (mut frames, mut bytes) = (0u64, 0u64);
    let cut_short = for_each_frame_of(&paths, a.quiet, |f: &Frame<'_>| {
        frames += 1;
        bytes += f.data.len() as u64;
        if a.stop_after == Some(Stage::Read) {
            return ControlFlow::Continue(());
        }
        dissectors::decode_into(f.link, f.data, f.orig_len, &dcfg, &mut d);
        if a.stop_after == Some(Stage::Decode) {
            std::hint::black_box(&d);
            return ControlFlow::Continue(());
        }
        // With several files, the interface of a frame from file `i` is
        // `i * 65536 + its interface id in that file`.
        an.ingest(f.ts_ns, (f.source << 16) | (f.iface & 0xffff), &d);
        ControlFlow::Continue(())
    })?;
    for c in &cut_short {
        eprintln!("{}", c.warning());
        an.input_cut_short(&c.file, c.frames);
    }
    input.frames = frames;
    input.bytes = bytes;
    input.cut_short = cut_short;
    finish(a, color, an, input, &rules)
}

/// The capture settings of `analyze -i`: those of `capture`, with no file unless -w.
fn live_args(a: &AnalyzeArgs) -> CaptureArgs {
    CaptureArgs {
        interfaces: a.interfaces.clone(),
        write: a.write.clone(),
        snaplen: a.snaplen,
        headers_only: false,
        count: a.count,
        duration: a.duration,
        rotate_mb: None,
        rotate_secs: None,
        ring: None,
        format: None,
        annotate: false,
        all: false,
        force: a.force,
        buffer_kib: 8192,
        immediate: false,
        no_promisc: false,
        roce_port: a.opts.roce_port,
        quiet: a.quiet,
        sysfs_root: "/sys".into(),
        queue: 1024,
        filter: a.filter.iter().cloned().collect(),
    }
}

/// Writes the report and turns the rules into the exit code.
fn finish(
    a: AnalyzeArgs,
    color: bool,
    an: Analyzer,
    input: Input,
    rules: &[rules::Rule],
) -> Result<i32, Failure> {
    let report = an.finish();
    // An unknown rule name is an error even when the output could be written.
    let verdicts = rules::check(rules, |n| lookup(&report, n)).map_err(Failure::new)?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let look = Look {
        paint: crate::report::style::Paint::new(color),
        verbose: a.verbose,
    };
    let res = write_report(
        &mut out, a.format, a.events, look, &input, &report, &verdicts,
    )
    .and_then(|_| out.flush());
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
                crate::report::analyze::num(v.actual)
            );
        }
        Ok(exit::FINDINGS)
    }
}
