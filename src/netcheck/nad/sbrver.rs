//! The installed sbr plugin's version: `DIR/sbr` run directly (no shell), with no
//! arguments, an empty environment and no input, killed after a timeout. CNI plugins print
//! `CNI sbr plugin v1.4.0` (and the protocol versions they support) when CNI_COMMAND is
//! unset; at most `MAX_OUTPUT` bytes of it are read.

use super::rules::Version;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MAX_OUTPUT: u64 = 64 << 10;

/// What running `DIR/sbr` told about its version.
#[derive(Debug, PartialEq, Eq)]
pub enum Probe {
    /// It printed this version.
    Found(Version),
    /// No executable `sbr` in the directory.
    Missing,
    /// It ran, but printed no version (the text, shortened).
    NoVersion(String),
    /// It could not be run, or did not finish within the timeout (why, in words).
    Failed(String),
}

/// The first `vX.Y.Z` in the plugin's output (bare `X.Y.Z` are the CNI protocol
/// versions it supports, not its own).
pub fn version_in(text: &str) -> Option<Version> {
    text.split(|c: char| c.is_whitespace() || c == '"' || c == ',')
        .filter_map(|w| w.strip_prefix('v'))
        .filter(|w| w.matches('.').count() >= 2)
        .find_map(Version::parse)
}

/// Runs `dir/sbr` (no arguments, empty environment, no input) and reads its version, killing it
/// after `timeout`.
pub fn probe(dir: &Path, timeout: Duration) -> Probe {
    let bin = dir.join("sbr");
    if !bin.is_file() {
        return Probe::Missing;
    }
    let child = Command::new(&bin)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return Probe::Failed(format!("running {}: {e}", bin.display())),
    };
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|r| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.take(MAX_OUTPUT).read_to_end(&mut v);
            v
        })
    })
    .collect();
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < timeout => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Probe::Failed(format!(
                    "{} did not finish within {} s",
                    bin.display(),
                    timeout.as_secs()
                ));
            }
            Err(e) => return Probe::Failed(format!("waiting for {}: {e}", bin.display())),
        }
    }
    let mut text = String::new();
    for r in readers {
        text.push_str(&String::from_utf8_lossy(&r.join().unwrap_or_default()));
        text.push('\n');
    }
    match version_in(&text) {
        Some(v) => Probe::Found(v),
        None => Probe::NoVersion(text.trim().chars().take(120).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_in_plugin_output() {
        assert_eq!(
            version_in("CNI sbr plugin v1.4.0\nCNI protocol versions supported: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0"),
            Some(Version(1, 4, 0, 0))
        );
        assert_eq!(version_in("CNI sbr plugin version unknown"), None);
        // a build from git after the tag is newer than the tag
        let dev = version_in("CNI sbr plugin v1.9.1-12-gabcdef0").unwrap();
        assert!(dev > Version(1, 9, 1, 0) && dev < Version(1, 9, 2, 0));
        assert_eq!(
            version_in("CNI sbr plugin v1.10.0-rc1"),
            Some(Version(1, 10, 0, 0))
        );
        assert_eq!(
            version_in(r#"{"cniVersion":"1.0.0","supportedVersions":["0.1.0"]} v1.9.1"#),
            Some(Version(1, 9, 1, 0))
        );
    }
}
