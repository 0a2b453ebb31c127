//! The counters of a live capture, worded the way tcpdump words them: frames received,
//! written, and dropped by the kernel, the interface and rocetap's own queue — on exit,
//! on SIGUSR1, and as a one-line status on a terminal.

use super::live::{LiveSource, SourceStats};
use super::output::Output;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Counts {
    received: u64,
    queue_dropped: u64,
    kernel: u64,
    iface: u64,
    filter_received: u64,
}

fn counts(stats: &[Arc<SourceStats>]) -> Vec<Counts> {
    stats
        .iter()
        .map(|s| {
            let p = s.pcap_stats().unwrap_or_default();
            Counts {
                received: s.received.load(Ordering::Relaxed),
                queue_dropped: s.queue_dropped.load(Ordering::Relaxed),
                kernel: p.kernel_dropped,
                iface: p.if_dropped,
                filter_received: p.received,
            }
        })
        .collect()
}

/// The report on SIGUSR1, while the capture runs.
pub fn running_report(live: &LiveSource, names: &[String], out: Option<&Output>) -> String {
    final_report(
        names,
        live.stats(),
        out.map(|o| (o.frames, o.files_opened)),
        out.and_then(Output::current_path),
        "running",
    )
}

/// The report printed on exit (tcpdump-like lines, per device when there are several):
/// `written` is (frames, files) when writing, `reason` why the capture stopped.
pub fn final_report(
    names: &[String],
    stats: &[Arc<SourceStats>],
    written: Option<(u64, u64)>,
    current: Option<&Path>,
    reason: &str,
) -> String {
    use std::fmt::Write as _;
    let c = counts(stats);
    let sum = |f: fn(&Counts) -> u64| c.iter().map(f).sum::<u64>();
    let mut s = String::new();
    let _ = writeln!(s, "capture {reason}: {}", names.join(", "));
    let _ = writeln!(s, "{} packets captured", sum(|c| c.received));
    if let Some((written, files)) = written {
        let _ = writeln!(
            s,
            "{written} packets written to {files} file{}{}",
            if files == 1 { "" } else { "s" },
            current.map_or(String::new(), |p| format!(" (last: {})", p.display()))
        );
    }
    let _ = writeln!(
        s,
        "{} packets received by filter",
        sum(|c| c.filter_received)
    );
    let _ = writeln!(s, "{} packets dropped by kernel", sum(|c| c.kernel));
    let _ = writeln!(s, "{} packets dropped by interface", sum(|c| c.iface));
    let _ = writeln!(
        s,
        "{} packets dropped by rocetap (queue full)",
        sum(|c| c.queue_dropped)
    );
    if names.len() > 1 {
        for (n, c) in names.iter().zip(&c) {
            let _ = writeln!(
                s,
                "  {n}: {} captured, {} received by filter, dropped: {} kernel, {} interface, {} rocetap",
                c.received, c.filter_received, c.kernel, c.iface, c.queue_dropped
            );
        }
    }
    s
}

/// The one-line live status on a terminal.
pub struct Status {
    enabled: bool,
    last: Instant,
    last_received: u64,
    shown: bool,
}

impl Status {
    /// A status line, shown only when `enabled`.
    pub fn new(enabled: bool) -> Self {
        Status {
            enabled,
            last: Instant::now(),
            last_received: 0,
            shown: false,
        }
    }

    /// Redraws the line (at most once a second); `handed` frames were kept.
    pub fn update(&mut self, live: &LiveSource, handed: u64) {
        if !self.enabled || self.last.elapsed() < Duration::from_secs(1) {
            return;
        }
        let c = counts(live.stats());
        let received: u64 = c.iter().map(|c| c.received).sum();
        let drops: u64 = c.iter().map(|c| c.kernel + c.iface + c.queue_dropped).sum();
        let rate = (received - self.last_received) as f64 / self.last.elapsed().as_secs_f64();
        self.last = Instant::now();
        self.last_received = received;
        self.shown = true;
        eprint!("\r{received} packets ({rate:.0}/s), {handed} kept, {drops} dropped   ");
    }

    /// Erases the line, if shown.
    pub fn clear(&mut self) {
        if self.shown {
            eprint!("\r{:60}\r", "");
            self.shown = false;
        }
    }
}
