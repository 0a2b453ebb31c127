//! The captures the unit tests read every frame of: the samples, the tap samples and, when
//! `../shared` is there, its public and reference captures (tests only).

use std::path::{Path, PathBuf};

/// Every capture of `samples/`, `samples/taps/` and `../shared/captures/{public,reference}`,
/// in name order within each directory.
pub fn every_capture() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = captures_under(&root.join("samples"), false);
    files.extend(captures_under(&root.join("samples/taps"), false));
    let shared = root.join("../shared/captures");
    for sub in ["public", "reference"] {
        files.extend(captures_under(&shared.join(sub), true));
    }
    files
}

/// The `.pcap` / `.pcapng` files of `dir`, or with `all` every file but notes and JSON
/// (the shared captures have other extensions too).
fn captures_under(dir: &Path, all: bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            let n = p.to_string_lossy();
            if all {
                !(n.ends_with(".md") || n.ends_with(".json"))
            } else {
                n.ends_with(".pcap") || n.ends_with(".pcapng")
            }
        })
        .collect();
    out.sort();
    out
}
