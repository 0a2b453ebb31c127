//! The kernel's routing decision, computed from a [`NetState`]: the IPv4 output path
//! (`ip_route_output_key_hash_rcu`: source checks, policy rules, per-table longest-prefix
//! match with next-hop filtering, `fib_select_path` and `inet_select_addr` source selection)
//! and the IPv4 input path (`ip_route_input_slow`: martian checks, local / broadcast /
//! forward, `fib_validate_source` with `rp_filter`, `accept_local`, `forwarding`). The
//! answer carries the rule and table used, the route, output device, gateway and source, or
//! the errno `ip route get` would print. IPv6 output lookups use the same rules and tables
//! with a simplified RFC 6724 source choice (same address, scope, outgoing interface,
//! longest common prefix; no preference/deprecation/labels); IPv6 input lookups, VRF
//! (l3mdev) rules and multicast destinations are reported as not modelled rather than
//! guessed. The `fib_has_custom_rules` flag is inferred from the current rules (the kernel
//! keeps it set after custom rules are deleted). Multipath routes answer with the first
//! live next hop (the kernel hashes the flow).

use super::model::*;
use serde::Serialize;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

/// One question: `ip route get DST [from SRC] [iif DEV] [oif DEV] [mark N]`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Query {
    pub dst: Option<IpAddr>,
    pub src: Option<IpAddr>,
    pub iif: Option<String>,
    pub oif: Option<String>,
    pub mark: u32,
}

impl Query {
    pub fn to(dst: IpAddr) -> Self {
        Query {
            dst: Some(dst),
            ..Default::default()
        }
    }
    pub fn from(mut self, src: IpAddr) -> Self {
        self.src = Some(src);
        self
    }
    pub fn iif(mut self, dev: &str) -> Self {
        self.iif = Some(dev.to_string());
        self
    }
    /// Parses `DST [from SRC] [iif DEV] [oif DEV] [mark N]` (the words of `ip route get`).
    pub fn parse(s: &str) -> Result<Query, String> {
        let w: Vec<&str> = s.split_whitespace().collect();
        let mut q = Query::default();
        let mut i = 0;
        let addr = |x: &str| -> Result<IpAddr, String> {
            x.parse().map_err(|_| format!("{x:?} is not an IP address"))
        };
        while i < w.len() {
            let val = || {
                w.get(i + 1)
                    .copied()
                    .ok_or(format!("{} needs a value", w[i]))
            };
            match w[i] {
                "from" => q.src = Some(addr(val()?)?),
                "iif" => q.iif = Some(val()?.to_string()),
                "oif" | "dev" => q.oif = Some(val()?.to_string()),
                "mark" => {
                    let v = val()?;
                    q.mark = if let Some(h) = v.strip_prefix("0x") {
                        u32::from_str_radix(h, 16)
                    } else {
                        v.parse()
                    }
                    .map_err(|_| format!("bad mark {v:?}"))?;
                }
                "to" => q.dst = Some(addr(val()?)?),
                x if q.dst.is_none() => {
                    q.dst = Some(addr(x)?);
                    i += 1;
                    continue;
                }
                x => return Err(format!("unexpected word {x:?}")),
            }
            i += 2;
        }
        if q.dst.is_none() {
            return Err("no destination".into());
        }
        Ok(q)
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ip route get")?;
        if let Some(d) = self.dst {
            write!(f, " {d}")?;
        }
        if let Some(s) = self.src {
            write!(f, " from {s}")?;
        }
        if let Some(i) = &self.iif {
            write!(f, " iif {i}")?;
        }
        if let Some(o) = &self.oif {
            write!(f, " oif {o}")?;
        }
        if self.mark != 0 {
            write!(f, " mark {:#x}", self.mark)?;
        }
        Ok(())
    }
}

/// The kernel's answer.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Answer {
    #[serde(rename = "type")]
    pub kind: RouteType,
    /// Table that answered; `None` when no table did (`ip` prints `table unspec`).
    pub table: Option<u32>,
    /// Priority of the policy rule that led to the table.
    pub rule: Option<u32>,
    /// The route used, in `ip route` syntax.
    pub route: Option<String>,
    pub dev: String,
    pub gateway: Option<IpAddr>,
    /// The source the kernel picked (what `ip route get` prints as `prefsrc`), when the
    /// query gave none.
    pub prefsrc: Option<IpAddr>,
    pub input: bool,
    /// Notes where the answer rests on a choice the kernel makes per flow (multipath).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind != RouteType::Unicast {
            write!(f, "{} ", self.kind)?;
        }
        if let Some(g) = self.gateway {
            write!(f, "via {g} ")?;
        }
        write!(f, "dev {}", self.dev)?;
        if let Some(s) = self.prefsrc {
            write!(f, " src {s}")?;
        }
        match self.table {
            Some(t) if t != RT_TABLE_MAIN => write!(f, " table {}", table_name(t))?,
            None => f.write_str(" (no table)")?,
            _ => {}
        }
        if let Some(r) = self.rule {
            write!(f, " (rule {r})")?;
        }
        if let Some(n) = &self.note {
            write!(f, " [{n}]")?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Errno {
    #[serde(rename = "ENETUNREACH")]
    NetUnreach,
    #[serde(rename = "EHOSTUNREACH")]
    HostUnreach,
    #[serde(rename = "EINVAL")]
    Inval,
    #[serde(rename = "EACCES")]
    Acces,
    #[serde(rename = "ENODEV")]
    NoDev,
    #[serde(rename = "EXDEV")]
    XDev,
    /// Not an errno: a case this model does not compute.
    #[serde(rename = "unsupported")]
    Unsupported,
}

impl Errno {
    /// The text `ip` prints after `RTNETLINK answers: `.
    pub fn message(self) -> &'static str {
        match self {
            Errno::NetUnreach => "Network is unreachable",
            Errno::HostUnreach => "No route to host",
            Errno::Inval => "Invalid argument",
            Errno::Acces => "Permission denied",
            Errno::NoDev => "No such device",
            Errno::XDev => "Invalid cross-device link",
            Errno::Unsupported => "not modelled",
        }
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LookupError {
    pub errno: Errno,
    /// Why, in the kernel's terms (which check rejected it).
    pub why: String,
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {} ({})", self.errno.message(), self.why)
    }
}

fn err(errno: Errno, why: impl Into<String>) -> LookupError {
    LookupError {
        errno,
        why: why.into(),
    }
}

pub type Outcome = Result<Answer, LookupError>;

/// The flow a FIB lookup sees.
#[derive(Clone, Debug)]
struct Flow<'a> {
    dst: IpAddr,
    src: IpAddr,
    /// Input device name (`lo` for locally generated traffic).
    iif: &'a str,
    oif: Option<&'a str>,
    mark: u32,
}

/// A FIB hit.
#[derive(Clone, Debug)]
struct Hit<'a> {
    route: &'a Route,
    nh: usize,
    /// Table reported back (`main` for local-table hits while the tables are merged).
    table: u32,
    rule: Option<u32>,
}

impl Hit<'_> {
    fn nh(&self) -> &NextHop {
        &self.route.nexthops[self.nh]
    }
    fn dev(&self) -> String {
        self.nh().dev.clone().unwrap_or_default()
    }
}

/// Errno of a route type when the lookup lands on it (`fib_props[].error`).
fn type_error(t: RouteType) -> Option<Errno> {
    match t {
        RouteType::Unicast
        | RouteType::Local
        | RouteType::Broadcast
        | RouteType::Anycast
        | RouteType::Multicast => None,
        RouteType::Blackhole | RouteType::Nat | RouteType::Other => Some(Errno::Inval),
        RouteType::Unreachable => Some(Errno::HostUnreach),
        RouteType::Prohibit => Some(Errno::Acces),
        RouteType::Throw => Some(Errno::XDev), // internal: "try the next rule"
    }
}

fn unspecified(v4: bool) -> IpAddr {
    if v4 {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
    }
}

/// Table lookup (`fib_table_lookup`): Err(XDev) stands for -EAGAIN (no match / throw).
fn table_lookup<'a>(
    st: &'a NetState,
    tables: &[u32],
    report_as: u32,
    fl: &Flow<'_>,
    ignore_linkdown: bool,
) -> Result<Hit<'a>, Errno> {
    let _ = ignore_linkdown;
    let v4 = fl.dst.is_ipv4();
    let mut cands: Vec<(usize, &Route)> = st
        .routes
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            tables.contains(&r.table) && r.dst.addr.is_ipv4() == v4 && r.dst.contains(fl.dst)
        })
        .collect();
    // longest prefix first, then metric, then the kernel's alias order (dump order)
    cands.sort_by(|(ia, a), (ib, b)| {
        b.dst
            .len
            .cmp(&a.dst.len)
            .then(a.metric.cmp(&b.metric))
            .then(ia.cmp(ib))
    });
    for (_, r) in cands {
        if r.tos != 0 {
            continue;
        }
        if let Some(e) = type_error(r.kind) {
            return Err(e);
        }
        if !r.nexthops.is_empty() && r.nexthops.iter().all(|n| n.dead) {
            continue;
        }
        for (i, nh) in r.nexthops.iter().enumerate() {
            if nh.dead {
                continue;
            }
            if let Some(o) = fl.oif {
                if nh.dev.as_deref() != Some(o) {
                    continue;
                }
            }
            let table = if r.table == RT_TABLE_LOCAL && report_as == RT_TABLE_MAIN {
                RT_TABLE_MAIN
            } else {
                r.table
            };
            return Ok(Hit {
                route: r,
                nh: i,
                table,
                rule: None,
            });
        }
    }
    Err(Errno::XDev)
}

fn rule_matches(st: &NetState, r: &Rule, fl: &Flow<'_>) -> bool {
    let m = (|| {
        if let Some(i) = &r.iif {
            if st.link(i).is_none() || i != fl.iif {
                return false;
            }
        }
        if let Some(o) = &r.oif {
            if st.link(o).is_none() || Some(o.as_str()) != fl.oif {
                return false;
            }
        }
        if let Some((mark, mask)) = r.fwmark {
            if (mark ^ fl.mark) & mask != 0 {
                return false;
            }
        }
        if let Some(p) = r.src {
            if !p.contains(fl.src) {
                return false;
            }
        }
        if let Some(p) = r.dst {
            if !p.contains(fl.dst) {
                return false;
            }
        }
        r.tos == 0
    })();
    m != r.invert
}

/// `fib_lookup`: policy rules (or the merged local+main fast path), then tables.
fn fib_lookup<'a>(st: &'a NetState, fl: &Flow<'_>) -> Result<Hit<'a>, LookupError> {
    let v4 = fl.dst.is_ipv4();
    if v4 && !st.has_custom_rules(true) {
        // no custom rules: the kernel looks in main (merged with local), then default
        for (tables, rule) in [
            (&[RT_TABLE_LOCAL, RT_TABLE_MAIN][..], 32766),
            (&[RT_TABLE_DEFAULT][..], 32767),
        ] {
            match table_lookup(st, tables, RT_TABLE_MAIN, fl, false) {
                Ok(mut h) => {
                    h.rule = Some(if h.route.table == RT_TABLE_LOCAL {
                        0
                    } else {
                        rule
                    });
                    return Ok(h);
                }
                Err(Errno::XDev) => continue,
                Err(e) => return Err(err(e, "the matching route is of a rejecting type")),
            }
        }
        return Err(err(Errno::NetUnreach, "no route matches"));
    }
    let rules = st.rules_for(v4);
    let mut i = 0;
    let mut steps = 0;
    while i < rules.len() {
        steps += 1;
        if steps > 10_000 {
            return Err(err(Errno::Unsupported, "rule loop"));
        }
        let r = &rules[i];
        if !rule_matches(st, r, fl) {
            i += 1;
            continue;
        }
        if let Some(u) = &r.unsupported {
            return Err(err(
                Errno::Unsupported,
                format!("rule {} uses {u}, which is not modelled", r.priority),
            ));
        }
        match r.action {
            RuleAction::Goto(t) => match rules.iter().position(|x| x.priority == t) {
                Some(j) if j > i => i = j,
                _ => i += 1,
            },
            RuleAction::Nop => i += 1,
            RuleAction::Unreachable => {
                return Err(err(
                    Errno::NetUnreach,
                    format!("rule {} is unreachable", r.priority),
                ))
            }
            RuleAction::Prohibit => {
                return Err(err(
                    Errno::Acces,
                    format!("rule {} is prohibit", r.priority),
                ))
            }
            RuleAction::Blackhole => {
                return Err(err(
                    Errno::Inval,
                    format!("rule {} is blackhole", r.priority),
                ))
            }
            RuleAction::Table(t) => match table_lookup(st, &[t], t, fl, false) {
                Ok(mut h) => {
                    if let Some(sp) = r.suppress_prefixlen {
                        if u32::from(h.route.dst.len) <= sp {
                            i += 1;
                            continue;
                        }
                    }
                    h.rule = Some(r.priority);
                    return Ok(h);
                }
                Err(Errno::XDev) => i += 1,
                Err(e) => {
                    return Err(err(
                        e,
                        format!(
                            "table {} (rule {}) answers with a rejecting route",
                            table_name(t),
                            r.priority
                        ),
                    ))
                }
            },
        }
    }
    Err(err(Errno::NetUnreach, "no rule leads to a matching route"))
}

/// True when `a` is one of this namespace's addresses, or a local-table `local` route
/// covers it (`__ip_dev_find`).
pub fn is_local(st: &NetState, a: IpAddr) -> bool {
    st.addrs.iter().any(|x| x.addr == a)
        || st
            .routes
            .iter()
            .any(|r| r.table == RT_TABLE_LOCAL && r.kind == RouteType::Local && r.dst.contains(a))
}

/// `inet_select_addr(dev, dst, scope)`: the device's first primary address whose scope
/// fits (preferring one in `dst`'s subnet), else the first non-link-scope primary address
/// of any device, in device order. This is where an address-less device (`cali*`) gets a
/// source from whichever device was registered first.
pub fn select_addr(
    st: &NetState,
    dev: &str,
    dst: Option<IpAddr>,
    route_scope: u8,
) -> Option<IpAddr> {
    let localnet_scope = if st.effective(dev, "route_localnet") == Some(1) {
        scope::LINK
    } else {
        scope::HOST
    };
    let mut first = None;
    for a in st.addrs_of(dev).filter(|a| a.addr.is_ipv4()) {
        if a.secondary || a.scope.min(localnet_scope) > route_scope {
            continue;
        }
        match dst {
            Some(d) if a.subnet().contains(d) => return Some(a.addr),
            None => return Some(a.addr),
            _ => {
                if first.is_none() {
                    first = Some(a.addr);
                }
            }
        }
    }
    if first.is_some() {
        return first;
    }
    for l in &st.links {
        for a in st.addrs_of(&l.name).filter(|a| a.addr.is_ipv4()) {
            if !a.secondary && a.scope != scope::LINK && a.scope <= route_scope {
                return Some(a.addr);
            }
        }
    }
    None
}

fn is_lbcast(a: IpAddr) -> bool {
    a == IpAddr::V4(Ipv4Addr::BROADCAST)
}

fn is_zeronet(a: IpAddr) -> bool {
    matches!(a, IpAddr::V4(v) if v.octets()[0] == 0)
}

fn is_loopback(a: IpAddr) -> bool {
    a.is_loopback()
}

/// The kernel's answer to `q` (what `ip route get` prints, or its error).
pub fn lookup(st: &NetState, q: &Query) -> Outcome {
    let Some(dst) = q.dst else {
        return Err(err(Errno::Unsupported, "no destination"));
    };
    if let Some(s) = q.src {
        if s.is_ipv4() != dst.is_ipv4() {
            return Err(err(Errno::Inval, "source and destination families differ"));
        }
    }
    if dst.is_multicast() {
        return Err(err(
            Errno::Unsupported,
            "multicast destinations are not modelled",
        ));
    }
    for d in [&q.iif, &q.oif].into_iter().flatten() {
        if st.link(d).is_none() {
            return Err(err(Errno::NoDev, format!("no device {d}")));
        }
    }
    if dst.is_ipv6() {
        if q.iif.is_some() {
            return Err(err(
                Errno::Unsupported,
                "IPv6 input lookups are not modelled",
            ));
        }
        return output_v6(st, q, dst);
    }
    match &q.iif {
        Some(iif) if iif != "lo" => input_v4(st, q, dst, iif),
        _ => output_v4(st, q, dst),
    }
}

fn answer(kind: RouteType, hit: Option<&Hit<'_>>, dev: String, input: bool) -> Answer {
    Answer {
        kind,
        // no table answered: the kernel reports main
        table: Some(hit.map_or(RT_TABLE_MAIN, |h| h.table)),
        rule: hit.and_then(|h| h.rule),
        route: hit.map(|h| h.route.spec()),
        dev,
        gateway: None,
        prefsrc: None,
        input,
        note: None,
    }
}

fn output_v4(st: &NetState, q: &Query, dst: IpAddr) -> Outcome {
    let mut saddr = q.src;
    if let Some(s) = saddr {
        if s.is_multicast() || is_lbcast(s) || is_zeronet(s) {
            return Err(err(Errno::Inval, format!("{s} cannot be a source address")));
        }
        if q.oif.is_none() && is_lbcast(dst) {
            let Some(a) = st.addrs.iter().find(|a| a.addr == s) else {
                return Err(err(
                    Errno::NetUnreach,
                    format!("{s} is not a local address"),
                ));
            };
            let mut a2 = answer(RouteType::Broadcast, None, a.dev.clone(), false);
            a2.table = Some(RT_TABLE_MAIN);
            return Ok(a2);
        }
        if !is_local(st, s) {
            return Err(err(
                Errno::NetUnreach,
                format!("{s} is not a local address (locally generated traffic must use one)"),
            ));
        }
    }
    if let Some(oif) = &q.oif {
        let l = st.link(oif).expect("checked");
        if !l.up {
            return Err(err(Errno::NetUnreach, format!("{oif} is down")));
        }
        if is_lbcast(dst) {
            if saddr.is_none() {
                saddr = select_addr(st, oif, None, scope::LINK);
            }
            let mut a = answer(RouteType::Broadcast, None, oif.clone(), false);
            a.prefsrc = if q.src.is_none() { saddr } else { None };
            return Ok(a);
        }
    }
    if dst == unspecified(true) {
        if let (None, Some(oif)) = (saddr, &q.oif) {
            saddr = select_addr(st, oif, None, scope::HOST);
        }
        let s = saddr.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let mut a = answer(RouteType::Local, None, "lo".into(), false);
        a.prefsrc = if q.src.is_none() { Some(s) } else { None };
        return Ok(a);
    }
    let fl = Flow {
        dst,
        src: saddr.unwrap_or(unspecified(true)),
        iif: "lo",
        oif: q.oif.as_deref(),
        mark: q.mark,
    };
    let hit = match fib_lookup(st, &fl) {
        Ok(h) => h,
        Err(e) if e.errno == Errno::Unsupported => return Err(e),
        Err(e) => {
            if let Some(oif) = &q.oif {
                // "routing tables are wrong, assume the destination is on link"
                if saddr.is_none() {
                    saddr = select_addr(st, oif, None, scope::LINK);
                }
                let mut a = answer(RouteType::Unicast, None, oif.clone(), false);
                a.table = Some(RT_TABLE_MAIN);
                a.prefsrc = if q.src.is_none() { saddr } else { None };
                a.note = Some(format!("no route ({}); sent on-link via oif", e.why));
                return finish_output(a, saddr, dst);
            }
            return Err(e);
        }
    };
    if hit.route.kind == RouteType::Local {
        let s = saddr.or(hit.route.prefsrc).unwrap_or(dst);
        let mut a = answer(RouteType::Local, Some(&hit), "lo".into(), false);
        a.prefsrc = if q.src.is_none() { Some(s) } else { None };
        return Ok(a);
    }
    // fib_select_path
    let mut note = None;
    if q.oif.is_none() && hit.route.nexthops.iter().filter(|n| !n.dead).count() > 1 {
        note = Some(
            "multipath route: the kernel hashes each flow to one next hop; shown: the first".into(),
        );
    }
    let nh = hit.nh().clone();
    let dev = hit.dev();
    if saddr.is_none() {
        saddr = hit
            .route
            .prefsrc
            .or_else(|| select_addr(st, &dev, nh.gateway, hit.route.scope));
    }
    let kind = if is_lbcast(dst) {
        RouteType::Broadcast
    } else {
        hit.route.kind
    };
    let mut a = answer(kind, Some(&hit), dev, false);
    if kind != RouteType::Broadcast {
        a.gateway = nh.gateway;
    }
    a.prefsrc = if q.src.is_none() { saddr } else { None };
    a.note = note;
    finish_output(a, saddr, dst)
}

/// `__mkroute_output` checks.
fn finish_output(a: Answer, saddr: Option<IpAddr>, dst: IpAddr) -> Outcome {
    if let Some(s) = saddr {
        if is_loopback(s) && a.dev != "lo" {
            return Err(err(
                Errno::Inval,
                format!("loopback source {s} cannot leave through {}", a.dev),
            ));
        }
    }
    if is_zeronet(dst) && !is_lbcast(dst) {
        return Err(err(Errno::Inval, format!("{dst} is a zeronet destination")));
    }
    Ok(a)
}

/// Result of the reverse-path / source validation.
#[derive(Clone, Debug, PartialEq)]
pub enum Validation {
    Ok(String),
    Fail(Errno, String),
}

/// `fib_validate_source(src, dst, oif, dev)`.
pub fn validate_source(
    st: &NetState,
    src: IpAddr,
    dst: IpAddr,
    oif: Option<&str>,
    dev: &str,
    mark: u32,
) -> Validation {
    let rpf = st.effective(dev, "rp_filter").unwrap_or(0);
    let accept_local = st.effective(dev, "accept_local").unwrap_or(0) != 0;
    let tx_redirects = st.effective(dev, "send_redirects").unwrap_or(1) != 0;
    if rpf == 0 && (Some(dev) != oif || !tx_redirects) {
        if accept_local {
            return Validation::Ok("accept_local".into());
        }
        let custom_local = st.routes.iter().any(|r| {
            r.table == RT_TABLE_LOCAL && r.kind == RouteType::Local && r.protocol != "kernel"
        });
        if !(custom_local || st.has_custom_rules(true)) {
            if st.addrs.iter().any(|a| a.addr == src) {
                return Validation::Fail(
                    Errno::Inval,
                    format!("source {src} is one of this namespace's own addresses"),
                );
            }
            return Validation::Ok("rp_filter off".into());
        }
    }
    let iif = oif.unwrap_or("lo");
    let src_mark = if st.effective(dev, "src_valid_mark").unwrap_or(0) != 0 {
        mark
    } else {
        0
    };
    let fl = Flow {
        dst: src,
        src: dst,
        iif,
        oif: None,
        mark: src_mark,
    };
    let rp_name = match rpf {
        0 => "off",
        1 => "strict",
        _ => "loose",
    };
    let last_resort = |why: String| {
        if rpf != 0 {
            Validation::Fail(Errno::XDev, format!("rp_filter {rp_name}: {why}"))
        } else {
            Validation::Ok(why)
        }
    };
    let hit = match fib_lookup(st, &fl) {
        Ok(h) => h,
        Err(e) => return last_resort(format!("no route back to {src} ({})", e.why)),
    };
    if hit.route.kind != RouteType::Unicast && !(hit.route.kind == RouteType::Local && accept_local)
    {
        return Validation::Fail(
            Errno::Inval,
            format!(
                "the route back to {src} is {} ({})",
                hit.route.kind,
                hit.route.spec()
            ),
        );
    }
    let dev_match = hit
        .route
        .nexthops
        .iter()
        .any(|n| n.dev.as_deref() == Some(dev))
        || (hit.route.kind == RouteType::Local && dev == "lo");
    let back = format!("the route back to {src} is {}", hit.route.spec());
    if dev_match {
        return Validation::Ok(back);
    }
    if st.addrs_of(dev).next().is_none() {
        return last_resort(format!("{dev} has no address; {back}"));
    }
    if rpf == 1 {
        return Validation::Fail(
            Errno::XDev,
            format!("rp_filter strict on {dev}: {back}, not {dev}"),
        );
    }
    Validation::Ok(format!("rp_filter {rp_name}: {back}"))
}

fn input_v4(st: &NetState, q: &Query, dst: IpAddr, iif: &str) -> Outcome {
    let saddr = q.src.unwrap_or(unspecified(true));
    let martian_src = |why: String| err(Errno::Inval, format!("martian source: {why}"));
    let martian_dst = |why: String| err(Errno::Inval, format!("martian destination: {why}"));
    if saddr.is_multicast() || is_lbcast(saddr) {
        return Err(martian_src(format!("{saddr}")));
    }
    let localnet = st.effective(iif, "route_localnet").unwrap_or(0) != 0;
    let brd_input = |hit: Option<&Hit<'_>>| -> Outcome {
        if !is_zeronet(saddr) {
            if let Validation::Fail(_, why) = validate_source(st, saddr, dst, None, iif, q.mark) {
                return Err(martian_src(why));
            }
        }
        Ok(answer(RouteType::Broadcast, hit, "lo".into(), true))
    };
    if is_lbcast(dst) || (saddr == unspecified(true) && dst == unspecified(true)) {
        return brd_input(None);
    }
    if is_zeronet(saddr) {
        return Err(martian_src(format!("{saddr} (zero network)")));
    }
    if is_zeronet(dst) {
        return Err(martian_dst(format!("{dst} (zero network)")));
    }
    if is_loopback(dst) {
        if !localnet {
            return Err(martian_dst(format!(
                "{dst} is loopback, route_localnet off"
            )));
        }
    } else if is_loopback(saddr) && !localnet {
        return Err(martian_src(format!(
            "{saddr} is loopback, route_localnet off"
        )));
    }
    let forwarding = st.conf(iif, "forwarding").unwrap_or(0) != 0 || !st.have_sysctl;
    let fl = Flow {
        dst,
        src: saddr,
        iif,
        oif: None,
        mark: q.mark,
    };
    let hit = match fib_lookup(st, &fl) {
        Ok(h) => h,
        Err(e) if e.errno == Errno::Unsupported => return Err(e),
        Err(e) => {
            if !forwarding {
                return Err(err(
                    Errno::HostUnreach,
                    format!("{} and forwarding is off on {iif}", e.why),
                ));
            }
            return Err(e);
        }
    };
    match hit.route.kind {
        RouteType::Broadcast => return brd_input(Some(&hit)),
        RouteType::Local => {
            return match validate_source(st, saddr, dst, None, iif, q.mark) {
                Validation::Fail(_, why) => Err(martian_src(why)),
                Validation::Ok(_) => Ok(answer(RouteType::Local, Some(&hit), "lo".into(), true)),
            }
        }
        _ => {}
    }
    if !forwarding {
        return Err(err(
            Errno::HostUnreach,
            format!("{dst} is not local and forwarding is off on {iif}"),
        ));
    }
    if hit.route.kind != RouteType::Unicast {
        return Err(martian_dst(format!("route type {}", hit.route.kind)));
    }
    let dev = hit.dev();
    if let Validation::Fail(_, why) = validate_source(st, saddr, dst, Some(&dev), iif, q.mark) {
        return Err(martian_src(why));
    }
    let mut a = answer(RouteType::Unicast, Some(&hit), dev, true);
    a.gateway = hit.nh().gateway;
    if hit.route.nexthops.len() > 1 {
        a.note = Some("multipath route: shown: the first next hop".into());
    }
    Ok(a)
}

fn v6_scope(a: std::net::Ipv6Addr) -> u8 {
    let s = a.segments();
    if a.is_loopback() {
        scope::HOST
    } else if s[0] & 0xffc0 == 0xfe80 {
        scope::LINK
    } else {
        scope::UNIVERSE
    }
}

fn common_prefix(a: IpAddr, b: IpAddr) -> u32 {
    match (a, b) {
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a) ^ u128::from(b)).leading_zeros(),
        _ => 0,
    }
}

/// IPv6 output: the same rules and tables; the source is `prefsrc` or a simplified
/// RFC 6724 choice (same address, scope at least the destination's, outgoing interface,
/// longest common prefix).
fn output_v6(st: &NetState, q: &Query, dst: IpAddr) -> Outcome {
    if let Some(s) = q.src {
        if !is_local(st, s) {
            return Err(err(Errno::Inval, format!("{s} is not a local address")));
        }
    }
    let fl = Flow {
        dst,
        src: q.src.unwrap_or(unspecified(false)),
        iif: "lo",
        oif: q.oif.as_deref(),
        mark: q.mark,
    };
    let hit = fib_lookup(st, &fl)?;
    let dev = if hit.route.kind == RouteType::Local {
        "lo".to_string()
    } else {
        hit.dev()
    };
    let mut a = answer(hit.route.kind, Some(&hit), dev.clone(), false);
    a.gateway = hit.nh().gateway;
    // IPv6 reports the source it would pick even when the query names one
    {
        a.prefsrc = hit.route.prefsrc.or_else(|| {
            let IpAddr::V6(d6) = dst else { return None };
            let dscope = v6_scope(d6);
            let out = hit.dev();
            st.addrs
                .iter()
                .filter_map(|x| match x.addr {
                    IpAddr::V6(v) if v6_scope(v) <= dscope || v6_scope(v) == scope::UNIVERSE => {
                        Some((x, v))
                    }
                    _ => None,
                })
                .filter(|(x, v)| v6_scope(*v) != scope::LINK || x.dev == out)
                .max_by_key(|(x, v)| {
                    (
                        x.addr == dst,
                        x.dev == out,
                        common_prefix(IpAddr::V6(*v), dst),
                    )
                })
                .map(|(x, _)| x.addr)
        });
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parses_ip_route_get_words() {
        let q = Query::parse("198.19.8.1 from 198.18.1.5 iif eth0 mark 0x10").unwrap();
        assert_eq!(q.dst, Some("198.19.8.1".parse().unwrap()));
        assert_eq!(q.src, Some("198.18.1.5".parse().unwrap()));
        assert_eq!(q.iif.as_deref(), Some("eth0"));
        assert_eq!(q.mark, 16);
        assert_eq!(
            q.to_string(),
            "ip route get 198.19.8.1 from 198.18.1.5 iif eth0 mark 0x10"
        );
        assert!(Query::parse("from 1.2.3.4").is_err());
        assert!(Query::parse("1.2.3.4 from").is_err());
        assert!(Query::parse("1.2.3.4 bogus 5").is_err());
        assert!(Query::parse("nothost").is_err());
    }

    fn state() -> NetState {
        let mut st = NetState::default();
        for (i, n) in ["lo", "a", "b", "c"].iter().enumerate() {
            st.links.push(Link {
                index: i as u32 + 1,
                name: n.to_string(),
                up: true,
                mtu: Some(1500),
            });
        }
        let addr = |dev: &str, a: &str, len, sc| Address {
            dev: dev.into(),
            addr: a.parse().unwrap(),
            prefix_len: len,
            scope: sc,
            secondary: false,
        };
        st.addrs.push(addr("lo", "127.0.0.1", 8, scope::HOST));
        st.addrs.push(addr("b", "10.2.0.1", 24, scope::UNIVERSE));
        st.addrs.push(addr("a", "10.1.0.1", 24, scope::UNIVERSE));
        let route = |dst: &str, dev: &str, sc| Route {
            table: RT_TABLE_MAIN,
            kind: RouteType::Unicast,
            dst: {
                let (a, l) = dst.split_once('/').unwrap();
                Prefix::new(a.parse().unwrap(), l.parse().unwrap())
            },
            tos: 0,
            metric: 0,
            scope: sc,
            protocol: "boot".into(),
            prefsrc: None,
            nexthops: vec![NextHop {
                dev: Some(dev.into()),
                gateway: None,
                weight: 1,
                dead: false,
            }],
        };
        st.routes.push(route("10.9.0.0/16", "c", scope::LINK));
        st.routes.push(route("10.1.0.0/24", "a", scope::LINK));
        st
    }

    #[test]
    fn addressless_device_takes_the_first_address_in_device_order() {
        let st = state();
        // "c" has no address: device order is lo, a, b -> lo is host scope, a's comes first
        let a = lookup(&st, &Query::to("10.9.1.1".parse().unwrap())).unwrap();
        assert_eq!(a.dev, "c");
        assert_eq!(a.prefsrc, Some("10.1.0.1".parse().unwrap()));
        // on its own device, the address in the gateway's subnet wins
        let a = lookup(&st, &Query::to("10.1.0.7".parse().unwrap())).unwrap();
        assert_eq!(a.prefsrc, Some("10.1.0.1".parse().unwrap()));
        // no route at all
        let e = lookup(&st, &Query::to("192.0.2.1".parse().unwrap())).unwrap_err();
        assert_eq!(e.errno, Errno::NetUnreach);
    }
}
