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
//!
//! A cut file says so where the format has room: a pcapng file then ends with an empty
//! section whose comment reads `rocetap: capture cut here: <error>; the N frames before
//! it are complete` (Wireshark and capinfos show it as a capture comment). Cutting back
//! to the last complete frame frees the bytes of the frame that did not fit, so the note
//! (about 120 bytes) usually fits even on a full disk; when it does not, the file ends at
//! the last complete frame without it, and [`OutputError::cut`] says which. Classic pcap
//! has no place for a note.

use super::writer::{section_header, Format, Interface, Writer};
use std::collections::{HashSet, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
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
    /// Marks (the file header, then one per frame) known to be in the file.
    durable_marks: u64,
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
            if let Some(i) = self.ends.iter().rposition(|e| *e <= done) {
                self.durable += self.ends[i] as u64;
                self.durable_marks += i as u64 + 1;
            }
            let _ = self.file.set_len(self.durable);
        } else {
            self.durable += done as u64;
            self.durable_marks += self.ends.len() as u64;
        }
        self.buf.clear();
        self.ends.clear();
        result
    }

    /// Complete frames known to be in the file.
    fn frames(&self) -> u64 {
        self.durable_marks.saturating_sub(1)
    }

    /// Appends `block` after the last complete frame; true when all of it was written
    /// (otherwise the file is cut back to the last complete frame again).
    fn append_note(&mut self, block: &[u8]) -> bool {
        self.buf.clear();
        self.ends.clear();
        let ok = self.file.seek(SeekFrom::Start(self.durable)).is_ok()
            && self.file.write_all(block).is_ok();
        if ok {
            self.durable += block.len() as u64;
        } else {
            let _ = self.file.set_len(self.durable);
        }
        ok
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
    /// Writing frames failed: the file was cut back to its last complete frame.
    pub cut: Option<Cut>,
}

/// A file cut back to its last complete frame after a write error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    /// Complete frames in the file.
    pub frames: u64,
    /// The file ends with a note that says it was cut (pcapng, when there was room).
    pub noted: bool,
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
    /// Frames written, over every file (after a write error: those known to be on disk).
    pub frames: u64,
    /// Frames in the files closed so far.
    closed_frames: u64,
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
            closed_frames: 0,
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
            cut: None,
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
            durable_marks: 0,
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
            if let Err(error) = w.get_mut().commit() {
                self.current = Some((path, w));
                return Err(self.cut(error));
            }
            self.closed_frames += w.get_mut().frames();
        }
        Ok(())
    }

    /// After a failed commit of the current file (already cut back to its last complete
    /// frame): notes the cut in the file where the format has room, and says what the
    /// file holds.
    fn cut(&mut self, error: io::Error) -> OutputError {
        let format = self.opts.format;
        let Some((path, w)) = self.current.as_mut() else {
            return OutputError {
                path: self.opts.path.clone(),
                error,
                exists: false,
                cut: None,
            };
        };
        let sink = w.get_mut();
        let frames = sink.frames();
        let noted = format == Format::PcapNg
            && sink.append_note(&section_header(Some(&format!(
                "rocetap: capture cut here: {error}; the {frames} frames before it are complete"
            ))));
        self.frames = self.closed_frames + frames;
        OutputError {
            path: path.clone(),
            error,
            exists: false,
            cut: Some(Cut { frames, noted }),
        }
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
        let (_, w) = self.current.as_mut().expect("a file is open");
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
        if let Err(error) = res {
            return Err(self.cut(error));
        }
        self.frames += 1;
        Ok(())
    }

    /// Writes buffered frames to disk (call periodically so the file is current).
    pub fn flush(&mut self) -> Result<(), OutputError> {
        if let Some((_, w)) = self.current.as_mut() {
            if let Err(error) = w.get_mut().commit() {
                return Err(self.cut(error));
            }
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
                description: None,
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

    /// A 64 KiB tmpfs mounted on `dir` until dropped; `None` (with `SKIP:` printed, or a
    /// failure under CI) without root or where mounting is not allowed.
    struct SmallDisk(PathBuf);
    impl SmallDisk {
        fn mount(dir: &Path) -> Option<SmallDisk> {
            std::fs::create_dir_all(dir).unwrap();
            let ok = std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=64k", "rocetap-full"])
                .arg(dir)
                .output()
                .is_ok_and(|o| o.status.success());
            if ok {
                return Some(SmallDisk(dir.to_path_buf()));
            }
            let why = "mounting a 64 KiB tmpfs needs root";
            assert!(
                std::env::var_os("CI").is_none_or(|v| v.is_empty() || v == "false"),
                "cannot run under CI: {why}"
            );
            eprintln!("SKIP: {why}");
            None
        }
    }
    impl Drop for SmallDisk {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).output();
            let _ = std::fs::remove_dir(&self.0);
        }
    }

    #[test]
    fn a_full_disk_cuts_the_file_at_a_frame_and_pcapng_says_so() {
        let dir = std::env::temp_dir().join(format!("rocetap-full-{}", std::process::id()));
        let Some(_disk) = SmallDisk::mount(&dir) else {
            return;
        };
        // 1000-byte frames: pcapng holds 60 + 63 x 1032 bytes and has 460 left for the
        // note; pcap 24 + 64 x 1016.
        for (format, name, fit) in [
            (Format::PcapNg, "full.pcapng", 63),
            (Format::Pcap, "full.pcap", 64),
        ] {
            let mut o = Output::create(OutputOptions {
                format,
                ..opts(&dir, name)
            })
            .unwrap();
            let mut err = None;
            for i in 0..1000u64 {
                if let Err(e) = o.write(i * 1000, 0, &[i as u8; 1000], 1000, None) {
                    err = Some(e);
                    break;
                }
            }
            let e = err.expect("64 KiB fill up");
            assert_eq!(e.error.raw_os_error(), Some(28), "{:?}", e.error);
            let cut = e.cut.expect("a cut file");
            assert_eq!(cut.frames, fit, "{name}");
            assert_eq!(cut.noted, format == Format::PcapNg, "{name}");
            assert_eq!(
                o.frames, fit,
                "frames lost in the failed write are not counted"
            );
            drop(o);
            let path = dir.join(name);
            let mut n = 0u64;
            for_each_frame(File::open(&path).unwrap(), |f| {
                assert_eq!(f.data, [n as u8; 1000]);
                n += 1;
                ControlFlow::Continue(())
            })
            .unwrap();
            assert_eq!(n, fit, "{name}");
            let bytes = std::fs::read(&path).unwrap();
            let note = format!(
                "rocetap: capture cut here: No space left on device (os error 28); the {fit} frames before it are complete"
            );
            let has_note = bytes.windows(note.len()).any(|w| w == note.as_bytes());
            assert_eq!(has_note, format == Format::PcapNg, "{name}");
            std::fs::remove_file(&path).unwrap();
        }
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
