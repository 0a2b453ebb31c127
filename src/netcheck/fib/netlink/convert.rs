//! rtnetlink messages into the model: links (device order, names by index), addresses,
//! routes of every table with their next hops, and policy rules, with what the model cannot
//! hold named in `unsupported`.

use super::super::model::*;
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressHeaderFlags};
use netlink_packet_route::link::{LinkAttribute, LinkFlags};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteNextHopFlags, RouteProtocol,
    RouteType as NlRouteType,
};
use netlink_packet_route::rule::{
    RuleAction as NlRuleAction, RuleAttribute, RuleFlags, RuleMessage,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::collections::HashMap;
use std::net::IpAddr;

/// The links of a link dump, and their names by index.
pub(super) fn convert_links(msgs: Vec<RouteNetlinkMessage>) -> (Vec<Link>, HashMap<u32, String>) {
    let mut links = Vec::new();
    let mut names: HashMap<u32, String> = HashMap::new();
    for m in msgs {
        if let RouteNetlinkMessage::NewLink(l) = m {
            let mut name = String::new();
            let mut mtu = None;
            for a in &l.attributes {
                match a {
                    LinkAttribute::IfName(n) => name = n.clone(),
                    LinkAttribute::Mtu(m) => mtu = Some(*m),
                    _ => {}
                }
            }
            names.insert(l.header.index, name.clone());
            links.push(Link {
                index: l.header.index,
                name,
                up: l.header.flags.contains(LinkFlags::Up),
                mtu,
            });
        }
    }
    (links, names)
}

/// The addresses of an address dump (the local address where there is one).
pub(super) fn convert_addrs(
    msgs: Vec<RouteNetlinkMessage>,
    dev: &dyn Fn(u32) -> String,
) -> Vec<Address> {
    let mut addrs = Vec::new();
    for m in msgs {
        if let RouteNetlinkMessage::NewAddress(a) = m {
            let mut local = None;
            let mut address = None;
            let mut secondary = a.header.flags.contains(AddressHeaderFlags::Secondary);
            for at in &a.attributes {
                match at {
                    AddressAttribute::Local(x) => local = Some(*x),
                    AddressAttribute::Address(x) => address = Some(*x),
                    AddressAttribute::Flags(f) => secondary |= f.contains(AddressFlags::Secondary),
                    _ => {}
                }
            }
            let Some(addr) = local.or(address) else {
                continue;
            };
            addrs.push(Address {
                dev: dev(a.header.index),
                addr,
                prefix_len: a.header.prefix_len,
                scope: u8::from(a.header.scope),
                secondary,
            });
        }
    }
    addrs
}

fn route_addr(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v) => Some(IpAddr::V4(*v)),
        RouteAddress::Inet6(v) => Some(IpAddr::V6(*v)),
        _ => None,
    }
}

fn protocol_name(p: RouteProtocol) -> String {
    match p {
        RouteProtocol::Unspec => "unspec".into(),
        RouteProtocol::Kernel => "kernel".into(),
        RouteProtocol::Boot => "boot".into(),
        RouteProtocol::Static => "static".into(),
        RouteProtocol::Ra => "ra".into(),
        RouteProtocol::Zebra => "zebra".into(),
        RouteProtocol::Bird => "bird".into(),
        RouteProtocol::Dhcp => "dhcp".into(),
        RouteProtocol::KeepAlived => "keepalived".into(),
        RouteProtocol::Babel => "babel".into(),
        RouteProtocol::Bgp => "bgp".into(),
        RouteProtocol::Ospf => "ospf".into(),
        other => u8::from(other).to_string(),
    }
}

pub(super) fn convert_route(r: &RouteMessage, dev: &dyn Fn(u32) -> String) -> Option<Route> {
    let v4 = match r.header.address_family {
        AddressFamily::Inet => true,
        AddressFamily::Inet6 => false,
        _ => return None,
    };
    let kind = match r.header.kind {
        NlRouteType::Unicast => RouteType::Unicast,
        NlRouteType::Local => RouteType::Local,
        NlRouteType::Broadcast => RouteType::Broadcast,
        NlRouteType::Anycast => RouteType::Anycast,
        NlRouteType::Multicast => RouteType::Multicast,
        NlRouteType::BlackHole => RouteType::Blackhole,
        NlRouteType::Unreachable => RouteType::Unreachable,
        NlRouteType::Prohibit => RouteType::Prohibit,
        NlRouteType::Throw => RouteType::Throw,
        NlRouteType::Nat => RouteType::Nat,
        _ => RouteType::Other,
    };
    let mut table = u32::from(r.header.table);
    let mut dst = None;
    let mut gateway = None;
    let mut oif = None;
    let mut prefsrc = None;
    let mut metric = 0;
    let mut multipath = Vec::new();
    for a in &r.attributes {
        match a {
            RouteAttribute::Table(t) => table = *t,
            RouteAttribute::Destination(d) => dst = route_addr(d),
            RouteAttribute::Gateway(g) => gateway = route_addr(g),
            RouteAttribute::Oif(i) => oif = Some(*i),
            RouteAttribute::PrefSource(p) => prefsrc = route_addr(p),
            RouteAttribute::Priority(p) => metric = *p,
            RouteAttribute::MultiPath(nhs) => {
                for nh in nhs {
                    let gw = nh.attributes.iter().find_map(|x| match x {
                        RouteAttribute::Gateway(g) => route_addr(g),
                        _ => None,
                    });
                    multipath.push(NextHop {
                        dev: Some(dev(nh.interface_index)),
                        gateway: gw,
                        weight: u32::from(nh.hops) + 1,
                        dead: nh.flags.contains(RouteNextHopFlags::Dead),
                    });
                }
            }
            _ => {}
        }
    }
    let dst = Prefix::new(
        dst.unwrap_or(Prefix::any(v4).addr),
        r.header.destination_prefix_length,
    );
    let nexthops = if !multipath.is_empty() {
        multipath
    } else if oif.is_some() || gateway.is_some() {
        vec![NextHop {
            dev: oif.map(dev),
            gateway,
            weight: 1,
            dead: false,
        }]
    } else {
        Vec::new()
    };
    if table == 0 {
        table = u32::from(RouteHeader::RT_TABLE_MAIN);
    }
    Some(Route {
        table,
        kind,
        dst,
        tos: r.header.tos,
        metric,
        scope: u8::from(r.header.scope),
        protocol: protocol_name(r.header.protocol),
        prefsrc,
        nexthops,
    })
}

pub(super) fn convert_rule(r: &RuleMessage) -> Rule {
    let v4 = r.header.family != AddressFamily::Inet6;
    let mut rule = Rule {
        v4,
        priority: 0,
        invert: r.header.flags.contains(RuleFlags::Invert),
        src: None,
        dst: None,
        iif: None,
        oif: None,
        fwmark: None,
        tos: r.header.tos,
        action: RuleAction::Table(u32::from(r.header.table)),
        suppress_prefixlen: None,
        unsupported: None,
    };
    let mut table = u32::from(r.header.table);
    let mut goto = None;
    let mut mark = None;
    let mut mask = u32::MAX;
    let mut unsupported = Vec::new();
    for a in &r.attributes {
        match a {
            RuleAttribute::Priority(p) => rule.priority = *p,
            RuleAttribute::Source(s) => rule.src = Some(Prefix::new(*s, r.header.src_len)),
            RuleAttribute::Destination(d) => rule.dst = Some(Prefix::new(*d, r.header.dst_len)),
            RuleAttribute::Iifname(n) => rule.iif = Some(n.clone()),
            RuleAttribute::Oifname(n) => rule.oif = Some(n.clone()),
            RuleAttribute::FwMark(m) => mark = Some(*m),
            RuleAttribute::FwMask(m) => mask = *m,
            RuleAttribute::Table(t) => table = *t,
            RuleAttribute::Goto(g) => goto = Some(*g),
            RuleAttribute::SuppressPrefixLen(p) if *p != u32::MAX => {
                rule.suppress_prefixlen = Some(*p);
            }
            RuleAttribute::L3MDev(true) => unsupported.push("l3mdev"),
            RuleAttribute::UidRange(_) => unsupported.push("uidrange"),
            RuleAttribute::IpProtocol(_) => unsupported.push("ipproto"),
            RuleAttribute::SourcePortRange(_) => unsupported.push("sport"),
            RuleAttribute::DestinationPortRange(_) => unsupported.push("dport"),
            _ => {}
        }
    }
    rule.fwmark = mark.map(|m| (m, mask));
    rule.action = match r.header.action {
        NlRuleAction::ToTable => RuleAction::Table(table),
        NlRuleAction::Goto => RuleAction::Goto(goto.unwrap_or(0)),
        NlRuleAction::Nop => RuleAction::Nop,
        NlRuleAction::Blackhole => RuleAction::Blackhole,
        NlRuleAction::Unreachable => RuleAction::Unreachable,
        NlRuleAction::Prohibit => RuleAction::Prohibit,
        _ => {
            unsupported.push("an unknown action");
            RuleAction::Nop
        }
    };
    if !unsupported.is_empty() {
        rule.unsupported = Some(unsupported.join(", "));
    }
    rule
}
