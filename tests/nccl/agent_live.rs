//! `--agent` against a real node agent: the lab's dead-link capture replayed (tcpreplay,
//! at its recorded speed) into a veth the agent captures on, in a namespace this test
//! creates and removes; then `rocetap nccl --agent http://127.0.0.1:PORT` joins the log's
//! error with the agent's `/report`. Root and tcpreplay (SKIP for a plain user; CI fails).

use super::fixtures::{fixture, json};
use crate::agent_support::{
    free_port, get, healthy, ready, sample, start_agent, stop_agent, wait_for, Wire, NETNS_LOCK,
};
use crate::common::TempDir;

#[test]
fn agent_report_joined() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let _serial = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let tmp = TempDir::new("nccl-agent-live");
    let wire = Wire::new("n");
    let port = free_port();
    let args = [
        "-i",
        &wire.host_if,
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--netcheck-interval",
        "0",
        "--window",
        "120s",
    ];
    let agent = start_agent(&args, &tmp.path("agent.log"));
    healthy(port);
    wire.replay(&sample("rxe-dead-rc-at-once.pcap"));
    wait_for("the report to hold the QP that gave up", 30, || {
        let (s, body) = get(port, "/report")?;
        (s == 200 && body.contains("\"retry_exhausted\": 1")).then_some(())
    });
    let url = format!("http://127.0.0.1:{port}");
    let d = json(&[&fixture("dead-rc-at-once.log"), "--agent", &url]);
    stop_agent(agent);
    let c = &d["errors"][0]["connection"];
    assert_eq!(c["qp"], "0x000011", "{c}");
    assert_eq!(c["stop"]["kind"], "retry_exhausted");
    assert_eq!(c["location"], "after_tap");
    assert_eq!(d["errors"][0]["causes"][0]["cause"], "path_loss");
}
