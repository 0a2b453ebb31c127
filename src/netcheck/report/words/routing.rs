//! The words of the routing checks: reply paths (with the sbr snippet), node-sourced
//! traffic, ARP sysctls, and what each interface sysctl does.

use super::{ev, Words};
use crate::netcheck::checks::{ArpBlocked, NodeSource, ReplyPath, Routing, Severity, Sysctls};
use crate::netcheck::report::IfaceSysctl;

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

pub(super) fn words(r: &Routing) -> Words {
    match r {
        Routing::ReplyPath(p) => reply_path(p),
        Routing::ReplyPathTruncated { checked, skipped } => Words::new(
            format!(
                "reply paths checked for the first {checked} (address, other interface's subnet) \
                 pairs only; {skipped} more were not checked"
            ),
            "Each pair costs two route lookups; netcheck stops at its limit so that a \
             namespace with very many interfaces and subnets is checked in bounded time. \
             Problems among the pairs not checked are not reported."
                .into(),
            Vec::new(),
            vec!["check the interfaces that matter with --route-get".into()],
        ),
        Routing::NodeSource(n) => node_source(n),
        Routing::NodeSourceTruncated { max, skipped } => Words::new(
            format!(
                "the sources of routes through address-less devices were checked for the first \
                 {max} routes only; {skipped} more were not checked"
            ),
            "Each route costs a route lookup; netcheck stops at its limit so that a \
             namespace with very many such routes is checked in bounded time. Problems \
             among the routes not checked are not reported."
                .into(),
            Vec::new(),
            vec!["check the routes that matter with --route-get".into()],
        ),
        Routing::ArpIgnoreAll { dev } => Words::new(
            format!("{dev} never answers ARP (arp_ignore 8)"),
            "arp_ignore 8 drops every ARP request, so nobody can resolve the addresses of this interface.".into(),
            Vec::new(),
            vec![format!("sysctl -w net.ipv4.conf.{dev}.arp_ignore=1 (and check net.ipv4.conf.all.arp_ignore)")],
        ),
        Routing::ArpIgnoreSubnet { dev, prefix_len } => Words::new(
            format!(
                "{dev} answers ARP only from senders in its own subnet, but its address is a /{prefix_len}: no sender qualifies (arp_ignore 2)"
            ),
            "arp_ignore 2 requires the sender's address to be in the target address's subnet; with a /32 (Calico pod) the node's ARP requests are never answered.".into(),
            Vec::new(),
            vec![format!("sysctl -w net.ipv4.conf.{dev}.arp_ignore=1 net.ipv4.conf.all.arp_ignore=1")],
        ),
    }
}

/// Why the ARP request from `p.peer` is not answered on `p.iif`.
fn blocked(p: &ReplyPath, why: &ArpBlocked) -> String {
    let (iif, peer) = (&p.iif, p.peer);
    match why {
        ArpBlocked::InputRoute => format!(
            "the input route check fails, so the ARP request for {} is dropped",
            p.local
        ),
        ArpBlocked::IgnoreAll => format!("arp_ignore 8 on {iif}"),
        ArpBlocked::IgnoreSubnet { subnet } => {
            format!("arp_ignore 2 on {iif}: {peer} is not in {subnet}")
        }
        ArpBlocked::Filter { reply_dev } => {
            format!("arp_filter 1 on {iif}: the reply to {peer} would leave through {reply_dev}")
        }
    }
}

fn reply_path(p: &ReplyPath) -> Words {
    let (i, j, net, peer) = (&p.iif, &p.other, p.net, p.peer);
    let what = match (&p.arp_blocked, &p.reply_dev) {
        (Some(why), _) => format!(
            "a host in {net} (e.g. {peer}) gets no answer at all from {} on {i}: {}",
            p.local,
            blocked(p, why)
        ),
        (None, Some(d)) if d != i => format!(
            "{i} answers the ARP from {peer}, but the replies from {} leave through {d}, where {peer} does not expect them",
            p.local
        ),
        _ => format!("requests from {net} to {} on {i} are not answered", p.local),
    };
    let mut detail = format!(
        "Requests to {addr} that arrive on {i} from a source in {net} (the subnet of {j}; e.g. a node that \
picks its {j}-subnet address as source, as with an address-less cali* device) are checked and answered \
with the main routing table, which sends everything in {net} out through {j}. Nothing routes \
traffic from {addr} back out of {i}: {j} has no source-based routing (no `ip rule from <{j} address> \
lookup <table>`).",
        addr = p.local
    );
    if let Some(v) = p.rp_filter {
        detail.push_str(&format!(" On {i}: {}.", rp_effect(v)));
    }
    let mut fix: Vec<String> = p.sbr.iter().map(ToString::to_string).collect();
    let mut evidence = p.lookups.clone();
    evidence.push(ev("ip rule", p.rules.join("; ")));
    for e in &p.after {
        evidence.push(ev(format!("{} (after the fix)", e.query), e.answer.clone()));
    }
    if !p.fix_works {
        fix.push(format!(
            "(the sbr rules alone do not make {i} answer here; check the rules and rp_filter on {i})"
        ));
    }
    let severity = p.severity();
    if severity == Severity::Info {
        detail.push_str(&format!(
            " Reported for information: {}.",
            if p.forwarding {
                format!("{i} forwards (a node or router), where asymmetric routing and rp_filter drops are usually intended")
            } else {
                format!("{i} has no default route, so sources from {net} rarely arrive there")
            }
        ));
    }
    Words {
        title: format!("Replies to {net} do not go back out of {i}: {what}"),
        detail,
        evidence,
        fix,
        snippet: (severity == Severity::Error).then(|| SBR_SNIPPET.to_string()),
    }
}

fn node_source(g: &NodeSource) -> Words {
    let subnet = g.subnet.map(|s| s.to_string()).unwrap_or_default();
    let (t0, d0) = &g.targets[0];
    let more = if g.targets.len() > 1 {
        format!(" (and {} more routes)", g.targets.len() - 1)
    } else {
        String::new()
    };
    let order: Vec<String> = g
        .order
        .iter()
        .map(|(dev, a)| {
            if a.is_empty() {
                format!("{dev} (no IPv4)")
            } else {
                let a: Vec<String> = a.iter().map(ToString::to_string).collect();
                format!("{dev} {}", a.join(","))
            }
        })
        .collect();
    let mut detail = format!(
        "{devs} {have} no IPv4 address, so for routes through {them} the kernel takes the first global \
address in device order: {src} on {sd}. Device order: {order}. The node therefore asks \
`who-has {t} tell {src}` on {d0}, and sends its own traffic to those destinations from {src}{rd}. \
A pod that also has an interface in {subnet} without source-based routing (sbr) routes its ARP \
reply and its replies to {src} through that interface instead of back through {d0}: with strict \
rp_filter it does not answer at all, with loose rp_filter the replies leave the wrong way.",
        devs = g.devs.join(", "),
        have = if g.devs.len() > 1 { "have" } else { "has" },
        them = if g.devs.len() > 1 { "them" } else { "it" },
        src = g.src,
        sd = g.src_dev,
        order = order.join("; "),
        t = if t0.is_host() { t0.addr.to_string() } else { t0.to_string() },
        rd = if g.rdma { " (an RDMA netdev)" } else { "" },
    );
    if let Some(m) = g.main_src {
        detail.push_str(&format!(
            " The node's main address (the default route's source) is {m}{}.",
            g.main_dev
                .as_deref()
                .map(|d| format!(" on {d}"))
                .unwrap_or_default()
        ));
    }
    let mut fix = Vec::new();
    if let Some(m) = g.main_src {
        fix.push(format!(
            "Calico: set FelixConfiguration deviceRouteSourceAddress: {m} (FELIX_DEVICEROUTESOURCEADDRESS) so routes to pods carry `src {m}`"
        ));
        for (p, d) in g.targets.iter().take(3) {
            fix.push(format!("ip route replace {p} dev {d} scope link src {m}"));
        }
    }
    fix.push(format!(
        "and/or add the sbr plugin to every pod network in {subnet} (see the pod-side check)"
    ));
    Words::new(
        format!(
            "Traffic to {t0}{more} through {d0} is sourced from {src} ({sd}{rd}), not the node's main address: ARP asks `tell {src}`",
            src = g.src,
            sd = g.src_dev,
            rd = if g.rdma { ", RDMA" } else { "" },
        ),
        detail,
        g.lookups.clone(),
        fix,
    )
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

/// Each interface's sysctls with one sentence per sysctl on what it does there.
pub fn interfaces(s: &[Sysctls]) -> Vec<IfaceSysctl> {
    s.iter()
        .map(|s| {
            let mut effect = Vec::new();
            if let Some(v) = s.rp_filter {
                effect.push(rp_effect(v).to_string());
            }
            if let Some(v) = s.arp_ignore {
                effect.push(arp_ignore_effect(v).to_string());
            }
            if let Some(v) = s.arp_announce {
                effect.push(arp_announce_effect(v).to_string());
            }
            if s.arp_filter == Some(1) {
                effect.push("arp_filter 1: answers ARP only when the reply would be routed out of this interface".into());
            }
            IfaceSysctl {
                dev: s.dev.clone(),
                rp_filter: s.rp_filter,
                arp_ignore: s.arp_ignore,
                arp_announce: s.arp_announce,
                arp_filter: s.arp_filter,
                effect,
            }
        })
        .collect()
}
