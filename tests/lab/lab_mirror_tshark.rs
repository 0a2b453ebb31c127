//! `lab_mirror`'s cross-check: tshark and `rocetap decode --format json` read the same
//! outer fields (GRE, ERSPAN, VXLAN, Geneve, the outer source address) of every frame of a
//! kernel exporter's recording.

use crate::common::tshark::{int_of, json_field, OUTER_FIELDS};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// tshark vs `rocetap decode` on every frame of `p`: the number of values compared, or
/// the first disagreements.
pub fn tshark_check(p: &Path, exporter: &str, gre_checksum: bool) -> Result<usize, String> {
    let mut args = vec!["-r".to_string(), p.display().to_string()];
    args.extend(decode_as(p)?);
    args.extend(["-T", "fields", "-E", "separator=\t"].map(String::from));
    for f in OUTER_FIELDS
        .iter()
        .chain(&["ip.src", "ipv6.src", "gre.checksum.status"])
    {
        args.push("-e".into());
        args.push((*f).to_string());
    }
    let o = Command::new("tshark").args(&args).output().unwrap();
    if !o.status.success() {
        return Err(format!("tshark: {}", String::from_utf8_lossy(&o.stderr)));
    }
    let ts = String::from_utf8(o.stdout).unwrap();
    let dir = p.parent().unwrap();
    let js: Value = serde_json::from_str(&crate::common::rocetap_in(
        &[
            "decode",
            "-F",
            "json",
            p.file_name().unwrap().to_str().unwrap(),
        ],
        dir,
    ))
    .unwrap();
    let frames = js["frames"].as_array().unwrap();
    let rows: Vec<&str> = ts.lines().collect();
    if rows.len() != frames.len() {
        return Err(format!(
            "{} tshark rows, {} frames",
            rows.len(),
            frames.len()
        ));
    }
    let n = OUTER_FIELDS.len();
    let mut compared = 0;
    for (i, (row, fr)) in rows.iter().zip(frames).enumerate() {
        let cols: Vec<&str> = row.split('\t').collect();
        let mut diffs = BTreeMap::new();
        for (k, f) in OUTER_FIELDS.iter().enumerate() {
            let theirs = int_of(cols[k]);
            let ours = fr.get(*f).map(json_field).and_then(|v| int_of(&v));
            if theirs != ours {
                diffs.insert(*f, (cols[k].to_string(), ours));
            }
            compared += usize::from(theirs.is_some());
        }
        // The outer source: tshark lists the outer layer's address first.
        let outer = if exporter.contains(':') {
            cols[n + 1]
        } else {
            cols[n]
        };
        let ours = json_field(&fr["rocetap.tunnel.ip.src"]);
        if outer.split(',').next() != Some(ours.as_str()) || ours != exporter {
            diffs.insert("outer ip src", (outer.to_string(), None));
        }
        compared += 1;
        // gretap's checksum, computed by the kernel, is one tshark accepts.
        if gre_checksum && cols[n + 2] != "1" {
            diffs.insert("gre.checksum.status", (cols[n + 2].to_string(), None));
        }
        if !diffs.is_empty() {
            return Err(format!("frame {}: tshark vs rocetap {diffs:?}", i + 1));
        }
    }
    Ok(compared)
}

/// tshark tries a UDP datagram's lower port first: the kernel's geneve picks source ports
/// over the whole range (one mixed-encap flow left from 3785, BFD echo's port, and tshark
/// read BFD). Each outer source port below 4789 / 6081 is told to decode as the tunnel.
fn decode_as(p: &Path) -> Result<Vec<String>, String> {
    let o = Command::new("tshark")
        .arg("-r")
        .arg(p)
        .args(["-T", "fields", "-E", "occurrence=f"])
        .args(["-e", "udp.srcport", "-e", "udp.dstport"])
        .output()
        .map_err(|e| format!("tshark: {e}"))?;
    let mut ports = std::collections::BTreeSet::new();
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        let mut it = l.split('\t').map(|x| x.parse::<u16>().ok());
        if let (Some(Some(src)), Some(Some(dst))) = (it.next(), it.next()) {
            let tunnel = match dst {
                4789 => "vxlan",
                6081 => "geneve",
                _ => continue,
            };
            if src < dst {
                ports.insert((src, tunnel));
            }
        }
    }
    Ok(ports
        .into_iter()
        .flat_map(|(port, t)| ["-d".to_string(), format!("udp.port=={port},{t}")])
        .collect())
}
