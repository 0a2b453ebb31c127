//! The reply-path check: a request arriving on one interface from another interface's
//! subnet must be accepted and answered through the interface it came in on. Each pair
//! whose replies go astray is proved with lookups, and the `sbr` fix is applied to a copy
//! of the state and looked up again.

use super::{global_v4, global_v4_by_dev, probe, Evidence, Routing, Severity};
use crate::netcheck::lookup::Outcome;
use crate::netcheck::lookup::Query;
use crate::netcheck::model::*;
use std::collections::HashSet;
use std::fmt;
use std::net::IpAddr;

fn has_default_route(st: &NetState, dev: &str) -> bool {
    st.routes.iter().any(|r| {
        r.dst.len == 0
            && r.dst.addr.is_ipv4()
            && r.kind == RouteType::Unicast
            && r.nexthops.iter().any(|n| n.dev.as_deref() == Some(dev))
    })
}

/// A host of `net` that is not one of our addresses `ours` (the peer the check imagines).
fn peer_in(ours: &HashSet<IpAddr>, net: Prefix) -> Option<IpAddr> {
    (1..16u128)
        .map(|n| net.nth(n))
        .find(|a| !ours.contains(a) && *a != net.network())
}

/// The first table id >= 100 that no route and no rule uses (what the sbr plugin picks).
pub fn free_table(st: &NetState) -> u32 {
    // the tables in use gathered once: a scan of every route per candidate is quadratic
    let used: HashSet<u32> = st
        .routes
        .iter()
        .map(|r| r.table)
        .chain(st.rules.iter().filter_map(|r| match r.action {
            RuleAction::Table(t) => Some(t),
            _ => None,
        }))
        .collect();
    (100..u32::MAX).find(|t| !used.contains(t)).unwrap_or(100)
}

/// One step of the sbr plugin's work, as the command that does it by hand.
#[derive(Clone, Debug)]
pub enum SbrCmd {
    /// `ip rule add from ADDR/32 table T priority P`.
    Rule {
        /// The interface's address.
        addr: IpAddr,
        /// The table its traffic looks up.
        table: u32,
        /// The rule's priority.
        priority: u32,
    },
    /// `ip route add SPEC`: a route of the interface in its new table.
    RouteAdd(String),
    /// `ip route del SPEC`: the same route leaving the main table.
    RouteDel(String),
}

impl fmt::Display for SbrCmd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SbrCmd::Rule {
                addr,
                table,
                priority,
            } => write!(
                f,
                "ip rule add from {addr}/32 table {table} priority {priority}"
            ),
            SbrCmd::RouteAdd(spec) => write!(f, "ip route add {spec}"),
            SbrCmd::RouteDel(spec) => write!(f, "ip route del {spec}"),
        }
    }
}

/// What the sbr plugin does for `dev`: `from <addr>/32 lookup T` per address, and every
/// main-table route of `dev` moved into table T. Returns the new state and the commands.
pub fn apply_sbr(st: &NetState, dev: &str, table: u32) -> (NetState, Vec<SbrCmd>) {
    let mut new = st.clone();
    let mut cmds = Vec::new();
    let mut prio = new
        .rules
        .iter()
        .filter(|r| r.v4 && r.priority > 0 && r.priority < 32766)
        .map(|r| r.priority)
        .min()
        .unwrap_or(32766)
        .saturating_sub(1);
    if new.rules.iter().all(|r| !r.v4) {
        new.rules.extend(default_rules(true));
    }
    for a in global_v4(st, dev) {
        new.rules.push(Rule {
            v4: true,
            priority: prio,
            invert: false,
            src: Some(Prefix::host(a.addr)),
            dst: None,
            iif: None,
            oif: None,
            fwmark: None,
            tos: 0,
            action: RuleAction::Table(table),
            suppress_prefixlen: None,
            unsupported: None,
        });
        cmds.push(SbrCmd::Rule {
            addr: a.addr,
            table,
            priority: prio,
        });
        prio = prio.saturating_sub(1);
    }
    for r in &mut new.routes {
        if r.table == RT_TABLE_MAIN
            && r.dst.addr.is_ipv4()
            && r.nexthops.iter().any(|n| n.dev.as_deref() == Some(dev))
        {
            let old = r.spec();
            r.table = table;
            cmds.push(SbrCmd::RouteAdd(r.spec()));
            cmds.push(SbrCmd::RouteDel(old));
        }
    }
    (new, cmds)
}

/// Why an ARP request arriving on an interface is not answered there.
#[derive(Clone, Debug)]
pub enum ArpBlocked {
    /// The input route check fails, so the request is dropped.
    InputRoute,
    /// `arp_ignore 8` on the interface.
    IgnoreAll,
    /// `arp_ignore 2` on the interface, and the sender is outside the address's subnet.
    IgnoreSubnet {
        /// The address's subnet.
        subnet: Prefix,
    },
    /// `arp_filter 1` on the interface, and the reply would leave through another.
    Filter {
        /// Where the reply would leave.
        reply_dev: String,
    },
}

/// How a request on `iif` to `local` from `peer` fares, and where the replies go.
struct PathResult {
    request: Outcome,
    reply: Outcome,
    ev: Vec<Evidence>,
    /// The ARP request's fate: None = answered on iif.
    arp_blocked: Option<ArpBlocked>,
}

fn path(st: &NetState, iif: &str, local: &Address, peer: IpAddr) -> PathResult {
    let mut ev = Vec::new();
    let request = probe(st, Query::to(local.addr).from(peer).iif(iif), &mut ev);
    let reply = probe(st, Query::to(peer).from(local.addr), &mut ev);
    let mut arp_blocked = None;
    if request.is_err() {
        arp_blocked = Some(ArpBlocked::InputRoute);
    } else if st.have_sysctl {
        let ign = st.effective(iif, "arp_ignore").unwrap_or(0);
        if ign == 8 {
            arp_blocked = Some(ArpBlocked::IgnoreAll);
        } else if ign == 2 && !local.subnet().contains(peer) {
            arp_blocked = Some(ArpBlocked::IgnoreSubnet {
                subnet: local.subnet(),
            });
        }
        if st.effective(iif, "arp_filter") == Some(1) {
            if let Ok(a) = &reply {
                if a.dev != iif {
                    arp_blocked = Some(ArpBlocked::Filter {
                        reply_dev: a.dev.clone(),
                    });
                }
            }
        }
    }
    PathResult {
        request,
        reply,
        ev,
        arp_blocked,
    }
}

fn path_ok(p: &PathResult, iif: &str) -> bool {
    p.arp_blocked.is_none() && p.request.is_ok() && matches!(&p.reply, Ok(a) if a.dev == iif)
}

/// One (interface, other interface's subnet) pair whose replies go astray, with the
/// lookups that prove it and the sbr fix, looked up again.
#[derive(Clone, Debug)]
pub struct ReplyPath {
    /// The interface requests arrive on (I).
    pub iif: String,
    /// The other interface whose subnet the requests come from (J).
    pub other: String,
    /// The address on `iif` the requests are for.
    pub local: IpAddr,
    /// J's subnet.
    pub net: Prefix,
    /// The host of `net` the check imagines.
    pub peer: IpAddr,
    /// Why the ARP request is not answered on `iif`, when it is not.
    pub arp_blocked: Option<ArpBlocked>,
    /// Where the replies leave, when the reply lookup succeeds.
    pub reply_dev: Option<String>,
    /// The effective `rp_filter` of `iif`, when known.
    pub rp_filter: Option<i64>,
    /// The request and reply lookups.
    pub lookups: Vec<Evidence>,
    /// The IPv4 policy rules (`ip rule`), each as `ip rule` prints it.
    pub rules: Vec<String>,
    /// The same lookups on the state with the sbr fix applied.
    pub after: Vec<Evidence>,
    /// The commands of the sbr fix for `other`.
    pub sbr: Vec<SbrCmd>,
    /// Whether the fixed state answers through `iif`.
    pub fix_works: bool,
    /// `iif` forwards (a node or router).
    pub forwarding: bool,
    /// A default route leaves through `iif`.
    pub default_route: bool,
}

impl ReplyPath {
    /// An error on an end host whose default route leaves through `iif` (the pod); info on
    /// a forwarding host or without a default route through `iif`.
    pub fn severity(&self) -> Severity {
        if self.default_route && !self.forwarding {
            Severity::Error
        } else {
            Severity::Info
        }
    }
}

/// Reply-path asymmetry: for every interface I with a global IPv4 address and every subnet
/// N on another interface J, a request arriving on I from a host of N must be accepted and
/// answered through I. Without source-based routing for J, the kernel drops it (strict
/// rp_filter: no ARP reply) or answers through J (loose). N is a real shared subnet (prefix
/// /30 or shorter: /32 host routes such as Calico's are nobody else's subnet), and J is not
/// the default route's interface (replies to the world leaving there are normal). The
/// finding is an error on an end host whose default route leaves through I (the pod);
/// on a forwarding host (node, router) or without a default route through I it is info.
pub fn reply_path(st: &NetState, out: &mut Vec<Routing>) {
    // Everything per device is gathered once, so that many devices cost little: the
    // global IPv4 addresses, the devices of default routes, and the shared subnets
    // (`j`, its address's subnet) that a reply could wrongly leave through.
    let by_dev = global_v4_by_dev(st);
    let ours: HashSet<IpAddr> = st.addrs.iter().map(|a| a.addr).collect();
    let default_devs: HashSet<&str> = st
        .routes
        .iter()
        .filter(|r| r.dst.len == 0 && r.dst.addr.is_ipv4() && r.kind == RouteType::Unicast)
        .flat_map(|r| r.nexthops.iter().filter_map(|n| n.dev.as_deref()))
        .collect();
    let links: Vec<&Link> = st.links.iter().filter(|l| l.name != "lo").collect();
    let mut shared = Vec::new();
    for j in &links {
        // replies to the world leaving through the default route's interface are normal
        if default_devs.contains(j.name.as_str()) {
            continue;
        }
        for jaddr in by_dev.get(j.name.as_str()).into_iter().flatten() {
            // a real subnet shared with other hosts, not a /32 or point-to-point
            if jaddr.prefix_len <= 30 {
                shared.push((j.name.as_str(), jaddr.subnet()));
            }
        }
    }
    let max = crate::config::limits::REPLY_PATH_CHECKS;
    let (mut checked, mut skipped) = (0usize, 0usize);
    // the pairs whose replies go astray, in the order they are found
    let mut bad = Vec::new();
    for i in &links {
        let Some(locals) = by_dev.get(i.name.as_str()) else {
            continue;
        };
        for &(j, net) in shared.iter().filter(|(j, _)| *j != i.name) {
            if locals.iter().any(|a| net.contains(a.addr)) {
                continue;
            }
            let Some(peer) = peer_in(&ours, net) else {
                continue;
            };
            for local in locals {
                if checked == max {
                    skipped += 1;
                    continue;
                }
                checked += 1;
                let p = path(st, &i.name, local, peer);
                if !path_ok(&p, &i.name) {
                    bad.push(Some((i.name.as_str(), j, *local, net, peer, p)));
                }
            }
        }
    }
    // The sbr fix of each `j` is a copy of the state: made once per `j`, one at a time.
    let mut found: Vec<Option<Routing>> = (0..bad.len()).map(|_| None).collect();
    let table = free_table(st);
    for k in 0..bad.len() {
        let Some(&(_, j, ..)) = bad[k].as_ref() else {
            continue;
        };
        let (state, cmds) = apply_sbr(st, j, table);
        let sbr = Fix { state, cmds };
        for (n, slot) in bad.iter_mut().enumerate().skip(k) {
            if slot.as_ref().is_none_or(|b| b.1 != j) {
                continue;
            }
            if let Some((i, j, local, net, peer, p)) = slot.take() {
                let pair = Pair {
                    i,
                    j,
                    local,
                    net,
                    peer,
                };
                found[n] = Some(Routing::ReplyPath(Box::new(reply_path_of(
                    st, &pair, p, &sbr,
                ))));
            }
        }
    }
    out.extend(found.into_iter().flatten());
    if skipped > 0 {
        out.push(Routing::ReplyPathTruncated { checked, skipped });
    }
}

/// The state with `sbr` applied for one interface, and the commands that apply it.
struct Fix {
    state: NetState,
    cmds: Vec<SbrCmd>,
}

/// The pair checked: requests on `i` to `local` from `peer`, a host of `j`'s subnet `net`.
struct Pair<'a> {
    i: &'a str,
    j: &'a str,
    local: &'a Address,
    net: Prefix,
    peer: IpAddr,
}

fn reply_path_of(st: &NetState, pair: &Pair<'_>, p: PathResult, sbr: &Fix) -> ReplyPath {
    let Pair {
        i,
        j,
        local,
        net,
        peer,
    } = *pair;
    let after = path(&sbr.state, i, local, peer);
    let fix_works = path_ok(&after, i);
    ReplyPath {
        iif: i.to_string(),
        other: j.to_string(),
        local: local.addr,
        net,
        peer,
        arp_blocked: p.arp_blocked,
        reply_dev: p.reply.as_ref().map(|a| a.dev.clone()).ok(),
        rp_filter: st.effective(i, "rp_filter"),
        lookups: p.ev,
        rules: st.rules_for(true).iter().map(Rule::spec).collect(),
        after: after.ev,
        sbr: sbr.cmds.clone(),
        fix_works,
        forwarding: st.conf(i, "forwarding").unwrap_or(0) != 0,
        default_route: has_default_route(st, i),
    }
}
