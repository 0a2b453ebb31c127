//! `rocetap nccl`: read NCCL logs, find the configuration mistakes, check the hosts'
//! GID tables and routes, join each completion error with the captures, triage, and
//! write the report (text or `rocetap.nccl/1` JSON); `--fail-on` rules give the exit
//! code (0 none holds, 1 one holds, 2 error).

use crate::cli::{NcclArgs, NcclFormat};
use rocetap::analysis::{Analyzer, Config};
use rocetap::error::Failure;
use rocetap::nccl::wire::Tap;
use rocetap::nccl::{self, config, fetch, host, triage};
use rocetap::pipeline::{NoSink, Pipeline};
use rocetap::report::nccl::Doc;
use rocetap::report::rules;
use std::io::Write;

pub fn run(a: NcclArgs) -> Result<i32, Failure> {
    let rules = a
        .fail_on
        .iter()
        .map(|s| rules::parse(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::new(e.to_string()))?;
    let log = nccl::read_paths(&a.logs).map_err(Failure::new)?;
    let assume = config::Assume {
        lossless_priority: a.lossless_priority,
    };
    let issues = config::check(&log, assume);
    let mut hosts = Vec::new();
    let mut sysfs_of = Vec::new();
    for s in &a.sysfs_root {
        let (h, dir) = host::split_target(s);
        hosts.extend(host::check_gids(&log, h.as_deref(), &dir).map_err(Failure::new)?);
        sysfs_of.push((h, dir));
    }
    for s in &a.from {
        let (h, dir) = host::split_target(s);
        let sys = sysfs_of
            .iter()
            .find(|(sh, _)| sh.is_none() || *sh == h)
            .map(|(_, d)| d.as_path());
        hosts.extend(host::check_routes(&log, h.as_deref(), &dir, sys).map_err(Failure::new)?);
    }
    let mut taps: Vec<Tap> = Vec::new();
    let mut names = Vec::new();
    for path in &a.capture {
        let mut p = Pipeline::new(
            dissectors::Config::default(),
            Analyzer::new(Config::default()),
        );
        let cut = p.read_files(std::slice::from_ref(path), true, &mut NoSink)?;
        for c in &cut {
            eprintln!("{}", c.warning());
        }
        taps.push(Tap::from_report(&p.finish()));
        names.push(path.display().to_string());
    }
    for src in &a.agent {
        let v = fetch::report(src).map_err(Failure::new)?;
        taps.push(
            Tap::from_analyze_json(&v)
                .map_err(|e| Failure::new(format!("nccl: --agent {src}: {e}")))?,
        );
        names.push(format!("agent {src}"));
    }
    let triaged = triage::triage(&log, &issues, &hosts, &taps);
    let doc = Doc {
        log: &log,
        issues: &issues,
        hosts: &hosts,
        triaged: &triaged,
        captures: &names,
    };
    let verdicts =
        rules::check(&rules, |n| doc.value(n)).map_err(|e| Failure::new(e.to_string()))?;
    let out = match a.format {
        NcclFormat::Json => {
            let mut s = serde_json::to_string_pretty(&doc.json())
                .map_err(|e| Failure::new(format!("nccl: {e}")))?;
            s.push('\n');
            s
        }
        NcclFormat::Text => doc.text(a.verbose),
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if rocetap::error::is_broken_pipe(&e) {
            return Ok(0);
        }
        return Err(Failure::new(format!("nccl: writing the report: {e}")));
    }
    let mut code = 0;
    for v in &verdicts {
        if v.failed {
            eprintln!(
                "rocetap: --fail-on '{}' holds: {} = {}",
                v.rule, v.rule.name, v.actual
            );
            code = 1;
        }
    }
    Ok(code)
}
