//! The decoder's fast paths (`dissectors::decode_into`, which the analyzer is fed by)
//! against the general decoder (`dissectors::decode_into_general`, every header the
//! general way): the same `Decoded`, field for field, on every frame of every sample
//! (`samples/*.pcap*`, `samples/taps/*`) and every shared capture (`../shared/captures`:
//! SKIP when absent, a failure under CI), and both the same as a frame decoded into a
//! fresh `Decoded` (`dissectors::decode`): reusing one, as the analysis does, changes
//! nothing. Equal decodes give equal reports, so the goldens stay as they are.

use crate::common;
use rocetap::capture::input::for_each_frame_of;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

fn traces(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".pcap") || n.ends_with(".pcapng")
        })
        .collect();
    out.sort();
    out
}

/// Frames checked and how many of them had an IP header.
fn check(path: &Path, cfg: &dissectors::Config) -> (u64, u64) {
    let mut fast = dissectors::decode(dissectors::LinkType::Ethernet, &[], 0, cfg);
    let mut general = fast;
    let (mut frames, mut ip) = (0, 0);
    let res = for_each_frame_of(&[path.to_path_buf()], true, |f| {
        dissectors::decode_into(f.link, f.data, f.orig_len, cfg, &mut fast);
        dissectors::decode_into_general(f.link, f.data, f.orig_len, cfg, &mut general);
        frames += 1;
        ip += u64::from(fast.ip.is_some());
        assert_eq!(fast, general, "{}: frame {frames}", path.display());
        // Reused frame after frame (its rare layers written only when set), the same
        // as decoded into a fresh one.
        let fresh = dissectors::decode(f.link, f.data, f.orig_len, cfg);
        assert_eq!(fast, fresh, "{}: frame {frames}, reused", path.display());
        ControlFlow::Continue(())
    });
    // Damaged inputs (the hostile samples) end early: the frames before were checked.
    let _ = res;
    (frames, ip)
}

#[test]
fn fast_and_general_decode_agree_on_every_sample_and_shared_capture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = traces(&root.join("samples"));
    files.extend(traces(&root.join("samples/taps")));
    let samples = files.len();
    assert!(samples >= 10, "the samples are missing: {samples} files");
    files.extend(common::capture_files());
    let (mut frames, mut ip) = (0, 0);
    for cfg in [
        dissectors::Config {
            roce_port: 4791,
            check_icrc: true,
        },
        dissectors::Config {
            roce_port: 4791,
            check_icrc: false,
        },
    ] {
        for f in &files {
            let (n, i) = check(f, &cfg);
            frames += n;
            ip += i;
        }
    }
    assert!(ip > 0 && frames > ip / 2, "{frames} frames, {ip} with IP");
    eprintln!(
        "{} files ({samples} samples), {frames} frames decoded twice each way, {ip} with IP",
        files.len()
    );
}
