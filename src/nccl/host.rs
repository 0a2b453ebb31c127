//! Host checks of an error's HCA: its GID table at the index NCCL uses (a node's sysfs,
//! read by `netcheck::sysfs`), and the route to the peer from the pod's recorded routing
//! state (`ip -j` dumps, looked up by `netcheck::lookup` as the kernel would).

use super::config::{gid_v4, is_link_local};
use super::{join, Log, WcError};
use crate::netcheck::lookup::{lookup, Query};
use crate::netcheck::sysfs::{read_ports, Port};
use std::net::{IpAddr, Ipv6Addr};
use std::path::{Path, PathBuf};

/// What a check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidVerdict {
    /// A RoCE v2 GID of an address: fine.
    Ok,
    /// No GID at that index on the port.
    Missing,
    /// The index is a RoCE v1 GID.
    V1,
    /// The index is a link-local GID.
    LinkLocal,
    /// NCCL picks the index itself and the port has no RoCE v2 IPv4 GID to pick.
    NoV2Ipv4,
    /// The HCA's device is not on the node.
    NoDevice,
    /// No route from the HCA's address to the peer.
    NoRoute,
    /// The route to the peer leaves by another netdev than the HCA's.
    OtherDevice,
}

impl GidVerdict {
    /// JSON code.
    pub fn code(self) -> &'static str {
        match self {
            GidVerdict::Ok => "ok",
            GidVerdict::Missing => "gid_missing",
            GidVerdict::V1 => "gid_roce_v1",
            GidVerdict::LinkLocal => "gid_link_local",
            GidVerdict::NoV2Ipv4 => "no_roce_v2_ipv4_gid",
            GidVerdict::NoDevice => "no_such_device",
            GidVerdict::NoRoute => "no_route",
            GidVerdict::OtherDevice => "route_via_other_device",
        }
    }
}

/// One check of one HCA port (and, for routes, one peer).
#[derive(Clone, Debug, PartialEq)]
pub struct HostCheck {
    /// The host of the log it applies to (`None`: every host).
    pub host: Option<String>,
    /// The sysfs root or state directory read.
    pub dir: PathBuf,
    /// The HCA.
    pub hca: String,
    /// The GID index checked.
    pub gid_index: Option<i64>,
    /// The GID there.
    pub gid: Option<String>,
    /// Its type (`RoCE v2`, `IB/RoCE v1`).
    pub gid_type: Option<String>,
    /// Its netdev.
    pub netdev: Option<String>,
    /// The peer a route was looked up for.
    pub peer: Option<IpAddr>,
    /// The device the route leaves by, or the lookup's error.
    pub route: Option<String>,
    /// The verdict.
    pub verdict: GidVerdict,
}

impl HostCheck {
    /// Whether it concerns error `e`.
    pub fn concerns(&self, log: &Log, e: &WcError) -> bool {
        let host_ok = self
            .host
            .as_deref()
            .is_none_or(|h| h == log.procs[e.proc].host);
        let hca_ok = e.hca.as_deref().is_none_or(|h| h == self.hca);
        let peer_ok = self.peer.is_none_or(|p| join::ends(log, e).1 == Some(p));
        host_ok && hca_ok && peer_ok
    }
}

/// `[HOST=]DIR`.
pub fn split_target(s: &str) -> (Option<String>, PathBuf) {
    match s.split_once('=') {
        Some((h, d)) if !h.is_empty() && !h.contains('/') => {
            (Some(h.to_string()), PathBuf::from(d))
        }
        _ => (None, PathBuf::from(s)),
    }
}

fn gid_addr(s: &str) -> Option<Ipv6Addr> {
    let hex: String = s.chars().filter(|c| *c != ':').collect();
    let n = u128::from_str_radix(&hex, 16).ok()?;
    (hex.len() == 32).then(|| Ipv6Addr::from(n))
}

/// The HCAs (and their GID indexes) the log's processes on `host` use.
fn used(log: &Log, host: Option<&str>) -> Vec<(String, Option<i64>)> {
    let mut v: Vec<(String, Option<i64>)> = Vec::new();
    for p in &log.procs {
        if host.is_some_and(|h| h != p.host) {
            continue;
        }
        let forced = p
            .env("NCCL_IB_GID_INDEX")
            .and_then(|v| v.trim().parse().ok());
        let idx = forced.or_else(|| p.qps.iter().find_map(|q| q.gid_index));
        for h in &p.hcas {
            let x = (h.name.clone(), idx.filter(|i| *i >= 0));
            if !v.contains(&x) {
                v.push(x);
            }
        }
    }
    v
}

/// The GID checks of every HCA the log uses on `host`, against sysfs at `root`.
pub fn check_gids(log: &Log, host: Option<&str>, root: &Path) -> Result<Vec<HostCheck>, String> {
    let ports =
        read_ports(root).map_err(|e| format!("nccl: --sysfs-root {}: {e}", root.display()))?;
    Ok(gid_checks(log, host, root, &ports))
}

fn gid_checks(log: &Log, host: Option<&str>, root: &Path, ports: &[Port]) -> Vec<HostCheck> {
    let mut out = Vec::new();
    for (hca, idx) in used(log, host) {
        let mut c = HostCheck {
            host: host.map(str::to_string),
            dir: root.to_path_buf(),
            hca: hca.clone(),
            gid_index: idx,
            gid: None,
            gid_type: None,
            netdev: None,
            peer: None,
            route: None,
            verdict: GidVerdict::Ok,
        };
        let Some(port) = ports.iter().find(|p| p.device == hca) else {
            c.verdict = GidVerdict::NoDevice;
            out.push(c);
            continue;
        };
        let entry = match idx {
            Some(i) => port.gids.iter().find(|g| i64::from(g.index) == i),
            None => port
                .gids
                .iter()
                .find(|g| g.kind == "RoCE v2" && g.ipv4.is_some()),
        };
        let Some(g) = entry else {
            c.verdict = if idx.is_some() {
                GidVerdict::Missing
            } else {
                GidVerdict::NoV2Ipv4
            };
            out.push(c);
            continue;
        };
        c.gid_index = Some(i64::from(g.index));
        c.gid = Some(g.gid.clone());
        c.gid_type = Some(g.kind.clone());
        c.netdev = Some(g.netdev.clone());
        c.verdict = if gid_addr(&g.gid).is_some_and(|a| is_link_local(&a)) {
            GidVerdict::LinkLocal
        } else if g.kind.contains("v1") {
            GidVerdict::V1
        } else {
            GidVerdict::Ok
        };
        out.push(c);
    }
    out
}

/// The route from each error's local address to its peer in the recorded state `dir`
/// (`addr.json`, `route.json`, `rule.json`), for the errors of `host`; with the sysfs
/// ports (when read) naming the HCA's netdev to compare with.
pub fn check_routes(
    log: &Log,
    host: Option<&str>,
    dir: &Path,
    sysfs: Option<&Path>,
) -> Result<Vec<HostCheck>, String> {
    let st = crate::netcheck::load_json::load_dir(dir)
        .map_err(|e| format!("nccl: --from {}: {e}", dir.display()))?;
    let ports = match sysfs {
        Some(r) => read_ports(r).map_err(|e| format!("nccl: --sysfs-root {}: {e}", r.display()))?,
        None => Vec::new(),
    };
    let mut out: Vec<HostCheck> = Vec::new();
    for e in &log.errors {
        if host.is_some_and(|h| h != log.procs[e.proc].host) {
            continue;
        }
        let (Some(local), Some(remote)) = join::ends(log, e) else {
            continue;
        };
        let hca = e.hca.clone().unwrap_or_default();
        if out.iter().any(|c| c.peer == Some(remote) && c.hca == hca) || out.len() >= 256 {
            continue;
        }
        let netdev = ports.iter().find(|p| p.device == hca).and_then(|p| {
            p.gids
                .iter()
                .find(|g| {
                    g.ipv4 == Some(local)
                        || e.local_gid.and_then(|l| gid_v4(&l)).map(IpAddr::V4) == g.ipv4
                })
                .or(p.gids.first())
                .map(|g| g.netdev.clone())
        });
        let (route, verdict) = match lookup(&st, &Query::to(remote).from(local)) {
            Err(err) => (Some(err.to_string()), GidVerdict::NoRoute),
            Ok(a) => {
                let other = netdev.as_ref().is_some_and(|n| *n != a.dev);
                (
                    Some(a.dev.clone()),
                    if other {
                        GidVerdict::OtherDevice
                    } else {
                        GidVerdict::Ok
                    },
                )
            }
        };
        out.push(HostCheck {
            host: host.map(str::to_string),
            dir: dir.to_path_buf(),
            hca,
            gid_index: None,
            gid: None,
            gid_type: None,
            netdev,
            peer: Some(remote),
            route,
            verdict,
        });
    }
    Ok(out)
}
