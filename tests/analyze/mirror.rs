//! Switch mirrors of the samples: every frame of `clean-rc`, `loss-upstream` and
//! `rxe-loss-upstream` wrapped (by `dissectors::tunnel::encap`) in ERSPAN II, ERSPAN III
//! (with the platform subheader), GRE (gretap, with key and checksum), VXLAN and Geneve.
//! - `rocetap analyze` of each mirror says exactly what it says of the sample (JSON and
//!   text, less the lines that name the input and the mirror's own `mirrors` section);
//! - tshark decodes every outer field (`gre.*`, `erspan.*`, `vxlan.*`, `geneve.*`) of
//!   every frame to the value `rocetap decode --format json` gives.

use crate::common::{self, TempDir};
use dissectors::tunnel::encap::{wrap, Encap};
use dissectors::TunnelKind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const SAMPLES: &[&str] = &["clean-rc", "loss-upstream", "rxe-loss-upstream"];

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(format!("{name}.pcap"))
}

/// The mirrors the tests make, with a file-name tag.
pub fn encaps() -> Vec<(&'static str, Encap)> {
    let mut e2 = Encap::new(TunnelKind::ErspanII, 5);
    e2.port = 0x1_0002;
    e2.vlan = 100;
    e2.cos = 3;
    let mut e3 = Encap::new(TunnelKind::ErspanIII, 6);
    e3.port = 3;
    e3.egress = true;
    e3.platform = Some((3, 0x0001_0000_0000_0007));
    let mut gre = Encap::new(TunnelKind::Gre, 0x00c0_ffee);
    gre.gre_key = true;
    gre.gre_checksum = true;
    vec![
        ("erspan2", e2),
        ("erspan3", e3),
        ("gretap", gre),
        ("vxlan", Encap::new(TunnelKind::Vxlan, 4242)),
        ("geneve", Encap::new(TunnelKind::Geneve, 77)),
    ]
}

/// A classic little-endian pcap of Ethernet frames: its global header and its records.
fn read_pcap(p: &Path) -> ([u8; 24], Vec<common::pcap::Record>) {
    let (hdr, recs) = common::pcap::read_pcap(p);
    assert_eq!(
        u32::from_le_bytes(hdr[20..24].try_into().unwrap()),
        1,
        "Ethernet"
    );
    (hdr, recs)
}

/// The pcap of `name` with every frame wrapped in `e` (the GRE sequence number counts
/// frames; the ERSPAN III timestamp is the frame's microseconds).
pub fn mirrored(src: &Path, e: &Encap) -> Vec<u8> {
    let (hdr, recs) = read_pcap(src);
    let mut out = hdr.to_vec();
    // Room for the outer headers.
    out[16..20].copy_from_slice(&(1u32 << 18).to_le_bytes());
    let mut f = Vec::new();
    for (i, (ts, data, orig)) in recs.iter().enumerate() {
        f.clear();
        let usec = u32::from_le_bytes(ts[4..8].try_into().unwrap());
        wrap(e, i as u32 + 1, usec, data, &mut f).expect("wrap");
        let grow = (f.len() - data.len()) as u32;
        out.extend_from_slice(ts);
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(orig + grow).to_le_bytes());
        out.extend_from_slice(&f);
    }
    out
}

/// The report without what names the input file or describes the mirror itself.
fn comparable(report: &str, input: &str) -> String {
    let mut v: serde_json::Value = match serde_json::from_str(report) {
        Ok(v) => v,
        Err(_) => {
            return report
                .lines()
                .filter(|l| !l.contains(input))
                .take_while(|l| !l.starts_with("Mirror sessions"))
                .collect::<Vec<_>>()
                .join("\n")
                .trim_end()
                .to_string()
        }
    };
    if let Some(m) = v.as_object_mut() {
        m.remove("mirrors");
        m.remove("mirrors_other_frames");
        m.remove("inputs");
        m.remove("input");
    }
    serde_json::to_string_pretty(&v).unwrap()
}

#[test]
fn analysis_of_every_mirror_equals_the_sample() {
    let dir = TempDir::new("mirror-analyze");
    for s in SAMPLES {
        let src = sample(s);
        std::fs::copy(&src, dir.path("orig.pcap")).unwrap();
        for fmt in ["json", "text"] {
            let want = comparable(
                &common::rocetap_in(&["analyze", "-F", fmt, "orig.pcap"], &dir.0),
                "orig.pcap",
            );
            for (tag, e) in encaps() {
                let name = format!("{s}.{tag}.pcap");
                std::fs::write(dir.path(&name), mirrored(&src, &e)).unwrap();
                let got = comparable(
                    &common::rocetap_in(&["analyze", "-F", fmt, &name], &dir.0),
                    &name,
                );
                if got != want {
                    let diff: Vec<_> = got
                        .lines()
                        .zip(want.lines())
                        .filter(|(a, b)| a != b)
                        .take(10)
                        .collect();
                    panic!("{s} mirrored in {tag} ({fmt}): the analysis differs: {diff:#?}");
                }
            }
        }
    }
}

/// `TUN_MIRROR_DIR=DIR cargo test --test analyze mirror::write_mirrors -- --ignored`
/// writes every mirror of every sample to DIR (to look at them with tshark).
#[test]
#[ignore = "writes files for a person to look at"]
fn write_mirrors() {
    let dir = PathBuf::from(std::env::var("TUN_MIRROR_DIR").expect("TUN_MIRROR_DIR"));
    for s in SAMPLES {
        for (tag, e) in encaps() {
            std::fs::write(
                dir.join(format!("{s}.{tag}.pcap")),
                mirrored(&sample(s), &e),
            )
            .unwrap();
        }
    }
}

#[test]
fn one_stream_of_two_sessions_reports_two_taps() {
    let dir = TempDir::new("mirror-taps");
    let src = sample("loss-upstream");
    let (hdr, recs) = read_pcap(&src);
    let mut a = Encap::new(TunnelKind::ErspanIII, 6);
    a.port = 3;
    let mut b = a;
    b.session = 7;
    b.egress = true;
    let mut out = hdr.to_vec();
    out[16..20].copy_from_slice(&(1u32 << 18).to_le_bytes());
    let mut f = Vec::new();
    for (i, (ts, data, orig)) in recs.iter().enumerate() {
        f.clear();
        wrap(if i % 3 == 0 { &b } else { &a }, i as u32, 0, data, &mut f).unwrap();
        out.extend_from_slice(ts);
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(orig + (f.len() - data.len()) as u32).to_le_bytes());
        out.extend_from_slice(&f);
    }
    std::fs::write(dir.path("two.pcap"), &out).unwrap();
    let v: serde_json::Value = serde_json::from_str(&common::rocetap_in(
        &["analyze", "-F", "json", "two.pcap"],
        &dir.0,
    ))
    .unwrap();
    let taps = v["mirrors"].as_array().expect("a mirrors section");
    assert_eq!(taps.len(), 2, "{taps:?}");
    let n = recs.len() as u64;
    let (t6, t7) = (&taps[0], &taps[1]);
    assert_eq!(
        (t6["session"].as_u64(), t6["direction"].as_str()),
        (Some(6), Some("ingress"))
    );
    assert_eq!(
        (t7["session"].as_u64(), t7["direction"].as_str()),
        (Some(7), Some("egress"))
    );
    assert_eq!(t7["frames"].as_u64(), Some(n.div_ceil(3)));
    assert_eq!(
        t6["frames"].as_u64().unwrap() + t7["frames"].as_u64().unwrap(),
        n
    );
    assert_eq!(v["mirrors_other_frames"].as_u64(), Some(0));
    // Every flow of the report was carried by some tap.
    let carried: std::collections::BTreeSet<&str> = taps
        .iter()
        .flat_map(|t| {
            t["flows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap())
        })
        .collect();
    let flows = v["flows"].as_array().unwrap();
    assert!(!flows.is_empty());
    for fl in flows {
        let key = format!(
            "{} → {} {}",
            fl["src"].as_str().unwrap(),
            fl["dst"].as_str().unwrap(),
            fl["qp"].as_str().unwrap()
        );
        assert!(carried.contains(key.as_str()), "{key} not in {carried:?}");
    }
    let text = common::rocetap_in(&["analyze", "two.pcap"], &dir.0);
    assert!(
        text.contains("erspan3 from 198.51.100.1 session 7 hw 3 egress"),
        "{text}"
    );
    // A host capture has no mirrors section.
    std::fs::copy(&src, dir.path("host.pcap")).unwrap();
    let host = common::rocetap_in(&["analyze", "-F", "json", "host.pcap"], &dir.0);
    assert!(!host.contains("\"mirrors\""));
}

#[test]
fn tshark_reads_every_outer_field_as_rocetap_does() {
    if !common::have("tshark") {
        common::skip("tshark not installed");
        return;
    }
    let dir = TempDir::new("mirror-tshark");
    let mut compared = 0usize;
    for s in SAMPLES {
        for (tag, e) in encaps() {
            let name = format!("{s}.{tag}.pcap");
            let path = dir.path(&name);
            std::fs::write(&path, mirrored(&sample(s), &e)).unwrap();
            let mut args = vec!["-r".to_string(), path.display().to_string()];
            args.extend(["-T", "fields", "-E", "separator=\t"].map(String::from));
            for f in common::tshark::OUTER_FIELDS
                .iter()
                .chain(&["ip.src", "gre.checksum.status"])
            {
                args.push("-e".into());
                args.push((*f).to_string());
            }
            let o = Command::new("tshark").args(&args).output().unwrap();
            assert!(
                o.status.success(),
                "tshark: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let ts = String::from_utf8(o.stdout).unwrap();
            let js: serde_json::Value = serde_json::from_str(&common::rocetap_in(
                &["decode", "-F", "json", &name],
                &dir.0,
            ))
            .unwrap();
            let frames = js["frames"].as_array().unwrap();
            let rows: Vec<&str> = ts.lines().collect();
            assert_eq!(rows.len(), frames.len(), "{name}: frame counts");
            for (i, (row, fr)) in rows.iter().zip(frames).enumerate() {
                let cols: Vec<&str> = row.split('\t').collect();
                let mut diffs = BTreeMap::new();
                for (k, f) in common::tshark::OUTER_FIELDS.iter().enumerate() {
                    let theirs = common::tshark::int_of(cols[k]);
                    let ours = fr
                        .get(*f)
                        .map(common::tshark::json_field)
                        .and_then(|v| common::tshark::int_of(&v));
                    if theirs != ours {
                        diffs.insert(*f, (cols[k].to_string(), ours));
                    }
                    compared += usize::from(theirs.is_some());
                }
                // tshark lists the outer then the inner source address.
                let ips = format!(
                    "{},{}",
                    common::tshark::json_field(&fr["rocetap.tunnel.ip.src"]),
                    common::tshark::json_field(&fr["ip.src"])
                );
                if cols[common::tshark::OUTER_FIELDS.len()] != ips {
                    diffs.insert(
                        "ip.src",
                        (cols[common::tshark::OUTER_FIELDS.len()].to_string(), None),
                    );
                }
                // The GRE checksum the encapsulation computed is one tshark accepts.
                let status = cols[common::tshark::OUTER_FIELDS.len() + 1];
                if e.gre_checksum && status != "1" {
                    diffs.insert("gre.checksum.status", (status.to_string(), None));
                }
                assert!(
                    diffs.is_empty(),
                    "{name} frame {}: tshark vs rocetap {diffs:?}",
                    i + 1
                );
            }
        }
    }
    eprintln!("mirror: {compared} outer and inner field values equal tshark's");
    assert!(compared > 10_000, "{compared}");
}
