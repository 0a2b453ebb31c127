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
use crate::capture::live::{LiveSource, SourceInfo, SourceStats, FLUSH_INTERVAL};
use crate::capture::{rdma, session};
use crate::error::exit;
use crate::pipeline::Pipeline;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
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
    // Each lane of an interface is a source of its own: its analyzer, recorder and ring.
    let n_sources = devices.len() * usize::from(cfg.live.lanes.max(1));
    let plan = budget::plan(&wanted(cfg, n_sources)).map_err(Error::Budget)?;
    let live_opts = crate::capture::live::LiveOptions {
        buffer_bytes: plan.pcap_buffer,
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
    // The interfaces (an interface read in lanes once).
    let mut names: Vec<String> = infos.iter().map(|i| i.name.clone()).collect();
    names.dedup();
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
    let mut said = vec![
        ("node", cfg.node.clone()),
        ("sources", names.join(",")),
        ("listen", cfg.listen.to_string()),
        ("snaplen", cfg.live.snaplen.to_string()),
    ];
    if cfg.live.lanes > 1 {
        said.push(("lanes", cfg.live.lanes.to_string()));
    }
    log.event("started", &said);
    log.event(
        "memory_budget",
        &[
            ("limit", budget::size(plan.limit)),
            ("recorder_per_source", budget::size(plan.recorder_bytes)),
            (
                "pcap_buffer_per_source",
                budget::size(plan.pcap_buffer.into()),
            ),
            ("flows", plan.flows.to_string()),
            ("events_per_source", plan.events.to_string()),
            ("summaries_per_source", plan.summaries.to_string()),
        ],
    );
    // Before the sources' threads start: they then share the one arena.
    let _ = super::arena::one_arena();
    // Each source is read, analyzed and recorded on a thread of its own, straight from
    // libpcap's ring (no queue, copy or merge: `work`): its kernel ring takes the whole
    // capture share (`budget::plan`) and holds the frames that come while the source's
    // work is lent to this thread (a `/report`, a dump).
    let sources = opened.start_each();
    let stats: Vec<Arc<SourceStats>> = sources.iter().map(|(_, s)| s.stats().clone()).collect();
    let mut lp = Loop::new(cfg, &infos, log, tables, plan);
    let halt = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for (i, ((_, src), lane)) in sources.into_iter().zip(&lp.lanes).enumerate() {
        match work::spawn(i, src, lane.clone(), lp.privacy.clone(), halt.clone()) {
            Ok(t) => threads.push(t),
            Err(e) => {
                // The threads started before it stop, and HTTP; netcheck ends with the
                // process (it may be waiting for the loop, which never ran).
                halt_all(&halt, threads);
                stop.store(true, Ordering::SeqCst);
                let _ = http.join();
                return Err(Error::Thread(e));
            }
        }
    }
    let reason = lp.run(&stats, &stop, &usr1, (&rep_rx, &join_rx), &shared);
    halt_all(&halt, threads);
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
            .zip(&infos)
            .filter_map(|(s, i)| {
                let e = s.error()?;
                Some(format!("{}: {e}", i.label()))
            })
            .collect();
        return Err(Error::SourcesEnded(errs));
    }
    Ok(exit::OK)
}

/// Stops the sources' threads and waits for them.
fn halt_all(halt: &AtomicBool, threads: Vec<JoinHandle<()>>) {
    halt.store(true, Ordering::SeqCst);
    for t in threads {
        let _ = t.join();
    }
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
/// this libpcap lists it and no lanes are asked for, else its netdevs.
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
            // Lanes split an AF_PACKET socket, which the RDMA sniffer has not: its netdevs.
            if listed.contains(&d.name) && cfg.live.lanes <= 1 {
                out.push(d.name);
            } else {
                out.extend(d.netdevs);
            }
        }
    }
    out.dedup();
    if cfg.live.lanes > 1 {
        let sysfs = crate::config::sysfs_dir(&cfg.sysfs_root);
        if let Some(d) = out.iter().find(|d| rdma::parse_name(&sysfs, d).is_some()) {
            return Err(Error::LanesRdma {
                device: d.clone(),
                lanes: cfg.live.lanes,
            });
        }
    }
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
    /// Each source's analysis and recorder, updated by its thread.
    lanes: Vec<Arc<Lane>>,
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
            lanes: infos
                .iter()
                .map(|i| {
                    Lane::new(Work {
                        pipe: Pipeline::new(cfg.decode, Analyzer::new(analyzer)),
                        rec: Recorder::new(
                            plan.recorder_bytes,
                            i.snaplen,
                            cfg.recorder_seconds * 1_000_000_000,
                        ),
                    })
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

    fn run(
        &mut self,
        stats: &[Arc<SourceStats>],
        stop: &AtomicBool,
        usr1: &AtomicBool,
        (reports, analyses): (&Receiver<ReportRequest>, &Receiver<SyncSender<Vec<Report>>>),
        shared: &Mutex<Published>,
    ) -> &'static str {
        let started = Instant::now();
        let mut last_tick = Instant::now();
        loop {
            // The sources' threads do the reading: this one waits for a `/report`.
            let first = match reports.recv_timeout(FLUSH_INTERVAL) {
                Ok(tx) => Some(tx),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(FLUSH_INTERVAL);
                    None
                }
            };
            if stop.load(Ordering::SeqCst) {
                return "signal";
            }
            if self.cfg.duration.is_some_and(|d| started.elapsed() >= d) {
                return "duration reached";
            }
            if self.lanes.iter().all(|l| l.ended()) {
                return "all sources ended";
            }
            let more = std::iter::from_fn(|| reports.try_recv().ok());
            for tx in first.into_iter().chain(more) {
                let qp = self.tables.now();
                let lanes = self.lanes.clone();
                let work = lock_all(&lanes);
                let (r, input) = dump::analyze(
                    &self.recorded(&work),
                    window_start_ns(&work, self.cfg.dump_seconds),
                    self.analysis(),
                    qp.as_deref(),
                );
                drop(work);
                let json = dump::report_json(&r, &input);
                self.report_bytes = tick::report_cost(&r) + json.len() as u64;
                let _ = tx.try_send(json);
            }
            while let Ok(tx) = analyses.try_recv() {
                let reps = self
                    .lanes
                    .iter()
                    .map(|l| {
                        let w = l.lock();
                        let an = w.pipe.analyzer();
                        an.snapshot(an.events_recorded())
                    })
                    .collect();
                let _ = tx.try_send(reps);
            }
            if usr1.swap(false, Ordering::SeqCst) {
                self.dump("signal", None, shared);
            }
            if last_tick.elapsed() >= Duration::from_secs(1) {
                last_tick = Instant::now();
                self.publish(stats, shared);
                self.judge(shared);
            }
        }
    }

    /// Every source's recorder, from the sources' work the caller holds.
    fn recorded<'a>(&'a self, work: &'a [MutexGuard<'_, Work>]) -> Vec<Recorded<'a>> {
        self.infos
            .iter()
            .zip(work)
            .map(|(i, w)| Recorded {
                name: &i.name,
                lane: i.lane.map(|_| i.label()),
                link: i.link,
                snaplen: i.snaplen,
                rec: &w.rec,
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
}

/// Every source's work, each held until the guards are dropped.
fn lock_all(lanes: &[Arc<Lane>]) -> Vec<MutexGuard<'_, Work>> {
    lanes.iter().map(|l| l.lock()).collect()
}

/// The first timestamp a dump or `/report` covers: `seconds` before the newest frame
/// recorded.
fn window_start_ns(work: &[MutexGuard<'_, Work>], seconds: u64) -> u64 {
    let newest = work
        .iter()
        .filter_map(|w| w.rec.newest_ts())
        .max()
        .unwrap_or(0);
    newest.saturating_sub(seconds * 1_000_000_000)
}

mod tick;
mod work;

use work::{Lane, Work};
