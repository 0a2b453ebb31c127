//! The join with the lab's dead-link capture (`samples/rxe-dead-rc-at-once.pcap`, real
//! Soft-RoCE): the error names the QP, the PSN and the place of the loss; two taps name
//! the segment; the host checks read the node's GID table (from the sample's truth) and
//! a recorded routing state.

use super::fixtures::{fixture, json};
use crate::common::{sample, TempDir};
use std::fs;

#[test]
fn dead_link_names_qp_psn_and_place() {
    let d = json(&[
        &fixture("dead-rc-at-once.log"),
        "--capture",
        &sample("rxe-dead-rc-at-once.pcap"),
    ]);
    let e = &d["errors"][0];
    assert_eq!(e["time"], "2026-12-05T23:47:41.310000000Z");
    assert_eq!(e["hca"], "rxe0");
    let c = &e["connection"];
    assert_eq!(
        (c["src"].as_str(), c["dst"].as_str()),
        (Some("198.18.0.1"), Some("198.18.0.2"))
    );
    assert_eq!(c["qp"], "0x000011");
    assert_eq!(c["stop"]["kind"], "retry_exhausted");
    assert_eq!(c["stop"]["psn"], 15480227);
    assert_eq!(c["stop"]["retries"], 5);
    assert_eq!(c["location"], "after_tap");
    assert_eq!(c["responder_silent"], true);
    assert_eq!(c["qpn_matched"], true);
    assert_eq!(c["in_window"], true);
    assert_eq!(e["causes"][0]["cause"], "path_loss");
    let ev = e["causes"][0]["evidence"].to_string();
    assert!(
        ev.contains("PSN 15480227") && ev.contains("QP 0x000011"),
        "{ev}"
    );
}

#[test]
fn two_taps_name_the_segment() {
    // The same tap twice, then a capture without the connection: the resends were seen
    // at the second and not the third.
    let s = sample("rxe-dead-rc-at-once.pcap");
    let other = sample("clean-rc.pcap");
    let d = json(&[
        &fixture("dead-rc-at-once.log"),
        "--capture",
        &s,
        "--capture",
        &other,
    ]);
    let c = &d["errors"][0]["connection"];
    assert_eq!(c["location"], "between_taps");
    assert_eq!(c["segment"][1].as_str(), Some(other.as_str()));
    assert_eq!(c["seen"][1]["packets"], 0);
}

fn sysfs(t: &TempDir, gid0: &str) -> String {
    let port = t.path("sys/class/infiniband/rxe0/ports/1");
    for d in ["gids", "gid_attrs/types", "gid_attrs/ndevs"] {
        fs::create_dir_all(port.join(d)).unwrap();
    }
    // From the sample's truth (`sysfs.A`): index 0 link-local, 1 the IPv4 GID.
    fs::write(port.join("state"), "4: ACTIVE\n").unwrap();
    fs::write(port.join("link_layer"), "Ethernet\n").unwrap();
    fs::write(port.join("gids/0"), format!("{gid0}\n")).unwrap();
    fs::write(
        port.join("gids/1"),
        "0000:0000:0000:0000:0000:ffff:c612:0001\n",
    )
    .unwrap();
    for i in 0..2 {
        fs::write(port.join(format!("gid_attrs/types/{i}")), "RoCE v2\n").unwrap();
        fs::write(port.join(format!("gid_attrs/ndevs/{i}")), "eth0\n").unwrap();
    }
    t.path("sys").display().to_string()
}

#[test]
fn sysfs_gid_table_checked() {
    let t = TempDir::new("nccl-sysfs");
    let root = sysfs(&t, "fe80:0000:0000:0000:5054:00ff:fe18:0001");
    let d = json(&[
        &fixture("dead-rc-at-once.log"),
        "--sysfs-root",
        &format!("rxe-a={root}"),
    ]);
    let h = &d["host_checks"][0];
    assert_eq!(
        (
            h["hca"].as_str(),
            h["verdict"].as_str(),
            h["gid_index"].as_i64()
        ),
        (Some("rxe0"), Some("ok"), Some(1))
    );
    // The same log pinning index 0: the link-local GID, ranked first.
    let log = fs::read_to_string(fixture("dead-rc-at-once.log"))
        .unwrap()
        .replace("environment to 1.", "environment to 0.");
    fs::write(t.path("gid0.log"), log).unwrap();
    let d = json(&[t.path("gid0.log").to_str().unwrap(), "--sysfs-root", &root]);
    assert_eq!(d["host_checks"][0]["verdict"], "gid_link_local");
    assert_eq!(d["errors"][0]["causes"][0]["cause"], "wrong_gid");
}

#[test]
fn recorded_routes_checked() {
    let t = TempDir::new("nccl-from");
    let st = t.path("state");
    fs::create_dir_all(&st).unwrap();
    // A pod whose only address is on another network: no route to 198.18.0.2.
    fs::write(st.join("addr.json"), r#"[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP"],"operstate":"UNKNOWN","addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8,"scope":"host"}]},{"ifindex":2,"ifname":"eth0","flags":["UP"],"operstate":"UP","addr_info":[{"family":"inet","local":"203.0.113.5","prefixlen":24,"scope":"global"}]}]"#).unwrap();
    fs::write(st.join("route.json"), r#"[{"dst":"203.0.113.0/24","dev":"eth0","protocol":"kernel","scope":"link","prefsrc":"203.0.113.5","table":"main"}]"#).unwrap();
    fs::write(st.join("rule.json"), r#"[{"priority":0,"src":"all","table":"local"},{"priority":32766,"src":"all","table":"main"},{"priority":32767,"src":"all","table":"default"}]"#).unwrap();
    let d = json(&[
        &fixture("dead-rc-at-once.log"),
        "--from",
        &format!("rxe-a={}", st.display()),
    ]);
    assert_eq!(
        d["host_checks"][0]["verdict"], "no_route",
        "{}",
        d["host_checks"]
    );
    assert_eq!(d["errors"][0]["causes"][0]["cause"], "no_route");
}

#[test]
fn agent_report_over_http_and_saved() {
    use std::io::{Read, Write};
    let rep = crate::common::rocetap(&[
        "analyze",
        "--format",
        "json",
        &sample("rxe-dead-rc-at-once.pcap"),
    ]);
    assert!(rep.status.success());
    let body = rep.stdout.clone();
    // A one-shot HTTP server on loopback, standing in for the agent's /report.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut req = [0u8; 4096];
        let n = s.read(&mut req).unwrap();
        let req = String::from_utf8_lossy(&req[..n]).to_string();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(&body).unwrap();
        req
    });
    let url = format!("http://ops:secret@127.0.0.1:{port}/report");
    let d = json(&[&fixture("dead-rc-at-once.log"), "--agent", &url]);
    let req = server.join().unwrap();
    assert!(req.starts_with("GET /report HTTP/1.1\r\n"), "{req}");
    assert!(
        req.contains("Authorization: Basic b3BzOnNlY3JldA=="),
        "{req}"
    );
    let c = &d["errors"][0]["connection"];
    assert_eq!(c["qp"], "0x000011");
    assert_eq!(c["stop"]["kind"], "retry_exhausted");
    assert_eq!(c["location"], "after_tap");
    assert_eq!(d["errors"][0]["causes"][0]["cause"], "path_loss");
    // The same report saved to a file.
    let t = TempDir::new("nccl-agent");
    fs::write(t.path("r.json"), &rep.stdout).unwrap();
    let d = json(&[
        &fixture("dead-rc-at-once.log"),
        "--agent",
        t.path("r.json").to_str().unwrap(),
    ]);
    assert_eq!(d["errors"][0]["connection"]["qp"], "0x000011");
    // Not a report: exit 2, one line.
    fs::write(t.path("bad.json"), "{\"schema\": \"other\"}").unwrap();
    let out = crate::common::rocetap(&[
        "nccl",
        &fixture("dead-rc-at-once.log"),
        "--agent",
        t.path("bad.json").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn two_dead_qps_each_joined_to_its_own() {
    // The lab's dead-rc-two-qps (real Soft-RoCE, two RC connections between the same
    // addresses, both requesters give up): the QP lines of the ranks each error's
    // channels name tell the two connections apart.
    let d = json(&[
        &fixture("dead-rc-two-qps.log"),
        "--capture",
        &fixture("dead-rc-two-qps.pcap"),
    ]);
    let got: Vec<(u64, String, u64)> = d["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let c = &e["connection"];
            assert_eq!(c["qpn_matched"], true, "{c}");
            assert_eq!(c["location"], "after_tap");
            (
                e["rank"].as_u64().unwrap(),
                c["qp"].as_str().unwrap().to_string(),
                c["stop"]["psn"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, "0x000012".to_string(), 12360701),
            (0, "0x000011".to_string(), 2392851)
        ]
    );
}

#[test]
fn profiler_trace_names_the_qps() {
    // The same two dead QPs with the QP lines taken out of the log: NCCL's example
    // profiler's trace (pid, qp_num) names them instead.
    let t = TempDir::new("nccl-profiler");
    let log: String = fs::read_to_string(fixture("dead-rc-two-qps.log"))
        .unwrap()
        .lines()
        .filter(|l| !l.contains(" qpn "))
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(t.path("noqp.log"), log).unwrap();
    let noqp = t.path("noqp.log").display().to_string();
    let cap = fixture("dead-rc-two-qps.pcap");
    let without = json(&[&noqp, "--capture", &cap]);
    assert_eq!(without["errors"][0]["connection"]["qpn_matched"], false);
    let d = json(&[
        &noqp,
        &fixture("dead-rc-two-qps.trace.json"),
        "--capture",
        &cap,
    ]);
    assert_eq!(d["counts"]["profiler_unattached"], 0);
    let qps: Vec<&str> = d["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["connection"]["qp"].as_str().unwrap())
        .collect();
    assert_eq!(qps, ["0x000012", "0x000011"]);
    assert_eq!(d["errors"][0]["connection"]["qpn_matched"], true);
}
