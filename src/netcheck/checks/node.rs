//! The node-side check: routes through a device with no IPv4 address of its own take
//! their source from another device, and ARP then asks `tell <that address>`.

use super::{show, Evidence, Finding, Severity};
use crate::netcheck::lookup::{lookup, Query};
use crate::netcheck::model::*;
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
    let order = device_order(st);
    for g in borrowed_sources(st, main_src) {
        let rdma = rdma_netdevs.contains(&g.src_dev);
        out.push(finding(st, g, rdma, main_src, main_dev.as_deref(), &order));
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
/// another device's address (not `lo`, not the main source), grouped by that source.
fn borrowed_sources(st: &NetState, main_src: Option<IpAddr>) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for r in &st.routes {
        if r.kind != RouteType::Unicast || !r.dst.addr.is_ipv4() || r.prefsrc.is_some() {
            continue;
        }
        let [nh] = r.nexthops.as_slice() else {
            continue;
        };
        let Some(dev) = &nh.dev else { continue };
        if dev == "lo" || st.addrs_of(dev).any(|a| a.addr.is_ipv4()) {
            continue;
        }
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
        let Some(src_dev) = st
            .addrs
            .iter()
            .find(|x| x.addr == src)
            .map(|x| x.dev.clone())
        else {
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
    groups
}

/// Devices in order with their IPv4 addresses: the order the kernel picks a source in.
fn device_order(st: &NetState) -> Vec<String> {
    st.links
        .iter()
        .map(|l| {
            let a: Vec<String> = st
                .addrs_of(&l.name)
                .filter(|a| a.addr.is_ipv4())
                .map(|a| a.addr.to_string())
                .collect();
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
