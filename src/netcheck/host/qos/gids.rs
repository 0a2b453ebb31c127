//! GID indices across nodes (`--peer-sysfs-root DIR`, another node's sysfs): a job that
//! pins one GID index on every node (`NCCL_IB_GID_INDEX=3`, an `sgid_index` in a config
//! file) needs that index to be the RoCE v2 IPv4 GID everywhere. For each of this
//! host's RoCE v2 IPv4 GIDs the same index on every RoCE port of each peer is looked up:
//! another type, a link-local GID or an empty entry there is a finding.

use super::found::{PeerGid, Qos};
use super::HostQos;
use crate::netcheck::found::Found;
use crate::netcheck::sysfs::Port;

/// Another node's RoCE ports, by the name it is shown with.
pub struct Peer {
    /// The node's name in findings (its directory's name).
    pub name: String,
    /// Its RDMA ports ([`crate::netcheck::sysfs::read_ports`]).
    pub ports: Vec<Port>,
}

/// What `p` has at `index`: `None` when it is a RoCE v2 IPv4 GID (as wanted).
fn describe(p: &Port, index: u32) -> Option<PeerGid> {
    match p.gids.iter().find(|g| g.index == index) {
        None => Some(PeerGid::Empty),
        Some(g) if g.ipv4.is_some() && g.kind.contains("v2") => None,
        Some(g) => Some(PeerGid::Gid {
            kind: g.kind.clone(),
            addr: g.ipv4.map_or(g.gid.clone(), |a| a.to_string()),
        }),
    }
}

/// The findings of comparing this host's GID indices with each peer's.
pub fn compare(h: &HostQos, peers: &[Peer], out: &mut Vec<Found<'_>>) {
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
                let Some(there) = describe(pp, i) else {
                    continue;
                };
                let peer_v2 = pp
                    .gids
                    .iter()
                    .find(|g| g.ipv4.is_some() && g.kind.contains("v2"))
                    .map(|g| g.index);
                out.push(Found::Qos(Qos::GidMismatch {
                    port: Box::new(p.clone()),
                    index: i,
                    address: local.address.clone(),
                    peer: peer.name.clone(),
                    peer_device: pp.device.clone(),
                    peer_port: pp.port.clone(),
                    there,
                    peer_v2,
                }));
            }
        }
    }
}
