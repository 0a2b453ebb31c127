//! Configuration mistakes found from the log alone: a GID index that selects a link-local
//! or a RoCE v1 GID, `NCCL_IB_TC` outside the lossless class, an HCA whose errors go to
//! peers on no network of its own (no route), and RoCE modes that differ between ranks.

use super::{Log, WcError};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Processes or hosts listed in an issue, at most; the rest are counted.
const LISTED: usize = 8;

/// Why a GID is taken for RoCE v1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum V1Why {
    /// `NCCL_IB_ROCE_VERSION_NUM=1`.
    VersionNum,
    /// `NCCL_IB_GID_INDEX` pinned to an even index: in the mlx5 GID table each address
    /// has a RoCE v1 entry then a v2 one (0 v1 and 1 v2 link-local, 2 v1 and 3 v2 of the
    /// first IPv4 address), so an even index is a v1 GID there.
    EvenIndex,
}

/// One configuration mistake.
#[derive(Clone, Debug, PartialEq)]
pub enum Issue {
    /// The GID in use is link-local (fe80::/10): RoCE v2 packets to it cannot be routed,
    /// and its RoCE v1 twin is layer 2 only.
    LinkLocalGid {
        /// The GID.
        gid: Ipv6Addr,
        /// The index, when the log gives it.
        gid_index: Option<i64>,
        /// Processes (indexes into `Log::procs`).
        procs: Vec<usize>,
        /// Processes past the listed ones.
        more: usize,
    },
    /// The GID index selects a RoCE v1 GID.
    RoceV1 {
        /// The index.
        gid_index: Option<i64>,
        /// Why.
        why: V1Why,
        /// Processes.
        procs: Vec<usize>,
        /// More.
        more: usize,
    },
    /// `NCCL_IB_TC` puts the traffic on a priority without PFC (DSCP = TC >> 2, priority
    /// = DSCP >> 3 under the usual `trust dscp` map).
    TcNotLossless {
        /// The traffic class set.
        tc: u32,
        /// Its priority.
        priority: u8,
        /// The lossless priority expected.
        lossless: u8,
        /// Processes.
        procs: Vec<usize>,
        /// More.
        more: usize,
    },
    /// An HCA whose errors all go to peers on other networks than its own: it has no
    /// route to them (a NIC of another rail or the management network in
    /// `NCCL_IB_HCA`).
    HcaNoRoute {
        /// Host.
        host: String,
        /// The HCA.
        hca: String,
        /// Its address (from its GID).
        local: Ipv4Addr,
        /// Peers it failed with.
        peers: Vec<Ipv4Addr>,
        /// Other HCAs of the host, that have no such errors.
        others: Vec<String>,
    },
    /// Ranks use different RoCE modes (link layer, GID index, RoCE version, GID kind).
    MixedModes {
        /// Each mode with the hosts using it (at most 8 each) and how many.
        modes: Vec<(Mode, Vec<String>, usize)>,
    },
}

/// A host's RoCE mode as its log shows it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mode {
    /// Link layers of its HCAs (`RoCE`, `IB`), sorted.
    pub links: Vec<String>,
    /// GID index pinned by `NCCL_IB_GID_INDEX`.
    pub gid_index: Option<i64>,
    /// `NCCL_IB_ROCE_VERSION_NUM`.
    pub roce_version: Option<String>,
    /// Kind of its GIDs: `ipv4`, `ipv6`, `link-local`.
    pub gid_kind: Option<&'static str>,
}

/// Assumptions the checks take.
#[derive(Clone, Copy, Debug)]
pub struct Assume {
    /// The priority PFC protects (3 by the common RoCE configuration).
    pub lossless_priority: u8,
}

impl Default for Assume {
    fn default() -> Self {
        Assume {
            lossless_priority: 3,
        }
    }
}

/// fe80::/10.
pub fn is_link_local(g: &Ipv6Addr) -> bool {
    g.segments()[0] & 0xffc0 == 0xfe80
}

/// The IPv4 address of a `::ffff:a.b.c.d` GID.
pub fn gid_v4(g: &Ipv6Addr) -> Option<Ipv4Addr> {
    g.to_ipv4_mapped()
}

/// `ipv4`, `ipv6` or `link-local`.
pub fn gid_kind(g: &Ipv6Addr) -> &'static str {
    if is_link_local(g) {
        "link-local"
    } else if gid_v4(g).is_some() {
        "ipv4"
    } else {
        "ipv6"
    }
}

fn listed(v: &mut Vec<usize>, more: &mut usize, i: usize) {
    if v.len() < LISTED {
        v.push(i);
    } else {
        *more += 1;
    }
}

/// The local GIDs a process used: its QP lines' and its errors'.
fn local_gids(log: &Log, pi: usize) -> impl Iterator<Item = Ipv6Addr> + '_ {
    log.procs[pi].qps.iter().filter_map(|q| q.gid).chain(
        log.errors
            .iter()
            .filter(move |e| e.proc == pi)
            .filter_map(|e| e.local_gid),
    )
}

/// Every mistake the log shows.
pub fn check(log: &Log, assume: Assume) -> Vec<Issue> {
    let mut out = Vec::new();
    // Link-local GIDs, by (GID index, first GID).
    let mut ll: BTreeMap<Option<i64>, (Ipv6Addr, Vec<usize>, usize)> = BTreeMap::new();
    type Listed = (Vec<usize>, usize);
    let mut v1: BTreeMap<(Option<i64>, u8), (V1Why, Listed)> = BTreeMap::new();
    let mut tc: BTreeMap<u32, (u8, Vec<usize>, usize)> = BTreeMap::new();
    for (pi, p) in log.procs.iter().enumerate() {
        if let Some(g) = local_gids(log, pi).find(is_link_local) {
            let e = ll.entry(p.gid_index()).or_insert((g, Vec::new(), 0));
            listed(&mut e.1, &mut e.2, pi);
        }
        let forced: Option<i64> = p
            .env("NCCL_IB_GID_INDEX")
            .and_then(|v| v.trim().parse().ok());
        let why = if p.env("NCCL_IB_ROCE_VERSION_NUM").map(str::trim) == Some("1") {
            Some(V1Why::VersionNum)
        } else if forced.is_some_and(|i| i >= 0 && i % 2 == 0)
            && p.hcas.iter().any(|h| h.name.starts_with("mlx5"))
        {
            Some(V1Why::EvenIndex)
        } else {
            None
        };
        if let Some(why) = why {
            let e = v1
                .entry((p.gid_index(), why as u8))
                .or_insert((why, (Vec::new(), 0)));
            listed(&mut e.1 .0, &mut e.1 .1, pi);
        }
        if let Some(t) = p
            .env("NCCL_IB_TC")
            .and_then(|v| v.trim().parse::<u32>().ok())
        {
            let prio = ((t >> 2) >> 3) as u8 & 7;
            if prio != assume.lossless_priority {
                let e = tc.entry(t).or_insert((prio, Vec::new(), 0));
                listed(&mut e.1, &mut e.2, pi);
            }
        }
    }
    for (gid_index, (gid, procs, more)) in ll {
        out.push(Issue::LinkLocalGid {
            gid,
            gid_index,
            procs,
            more,
        });
    }
    for ((gid_index, _), (why, (procs, more))) in v1 {
        out.push(Issue::RoceV1 {
            gid_index,
            why,
            procs,
            more,
        });
    }
    for (t, (priority, procs, more)) in tc {
        out.push(Issue::TcNotLossless {
            tc: t,
            priority,
            lossless: assume.lossless_priority,
            procs,
            more,
        });
    }
    out.extend(no_route(log));
    if let Some(m) = mixed(log) {
        out.push(m);
    }
    out
}

/// The /24 of an address (the usual rail subnet; a larger one still shares it).
fn net24(a: Ipv4Addr) -> [u8; 3] {
    let o = a.octets();
    [o[0], o[1], o[2]]
}

/// HCAs whose errors go only to peers (two or more) outside the HCA's network, while
/// another HCA of the host is on theirs.
fn no_route(log: &Log) -> Vec<Issue> {
    // (host, hca) -> (local addresses, peers)
    type Addrs = (Vec<Ipv4Addr>, Vec<Ipv4Addr>);
    let mut by: BTreeMap<(&str, &str), Addrs> = BTreeMap::new();
    for e in &log.errors {
        let (Some(hca), Some(l), Some(r)) = (
            e.hca.as_deref(),
            e.local_gid.as_ref().and_then(gid_v4),
            remote_v4(e),
        ) else {
            continue;
        };
        let host = log.procs[e.proc].host.as_str();
        let x = by.entry((host, hca)).or_default();
        if !x.0.contains(&l) {
            x.0.push(l);
        }
        if !x.1.contains(&r) && x.1.len() < 64 {
            x.1.push(r);
        }
    }
    let mut out = Vec::new();
    for ((host, hca), (locals, peers)) in &by {
        let shared = peers
            .iter()
            .any(|p| locals.iter().any(|l| net24(*l) == net24(*p)));
        if shared || locals.is_empty() || peers.len() < 2 {
            continue;
        }
        // Another HCA of the host is on the peers' network (a QP line's GID there): the
        // job has the NIC for them and this one is not it. Without that, the peers may be
        // reached through a routed fabric (cross-rail traffic), which says nothing.
        let nets = host_nets(log, host);
        let other_there = nets
            .iter()
            .any(|(n, net)| n != hca && peers.iter().any(|p| net24(*p) == *net));
        if !other_there {
            continue;
        }
        let mut others: Vec<String> = log
            .on_host(host)
            .flat_map(|p| p.hcas.iter().map(|h| h.name.clone()))
            .filter(|n| n != hca && !by.contains_key(&(*host, n.as_str())))
            .collect();
        others.sort();
        others.dedup();
        out.push(Issue::HcaNoRoute {
            host: host.to_string(),
            hca: hca.to_string(),
            local: locals[0],
            peers: peers.clone(),
            others,
        });
    }
    out
}

/// Each HCA of `host` with the /24 of every IPv4 GID its QP lines show.
fn host_nets(log: &Log, host: &str) -> Vec<(String, [u8; 3])> {
    let mut v = Vec::new();
    for p in log.on_host(host) {
        for q in &p.qps {
            let (Some(d), Some(g)) = (q.dev, q.gid.as_ref().and_then(gid_v4)) else {
                continue;
            };
            if let Some(h) = p.hca(d) {
                let x = (h.name.clone(), net24(g));
                if !v.contains(&x) && v.len() < 256 {
                    v.push(x);
                }
            }
        }
    }
    v
}

/// The peer's IPv4 address: its GID's, else the address NCCL printed.
pub fn remote_v4(e: &WcError) -> Option<Ipv4Addr> {
    e.remote_gid.as_ref().and_then(gid_v4).or(match e.peer {
        Some(IpAddr::V4(a)) => Some(a),
        Some(IpAddr::V6(a)) => a.to_ipv4_mapped(),
        None => None,
    })
}

/// Hosts whose RoCE modes differ.
fn mixed(log: &Log) -> Option<Issue> {
    let mut modes: BTreeMap<Mode, (Vec<String>, usize)> = BTreeMap::new();
    let mut seen: Vec<&str> = Vec::new();
    for (pi, p) in log.procs.iter().enumerate() {
        if p.hcas.is_empty() || seen.contains(&p.host.as_str()) {
            continue;
        }
        if seen.len() < 4096 {
            seen.push(&p.host);
        }
        let mut links: Vec<String> = p.hcas.iter().map(|h| h.link.clone()).collect();
        links.sort();
        links.dedup();
        let m = Mode {
            links,
            gid_index: p
                .env("NCCL_IB_GID_INDEX")
                .and_then(|v| v.trim().parse().ok()),
            roce_version: p.env("NCCL_IB_ROCE_VERSION_NUM").map(str::to_string),
            gid_kind: local_gids(log, pi).next().map(|g| gid_kind(&g)),
        };
        let e = modes.entry(m).or_default();
        if e.0.len() < LISTED {
            e.0.push(p.host.clone());
        } else {
            e.1 += 1;
        }
    }
    if modes.len() < 2 {
        return None;
    }
    Some(Issue::MixedModes {
        modes: modes.into_iter().map(|(m, (h, n))| (m, h, n)).collect(),
    })
}

impl Issue {
    /// The JSON code.
    pub fn code(&self) -> &'static str {
        match self {
            Issue::LinkLocalGid { .. } => "link_local_gid",
            Issue::RoceV1 { .. } => "roce_v1_gid",
            Issue::TcNotLossless { .. } => "tc_not_lossless",
            Issue::HcaNoRoute { .. } => "hca_no_route",
            Issue::MixedModes { .. } => "mixed_roce_modes",
        }
    }

    /// Whether it concerns process `pi` of `log` (or its host).
    pub fn concerns(&self, log: &Log, pi: usize) -> bool {
        let host = &log.procs[pi].host;
        match self {
            Issue::LinkLocalGid { procs, more, .. }
            | Issue::RoceV1 { procs, more, .. }
            | Issue::TcNotLossless { procs, more, .. } => {
                procs.contains(&pi)
                    || (*more > 0 && procs.iter().any(|&q| log.procs[q].host == *host))
            }
            Issue::HcaNoRoute { host: h, .. } => h == host,
            Issue::MixedModes { modes } => {
                modes.iter().any(|(_, hs, n)| hs.contains(host) || *n > 0)
            }
        }
    }
}
