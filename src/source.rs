//! Opening inputs by name (`-` is stdin) and showing progress on stderr for long reads
//! when stderr is a terminal.

use crate::error::Failure;
use std::fs::File;
use std::io::{self, IsTerminal, Read};
use std::path::Path;
use std::time::{Duration, Instant};

/// An opened input: the stream, a display name and its size if known.
pub type Opened = (Box<dyn Read + Send>, String, Option<u64>);

/// Opens a capture for reading.
pub fn open(path: &Path) -> Result<Opened, Failure> {
    if path.as_os_str() == "-" {
        return Ok((Box::new(io::stdin()), "stdin".to_string(), None));
    }
    let name = path.display().to_string();
    let f = File::open(path).map_err(|e| Failure::new(format!("reading {name}: {e}")))?;
    let meta = f
        .metadata()
        .map_err(|e| Failure::new(format!("reading {name}: {e}")))?;
    if meta.is_dir() {
        return Err(Failure::new(format!("reading {name}: is a directory")));
    }
    Ok((Box::new(f), name, Some(meta.len())))
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
        self.frames += 1;
        self.bytes += frame_bytes as u64 + 16;
        if self.enabled && self.frames & 0xffff == 0 {
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
