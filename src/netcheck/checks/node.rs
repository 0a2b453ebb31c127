//! The node-side check: routes through a device with no IPv4 address of its own take
//! their source from another device, and ARP then asks `tell <that address>`.

use super::{show, Evidence, Routing};
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

/// Routes through address-less devices whose source the kernel borrows from one other
/// device's address (not the node's main address), with what proves it.
#[derive(Clone, Debug)]
pub struct NodeSource {
    /// The borrowed source address.
    pub src: IpAddr,
    /// Its device.
    pub src_dev: String,
    /// Its subnet, when the address is found.
    pub subnet: Option<Prefix>,
    /// `src_dev` is an RDMA netdev.
    pub rdma: bool,
    /// The address-less devices the routes go through.
    pub devs: Vec<String>,
    /// (destination, device) of each route.
    pub targets: Vec<(Prefix, String)>,
    /// The first few lookups.
    pub lookups: Vec<Evidence>,
    /// The node's main source (the default route's), when known.
    pub main_src: Option<IpAddr>,
    /// Its device.
    pub main_dev: Option<String>,
    /// Every device in order with its IPv4 addresses: the order the kernel picks a source in.
    pub order: Vec<(String, Vec<IpAddr>)>,
}

/// Node side: routes through a device that has no IPv4 address of its own (Calico's
/// `cali*`) take their source from the first device, in device order, that has a global
/// address. When that is not the node's main address (e.g. the RDMA NIC), the node asks
/// `who-has <pod> tell <that address>` and every pod without sbr for that subnet drops or
/// misroutes the answer.
pub fn node_source(st: &NetState, rdma_netdevs: &[String], out: &mut Vec<Routing>) {
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
        let subnet = st
            .addrs
            .iter()
            .find(|a| a.addr == g.src)
            .map(Address::subnet);
        out.push(Routing::NodeSource(Box::new(NodeSource {
            src: g.src,
            src_dev: g.src_dev,
            subnet,
            rdma,
            devs: g.devs,
            targets: g.targets,
            lookups: g.ev,
            main_src,
            main_dev: main_dev.clone(),
            order: order.clone(),
        })));
    }
    if skipped > 0 {
        out.push(Routing::NodeSourceTruncated {
            max: crate::config::limits::NODE_SOURCE_LOOKUPS,
            skipped,
        });
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
fn device_order(st: &NetState) -> Vec<(String, Vec<IpAddr>)> {
    let mut v4: HashMap<&str, Vec<IpAddr>> = HashMap::new();
    for a in st.addrs.iter().filter(|a| a.addr.is_ipv4()) {
        v4.entry(a.dev.as_str()).or_default().push(a.addr);
    }
    st.links
        .iter()
        .map(|l| {
            (
                l.name.clone(),
                v4.remove(l.name.as_str()).unwrap_or_default(),
            )
        })
        .collect()
}
