//! The agent's life: check the configuration, open the sources, start the HTTP server
//! and the netcheck pass, then the analysis loop until SIGTERM/SIGINT (or `duration`).
//! Every error before the loop starts is a one-line error (exit 2); once running, a
//! source that fails is reported by `/healthz`, the log and its metrics.

use super::budget::{self, Plan};
use super::dump::{self, Analysis, Recorded};
use super::http::ReportRequest;
use super::log::Log;
use super::private::Privacy;
use super::privileges;
use super::recorder::Recorder;
use super::side;
use super::state::{Published, SourceState};
use super::topn::{self, TopN};
use super::window::{self, Window};
use super::Config;
use super::Error;
use crate::analysis::{Analyzer, Report};
use crate::capture::live::{Inline, LiveSource, SourceInfo, SourceStats, FLUSH_INTERVAL};
use crate::capture::merge::Merger;
use crate::capture::{rdma, session};
use crate::error::exit;
use crate::pipeline::Pipeline;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Counters whose start and end in the window are logged (keys of the totals).
const NOTABLE: [&str; 14] = [
    "nak_psn_seq",
    "rnr_nak",
    "unrecovered_gap_events",
    "capture_loss_gap_events",
    "timeout_retransmission_episodes",
    "duplicate_packets",
    "ce_marked",
    "cnp",
    "pfc_pause_frames",
    "icrc_bad",
    "arp_cross_subnet_unanswered",
    "arp_reply_path_mismatch",
    "arp_duplicate_address",
    "malformed",
];

/// Runs the agent; returns the exit code.
pub fn run(cfg: &Config) -> Result<i32, Error> {
    let log = Log {
        format: cfg.log_format,
    };
    check(cfg)?;
    let tables = side::QpTables::load(&cfg.qp_table)?;
    let devices = resolve(cfg)?;
    let plan = budget::plan(&wanted(cfg, devices.len())).map_err(Error::Budget)?;
    let live_opts = crate::capture::live::LiveOptions {
        buffer_bytes: plan.pcap_buffer,
        queue_batches: plan.queue_batches,
        reopen: true,
        ..cfg.live.clone()
    };
    let opened =
        LiveSource::open(&devices, live_opts).map_err(|e| session::explain(e, &cfg.sysfs_root))?;
    let infos = opened.sources();
    // Bound before the privileges go (a port below 1024 needs CAP_NET_BIND_SERVICE); the
    // server's runtime starts no thread until `web::spawn`.
    let server = super::web::bind(cfg.listen).map_err(|error| Error::Listen {
        addr: cfg.listen,
        error,
    })?;
    // Sources open, listener bound, no thread started yet: give up what is not needed.
    let sysfs = crate::config::sysfs_dir(&cfg.sysfs_root);
    let needs = privileges::Needs::of(cfg.netcheck_interval.is_some(), &devices, &sysfs);
    let kept = privileges::restrict(needs).map_err(Error::Privileges)?;
    let mut said = vec![
        ("capabilities", privileges::names(&kept.kept)),
        ("no_new_privs", "1".into()),
    ];
    if kept.other_threads > 0 {
        said.push(("threads_not_restricted", kept.other_threads.to_string()));
    }
    log.event("privileges", &said);
    let names: Vec<String> = infos.iter().map(|i| i.name.clone()).collect();
    let shared = Arc::new(Mutex::new(Published::new(cfg.node.clone(), &names)));
    {
        let mut p = shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        p.memory.budget = plan.limit;
        p.memory.shares = plan.shares.clone();
        p.topology = cfg.topology.is_some();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let usr1 = Arc::new(AtomicBool::new(false));
    signals(&stop, &usr1)?;
    let (rep_tx, rep_rx) = sync_channel::<ReportRequest>(4);
    let (join_tx, join_rx) = sync_channel::<SyncSender<Vec<Report>>>(2);
    let http = super::web::spawn(server, &cfg.web, shared.clone(), rep_tx, stop.clone())?;
    let nc = cfg.netcheck_interval.map(|every| {
        let (shared, stop, cfg) = (shared.clone(), stop.clone(), cfg.clone());
        std::thread::spawn(move || side::netcheck_loop(&cfg, every, &shared, &stop, &join_tx, log))
    });
    log.event(
        "started",
        &[
            ("node", cfg.node.clone()),
            ("sources", names.join(",")),
            ("listen", cfg.listen.to_string()),
            ("snaplen", cfg.live.snaplen.to_string()),
        ],
    );
    log.event(
        "memory_budget",
        &[
            ("limit", budget::size(plan.limit)),
            ("recorder_per_source", budget::size(plan.recorder_bytes)),
            (
                "pcap_buffer_per_source",
                budget::size(plan.pcap_buffer.into()),
            ),
            ("queue_batches", plan.queue_batches.to_string()),
            ("flows", plan.flows.to_string()),
            ("events_per_source", plan.events.to_string()),
            ("summaries_per_source", plan.summaries.to_string()),
        ],
    );
    // Before the capture threads start: they then share the one arena.
    let _ = super::arena::one_arena();
    // One source is read on this thread, straight from libpcap's ring (no capture
    // thread, queue or copy): its kernel ring takes the capture share the queue would
    // have had (`budget::plan`) and holds the frames that come while this thread is busy
    // elsewhere (a `/report`, a dump). Several sources: a thread each and the queue.
    let (live, mut inline) = match opened.start_inline() {
        Ok((live, inline)) => (live, Some(inline)),
        Err(opened) => (opened.start(), None),
    };
    let mut lp = Loop::new(cfg, &infos, log, tables, plan);
    let reason = lp.run(
        (&live, inline.as_mut()),
        &stop,
        &usr1,
        (&rep_rx, &join_rx),
        &shared,
    );
    let stats = live.stats().to_vec();
    let rest = live.finish();
    for b in rest {
        lp.merger.push(b);
    }
    lp.drain();
    if let Some(i) = inline {
        i.finish();
    }
    lp.publish(&stats, &shared);
    stop.store(true, Ordering::SeqCst);
    let _ = http.join();
    if let Some(h) = nc {
        let _ = h.join();
    }
    log.event("stopped", &[("reason", reason.to_string())]);
    if reason == "all sources ended" {
        let errs: Vec<String> = stats
            .iter()
            .zip(&names)
            .filter_map(|(s, n)| {
                let e = s.error()?;
                Some(format!("{n}: {e}"))
            })
            .collect();
        return Err(Error::SourcesEnded(errs));
    }
    Ok(exit::OK)
}

/// What the budget is split for: the configuration's asks and the sources.
fn wanted(cfg: &Config, sources: usize) -> budget::Wanted {
    budget::Wanted {
        limit: cfg.memory_limit,
        sources,
        snaplen: cfg.live.snaplen,
        recorder_bytes: cfg.recorder_bytes,
        pcap_buffer: cfg.live.buffer_bytes,
        queue_batches: cfg.live.queue_batches,
        batch_frames: cfg.live.batch_frames,
        events: cfg.analyzer.max_events,
        summaries: cfg.analyzer.max_flow_summaries,
    }
}

/// Checks what can be checked before anything is opened.
fn check(cfg: &Config) -> Result<(), Error> {
    let w = Window::new(cfg.window);
    for r in &cfg.dump_on {
        if !w.knows(&r.name) {
            return Err(Error::DumpOnUnknown {
                rule: r.to_string(),
                name: r.name.clone(),
            });
        }
    }
    if !cfg.dump_on.is_empty() && cfg.dump_dir.is_none() {
        return Err(Error::DumpOnWithoutDir);
    }
    if let Some(d) = &cfg.dump_dir {
        prepare_dir(d)?;
    }
    if cfg.interfaces.is_empty() {
        return Err(Error::NoSource);
    }
    Ok(())
}

/// Creates the dump directory and checks it can be written, removing a killed run's
/// `.part` files.
fn prepare_dir(d: &Path) -> Result<(), Error> {
    let fail = |error| Error::DumpDir {
        dir: d.to_path_buf(),
        error,
    };
    dump::private_dir(d).map_err(fail)?;
    let probe = d.join(format!(".rocetap-probe-{}", std::process::id()));
    dump::private_file(&probe).map_err(fail)?;
    let _ = std::fs::remove_file(&probe);
    dump::clean_parts(d);
    Ok(())
}

/// `auto` becomes the node's RDMA devices: each through the libpcap RDMA sniffer when
/// this libpcap lists it, else its netdevs.
fn resolve(cfg: &Config) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    for i in &cfg.interfaces {
        if i != "auto" {
            out.push(i.clone());
            continue;
        }
        let listed: Vec<String> = pcap::Device::list()
            .map(|d| d.into_iter().map(|d| d.name).collect())
            .unwrap_or_default();
        let sysfs = crate::config::sysfs_dir(&cfg.sysfs_root);
        let devs = rdma::list(&sysfs);
        if devs.is_empty() {
            return Err(Error::NoRdmaDevice {
                dir: sysfs.join("class/infiniband"),
            });
        }
        for d in devs {
            if listed.contains(&d.name) {
                out.push(d.name);
            } else {
                out.extend(d.netdevs);
            }
        }
    }
    out.dedup();
    Ok(out)
}

fn signals(stop: &Arc<AtomicBool>, usr1: &Arc<AtomicBool>) -> Result<(), Error> {
    let fail = Error::Signals;
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal ends the process at once.
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone());
        signal_hook::flag::register(sig, stop.clone()).map_err(fail)?;
    }
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, usr1.clone()).map_err(fail)?;
    Ok(())
}

/// The analysis loop's state.
struct Loop<'c> {
    tables: side::QpTables,
    cfg: &'c Config,
    log: Log,
    infos: Vec<SourceInfo>,
    merger: Merger,
    pipes: Vec<Pipeline>,
    recs: Vec<Recorder>,
    tops: Vec<TopN>,
    peers: Vec<super::peers::Peers>,
    window: Window,
    drops: VecDeque<(Instant, u64)>,
    active: Vec<bool>,
    dropping: bool,
    holding: bool,
    last_rule_dump: Option<Instant>,
    privacy: Privacy,
    plan: Plan,
    /// Each source as the last tick saw it: (up, losses).
    seen: Vec<(bool, u64)>,
    /// Which limits each source has hit (logged once): flows, events, summaries.
    limited: Vec<[bool; 3]>,
    /// The last `/report` or dump re-analysis, in bytes (estimated).
    report_bytes: u64,
}

/// Records each frame the pipeline decoded, as [`Privacy`] keeps it.
struct Recording<'a> {
    rec: &'a mut Recorder,
    privacy: &'a Privacy,
}

impl crate::pipeline::Sink for Recording<'_> {
    #[inline]
    fn after(
        &mut self,
        f: &crate::capture::Frame<'_>,
        d: Option<&dissectors::Decoded>,
        _: &Analyzer,
    ) -> std::ops::ControlFlow<()> {
        self.rec.record(f, d, self.privacy);
        std::ops::ControlFlow::Continue(())
    }
}

impl<'c> Loop<'c> {
    fn new(
        cfg: &'c Config,
        infos: &[SourceInfo],
        log: Log,
        tables: side::QpTables,
        plan: Plan,
    ) -> Self {
        let n = infos.len();
        let analyzer = crate::analysis::Config {
            max_events: plan.events,
            max_flow_summaries: plan.summaries,
            max_flows: plan.flows / n.max(1),
            ..cfg.analyzer
        };
        Loop {
            tables,
            cfg,
            log,
            infos: infos.to_vec(),
            merger: Merger::new(n),
            pipes: (0..n)
                .map(|_| Pipeline::new(cfg.decode, Analyzer::new(analyzer)))
                .collect(),
            recs: infos
                .iter()
                .map(|i| {
                    Recorder::new(
                        plan.recorder_bytes,
                        i.snaplen,
                        cfg.recorder_seconds * 1_000_000_000,
                    )
                })
                .collect(),
            tops: (0..n).map(|_| TopN::new(cfg.top_flows)).collect(),
            peers: (0..n)
                .map(|_| super::peers::Peers::new(cfg.max_peers))
                .collect(),
            window: {
                // Nothing had happened when the agent started: the window's first sample.
                let mut w = Window::new(cfg.window);
                w.push(
                    Instant::now(),
                    window::values(&crate::analysis::Totals::default()),
                );
                w
            },
            drops: VecDeque::from([(Instant::now(), 0)]),
            active: vec![false; NOTABLE.len()],
            dropping: false,
            holding: false,
            last_rule_dump: None,
            privacy: Privacy::new(cfg.redact),
            plan,
            seen: vec![(true, 0); n],
            limited: vec![[false; 3]; n],
            report_bytes: 0,
        }
    }

    fn drain(&mut self) {
        let (pipes, recs, privacy) = (&mut self.pipes, &mut self.recs, &self.privacy);
        // Every source has its own pipeline and recorder: nothing to merge, so a source
        // never waits for another's watermark and batches are taken whole.
        let _ = self.merger.drain_sources(|f| {
            let s = f.source as usize;
            // Recorded once decoded: the decoder says where the headers end.
            pipes[s].feed(
                f,
                &mut Recording {
                    rec: &mut recs[s],
                    privacy,
                },
            )
        });
    }

    /// Reads the one source read inline for up to `wait`, each frame analyzed and
    /// recorded straight from libpcap's buffer.
    fn pump(&mut self, src: &mut Inline, wait: Duration) {
        let (pipe, rec, privacy) = (&mut self.pipes[0], &mut self.recs[0], &self.privacy);
        let _ = src.pump(wait, |f| pipe.feed(f, &mut Recording { rec, privacy }));
    }

    fn run(
        &mut self,
        (live, mut inline): (&LiveSource, Option<&mut Inline>),
        stop: &AtomicBool,
        usr1: &AtomicBool,
        (reports, analyses): (&Receiver<ReportRequest>, &Receiver<SyncSender<Vec<Report>>>),
        shared: &Mutex<Published>,
    ) -> &'static str {
        let started = Instant::now();
        let mut last_tick = Instant::now();
        loop {
            if let Some(src) = inline.as_deref_mut() {
                // Back within a flush interval, so a `/report` waits no longer for its turn
                // than it would behind a capture thread's batch.
                self.pump(src, FLUSH_INTERVAL);
            } else {
                if let Some(b) = live.recv_timeout(Duration::from_millis(100)) {
                    self.merger.push(b);
                    while let Ok(b) = live.receiver().try_recv() {
                        self.merger.push(b);
                    }
                }
                self.drain();
            }
            if stop.load(Ordering::SeqCst) {
                return "signal";
            }
            if self.cfg.duration.is_some_and(|d| started.elapsed() >= d) {
                return "duration reached";
            }
            let ended = match inline.as_deref() {
                Some(src) => src.ended(),
                None => self.merger.is_done(),
            };
            if ended {
                return "all sources ended";
            }
            while let Ok(tx) = reports.try_recv() {
                let qp = self.tables.now();
                let (r, input) = dump::analyze(
                    &self.recorded(),
                    self.window_start_ns(),
                    self.analysis(),
                    qp.as_deref(),
                );
                let json = dump::report_json(&r, &input);
                self.report_bytes = tick::report_cost(&r) + json.len() as u64;
                let _ = tx.try_send(json);
            }
            while let Ok(tx) = analyses.try_recv() {
                let reps = self
                    .pipes
                    .iter()
                    .map(|p| p.analyzer().snapshot(p.analyzer().events_recorded()))
                    .collect();
                let _ = tx.try_send(reps);
            }
            if usr1.swap(false, Ordering::SeqCst) {
                self.dump("signal", None, shared);
            }
            if last_tick.elapsed() >= Duration::from_secs(1) {
                last_tick = Instant::now();
                self.publish(live.stats(), shared);
                self.judge(shared);
            }
        }
    }

    fn recorded(&self) -> Vec<Recorded<'_>> {
        self.infos
            .iter()
            .zip(&self.recs)
            .map(|(i, r)| Recorded {
                name: &i.name,
                link: i.link,
                snaplen: i.snaplen,
                rec: r,
            })
            .collect()
    }

    fn analysis(&self) -> Analysis {
        Analysis {
            decode: self.cfg.decode,
            analyzer: crate::analysis::Config {
                max_flows: self.plan.report.0,
                max_events: self.plan.report.1,
                max_flow_summaries: self.plan.report.2,
                ..self.cfg.analyzer
            },
        }
    }

    /// The first timestamp a dump or `/report` covers: `dump_seconds` before the newest
    /// frame recorded.
    fn window_start_ns(&self) -> u64 {
        let newest = self
            .recs
            .iter()
            .filter_map(Recorder::newest_ts)
            .max()
            .unwrap_or(0);
        newest.saturating_sub(self.cfg.dump_seconds * 1_000_000_000)
    }
}

mod tick;
