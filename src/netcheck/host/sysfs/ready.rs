//! The RoCE readiness check over the ports [`super::read_ports`] read: a GID bound to a
//! netdev, a RoCE v2 GID for every IPv4 address, the active MTU against the netdev MTU,
//! ECN enabled for both roles, error counters at zero. Typed findings ([`Roce`]);
//! `report::words` words them.

use super::{entries, netdev_mtu, rd, roce_mtu_for, Gid, Port, SysfsError, ERROR_COUNTERS};
use crate::netcheck::checks::Severity;
use crate::netcheck::model::NetState;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

fn ecn_disabled(
    sysfs: &Path,
    netdev: &str,
    which: &str,
) -> Result<Option<Vec<String>>, SysfsError> {
    let dir: PathBuf = sysfs
        .join("class/net")
        .join(netdev)
        .join("ecn")
        .join(which)
        .join("enable");
    if !dir.is_dir() {
        return Ok(None);
    }
    let mut off = Vec::new();
    for p in entries(&dir) {
        if rd(&dir.join(&p))?.as_deref() == Some("0") {
            off.push(p);
        }
    }
    Ok(Some(off))
}

/// Which ECN role of a netdev (`/sys/class/net/<netdev>/ecn/<role>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnRole {
    /// `roce_np`: the notification point (the receiver sends CNPs).
    Np,
    /// `roce_rp`: the reaction point (the sender slows down on CNPs).
    Rp,
}

impl EcnRole {
    /// The sysfs directory's name.
    pub fn dir(self) -> &'static str {
        match self {
            EcnRole::Np => "roce_np",
            EcnRole::Rp => "roce_rp",
        }
    }
}

/// What RoCE readiness found on one RDMA port (`roce-*` findings), with the facts.
#[derive(Clone, Debug)]
pub enum Roce {
    /// `roce-netdev`: no GID of the port is bound to a netdev.
    NoNetdev {
        /// The RDMA device.
        device: String,
        /// The port.
        port: String,
    },
    /// `roce-gid`: an IPv4 address of the port's netdev has no RoCE v2 GID.
    NoGid {
        /// The RDMA device.
        device: String,
        /// The port.
        port: String,
        /// The netdev.
        netdev: String,
        /// The address.
        addr: IpAddr,
        /// Its prefix length.
        prefix_len: u8,
        /// The GIDs the port has on that netdev.
        present: Vec<Gid>,
    },
    /// `roce-mtu` (warning): the port's active MTU is not what the netdev MTU carries.
    MtuMismatch {
        /// The RDMA device.
        device: String,
        /// The port.
        port: String,
        /// The netdev.
        netdev: String,
        /// The port's `active_mtu`.
        active: u32,
        /// The netdev's MTU.
        mtu: u32,
        /// The RoCE MTU that netdev MTU carries (none below 352 bytes).
        carries: Option<u32>,
    },
    /// `roce-mtu` (info): the netdev MTU holds RoCE below 4096-byte packets.
    MtuSmall {
        /// The netdev.
        netdev: String,
        /// The port's `active_mtu`.
        active: u32,
        /// The netdev's MTU.
        mtu: u32,
    },
    /// `roce-ecn`: ECN disabled for some priorities.
    EcnOff {
        /// The netdev.
        netdev: String,
        /// The role disabled.
        role: EcnRole,
        /// The priorities (the `enable/<prio>` file names) where it is off.
        prios: Vec<String>,
    },
    /// `roce-counters`: error `hw_counters` that are not zero.
    Counters {
        /// The RDMA device.
        device: String,
        /// The port.
        port: String,
        /// The counters, by name.
        counters: Vec<(String, u64)>,
    },
}

impl Roce {
    /// The finding's stable identifier.
    pub fn id(&self) -> &'static str {
        match self {
            Roce::NoNetdev { .. } => "roce-netdev",
            Roce::NoGid { .. } => "roce-gid",
            Roce::MtuMismatch { .. } | Roce::MtuSmall { .. } => "roce-mtu",
            Roce::EcnOff { .. } => "roce-ecn",
            Roce::Counters { .. } => "roce-counters",
        }
    }

    /// How bad it is.
    pub fn severity(&self) -> Severity {
        match self {
            Roce::NoGid { .. } => Severity::Error,
            Roce::MtuSmall { .. } => Severity::Info,
            Roce::NoNetdev { .. }
            | Roce::MtuMismatch { .. }
            | Roce::EcnOff { .. }
            | Roce::Counters { .. } => Severity::Warning,
        }
    }
}

/// RoCE readiness findings for every RDMA port under `sysfs`. Err names a file that
/// exists but cannot be read (through [`crate::sysfile`]).
pub fn check(
    sysfs: &Path,
    st: &NetState,
    ports: &[Port],
    out: &mut Vec<Roce>,
) -> Result<(), SysfsError> {
    for p in ports {
        if p.link_layer.as_deref().is_some_and(|l| l != "Ethernet") {
            continue; // InfiniBand: no RoCE
        }
        let (device, port) = (p.device.clone(), p.port.clone());
        if p.netdevs.is_empty() {
            out.push(Roce::NoNetdev {
                device: device.clone(),
                port: port.clone(),
            });
        }
        for nd in &p.netdevs {
            // RoCE v2 GID for every IPv4 address of the netdev (when we know its addresses)
            for a in st.addrs_of(nd).filter(|a| a.addr.is_ipv4()) {
                let have = p
                    .gids
                    .iter()
                    .find(|g| g.ipv4 == Some(a.addr) && g.netdev == *nd && g.kind.contains("v2"));
                if have.is_none() {
                    out.push(Roce::NoGid {
                        device: device.clone(),
                        port: port.clone(),
                        netdev: nd.clone(),
                        addr: a.addr,
                        prefix_len: a.prefix_len,
                        present: p.gids.iter().filter(|g| g.netdev == *nd).cloned().collect(),
                    });
                }
            }
            // MTU
            if let (Some(active), Some(mtu)) = (p.active_mtu, netdev_mtu(sysfs, st, nd)?) {
                let best = roce_mtu_for(mtu);
                if best.is_some_and(|b| active < b) || best.is_none_or(|b| active > b) {
                    out.push(Roce::MtuMismatch {
                        device: device.clone(),
                        port: port.clone(),
                        netdev: nd.clone(),
                        active,
                        mtu,
                        carries: best,
                    });
                } else if best.is_some_and(|b| b < 4096) {
                    out.push(Roce::MtuSmall {
                        netdev: nd.clone(),
                        active,
                        mtu,
                    });
                }
            }
            // ECN
            for role in [EcnRole::Np, EcnRole::Rp] {
                if let Some(off) = ecn_disabled(sysfs, nd, role.dir())? {
                    if !off.is_empty() {
                        out.push(Roce::EcnOff {
                            netdev: nd.clone(),
                            role,
                            prios: off,
                        });
                    }
                }
            }
        }
        let bad: Vec<(String, u64)> = p
            .counters
            .iter()
            .filter(|(k, v)| **v > 0 && ERROR_COUNTERS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        if !bad.is_empty() {
            out.push(Roce::Counters {
                device,
                port,
                counters: bad,
            });
        }
    }
    Ok(())
}
