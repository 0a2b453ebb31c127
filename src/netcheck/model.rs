//! The routing state of one network namespace, as the kernel holds it: links in device
//! order, addresses in per-device order, routes of every table, policy rules, and the
//! IPv4 `conf` sysctls. Both loaders (live netlink, offline `ip -j` JSON) fill exactly this,
//! and `lookup` reads nothing else.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

pub const RT_TABLE_DEFAULT: u32 = 253;
pub const RT_TABLE_MAIN: u32 = 254;
pub const RT_TABLE_LOCAL: u32 = 255;

/// Route scopes (`rtm_scope`); smaller is wider.
pub mod scope {
    pub const UNIVERSE: u8 = 0;
    pub const SITE: u8 = 200;
    pub const LINK: u8 = 253;
    pub const HOST: u8 = 254;
    pub const NOWHERE: u8 = 255;

    pub fn name(s: u8) -> String {
        match s {
            UNIVERSE => "global".into(),
            SITE => "site".into(),
            LINK => "link".into(),
            HOST => "host".into(),
            NOWHERE => "nowhere".into(),
            n => n.to_string(),
        }
    }

    pub fn parse(s: &str) -> Option<u8> {
        Some(match s {
            "global" | "universe" => UNIVERSE,
            "site" => SITE,
            "link" => LINK,
            "host" => HOST,
            "nowhere" => NOWHERE,
            n => n.parse().ok()?,
        })
    }
}

pub fn table_name(t: u32) -> String {
    match t {
        RT_TABLE_LOCAL => "local".into(),
        RT_TABLE_MAIN => "main".into(),
        RT_TABLE_DEFAULT => "default".into(),
        n => n.to_string(),
    }
}

pub fn parse_table(s: &str) -> Option<u32> {
    Some(match s {
        "local" => RT_TABLE_LOCAL,
        "main" => RT_TABLE_MAIN,
        "default" => RT_TABLE_DEFAULT,
        "unspec" => 0,
        n => n.parse().ok()?,
    })
}

/// An address with a prefix length: a subnet, a host route, or `default` (length 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Prefix {
    pub addr: IpAddr,
    pub len: u8,
}

impl Prefix {
    pub fn new(addr: IpAddr, len: u8) -> Self {
        Prefix { addr, len }
    }
    pub fn host(addr: IpAddr) -> Self {
        Prefix {
            addr,
            len: if addr.is_ipv4() { 32 } else { 128 },
        }
    }
    pub fn any(v4: bool) -> Self {
        if v4 {
            Prefix::new(IpAddr::from([0u8; 4]), 0)
        } else {
            Prefix::new(IpAddr::from([0u16; 8]), 0)
        }
    }
    pub fn is_host(&self) -> bool {
        self.len == if self.addr.is_ipv4() { 32 } else { 128 }
    }
    pub fn contains(&self, a: IpAddr) -> bool {
        match (self.addr, a) {
            (IpAddr::V4(p), IpAddr::V4(x)) => {
                let m = mask32(self.len);
                u32::from(p) & m == u32::from(x) & m
            }
            (IpAddr::V6(p), IpAddr::V6(x)) => {
                let m = mask128(self.len);
                u128::from(p) & m == u128::from(x) & m
            }
            _ => false,
        }
    }
    /// The network address (host bits cleared).
    pub fn network(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(p) => IpAddr::V4((u32::from(p) & mask32(self.len)).into()),
            IpAddr::V6(p) => IpAddr::V6((u128::from(p) & mask128(self.len)).into()),
        }
    }
    /// The `n`th address of the subnet (0 = network address), wrapping inside it.
    pub fn nth(&self, n: u128) -> IpAddr {
        match self.addr {
            IpAddr::V4(p) => {
                let m = mask32(self.len);
                let host = (n as u32) & !m;
                IpAddr::V4(((u32::from(p) & m) | host).into())
            }
            IpAddr::V6(p) => {
                let m = mask128(self.len);
                IpAddr::V6(((u128::from(p) & m) | (n & !m)).into())
            }
        }
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len == 0 {
            f.write_str("default")
        } else if self.is_host() {
            write!(f, "{}", self.addr)
        } else {
            write!(f, "{}/{}", self.network(), self.len)
        }
    }
}

pub fn mask32(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

pub fn mask128(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Link {
    pub index: u32,
    pub name: String,
    pub up: bool,
    pub mtu: Option<u32>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Address {
    pub dev: String,
    pub addr: IpAddr,
    pub prefix_len: u8,
    pub scope: u8,
    pub secondary: bool,
}

impl Address {
    pub fn subnet(&self) -> Prefix {
        Prefix::new(self.addr, self.prefix_len)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RouteType {
    Unicast,
    Local,
    Broadcast,
    Anycast,
    Multicast,
    Blackhole,
    Unreachable,
    Prohibit,
    Throw,
    Nat,
    Other,
}

impl RouteType {
    pub fn parse(s: &str) -> RouteType {
        match s {
            "unicast" => RouteType::Unicast,
            "local" => RouteType::Local,
            "broadcast" => RouteType::Broadcast,
            "anycast" => RouteType::Anycast,
            "multicast" => RouteType::Multicast,
            "blackhole" => RouteType::Blackhole,
            "unreachable" => RouteType::Unreachable,
            "prohibit" => RouteType::Prohibit,
            "throw" => RouteType::Throw,
            "nat" => RouteType::Nat,
            _ => RouteType::Other,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            RouteType::Unicast => "unicast",
            RouteType::Local => "local",
            RouteType::Broadcast => "broadcast",
            RouteType::Anycast => "anycast",
            RouteType::Multicast => "multicast",
            RouteType::Blackhole => "blackhole",
            RouteType::Unreachable => "unreachable",
            RouteType::Prohibit => "prohibit",
            RouteType::Throw => "throw",
            RouteType::Nat => "nat",
            RouteType::Other => "other",
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct NextHop {
    pub dev: Option<String>,
    pub gateway: Option<IpAddr>,
    pub weight: u32,
    /// `dead` (device down) next hops are skipped by lookups.
    pub dead: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Route {
    pub table: u32,
    pub kind: RouteType,
    pub dst: Prefix,
    pub tos: u8,
    pub metric: u32,
    pub scope: u8,
    pub protocol: String,
    pub prefsrc: Option<IpAddr>,
    pub nexthops: Vec<NextHop>,
}

impl Route {
    /// `ip route` syntax, enough to recreate the route.
    pub fn spec(&self) -> String {
        let mut s = String::new();
        if self.kind != RouteType::Unicast {
            s.push_str(self.kind.name());
            s.push(' ');
        }
        s.push_str(&self.dst.to_string());
        if self.nexthops.len() == 1 {
            let nh = &self.nexthops[0];
            if let Some(g) = nh.gateway {
                s.push_str(&format!(" via {g}"));
            }
            if let Some(d) = &nh.dev {
                s.push_str(&format!(" dev {d}"));
            }
        } else {
            for nh in &self.nexthops {
                s.push_str(" nexthop");
                if let Some(g) = nh.gateway {
                    s.push_str(&format!(" via {g}"));
                }
                if let Some(d) = &nh.dev {
                    s.push_str(&format!(" dev {d}"));
                }
                s.push_str(&format!(" weight {}", nh.weight.max(1)));
            }
        }
        if !self.protocol.is_empty() && self.protocol != "boot" {
            s.push_str(&format!(" proto {}", self.protocol));
        }
        if self.scope != scope::UNIVERSE && self.kind == RouteType::Unicast {
            s.push_str(&format!(" scope {}", scope::name(self.scope)));
        }
        if let Some(p) = self.prefsrc {
            s.push_str(&format!(" src {p}"));
        }
        if self.metric != 0 {
            s.push_str(&format!(" metric {}", self.metric));
        }
        if self.table != RT_TABLE_MAIN {
            s.push_str(&format!(" table {}", table_name(self.table)));
        }
        s
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleAction {
    Table(u32),
    Goto(u32),
    Nop,
    Blackhole,
    Unreachable,
    Prohibit,
}

#[derive(Clone, Debug, Serialize)]
pub struct Rule {
    pub v4: bool,
    pub priority: u32,
    pub invert: bool,
    pub src: Option<Prefix>,
    pub dst: Option<Prefix>,
    pub iif: Option<String>,
    pub oif: Option<String>,
    /// (mark, mask)
    pub fwmark: Option<(u32, u32)>,
    pub tos: u8,
    pub action: RuleAction,
    pub suppress_prefixlen: Option<u32>,
    /// A rule the lookup cannot evaluate (l3mdev, uid range, ports, ip proto, tunnel id):
    /// the lookup reports it instead of guessing.
    pub unsupported: Option<String>,
}

impl Rule {
    pub fn spec(&self) -> String {
        let mut s = format!("{}:", self.priority);
        if self.invert {
            s.push_str(" not");
        }
        match self.src {
            Some(p) => s.push_str(&format!(" from {p}")),
            None => s.push_str(" from all"),
        }
        if let Some(p) = self.dst {
            s.push_str(&format!(" to {p}"));
        }
        if let Some((m, k)) = self.fwmark {
            s.push_str(&format!(" fwmark {m:#x}"));
            if k != u32::MAX {
                s.push_str(&format!("/{k:#x}"));
            }
        }
        if let Some(i) = &self.iif {
            s.push_str(&format!(" iif {i}"));
        }
        if let Some(o) = &self.oif {
            s.push_str(&format!(" oif {o}"));
        }
        match self.action {
            RuleAction::Table(t) => s.push_str(&format!(" lookup {}", table_name(t))),
            RuleAction::Goto(t) => s.push_str(&format!(" goto {t}")),
            RuleAction::Nop => s.push_str(" nop"),
            RuleAction::Blackhole => s.push_str(" blackhole"),
            RuleAction::Unreachable => s.push_str(" unreachable"),
            RuleAction::Prohibit => s.push_str(" prohibit"),
        }
        if let Some(p) = self.suppress_prefixlen {
            s.push_str(&format!(" suppress_prefixlength {p}"));
        }
        s
    }
}

/// The default rules of a fresh namespace.
pub fn default_rules(v4: bool) -> Vec<Rule> {
    let r = |priority, table| Rule {
        v4,
        priority,
        invert: false,
        src: None,
        dst: None,
        iif: None,
        oif: None,
        fwmark: None,
        tos: 0,
        action: RuleAction::Table(table),
        suppress_prefixlen: None,
        unsupported: None,
    };
    if v4 {
        vec![
            r(0, RT_TABLE_LOCAL),
            r(32766, RT_TABLE_MAIN),
            r(32767, RT_TABLE_DEFAULT),
        ]
    } else {
        vec![r(0, RT_TABLE_LOCAL), r(32766, RT_TABLE_MAIN)]
    }
}

/// One namespace's routing state.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NetState {
    /// Where it came from: `netns sbrarp-pod1`, `pid 1234`, a directory.
    pub origin: String,
    /// In device order (the order source-address selection walks).
    pub links: Vec<Link>,
    /// Per device, in the device's own order (primary first).
    pub addrs: Vec<Address>,
    pub routes: Vec<Route>,
    pub rules: Vec<Rule>,
    /// `net.ipv4.conf.<dev>.<key>` and friends, as strings; empty when unknown.
    pub sysctl: BTreeMap<String, String>,
    /// False when the sysctls were not collected (offline dump without sysctl.json).
    pub have_sysctl: bool,
}

impl NetState {
    pub fn link(&self, name: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.name == name)
    }
    pub fn addrs_of<'a>(&'a self, dev: &'a str) -> impl Iterator<Item = &'a Address> + 'a {
        self.addrs.iter().filter(move |a| a.dev == dev)
    }
    pub fn rules_for(&self, v4: bool) -> Vec<Rule> {
        let mut r: Vec<Rule> = self.rules.iter().filter(|r| r.v4 == v4).cloned().collect();
        if r.is_empty() {
            r = default_rules(v4);
        }
        r.sort_by_key(|r| r.priority);
        r
    }
    /// True when rules other than the three defaults exist (the kernel then validates
    /// sources with a full lookup instead of "is it one of my addresses").
    pub fn has_custom_rules(&self, v4: bool) -> bool {
        let d = default_rules(v4);
        let mine: Vec<&Rule> = self.rules.iter().filter(|r| r.v4 == v4).collect();
        mine.len() != d.len()
            || mine
                .iter()
                .zip(d.iter())
                .any(|(a, b)| a.priority != b.priority || a.action != b.action || a.src.is_some())
    }
    /// A conf sysctl value for a device (`all`, `default` or an interface).
    pub fn conf(&self, dev: &str, key: &str) -> Option<i64> {
        self.sysctl
            .get(&format!("net.ipv4.conf.{dev}.{key}"))
            .and_then(|v| v.trim().parse().ok())
    }
    /// The value the kernel acts on: max(all, dev) for rp_filter, arp_ignore,
    /// arp_announce; all || dev for the boolean ones; dev alone for forwarding.
    pub fn effective(&self, dev: &str, key: &str) -> Option<i64> {
        let d = self.conf(dev, key);
        let a = self.conf("all", key);
        match key {
            "rp_filter" | "arp_ignore" | "arp_announce" => match (a, d) {
                (Some(a), Some(d)) => Some(a.max(d)),
                (x, y) => x.or(y),
            },
            "arp_filter" | "accept_local" | "route_localnet" | "src_valid_mark" | "proxy_arp" => {
                match (a, d) {
                    (Some(a), Some(d)) => Some(i64::from(a != 0 || d != 0)),
                    (x, y) => x.or(y),
                }
            }
            _ => d.or(a),
        }
    }
}

impl fmt::Display for RouteType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        let p = Prefix::new("198.19.8.11".parse().unwrap(), 24);
        assert!(p.contains("198.19.8.200".parse().unwrap()));
        assert!(!p.contains("198.19.9.1".parse().unwrap()));
        assert!(!p.contains("::1".parse().unwrap()));
        assert_eq!(p.to_string(), "198.19.8.0/24");
        assert_eq!(p.nth(1).to_string(), "198.19.8.1");
        assert_eq!(p.nth(255).to_string(), "198.19.8.255");
        assert_eq!(Prefix::any(true).to_string(), "default");
        assert!(Prefix::any(true).contains("8.8.8.8".parse().unwrap()));
        let p6 = Prefix::new("fd00:10::1".parse().unwrap(), 64);
        assert!(p6.contains("fd00:10::ffff".parse().unwrap()));
        assert_eq!(p6.to_string(), "fd00:10::/64");
        assert_eq!(
            Prefix::host("10.0.0.1".parse().unwrap()).to_string(),
            "10.0.0.1"
        );
    }

    #[test]
    fn effective_sysctls() {
        let mut st = NetState::default();
        for (k, v) in [
            ("net.ipv4.conf.all.rp_filter", "1"),
            ("net.ipv4.conf.eth0.rp_filter", "2"),
            ("net.ipv4.conf.net1.rp_filter", "0"),
            ("net.ipv4.conf.all.arp_filter", "0"),
            ("net.ipv4.conf.net1.arp_filter", "1"),
        ] {
            st.sysctl.insert(k.into(), v.into());
        }
        // max(all, dev) for rp_filter; all || dev for arp_filter
        assert_eq!(st.effective("eth0", "rp_filter"), Some(2));
        assert_eq!(st.effective("net1", "rp_filter"), Some(1));
        assert_eq!(st.effective("net1", "arp_filter"), Some(1));
    }
}
