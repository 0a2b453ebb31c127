//! `rocetap capture`: the command line turned into a validated [`session::Config`], then
//! the session with a pipeline that decodes and analyzes only for `--annotate`. The
//! checks here are shared with `analyze -i` (which captures the same way).

use crate::cli::{CaptureArgs, CaptureFormat};
use rocetap::analysis::{Analyzer, Config as AnalyzerConfig};
use rocetap::capture::live::Filter;
use rocetap::capture::session;
use rocetap::capture::writer::Format;
use rocetap::config::{DEFAULT_SNAPLEN, HEADERS_ONLY_SNAPLEN};
use rocetap::error::Failure;
use rocetap::pipeline::{Pipeline, Stage};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub fn run(a: CaptureArgs) -> Result<i32, Failure> {
    let cfg = config(&a)?;
    let dcfg = dissectors::Config {
        roce_port: a.roce_port,
        check_icrc: true,
    };
    // Without annotations nothing needs decoding: frames go straight to the file.
    let stop = (!cfg.annotate).then_some(Stage::Read);
    let mut p = Pipeline::new(dcfg, Analyzer::new(AnalyzerConfig::default())).stop_after(stop);
    Ok(session::run(&cfg, &mut p)?)
}

/// The session `capture`'s arguments ask for, or the one-line reason they make no sense.
pub fn config(a: &CaptureArgs) -> Result<session::Config, Failure> {
    let snaplen = match (a.headers_only, a.snaplen) {
        (true, _) => HEADERS_ONLY_SNAPLEN,
        (false, n) => snaplen(n),
    };
    let format = file_format(a.format, a.write.as_deref());
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
    let duration = duration(a.duration)?;
    let ring = if a.rotate_mb.is_some() { a.ring } else { None };
    check_output(a.write.as_deref(), a.force, a.rotate_secs, ring)?;
    let filter = if !a.filter.is_empty() {
        Filter::Expr(a.filter.join(" "))
    } else if a.all {
        Filter::All
    } else {
        Filter::RoceAndMirrors { port: a.roce_port }
    };
    let sysfs_root = rocetap::config::sysfs_dir(&a.sysfs_root);
    if a.lanes > 1 {
        if let Some(i) = a
            .interfaces
            .iter()
            .find(|i| rocetap::capture::rdma::parse_name(&sysfs_root, i).is_some())
        {
            return Err(Failure::new(format!(
                "capture: --lanes {}: {i} is an RDMA device, read through libpcap's RDMA \
                 sniffer, which has no AF_PACKET socket to split",
                a.lanes
            ))
            .hint("capture its netdev in lanes, or leave out --lanes"));
        }
    }
    let mut cfg = session::Config::new(a.interfaces.clone());
    cfg.live.lanes = a.lanes;
    cfg.live.roce_port = a.roce_port;
    cfg.live.snaplen = snaplen;
    cfg.live.buffer_bytes = a.buffer_kib.saturating_mul(1024);
    cfg.live.promisc = !a.no_promisc;
    // Throughput over latency, as tcpdump -w: see LiveOptions::immediate.
    cfg.live.immediate = a.immediate;
    cfg.live.filter = filter;
    cfg.live.queue_batches = a.queue.max(1);
    cfg.write = a.write.clone();
    cfg.format = format;
    cfg.rotate_bytes = rotate_bytes;
    cfg.rotate_secs = a.rotate_secs;
    cfg.ring = a.ring;
    cfg.force = a.force;
    cfg.annotate = a.annotate;
    cfg.count = a.count;
    cfg.duration = duration;
    cfg.quiet = a.quiet;
    cfg.sysfs_root = sysfs_root;
    Ok(cfg)
}

/// `-s N`: 0 means whole frames.
pub fn snaplen(n: u32) -> u32 {
    if n == 0 {
        DEFAULT_SNAPLEN
    } else {
        n
    }
}

/// `--format`, or by default pcapng when the file name ends in `.pcapng`, else pcap.
pub fn file_format(f: Option<CaptureFormat>, write: Option<&Path>) -> Format {
    match f {
        Some(CaptureFormat::Pcap) => Format::Pcap,
        Some(CaptureFormat::PcapNs) => Format::PcapNs,
        Some(CaptureFormat::Pcapng) => Format::PcapNg,
        None if write
            .and_then(Path::extension)
            .is_some_and(|e| e.eq_ignore_ascii_case("pcapng")) =>
        {
            Format::PcapNg
        }
        None => Format::Pcap,
    }
}

/// `--duration SECONDS`: a positive, finite number.
pub fn duration(d: Option<f64>) -> Result<Option<Duration>, Failure> {
    match d {
        Some(d) if d.is_nan() || d <= 0.0 || !d.is_finite() => Err(Failure::new(format!(
            "capture: --duration {d}: give a positive number of seconds"
        ))),
        Some(d) => Ok(Some(Duration::from_secs_f64(d))),
        None => Ok(None),
    }
}

/// `-w FILE`: not stdout, and (unless `--force`) no file of the run exists yet: the first
/// one, and with `-C -W N` (`ring`) every name of the ring. `-G` names are not known yet.
pub fn check_output(
    write: Option<&Path>,
    force: bool,
    rotate_secs: Option<u64>,
    ring: Option<u32>,
) -> Result<(), Failure> {
    if write.is_some_and(|w| w.as_os_str() == "-") {
        return Err(Failure::new("capture: -w - (stdout) is not supported")
            .hint("write to a file; rocetap decode/analyze read pcap from stdin with -r -"));
    }
    if let (Some(write), false, None) = (write, force, rotate_secs) {
        for k in 0..ring.unwrap_or(1).max(1) {
            let mut name = write.as_os_str().to_owned();
            if k > 0 {
                name.push(k.to_string());
            }
            let p = PathBuf::from(name);
            if p.exists() {
                return Err(
                    Failure::new(format!("writing {}: the file exists", p.display()))
                        .hint("add --force to replace it"),
                );
            }
        }
    }
    Ok(())
}
