//! Live state over rtnetlink, without the `ip` binary: links, addresses, routes of every
//! table and the policy rules of both families, plus `/proc/sys/net/ipv4` — read from a
//! thread that first joins the target network namespace (`/run/netns/NAME` or
//! `/proc/PID/ns/net`), so the rest of the process never changes namespace.

use super::model::*;
use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::address::AddressMessage;
use netlink_packet_route::link::LinkMessage;
use netlink_packet_route::route::RouteMessage;
use netlink_packet_route::rule::RuleMessage;
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::collections::BTreeMap;
use std::path::PathBuf;

mod convert;
use convert::{convert_addrs, convert_links, convert_route, convert_rule};

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
