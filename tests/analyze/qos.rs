//! QoS marking from the capture (issue 14, step 1): `samples/qos-mismarked.pcap` shows
//! every QoS finding in text, in JSON (stable `kind` keys and totals) and as a
//! `--fail-on` name; the clean samples show none of them.

use crate::common;

use common::{rocetap, sample};
use serde_json::Value;

fn json(file: &str) -> Value {
    let o = rocetap(&["analyze", file, "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// (finding kind = --fail-on name, severity, the total's value in qos-mismarked, words
/// of its text).
const FINDINGS: [(&str, &str, u64, &str); 6] = [
    (
        "qos_direction_mismatch",
        "warning",
        1,
        "on DSCP 26 PCP 3 but 198.18.2.2 → 198.18.2.3 QP 0x000303 on DSCP 0 PCP 0",
    ),
    (
        "data_dscp_mixed",
        "warning",
        31,
        "RoCE data rides 2 DSCPs: 26 (134 packets, 9 flows), 0 (31 packets, 3 flows)",
    ),
    (
        "data_dscp0",
        "warning",
        31,
        "31 data packets ride DSCP 0 (best effort) while 134 are marked",
    ),
    (
        "data_not_ect",
        "warning",
        26,
        "26 data packets are Not-ECT on a DSCP whose other data is ECN-capable (DSCP 26: 26 of 134)",
    ),
    (
        "cnp_other_dscp",
        "info",
        4,
        "4 CNPs ride another DSCP than the data they answer (CNPs on DSCP 48 (4); data on DSCP 26 (134), 0 (31))",
    ),
    (
        "roce_v1_and_v2",
        "warning",
        1,
        "1 host sends both RoCE v1 and RoCE v2 (198.18.2.6)",
    ),
];

#[test]
fn qos_mismarked_shows_every_finding_in_json_text_and_fail_on() {
    let file = sample("qos-mismarked.pcap");
    let doc = json(&file);
    let text = rocetap(&["analyze", &file]);
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    for (kind, severity, total, words) in FINDINGS {
        assert_eq!(doc["totals"][kind], total, "totals.{kind}");
        let f = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == kind)
            .unwrap_or_else(|| panic!("no finding {kind}"));
        assert_eq!(f["severity"], severity, "{kind}");
        assert_eq!(f["count"], total, "{kind}");
        let msg = f["message"].as_str().unwrap();
        assert!(msg.contains(words), "{kind}: {msg}");
        assert!(text.contains(words), "{kind} not in the text report");
        let rule = format!("{kind} > 0");
        let o = rocetap(&["analyze", &file, "--fail-on", &rule, "-q"]);
        assert_eq!(o.status.code(), Some(1), "--fail-on '{rule}'");
        let rule = format!("{kind} > {total}");
        let o = rocetap(&["analyze", &file, "--fail-on", &rule, "-q"]);
        assert_eq!(o.status.code(), Some(0), "--fail-on '{rule}'");
    }
    // Per direction: the split connection's answers changed neither DSCP nor PCP within
    // the flow, CNPs are kept apart from the ACKs they ride with.
    let flows = doc["flows"].as_array().unwrap();
    let by_qp = |qp: &str| flows.iter().find(|f| f["qp"] == qp).unwrap();
    let answers = by_qp("0x000303");
    assert_eq!(
        (answers["dscp"].as_u64(), answers["pcp"].as_u64()),
        (Some(0), Some(0))
    );
    let acks = by_qp("0x000301");
    assert_eq!(
        acks["dscp"], 26,
        "the ACK flow's DSCP is its ACKs', not its CNPs'"
    );
    assert_eq!(acks["cnp_dscp"], 48);
    assert_eq!(acks["dscp_changes"], 0, "CNPs are not a change of DSCP");
    assert_eq!(by_qp("0x000201")["cnp_other_dscp"], 4);
    assert_eq!(by_qp("0x000207")["encap"], "RoCEv1");
    for f in flows {
        assert_eq!(f["dscp_changes"], 0);
        assert_eq!(f["pcp_changes"], 0);
        assert_eq!(f["encap_changes"], 0);
    }
}

#[test]
fn clean_samples_have_no_qos_finding() {
    for name in [
        "clean-rc.pcap",
        "many-qp.pcap",
        "psn-wrap.pcap",
        "rxe-clean-write.pcap",
    ] {
        let doc = json(&sample(name));
        for (kind, ..) in FINDINGS {
            assert_eq!(doc["totals"][kind], 0, "{name}: totals.{kind}");
            assert!(
                !doc["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f["kind"] == kind),
                "{name}: finding {kind}"
            );
        }
    }
}

#[test]
fn qos_columns_are_in_the_flow_csv() {
    let o = rocetap(&["analyze", &sample("qos-mismarked.pcap"), "--format", "csv"]);
    assert!(o.status.success());
    let (head, rows) = common::parse_csv(&String::from_utf8_lossy(&o.stdout));
    for col in [
        "dscp",
        "pcp",
        "dscp_changes",
        "pcp_changes",
        "encap_changes",
        "cnp_dscp",
        "cnp_other_dscp",
    ] {
        assert!(head.iter().any(|h| h == col), "column {col}");
    }
    assert_eq!(rows.len(), 12);
}
