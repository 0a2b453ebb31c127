//! Routing checks over one namespace's state. Every finding names what breaks in plain
//! words, carries the lookups that prove it (`ip route get ...` and the kernel's answer as
//! computed by `lookup`), and the fix. The reply-path check also re-runs its lookups on a
//! copy of the state with the fix applied, so the fix shown is one that works.

use crate::netcheck::lookup::{lookup, Outcome, Query};
use crate::netcheck::model::*;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

pub mod capture;
mod node;
pub use node::node_source;

/// The one severity scale (shared with `analyze` and the NAD lint).
pub use crate::report::Severity;

/// One lookup (or capture observation) behind a finding and what it answered.
#[derive(Clone, Debug, Serialize)]
pub struct Evidence {
    /// The question, e.g. `ip route get 10.0.0.1 from 10.0.1.5 iif net1` or a capture observation.
    pub query: String,
    /// What the kernel (as `lookup` computes it) or the capture answered.
    pub answer: String,
}

/// A netcheck finding as the report shows it: already worded (title, why, evidence,
/// fix), because each check proves its case with lookups it words as it goes. The
/// capture-side ones are worded from the analyzer's values by `crate::report::findings`
/// (see `super::capture`); `analysis::report::Finding` is the analyzer's value type.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// Stable identifier: `reply-path`, `node-source`, `arp-sysctl`, `roce-*`.
    pub id: &'static str,
    /// How bad it is; findings at or above the `--fail-on` gate make the run exit 1.
    pub severity: Severity,
    /// One line, plain words.
    pub title: String,
    /// Why it happens.
    pub detail: String,
    /// The lookups or observations that prove the finding, in the order they were made.
    pub evidence: Vec<Evidence>,
    /// Commands or settings that fix it.
    pub fix: Vec<String>,
    /// A longer configuration block to paste (e.g. the NetworkAttachmentDefinition with `sbr`
    /// chained); `None` for most findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
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

/// Per-interface sysctls and what they do here.
#[derive(Clone, Debug, Serialize)]
pub struct IfaceSysctl {
    /// The device name.
    pub dev: String,
    /// The effective `rp_filter` (the larger of `all` and the device's): 0 off, 1 strict, 2 loose;
    /// `None` when not collected.
    pub rp_filter: Option<i64>,
    /// The effective `arp_ignore` (the larger of `all` and the device's): which ARP requests the
    /// device answers; `None` when unknown.
    pub arp_ignore: Option<i64>,
    /// The effective `arp_announce` (the larger of `all` and the device's): which source address
    /// its ARP requests name; `None` when unknown.
    pub arp_announce: Option<i64>,
    /// The effective `arp_filter` (1 when `all` or the device has it set): answer ARP only when the
    /// reply would leave through this device; `None` when unknown.
    pub arp_filter: Option<i64>,
    /// One sentence per sysctl on what it does on this interface, for `--verbose` text.
    pub effect: Vec<String>,
}

/// What an effective `rp_filter` value does, in one sentence: 0 off, 1 strict (drops requests, and
/// so ARP, whose reply would leave elsewhere), 2 loose.
pub fn rp_effect(v: i64) -> &'static str {
    match v {
        0 => "rp_filter off: no reverse-path check",
        1 => "rp_filter strict: a packet (or ARP request) whose reply would leave through another interface is dropped, so no ARP reply",
        _ => "rp_filter loose: accepted when the source is reachable at all; ARP is answered here, but replies may leave through another interface",
    }
}

fn arp_ignore_effect(v: i64) -> &'static str {
    match v {
        0 => "arp_ignore 0: answers ARP for any local address",
        1 => "arp_ignore 1: answers only for addresses on this interface",
        2 => "arp_ignore 2: answers only for addresses on this interface whose subnet holds the sender",
        3 => "arp_ignore 3: does not answer for host-scope addresses",
        8 => "arp_ignore 8: never answers ARP",
        _ => "arp_ignore: reserved value, answers as 0",
    }
}

fn arp_announce_effect(v: i64) -> &'static str {
    match v {
        0 => "arp_announce 0: ARP requests name the packet's own source (any local address)",
        1 => "arp_announce 1: avoids a source outside the target's subnet when it can",
        _ => "arp_announce 2: ARP requests name the best local address for the target",
    }
}

/// The rp_filter / ARP sysctls of every interface but `lo`, with their effect; empty when the state
/// has no sysctls (an offline dump without `sysctl.json`).
pub fn iface_sysctls(st: &NetState) -> Vec<IfaceSysctl> {
    if !st.have_sysctl {
        return Vec::new();
    }
    st.links
        .iter()
        .filter(|l| l.name != "lo")
        .map(|l| {
            let g = |k| st.effective(&l.name, k);
            let mut effect = Vec::new();
            if let Some(v) = g("rp_filter") {
                effect.push(rp_effect(v).to_string());
            }
            if let Some(v) = g("arp_ignore") {
                effect.push(arp_ignore_effect(v).to_string());
            }
            if let Some(v) = g("arp_announce") {
                effect.push(arp_announce_effect(v).to_string());
            }
            if g("arp_filter") == Some(1) {
                effect.push("arp_filter 1: answers ARP only when the reply would be routed out of this interface".into());
            }
            IfaceSysctl {
                dev: l.name.clone(),
                rp_filter: g("rp_filter"),
                arp_ignore: g("arp_ignore"),
                arp_announce: g("arp_announce"),
                arp_filter: g("arp_filter"),
                effect,
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

/// What the sbr plugin does for `dev`: `from <addr>/32 lookup T` per address, and every
/// main-table route of `dev` moved into table T. Returns the new state and the commands.
pub fn apply_sbr(st: &NetState, dev: &str, table: u32) -> (NetState, Vec<String>) {
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
        cmds.push(format!(
            "ip rule add from {}/32 table {table} priority {prio}",
            a.addr
        ));
        prio = prio.saturating_sub(1);
    }
    for r in &mut new.routes {
        if r.table == RT_TABLE_MAIN
            && r.dst.addr.is_ipv4()
            && r.nexthops.iter().any(|n| n.dev.as_deref() == Some(dev))
        {
            let old = r.spec();
            r.table = table;
            cmds.push(format!("ip route add {}", r.spec()));
            cmds.push(format!("ip route del {old}"));
        }
    }
    (new, cmds)
}

/// The NetworkAttachmentDefinition excerpt shown with a reply-path error: how to chain the `sbr`
/// CNI plugin after the main plugin.
pub const SBR_SNIPPET: &str = r#"In the NetworkAttachmentDefinition of the secondary network, chain the sbr plugin
after the main plugin (it adds the source rule and moves the interface's routes
into their own table, as above):

  "config": '{
    "cniVersion": "0.3.1",
    "name": "<network name>",
    "plugins": [
      { "type": "sriov", "...": "your existing IPAM and settings" },
      { "type": "sbr" }
    ]
  }'"#;

/// How a request on `iif` to `local` from `peer` fares, and where the replies go.
struct PathResult {
    request: Outcome,
    reply: Outcome,
    ev: Vec<Evidence>,
    /// The ARP request's fate: None = answered on iif, Some(why) = not answered.
    arp_blocked: Option<String>,
}

fn path(st: &NetState, iif: &str, local: &Address, peer: IpAddr) -> PathResult {
    let mut ev = Vec::new();
    let request = probe(st, Query::to(local.addr).from(peer).iif(iif), &mut ev);
    let reply = probe(st, Query::to(peer).from(local.addr), &mut ev);
    let mut arp_blocked = None;
    if request.is_err() {
        arp_blocked = Some(format!(
            "the input route check fails, so the ARP request for {} is dropped",
            local.addr
        ));
    } else if st.have_sysctl {
        let ign = st.effective(iif, "arp_ignore").unwrap_or(0);
        if ign == 8 {
            arp_blocked = Some(format!("arp_ignore 8 on {iif}"));
        } else if ign == 2 && !local.subnet().contains(peer) {
            arp_blocked = Some(format!(
                "arp_ignore 2 on {iif}: {peer} is not in {}",
                local.subnet()
            ));
        }
        if st.effective(iif, "arp_filter") == Some(1) {
            if let Ok(a) = &reply {
                if a.dev != iif {
                    arp_blocked = Some(format!(
                        "arp_filter 1 on {iif}: the reply to {peer} would leave through {}",
                        a.dev
                    ));
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

/// Reply-path asymmetry: for every interface I with a global IPv4 address and every subnet
/// N on another interface J, a request arriving on I from a host of N must be accepted and
/// answered through I. Without source-based routing for J, the kernel drops it (strict
/// rp_filter: no ARP reply) or answers through J (loose). N is a real shared subnet (prefix
/// /30 or shorter: /32 host routes such as Calico's are nobody else's subnet), and J is not
/// the default route's interface (replies to the world leaving there are normal). The
/// finding is an error on an end host whose default route leaves through I (the pod);
/// on a forwarding host (node, router) or without a default route through I it is info.
pub fn reply_path(st: &NetState, out: &mut Vec<Finding>) {
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
    let mut found: Vec<Option<Finding>> = (0..bad.len()).map(|_| None).collect();
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
                found[n] = Some(reply_path_finding(st, i, j, local, net, peer, p, &sbr));
            }
        }
    }
    out.extend(found.into_iter().flatten());
    if skipped > 0 {
        out.push(reply_path_truncated(checked, skipped));
    }
}

/// The reply-path check stopped at its limit: say how much was left unchecked.
fn reply_path_truncated(checked: usize, skipped: usize) -> Finding {
    Finding {
        id: "reply-path-truncated",
        severity: Severity::Warning,
        title: format!(
            "reply paths checked for the first {checked} (address, other interface's subnet) \
             pairs only; {skipped} more were not checked"
        ),
        detail: "Each pair costs two route lookups; netcheck stops at its limit so that a \
                 namespace with very many interfaces and subnets is checked in bounded time. \
                 Problems among the pairs not checked are not reported."
            .into(),
        evidence: Vec::new(),
        fix: vec!["check the interfaces that matter with --route-get".into()],
        snippet: None,
    }
}

/// The state with `sbr` applied for one interface, and the commands that apply it.
struct Fix {
    state: NetState,
    cmds: Vec<String>,
}

#[allow(clippy::too_many_arguments)] // the pair checked, its lookups and the fix
fn reply_path_finding(
    st: &NetState,
    i: &str,
    j: &str,
    local: &Address,
    net: Prefix,
    peer: IpAddr,
    p: PathResult,
    sbr: &Fix,
) -> Finding {
    let rpf = st.effective(i, "rp_filter");
    let reply_dev = p.reply.as_ref().map(|a| a.dev.clone()).ok();
    let what = match (&p.arp_blocked, &reply_dev) {
        (Some(why), _) => format!(
            "a host in {net} (e.g. {peer}) gets no answer at all from {} on {i}: {why}",
            local.addr
        ),
        (None, Some(d)) if d != i => format!(
            "{i} answers the ARP from {peer}, but the replies from {} leave through {d}, where {peer} does not expect them",
            local.addr
        ),
        _ => format!("requests from {net} to {} on {i} are not answered", local.addr),
    };
    let mut detail = format!(
        "Requests to {addr} that arrive on {i} from a source in {net} (the subnet of {j}; e.g. a node that \
picks its {j}-subnet address as source, as with an address-less cali* device) are checked and answered \
with the main routing table, which sends everything in {net} out through {j}. Nothing routes \
traffic from {addr} back out of {i}: {j} has no source-based routing (no `ip rule from <{j} address> \
lookup <table>`).",
        addr = local.addr
    );
    if let Some(v) = rpf {
        detail.push_str(&format!(" On {i}: {}.", rp_effect(v)));
    }
    let (fixed, mut fix) = (&sbr.state, sbr.cmds.clone());
    let mut ev = p.ev;
    ev.push(Evidence {
        query: "ip rule".into(),
        answer: st
            .rules_for(true)
            .iter()
            .map(Rule::spec)
            .collect::<Vec<_>>()
            .join("; "),
    });
    let after = path(fixed, i, local, peer);
    let works = path_ok(&after, i);
    for e in after.ev {
        ev.push(Evidence {
            query: format!("{} (after the fix)", e.query),
            answer: e.answer,
        });
    }
    if !works {
        fix.push(format!(
            "(the sbr rules alone do not make {i} answer here; check the rules and rp_filter on {i})"
        ));
    }
    // A host that forwards (a node, a router) is expected to route asymmetrically and to
    // drop such sources on purpose; an end host (a pod) with a default route through I
    // is the missing-sbr case.
    let forwarding = st.conf(i, "forwarding").unwrap_or(0) != 0;
    let severity = if has_default_route(st, i) && !forwarding {
        Severity::Error
    } else {
        Severity::Info
    };
    if severity == Severity::Info {
        detail.push_str(&format!(
            " Reported for information: {}.",
            if forwarding {
                format!("{i} forwards (a node or router), where asymmetric routing and rp_filter drops are usually intended")
            } else {
                format!("{i} has no default route, so sources from {net} rarely arrive there")
            }
        ));
    }
    Finding {
        id: "reply-path",
        severity,
        title: format!("Replies to {net} do not go back out of {i}: {what}"),
        detail,
        evidence: ev,
        fix,
        snippet: (severity == Severity::Error).then(|| SBR_SNIPPET.to_string()),
    }
}

/// Sysctls that silence ARP on an interface regardless of routing.
pub fn arp_sysctls(st: &NetState, out: &mut Vec<Finding>) {
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
            out.push(Finding {
                id: "arp-sysctl",
                severity: Severity::Error,
                title: format!("{} never answers ARP (arp_ignore 8)", l.name),
                detail: "arp_ignore 8 drops every ARP request, so nobody can resolve the addresses of this interface.".into(),
                evidence: Vec::new(),
                fix: vec![format!("sysctl -w net.ipv4.conf.{}.arp_ignore=1 (and check net.ipv4.conf.all.arp_ignore)", l.name)],
                snippet: None,
            });
        } else if ign == 2 && addrs.iter().all(|a| a.prefix_len >= 31) {
            out.push(Finding {
                id: "arp-sysctl",
                severity: Severity::Warning,
                title: format!(
                    "{} answers ARP only from senders in its own subnet, but its address is a /{}: no sender qualifies (arp_ignore 2)",
                    l.name, addrs[0].prefix_len
                ),
                detail: "arp_ignore 2 requires the sender's address to be in the target address's subnet; with a /32 (Calico pod) the node's ARP requests are never answered.".into(),
                evidence: Vec::new(),
                fix: vec![format!("sysctl -w net.ipv4.conf.{}.arp_ignore=1 net.ipv4.conf.all.arp_ignore=1", l.name)],
                snippet: None,
            });
        }
    }
}

#[cfg(test)]
mod tests;
