//! The capture sink: pcap / pcapng files with tcpdump-style rotation, that stay valid
//! whatever happens.
//!
//! File names (documented in `rocetap capture --help`):
//! - no rotation: `FILE`;
//! - `-C MB` (rotate when a file would exceed MB x 1,000,000 bytes): `FILE`, `FILE1`,
//!   `FILE2`, ... (the number is appended to the whole name, as tcpdump does); with
//!   `-W N` the names form a ring of N files — after `FILE<N-1>` comes `FILE` again,
//!   overwriting the oldest;
//! - `-G SECONDS` (rotate every SECONDS, checked as frames arrive; also with `-C`):
//!   `FILE.<unix-seconds-when-opened>` (`FILE.<secs>-<k>` if a size rotation opens a
//!   second file in the same second); with `-W N` only the newest N files are kept, older
//!   ones are deleted.
//!
//! Validity: frames go to an in-memory buffer that is written to the file between frames
//! only, so a write error (disk full, I/O error) can always be cut back to the last
//! complete frame: the file is truncated to the bytes known to be on disk. An existing
//! file is never replaced without `force` (files this run created itself, in the ring, are).

use super::writer::{Format, Interface, Writer};
use std::collections::{HashSet, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Buffered bytes are written to the file once there are this many.
const COMMIT_BYTES: usize = 256 << 10;

/// A file that only ever holds complete frames.
pub struct Sink {
    file: File,
    buf: Vec<u8>,
    /// Offsets in `buf` where a frame (or the file header) ends.
    ends: Vec<usize>,
    /// Bytes known to be in the file.
    durable: u64,
}

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.commit()
    }
}

impl Sink {
    /// Marks the end of a complete frame (or header) in the buffer.
    fn mark(&mut self) {
        self.ends.push(self.buf.len());
    }

    /// Writes the buffer to the file; on failure, cuts the file back to the last complete
    /// frame that made it to disk.
    fn commit(&mut self) -> io::Result<()> {
        let mut done = 0;
        let mut result = Ok(());
        while done < self.buf.len() {
            match self.file.write(&self.buf[done..]) {
                Ok(0) => {
                    result = Err(io::Error::from(io::ErrorKind::WriteZero));
                    break;
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_err() {
            let complete = self
                .ends
                .iter()
                .rev()
                .find(|e| **e <= done)
                .copied()
                .unwrap_or(0);
            self.durable += complete as u64;
            let _ = self.file.set_len(self.durable);
        } else {
            self.durable += done as u64;
        }
        self.buf.clear();
        self.ends.clear();
        result
    }
}

/// What to write and how to rotate.
#[derive(Clone, Debug)]
pub struct OutputOptions {
    /// The file name (rotation appends to it).
    pub path: PathBuf,
    /// The file format.
    pub format: Format,
    /// The interfaces frames come from (pcapng interface blocks), by source index.
    pub ifaces: Vec<Interface>,
    /// pcapng section comment.
    pub comment: Option<String>,
    /// `-C`: bytes per file.
    pub rotate_bytes: Option<u64>,
    /// `-G`: seconds per file.
    pub rotate_secs: Option<u64>,
    /// `-W`: files kept.
    pub ring: Option<u32>,
    /// Replace existing files.
    pub force: bool,
}

/// Why output failed; `path` is the file concerned.
#[derive(Debug)]
pub struct OutputError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub error: io::Error,
    /// The file existed and `force` was not given.
    pub exists: bool,
}

/// Capture output: one file or a rotation of them, each holding only complete frames.
pub struct Output {
    opts: OutputOptions,
    current: Option<(PathBuf, Writer<Sink>)>,
    opened_at: Instant,
    /// Sequence number of the current file (0 = first).
    seq: u64,
    /// Files of this run still on disk, oldest first (for -G -W).
    kept: VecDeque<PathBuf>,
    created: HashSet<PathBuf>,
    last_secs: (u64, u32),
    /// Frames written, over every file.
    pub frames: u64,
    /// Files opened, over the run.
    pub files_opened: u64,
}

fn append(p: &Path, s: &str) -> PathBuf {
    let mut o = p.as_os_str().to_owned();
    o.push(s);
    PathBuf::from(o)
}

impl Output {
    /// Opens the first file.
    pub fn create(opts: OutputOptions) -> Result<Self, OutputError> {
        let mut o = Output {
            opts,
            current: None,
            opened_at: Instant::now(),
            seq: 0,
            kept: VecDeque::new(),
            created: HashSet::new(),
            last_secs: (0, 0),
            frames: 0,
            files_opened: 0,
        };
        o.open_next()?;
        Ok(o)
    }

    /// The file being written.
    pub fn current_path(&self) -> Option<&Path> {
        self.current.as_ref().map(|(p, _)| p.as_path())
    }

    fn next_name(&mut self) -> PathBuf {
        let base = &self.opts.path;
        if self.opts.rotate_secs.is_some() {
            let secs = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let k = if self.last_secs.0 == secs {
                self.last_secs.1 + 1
            } else {
                0
            };
            self.last_secs = (secs, k);
            if k == 0 {
                append(base, &format!(".{secs}"))
            } else {
                append(base, &format!(".{secs}-{k}"))
            }
        } else if self.opts.rotate_bytes.is_some() {
            let n = match self.opts.ring {
                Some(w) if w > 0 => self.seq % u64::from(w),
                _ => self.seq,
            };
            if n == 0 {
                base.clone()
            } else {
                append(base, &n.to_string())
            }
        } else {
            base.clone()
        }
    }

    fn open_next(&mut self) -> Result<(), OutputError> {
        self.close_current()?;
        let path = self.next_name();
        let err = |error: io::Error, exists: bool, path: &Path| OutputError {
            path: path.to_path_buf(),
            error,
            exists,
        };
        let mut oo = OpenOptions::new();
        oo.write(true);
        if self.opts.force || self.created.contains(&path) {
            oo.create(true).truncate(true);
        } else {
            oo.create_new(true);
        }
        let file = oo.open(&path).map_err(|e| {
            let exists = e.kind() == io::ErrorKind::AlreadyExists;
            err(e, exists, &path)
        })?;
        let sink = Sink {
            file,
            buf: Vec::with_capacity(COMMIT_BYTES + 65536),
            ends: Vec::with_capacity(4096),
            durable: 0,
        };
        let mut w = Writer::with_comment(
            sink,
            self.opts.format,
            &self.opts.ifaces,
            self.opts.comment.as_deref(),
        )
        .map_err(|e| err(e, false, &path))?;
        w.get_mut().mark();
        w.get_mut().commit().map_err(|e| err(e, false, &path))?;
        self.created.insert(path.clone());
        if self.opts.rotate_secs.is_some() {
            self.kept.push_back(path.clone());
            if let Some(w) = self.opts.ring.filter(|w| *w > 0) {
                while self.kept.len() > w as usize {
                    if let Some(old) = self.kept.pop_front() {
                        let _ = std::fs::remove_file(&old);
                    }
                }
            }
        }
        self.current = Some((path, w));
        self.opened_at = Instant::now();
        self.seq += 1;
        self.files_opened += 1;
        Ok(())
    }

    fn close_current(&mut self) -> Result<(), OutputError> {
        if let Some((path, mut w)) = self.current.take() {
            w.get_mut().commit().map_err(|error| OutputError {
                path,
                error,
                exists: false,
            })?;
        }
        Ok(())
    }

    /// Writes one frame to output interface `iface`, rotating first when due.
    pub fn write(
        &mut self,
        ts_ns: u64,
        iface: u32,
        data: &[u8],
        orig_len: u32,
        comment: Option<&str>,
    ) -> Result<(), OutputError> {
        let due = match &self.current {
            Some((_, w)) => {
                let size_due = self.opts.rotate_bytes.is_some_and(|limit| {
                    w.frames > 0
                        && w.bytes
                            + 36
                            + data.len() as u64
                            + comment.map_or(0, |c| c.len() as u64 + 8)
                            > limit
                });
                let time_due = self
                    .opts
                    .rotate_secs
                    .is_some_and(|s| self.opened_at.elapsed().as_secs() >= s);
                size_due || time_due
            }
            None => true,
        };
        if due {
            self.open_next()?;
        }
        let (path, w) = self.current.as_mut().expect("a file is open");
        let res = w
            .write(ts_ns, iface, data, orig_len, comment)
            .and_then(|()| {
                w.get_mut().mark();
                if w.get_mut().buf.len() >= COMMIT_BYTES {
                    w.get_mut().commit()
                } else {
                    Ok(())
                }
            });
        res.map_err(|error| OutputError {
            path: path.clone(),
            error,
            exists: false,
        })?;
        self.frames += 1;
        Ok(())
    }

    /// Writes buffered frames to disk (call periodically so the file is current).
    pub fn flush(&mut self) -> Result<(), OutputError> {
        if let Some((path, w)) = self.current.as_mut() {
            w.get_mut().commit().map_err(|error| OutputError {
                path: path.clone(),
                error,
                exists: false,
            })?;
        }
        Ok(())
    }

    /// Flushes and closes the current file.
    pub fn finish(mut self) -> Result<(), OutputError> {
        self.close_current()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::file::for_each_frame;
    use dissectors::LinkType;
    use std::ops::ControlFlow;

    fn opts(dir: &Path, name: &str) -> OutputOptions {
        OutputOptions {
            path: dir.join(name),
            format: Format::Pcap,
            ifaces: vec![Interface {
                link: LinkType::Ethernet,
                snaplen: 65535,
                name: None,
            }],
            comment: None,
            rotate_bytes: None,
            rotate_secs: None,
            ring: None,
            force: false,
        }
    }

    fn frames_in(p: &Path) -> u64 {
        let f = File::open(p).unwrap();
        for_each_frame(f, |_| ControlFlow::Continue(()))
            .unwrap()
            .frames
    }

    #[test]
    fn size_rotation_ring_and_no_overwrite() {
        let dir = std::env::temp_dir().join(format!("rocetap-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // 1000-byte frames, 3000-byte files: 2 frames per file (24 + 2 x 1016 bytes).
        let mut o = Output::create(OutputOptions {
            rotate_bytes: Some(3000),
            ring: Some(3),
            ..opts(&dir, "r.pcap")
        })
        .unwrap();
        for i in 0..9u64 {
            o.write(i, 0, &[i as u8; 1000], 1000, None).unwrap();
        }
        o.finish().unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["r.pcap", "r.pcap1", "r.pcap2"]);
        // Files 0,1,2 then the ring restarts: file 3 -> r.pcap (frames 6,7), file 4 -> r.pcap1 (frame 8).
        assert_eq!(frames_in(&dir.join("r.pcap")), 2);
        assert_eq!(frames_in(&dir.join("r.pcap1")), 1);
        assert_eq!(frames_in(&dir.join("r.pcap2")), 2);
        // An existing file is refused without force.
        let e = Output::create(opts(&dir, "r.pcap")).err().unwrap();
        assert!(e.exists);
        assert!(Output::create(OutputOptions {
            force: true,
            ..opts(&dir, "r.pcap")
        })
        .is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn time_rotation_keeps_the_newest_files() {
        let dir = std::env::temp_dir().join(format!("rocetap-out-g-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut o = Output::create(OutputOptions {
            rotate_secs: Some(1),
            ring: Some(2),
            ..opts(&dir, "g.pcap")
        })
        .unwrap();
        for i in 0..4u64 {
            o.write(i, 0, &[i as u8; 100], 100, None).unwrap();
            o.write(i, 0, &[i as u8; 100], 100, None).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(1050));
        }
        assert_eq!(o.files_opened, 4);
        o.finish().unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), 2, "{names:?}");
        for n in &names {
            let secs = n.strip_prefix("g.pcap.").unwrap();
            assert!(secs.parse::<u64>().is_ok(), "{n}");
            assert_eq!(frames_in(&dir.join(n)), 2);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn write_error_is_reported() {
        if !Path::new("/dev/full").exists() {
            return;
        }
        let mut o = Output::create(OutputOptions {
            force: true,
            ..opts(Path::new("/dev"), "full")
        })
        .err();
        // The header commit already fails on /dev/full.
        let e = o.take().expect("writing to /dev/full fails");
        assert_eq!(e.error.raw_os_error(), Some(28), "{:?}", e.error);
    }
}
