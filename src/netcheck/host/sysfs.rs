//! RoCE readiness from sysfs (default `/sys`; see [`crate::config::sysfs_dir`]): every RDMA device port
//! (`/sys/class/infiniband/<dev>/ports/<p>`), the netdevs its GIDs are bound to
//! (`gid_attrs/ndevs/<n>`), whether each IPv4 address of those netdevs has a RoCE v2 GID
//! (`gids/<n>` + `gid_attrs/types/<n>`), the netdev MTU against the port's `active_mtu`,
//! ECN for the notification and reaction points (`/sys/class/net/<netdev>/ecn/roce_{np,rp}/
//! enable/<prio>`), and non-zero error `hw_counters`.

use crate::capture::rdma;
use crate::netcheck::model::NetState;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::path::{Path, PathBuf};

mod ready;
pub use ready::{check, EcnRole, Roce};

/// Error counters: any non-zero value means the fabric or a peer lost or rejected packets.
pub const ERROR_COUNTERS: &[&str] = &[
    "out_of_sequence",
    "packet_seq_err",
    "local_ack_timeout_err",
    "implied_nak_seq_err",
    "duplicate_request",
    "rnr_nak_retry_err",
    "out_of_buffer",
    "req_cqe_error",
    "resp_cqe_error",
    "req_remote_access_errors",
    "req_remote_invalid_request",
    "resp_local_length_error",
    "resp_remote_access_errors",
    "rx_icrc_encapsulated",
    "roce_adp_retrans",
    "roce_slow_restart",
];

/// One entry of a port's GID table that is bound to a netdev (`gid_attrs/ndevs/<n>`).
#[derive(Clone, Debug, Serialize)]
pub struct Gid {
    /// The GID index (`gids/<n>`), what an application passes as `sgid_index`.
    pub index: u32,
    /// The GID as sysfs prints it, e.g. `0000:0000:0000:0000:0000:ffff:0a00:0005`.
    pub gid: String,
    /// The GID type (`gid_attrs/types/<n>`): `RoCE v2` or `IB/RoCE v1`; empty when not given (JSON
    /// `type`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The netdev the GID belongs to (`gid_attrs/ndevs/<n>`).
    pub netdev: String,
    /// The IPv4 address a `::ffff:a.b.c.d` GID stands for.
    pub ipv4: Option<IpAddr>,
}

/// One RDMA device port as sysfs shows it (`/sys/class/infiniband/<dev>/ports/<p>`), with what RoCE
/// readiness needs.
#[derive(Clone, Debug, Serialize)]
pub struct Port {
    /// The RDMA device, e.g. `mlx5_0`.
    pub device: String,
    /// The port number as text, counted from 1.
    pub port: String,
    /// `Ethernet` (RoCE) or `InfiniBand`; `None` when the file is missing.
    pub link_layer: Option<String>,
    /// The state file as sysfs words it, e.g. `4: ACTIVE`; `None` when missing.
    pub state: Option<String>,
    /// The IB MTU in use in bytes (`active_mtu`, `4096 (5)` read as 4096); `None` when missing.
    pub active_mtu: Option<u32>,
    /// The netdevs the port's GIDs are bound to, sorted, no duplicates.
    pub netdevs: Vec<String>,
    /// The GIDs bound to a netdev, by index.
    pub gids: Vec<Gid>,
    /// The port's `hw_counters` by name (absent counters are left out).
    pub counters: BTreeMap<String, u64>,
    /// All-zero (unused) entries of its GID table.
    pub zero_gids: u32,
}

/// The trimmed value of a sysfs file through [`crate::sysfile`] (bounded, regular files
/// only); `Ok(None)` when missing or without a value, Err naming a file that cannot be read.
pub(super) fn rd(p: &Path) -> Result<Option<String>, SysfsError> {
    crate::sysfile::value(p).map_err(SysfsError::File)
}

pub(super) fn entries(p: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    v.sort_by_key(|s| (s.parse::<u64>().unwrap_or(u64::MAX), s.clone()));
    v
}

/// Reads every RDMA port under `sysfs` (through [`rdma`], the one sysfs reader). Err when
/// `sysfs/class/infiniband` exists but cannot be read, or names the first file of a port
/// (a counter, a GID, its state) that exists but cannot be read.
pub fn read_ports(sysfs: &Path) -> Result<Vec<Port>, SysfsError> {
    let ib = sysfs.join("class/infiniband");
    if !ib.exists() {
        return Ok(Vec::new());
    }
    std::fs::read_dir(&ib).map_err(|error| SysfsError::Dir {
        path: ib.clone(),
        error,
    })?;
    let mut out = Vec::new();
    for dev in rdma::list(sysfs) {
        if let Some(e) = dev.unreadable.first() {
            return Err(SysfsError::Unreadable(e.clone()));
        }
        for p in dev.ports {
            let gids: Vec<Gid> = p
                .gids
                .into_iter()
                .filter_map(|g| {
                    let netdev = g.ndev?;
                    let ipv4 = g
                        .gid
                        .parse::<Ipv6Addr>()
                        .ok()
                        .and_then(|x| x.to_ipv4_mapped())
                        .map(IpAddr::V4);
                    Some(Gid {
                        index: g.index,
                        gid: g.gid,
                        kind: g.kind.unwrap_or_default(),
                        netdev,
                        ipv4,
                    })
                })
                .collect();
            let mut netdevs: Vec<String> = gids.iter().map(|g| g.netdev.clone()).collect();
            netdevs.sort();
            netdevs.dedup();
            out.push(Port {
                counters: rdma::read_counters(&rdma::counters_dir(sysfs, &dev.name, p.number))
                    .map_err(SysfsError::Unreadable)?,
                zero_gids: p.zero_gids,
                device: dev.name.clone(),
                port: p.number.to_string(),
                link_layer: p.link_layer,
                state: p.state_line,
                active_mtu: p.active_mtu,
                netdevs,
                gids,
            });
        }
    }
    Ok(out)
}

/// The largest RoCE MTU a netdev MTU carries (`iboe_get_mtu`: minus GRH/IP, UDP, BTH,
/// XRC, AtomicETH and ICRC = 96 bytes).
pub fn roce_mtu_for(netdev_mtu: u32) -> Option<u32> {
    let avail = netdev_mtu.checked_sub(96)?;
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|m| *m <= avail)
}

pub(super) fn netdev_mtu(
    sysfs: &Path,
    st: &NetState,
    netdev: &str,
) -> Result<Option<u32>, SysfsError> {
    if let Some(m) = st.link(netdev).and_then(|l| l.mtu) {
        return Ok(Some(m));
    }
    let v = rd(&sysfs.join("class/net").join(netdev).join("mtu"))?;
    Ok(v.and_then(|v| v.parse().ok()))
}

/// Why sysfs (or, for the QoS state, a recorded DCB output) could not be read.
#[derive(Debug)]
pub enum SysfsError {
    /// A sysfs file that exists but cannot be read.
    File(crate::sysfile::FileError),
    /// A sysfs directory that exists but cannot be listed.
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A file of an RDMA port that cannot be read (as [`rdma`] words it).
    Unreadable(String),
    /// A `--qos-from` output that cannot be read or does not parse.
    QosFrom(super::dcb::DcbError),
}

impl fmt::Display for SysfsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SysfsError::File(e) => write!(f, "reading sysfs: {e}"),
            SysfsError::Dir { path, error } => write!(f, "{}: {error}", path.display()),
            SysfsError::Unreadable(e) => f.write_str(e),
            SysfsError::QosFrom(e) => write!(f, "--qos-from: {e}"),
        }
    }
}

impl std::error::Error for SysfsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SysfsError::File(e) => Some(e),
            SysfsError::Dir { error, .. } => Some(error),
            SysfsError::Unreadable(_) => None,
            SysfsError::QosFrom(e) => Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::roce_mtu_for;

    #[test]
    fn roce_mtu_from_netdev_mtu() {
        assert_eq!(roce_mtu_for(1500), Some(1024));
        assert_eq!(roce_mtu_for(9000), Some(4096));
        assert_eq!(roce_mtu_for(4200), Some(4096));
        assert_eq!(roce_mtu_for(4191), Some(2048));
        assert_eq!(roce_mtu_for(300), None);
    }
}
