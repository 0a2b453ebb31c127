//! The routing state of one network namespace, as the kernel holds it: links in device
//! order, addresses in per-device order, routes of every table, policy rules, and the
//! IPv4 `conf` sysctls. Both loaders (live netlink, offline `ip -j` JSON) fill exactly this,
//! and `lookup` reads nothing else.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

mod route;
pub use route::*;

/// Routing table 253, `default`: consulted last by the IPv4 default rule 32767.
pub const RT_TABLE_DEFAULT: u32 = 253;
/// Routing table 254, `main`: where `ip route` adds routes unless told otherwise.
pub const RT_TABLE_MAIN: u32 = 254;
/// Routing table 255, `local`: the kernel's routes to the namespace's own and broadcast addresses.
pub const RT_TABLE_LOCAL: u32 = 255;

/// Route scopes (`rtm_scope`); smaller is wider.
pub mod scope {
    /// Scope 0, `global`: the route or address is valid anywhere.
    pub const UNIVERSE: u8 = 0;
    /// Scope 200, `site`: valid within the site (IPv6 only in practice).
    pub const SITE: u8 = 200;
    /// Scope 253, `link`: valid on the attached link only, e.g. a connected subnet's route.
    pub const LINK: u8 = 253;
    /// Scope 254, `host`: valid on this host only, e.g. `127.0.0.1` or the local table's routes.
    pub const HOST: u8 = 254;
    /// Scope 255, `nowhere`: the destination does not exist.
    pub const NOWHERE: u8 = 255;

    /// The name `ip` prints for scope `s` (`global`, `link`, ...), or the number when it has none.
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

    /// Parses a scope as `ip` writes it (a name, `universe` too, or a number); `None` for anything
    /// else.
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

/// The name `ip` gives table `t` (`local`, `main`, `default`), else the number as text.
pub fn table_name(t: u32) -> String {
    match t {
        RT_TABLE_LOCAL => "local".into(),
        RT_TABLE_MAIN => "main".into(),
        RT_TABLE_DEFAULT => "default".into(),
        n => n.to_string(),
    }
}

/// Parses a table as `ip` writes it: `local`, `main`, `default`, `unspec` (0) or a number; `None`
/// otherwise.
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
    /// The address; for a subnet it may still carry host bits (`10.0.0.5/24`), see
    /// [`Prefix::network`].
    pub addr: IpAddr,
    /// The prefix length in bits: 0 (`default`) to 32 for IPv4, to 128 for IPv6.
    pub len: u8,
}

impl Prefix {
    /// A prefix of `addr` with `len` bits, taken as given (host bits are not cleared).
    pub fn new(addr: IpAddr, len: u8) -> Self {
        Prefix { addr, len }
    }
    /// The host prefix of `addr`: /32 for IPv4, /128 for IPv6.
    pub fn host(addr: IpAddr) -> Self {
        Prefix {
            addr,
            len: if addr.is_ipv4() { 32 } else { 128 },
        }
    }
    /// The `default` prefix (length 0) of the family: `0.0.0.0/0` when `v4`, else `::/0`.
    pub fn any(v4: bool) -> Self {
        if v4 {
            Prefix::new(IpAddr::from([0u8; 4]), 0)
        } else {
            Prefix::new(IpAddr::from([0u16; 8]), 0)
        }
    }
    /// True when the prefix names a single address (/32 or /128).
    pub fn is_host(&self) -> bool {
        self.len == if self.addr.is_ipv4() { 32 } else { 128 }
    }
    /// True when `a` lies inside the prefix; an address of the other family never does.
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

/// The IPv4 netmask of `len` bits as a number (`24` → `0xffffff00`); lengths above 32 count as 32.
pub fn mask32(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

/// The IPv6 netmask of `len` bits as a number; lengths above 128 count as 128.
pub fn mask128(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    }
}

/// A network device (`ip link`), as far as routing needs it.
#[derive(Clone, Debug, Serialize)]
pub struct Link {
    /// The interface index (`ifindex`), unique within the namespace.
    pub index: u32,
    /// The device name, e.g. `eth0` or `net1`.
    pub name: String,
    /// Administratively up (`IFF_UP`); routes through a down device are not used.
    pub up: bool,
    /// The MTU in bytes; `None` when the source did not report it.
    pub mtu: Option<u32>,
}

/// An interface address (`ip addr`): one line of the device's address list.
#[derive(Clone, Debug, Serialize)]
pub struct Address {
    /// The name of the device that holds the address.
    pub dev: String,
    /// The address itself (IPv4 or IPv6).
    pub addr: IpAddr,
    /// The prefix length of the address's subnet in bits (`/24` → 24).
    pub prefix_len: u8,
    /// The address scope (`rtm_scope`, see [`scope`]): 0 global, 253 link, 254 host.
    pub scope: u8,
    /// A secondary address: another address in a subnet the device already has a primary for; never
    /// picked as a source before the primary.
    pub secondary: bool,
}

impl Address {
    /// The subnet the address lives in (address and prefix length, host bits kept).
    pub fn subnet(&self) -> Prefix {
        Prefix::new(self.addr, self.prefix_len)
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
    /// Every route of every table, in the order the source listed them.
    pub routes: Vec<Route>,
    /// The policy rules of both families as given; see [`NetState::rules_for`] for the effective
    /// list.
    pub rules: Vec<Rule>,
    /// `net.ipv4.conf.<dev>.<key>` and friends, as strings; empty when unknown.
    pub sysctl: BTreeMap<String, String>,
    /// False when the sysctls were not collected (offline dump without sysctl.json).
    pub have_sysctl: bool,
}

impl NetState {
    /// The link named `name`, if the namespace has one.
    pub fn link(&self, name: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.name == name)
    }
    /// The addresses of device `dev`, primary first.
    pub fn addrs_of<'a>(&'a self, dev: &'a str) -> impl Iterator<Item = &'a Address> + 'a {
        self.addrs.iter().filter(move |a| a.dev == dev)
    }
    /// The rules of one family sorted by priority; a namespace with no rules listed gets the
    /// defaults (`0 local`, `32766 main`, `32767 default` for IPv4).
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
