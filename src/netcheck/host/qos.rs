//! A host's RoCE QoS, per RDMA port and netdev, as sysfs, configfs and recorded DCB
//! outputs give it: the trust mode, DSCP → priority map and PFC-enabled priorities
//! ([`super::dcb`], from `--qos-from DIR`), ECN enable per priority for the notification
//! and reaction points and the CNP DSCP / 802.1p priority
//! (`/sys/class/net/IF/ecn/roce_{np,rp}/...`), the RDMA device's global traffic class
//! (`/sys/class/infiniband/DEV/tc/1/traffic_class`), RDMA-CM's `default_roce_mode` and
//! `default_roce_tos` (configfs, `/sys/kernel/config/rdma_cm/DEV/ports/N/`), the GID
//! table's RoCE v1 / v2 entries (IPv4-mapped or link-local, all-zero ones), the netdev and
//! PF MTUs next to the port's `active_mtu`, and the RDMA netns mode
//! (`/sys/module/ib_core/parameters/netns_mode`).
//!
//! Every value is an `Option` or a possibly empty list: a file that is missing is
//! "unknown", never an error or a guess. The checks on these values are [`host`]
//! (netcheck alone), [`joined`] (with `--capture`) and [`gids`] (with other nodes'
//! sysfs, `--peer-sysfs-root`).

pub mod found;
pub mod gids;
pub mod host;
pub mod joined;

use super::dcb::{self, Dcb};
use super::sysfs::{self, rd, SysfsError};
use crate::netcheck::model::NetState;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::Ipv6Addr;
use std::path::Path;

/// A GID table entry as the QoS view needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GidRef {
    /// The GID index (what `NCCL_IB_GID_INDEX` / `sgid_index` name).
    pub index: u32,
    /// The IPv4 address of an IPv4-mapped GID, else the GID itself.
    pub address: String,
}

/// A port's GID entries bound to one netdev, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Gids {
    /// RoCE v2 GIDs of IPv4 addresses.
    pub v2_ipv4: Vec<GidRef>,
    /// RoCE v1 GIDs of IPv4 addresses.
    pub v1_ipv4: Vec<GidRef>,
    /// Link-local (`fe80::/64`) GIDs, either type: not routable.
    pub link_local: Vec<GidRef>,
    /// Other GIDs (IPv6), either type.
    pub other: Vec<GidRef>,
    /// All-zero entries of the port's table (any netdev).
    pub zero_entries: u32,
}

/// The QoS state of one RDMA port's netdev.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PortQos {
    /// The RDMA device, e.g. `mlx5_0`.
    pub device: String,
    /// The port number as text.
    pub port: String,
    /// The netdev its GIDs are bound to.
    pub netdev: String,
    /// The netdev's MTU.
    pub mtu: Option<u32>,
    /// The port's RoCE MTU in use (`active_mtu`).
    pub active_mtu: Option<u32>,
    /// For a VF: its PF's netdev (`device/physfn/net/*`) and that netdev's MTU.
    pub pf: Option<String>,
    /// The PF netdev's MTU.
    pub pf_mtu: Option<u32>,
    /// Trust mode, DSCP → priority map and PFC from `--qos-from`; `None` when not recorded.
    pub dcb: Option<Dcb>,
    /// ECN of the notification point (CNPs sent for CE-marked packets) per priority.
    pub ecn_np: BTreeMap<u8, bool>,
    /// ECN of the reaction point (the sender slows down on CNPs) per priority.
    pub ecn_rp: BTreeMap<u8, bool>,
    /// The DSCP CNPs are sent with (`ecn/roce_np/cnp_dscp`).
    pub cnp_dscp: Option<u8>,
    /// The 802.1p priority CNPs are sent with (`ecn/roce_np/cnp_802p_prio`).
    pub cnp_802p_prio: Option<u8>,
    /// The device's global traffic class (`tc/1/traffic_class`): the IP ToS byte every QP
    /// sends with, overriding the application's.
    pub traffic_class: Option<u8>,
    /// RDMA-CM's RoCE mode for new connections (`RoCE v2`, `IB/RoCE v1`).
    pub default_roce_mode: Option<String>,
    /// RDMA-CM's ToS for new connections (`default_roce_tos`; DSCP = ToS >> 2).
    pub default_roce_tos: Option<u8>,
    /// The GID entries bound to the netdev.
    pub gids: Gids,
}

/// The QoS state of a host's RoCE ports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostQos {
    /// RDMA netns mode: `shared` (every namespace sees every RDMA device) or `exclusive`.
    pub netns_mode: Option<String>,
    /// One entry per (RDMA port, netdev), RoCE ports only.
    pub ports: Vec<PortQos>,
}

impl PortQos {
    /// `mlx5_0 port 1 (net1)`.
    pub fn name(&self) -> String {
        format!("{} port {} ({})", self.device, self.port, self.netdev)
    }

    /// The priority the NIC gives a packet with this DSCP and 802.1Q PCP (`None`:
    /// untagged): by the DSCP map under DSCP trust, by the PCP under PCP trust (untagged
    /// packets get priority 0); `None` when the trust mode or the DSCP's entry is unknown.
    pub fn prio_of(&self, dscp: u8, pcp: Option<u8>) -> Option<u8> {
        let d = self.dcb.as_ref()?;
        match d.trust.as_deref()? {
            "dscp" => d.dscp_prio.get(&dscp).copied(),
            _ => Some(pcp.unwrap_or(0)),
        }
    }

    /// The priorities with PFC enabled; `None` when unknown.
    pub fn pfc_on(&self) -> Option<Vec<u8>> {
        let pfc = self.dcb.as_ref()?.pfc?;
        Some((0..8u8).filter(|&p| pfc[usize::from(p)]).collect())
    }

    /// A DSCP the map puts on a PFC priority (26 when it is one), under DSCP trust.
    pub fn lossless_dscp(&self) -> Option<u8> {
        let on = self.pfc_on()?;
        let d = self.dcb.as_ref()?;
        if d.trust.as_deref() != Some("dscp") {
            return None;
        }
        let ok = |x: &u8| d.dscp_prio.get(x).is_some_and(|p| on.contains(p));
        [26u8]
            .into_iter()
            .chain(d.dscp_prio.keys().copied())
            .find(|x| ok(x))
    }
}

fn num<T: std::str::FromStr>(p: &Path) -> Result<Option<T>, SysfsError> {
    Ok(rd(p)?.and_then(|v| v.parse().ok()))
}

/// `Global tclass=106`, `tclass=106` or `106`; `None` for anything else (unset: -1).
fn tclass(s: &str) -> Option<u8> {
    s.rsplit('=').next()?.trim().parse().ok()
}

fn ecn_map(dir: &Path) -> Result<BTreeMap<u8, bool>, SysfsError> {
    let mut m = BTreeMap::new();
    for p in sysfs::entries(dir) {
        let Some(prio) = p.parse().ok().filter(|x: &u8| *x < 8) else {
            continue;
        };
        match rd(&dir.join(&p))?.as_deref() {
            Some("1") => m.insert(prio, true),
            Some("0") => m.insert(prio, false),
            _ => None,
        };
    }
    Ok(m)
}

fn gids(p: &sysfs::Port, netdev: &str) -> Gids {
    let mut g = Gids {
        zero_entries: p.zero_gids,
        ..Gids::default()
    };
    for e in p.gids.iter().filter(|e| e.netdev == netdev) {
        let ip6 = e.gid.parse::<Ipv6Addr>().ok();
        let link_local = ip6.is_some_and(|a| a.segments()[..4] == [0xfe80, 0, 0, 0]);
        let r = |address: String| GidRef {
            index: e.index,
            address,
        };
        match e.ipv4 {
            Some(a) if e.kind.contains("v2") => g.v2_ipv4.push(r(a.to_string())),
            Some(a) => g.v1_ipv4.push(r(a.to_string())),
            None if link_local => g.link_local.push(r(e.gid.clone())),
            None => g.other.push(r(e.gid.clone())),
        }
    }
    g
}

/// Reads the QoS state of every RoCE port in `ports` (from [`sysfs::read_ports`]) under
/// `sysfs`, with the recorded DCB outputs of `qos_from`. Err when a recorded output
/// does not parse or a sysfs file exists but cannot be read.
pub fn read(
    sysfs: &Path,
    qos_from: Option<&Path>,
    st: &NetState,
    ports: &[sysfs::Port],
) -> Result<HostQos, SysfsError> {
    let netns_mode =
        rd(&sysfs.join("module/ib_core/parameters/netns_mode"))?.and_then(|v| match v.as_str() {
            "Y" | "1" => Some("shared".to_string()),
            "N" | "0" => Some("exclusive".to_string()),
            _ => None,
        });
    let mut out = Vec::new();
    for p in ports {
        if p.link_layer.as_deref().is_some_and(|l| l != "Ethernet") {
            continue;
        }
        let ib = sysfs.join("class/infiniband").join(&p.device);
        let cm = sysfs
            .join("kernel/config/rdma_cm")
            .join(&p.device)
            .join("ports")
            .join(&p.port);
        for nd in &p.netdevs {
            let net = sysfs.join("class/net").join(nd);
            let pf_dir = net.join("device/physfn/net");
            let pf = sysfs::entries(&pf_dir).into_iter().next();
            let pf_mtu = match &pf {
                Some(n) => num(&pf_dir.join(n).join("mtu"))?,
                None => None,
            };
            let dcb = match qos_from {
                Some(dir) => dcb::load(dir, nd).map_err(SysfsError::QosFrom)?,
                None => None,
            };
            out.push(PortQos {
                device: p.device.clone(),
                port: p.port.clone(),
                netdev: nd.clone(),
                mtu: sysfs::netdev_mtu(sysfs, st, nd)?,
                active_mtu: p.active_mtu,
                pf,
                pf_mtu,
                dcb,
                ecn_np: ecn_map(&net.join("ecn/roce_np/enable"))?,
                ecn_rp: ecn_map(&net.join("ecn/roce_rp/enable"))?,
                cnp_dscp: num(&net.join("ecn/roce_np/cnp_dscp"))?.filter(|d: &u8| *d < 64),
                cnp_802p_prio: num(&net.join("ecn/roce_np/cnp_802p_prio"))?.filter(|d: &u8| *d < 8),
                traffic_class: rd(&ib.join("tc/1/traffic_class"))?.and_then(|s| tclass(&s)),
                default_roce_mode: rd(&cm.join("default_roce_mode"))?,
                default_roce_tos: num(&cm.join("default_roce_tos"))?,
                gids: gids(p, nd),
            });
        }
    }
    Ok(HostQos {
        netns_mode,
        ports: out,
    })
}

#[cfg(test)]
mod tests {
    use super::tclass;

    #[test]
    fn traffic_class_forms() {
        assert_eq!(tclass("Global tclass=106"), Some(106));
        assert_eq!(tclass("106"), Some(106));
        assert_eq!(tclass("Global tclass=-1"), None);
        assert_eq!(tclass("junk"), None);
    }
}
