//! GID indices across nodes (`--peer-sysfs-root DIR`, another node's sysfs): a job that
//! pins one GID index on every node (`NCCL_IB_GID_INDEX=3`, an `sgid_index` in a config
//! file) needs that index to be the RoCE v2 IPv4 GID everywhere. For each of this
//! host's RoCE v2 IPv4 GIDs the same index on every RoCE port of each peer is looked up:
//! another type, a link-local GID or an empty entry there is a finding.

use super::HostQos;
use crate::netcheck::checks::{Evidence, Finding, Severity};
use crate::netcheck::sysfs::Port;

/// Another node's RoCE ports, by the name it is shown with.
pub struct Peer {
    /// The node's name in findings (its directory's name).
    pub name: String,
    /// Its RDMA ports ([`crate::netcheck::sysfs::read_ports`]).
    pub ports: Vec<Port>,
}

/// `IB/RoCE v1 (198.18.2.3)`, `RoCE v2 (fe80:...)`, `empty`.
fn describe(p: &Port, index: u32) -> (bool, String) {
    match p.gids.iter().find(|g| g.index == index) {
        None => (false, "empty (all-zero or absent)".into()),
        Some(g) => {
            let ok = g.ipv4.is_some() && g.kind.contains("v2");
            let addr = g.ipv4.map_or(g.gid.clone(), |a| a.to_string());
            (ok, format!("{} ({addr})", g.kind))
        }
    }
}

/// The findings of comparing this host's GID indices with each peer's.
pub fn compare(h: &HostQos, peers: &[Peer], out: &mut Vec<Finding>) {
    for p in &h.ports {
        let Some(local) = p.gids.v2_ipv4.first() else {
            continue;
        };
        let i = local.index;
        for peer in peers {
            for pp in peer
                .ports
                .iter()
                .filter(|x| x.link_layer.as_deref() == Some("Ethernet") && !x.gids.is_empty())
            {
                let (ok, there) = describe(pp, i);
                if ok {
                    continue;
                }
                let v2 = pp
                    .gids
                    .iter()
                    .find(|g| g.ipv4.is_some() && g.kind.contains("v2"))
                    .map_or("it has no RoCE v2 IPv4 GID".to_string(), |g| {
                        format!("its RoCE v2 IPv4 GID is index {}", g.index)
                    });
                let pname = format!("{} port {}", pp.device, pp.port);
                out.push(Finding {
                    id: "qos-gid-mismatch",
                    severity: Severity::Warning,
                    title: format!(
                        "GID index {i} is RoCE v2 ({}) on {} but {there} on {} ({pname}); {v2}",
                        local.address,
                        p.name(),
                        peer.name
                    ),
                    detail: "A job that pins the GID index on every node (NCCL_IB_GID_INDEX, sgid_index) sends RoCE v1 or link-local traffic from the node whose table differs, or fails to connect (retry exceeded). GID tables are filled in the order addresses and GID types appear, so they can differ between nodes.".into(),
                    evidence: vec![
                        Evidence {
                            query: format!("/sys/class/infiniband/{}/ports/{}/gids/{i} (here)", p.device, p.port),
                            answer: format!("RoCE v2 ({})", local.address),
                        },
                        Evidence {
                            query: format!("/sys/class/infiniband/{}/ports/{}/gids/{i} ({})", pp.device, pp.port, peer.name),
                            answer: there.clone(),
                        },
                    ],
                    fix: vec![
                        "do not pin the index: unset NCCL_IB_GID_INDEX (NCCL picks the RoCE v2 IPv4 GID), or set it per node".into(),
                        format!("compare the tables with `show_gids` on {} and here", peer.name),
                    ],
                    snippet: None,
                });
            }
        }
    }
}
