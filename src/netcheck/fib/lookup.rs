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

mod fib;
mod input;
mod output;
use fib::Hit;
use input::input_v4;
use output::{output_v4, output_v6};

/// One question: `ip route get DST [from SRC] [iif DEV] [oif DEV] [mark N]`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Query {
    /// The destination to look up; `None` only in a query still being built (parsing requires one).
    pub dst: Option<IpAddr>,
    /// `from SRC`: the source address the packet carries; `None` lets the kernel pick one (output
    /// path).
    pub src: Option<IpAddr>,
    /// `iif DEV`: the device the packet arrived on; set, the input path (`ip_route_input`) is
    /// modelled instead of the output path.
    pub iif: Option<String>,
    /// `oif DEV`: the device the sending socket is bound to; `None` for an unbound socket.
    pub oif: Option<String>,
    /// `mark N`: the packet's firewall mark (`SO_MARK`), matched by `fwmark` rules; 0 when
    /// unmarked.
    pub mark: u32,
}

impl Query {
    /// A query for `dst` with nothing else set: a locally generated packet from an unbound socket.
    pub fn to(dst: IpAddr) -> Self {
        Query {
            dst: Some(dst),
            ..Default::default()
        }
    }
    /// The same query with source address `src` (`from SRC`).
    pub fn from(mut self, src: IpAddr) -> Self {
        self.src = Some(src);
        self
    }
    /// The same query for a packet received on device `dev` (`iif DEV`): an input-path lookup.
    pub fn iif(mut self, dev: &str) -> Self {
        self.iif = Some(dev.to_string());
        self
    }
    /// Parses `DST [from SRC] [iif DEV] [oif DEV] [mark N]` (the words of `ip route get`).
    pub fn parse(s: &str) -> Result<Query, QueryError> {
        let w: Vec<&str> = s.split_whitespace().collect();
        let mut q = Query::default();
        let mut i = 0;
        let addr = |x: &str| -> Result<IpAddr, QueryError> {
            x.parse()
                .map_err(|_| QueryError::NotAnAddress(x.to_string()))
        };
        while i < w.len() {
            let val = || {
                w.get(i + 1)
                    .copied()
                    .ok_or_else(|| QueryError::NeedsValue(w[i].to_string()))
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
                    .map_err(|_| QueryError::BadMark(v.to_string()))?;
                }
                "to" => q.dst = Some(addr(val()?)?),
                x if q.dst.is_none() => {
                    q.dst = Some(addr(x)?);
                    i += 1;
                    continue;
                }
                x => return Err(QueryError::UnexpectedWord(x.to_string())),
            }
            i += 2;
        }
        if q.dst.is_none() {
            return Err(QueryError::NoDestination);
        }
        Ok(q)
    }
}

/// Why a `--route-get` question does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryError {
    /// A word that should be an IP address.
    NotAnAddress(String),
    /// A keyword at the end, without its value.
    NeedsValue(String),
    /// A `mark` that is no number.
    BadMark(String),
    /// A word that is no keyword, after the destination.
    UnexpectedWord(String),
    /// No destination.
    NoDestination,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::NotAnAddress(x) => write!(f, "{x:?} is not an IP address"),
            QueryError::NeedsValue(k) => write!(f, "{k} needs a value"),
            QueryError::BadMark(v) => write!(f, "bad mark {v:?}"),
            QueryError::UnexpectedWord(x) => write!(f, "unexpected word {x:?}"),
            QueryError::NoDestination => f.write_str("no destination"),
        }
    }
}

impl std::error::Error for QueryError {}

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
    /// The type of the route that answered (`unicast`, `local`, ...; JSON `type`).
    #[serde(rename = "type")]
    pub kind: RouteType,
    /// Table that answered; `None` when no table did (`ip` prints `table unspec`).
    pub table: Option<u32>,
    /// Priority of the policy rule that led to the table.
    pub rule: Option<u32>,
    /// The route used, in `ip route` syntax.
    pub route: Option<String>,
    /// The output device; `lo` for packets delivered locally.
    pub dev: String,
    /// The next hop's gateway; `None` when the destination is on the link.
    pub gateway: Option<IpAddr>,
    /// The source the kernel picked (what `ip route get` prints as `prefsrc`), when the
    /// query gave none.
    pub prefsrc: Option<IpAddr>,
    /// True when the answer is for the input path (the query had `iif`), false for the output path.
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

/// The error a failed lookup gives, as `ip route get` reports it (JSON: the errno's name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Errno {
    /// `ENETUNREACH`: no route matched, or an `unreachable` rule did.
    #[serde(rename = "ENETUNREACH")]
    NetUnreach,
    /// `EHOSTUNREACH`: the lookup landed on an `unreachable` route.
    #[serde(rename = "EHOSTUNREACH")]
    HostUnreach,
    /// `EINVAL`: a martian or otherwise invalid source or destination (multicast, broadcast or
    /// zeronet source, zeronet destination).
    #[serde(rename = "EINVAL")]
    Inval,
    /// `EACCES`: a `prohibit` route or rule matched.
    #[serde(rename = "EACCES")]
    Acces,
    /// `ENODEV`: a device named in the query does not exist.
    #[serde(rename = "ENODEV")]
    NoDev,
    /// `EXDEV`: reverse-path validation (`rp_filter`) rejected the source: the route back to it
    /// does not leave through the receiving device.
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

/// A failed lookup: the errno and the check that produced it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LookupError {
    /// The error `ip route get` would print.
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

/// The result of one lookup: the kernel's answer or its error.
pub type Outcome = Result<Answer, LookupError>;

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

#[cfg(test)]
mod tests;
