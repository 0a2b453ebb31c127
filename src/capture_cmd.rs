//! `rocetap capture`: headless live capture to pcap / pcapng, like `tcpdump -w`, with
//! rotation, optional per-packet annotations, and a report of every frame received,
//! written and dropped (by the kernel, the interface, and rocetap's own queue).
//!
//! Order of work: validate arguments and the output path; open every device (the only
//! privileged step; errors name the missing capability or the missing RDMA support); drop
//! privileges; create the output; start the capture threads; write until -c, --duration,
//! SIGINT/SIGTERM or a write error; flush; report. A write error keeps the file valid up
//! to the last complete frame and exits 2; signals exit 0.

use crate::capture::annotate::Annotator;
use crate::capture::live::{Filter, LiveOptions, LiveSource, Merger, OpenError, SourceSpec};
use crate::capture::output::{Output, OutputError, OutputOptions};
use crate::capture::writer::{Format, Interface};
use crate::capture::{privileges, rdma, Frame};
use crate::cli::{CaptureArgs, CaptureFormat};
use crate::error::{exit, Failure};
use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `--headers-only` snaplen: Ethernet (14) + two VLAN tags (8) + IPv6 (40) + UDP (8) +
/// BTH (12) + the longest extended-header chain (XRCETH 4 + AtomicETH 28 = 32) = 114,
/// or 120 for Linux cooked v2; rounded up.
pub const HEADERS_ONLY_SNAPLEN: u32 = 128;
/// Whole frames.
pub const DEFAULT_SNAPLEN: u32 = 262_144;

pub fn run(a: CaptureArgs) -> Result<i32, Failure> {
    session(&a, &mut |_| {})
}

/// The capture loop shared by `capture` and `analyze -i`: opens the devices, drops
/// privileges, writes frames to `a.write` when given, and hands every frame (in
/// timestamp order across devices) to `on_frame`. Stops at `-c` frames, `--duration`,
/// SIGINT/SIGTERM or a write error, and prints the capture report on stderr.
pub fn session(a: &CaptureArgs, on_frame: &mut dyn FnMut(&Frame<'_>)) -> Result<i32, Failure> {
    let snaplen = match (a.headers_only, a.snaplen) {
        (true, _) => HEADERS_ONLY_SNAPLEN,
        (false, 0) => DEFAULT_SNAPLEN,
        (false, n) => n,
    };
    let format = match a.format {
        Some(CaptureFormat::Pcap) => Format::Pcap,
        Some(CaptureFormat::PcapNs) => Format::PcapNs,
        Some(CaptureFormat::Pcapng) => Format::PcapNg,
        None if a
            .write
            .as_ref()
            .and_then(|w| w.extension())
            .is_some_and(|e| e.eq_ignore_ascii_case("pcapng")) =>
        {
            Format::PcapNg
        }
        None => Format::Pcap,
    };
    if a.annotate && format != Format::PcapNg {
        return Err(
            Failure::new("capture: --annotate needs pcapng output (pcap has no comments)")
                .hint("name the file *.pcapng or add --format pcapng"),
        );
    }
    if a.ring.is_some() && a.rotate_mb.is_none() && a.rotate_secs.is_none() {
        return Err(Failure::new("capture: -W needs -C or -G").hint("e.g. -C 100 -W 10"));
    }
    let rotate_bytes = match a.rotate_mb {
        Some(mb) if mb.is_nan() || mb <= 0.0 => {
            return Err(Failure::new(format!(
                "capture: -C {mb}: the size must be more than 0"
            )))
        }
        Some(mb) => Some((mb * 1_000_000.0) as u64),
        None => None,
    };
    if a.rotate_secs == Some(0) {
        return Err(Failure::new(
            "capture: -G 0: the interval must be at least 1 second",
        ));
    }
    let duration = match a.duration {
        Some(d) if d.is_nan() || d <= 0.0 || !d.is_finite() => {
            return Err(Failure::new(format!(
                "capture: --duration {d}: give a positive number of seconds"
            )))
        }
        Some(d) => Some(Duration::from_secs_f64(d)),
        None => None,
    };
    if a.write.as_ref().is_some_and(|w| w.as_os_str() == "-") {
        return Err(Failure::new("capture: -w - (stdout) is not supported")
            .hint("write to a file; rocetap decode/analyze read pcap from stdin with -r -"));
    }
    if let (Some(write), false, None) = (&a.write, a.force, a.rotate_secs) {
        // The first file, and with -C -W every name of the ring.
        let ring = if a.rotate_mb.is_some() {
            a.ring.unwrap_or(1)
        } else {
            1
        };
        for k in 0..ring.max(1) {
            let mut name = write.as_os_str().to_owned();
            if k > 0 {
                name.push(k.to_string());
            }
            let p = std::path::PathBuf::from(name);
            if p.exists() {
                return Err(
                    Failure::new(format!("writing {}: the file exists", p.display()))
                        .hint("add --force to replace it"),
                );
            }
        }
    }

    let filter = if !a.filter.is_empty() {
        Filter::Expr(a.filter.join(" "))
    } else if a.all {
        Filter::All
    } else {
        Filter::Roce { port: a.roce_port }
    };
    let opts = LiveOptions {
        snaplen,
        buffer_bytes: a.buffer_kib.saturating_mul(1024),
        promisc: !a.no_promisc,
        // Throughput over latency, as tcpdump -w: see LiveOptions::immediate.
        immediate: a.immediate,
        filter,
        queue_batches: a.queue.max(1),
        ..LiveOptions::default()
    };
    let specs: Vec<SourceSpec> = a
        .interfaces
        .iter()
        .map(|i| SourceSpec::Device(i.clone()))
        .collect();
    let opened = LiveSource::open(&specs, opts).map_err(|e| explain(e, &a.sysfs_root))?;
    let infos = opened.sources();

    // RDMA devices opened through a libpcap with RDMA support: the sniffer never
    // reports drops.
    let rdma_devs: Vec<&str> = infos
        .iter()
        .filter(|i| rdma::parse_name(&a.sysfs_root, &i.name).is_some())
        .map(|i| i.name.as_str())
        .collect();
    let comment = (!rdma_devs.is_empty())
        .then(|| format!("rocetap: {}: {}", rdma_devs.join(", "), rdma::SNIFFER_NOTE));
    if let Some(c) = &comment {
        eprintln!("note: {}", c.trim_start_matches("rocetap: "));
    }

    privileges::drop_privileges()
        .map_err(|e| Failure::new(format!("capture: dropping privileges: {e}")))?;

    if format != Format::PcapNg {
        if let Some(other) = infos.iter().find(|i| i.link != infos[0].link) {
            return Err(Failure::new(format!(
                "capture: {} ({:?}) and {} ({:?}) have different link types, which pcap cannot hold",
                infos[0].name, infos[0].link, other.name, other.link
            ))
            .hint("write pcapng (a .pcapng file name or --format pcapng)"));
        }
    }
    let ifaces: Vec<Interface> = infos
        .iter()
        .map(|i| Interface {
            link: i.link,
            snaplen,
            name: Some(i.name.clone()),
        })
        .collect();
    let mut out = match &a.write {
        Some(path) => Some(
            Output::create(OutputOptions {
                path: path.clone(),
                format,
                ifaces,
                comment,
                rotate_bytes,
                rotate_secs: a.rotate_secs,
                ring: a.ring,
                force: a.force,
            })
            .map_err(output_failure)?,
        ),
        None => None,
    };

    let stop = Arc::new(AtomicBool::new(false));
    let usr1 = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while stopping ends the process at once.
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone());
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| Failure::new(format!("capture: installing signal handlers: {e}")))?;
    }
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, usr1.clone())
        .map_err(|e| Failure::new(format!("capture: installing signal handlers: {e}")))?;

    let live = opened.start();
    let names: Vec<String> = live.sources().iter().map(|s| s.name.clone()).collect();
    if !a.quiet {
        for s in live.sources() {
            eprintln!(
                "capturing on {} ({:?}), snapshot length {snaplen} bytes, filter: {}",
                s.name,
                s.link,
                s.filter.as_deref().unwrap_or("none")
            );
        }
    }
    let mut merger = Merger::new(names.len());
    let mut annotator = a.annotate.then(Annotator::new);
    let cfg = dissectors::Config {
        roce_port: a.roce_port,
        check_icrc: true,
    };
    let limit = a.count.unwrap_or(u64::MAX);
    let started = Instant::now();
    let mut status = Status::new(!a.quiet && std::io::stderr().is_terminal());
    let mut last_flush = Instant::now();
    let mut write_error: Option<OutputError> = None;
    let reason;

    // Frames handed on (and written, when writing): `-c` counts these.
    let mut handed = 0u64;

    loop {
        if let Some(b) = live.recv_timeout(Duration::from_millis(100)) {
            merger.push(b);
            while let Ok(b) = live.receiver().try_recv() {
                merger.push(b);
            }
        }
        let flow = merger.drain(false, |f| {
            if handed >= limit {
                return ControlFlow::Break(());
            }
            if let Err(e) = deliver(&mut out, &mut annotator, &cfg, on_frame, f) {
                write_error = Some(e);
                return ControlFlow::Break(());
            }
            handed += 1;
            if handed >= limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        if write_error.is_some() {
            reason = "write error";
            break;
        }
        if flow.is_break() || handed >= limit {
            reason = "count reached";
            break;
        }
        if stop.load(Ordering::SeqCst) {
            reason = "signal";
            break;
        }
        if duration.is_some_and(|d| started.elapsed() >= d) {
            reason = "duration reached";
            break;
        }
        if merger.is_done() {
            reason = "all sources ended";
            break;
        }
        if last_flush.elapsed() >= Duration::from_secs(1) {
            last_flush = Instant::now();
            if let Some(Err(e)) = out.as_mut().map(Output::flush) {
                write_error = Some(e);
                reason = "write error";
                break;
            }
        }
        if usr1.swap(false, Ordering::SeqCst) {
            status.clear();
            eprint!("{}", report(&live, &names, out.as_ref()));
        }
        status.update(&live, handed);
    }
    status.clear();
    let stats = live.stats().to_vec();
    let rest = live.finish();
    for b in rest {
        merger.push(b);
    }
    // Everything captured before the stop is handed on (a count limit excepted).
    if write_error.is_none() && handed < limit {
        let _ = merger.drain(true, |f| {
            if let Err(e) = deliver(&mut out, &mut annotator, &cfg, on_frame, f) {
                write_error = Some(e);
                return ControlFlow::Break(());
            }
            handed += 1;
            if handed >= limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
    }
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
            crate::capture::annotate::ICRC_SAMPLE
        );
    }
    let mut errors = Vec::new();
    for (n, s) in names.iter().zip(&stats) {
        if let Some(e) = s.error.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            errors.push(format!("{n}: {e}"));
        }
    }
    if !a.quiet || write_error.is_some() {
        eprint!(
            "{}",
            final_report(
                &names,
                &stats,
                writing.then_some((written, files)),
                current.as_deref(),
                reason
            )
        );
    }
    if let Some(e) = write_error {
        return Err(output_failure(e).hint(format!(
            "the file is valid up to the last complete frame; {written} frames were written in all"
        )));
    }
    if !errors.is_empty() {
        return Err(Failure::new(format!(
            "capture: reading from {}",
            errors.join("; ")
        )));
    }
    Ok(exit::OK)
}

fn output_failure(e: OutputError) -> Failure {
    let name = e.path.display();
    if e.exists {
        Failure::new(format!("writing {name}: the file exists")).hint("add --force to replace it")
    } else if e.error.kind() == std::io::ErrorKind::PermissionDenied {
        Failure::new(format!("writing {name}: {}", e.error)).hint(
            "rocetap drops root (to SUDO_UID under sudo) before creating files: \
             the directory must be writable by that user",
        )
    } else {
        Failure::new(format!("writing {name}: {}", e.error))
    }
}

/// Turns a failure to open a device into one line that says why and what to do.
pub fn explain(e: OpenError, sysfs_root: &Path) -> Failure {
    match e {
        OpenError::File(f) => f,
        OpenError::Filter {
            name,
            filter,
            message,
        } => Failure::new(format!("capture filter {filter:?} on {name}: {message}"))
            .hint("the filter is a BPF expression as tcpdump takes it, e.g. 'udp dst port 4791'"),
        OpenError::Device {
            name,
            message,
            permission,
            no_such_device,
        } => {
            if permission || (privileges::lacks_net_raw() && message.contains("not permitted")) {
                return Failure::new(format!(
                    "capturing on {name}: permission denied: capturing needs the CAP_NET_RAW capability ({message})"
                ))
                .hint(privileges::FIX_HINT);
            }
            if let Some((dev, _port)) = rdma::parse_name(sysfs_root, &name) {
                let netdevs = rdma::device(sysfs_root, &dev)
                    .map(|d| d.netdevs)
                    .unwrap_or_default();
                let nd = if netdevs.is_empty() {
                    String::new()
                } else {
                    format!(
                        "{dev} is the RDMA device of netdev {} (offloaded RoCE bypasses the kernel, so -i {} sees little of it); ",
                        netdevs.join(", "),
                        netdevs[0]
                    )
                };
                return Failure::new(format!(
                    "capturing on {name}: {name} is an RDMA device, and this libpcap cannot capture from RDMA devices: it was built without RDMA sniffer support, as Debian and Ubuntu build it (libpcap: {message})"
                ))
                .hint(format!(
                    "{nd}use a libpcap built with RDMA support (Fedora/RHEL, or build libpcap with rdma-core), the mellanox/tcpdump-rdma container, or: ibdump -d {dev} -w - | rocetap analyze -r -"
                ));
            }
            if no_such_device {
                return Failure::new(format!("capturing on {name}: no such device"))
                    .hint("rocetap interfaces lists the devices to capture from");
            }
            Failure::new(format!("capturing on {name}: {message}"))
        }
    }
}

struct Counts {
    received: u64,
    queue_dropped: u64,
    kernel: u64,
    iface: u64,
    filter_received: u64,
}

fn counts(stats: &[Arc<crate::capture::live::SourceStats>]) -> Vec<Counts> {
    stats
        .iter()
        .map(|s| {
            let p = s
                .pcap
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_default();
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

fn report(live: &LiveSource, names: &[String], out: Option<&Output>) -> String {
    final_report(
        names,
        live.stats(),
        out.map(|o| (o.frames, o.files_opened)),
        out.and_then(Output::current_path),
        "running",
    )
}

/// Writes one frame (when writing, with its annotation) and hands it to `on_frame`.
fn deliver(
    out: &mut Option<Output>,
    annotator: &mut Option<Annotator>,
    cfg: &dissectors::Config,
    on_frame: &mut dyn FnMut(&Frame<'_>),
    f: &Frame<'_>,
) -> Result<(), OutputError> {
    if let Some(out) = out.as_mut() {
        let comment = match annotator.as_mut() {
            Some(an) => {
                let d = dissectors::decode(f.link, f.data, f.orig_len, cfg);
                an.comment(&d)
            }
            None => None,
        };
        out.write(f.ts_ns, f.source, f.data, f.orig_len, comment)?;
    }
    on_frame(f);
    Ok(())
}

/// The report printed on exit and on SIGUSR1 (tcpdump-like lines, per device when there
/// are several).
fn final_report(
    names: &[String],
    stats: &[Arc<crate::capture::live::SourceStats>],
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
struct Status {
    enabled: bool,
    last: Instant,
    last_received: u64,
    shown: bool,
}

impl Status {
    fn new(enabled: bool) -> Self {
        Status {
            enabled,
            last: Instant::now(),
            last_received: 0,
            shown: false,
        }
    }

    fn update(&mut self, live: &LiveSource, handed: u64) {
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

    fn clear(&mut self) {
        if self.shown {
            eprint!("\r{:60}\r", "");
            self.shown = false;
        }
    }
}
