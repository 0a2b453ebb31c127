//! Routes and policy rules as the kernel holds them: the route type, next hops, a route
//! of any table (`ip route` words via `spec`), a rule and its action, and the kernel's
//! default rules.

use super::*;

/// The route type (`rtm_type`): what the kernel does with a packet that matches the route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RouteType {
    /// Forwarded to a gateway or straight to a neighbour on the link (the ordinary route).
    Unicast,
    /// Delivered to this host (a local address; lives in the `local` table).
    Local,
    /// A broadcast address, delivered locally and sent as link broadcast.
    Broadcast,
    /// An anycast address of this host (IPv6), delivered locally.
    Anycast,
    /// A multicast route.
    Multicast,
    /// Silently dropped.
    Blackhole,
    /// Dropped with `EHOSTUNREACH` (ICMP host unreachable).
    Unreachable,
    /// Dropped with `EACCES` (ICMP administratively prohibited).
    Prohibit,
    /// Lookup of this table stops here and continues with the next rule.
    Throw,
    /// Stateless NAT (obsolete; kept as the kernel reports it).
    Nat,
    /// A type this crate does not know.
    Other,
}

impl RouteType {
    /// Parses a type as `ip` writes it (`unicast`, `local`, `blackhole`, ...); unknown names give
    /// [`RouteType::Other`].
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
    /// The name `ip` uses for the type, the inverse of [`RouteType::parse`].
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

/// One next hop of a route; a multipath route has several.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NextHop {
    /// The outgoing device; `None` for a route that names only a gateway or for routes without one
    /// (blackhole).
    pub dev: Option<String>,
    /// The gateway (`via`); `None` for a directly connected destination.
    pub gateway: Option<IpAddr>,
    /// The ECMP weight (`weight` in `ip route`; 0 when not given, which counts as 1).
    pub weight: u32,
    /// `dead` (device down) next hops are skipped by lookups.
    pub dead: bool,
}

/// A route of any table (`ip route show table all`).
#[derive(Clone, Debug, Serialize)]
pub struct Route {
    /// The table the route is in (254 = main, 255 = local, see [`table_name`]).
    pub table: u32,
    /// What a matching packet gets: forwarded, delivered locally, dropped, ...
    pub kind: RouteType,
    /// The destination prefix; length 0 is `default`.
    pub dst: Prefix,
    /// The TOS the route is restricted to; 0 matches any.
    pub tos: u8,
    /// The route's metric (`priority`); among equal prefixes the lowest wins.
    pub metric: u32,
    /// The route scope (see [`scope`]): `link` for connected subnets, `global` for routes via a
    /// gateway.
    pub scope: u8,
    /// Who installed it (`kernel`, `boot`, `static`, `dhcp`, ... or a number); empty when unknown.
    pub protocol: String,
    /// The preferred source address (`src`) for traffic the route carries; `None` leaves source
    /// selection to the kernel.
    pub prefsrc: Option<IpAddr>,
    /// The next hops: one for an ordinary route, several for multipath, none for blackhole /
    /// unreachable / local routes.
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

/// What a policy rule does when it matches (`ip rule ... ACTION`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleAction {
    /// `lookup TABLE`: look the destination up in that table; no match there continues with the
    /// next rule.
    Table(u32),
    /// `goto PRIORITY`: jump to the first rule at or after that priority.
    Goto(u32),
    /// `nop`: do nothing and go on with the next rule.
    Nop,
    /// `blackhole`: drop the packet silently.
    Blackhole,
    /// `unreachable`: fail with `ENETUNREACH`.
    Unreachable,
    /// `prohibit`: fail with `EACCES`.
    Prohibit,
}

/// A policy routing rule (`ip rule`): which packets it selects and what it does with them. The
/// `sbr` CNI plugin adds one `from <VF address> lookup <table>` rule per pod interface.
#[derive(Clone, Debug, Serialize)]
pub struct Rule {
    /// True for an IPv4 rule, false for IPv6: the families have separate rule lists.
    pub v4: bool,
    /// The rule's priority (`pref`); rules are tried from the lowest up.
    pub priority: u32,
    /// `not`: the rule matches packets its selectors do not match.
    pub invert: bool,
    /// `from PREFIX`: the source prefix the rule selects; `None` is `from all`.
    pub src: Option<Prefix>,
    /// `to PREFIX`: the destination prefix the rule selects; `None` matches any.
    pub dst: Option<Prefix>,
    /// `iif DEV`: only packets arriving on this device (or, for `lo`, sent by this host).
    pub iif: Option<String>,
    /// `oif DEV`: only packets sent from a socket bound to this device.
    pub oif: Option<String>,
    /// (mark, mask)
    pub fwmark: Option<(u32, u32)>,
    /// The TOS the rule selects; 0 matches any.
    pub tos: u8,
    /// What happens when the rule matches.
    pub action: RuleAction,
    /// `suppress_prefixlength N`: ignore a table's answer whose prefix is N bits or shorter (used
    /// to skip a default route); `None` when not set.
    pub suppress_prefixlen: Option<u32>,
    /// A rule the lookup cannot evaluate (l3mdev, uid range, ports, ip proto, tunnel id):
    /// the lookup reports it instead of guessing.
    pub unsupported: Option<String>,
}

impl Rule {
    /// `ip rule` syntax (`32765: from 10.0.0.5 lookup 100`), as `ip rule show` prints it.
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

impl fmt::Display for RouteType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
