//! Every sample through the agent's recorder at its 128-byte snaplen: the analysis of
//! what is kept equals the analysis of what was captured (ICRC counts aside: a packet's
//! ICRC goes with its payload), no payload byte is kept, and redacted fields are masked.

use super::*;
use crate::agent::dump::{self, Analysis, Recorded};
use crate::agent::recorder::Recorder;
use crate::capture::Frame;
use dissectors::LinkType;
use serde_json::Value;
use std::ops::ControlFlow;
use std::path::PathBuf;

const SNAPLEN: usize = crate::config::HEADERS_ONLY_SNAPLEN as usize;

fn samples() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".pcap") || n.ends_with(".pcapng")
        })
        .collect();
    v.sort();
    v
}

fn analysis() -> Analysis {
    Analysis {
        decode: dissectors::Config {
            roce_port: crate::config::ROCE_PORT,
            check_icrc: true,
        },
        analyzer: crate::analysis::Config::default(),
    }
}

/// What one sample leaves in a recorder: (as captured, as kept, link type, payload
/// bytes captured past the transport headers, frames with such bytes).
fn record(path: &PathBuf, privacy: &Privacy) -> (Recorder, Recorder, LinkType, u64, u64) {
    let a = analysis();
    let mut raw = Recorder::new(1 << 30, SNAPLEN as u32, u64::MAX);
    let mut kept = Recorder::new(1 << 30, SNAPLEN as u32, u64::MAX);
    let mut d = dissectors::decode(LinkType::Ethernet, &[], 0, &a.decode);
    let (mut link, mut leaked, mut leaky) = (LinkType::Ethernet, 0u64, 0u64);
    crate::capture::input::for_each_frame_of(std::slice::from_ref(path), true, |f| {
        let cut = &f.data[..f.data.len().min(SNAPLEN)];
        let f = Frame { data: cut, ..*f };
        link = f.link;
        dissectors::decode_into(f.link, f.data, f.orig_len, &a.decode, &mut d);
        if let Some(r) = d.roce.filter(|r| r.mad.is_none() && r.payload_len > 0) {
            let past = (cut.len() as u64).saturating_sub(u64::from(r.payload_offset));
            leaked += past;
            leaky += u64::from(past > 0);
        }
        raw.push(&f);
        kept.record(&f, Some(&d), privacy);
        ControlFlow::Continue(())
    })
    .unwrap();
    (raw, kept, link, leaked, leaky)
}

fn report(rec: &Recorder, link: LinkType) -> Value {
    let srcs = [Recorded {
        name: "s",
        lane: None,
        link,
        snaplen: SNAPLEN as u32,
        rec,
    }];
    let (r, input) = dump::analyze(&srcs, 0, analysis(), None);
    let mut v: Value = serde_json::from_slice(&dump::report_json(&r, &input)).unwrap();
    // What a cut payload changes by design: bytes read, which ICRCs can be checked, and
    // how many frames the cut shortened (the `truncated` counter and its finding).
    v["input"]["bytes"] = Value::Null;
    for k in [
        "icrc_ok",
        "icrc_bad",
        "icrc_unchecked",
        "icrc_cut",
        "cut_at_bytes",
        "truncated",
    ] {
        v["totals"][k] = Value::Null;
    }
    if let Some(fs) = v["findings"].as_array_mut() {
        fs.retain(|f| f["kind"] != "truncated");
    }
    for f in v["flows"].as_array_mut().into_iter().flatten() {
        for k in ["icrc_ok", "icrc_bad", "icrc_unchecked"] {
            if let Some(o) = f.as_object_mut() {
                o.remove(k);
            }
            if let Some(o) = f["counters"].as_object_mut() {
                o.remove(k);
            }
        }
    }
    v
}

#[test]
fn kept_frames_analyze_like_captured_ones_with_no_payload_and_masked_keys() {
    let (mut before, mut frames, mut malformed) = (0u64, 0u64, 0u64);
    for path in samples() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let privacy = Privacy::new(true);
        let (raw, kept, link, leaked, leaky) = record(&path, &privacy);
        before += leaked;
        frames += leaky;
        eprintln!(
            "{name}: {leaked} payload bytes in {leaky} of {} frames",
            raw.len()
        );
        let (want, got) = (report(&raw, link), report(&kept, link));
        let diff = differences(&want, &got, String::new());
        assert!(diff.is_empty(), "{name}: {}", diff.join("\n"));
        let a = analysis();
        let mut d = dissectors::decode(link, &[], 0, &a.decode);
        let mut d0 = dissectors::decode(link, &[], 0, &a.decode);
        for (r, k) in raw.since(0).zip(kept.since(0)) {
            assert_eq!(r.orig_len, k.orig_len, "{name}: length on the wire kept");
            dissectors::decode_into(link, k.data, k.orig_len, &a.decode, &mut d);
            dissectors::decode_into(link, r.data, r.orig_len, &a.decode, &mut d0);
            let (Some(x), Some(x0)) = (d.roce, d0.roce) else {
                continue;
            };
            if x0.mad.is_none() && x0.payload_len > 0 && x0.payload_offset > x0.bth_offset {
                let past = k.data.len().saturating_sub(x0.payload_offset as usize) as u64;
                let good = matches!(d0.stop.kind, StopKind::Complete | StopKind::Truncated);
                assert!(!good || past == 0, "{name}: payload kept");
                if good {
                    assert_eq!(d.stop.kind, StopKind::Truncated, "{name}");
                } else {
                    malformed += past;
                }
            }
            if let (Some(m), Some(o)) = (x.reth, x0.reth) {
                assert_eq!(m.rkey, 0, "{name}");
                assert_ne!(m.va, o.va, "{name}: VA masked");
                assert_eq!(m.dma_len, o.dma_len, "{name}");
            }
            if let Some(m) = x.atomic_eth {
                assert_eq!(m, Default::default(), "{name}: atomic operands masked");
            }
            if x0.payload_len == 0 {
                assert_eq!(x.icrc, x0.icrc, "{name}: ICRC of a packet without payload");
            }
        }
    }
    eprintln!(
        "payload bytes at a 128-byte snaplen: {before} in {frames} frames; \
         kept: {malformed}, all in frames the decoder found malformed"
    );
    assert!(before > 0);
}

#[test]
fn redaction_off_keeps_values_and_a_secret_is_per_run() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples/read-loss.pcap");
    let (raw, kept, link, ..) = record(&path, &Privacy::new(false));
    let a = analysis();
    let mut d = dissectors::decode(link, &[], 0, &a.decode);
    let mut d0 = dissectors::decode(link, &[], 0, &a.decode);
    let mut reths = 0;
    for (r, k) in raw.since(0).zip(kept.since(0)) {
        dissectors::decode_into(link, k.data, k.orig_len, &a.decode, &mut d);
        dissectors::decode_into(link, r.data, r.orig_len, &a.decode, &mut d0);
        if let (Some(x), Some(x0)) = (d.roce, d0.roce) {
            assert_eq!(x.reth, x0.reth);
            reths += usize::from(x.reth.is_some());
        }
    }
    assert!(reths > 0);
    let (p, q) = (Privacy::new(true), Privacy::new(true));
    let (_, a1, ..) = record(&path, &p);
    let (_, a2, ..) = record(&path, &q);
    assert!(a1.since(0).zip(a2.since(0)).any(|(x, y)| x.data != y.data));
}

/// The paths where two JSON values differ, with both values.
fn differences(a: &Value, b: &Value, at: String) -> Vec<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.dedup();
            keys.into_iter()
                .flat_map(|k| {
                    let n = Value::Null;
                    differences(
                        x.get(k).unwrap_or(&n),
                        y.get(k).unwrap_or(&n),
                        format!("{at}.{k}"),
                    )
                })
                .collect()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .flat_map(|(i, (p, q))| differences(p, q, format!("{at}[{i}]")))
            .collect(),
        _ if a == b => Vec::new(),
        _ => vec![format!("{at}: {a} != {b}")],
    }
}

#[test]
fn a_remembered_offset_is_the_keyed_hash_of_its_connection() {
    use std::net::{IpAddr, Ipv4Addr};
    let p = Privacy::new(true);
    let conn = |host: u8, qp: u32| -> Conn {
        (
            Some(IpAddr::V4(Ipv4Addr::new(198, 51, 100, host))),
            None,
            Some(dissectors::Qpn(qp)),
        )
    };
    // Connections sharing a slot (QPs REMEMBERED apart, or the same QP to other hosts)
    // push each other out; every answer, first or remembered, is the connection's own.
    for round in 0..3 {
        for host in 1..4u8 {
            for qp in [7, 7 + REMEMBERED as u32, 7 + 2 * REMEMBERED as u32, 8] {
                let c = conn(host, qp);
                assert_eq!(p.offset_of(c), p.key.hash_one(c), "round {round} {c:?}");
                assert_eq!(p.offset_of(c), p.key.hash_one(c), "again {c:?}");
            }
        }
    }
    assert_ne!(p.offset_of(conn(1, 7)), p.offset_of(conn(2, 7)));
    let none: Conn = (None, None, None);
    assert_eq!(p.offset_of(none), p.key.hash_one(none));
}
