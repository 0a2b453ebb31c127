//! Capture files as inputs: opening them by name (`-` is stdin), reading one or several
//! (merged in timestamp order) frame by frame, saying which were cut short, and showing
//! progress on stderr for long reads when stderr is a terminal.
//!
//! A command that analyzes what it read can make SIGINT and SIGTERM end the reading
//! instead of the process ([`stop_on_signals`]), as tshark does: every input then ends
//! where it is — a pipe or FIFO whose writer keeps it open within 200 ms, a file at its
//! next read — and what was read is analyzed; [`stopped`] says that it happened. A
//! second signal ends the process at once (exit 130).

use super::file::{for_each_frame, ReadError, Reader};
use super::merge::{Batch, Merger};
use super::Frame;
use std::fmt;
use std::fs::File;
use std::io::{self, IsTerminal, Read};
use std::ops::ControlFlow;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Set by SIGINT / SIGTERM once [`stop_on_signals`] ran.
static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

fn stop_flag() -> &'static Arc<AtomicBool> {
    STOP.get_or_init(Default::default)
}

/// Makes SIGINT and SIGTERM end the reading of every input (see the module docs); a
/// second one ends the process at once (exit 130).
pub fn stop_on_signals() -> io::Result<()> {
    let stop = stop_flag();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())?;
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(())
}

/// True when a signal ended the reading ([`stop_on_signals`]).
pub fn stopped() -> bool {
    STOP.get().is_some_and(|s| s.load(Ordering::Relaxed))
}

/// How often a blocked pipe or FIFO looks at the stop flag.
const STOP_POLL_MS: u16 = 200;

/// An input that ends (reads 0 bytes) once [`stopped`]: a regular file at its next read,
/// anything else (pipe, FIFO, terminal, socket) within [`STOP_POLL_MS`] even while its
/// writer sends nothing.
struct Stoppable<R> {
    inner: R,
    /// Not a regular file: wait in poll(2), not in read(2).
    waits: bool,
}

impl<R: Read + AsFd> Read for Stoppable<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use nix::poll::{poll, PollFd, PollFlags};
        loop {
            if stopped() {
                return Ok(0);
            }
            if !self.waits {
                return self.inner.read(buf);
            }
            let mut fds = [PollFd::new(self.inner.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, STOP_POLL_MS) {
                // Readable, at its end, or in error: read(2) says which.
                Ok(n) if n > 0 => return self.inner.read(buf),
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// An opened input.
pub struct Opened {
    /// The bytes.
    pub reader: Box<dyn Read + Send>,
    /// Name for messages ("stdin" for `-`).
    pub name: String,
    /// Size in bytes, when known.
    pub size: Option<u64>,
}

/// Opens a capture for reading (`-` is standard input).
pub fn open(path: &Path) -> Result<Opened, InputError> {
    if path.as_os_str() == "-" {
        let stdin = io::stdin();
        let waits =
            !File::from(
                stdin
                    .as_fd()
                    .try_clone_to_owned()
                    .map_err(|error| InputError::Open {
                        name: "stdin".to_string(),
                        error,
                    })?,
            )
            .metadata()
            .is_ok_and(|m| m.is_file());
        return Ok(Opened {
            reader: Box::new(Stoppable {
                inner: stdin,
                waits,
            }),
            name: "stdin".to_string(),
            size: None,
        });
    }
    let name = path.display().to_string();
    let f = File::open(path).map_err(|error| InputError::Open {
        name: name.clone(),
        error,
    })?;
    let meta = f.metadata().map_err(|error| InputError::Open {
        name: name.clone(),
        error,
    })?;
    if meta.is_dir() {
        return Err(InputError::Directory { name });
    }
    Ok(Opened {
        reader: Box::new(Stoppable {
            inner: f,
            waits: !meta.is_file(),
        }),
        name,
        size: Some(meta.len()),
    })
}

/// A progress line on stderr, only when stderr is a terminal; checks the clock once
/// every 64Ki frames so it costs nothing per frame.
pub struct Progress {
    enabled: bool,
    name: String,
    size: Option<u64>,
    frames: u64,
    bytes: u64,
    start: Instant,
    last: Instant,
    shown: bool,
}

impl Progress {
    /// Progress of reading `name` (of `size` bytes when known); off when `quiet`.
    pub fn new(name: &str, size: Option<u64>, quiet: bool) -> Self {
        let now = Instant::now();
        Progress {
            enabled: !quiet && io::stderr().is_terminal(),
            // Shown on the terminal: escaped once here.
            name: crate::escape::term(name).into_owned(),
            size,
            frames: 0,
            bytes: 0,
            start: now,
            last: now,
            shown: false,
        }
    }

    /// Counts one frame of `frame_bytes` bytes.
    #[inline]
    pub fn tick(&mut self, frame_bytes: usize) {
        if !self.enabled {
            return;
        }
        self.frames += 1;
        self.bytes += frame_bytes as u64 + 16;
        if self.frames & 0xffff == 0 {
            let now = Instant::now();
            if now.duration_since(self.last) >= Duration::from_millis(500) {
                self.last = now;
                self.shown = true;
                let rate = self.frames as f64 / now.duration_since(self.start).as_secs_f64();
                match self.size {
                    Some(s) if s > 0 => eprint!(
                        "\r{}: {} frames, {:.0}% ({:.0} frames/s)   ",
                        self.name,
                        self.frames,
                        (self.bytes as f64 * 100.0 / s as f64).min(100.0),
                        rate
                    ),
                    _ => eprint!(
                        "\r{}: {} frames ({:.0} frames/s)   ",
                        self.name, self.frames, rate
                    ),
                }
            }
        }
    }

    /// Ends the progress line, if one was shown.
    pub fn done(&mut self) {
        if self.shown {
            eprintln!(
                "\r{}: {} frames done.                         ",
                self.name, self.frames
            );
            self.shown = false;
        }
    }
}

/// An input that ended in the middle of a record (a capture killed mid-write, a full
/// disk, a partial copy): every complete frame before the cut was delivered.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CutShort {
    /// The input's name for messages ("stdin" for `-`).
    pub file: String,
    /// Complete frames read from it.
    pub frames: u64,
}

impl CutShort {
    /// The one-line warning for stderr, the file name escaped for the terminal.
    pub fn warning(&self) -> String {
        format!(
            "rocetap: warning: {} was cut short: it ends in the middle of a record after {} complete frames (every complete frame was read)",
            crate::escape::term(&self.file),
            self.frames
        )
    }
}

/// Frames a file source reads ahead into one batch when several inputs are merged.
const FILE_BATCH: usize = 256;

/// Reads every frame of every input, merged in timestamp order when there are several
/// (ties keep the order of the inputs), and hands each to `f`; `frame.source` says which
/// input it came from. One input is read without copying; several go through the one
/// [`Merger`], each filled in this thread a batch at a time whenever its queue runs dry
/// (so a file waits for nobody and loses nothing). An input cut short in the middle of a
/// record ends there and is listed in the result (like tshark, every complete frame
/// counts); any other damage stops the run with an error naming the input, after every
/// frame before the damage was delivered.
pub fn for_each_frame_of<F>(
    paths: &[std::path::PathBuf],
    quiet: bool,
    mut f: F,
) -> Result<Vec<CutShort>, InputError>
where
    F: FnMut(&Frame<'_>) -> ControlFlow<()>,
{
    if paths.len() == 1 {
        // One input: no copy, and the fast classic-pcap path of `for_each_frame`.
        let Opened { reader, name, size } = open(&paths[0])?;
        let mut progress = Progress::new(&name, size, quiet);
        let r = for_each_frame(reader, |fr| {
            progress.tick(fr.data.len());
            f(fr)
        });
        progress.done();
        return match r {
            Ok(_) => Ok(Vec::new()),
            // Stopped by a signal in the middle of a record: not a damaged input.
            Err(ReadError::Truncated { .. }) if stopped() => Ok(Vec::new()),
            // Cut before its first complete frame: nothing to read, an error.
            Err(ReadError::Truncated { frames }) if frames > 0 => {
                Ok(vec![CutShort { file: name, frames }])
            }
            Err(e) => Err(InputError::read(&name, e)),
        };
    }
    let mut slots = Vec::with_capacity(paths.len());
    for p in paths {
        let Opened { reader, name, .. } = open(p)?;
        let reader = Reader::new(reader).map_err(|e| InputError::read(&name, e))?;
        slots.push(FileSlot {
            reader,
            name,
            frames: 0,
            cut: false,
            damage: None,
        });
    }
    let mut merger = Merger::new(slots.len());
    let mut progress = Progress::new("inputs", None, quiet);
    loop {
        for (i, s) in slots.iter_mut().enumerate() {
            if merger.is_empty(i) && !merger.ended(i) {
                if let Some(e) = s.damage.take() {
                    return Err(InputError::read(&s.name, e));
                }
                merger.push(s.fill(i as u32));
            }
        }
        if merger.is_done() {
            break;
        }
        let flow = merger.drain(false, |fr| {
            progress.tick(fr.data.len());
            f(fr)
        });
        if flow.is_break() {
            break;
        }
    }
    progress.done();
    Ok(slots
        .iter()
        .filter(|s| s.cut)
        .map(|s| CutShort {
            file: s.name.clone(),
            frames: s.frames,
        })
        .collect())
}

/// One of several merged inputs.
struct FileSlot {
    reader: Reader<'static>,
    name: String,
    /// Complete frames read so far.
    frames: u64,
    /// Ended in the middle of a record.
    cut: bool,
    /// Damage met while reading ahead: reported once the frames before it are handed on.
    damage: Option<ReadError>,
}

impl FileSlot {
    /// The next batch of this input. Its watermark stays 0: the merger then waits for
    /// the next batch of a file rather than trusting its timestamps to be in order.
    fn fill(&mut self, source: u32) -> Batch {
        let mut b = Batch::new(source, FILE_BATCH);
        while b.len() < FILE_BATCH {
            match self.reader.next_with(|fr| b.push(fr)) {
                Ok(Some(())) => self.frames += 1,
                Ok(None) => {
                    b.last = true;
                    break;
                }
                Err(ReadError::Truncated { .. }) if stopped() => {
                    b.last = true;
                    break;
                }
                Err(ReadError::Truncated { .. }) if self.frames > 0 => {
                    self.cut = true;
                    b.last = true;
                    break;
                }
                Err(e) => {
                    self.damage = Some(e);
                    break;
                }
            }
        }
        b
    }
}

/// Why an input could not be read (further).
#[derive(Debug)]
pub enum InputError {
    /// Opening the input (or looking at what it is) failed.
    Open {
        /// Name for messages ("stdin" for `-`).
        name: String,
        /// Why.
        error: io::Error,
    },
    /// The input is a directory.
    Directory {
        /// Name for messages.
        name: String,
    },
    /// The input is no capture, or is damaged (see [`ReadError`]).
    Read {
        /// Name for messages.
        name: String,
        /// What is wrong with it.
        error: ReadError,
    },
    /// The thread that reads the inputs could not be started.
    Thread(io::Error),
}

impl InputError {
    fn read(name: &str, error: ReadError) -> Self {
        InputError::Read {
            name: name.to_string(),
            error,
        }
    }

    /// How to fix it, when known.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            InputError::Read {
                error: ReadError::NotACapture | ReadError::Empty,
                ..
            } => Some("rocetap reads pcap and pcapng; convert other formats with editcap"),
            _ => None,
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Open { name, error } => write!(f, "reading {name}: {error}"),
            InputError::Directory { name } => write!(f, "reading {name}: is a directory"),
            InputError::Read { name, error } => write!(f, "reading {name}: {error}"),
            InputError::Thread(e) => write!(f, "starting the reading thread: {e}"),
        }
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputError::Open { error, .. } | InputError::Thread(error) => Some(error),
            InputError::Read { error, .. } => Some(error),
            InputError::Directory { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::writer::{Format, Interface, Writer};
    use dissectors::LinkType;

    /// A pcap of `n` 60-byte frames filled with `byte`, at `start + 10 * i` ns.
    fn trace(dir: &Path, byte: u8, start: u64, n: u64) -> std::path::PathBuf {
        let ifs = [Interface {
            link: LinkType::Ethernet,
            snaplen: 65535,
            name: None,
            description: None,
        }];
        let mut w = Writer::new(Vec::new(), Format::PcapNs, &ifs).unwrap();
        for i in 0..n {
            w.write(start + i * 10, 0, &[byte; 60], 60, None).unwrap();
        }
        let p = dir.join(format!("{byte}.pcap"));
        std::fs::write(&p, w.into_inner().unwrap()).unwrap();
        p
    }

    #[test]
    fn several_files_are_merged_in_order_and_a_cut_one_ends_there() {
        let dir = std::env::temp_dir().join(format!("rocetap-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = trace(&dir, 0, 0, 1000);
        let b = trace(&dir, 1, 5, 1000);
        let mut got = Vec::new();
        let cut = for_each_frame_of(&[a.clone(), b.clone()], true, |f| {
            got.push((f.ts_ns, f.source, f.data[0]));
            ControlFlow::Continue(())
        })
        .unwrap();
        assert!(cut.is_empty());
        assert_eq!(got.len(), 2000);
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(got.iter().all(|(_, s, b)| u32::from(*b) == *s));
        // Cut `b` in the middle of its 301st record.
        let bytes = std::fs::read(&b).unwrap();
        std::fs::write(&b, &bytes[..24 + 300 * 76 + 30]).unwrap();
        let mut n = 0;
        let cut = for_each_frame_of(&[a, b], true, |_| {
            n += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(n, 1300);
        assert_eq!(cut.len(), 1);
        assert_eq!(cut[0].frames, 300);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
