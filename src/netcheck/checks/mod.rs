//! Routing checks over one namespace's state. Every check returns typed values ([`Routing`]):
//! what breaks, with the facts and the lookups that prove it (`ip route get ...` and the
//! kernel's answer as computed by `lookup`); `report::words` words them. The reply-path
//! check also re-runs its lookups on a copy of the state with the fix applied, so the fix
//! shown is one that works.

use crate::netcheck::lookup::{lookup, Outcome, Query};
use crate::netcheck::model::*;
use serde::Serialize;
use std::collections::HashMap;

pub mod capture;
mod node;
mod reply;
pub use node::{node_source, NodeSource};
pub use reply::{apply_sbr, free_table, reply_path, ArpBlocked, ReplyPath, SbrCmd};

/// The one severity scale (shared with `analyze` and the NAD lint).
pub use crate::report::Severity;

/// The worded finding and interface sysctls, as the report shows them (see
/// [`crate::netcheck::report::words`]).
pub use crate::netcheck::report::{Finding, IfaceSysctl};

/// One lookup (or capture observation) behind a finding and what it answered.
#[derive(Clone, Debug, Serialize)]
pub struct Evidence {
    /// The question, e.g. `ip route get 10.0.0.1 from 10.0.1.5 iif net1` or a capture observation.
    pub query: String,
    /// What the kernel (as `lookup` computes it) or the capture answered.
    pub answer: String,
}

/// What the routing checks found, with the facts that prove it.
#[derive(Clone, Debug)]
pub enum Routing {
    /// `reply-path`: replies to another interface's subnet do not go back out of the
    /// interface the requests came in on (no source-based routing, `sbr`).
    ReplyPath(Box<ReplyPath>),
    /// `reply-path-truncated`: the reply-path check stopped at its limit.
    ReplyPathTruncated {
        /// (address, other interface's subnet) pairs checked.
        checked: usize,
        /// Pairs left unchecked.
        skipped: usize,
    },
    /// `node-source`: routes through address-less devices take their source from another
    /// device's address.
    NodeSource(Box<NodeSource>),
    /// `node-source-truncated`: the node-source check stopped at its limit of lookups.
    NodeSourceTruncated {
        /// The limit (`config::limits::NODE_SOURCE_LOOKUPS`).
        max: usize,
        /// Routes left unchecked.
        skipped: usize,
    },
    /// `arp-sysctl`: `arp_ignore 8` on a device with a global IPv4 address.
    ArpIgnoreAll {
        /// The device.
        dev: String,
    },
    /// `arp-sysctl`: `arp_ignore 2` on a device whose addresses are all /31 or /32.
    ArpIgnoreSubnet {
        /// The device.
        dev: String,
        /// Its first global address's prefix length.
        prefix_len: u8,
    },
}

impl Routing {
    /// The finding's stable identifier.
    pub fn id(&self) -> &'static str {
        match self {
            Routing::ReplyPath(_) => "reply-path",
            Routing::ReplyPathTruncated { .. } => "reply-path-truncated",
            Routing::NodeSource(_) => "node-source",
            Routing::NodeSourceTruncated { .. } => "node-source-truncated",
            Routing::ArpIgnoreAll { .. } | Routing::ArpIgnoreSubnet { .. } => "arp-sysctl",
        }
    }

    /// How bad it is.
    pub fn severity(&self) -> Severity {
        match self {
            Routing::ReplyPath(r) => r.severity(),
            Routing::NodeSource(n) if n.rdma => Severity::Error,
            Routing::ArpIgnoreAll { .. } => Severity::Error,
            Routing::NodeSource(_)
            | Routing::ReplyPathTruncated { .. }
            | Routing::NodeSourceTruncated { .. }
            | Routing::ArpIgnoreSubnet { .. } => Severity::Warning,
        }
    }
}

/// A lookup's outcome as one line: the answer in `ip route get` style, or the error and why.
pub fn show(o: &Outcome) -> String {
    match o {
        Ok(a) => a.to_string(),
        Err(e) => e.to_string(),
    }
}

fn probe(st: &NetState, q: Query, ev: &mut Vec<Evidence>) -> Outcome {
    let o = lookup(st, &q);
    ev.push(Evidence {
        query: q.to_string(),
        answer: show(&o),
    });
    o
}

/// The effective rp_filter / ARP sysctls of one interface (each the larger of `all` and
/// the device's; `arp_filter` 1 when either has it set); `None` when not collected.
#[derive(Clone, Debug)]
pub struct Sysctls {
    /// The device name.
    pub dev: String,
    /// `rp_filter`: 0 off, 1 strict, 2 loose.
    pub rp_filter: Option<i64>,
    /// `arp_ignore`: which ARP requests the device answers.
    pub arp_ignore: Option<i64>,
    /// `arp_announce`: which source address its ARP requests name.
    pub arp_announce: Option<i64>,
    /// `arp_filter`: answer ARP only when the reply would leave through this device.
    pub arp_filter: Option<i64>,
}

/// The rp_filter / ARP sysctls of every interface but `lo`; empty when the state has no
/// sysctls (an offline dump without `sysctl.json`).
pub fn iface_sysctls(st: &NetState) -> Vec<Sysctls> {
    if !st.have_sysctl {
        return Vec::new();
    }
    st.links
        .iter()
        .filter(|l| l.name != "lo")
        .map(|l| {
            let g = |k| st.effective(&l.name, k);
            Sysctls {
                dev: l.name.clone(),
                rp_filter: g("rp_filter"),
                arp_ignore: g("arp_ignore"),
                arp_announce: g("arp_announce"),
                arp_filter: g("arp_filter"),
            }
        })
        .collect()
}

fn global_v4(st: &NetState, dev: &str) -> Vec<Address> {
    st.addrs_of(dev)
        .filter(|a| is_global_v4(a))
        .cloned()
        .collect()
}

fn is_global_v4(a: &Address) -> bool {
    a.addr.is_ipv4() && a.scope == scope::UNIVERSE && !a.secondary
}

/// [`global_v4`] of every device at once, in one pass over the addresses (a per-device
/// scan for each of many devices is quadratic).
fn global_v4_by_dev(st: &NetState) -> HashMap<&str, Vec<&Address>> {
    let mut m: HashMap<&str, Vec<&Address>> = HashMap::new();
    for a in st.addrs.iter().filter(|a| is_global_v4(a)) {
        m.entry(a.dev.as_str()).or_default().push(a);
    }
    m
}

/// Sysctls that silence ARP on an interface regardless of routing.
pub fn arp_sysctls(st: &NetState, out: &mut Vec<Routing>) {
    if !st.have_sysctl {
        return;
    }
    let by_dev = global_v4_by_dev(st);
    for l in st.links.iter().filter(|l| l.name != "lo") {
        let Some(addrs) = by_dev.get(l.name.as_str()) else {
            continue;
        };
        let ign = st.effective(&l.name, "arp_ignore").unwrap_or(0);
        if ign == 8 {
            out.push(Routing::ArpIgnoreAll {
                dev: l.name.clone(),
            });
        } else if ign == 2 && addrs.iter().all(|a| a.prefix_len >= 31) {
            out.push(Routing::ArpIgnoreSubnet {
                dev: l.name.clone(),
                prefix_len: addrs[0].prefix_len,
            });
        }
    }
}

#[cfg(test)]
mod tests;
