//! Opening inputs by name (`-` is stdin) and showing progress on stderr for long reads
//! when stderr is a terminal.

use crate::capture::file::{for_each_frame, ReadError, Reader};
use crate::capture::Frame;
use crate::error::Failure;
use std::fs::File;
use std::io::{self, IsTerminal, Read};
use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, Instant};

/// An opened input.
pub struct Opened {
    pub reader: Box<dyn Read + Send>,
    /// Name for messages ("stdin" for `-`).
    pub name: String,
    /// Size in bytes, when known.
    pub size: Option<u64>,
}

/// Opens a capture for reading (`-` is standard input).
pub fn open(path: &Path) -> Result<Opened, Failure> {
    if path.as_os_str() == "-" {
        return Ok(Opened {
            reader: Box::new(io::stdin()),
            name: "stdin".to_string(),
            size: None,
        });
    }
    let name = path.display().to_string();
    let f = File::open(path).map_err(|e| Failure::new(format!("reading {name}: {e}")))?;
    let meta = f
        .metadata()
        .map_err(|e| Failure::new(format!("reading {name}: {e}")))?;
    if meta.is_dir() {
        return Err(Failure::new(format!("reading {name}: is a directory")));
    }
    Ok(Opened {
        reader: Box::new(f),
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
    pub fn new(name: &str, size: Option<u64>, quiet: bool) -> Self {
        let now = Instant::now();
        Progress {
            enabled: !quiet && io::stderr().is_terminal(),
            name: name.to_string(),
            size,
            frames: 0,
            bytes: 0,
            start: now,
            last: now,
            shown: false,
        }
    }

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
    /// The one-line warning for stderr.
    pub fn warning(&self) -> String {
        format!(
            "rocetap: warning: {} was cut short: it ends in the middle of a record after {} complete frames (every complete frame was read)",
            self.file, self.frames
        )
    }
}

/// Reads every frame of every input, merged in timestamp order when there are several
/// (ties keep the order of the inputs), and hands each to `f`; `frame.source` says which
/// input it came from. One input is read without copying; several are merged through
/// one reusable buffer per input. An input cut short in the middle of a record ends
/// there and is listed in the result (like tshark, every complete frame counts); any
/// other damage stops the run with an error naming the input, after every frame before
/// the damage was delivered.
pub fn for_each_frame_of<F>(
    paths: &[std::path::PathBuf],
    quiet: bool,
    mut f: F,
) -> Result<Vec<CutShort>, Failure>
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
            // Cut before its first complete frame: nothing to read, an error.
            Err(ReadError::Truncated { frames }) if frames > 0 => {
                Ok(vec![CutShort { file: name, frames }])
            }
            Err(e) => Err(read_failure(&name, e)),
        };
    }
    struct Slot<'r> {
        reader: Reader<'r>,
        name: String,
        buf: Vec<u8>,
        head: Option<Frame<'static>>,
        frames: u64,
        cut: bool,
    }
    let mut slots = Vec::with_capacity(paths.len());
    for p in paths {
        let Opened { reader, name, .. } = open(p)?;
        let reader = Reader::new(reader).map_err(|e| read_failure(&name, e))?;
        slots.push(Slot {
            reader,
            name,
            buf: Vec::new(),
            head: None,
            frames: 0,
            cut: false,
        });
    }
    let mut progress = Progress::new("inputs", None, quiet);
    // Fills `slot.head` with the next frame (metadata only; bytes live in `slot.buf`);
    // an input cut short ends there.
    fn pull(slot: &mut Slot<'_>, source: u32) -> Result<(), Failure> {
        let buf = &mut slot.buf;
        let got = slot.reader.next_with(|fr| {
            buf.clear();
            buf.extend_from_slice(fr.data);
            Frame {
                data: &[],
                source,
                ..*fr
            }
        });
        slot.head = match got {
            Ok(h) => h,
            Err(ReadError::Truncated { .. }) if slot.frames > 0 => {
                slot.cut = true;
                None
            }
            Err(e) => return Err(read_failure(&slot.name, e)),
        };
        slot.frames += u64::from(slot.head.is_some());
        Ok(())
    }
    for (i, s) in slots.iter_mut().enumerate() {
        pull(s, i as u32)?;
    }
    while let Some(i) = slots
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.head.map(|h| (h.ts_ns, i)))
        .min()
        .map(|(_, i)| i)
    {
        let s = &mut slots[i];
        let head = s.head.take().expect("chosen slot has a frame");
        let frame = Frame {
            data: &s.buf,
            ..head
        };
        progress.tick(frame.data.len());
        if f(&frame).is_break() {
            break;
        }
        pull(s, i as u32)?;
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

/// The one-line error for an input that could not be read (further).
pub fn read_failure(name: &str, e: ReadError) -> Failure {
    let f = Failure::new(format!("reading {name}: {e}"));
    match e {
        ReadError::NotACapture | ReadError::Empty => {
            f.hint("rocetap reads pcap and pcapng; convert other formats with editcap")
        }
        _ => f,
    }
}
