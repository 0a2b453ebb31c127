//! Every fixture of `tests/fixtures/nccl/` (written by its `make.py` from NCCL's format
//! strings, versions cited in each file's header) triaged from the log alone: the
//! errors read, the right cause ranked first, each configuration mistake found.

use crate::common::rocetap;
use serde_json::Value;

pub fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/nccl/{name}", env!("CARGO_MANIFEST_DIR"))
}

pub fn json(args: &[&str]) -> Value {
    let mut a = vec!["nccl", "--format", "json"];
    a.extend_from_slice(args);
    let out = rocetap(&a);
    assert!(
        out.status.success(),
        "{a:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn first_causes(doc: &Value) -> Vec<String> {
    doc["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["causes"][0]["cause"].as_str().unwrap().to_string())
        .collect()
}

fn config_codes(doc: &Value) -> Vec<String> {
    doc["config"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn eight_ranks_two_rails() {
    let d = json(&[&fixture("8ranks-two-rails.log")]);
    assert_eq!(d["schema"], "rocetap.nccl/1");
    assert_eq!(d["processes"].as_array().unwrap().len(), 8);
    let p3 = &d["processes"][3];
    assert_eq!(
        (
            p3["host"].as_str(),
            p3["rank"].as_u64(),
            p3["gid_index"].as_i64()
        ),
        (Some("gpu-node-1"), Some(3), Some(3))
    );
    assert_eq!(p3["traffic_class"], "106");
    assert_eq!(p3["oob_if"], "eth0");
    assert_eq!(p3["hcas"][1]["name"], "mlx5_1");
    assert_eq!(
        p3["channels"][0],
        serde_json::json!({"channel": 0, "from": 3, "to": 4, "direction": "send", "net": "IB", "dev": 1, "hca": "mlx5_1"})
    );
    let e = &d["errors"][0];
    assert_eq!(d["errors"].as_array().unwrap().len(), 1);
    assert_eq!(
        (
            e["host"].as_str(),
            e["pid"].as_u64(),
            e["cuda_dev"].as_u64()
        ),
        (Some("gpu-node-2"), Some(4101), Some(1))
    );
    assert_eq!(
        (e["status"].as_u64(), e["status_name"].as_str()),
        (Some(12), Some("IBV_WC_RETRY_EXC_ERR"))
    );
    assert_eq!(
        (e["opcode"].as_u64(), e["vendor_err"].as_u64()),
        (Some(0), Some(129))
    );
    assert_eq!(e["peer"], "198.18.1.11");
    assert_eq!(e["local_gid"], "::ffff:198.18.2.12");
    assert_eq!(e["remote_gid"], "::ffff:198.18.2.11");
    // 2.21 does not print the HCA: the QP line with the same GID names it.
    assert_eq!(e["hca"], "mlx5_1");
    assert_eq!(e["rank"], 5);
    assert_eq!(e["time"], Value::Null);
    assert!(config_codes(&d).is_empty(), "{:?}", config_codes(&d));
    assert_eq!(first_causes(&d), ["path_loss"]);
    for c in e["causes"].as_array().unwrap() {
        assert!(c["evidence"].is_array() && c["next"].is_array(), "{c}");
    }
}

#[test]
fn sixty_four_ranks_with_a_flush() {
    let d = json(&[&fixture("64ranks-two-rails.log")]);
    assert_eq!(d["processes"].as_array().unwrap().len(), 64);
    assert_eq!(
        first_causes(&d),
        ["path_loss", "flushed_after_earlier_error"]
    );
    assert_eq!(d["errors"][0]["hca"], "mlx5_1");
    assert_eq!(d["errors"][0]["time"], "2026-12-05 23:50:12");
    assert_eq!(d["errors"][1]["status_name"], "IBV_WC_WR_FLUSH_ERR");
    assert!(config_codes(&d).is_empty());
}

#[test]
fn each_config_mistake_from_the_log_alone() {
    for (file, code, first) in [
        ("config-link-local-gid.log", "link_local_gid", "wrong_gid"),
        ("config-roce-v1.log", "roce_v1_gid", "wrong_gid"),
        (
            "config-tc-lossy.log",
            "tc_not_lossless",
            "lossy_traffic_class",
        ),
        ("config-hca-no-route.log", "hca_no_route", "no_route"),
        (
            "config-mixed-modes.log",
            "mixed_roce_modes",
            "mixed_roce_modes",
        ),
    ] {
        let d = json(&[&fixture(file)]);
        assert!(
            config_codes(&d).contains(&code.to_string()),
            "{file}: {:?}",
            config_codes(&d)
        );
        assert!(
            first_causes(&d).iter().all(|c| c == first),
            "{file}: {:?}",
            first_causes(&d)
        );
    }
    // The lossless priority is the user's: TC 41 is priority 1.
    let d = json(&[&fixture("config-tc-lossy.log"), "--lossless-priority", "1"]);
    assert!(config_codes(&d).is_empty());
}

#[test]
fn text_and_fail_on() {
    let out = rocetap(&["nccl", &fixture("config-roce-v1.log")]);
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(
        t.contains("Configuration mistakes (from the log alone):"),
        "{t}"
    );
    assert!(t.contains("1. wrong_gid"), "{t}");
    let out = rocetap(&[
        "nccl",
        &fixture("config-roce-v1.log"),
        "--fail-on",
        "status_12 > 0",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let out = rocetap(&[
        "nccl",
        &fixture("config-roce-v1.log"),
        "--fail-on",
        "config_mistakes > 5",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let out = rocetap(&[
        "nccl",
        &fixture("config-roce-v1.log"),
        "--fail-on",
        "no_such_value > 0",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn every_fixture_error_joins_its_flow() {
    // The 8-rank log with a capture of gpu-node-2's rail-1 port (make.py writes it).
    let d = json(&[
        &fixture("8ranks-two-rails.log"),
        "--capture",
        &fixture("8ranks-two-rails.pcap"),
    ]);
    let c = &d["errors"][0]["connection"];
    assert_eq!(
        (c["src"].as_str(), c["dst"].as_str()),
        (Some("198.18.2.12"), Some("198.18.2.11"))
    );
    assert_eq!(
        (c["qp"].as_str(), c["requester_qp"].as_str()),
        (Some("0x000101"), Some("0x000105"))
    );
    assert_eq!(
        (c["stop"]["psn"].as_u64(), c["stop"]["retries"].as_u64()),
        (Some(1005), Some(7))
    );
    assert_eq!(c["location"], "after_tap");
    assert_eq!(c["qpn_matched"], true);
    assert_eq!(first_causes(&d), ["path_loss"]);
    // The 64-rank log with two taps along the failing path: the segment of the loss.
    let t4 = fixture("64ranks-tap-dgx4.pcap");
    let t5 = fixture("64ranks-tap-dgx5.pcap");
    let d = json(&[
        &fixture("64ranks-two-rails.log"),
        "--capture",
        &t4,
        "--capture",
        &t5,
    ]);
    for e in d["errors"].as_array().unwrap() {
        let c = &e["connection"];
        assert_eq!(c["qp"], "0x000127", "{c}");
        assert_eq!(c["location"], "between_taps");
        assert_eq!(c["segment"], serde_json::json!([t4, t5]));
        assert_eq!(c["seen"][0]["retransmitted"], 35);
        assert_eq!(c["seen"][1]["retransmitted"], 0);
    }
    assert_eq!(
        first_causes(&d),
        ["path_loss", "flushed_after_earlier_error"]
    );
}
