//! `rocetap sflow`: an sFlow v5 collector (`rocetap::sflow`), reading a capture of
//! datagrams (`-r`) or listening on UDP, optionally serving `/metrics` and `/report`
//! with the agent's HTTP server (`agent::web::pages`); the report at the end.

use crate::cli::SflowArgs;
use rocetap::agent::web;
use rocetap::error::{exit, is_broken_pipe, Failure};
use rocetap::report::sflow as words;
use rocetap::sflow::{self, source, Collector};
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

const DEFAULT_LISTEN: &str = "0.0.0.0:6343";

fn addr(opt: &str, s: &str) -> Result<SocketAddr, Failure> {
    s.parse().map_err(|_| {
        Failure::new(format!(
            "sflow: {opt} {s}: not an ADDR:PORT (e.g. 0.0.0.0:6343, [::]:6343)"
        ))
    })
}

fn config(a: &SflowArgs) -> Result<sflow::Config, Failure> {
    for (name, v) in [
        ("--max-agents", a.max_agents),
        ("--max-ports", a.max_ports),
        ("--top-qps", a.top_qps),
    ] {
        if v == 0 {
            return Err(Failure::new(format!("sflow: {name} must be at least 1")));
        }
    }
    let mut cfg = sflow::Config {
        max_agents: a.max_agents,
        max_ports: a.max_ports,
        top_qps: a.top_qps,
        ..sflow::Config::default()
    };
    cfg.decode.roce_port = a.roce_port;
    Ok(cfg)
}

pub fn run(a: SflowArgs) -> Result<i32, Failure> {
    let cfg = config(&a)?;
    let collector = if a.read.is_empty() {
        listen(&a, cfg)?
    } else {
        if a.metrics.is_some() || a.duration.is_some() {
            return Err(Failure::new(
                "sflow: --metrics and --duration are for listening, not with -r",
            ));
        }
        let mut c = Collector::new(cfg);
        let cut = source::read_files(&a.read, a.sflow_port, a.count, a.quiet, &mut c)?;
        for s in cut {
            eprintln!(
                "rocetap: warning: {} is cut short after {} frames",
                s.file, s.frames
            );
        }
        c
    };
    let mut out = std::io::stdout().lock();
    let r = if matches!(a.format, crate::cli::NetcheckFormat::Json) {
        words::json(&mut out, &collector)
    } else {
        words::text(&mut out, &collector)
    };
    match r.and_then(|()| out.flush()) {
        Ok(()) => Ok(exit::OK),
        Err(e) if is_broken_pipe(&e) => Ok(exit::OK),
        Err(e) => Err(Failure::new(format!("writing output: {e}"))),
    }
}

fn listen(a: &SflowArgs, cfg: sflow::Config) -> Result<Collector, Failure> {
    let at = addr("--listen", a.listen.as_deref().unwrap_or(DEFAULT_LISTEN))?;
    let duration = match &a.duration {
        None => None,
        Some(d) => Some(
            rocetap::agent::file::parse_duration(d)
                .map_err(|e| Failure::new(format!("sflow: --duration: {e}")))?,
        ),
    };
    let sock = source::bind(at)
        .map_err(|e| Failure::new(format!("sflow: cannot listen on UDP {at}: {e}")))?;
    let shared = Arc::new(Mutex::new(Collector::new(cfg)));
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| Failure::new(format!("sflow: signal handler: {e}")))?;
    }
    let server = match &a.metrics {
        None => None,
        Some(m) => {
            let m = addr("--metrics", m)?;
            let bound = web::bind(m)
                .map_err(|e| Failure::new(format!("sflow: cannot serve on {m}: {e}")))?;
            let c = shared.clone();
            let pages: Arc<web::pages::Pages> = Arc::new(move |path: &str| {
                let c = c.lock().unwrap_or_else(PoisonError::into_inner);
                match path {
                    "/metrics" => Some((sflow::metrics::CONTENT_TYPE, sflow::metrics::render(&c))),
                    "/report" => {
                        let mut b = Vec::new();
                        words::json(&mut b, &c).ok()?;
                        Some(("application/json", b))
                    }
                    "/healthz" => Some(("text/plain; charset=utf-8", b"ok\n".to_vec())),
                    "/" => Some((
                        "text/plain; charset=utf-8",
                        b"rocetap sflow: /metrics /report /healthz\n".to_vec(),
                    )),
                    _ => None,
                }
            });
            Some(
                web::pages::serve(bound, web::DEFAULT_MAX_CONNECTIONS, pages, stop.clone())
                    .map_err(|e| Failure::new(format!("sflow: web server: {e}")))?,
            )
        }
    };
    if !a.quiet {
        eprintln!("rocetap: sflow: listening on UDP {at}");
    }
    let until = source::Until {
        duration,
        count: a.count,
        stop: stop.clone(),
    };
    let r = source::listen(&sock, &shared, &until);
    stop.store(true, Ordering::SeqCst);
    if let Some(h) = server {
        let _ = h.join();
    }
    r.map_err(|e| Failure::new(format!("sflow: receiving on {at}: {e}")))?;
    let c = shared
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    Ok(c)
}
