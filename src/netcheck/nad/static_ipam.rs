//! The `static` IPAM plugin's values: each `addresses[i].address` must be an IPv4 or IPv6
//! address with a prefix length that fits it (`/0`–`/32`, `/0`–`/128`), each gateway and
//! route next hop an address, each route destination a prefix. The plugin parses them
//! when the pod starts and fails its network setup on anything else, so the pod does
//! not start; here they are found before. Typed problems only: `netcheck::report::words::nad` words them.

use crate::yaml::{Node, Pos};
use std::net::IpAddr;

/// What is wrong with one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// An address or destination without `/LEN`.
    NoPrefix,
    /// A prefix length longer than the address has bits (`/33` for IPv4, `/129` for IPv6).
    PrefixTooLong {
        /// The longest the address allows: 32 or 128.
        max: u8,
    },
    /// Not an IP address (before the `/`, for a prefix).
    NotAnAddress,
    /// `addresses` or `routes` is not a list (of objects).
    NotAList,
}

/// One value the static plugin refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bad {
    /// The field path, e.g. `spec.config.plugins[0].ipam.addresses[0].address`.
    pub path: String,
    /// Where the value is in the configuration text.
    pub pos: Pos,
    /// The value as written.
    pub value: String,
    /// What is wrong with it.
    pub problem: Problem,
}

/// Checks `A/LEN`.
fn prefix(t: &str) -> Option<Problem> {
    let Some((a, l)) = t.split_once('/') else {
        return Some(if t.trim().parse::<IpAddr>().is_ok() {
            Problem::NoPrefix
        } else {
            Problem::NotAnAddress
        });
    };
    let Ok(addr) = a.parse::<IpAddr>() else {
        return Some(Problem::NotAnAddress);
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    match l.parse::<u8>() {
        Ok(n) if n <= max => None,
        _ if !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()) => {
            Some(Problem::PrefixTooLong { max })
        }
        _ => Some(Problem::NotAnAddress),
    }
}

/// The values of a `static` `ipam` section (`path` is its field path) that the plugin
/// refuses, in order.
pub fn check(ipam: &Node, path: &str) -> Vec<Bad> {
    let mut out = Vec::new();
    let mut push = |n: &Node, path: String, problem: Problem| {
        out.push(Bad {
            path,
            pos: n.pos,
            value: n.text().unwrap_or_default(),
            problem,
        });
    };
    for (list, addr_key, gw_key) in [("addresses", "address", "gateway"), ("routes", "dst", "gw")] {
        let Some(l) = ipam.get(list) else { continue };
        let Some(items) = l.seq() else {
            push(l, format!("{path}.{list}"), Problem::NotAList);
            continue;
        };
        for (i, it) in items.iter().enumerate() {
            let at = format!("{path}.{list}[{i}]");
            if it.map().is_none() {
                push(it, at, Problem::NotAList);
                continue;
            }
            if let Some(a) = it.get(addr_key) {
                if let Some(p) = prefix(&a.text().unwrap_or_default()) {
                    push(a, format!("{at}.{addr_key}"), p);
                }
            }
            if let Some(g) = it.get(gw_key) {
                if g.text().unwrap_or_default().parse::<IpAddr>().is_err() {
                    push(g, format!("{at}.{gw_key}"), Problem::NotAnAddress);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_too_long_missing_or_malformed() {
        let doc = crate::yaml::load(
            r#"{"type": "static", "addresses": [
                {"address": "198.51.100.7/33", "gateway": "198.51.100.254"},
                {"address": "2001:db8::7/129"},
                {"address": "198.51.100.7"},
                {"address": "198.51.100.300/24", "gateway": "nope"},
                {"address": "198.51.100.7/24"}, {"address": "2001:db8::7/64"}],
              "routes": [{"dst": "0.0.0.0/0", "gw": "198.51.100.254"}, {"dst": "203.0.113.0/40"}]}"#,
        )
        .unwrap();
        let got: Vec<(String, Problem)> = check(&doc[0], "ipam")
            .into_iter()
            .map(|b| (b.path, b.problem))
            .collect();
        let p = |s: &str| s.to_string();
        assert_eq!(
            got,
            vec![
                (
                    p("ipam.addresses[0].address"),
                    Problem::PrefixTooLong { max: 32 }
                ),
                (
                    p("ipam.addresses[1].address"),
                    Problem::PrefixTooLong { max: 128 }
                ),
                (p("ipam.addresses[2].address"), Problem::NoPrefix),
                (p("ipam.addresses[3].address"), Problem::NotAnAddress),
                (p("ipam.addresses[3].gateway"), Problem::NotAnAddress),
                (p("ipam.routes[1].dst"), Problem::PrefixTooLong { max: 32 }),
            ]
        );
        let doc = crate::yaml::load(r#"{"addresses": "198.51.100.7/24"}"#).unwrap();
        assert_eq!(check(&doc[0], "ipam")[0].problem, Problem::NotAList);
    }
}
