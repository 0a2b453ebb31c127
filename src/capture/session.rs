//! The headless capture session behind `rocetap capture` and `analyze -i`: live devices
//! through the [`Pipeline`], optionally written to pcap / pcapng with rotation and
//! per-packet annotations, and a report of every frame received, written and dropped (by
//! the kernel, the interface, and rocetap's own queue).
//!
//! Order of work: open every device (the only privileged step; errors name the missing
//! capability or the missing RDMA support); drop privileges; create the output; start the
//! capture threads (one device: none, it is read on this thread straight from libpcap's
//! buffer, see [`Inline`]); feed frames until `count`, `duration`, SIGINT/SIGTERM or a
//! write error; flush; report. A write error keeps the file valid up to the last complete frame
//! and is an error (exit 2); signals end the run normally (exit 0). The [`Config`] comes
//! validated from the command.

use super::annotate::Annotator;
use super::live::{Filter, Inline, LiveOptions, LiveSource, Opened, SourceInfo};
use super::merge::Merger;
use super::output::{Output, OutputOptions};
use super::stats::{final_report, running_report, Status};
use super::writer::{Format, Interface};
use super::{privileges, rdma};
use crate::error::exit;
use crate::pipeline::Pipeline;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod error;
mod writing;
pub use error::{explain, SessionError};
use writing::Writing;

/// A validated capture session.
#[derive(Clone, Debug)]
pub struct Config {
    /// Devices to capture from, merged by timestamp.
    pub devices: Vec<String>,
    /// libpcap settings: snaplen, buffer, promiscuous and immediate mode, filter, queue.
    pub live: LiveOptions,
    /// Where to write the frames, if anywhere.
    pub write: Option<PathBuf>,
    /// The file format.
    pub format: Format,
    /// `-C`: bytes per file.
    pub rotate_bytes: Option<u64>,
    /// `-G`: seconds per file.
    pub rotate_secs: Option<u64>,
    /// `-W`: files kept.
    pub ring: Option<u32>,
    /// Replace existing files.
    pub force: bool,
    /// Comment notable RoCE frames (pcapng only).
    pub annotate: bool,
    /// Stop after handing on this many frames.
    pub count: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// No status line and no final report (errors excepted).
    pub quiet: bool,
    /// Where sysfs is (to recognise RDMA devices).
    pub sysfs_root: PathBuf,
}

impl Config {
    /// The defaults for `devices`: whole frames, the RoCE filter, no file, no limit.
    pub fn new(devices: Vec<String>) -> Self {
        Config {
            devices,
            live: LiveOptions {
                filter: Filter::Roce {
                    port: crate::config::ROCE_PORT,
                },
                queue_batches: crate::config::DEFAULT_QUEUE_BATCHES,
                ..LiveOptions::default()
            },
            write: None,
            format: Format::Pcap,
            rotate_bytes: None,
            rotate_secs: None,
            ring: None,
            force: false,
            annotate: false,
            count: None,
            duration: None,
            quiet: false,
            sysfs_root: PathBuf::from(crate::config::SYSFS_ROOT),
        }
    }
}

/// How a session that started capturing ended.
#[derive(Debug)]
pub struct Ended {
    /// The exit code when nothing failed.
    pub code: i32,
    /// What failed after capturing started (a write error, a device that stopped): the
    /// frames before it went through the pipeline, so a caller that analyzes them can
    /// report them first and this after.
    pub failure: Option<SessionError>,
}

/// Runs the session, feeding every frame (in timestamp order across devices) through
/// `pipeline`; returns the exit code.
pub fn run(cfg: &Config, pipeline: &mut Pipeline) -> Result<i32, SessionError> {
    let ended = run_to_end(cfg, pipeline)?;
    match ended.failure {
        Some(f) => Err(f),
        None => Ok(ended.code),
    }
}

/// [`run`], with what failed once capturing had started kept apart from what failed
/// before (opening the devices, creating the file: the `Err`).
pub fn run_to_end(cfg: &Config, pipeline: &mut Pipeline) -> Result<Ended, SessionError> {
    let (opened, infos, comment) = open(cfg)?;
    let out = create_output(cfg, &infos, comment)?;
    let signals = Signals::install()?;
    // One device: read on this thread, straight from libpcap's buffer (nothing to merge).
    let (live, mut inline) = match opened.start_inline() {
        Ok((live, inline)) => (live, Some(inline)),
        Err(opened) => (opened.start(), None),
    };
    let names: Vec<String> = live.sources().iter().map(SourceInfo::label).collect();
    if !cfg.quiet {
        // A device read in lanes: one line, for its first lane.
        for s in live
            .sources()
            .iter()
            .filter(|s| s.lane.is_none_or(|l| l.index == 0))
        {
            let lanes = s.lane.map_or(String::new(), |l| {
                format!(" in {} lanes (PACKET_FANOUT by IP pair)", l.count)
            });
            eprintln!(
                "capturing on {}{lanes} ({:?}), snapshot length {} bytes, filter: {}",
                crate::escape::term(&s.name),
                s.link,
                cfg.live.snaplen,
                s.filter.as_deref().unwrap_or("none")
            );
        }
    }
    let mut w = Writing {
        out,
        annotator: cfg.annotate.then(Annotator::new),
        handed: 0,
        limit: cfg.count.unwrap_or(u64::MAX),
        error: None,
    };
    let mut merger = Merger::new(names.len());
    let mut source = Source {
        live: &live,
        merger: &mut merger,
        inline: inline.as_mut(),
    };
    let reason = capture(cfg, pipeline, &mut source, &mut w, &signals, &names);
    if let Some(i) = inline {
        i.finish();
    }
    let stats = live.stats().to_vec();
    let rest = live.finish();
    // Everything captured before the stop is handed on (a count limit excepted).
    if w.error.is_none() && w.handed < w.limit {
        let _ = pipeline.drain(rest, &mut merger, &mut w);
    }
    Ok(end(cfg, w, &names, &stats, reason))
}

/// Opens the devices (privileged), notes RDMA devices, drops privileges and checks that
/// the file format can hold every device's link type.
fn open(cfg: &Config) -> Result<(Opened, Vec<SourceInfo>, Option<String>), SessionError> {
    let opened = LiveSource::open(&cfg.devices, cfg.live.clone())
        .map_err(|e| explain(e, &cfg.sysfs_root))?;
    let infos = opened.sources();
    // RDMA devices opened through a libpcap with RDMA support: the sniffer never
    // reports drops.
    let rdma_devs: Vec<&str> = infos
        .iter()
        .filter(|i| rdma::parse_name(&cfg.sysfs_root, &i.name).is_some())
        .map(|i| i.name.as_str())
        .collect();
    // The pcapng comment keeps the names as they are; the terminal gets them escaped.
    let comment = (!rdma_devs.is_empty())
        .then(|| format!("rocetap: {}: {}", rdma_devs.join(", "), rdma::SNIFFER_NOTE));
    if let Some(c) = &comment {
        eprintln!(
            "note: {}",
            crate::escape::term(c.trim_start_matches("rocetap: "))
        );
    }
    privileges::drop_privileges().map_err(SessionError::Privileges)?;
    if cfg.format != Format::PcapNg {
        if let Some(other) = infos.iter().find(|i| i.link != infos[0].link) {
            return Err(SessionError::LinkTypes {
                first: (infos[0].name.clone(), infos[0].link),
                other: (other.name.clone(), other.link),
            });
        }
    }
    Ok((opened, infos, comment))
}

/// The first output file, when writing (after privileges were dropped).
fn create_output(
    cfg: &Config,
    infos: &[SourceInfo],
    comment: Option<String>,
) -> Result<Option<Output>, SessionError> {
    let Some(path) = &cfg.write else {
        return Ok(None);
    };
    let ifaces: Vec<Interface> = infos
        .iter()
        .map(|i| Interface {
            link: i.link,
            snaplen: cfg.live.snaplen,
            name: Some(i.name.clone()),
            description: i
                .lane
                .map(|_| format!("{} (PACKET_FANOUT by IP pair)", i.label())),
        })
        .collect();
    Output::create(OutputOptions {
        path: path.clone(),
        format: cfg.format,
        ifaces,
        comment,
        rotate_bytes: cfg.rotate_bytes,
        rotate_secs: cfg.rotate_secs,
        ring: cfg.ring,
        force: cfg.force,
    })
    .map(Some)
    .map_err(SessionError::Output)
}

/// SIGINT / SIGTERM stop the capture (a second one ends the process at once); SIGUSR1
/// asks for the counters.
struct Signals {
    stop: Arc<AtomicBool>,
    usr1: Arc<AtomicBool>,
}

impl Signals {
    fn install() -> Result<Self, SessionError> {
        let fail = SessionError::Signals;
        let stop = Arc::new(AtomicBool::new(false));
        let usr1 = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone());
            signal_hook::flag::register(sig, stop.clone()).map_err(fail)?;
        }
        signal_hook::flag::register(signal_hook::consts::SIGUSR1, usr1.clone()).map_err(fail)?;
        Ok(Signals { stop, usr1 })
    }
}

/// Where a session's frames come from: capture threads through the merger, or the one
/// device read on this thread.
struct Source<'a> {
    live: &'a LiveSource,
    merger: &'a mut Merger,
    inline: Option<&'a mut Inline>,
}

impl Source<'_> {
    /// Every source has ended.
    fn done(&self) -> bool {
        match &self.inline {
            Some(i) => i.ended(),
            None => self.merger.is_done(),
        }
    }
}

/// Feeds frames until a reason to stop; returns the reason (for the report).
fn capture(
    cfg: &Config,
    pipeline: &mut Pipeline,
    source: &mut Source<'_>,
    w: &mut Writing,
    signals: &Signals,
    names: &[String],
) -> &'static str {
    let started = Instant::now();
    let live = source.live;
    let mut status = Status::new(!cfg.quiet && std::io::stderr().is_terminal());
    let mut last_flush = Instant::now();
    let reason = loop {
        let wait = Duration::from_millis(100);
        let flow = match source.inline.as_deref_mut() {
            Some(i) => pipeline.pump_inline(i, wait, w),
            None => pipeline.pump(live, source.merger, wait, w),
        };
        if w.error.is_some() {
            break "write error";
        }
        if flow.is_break() || w.handed >= w.limit {
            break "count reached";
        }
        if signals.stop.load(Ordering::SeqCst) {
            break "signal";
        }
        if cfg.duration.is_some_and(|d| started.elapsed() >= d) {
            break "duration reached";
        }
        if source.done() {
            break "all sources ended";
        }
        if last_flush.elapsed() >= Duration::from_secs(1) {
            last_flush = Instant::now();
            if let Some(Err(e)) = w.out.as_mut().map(Output::flush) {
                w.error = Some(e);
                break "write error";
            }
        }
        if signals.usr1.swap(false, Ordering::SeqCst) {
            status.clear();
            eprint!("{}", running_report(live, names, w.out.as_ref()));
        }
        status.update(live, w.handed);
    };
    status.clear();
    reason
}

/// Closes the output, says what the capture did, and turns errors into the result.
fn end(
    cfg: &Config,
    w: Writing,
    names: &[String],
    stats: &[Arc<super::live::SourceStats>],
    reason: &str,
) -> Ended {
    let Writing {
        out,
        annotator,
        error: mut write_error,
        ..
    } = w;
    let files = out.as_ref().map_or(0, |o| o.files_opened);
    let written = out.as_ref().map_or(0, |o| o.frames);
    let current = out
        .as_ref()
        .and_then(|o| o.current_path().map(Path::to_path_buf));
    let writing = out.is_some();
    if let Some(o) = out {
        if write_error.is_none() {
            if let Err(e) = o.finish() {
                write_error = Some(e);
            }
        }
        // Otherwise the failing file was already cut back to its last complete frame.
    }
    if let Some(an) = annotator.as_ref().filter(|a| a.icrc_unreliable()) {
        let (checked, bad) = an.icrc_counts();
        eprintln!(
            "note: ICRC bad on {bad} of {checked} RoCE frames: this capture path does not preserve \
             ICRCs, so after the first {} frames bad ICRCs were not annotated one by one",
            super::annotate::ICRC_SAMPLE
        );
    }
    let mut errors = Vec::new();
    for (n, s) in names.iter().zip(stats) {
        if let Some(e) = s.error() {
            errors.push(format!("{n}: {e}"));
        }
    }
    if !cfg.quiet || write_error.is_some() {
        eprint!(
            "{}",
            final_report(
                names,
                stats,
                writing.then_some((written, files)),
                current.as_deref(),
                reason
            )
        );
    }
    let failure = if let Some(e) = write_error {
        Some(SessionError::write_failed(e, cfg.format, written))
    } else if !errors.is_empty() {
        Some(SessionError::Reading(errors))
    } else {
        None
    };
    Ended {
        code: exit::OK,
        failure,
    }
}
