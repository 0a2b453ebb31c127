//! The analyzer's use of CM: on the public captures with RDMA-CM / IB CM setups
//! (../shared/captures/public), every connection the CM set up is paired exactly —
//! the requester's flow to the QPN of the REP, the responder's to the QPN of the REQ —
//! and its setup time is reported; where the requester's flow carries only requests,
//! its first PSN is the REP's starting PSN (nothing missing at the start).

use crate::common;

use serde_json::Value;

fn analyze(path: &std::path::Path) -> Value {
    let o = common::rocetap(&["analyze", path.to_str().unwrap(), "-F", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn flow<'a>(doc: &'a Value, id: &Value) -> &'a Value {
    doc["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| &f["id"] == id)
        .unwrap()
}

#[test]
fn cm_setups_of_the_public_captures_pair_their_flows_exactly() {
    let Some(dir) = common::captures_dir() else {
        return;
    };
    // (file, CM sessions, of which the requester's first PSN is checkable: every one
    // whose requester flow carried a request — also where it carries responses too, which
    // rping, ib2 and nvme-discover's do)
    let cases = [
        ("rdma_cm.pcap", 2, 2),
        ("rdma_ib_tutorial_rping.pcap", 1, 1),
        ("ib2.pcap", 1, 1),
        ("rdma-softroce-demo_infiniband.pcap", 3, 3),
        ("roce_capture_read-write-ecn.pcap", 1, 1),
        ("nvme-discover.pcap", 1, 1),
    ];
    for (name, sessions, checkable) in cases {
        let doc = analyze(&dir.join("public").join(name));
        let cm = doc["cm"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no cm"));
        assert_eq!(cm.len(), sessions, "{name}");
        let mut checked = 0;
        for s in cm {
            assert!(s["setup_ns"].as_u64().is_some(), "{name}: {s}");
            let [a, b] = [&s["flows"][0], &s["flows"][1]];
            let (fa, fb) = (flow(&doc, a), flow(&doc, b));
            // Exact pairing, by the QPNs the CM exchanged.
            assert_eq!(&fa["peer"], b, "{name}");
            assert_eq!(&fb["peer"], a, "{name}");
            assert_eq!(fa["qp"], s["responder_qpn"], "{name}");
            assert_eq!(fb["qp"], s["requester_qpn"], "{name}");
            assert_eq!(fa["src"], s["requester"], "{name}");
            let pair = doc["connections"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["flows"][0] == a.min_id(b) && c["flows"][1] == a.max_id(b));
            assert!(pair, "{name}: connection {a}-{b} missing");
            if let Some(m) = s["missing_at_start"][0].as_u64() {
                assert_eq!(m, 0, "{name}: {s}");
                assert_eq!(fa["first_psn"], s["requester_first_psn"], "{name}");
                checked += 1;
            }
        }
        assert_eq!(checked, checkable, "{name}");
        let setup = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == "cm_setup")
            .unwrap_or_else(|| panic!("{name}: no cm_setup finding"));
        assert_eq!(setup["count"], sessions as u64, "{name}");
    }
}

trait Ids {
    fn min_id(&self, o: &Value) -> Value;
    fn max_id(&self, o: &Value) -> Value;
}

impl Ids for Value {
    fn min_id(&self, o: &Value) -> Value {
        self.as_u64().unwrap().min(o.as_u64().unwrap()).into()
    }
    fn max_id(&self, o: &Value) -> Value {
        self.as_u64().unwrap().max(o.as_u64().unwrap()).into()
    }
}

/// samples/cm-setup.pcap: every CM fact its truth states is what the analyzer finds —
/// the rejected setup and its reason, the unanswered REQs with their count and retry
/// interval, the 3 packets missing at the start of one connection, exact pairing.
#[test]
fn the_cm_sample_gives_the_setup_findings_its_truth_states() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("cm-setup.pcap.truth.json")).unwrap(),
    )
    .unwrap();
    let facts = &truth["facts"];
    let doc = analyze(&root.join("cm-setup.pcap"));
    let find = |kind: &str| {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} finding"))
            .clone()
    };
    let rej = find("cm_rejected");
    assert_eq!(rej["severity"], "error");
    assert!(rej["message"]
        .as_str()
        .unwrap()
        .contains("invalid service ID (reason 8)"));
    let un = find("cm_unanswered");
    assert_eq!(un["count"], 1);
    let msg = un["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!("{} CM REQs", facts["cm_unanswered"]["reqs"])),
        "{msg}"
    );
    assert!(msg.contains("retried every 268.4 ms"), "{msg}");
    let missing = find("cm_first_packets_missing");
    assert_eq!(
        missing["count"],
        facts["cm_connections"][1]["first_packets_missing"]
    );
    let cm = doc["cm"].as_array().unwrap();
    assert_eq!(cm.len(), 4);
    for want in facts["cm_connections"].as_array().unwrap() {
        let s = cm
            .iter()
            .find(|s| {
                s["requester"] == want["requester"] && s["responder_qpn"] == want["responder_qp"]
            })
            .unwrap_or_else(|| panic!("no session for {want}"));
        assert_eq!(s["requester_first_psn"], want["rep_start_psn"]);
        assert_eq!(s["missing_at_start"][0], want["first_packets_missing"]);
        let fa = flow(&doc, &s["flows"][0]);
        assert_eq!(fa["first_psn"], want["first_psn_captured"]);
        assert_eq!(fa["peer"], s["flows"][1]);
    }
    assert_eq!(doc["totals"]["connections"], 2);
}
