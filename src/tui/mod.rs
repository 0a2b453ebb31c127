//! `rocetap top`: the interactive terminal UI over a replayed file or a live capture.
//!
//! Threads: a feeder ([`feed`]) reads, decodes and analyzes, and sends snapshots a few
//! times a second over a bounded channel; this thread owns the terminal, turns keys into
//! [`app::Action`]s, applies them to the [`app::App`] and redraws at most every
//! [`REDRAW_EVERY`] (and only when something changed). It never waits on the capture.
//!
//! The terminal is put back on every exit path: normal quit and errors through
//! `Restore`'s `Drop`, the signals of [`STOP_SIGNALS`] by ending the UI as `q` does,
//! panics through the hook ratatui installs in `try_init` (it disables raw mode and
//! leaves the alternate screen, then prints the panic).
//! Everything that can fail with a one-line error (arguments, files, devices,
//! privileges) is checked before the screen is taken over.
#![warn(missing_docs)]

pub mod app;
mod error;
pub mod feed;
pub mod keys;
pub mod render;

use crate::capture::live::{Filter, LiveOptions, LiveSource};
use crate::capture::privileges;
use crate::error::exit;
use app::{Action, App, Effect, Mode};
use crossterm::event::{self, Event};
pub use error::Error;
use feed::Control;
pub use feed::Speed;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// The UI redraws at most this often.
pub const REDRAW_EVERY: Duration = Duration::from_millis(100);

/// The signals that end the UI like `q` (the terminal put back, exit 0).
pub const STOP_SIGNALS: [i32; 4] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
    signal_hook::consts::SIGQUIT,
];

/// Puts the terminal back when dropped.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// What `top` shows (checked by the command: files or devices, not both, not stdin).
#[derive(Clone, Debug)]
pub struct Config {
    /// Capture files to replay, merged.
    pub files: Vec<PathBuf>,
    /// Devices to capture from live (when no files).
    pub devices: Vec<String>,
    /// Replay speed.
    pub speed: Speed,
    /// The UDP destination port of RoCE v2.
    pub roce_port: u16,
    /// Put live devices into promiscuous mode.
    pub promisc: bool,
    /// Where sysfs is (RDMA devices and their hw_counters).
    pub sysfs_root: PathBuf,
    /// The kernel's QP tables (`--qp-table`), read by the command.
    pub qp_table: Vec<crate::qptable::QpEntry>,
    /// `--tap`: the merged analysis of the taps (computed by the command before the
    /// screen is taken; `files` is then the first tap's capture) and the first tap's
    /// mirror session, whose frames alone are replayed.
    pub taps: Option<(crate::taps::Report, Option<crate::taps::Select>)>,
    /// `-i` with `--filter`: this BPF expression instead of the RoCE default (a mirror
    /// collector's GRE / VXLAN traffic, which the default drops).
    pub filter: Option<String>,
}

/// Runs the UI until the user quits; returns the exit code.
pub fn run(a: Config) -> Result<i32, Error> {
    let files = a.files.clone();
    let speed = a.speed;
    let dcfg = dissectors::Config {
        roce_port: a.roce_port,
        check_icrc: true,
    };
    let dir = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let (tx, rx) = mpsc::sync_channel::<Action>(4);
    let (ctl_tx, ctl_rx) = mpsc::channel::<Control>();
    let (mode, source, thread) = if files.is_empty() {
        let opts = LiveOptions {
            promisc: a.promisc,
            filter: match &a.filter {
                Some(e) => Filter::Expr(e.clone()),
                None => Filter::RoceAndMirrors { port: a.roce_port },
            },
            ..LiveOptions::default()
        };
        let opened = LiveSource::open(&a.devices, opts)
            .map_err(|e| crate::capture::session::explain(e, &a.sysfs_root))?;
        privileges::drop_privileges().map_err(Error::Privileges)?;
        need_terminal()?;
        let live = opened.start();
        let names: Vec<String> = live.sources().iter().map(|s| s.name.clone()).collect();
        let hw = feed::HwReader::new(&a.sysfs_root, &names);
        let t = std::thread::Builder::new()
            .name("top-live".into())
            .spawn(move || feed::live(live, hw, dcfg, dir, tx, ctl_rx))
            .map_err(|error| Error::Thread {
                what: "capture thread",
                error,
            })?;
        (Mode::Live, format!("live {}", names.join(", ")), t)
    } else {
        for p in &files {
            // One-line errors for unreadable inputs before the screen is taken.
            crate::capture::input::open(p)?;
        }
        need_terminal()?;
        let names: Vec<String> = files
            .iter()
            .map(|p| {
                p.file_name()
                    .map_or(p.display().to_string(), |n| n.to_string_lossy().into())
            })
            .collect();
        let sp = match speed {
            Speed::Max => "max".to_string(),
            Speed::Factor(x) if (0.001..1e6).contains(&x) => format!("x{x}"),
            Speed::Factor(x) => format!("x{x:e}"),
        };
        let fl = files.clone();
        let select = a.taps.as_ref().and_then(|t| t.1);
        let t = std::thread::Builder::new()
            .name("top-replay".into())
            .spawn(move || feed::replay(fl, select, speed, dcfg, dir, tx, ctl_rx))
            .map_err(|error| Error::Thread {
                what: "replay thread",
                error,
            })?;
        let what = match &a.taps {
            Some((r, _)) => format!("taps {}", crate::report::taps::tap_names(r)),
            None => names.join(", "),
        };
        (Mode::Replay, format!("replay {what} {sp}"), t)
    };
    // SIGTERM, SIGHUP (a closed terminal), and SIGINT / SIGQUIT sent from outside
    // (Ctrl-C and Ctrl-\ are keys in raw mode) end the UI like `q`, so the terminal is
    // put back: their default action would leave it raw and on the alternate screen.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in STOP_SIGNALS {
        signal_hook::flag::register(sig, stop.clone()).map_err(Error::Signals)?;
    }
    let done = Arc::new(AtomicBool::new(false));
    watch_stop(stop.clone(), done.clone())?;
    let mut app = App::new(source, mode);
    app.qp_table = a.qp_table.clone();
    app.taps = a.taps.map(|t| Arc::new(t.0));
    let res = ui(&mut app, &rx, &ctl_tx, &stop);
    done.store(true, Ordering::Relaxed);
    let _ = ctl_tx.send(Control::Quit);
    drop(rx);
    let _ = thread.join();
    res.map(|()| exit::OK)
}

/// Makes sure a signal, or a terminal that went away, ends the process. The UI checks
/// `stop` between polls, but on a terminal that hung up (its tmux session or ssh
/// connection gone) crossterm's poll can keep returning to a read that fails at once and
/// never hand control back: seen as a `top` spinning at 100% CPU for 40 minutes after its
/// tmux session was killed. So a thread also watches: a hung-up terminal (standard input
/// no longer a terminal) counts as SIGHUP, and one second after `stop` without the UI
/// having returned, the terminal is put back as far as it can be and the process exits
/// as `q` would.
fn watch_stop(stop: Arc<AtomicBool>, done: Arc<AtomicBool>) -> Result<(), Error> {
    std::thread::Builder::new()
        .name("top-stop".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if done.load(Ordering::Relaxed) {
                    return;
                }
                if !std::io::stdin().is_terminal() {
                    stop.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            let deadline = Instant::now() + Duration::from_secs(1);
            while Instant::now() < deadline {
                if done.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            ratatui::restore();
            std::process::exit(exit::OK);
        })
        .map(|_| ())
        .map_err(|error| Error::Thread {
            what: "signal watcher",
            error,
        })
}

/// Checked after the sources open, so a bad file or device is reported as such.
fn need_terminal() -> Result<(), Error> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(Error::NotATerminal);
    }
    Ok(())
}

fn ui(
    app: &mut App,
    rx: &mpsc::Receiver<Action>,
    ctl: &mpsc::Sender<Control>,
    stop: &AtomicBool,
) -> Result<(), Error> {
    let mut term = ratatui::try_init().map_err(Error::OpenTerminal)?;
    let _restore = Restore;
    let fail = Error::Terminal;
    let mut dirty = true;
    let mut last_draw = Instant::now().checked_sub(REDRAW_EVERY).unwrap();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        if dirty && last_draw.elapsed() >= REDRAW_EVERY {
            term.draw(|f| render::render(f, app)).map_err(fail)?;
            last_draw = Instant::now();
            dirty = false;
        }
        let wait = if dirty {
            REDRAW_EVERY.saturating_sub(last_draw.elapsed())
        } else {
            Duration::from_millis(50)
        };
        if event::poll(wait).map_err(fail)? {
            match event::read().map_err(fail)? {
                Event::Key(k) => {
                    if let Some(a) = keys::action(k, app.editing.is_some()) {
                        app.status = None;
                        match app.apply(a) {
                            Effect::None => {}
                            Effect::Quit => return Ok(()),
                            Effect::Pause(p) => {
                                let _ = ctl.send(Control::Pause(p));
                            }
                            Effect::Step => {
                                let _ = ctl.send(Control::Step);
                            }
                            Effect::Write { id, keys } => {
                                let _ = ctl.send(Control::Write { id, keys });
                            }
                        }
                        dirty = true;
                    }
                }
                Event::Resize(..) => dirty = true,
                _ => {}
            }
        }
        loop {
            match rx.try_recv() {
                Ok(a) => {
                    app.apply(a);
                    dirty = true;
                }
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    if !matches!(app.feed, app::FeedState::Ended | app::FeedState::Failed(_)) {
                        return Err(Error::FeederStopped);
                    }
                    break;
                }
            }
        }
    }
}
