//! The node-side check: routes through a device with no IPv4 address of its own take
//! their source from another device, and ARP then asks `tell <that address>`.

use super::{show, Evidence, Finding, Severity};
use crate::netcheck::lookup::{lookup, Query};
use crate::netcheck::model::*;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

/// Routes whose source the kernel borrows from one device, grouped by that source.
struct Group {
    src: IpAddr,
    src_dev: String,
    /// The address-less devices the routes go through.
    devs: Vec<String>,
    /// (destination, device) of each route.
    targets: Vec<(Prefix, String)>,
    ev: Vec<Evidence>,
}

/// Node side: routes through a device that has no IPv4 address of its own (Calico's
/// `cali*`) take their source from the first device, in device order, that has a global
/// address. When that is not the node's main address (e.g. the RDMA NIC), the node asks
/// `who-has <pod> tell <that address>` and every pod without sbr for that subnet drops or
/// misroutes the answer.
pub fn node_source(st: &NetState, rdma_netdevs: &[String], out: &mut Vec<Finding>) {
    let main_src = main_source(st);
    let main_dev =
        main_src.and_then(|s| st.addrs.iter().find(|a| a.addr == s).map(|a| a.dev.clone()));
    let (groups, skipped) = borrowed_sources(st, main_src);
    if groups.is_empty() && skipped == 0 {
        return;
    }
    let order = device_order(st);
    for g in groups {
        let rdma = rdma_netdevs.contains(&g.src_dev);
        out.push(finding(st, g, rdma, main_src, main_dev.as_deref(), &order));
    }
    if skipped > 0 {
        out.push(truncated(skipped));
    }
}

/// The check stopped at its limit of lookups: say how many routes it left unchecked.
fn truncated(skipped: usize) -> Finding {
    let max = crate::config::limits::NODE_SOURCE_LOOKUPS;
    Finding {
        id: "node-source-truncated",
        severity: Severity::Warning,
        title: format!(
            "the sources of routes through address-less devices were checked for the first \
             {max} routes only; {skipped} more were not checked"
        ),
        detail: "Each route costs a route lookup; netcheck stops at its limit so that a \
                 namespace with very many such routes is checked in bounded time. Problems \
                 among the routes not checked are not reported."
            .into(),
        evidence: Vec::new(),
        fix: vec!["check the routes that matter with --route-get".into()],
        snippet: None,
    }
}

/// The node's main source: what the default route would use.
fn main_source(st: &NetState) -> Option<IpAddr> {
    st.routes
        .iter()
        .filter(|r| r.dst.len == 0 && r.dst.addr.is_ipv4() && r.kind == RouteType::Unicast)
        .find_map(|r| {
            let gw = r.nexthops.first()?.gateway?;
            lookup(st, &Query::to(gw)).ok()?.prefsrc
        })
}

/// Single-next-hop IPv4 routes through an address-less device whose looked-up source is
/// another device's address (not `lo`, not the main source), grouped by that source; with
/// the number of such routes left unchecked past `config::limits::NODE_SOURCE_LOOKUPS`.
fn borrowed_sources(st: &NetState, main_src: Option<IpAddr>) -> (Vec<Group>, usize) {
    let mut groups: Vec<Group> = Vec::new();
    // per address and device once: a scan of the addresses for each of many routes is
    // quadratic
    let v4_devs: HashSet<&str> = st
        .addrs
        .iter()
        .filter(|a| a.addr.is_ipv4())
        .map(|a| a.dev.as_str())
        .collect();
    let mut dev_of: HashMap<IpAddr, &str> = HashMap::new();
    for a in &st.addrs {
        dev_of.entry(a.addr).or_insert(a.dev.as_str());
    }
    let max = crate::config::limits::NODE_SOURCE_LOOKUPS;
    let (mut looked, mut skipped) = (0usize, 0usize);
    for r in &st.routes {
        if r.kind != RouteType::Unicast || !r.dst.addr.is_ipv4() || r.prefsrc.is_some() {
            continue;
        }
        let [nh] = r.nexthops.as_slice() else {
            continue;
        };
        let Some(dev) = &nh.dev else { continue };
        if dev == "lo" || v4_devs.contains(dev.as_str()) {
            continue;
        }
        if looked == max {
            skipped += 1;
            continue;
        }
        looked += 1;
        let target = if r.dst.is_host() {
            r.dst.addr
        } else {
            r.dst.nth(1)
        };
        let q = Query::to(target);
        let o = lookup(st, &q);
        let Ok(a) = &o else { continue };
        if &a.dev != dev {
            continue;
        }
        let Some(src) = a.prefsrc else { continue };
        let Some(src_dev) = dev_of.get(&src).map(std::string::ToString::to_string) else {
            continue;
        };
        if src_dev == "lo" || Some(src) == main_src {
            continue;
        }
        let ev = Evidence {
            query: q.to_string(),
            answer: show(&o),
        };
        match groups.iter_mut().find(|g| g.src == src) {
            Some(g) => {
                if !g.devs.contains(dev) {
                    g.devs.push(dev.clone());
                }
                g.targets.push((r.dst, dev.clone()));
                if g.ev.len() < 5 {
                    g.ev.push(ev);
                }
            }
            None => groups.push(Group {
                src,
                src_dev,
                devs: vec![dev.clone()],
                targets: vec![(r.dst, dev.clone())],
                ev: vec![ev],
            }),
        }
    }
    (groups, skipped)
}

/// Devices in order with their IPv4 addresses: the order the kernel picks a source in.
fn device_order(st: &NetState) -> Vec<String> {
    let mut v4: HashMap<&str, Vec<String>> = HashMap::new();
    for a in st.addrs.iter().filter(|a| a.addr.is_ipv4()) {
        v4.entry(a.dev.as_str())
            .or_default()
            .push(a.addr.to_string());
    }
    st.links
        .iter()
        .map(|l| {
            let a = v4.remove(l.name.as_str()).unwrap_or_default();
            if a.is_empty() {
                format!("{} (no IPv4)", l.name)
            } else {
                format!("{} {}", l.name, a.join(","))
            }
        })
        .collect()
}

/// The finding for one borrowed source.
fn finding(
    st: &NetState,
    g: Group,
    rdma: bool,
    main_src: Option<IpAddr>,
    main_dev: Option<&str>,
    order: &[String],
) -> Finding {
    let subnet = st
        .addrs
        .iter()
        .find(|a| a.addr == g.src)
        .map(|a| a.subnet().to_string())
        .unwrap_or_default();
    let (t0, d0) = &g.targets[0];
    let more = if g.targets.len() > 1 {
        format!(" (and {} more routes)", g.targets.len() - 1)
    } else {
        String::new()
    };
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
        rd = if rdma { " (an RDMA netdev)" } else { "" },
    );
    if let Some(m) = main_src {
        detail.push_str(&format!(
            " The node's main address (the default route's source) is {m}{}.",
            main_dev.map(|d| format!(" on {d}")).unwrap_or_default()
        ));
    }
    let mut fix = Vec::new();
    if let Some(m) = main_src {
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
    Finding {
        id: "node-source",
        severity: if rdma { Severity::Error } else { Severity::Warning },
        title: format!(
            "Traffic to {t0}{more} through {d0} is sourced from {src} ({sd}{rd}), not the node's main address: ARP asks `tell {src}`",
            src = g.src,
            sd = g.src_dev,
            rd = if rdma { ", RDMA" } else { "" },
        ),
        detail,
        evidence: g.ev,
        fix,
        snippet: None,
    }
}
