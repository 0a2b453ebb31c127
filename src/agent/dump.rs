//! Reading the flight recorder back: the last N seconds of every source, merged in time
//! order and analyzed afresh, written as an annotated pcapng next to its analysis JSON
//! (`rocetap analyze` of the pcapng gives the same numbers), or served as `/report`.
//!
//! A dump is written to `*.part` files first and renamed only once complete, so a full
//! disk, a kill or SIGTERM never leaves a half-written dump under a dump's name; the
//! oldest dumps beyond `keep` are removed.
//!
//! Dumps are private: the directory is made 0700 (an existing one with wider permissions
//! is tightened; one of another user is refused at start), and every file, `.part` files
//! too, is created 0600 whatever the umask.

use super::recorder::Recorder;
use crate::analysis::{self, Analyzer, Report};
use crate::capture::annotate::Annotator;
use crate::capture::writer::{Format, Interface, Writer};
use crate::capture::Frame;
use crate::config::OutputFormat;
use crate::pipeline::{NoSink, Pipeline, Sink};
use crate::qptable::{match_flows, FlowRef, QpEntry};
use crate::report::analyze::{write_report, Input, Look};
use dissectors::{Decoded, LinkType};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// One source's recorder with what a reader needs to know of it.
pub struct Recorded<'a> {
    /// The device or netdev.
    pub name: &'a str,
    /// Which lane of it, when it is read in lanes (`eth0 lane 1/2`): the pcapng
    /// interface's description.
    pub lane: Option<String>,
    /// Its link type.
    pub link: LinkType,
    /// Its snapshot length.
    pub snaplen: u32,
    /// Its frames.
    pub rec: &'a Recorder,
}

/// How frames are decoded and analyzed when read back.
#[derive(Clone, Copy, Debug)]
pub struct Analysis {
    /// Decoder settings.
    pub decode: dissectors::Config,
    /// Analyzer settings.
    pub analyzer: analysis::Config,
}

/// Feeds the frames of every source from `from_ns` on, in time order, through a fresh
/// pipeline and `sink`; returns the pipeline.
fn replay<S: Sink>(srcs: &[Recorded<'_>], from_ns: u64, a: Analysis, sink: &mut S) -> Pipeline {
    let mut p = Pipeline::new(a.decode, Analyzer::new(a.analyzer));
    p.name_sources(srcs.iter().map(|s| s.name.to_string()));
    let mut all: Vec<(u64, u32, super::recorder::Recorded<'_>)> = Vec::new();
    // Room for exactly the frames: no doubling (the memory budget counts one entry each).
    all.reserve_exact(srcs.iter().map(|s| s.rec.since(from_ns).count()).sum());
    for (i, s) in srcs.iter().enumerate() {
        all.extend(s.rec.since(from_ns).map(|r| (r.ts_ns, i as u32, r)));
    }
    // Stable: frames of one source with equal timestamps keep their order.
    all.sort_by_key(|(ts, src, _)| (*ts, *src));
    for (_, src, r) in all {
        let f = Frame {
            ts_ns: r.ts_ns,
            link: srcs[src as usize].link,
            data: r.data,
            orig_len: r.orig_len,
            iface: 0,
            source: src,
        };
        if p.feed(&f, sink).is_break() {
            break;
        }
    }
    p
}

/// The analysis of the frames from `from_ns` on, and what was read (with the flows of
/// `qp` matched to the kernel's QPs when a table is given).
pub fn analyze(
    srcs: &[Recorded<'_>],
    from_ns: u64,
    a: Analysis,
    qp: Option<&[QpEntry]>,
) -> (Report, Input) {
    finish(replay(srcs, from_ns, a, &mut NoSink), srcs, qp)
}

/// Ends a replay: the report, and what was read with the flows matched to the kernel's
/// QPs (`analyze --qp-table`) when `qp` is given.
fn finish(p: Pipeline, srcs: &[Recorded<'_>], qp: Option<&[QpEntry]>) -> (Report, Input) {
    let mut files: Vec<String> = srcs.iter().map(|s| s.name.to_string()).collect();
    // An interface read in lanes is one input.
    files.dedup();
    let mut input = Input {
        files,
        frames: p.frames(),
        bytes: p.bytes(),
        cut_short: Vec::new(),
        qp_table: None,
    };
    let report = p.finish();
    if let Some(t) = qp {
        input.qp_table = Some(match_flows(&FlowRef::of(&report.flows), t));
    }
    (report, input)
}

/// The analysis as the `analyze --format json` document.
pub fn report_json(report: &Report, input: &Input) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into memory cannot fail.
    let _ = write_report(
        &mut out,
        OutputFormat::Json,
        false,
        Look::default(),
        input,
        report,
        &[],
    );
    out
}

struct Annotating<W: Write> {
    w: Writer<W>,
    ann: Annotator,
    err: Option<io::Error>,
}

impl<W: Write> Sink for Annotating<W> {
    fn after(&mut self, f: &Frame<'_>, d: Option<&Decoded>, an: &Analyzer) -> ControlFlow<()> {
        let c = d.and_then(|d| self.ann.comment(d, an));
        match self.w.write(f.ts_ns, f.source, f.data, f.orig_len, c) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                self.err = Some(e);
                ControlFlow::Break(())
            }
        }
    }
}

/// A dump written.
#[derive(Clone, Debug)]
pub struct Written {
    /// The annotated pcapng.
    pub pcapng: PathBuf,
    /// Its analysis (`rocetap.analyze/1` JSON).
    pub json: PathBuf,
    /// Frames in it.
    pub frames: u64,
    /// NAKs of every code in it (for the log line).
    pub naks: u64,
}

/// Writes the frames from `from_ns` on into `dir` as `rocetap-<time>-<reason>.pcapng` and
/// `.json`, then removes the oldest dumps beyond `keep`. On error nothing is left but the
/// complete dumps of before.
pub fn write(
    dir: &Path,
    srcs: &[Recorded<'_>],
    from_ns: u64,
    a: Analysis,
    reason: &str,
    keep: usize,
    qp: Option<&[QpEntry]>,
) -> io::Result<Written> {
    let stamp = super::log::rfc3339(SystemTime::now()).replace(':', "");
    let base = format!("rocetap-{stamp}-{reason}");
    let pcapng = dir.join(format!("{base}.pcapng"));
    let json = dir.join(format!("{base}.json"));
    let part_p = dir.join(format!(".{base}.pcapng.part"));
    let part_j = dir.join(format!(".{base}.json.part"));
    let res = write_parts(&part_p, &part_j, (srcs, from_ns, a), reason, qp);
    match res {
        Ok((frames, naks)) => {
            std::fs::rename(&part_p, &pcapng)
                .and_then(|()| std::fs::rename(&part_j, &json))
                .inspect_err(|_| {
                    let _ = std::fs::remove_file(&part_p);
                    let _ = std::fs::remove_file(&part_j);
                    let _ = std::fs::remove_file(&pcapng);
                })?;
            prune(dir, keep);
            Ok(Written {
                pcapng,
                json,
                frames,
                naks,
            })
        }
        Err(e) => {
            let _ = std::fs::remove_file(&part_p);
            let _ = std::fs::remove_file(&part_j);
            Err(e)
        }
    }
}

fn write_parts(
    part_p: &Path,
    part_j: &Path,
    (srcs, from_ns, a): (&[Recorded<'_>], u64, Analysis),
    reason: &str,
    qp: Option<&[QpEntry]>,
) -> io::Result<(u64, u64)> {
    let ifaces: Vec<Interface> = srcs
        .iter()
        .map(|s| Interface {
            link: s.link,
            snaplen: s.snaplen,
            name: Some(s.name.to_string()),
            description: s.lane.clone(),
        })
        .collect();
    let comment = format!("rocetap agent flight recorder, dumped on {reason}");
    let file = BufWriter::new(private_file(part_p)?);
    let w = Writer::with_comment(file, Format::PcapNg, &ifaces, Some(&comment))?;
    let mut sink = Annotating {
        w,
        ann: Annotator::new(),
        err: None,
    };
    let p = replay(srcs, from_ns, a, &mut sink);
    if let Some(e) = sink.err {
        return Err(e);
    }
    let file = sink.w.into_inner()?;
    file.into_inner()
        .map_err(std::io::IntoInnerError::into_error)?
        .sync_all()?;
    let (report, input) = finish(p, srcs, qp);
    let frames = input.frames;
    let mut j = private_file(part_j)?;
    j.write_all(&report_json(&report, &input))?;
    j.sync_all()?;
    Ok((frames, report.totals.naks()))
}

/// Removes the oldest complete dumps (by name, which starts with the time) beyond `keep`,
/// and leftover `.part` files of an earlier run.
fn prune(dir: &Path, keep: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut dumps: Vec<String> = Vec::new();
    for e in rd.flatten() {
        let Some(n) = e.file_name().to_str().map(String::from) else {
            continue;
        };
        if n.starts_with("rocetap-") && n.ends_with(".pcapng") {
            dumps.push(n.trim_end_matches(".pcapng").to_string());
        }
    }
    dumps.sort();
    let extra = dumps.len().saturating_sub(keep);
    for base in &dumps[..extra] {
        let _ = std::fs::remove_file(dir.join(format!("{base}.pcapng")));
        let _ = std::fs::remove_file(dir.join(format!("{base}.json")));
    }
}

/// Removes `.part` files a killed run left in `dir` (at start).
pub fn clean_parts(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let n = e.file_name();
            let n = n.to_string_lossy();
            if n.starts_with(".rocetap-") && n.ends_with(".part") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Creates (or truncates) `path` readable and writable by the agent alone (0600, set
/// after creation, so the umask does not matter).
pub fn private_file(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(f)
}

/// Makes `dir` (and any missing parent) a directory only the agent reads: created 0700,
/// or tightened to 0700 when it exists with wider permissions. An error when it is not a
/// directory or belongs to another user (once its privileges are dropped the agent could
/// not write there).
pub fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other("not a directory"));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(io::Error::other(format!(
            "owned by uid {}, not by the agent's uid {me}",
            meta.uid()
        )));
    }
    if meta.permissions().mode() & 0o777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| {
            io::Error::other(format!(
                "has mode {:o} and cannot be made 0700: {e}",
                meta.permissions().mode() & 0o7777
            ))
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn dump_directories_and_files_are_private() {
        let base = std::env::temp_dir().join(format!("rocetap-private-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        // Created 0700, parents too.
        let d = base.join("a/dumps");
        private_dir(&d).unwrap();
        assert_eq!(mode(&d), 0o700);
        assert_eq!(mode(&base.join("a")), 0o700);
        // An existing, wider one is tightened.
        let w = base.join("wide");
        std::fs::create_dir(&w).unwrap();
        std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&w).unwrap();
        assert_eq!(mode(&w), 0o700);
        // Files: 0600 even when one was there with wider permissions.
        let f = w.join("x.part");
        std::fs::write(&f, b"old").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
        let mut h = private_file(&f).unwrap();
        h.write_all(b"new").unwrap();
        assert_eq!(mode(&f), 0o600);
        assert_eq!(std::fs::read(&f).unwrap(), b"new");
        // Not through a symbolic link, and not a file as the directory.
        let l = w.join("link");
        std::os::unix::fs::symlink(&f, &l).unwrap();
        assert!(private_file(&l).is_err());
        assert!(private_dir(&f).is_err());
        // Another user's directory is refused (as root, which can make one).
        if nix::unistd::geteuid().is_root() {
            let o = base.join("theirs");
            std::fs::create_dir(&o).unwrap();
            std::os::unix::fs::chown(&o, Some(65534), Some(65534)).unwrap();
            let e = private_dir(&o).unwrap_err().to_string();
            assert!(e.contains("owned by uid 65534"), "{e}");
        }
        std::fs::remove_dir_all(&base).unwrap();
    }
}
