//! One `ip -j` dump at a time into a [`NetState`]: `ip -j addr` (links in device order
//! and their addresses), `ip -j route show table all` and `ip -j rule`, each element
//! checked and bounded as it is read.

use super::*;

/// Err when `v` is no array or has more than `max` elements (named `what`).
fn array<'a>(v: &'a Value, what: &'static str, max: usize) -> Result<&'a Vec<Value>, JsonError> {
    let a = v.as_array().ok_or(JsonError::ExpectedArray(what))?;
    if a.len() > max {
        return Err(JsonError::TooMany { max, what });
    }
    Ok(a)
}

/// Adds the links and addresses of an `ip -j addr` dump (an array of links, each with its
/// `addr_info`) to `st`, keeping device and address order.
pub fn parse_addrs(v: &Value, st: &mut NetState) -> Result<(), JsonError> {
    for l in array(v, "links", limits::NETCHECK_LINKS)? {
        add_link(l, st)?;
    }
    st.links.sort_by_key(|l| l.index);
    Ok(())
}

/// One link of an `ip -j addr` dump with its addresses (at most
/// [`limits::NETCHECK_ADDRESSES`] in all).
pub(super) fn add_link(l: &Value, st: &mut NetState) -> Result<(), JsonError> {
    let name = s(l, "ifname").ok_or(JsonError::NoIfname)?.to_string();
    let index = u(l, "ifindex").unwrap_or(0) as u32;
    st.links.push(Link {
        index,
        name: name.clone(),
        up: flag(l, "flags", "UP"),
        mtu: u(l, "mtu").map(|m| m as u32),
    });
    for a in l
        .get("addr_info")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(local) = s(a, "local").and_then(|x| x.parse::<IpAddr>().ok()) else {
            continue;
        };
        if st.addrs.len() >= limits::NETCHECK_ADDRESSES {
            return Err(JsonError::TooMany {
                max: limits::NETCHECK_ADDRESSES,
                what: "addresses",
            });
        }
        st.addrs.push(Address {
            dev: name.clone(),
            addr: local,
            prefix_len: u(a, "prefixlen").unwrap_or(if local.is_ipv4() { 32 } else { 128 }) as u8,
            scope: s(a, "scope").and_then(scope::parse).unwrap_or(0),
            secondary: a.get("secondary").and_then(Value::as_bool).unwrap_or(false),
        });
    }
    Ok(())
}

fn route_is_v6(r: &Value) -> bool {
    let has_colon = |k| s(r, k).is_some_and(|x| x.contains(':'));
    has_colon("dst") || has_colon("gateway") || has_colon("prefsrc") || r.get("pref").is_some()
}

/// Adds the routes of an `ip -j route show table all` dump (an array of routes, IPv4 and IPv6
/// mixed; no `table` means main) to `st`.
pub fn parse_routes(v: &Value, st: &mut NetState) -> Result<(), JsonError> {
    for r in array(v, "routes", limits::NETCHECK_ROUTES)? {
        add_route(r, st)?;
    }
    Ok(())
}

/// One route of an `ip -j route` dump.
pub(super) fn add_route(r: &Value, st: &mut NetState) -> Result<(), JsonError> {
    let v4 = !route_is_v6(r);
    let kind = RouteType::parse(s(r, "type").unwrap_or("unicast"));
    let dst_s = s(r, "dst").ok_or(JsonError::NoDst)?;
    let Some(dst) = prefix(dst_s, v4) else {
        return Err(JsonError::BadDst(dst_s.to_string()));
    };
    let table = match r.get("table") {
        None => RT_TABLE_MAIN,
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0) as u32,
        Some(Value::String(t)) => {
            parse_table(t).ok_or_else(|| JsonError::UnknownTable(t.clone()))?
        }
        Some(_) => return Err(JsonError::BadTable),
    };
    let gw = |x: &Value| s(x, "gateway").and_then(|g| g.parse::<IpAddr>().ok());
    let mut nexthops = Vec::new();
    if let Some(nhs) = r.get("nexthops").and_then(Value::as_array) {
        for nh in nhs {
            nexthops.push(NextHop {
                dev: s(nh, "dev").map(str::to_string),
                gateway: gw(nh),
                weight: u(nh, "weight").unwrap_or(1) as u32,
                dead: flag(nh, "flags", "dead"),
            });
        }
    } else if s(r, "dev").is_some() || gw(r).is_some() {
        nexthops.push(NextHop {
            dev: s(r, "dev").map(str::to_string),
            gateway: gw(r),
            weight: 1,
            dead: flag(r, "flags", "dead"),
        });
    }
    let default_scope = match kind {
        RouteType::Local => scope::HOST,
        RouteType::Broadcast => scope::LINK,
        _ => scope::UNIVERSE,
    };
    st.routes.push(Route {
        table,
        kind,
        dst,
        tos: u(r, "tos").unwrap_or(0) as u8,
        metric: u(r, "metric").unwrap_or(0) as u32,
        scope: s(r, "scope")
            .and_then(scope::parse)
            .unwrap_or(default_scope),
        protocol: s(r, "protocol").unwrap_or("boot").to_string(),
        prefsrc: s(r, "prefsrc").and_then(|x| x.parse().ok()),
        nexthops,
    });
    Ok(())
}

/// Adds the policy rules of an `ip -j rule` dump (either family; the family is taken from the
/// addresses or `family`) to `st`.
pub fn parse_rules(v: &Value, st: &mut NetState) -> Result<(), JsonError> {
    for r in array(v, "rules", limits::NETCHECK_RULES)? {
        add_rule(r, st)?;
    }
    Ok(())
}

/// One rule of an `ip -j rule` dump.
pub(super) fn add_rule(r: &Value, st: &mut NetState) -> Result<(), JsonError> {
    let addr_fam = |k: &str| s(r, k).filter(|x| *x != "all").map(|x| x.contains(':'));
    let v4 = !(addr_fam("src") == Some(true) || addr_fam("dst") == Some(true))
        && s(r, "family") != Some("inet6");
    let pfx = |k: &str, lk: &str| -> Result<Option<Prefix>, JsonError> {
        match s(r, k) {
            None | Some("all") => Ok(None),
            Some(x) => {
                let a: IpAddr = x.parse().map_err(|_| JsonError::BadAddress {
                    key: k.to_string(),
                    value: x.to_string(),
                })?;
                let len = u(r, lk).unwrap_or(if a.is_ipv4() { 32 } else { 128 }) as u8;
                Ok(Some(Prefix::new(a, len)))
            }
        }
    };
    let action = if let Some(g) = u(r, "goto") {
        RuleAction::Goto(g as u32)
    } else if r.get("nop").is_some() {
        RuleAction::Nop
    } else {
        match s(r, "action") {
            Some("blackhole") => RuleAction::Blackhole,
            Some("unreachable") => RuleAction::Unreachable,
            Some("prohibit") => RuleAction::Prohibit,
            Some(x) if x != "lookup" => return Err(JsonError::UnknownAction(x.to_string())),
            _ => {
                let t = match r.get("table") {
                    Some(Value::Number(n)) => n.as_u64().unwrap_or(0) as u32,
                    Some(Value::String(t)) => {
                        parse_table(t).ok_or_else(|| JsonError::UnknownTable(t.clone()))?
                    }
                    _ => RT_TABLE_MAIN,
                };
                RuleAction::Table(t)
            }
        }
    };
    let fwmark = u(r, "fwmark").map(|m| (m as u32, u(r, "fwmask").unwrap_or(0xffff_ffff) as u32));
    let mut unsupported = Vec::new();
    for k in [
        "l3mdev", "uidrange", "ipproto", "sport", "dport", "tun_id", "realms",
    ] {
        if r.get(k).is_some() {
            unsupported.push(k);
        }
    }
    st.rules.push(Rule {
        v4,
        priority: u(r, "priority").unwrap_or(0) as u32,
        invert: r.get("not").is_some(),
        src: pfx("src", "srclen")?,
        dst: pfx("dst", "dstlen")?,
        iif: s(r, "iif").map(str::to_string),
        oif: s(r, "oif").map(str::to_string),
        fwmark,
        tos: s(r, "tos")
            .and_then(|t| u8::from_str_radix(t.trim_start_matches("0x"), 16).ok())
            .unwrap_or(0),
        action,
        suppress_prefixlen: u(r, "suppress_prefixlen").map(|x| x as u32),
        unsupported: (!unsupported.is_empty()).then(|| unsupported.join(", ")),
    });
    Ok(())
}
