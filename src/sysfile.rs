//! The one bounded reader of small files that rocetap does not write: sysfs and procfs
//! values (`hw_counters`, GIDs, sysctls, `/proc/PID/comm`, a pod's `cgroup` and
//! `hostname`) and the short tool outputs of `netcheck --qos-from`. It refuses what is
//! not a regular file (a FIFO, a device such as `/dev/zero`, a socket) without blocking
//! on it, and never reads more than the limit it is given: a longer file is an error, not
//! a silently cut value.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a file could not be read, with its path; worded as one line by `Display`.
#[derive(Debug)]
pub struct FileError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub kind: Kind,
}

/// What is wrong with a file.
#[derive(Debug)]
pub enum Kind {
    /// It does not exist.
    Missing,
    /// The kernel has no value there (sysfs answers `EINVAL` or `ENODATA`, e.g. for an
    /// unused GID entry).
    NoValue,
    /// A FIFO, a device, a socket or a directory: named by what it is.
    NotRegular(&'static str),
    /// Longer than the limit (in bytes).
    TooLong(usize),
    /// Not UTF-8 text.
    NotText,
    /// Any other I/O error.
    Io(io::Error),
}

impl FileError {
    /// True when the file is missing or holds no value: the reader's callers treat it as
    /// absent, as before.
    pub fn is_absent(&self) -> bool {
        matches!(self.kind, Kind::Missing | Kind::NoValue)
    }

    /// True when the file was longer than the reader's bound.
    pub fn too_long(&self) -> bool {
        matches!(self.kind, Kind::TooLong(_))
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.path.display();
        match &self.kind {
            Kind::Missing => write!(f, "{p}: no such file"),
            Kind::NoValue => write!(f, "{p}: no value"),
            Kind::NotRegular(what) => write!(f, "{p}: not a regular file ({what})"),
            Kind::TooLong(max) => write!(f, "{p}: longer than {max} bytes"),
            Kind::NotText => write!(f, "{p}: not text"),
            Kind::Io(e) => write!(f, "{p}: {e}"),
        }
    }
}

impl std::error::Error for FileError {}

fn kind_of(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_dir() {
        Some("a directory")
    } else {
        Some("not a file")
    }
}

fn io_kind(e: io::Error) -> Kind {
    match e.kind() {
        io::ErrorKind::NotFound => Kind::Missing,
        _ if matches!(e.raw_os_error(), Some(22 | 61)) => Kind::NoValue, // EINVAL, ENODATA
        _ => Kind::Io(e),
    }
}

/// The whole of the regular file `path`, at most `max` bytes of UTF-8 text. The file is
/// opened non-blocking (a FIFO put in its place neither blocks the open nor the read) and
/// checked to be a regular file after opening, so that a symlink to `/dev/zero` is refused
/// too.
pub fn read(path: &Path, max: usize) -> Result<String, FileError> {
    let err = |kind| FileError {
        path: path.to_path_buf(),
        kind,
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits() | nix::fcntl::OFlag::O_NOCTTY.bits())
        .open(path)
        .map_err(|e| err(io_kind(e)))?;
    let meta = f.metadata().map_err(|e| err(io_kind(e)))?;
    if let Some(what) = kind_of(meta.file_type()) {
        return Err(err(Kind::NotRegular(what)));
    }
    let mut buf = Vec::new();
    // one byte more than allowed tells a file of exactly `max` bytes from a longer one
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    File::take(f, limit)
        .read_to_end(&mut buf)
        .map_err(|e| err(io_kind(e)))?;
    if buf.len() > max {
        return Err(err(Kind::TooLong(max)));
    }
    String::from_utf8(buf).map_err(|_| err(Kind::NotText))
}

/// A sysfs or procfs value: [`read`] within [`crate::config::limits::SYSFS_FILE_BYTES`],
/// trimmed; `Ok(None)` when the file is missing, holds no value or only white space.
pub fn value(path: &Path) -> Result<Option<String>, FileError> {
    match read(path, crate::config::limits::SYSFS_FILE_BYTES) {
        Ok(s) => {
            let t = s.trim();
            Ok((!t.is_empty()).then(|| t.to_string()))
        }
        Err(e) if e.is_absent() => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rocetap-sysfile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn values_missing_and_too_long() {
        let d = dir("values");
        std::fs::write(d.join("v"), "4: ACTIVE\n").unwrap();
        assert_eq!(value(&d.join("v")).unwrap().as_deref(), Some("4: ACTIVE"));
        assert_eq!(value(&d.join("none")).unwrap(), None);
        std::fs::write(d.join("blank"), " \n").unwrap();
        assert_eq!(value(&d.join("blank")).unwrap(), None);
        std::fs::write(d.join("bin"), [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read(&d.join("bin"), 10).unwrap_err().kind,
            Kind::NotText
        ));
        std::fs::write(d.join("ten"), "0123456789").unwrap();
        assert_eq!(read(&d.join("ten"), 10).unwrap(), "0123456789");
        let e = read(&d.join("ten"), 9).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}: longer than 9 bytes", d.join("ten").display())
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn hostile_files_are_refused_quickly() {
        let d = dir("hostile");
        let t = Instant::now();
        // a 1 GiB sparse file costs no disk and is refused after SYSFS_FILE_BYTES + 1 bytes
        let big = d.join("big");
        File::create(&big).unwrap().set_len(1 << 30).unwrap();
        let e = value(&big).unwrap_err();
        assert!(matches!(e.kind, Kind::TooLong(_)), "{e}");
        // a FIFO with no writer neither blocks the open nor the read
        let fifo = d.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = value(&fifo).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}: not a regular file (a FIFO)", fifo.display())
        );
        // a symlink to an endless device
        let zero = d.join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = value(&zero).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("not a regular file (a character device)"),
            "{e}"
        );
        assert!(value(&d)
            .unwrap_err()
            .to_string()
            .ends_with("(a directory)"));
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        let _ = std::fs::remove_dir_all(&d);
    }
}
