//! `rocetap agent` at a mirror collector: a capture of two ERSPAN III sessions
//! (`samples/taps/mirror-two-sessions.pcap`) sent over a veth into the agent, which is
//! told to take GRE (`--filter 'ip proto 47'`: the default live filter keeps RoCE, ARP
//! and PFC only): its RoCE packet counters count every mirrored packet's inner RoCE,
//! 1230, as `analyze` of the file does.
//!
//! Needs root and tcpreplay; otherwise prints `SKIP:` (and fails under CI).

use crate::agent_support::*;
use crate::common::TempDir;

fn roce_packets(port: u16) -> Option<f64> {
    let (_, text) = get(port, "/metrics")?;
    Some(
        text.lines()
            .filter(|l| l.starts_with("rocetap_roce_packets_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum(),
    )
}

#[test]
fn agent_counts_the_inner_roce_of_a_mirror() {
    let _lock = NETNS_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready(&["tcpreplay"]) {
        return;
    }
    let tmp = TempDir::new("agent-mirror");
    let wire = Wire::new("m");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let agent = start_agent(
        &[
            "-i",
            &wire.host_if,
            "--listen",
            &listen,
            "--filter",
            "ip proto 47",
        ],
        &tmp.path("agent.log"),
    );
    healthy(port);
    wire.replay(&sample("taps/mirror-two-sessions.pcap"));
    let got = wait_for("the agent to count 1230 RoCE packets", 30, || {
        roce_packets(port).filter(|&n| n >= 1230.0)
    });
    assert_eq!(got, 1230.0);
    stop_agent(agent);
}
