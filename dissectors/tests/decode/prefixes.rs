//! Never panics, on real data: every prefix of every frame of every capture under
//! `../shared/captures` is decoded twice — as a snaplen cut (the wire length is the
//! frame's) and as a complete but short frame — and each result must be internally
//! consistent: a cut prefix never reads as "malformed" where the whole frame did not, the
//! stop offset lies inside the bytes, and layers decoded from a prefix agree with the
//! layers decoded from the whole frame.

use crate::common;

use dissectors::{decode, Config, StopKind};

#[test]
fn every_prefix_of_every_frame_decodes_without_panic() {
    let files = common::capture_files();
    if files.is_empty() {
        return;
    }
    let cfg = Config::default();
    let mut prefixes = 0u64;
    for path in &files {
        let frames = common::read_frames(path);
        assert!(!frames.is_empty(), "{} has no frames", path.display());
        for (i, (link, data, orig)) in frames.iter().enumerate() {
            let full = decode(*link, data, *orig, &cfg);
            for n in 0..=data.len() {
                let p = &data[..n];
                let cut = decode(*link, p, *orig, &cfg);
                let short = decode(*link, p, n as u32, &cfg);
                prefixes += 1;
                for d in [&cut, &short] {
                    assert!(
                        d.stop.offset as usize <= n,
                        "{} frame {}: prefix {n}: stop {:?} beyond the bytes",
                        path.display(),
                        i + 1,
                        d.stop
                    );
                }
                if n < data.len() && full.stop.kind != StopKind::Malformed {
                    assert_ne!(
                        cut.stop.kind,
                        StopKind::Malformed,
                        "{} frame {}: a snaplen cut at {n} reads as malformed: {:?}",
                        path.display(),
                        i + 1,
                        cut.stop
                    );
                }
                // Whatever the cut prefix decoded must agree with the whole frame.
                if let (Some(a), Some(b)) = (cut.roce, full.roce) {
                    assert_eq!(a.bth, b.bth, "{} frame {}", path.display(), i + 1);
                    if a.reth.is_some() {
                        assert_eq!(a.reth, b.reth);
                    }
                    if a.aeth.is_some() {
                        assert_eq!(a.aeth, b.aeth);
                    }
                }
                // (The protocol after IPv6 extension headers is unknown in a prefix that
                // cuts them, so compare the fixed header only.)
                if let (Some(a), Some(b)) = (cut.ip, full.ip) {
                    assert_eq!(
                        (a.src, a.dst, a.dscp, a.ecn, a.ttl, a.flow_label),
                        (b.src, b.dst, b.dscp, b.ecn, b.ttl, b.flow_label),
                        "{} frame {}",
                        path.display(),
                        i + 1
                    );
                }
            }
        }
    }
    eprintln!("decoded {prefixes} prefixes of {} files", files.len());
}
