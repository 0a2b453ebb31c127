//! Live state over rtnetlink, without the `ip` binary: links, addresses, routes of every
//! table and the policy rules of both families, plus `/proc/sys/net/ipv4` — read from a
//! thread that first joins the target network namespace (`/run/netns/NAME` or
//! `/proc/PID/ns/net`), so the rest of the process never changes namespace.

use super::model::*;
use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage,
};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteNextHopFlags, RouteProtocol,
    RouteType as NlRouteType,
};
use netlink_packet_route::rule::{
    RuleAction as NlRuleAction, RuleAttribute, RuleFlags, RuleMessage,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::PathBuf;

/// Which namespace to read.
#[derive(Clone, Debug)]
pub enum Target {
    /// The namespace this process is in.
    Current,
    /// A named namespace, `/run/netns/NAME` (as `ip netns add` creates it).
    Netns(String),
    /// The namespace of process `PID`, `/proc/PID/ns/net`.
    Pid(u32),
}

impl Target {
    /// The target in words for reports: `current network namespace`, `netns NAME`, `pid PID`.
    pub fn describe(&self) -> String {
        match self {
            Target::Current => "current network namespace".into(),
            Target::Netns(n) => format!("netns {n}"),
            Target::Pid(p) => format!("pid {p}"),
        }
    }
    fn path(&self) -> Option<PathBuf> {
        match self {
            Target::Current => None,
            Target::Netns(n) => Some(PathBuf::from("/run/netns").join(n)),
            Target::Pid(p) => Some(PathBuf::from(format!("/proc/{p}/ns/net"))),
        }
    }
}

/// A failure with the step that failed and a hint.
#[derive(Debug)]
pub struct LiveError {
    /// The step that failed, e.g. opening the namespace file or a netlink dump.
    pub what: String,
    /// What to try, e.g. a missing privilege or namespace name; `None` when there is nothing to
    /// add.
    pub hint: Option<String>,
}

/// Reads the namespace's state in a helper thread that joins it first.
pub fn load(target: &Target) -> Result<NetState, LiveError> {
    if let Target::Netns(n) = target {
        if n.is_empty() || n.contains('/') || n == "." || n == ".." {
            return Err(LiveError {
                what: format!("netns {n:?}: not a namespace name"),
                hint: Some("give a name from `ip netns list`".into()),
            });
        }
    }
    let t = target.clone();
    std::thread::spawn(move || load_in_thread(&t))
        .join()
        .unwrap_or_else(|_| {
            Err(LiveError {
                what: "netlink reader thread panicked".into(),
                hint: None,
            })
        })
}

fn load_in_thread(target: &Target) -> Result<NetState, LiveError> {
    if let Some(p) = target.path() {
        enter(target, &p)?;
    }
    let nl = |what: &str, e: std::io::Error| LiveError {
        what: format!("netlink {what} in {}: {e}", target.describe()),
        hint: None,
    };
    let mut sock = Socket::new(NETLINK_ROUTE).map_err(|e| nl("socket", e))?;
    sock.bind_auto().map_err(|e| nl("bind", e))?;
    sock.connect(&SocketAddr::new(0, 0))
        .map_err(|e| nl("connect", e))?;
    let mut st = NetState {
        origin: target.describe(),
        ..Default::default()
    };
    let links = dump(
        &sock,
        1,
        RouteNetlinkMessage::GetLink(LinkMessage::default()),
    )
    .map_err(|e| nl("link dump", e))?;
    let (mut links, names) = convert_links(links);
    links.sort_by_key(|l| l.index);
    st.links = links;
    let dev = |i: u32| names.get(&i).cloned().unwrap_or_else(|| format!("if{i}"));

    let addrs = dump(
        &sock,
        2,
        RouteNetlinkMessage::GetAddress(AddressMessage::default()),
    )
    .map_err(|e| nl("address dump", e))?;
    st.addrs = convert_addrs(addrs, &dev);

    let routes = dump(
        &sock,
        3,
        RouteNetlinkMessage::GetRoute(RouteMessage::default()),
    )
    .map_err(|e| nl("route dump", e))?;
    for m in routes {
        if let RouteNetlinkMessage::NewRoute(r) = m {
            if let Some(route) = convert_route(&r, &dev) {
                st.routes.push(route);
            }
        }
    }

    for (seq, fam) in [(4, AddressFamily::Inet), (5, AddressFamily::Inet6)] {
        let mut q = RuleMessage::default();
        q.header.family = fam;
        let rules =
            dump(&sock, seq, RouteNetlinkMessage::GetRule(q)).map_err(|e| nl("rule dump", e))?;
        for m in rules {
            if let RouteNetlinkMessage::NewRule(r) = m {
                st.rules.push(convert_rule(&r));
            }
        }
    }
    st.sysctl = read_sysctls();
    st.have_sysctl = !st.sysctl.is_empty();
    Ok(st)
}

/// Moves this thread into the target's network namespace.
fn enter(target: &Target, p: &std::path::Path) -> Result<(), LiveError> {
    let f = std::fs::File::open(p).map_err(|e| LiveError {
        what: format!("opening {} ({}): {e}", p.display(), target.describe()),
        hint: Some(match target {
            Target::Netns(_) => "list namespaces with `ip netns list`, or use --pid PID".into(),
            _ => "is the process running? /proc/PID/ns/net must be readable (root)".into(),
        }),
    })?;
    rustix::thread::move_into_link_name_space(
        std::os::fd::AsFd::as_fd(&f),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .map_err(|e| LiveError {
        what: format!("entering {}: {e}", target.describe()),
        hint: Some("joining another network namespace needs CAP_SYS_ADMIN (run as root)".into()),
    })?;
    Ok(())
}

/// The links of a link dump, and their names by index.
fn convert_links(msgs: Vec<RouteNetlinkMessage>) -> (Vec<Link>, HashMap<u32, String>) {
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
fn convert_addrs(msgs: Vec<RouteNetlinkMessage>, dev: &dyn Fn(u32) -> String) -> Vec<Address> {
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

fn convert_route(r: &RouteMessage, dev: &dyn Fn(u32) -> String) -> Option<Route> {
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

fn convert_rule(r: &RuleMessage) -> Rule {
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

/// Sends one dump request and collects the answers.
fn dump(
    sock: &Socket,
    seq: u32,
    msg: RouteNetlinkMessage,
) -> std::io::Result<Vec<RouteNetlinkMessage>> {
    let mut hdr = NetlinkHeader::default();
    hdr.flags = NLM_F_REQUEST | NLM_F_DUMP;
    hdr.sequence_number = seq;
    let mut packet = NetlinkMessage::new(hdr, NetlinkPayload::from(msg));
    packet.finalize();
    let mut buf = vec![0u8; packet.buffer_len()];
    packet.serialize(&mut buf);
    sock.send(&buf, 0)?;
    let mut out = Vec::new();
    loop {
        let (data, _) = sock.recv_from_full()?;
        if data.is_empty() {
            return Ok(out);
        }
        let mut off = 0;
        while off < data.len() {
            let m = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&data[off..])
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
            let len = m.header.length as usize;
            match m.payload {
                NetlinkPayload::Done(_) => return Ok(out),
                NetlinkPayload::Error(e) if e.code.is_some() => return Err(e.to_io()),
                NetlinkPayload::InnerMessage(x) => out.push(x),
                _ => {}
            }
            if len == 0 {
                break;
            }
            off += (len + 3) & !3;
        }
    }
}

/// `/proc/sys/net/ipv4/{ip_forward,conf/*/...}` as seen by this thread's namespace.
fn read_sysctls() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let base = PathBuf::from("/proc/sys/net/ipv4");
    // bounded reads of regular files only (`sysfile`): procfs holds one short value each
    let value = |p: &std::path::Path| crate::sysfile::value(p).ok().flatten();
    if let Some(v) = value(&base.join("ip_forward")) {
        m.insert("net.ipv4.ip_forward".into(), v);
    }
    let Ok(rd) = std::fs::read_dir(base.join("conf")) else {
        return m;
    };
    for e in rd.flatten() {
        let dev = e.file_name().to_string_lossy().to_string();
        for k in [
            "rp_filter",
            "proxy_arp",
            "forwarding",
            "arp_ignore",
            "arp_announce",
            "arp_filter",
            "accept_local",
            "route_localnet",
            "send_redirects",
            "src_valid_mark",
        ] {
            if let Some(v) = value(&e.path().join(k)) {
                m.insert(format!("net.ipv4.conf.{dev}.{k}"), v);
            }
        }
    }
    m
}
