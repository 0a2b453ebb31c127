//! `/metrics`' per-peer families (`peers.rs` counts them): per source, local (requester)
//! address, peer address and direction, with the topology's names as labels when the
//! agent has a `--topology`; and the flows counted in `peer="other"`.

use super::{Families, Published};
use crate::agent::topology::NAMES;

/// (metric, help), in the order of [`crate::agent::peers::PeerCounts`].
const PER_PEER: [(&str, &str); 6] = [
    (
        "rocetap_peer_packets_total",
        "RoCE packets between the local (requester) address and the peer, by direction.",
    ),
    (
        "rocetap_peer_naks_total",
        "NAKs (every code, RNR included) sent (direction=\"sent\") or received from the peer.",
    ),
    (
        "rocetap_peer_psn_gap_events_total",
        "PSN gaps in what the local address sent to the peer (sent) or the peer sent (received).",
    ),
    (
        "rocetap_peer_retransmitted_packets_total",
        "Packets sent again to the peer (sent) or by the peer (received).",
    ),
    (
        "rocetap_peer_cnps_total",
        "CNPs sent to the peer (sent) or received from it.",
    ),
    (
        "rocetap_peer_retry_exhausted_total",
        "Requesters that retried with no progress and gave up (direction=\"sent\": the local one).",
    ),
];

/// The per-peer families of every source.
pub(super) fn peers(f: &mut Families, p: &Published) {
    let node = p.node.as_str();
    let local_keys: Vec<String> = NAMES.iter().map(|n| format!("local_{n}")).collect();
    let peer_keys: Vec<String> = NAMES.iter().map(|n| format!("peer_{n}")).collect();
    for (k, (name, help)) in PER_PEER.iter().enumerate() {
        let fam = f.counter(name, help);
        for s in &p.sources {
            for x in &s.peers {
                for (dir, c) in [("sent", &x.sent), ("received", &x.received)] {
                    let mut l: Vec<(&str, &str)> = vec![
                        ("node", node),
                        ("source", &s.name),
                        ("local", &x.local),
                        ("peer", &x.peer),
                        ("direction", dir),
                    ];
                    if p.topology {
                        for (i, key) in local_keys.iter().enumerate() {
                            l.push((key, &x.local_names[i]));
                        }
                        for (i, key) in peer_keys.iter().enumerate() {
                            l.push((key, &x.peer_names[i]));
                        }
                    }
                    fam.add(&l, c[k] as f64);
                }
            }
        }
    }
    f.counter(
        "rocetap_peer_flows_aggregated_total",
        "Flows counted in a peer=\"other\" series: --max-peers pairs had series of their own.",
    )
    .per_source(p, |s| s.peer_flows_aggregated as f64);
}

#[cfg(test)]
mod tests {
    use crate::agent::peers::PeerSeries;
    use crate::agent::state::Published;

    fn published(topology: bool) -> Published {
        let mut p = Published::new("n1".into(), &["mlx5_0".into()]);
        p.topology = topology;
        p.sources[0].peers = vec![PeerSeries {
            local: "198.51.100.1".into(),
            peer: "198.51.100.2".into(),
            local_names: [
                "node-a".into(),
                "tor-1".into(),
                String::new(),
                String::new(),
            ],
            peer_names: Default::default(),
            sent: [10, 0, 0, 3, 0, 1],
            received: [5, 2, 1, 0, 0, 0],
        }];
        p.sources[0].peer_flows_aggregated = 7;
        p
    }

    #[test]
    fn per_peer_series_with_and_without_topology_labels() {
        let text = crate::agent::metrics::render(&published(false));
        assert!(text.contains("rocetap_peer_packets_total{node=\"n1\",source=\"mlx5_0\",local=\"198.51.100.1\",peer=\"198.51.100.2\",direction=\"sent\"} 10"), "{text}");
        assert!(text.contains("direction=\"received\"} 2"), "{text}");
        assert!(
            text.contains("rocetap_peer_flows_aggregated_total{node=\"n1\",source=\"mlx5_0\"} 7")
        );
        assert!(!text.contains("local_tor"));
        let text = crate::agent::metrics::render(&published(true));
        assert!(
            text.contains("local_node=\"node-a\",local_tor=\"tor-1\",local_rail=\"\""),
            "{text}"
        );
        assert!(text.contains("peer_node=\"\""), "{text}");
        assert!(text.contains("rocetap_peer_retry_exhausted_total{node=\"n1\",source=\"mlx5_0\",local=\"198.51.100.1\",peer=\"198.51.100.2\",direction=\"sent\""));
    }
}
