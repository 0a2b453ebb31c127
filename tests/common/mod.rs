//! Shared helpers for the integration tests: the binary, `../shared`, and tools.

#![allow(dead_code)]

pub mod pcap;
pub mod tshark;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rocetap")
}

/// `rocetap ARGS` run in `cwd`, which must succeed: its standard output.
pub fn rocetap_in(args: &[&str], cwd: &Path) -> String {
    let o = Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run rocetap");
    assert!(
        o.status.success(),
        "rocetap {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

pub fn rocetap(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("run rocetap")
}

/// The path of `samples/NAME`, as an argument.
pub fn sample(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name)
        .display()
        .to_string()
}

/// True when running under CI, where every prerequisite must be present.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false")
}

/// Prints why a test is skipped — or fails under CI, where it must run.
pub fn skip(why: &str) {
    assert!(!in_ci(), "cannot run under CI: {why}");
    eprintln!("SKIP: {why}");
}

/// `../shared/captures` beside the repository.
pub fn captures_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/captures");
    if dir.is_dir() {
        Some(dir)
    } else {
        skip(&format!(
            "{} not found (the shared captures live beside the repository)",
            dir.display()
        ));
        None
    }
}

/// Every capture file under `captures/public` and `captures/reference`.
pub fn capture_files() -> Vec<PathBuf> {
    let Some(dir) = captures_dir() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for sub in ["public", "reference"] {
        for e in std::fs::read_dir(dir.join(sub))
            .into_iter()
            .flatten()
            .flatten()
        {
            let p = e.path();
            let n = p.to_string_lossy().to_string();
            if !(n.ends_with(".md") || n.ends_with(".json")) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// True when `tool --version` runs.
pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Parses a CSV document with a header row into (header, rows).
pub fn parse_csv(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(text.as_bytes());
    let header = r
        .headers()
        .expect("csv header")
        .iter()
        .map(str::to_string)
        .collect();
    let rows = r
        .records()
        .map(|x| x.expect("csv row").iter().map(str::to_string).collect())
        .collect();
    (header, rows)
}

/// A classic pcap (µs, Ethernet) holding `frames`.
pub fn pcap_bytes(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&[0u8; 8]);
    v.extend_from_slice(&65535u32.to_le_bytes());
    v.extend_from_slice(&1u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        v.extend_from_slice(&(1_700_000_000u32 + i as u32).to_le_bytes());
        v.extend_from_slice(&(i as u32 * 10).to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(f);
    }
    v
}

/// A scratch directory unique to one test, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("rocetap-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// True when the tests run as root (network namespaces, capture).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs `cmd` (program and arguments), which must succeed; its output.
pub fn run_ok(cmd: &[&str]) -> Output {
    let o = Command::new(cmd[0])
        .args(&cmd[1..])
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The lock of the tests that must not overlap one another in the same test binary (the
/// modules of `tests/AREA.rs` run on parallel threads): fixed names, a memory or time
/// limit, heavy CPU, the process' own limits. Held for the test's length:
/// `let _serial = common::serial();` first. A test that failed holding it does not fail
/// the next (the poison is ignored).
pub static SERIAL: Mutex<()> = Mutex::new(());

/// Takes [`SERIAL`] for the rest of the caller's scope.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
