//! Many queue pairs between the same two hosts (issue #17): every connection of
//! `synth many-qp`'s truth is paired, whether the summaries are kept or not, and the
//! pairing holds where the ACKs come long after their requests.

use crate::common;
use common::{rocetap, TempDir};
use serde_json::Value;

fn json(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

/// Makes a many-qp trace; returns its path and the truth's connection count.
fn trace(dir: &TempDir, qps: u32, packets: u32) -> (String, u64) {
    let p = dir.path(&format!("m{qps}-{packets}.pcap"));
    let p = p.to_str().unwrap().to_string();
    let (q, n) = (qps.to_string(), packets.to_string());
    let o = rocetap(&[
        "synth",
        "many-qp",
        "--qps",
        &q,
        "--peers",
        "1",
        "--packets",
        &n,
        "-o",
        &p,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let truth: Value =
        serde_json::from_slice(&std::fs::read(format!("{p}.truth.json")).unwrap()).unwrap();
    let conns = truth["observable"]["connections"]
        .as_u64()
        .or_else(|| truth["connections"].as_u64())
        .expect("truth connections");
    (p, conns)
}

/// 1,000 QPs between two hosts, about twenty packets each: every connection paired,
/// and `totals.connections` counts them all even when only ten flow summaries are kept
/// (it once counted only the connections of the kept summaries).
#[test]
fn every_connection_of_a_large_host_pair_is_paired() {
    // Heavy (thousands of QPs): not beside another heavy test.
    let _serial = common::serial();
    let dir = TempDir::new("many-qp");
    let (p, want) = trace(&dir, 1000, 20_000);
    assert_eq!(want, 1000);
    for extra in [&[][..], &["--max-flows", "10"][..]] {
        let mut args = vec!["analyze", "-q", "--format", "json"];
        args.extend_from_slice(extra);
        args.push(&p);
        let r = json(&rocetap(&args));
        assert_eq!(r["totals"]["connections"], want, "{extra:?}");
        assert_eq!(r["totals"]["flows"], 2 * want, "{extra:?}");
        if extra.is_empty() {
            let flows = r["flows"].as_array().unwrap();
            let unpaired = flows.iter().filter(|f| f["peer"].is_null()).count();
            assert_eq!(unpaired, 0);
        }
    }
}

/// 2,000 QPs that each send one message and are ACKed only at the end of the trace:
/// nearly every response finds the request stream that sent its PSN (the recent-PSN
/// table keeps a bucket per flow), none is paired with the wrong stream.
#[test]
fn late_acks_still_find_their_requests() {
    // Heavy (thousands of QPs): not beside another heavy test.
    let _serial = common::serial();
    let dir = TempDir::new("many-qp-late");
    let (p, want) = trace(&dir, 2000, 8_000);
    let r = json(&rocetap(&["analyze", "-q", "--format", "json", &p]));
    let got = r["totals"]["connections"].as_u64().unwrap();
    assert!(got <= want && got * 100 >= want * 99, "{got} of {want}");
    // QP j connects the host's QPN 0x000100 + j with the peer's QPN 0x400000 + j
    // (the truth's notes): both directions of a connection name the same j.
    let flows = r["flows"].as_array().unwrap();
    let qp_of = |id: &Value| {
        flows
            .iter()
            .find(|f| &f["id"] == id)
            .and_then(|f| f["qp"].as_str())
            .map(|s| u32::from_str_radix(s.trim_start_matches("0x"), 16).unwrap())
            .map(|q| {
                if q >= 0x40_0000 {
                    q - 0x40_0000
                } else {
                    q - 0x100
                }
            })
    };
    for f in flows.iter().filter(|f| !f["peer"].is_null()) {
        let (a, b) = (qp_of(&f["id"]).unwrap(), qp_of(&f["peer"]).unwrap());
        assert_eq!(a, b, "{f}");
    }
}

/// 2,000 flows, eight of the report writers' blocks, rendered on two threads: the JSON
/// flows and connections and the CSV rows come in id order, each CSV row the JSON flow
/// of its line (the blocks neither lost, doubled nor swapped).
#[test]
fn reports_of_thousands_of_flows_keep_every_flow_in_order() {
    // Heavy (thousands of QPs): not beside another heavy test.
    let _serial = common::serial();
    let dir = TempDir::new("many-qp-report");
    let (p, conns) = trace(&dir, 1000, 20_000);
    let r = json(&rocetap(&["analyze", "-q", "--format", "json", &p]));
    let flows = r["flows"].as_array().unwrap();
    assert_eq!(flows.len() as u64, 2 * conns);
    for (i, f) in flows.iter().enumerate() {
        assert_eq!(f["id"], i, "flow {i}");
    }
    let connections = r["connections"].as_array().unwrap();
    assert_eq!(connections.len() as u64, conns);
    let o = rocetap(&["analyze", "-q", "--format", "csv", &p]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (id, packets, qp, peer) = (col("id"), col("packets"), col("qp"), col("peer"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), flows.len());
    for (row, f) in rows.iter().zip(flows) {
        assert_eq!(row[id], f["id"].to_string());
        assert_eq!(row[packets], f["packets"].to_string());
        assert_eq!(row[qp], f["qp"].as_str().unwrap());
        assert_eq!(row[peer], f["peer"].to_string());
    }
}
