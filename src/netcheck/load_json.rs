//! Offline state: a directory holding what `ip -j addr`, `ip -j route show table all`,
//! `ip -j rule` (and optionally the `net.ipv4` sysctls as a flat JSON object) printed in
//! some namespace, e.g. collected with `kubectl exec`. Reads `addr.json`, `route.json`,
//! `rule.json` and `sysctl.json`; tolerates `ip`'s quirks (main-table routes carry no
//! `table`, `default` destinations, protocol names or numbers, IPv4 and IPv6 mixed).

use super::model::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn u(v: &Value, k: &str) -> Option<u64> {
    match v.get(k)? {
        Value::Number(n) => n.as_u64(),
        Value::String(x) => {
            if let Some(h) = x.strip_prefix("0x") {
                u64::from_str_radix(h, 16).ok()
            } else {
                x.parse().ok()
            }
        }
        _ => None,
    }
}

fn flag(v: &Value, k: &str, f: &str) -> bool {
    v.get(k)
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(f)))
}

fn read(dir: &Path, name: &str) -> Result<Option<Value>, String> {
    let p = dir.join(name);
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", p.display())),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("{}: not JSON: {e}", p.display()))
}

/// Parses `addr/len`, `addr`, or `default` (family from `v4`).
fn prefix(x: &str, v4: bool) -> Option<Prefix> {
    if x == "default" || x == "all" {
        return Some(Prefix::any(v4));
    }
    match x.split_once('/') {
        Some((a, l)) => Some(Prefix::new(a.parse().ok()?, l.parse().ok()?)),
        None => Some(Prefix::host(x.parse().ok()?)),
    }
}

/// Loads the state saved in `dir`: `addr.json` and `route.json` are required, `rule.json` (else the
/// default rules apply) and `sysctl.json` (else `have_sysctl` stays false) are optional. The error
/// names the file and what is wrong with it.
pub fn load_dir(dir: &Path) -> Result<NetState, String> {
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    let addr = read(dir, "addr.json")?.ok_or_else(|| format!("{}: no addr.json", dir.display()))?;
    let route =
        read(dir, "route.json")?.ok_or_else(|| format!("{}: no route.json", dir.display()))?;
    let rule = read(dir, "rule.json")?;
    let sysctl = read(dir, "sysctl.json")?;
    let mut st = NetState {
        origin: dir.display().to_string(),
        ..Default::default()
    };
    parse_addrs(&addr, &mut st).map_err(|e| format!("{}/addr.json: {e}", dir.display()))?;
    parse_routes(&route, &mut st).map_err(|e| format!("{}/route.json: {e}", dir.display()))?;
    if let Some(r) = rule {
        parse_rules(&r, &mut st).map_err(|e| format!("{}/rule.json: {e}", dir.display()))?;
    }
    if let Some(Value::Object(m)) = sysctl {
        st.sysctl = m
            .into_iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(x) => x,
                    other => other.to_string(),
                };
                (k, v)
            })
            .collect::<BTreeMap<_, _>>();
        st.have_sysctl = true;
    }
    Ok(st)
}

/// Adds the links and addresses of an `ip -j addr` dump (an array of links, each with its
/// `addr_info`) to `st`, keeping device and address order.
pub fn parse_addrs(v: &Value, st: &mut NetState) -> Result<(), String> {
    let links = v.as_array().ok_or("expected a JSON array of links")?;
    for l in links {
        let name = s(l, "ifname").ok_or("a link without ifname")?.to_string();
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
            st.addrs.push(Address {
                dev: name.clone(),
                addr: local,
                prefix_len: u(a, "prefixlen").unwrap_or(if local.is_ipv4() { 32 } else { 128 })
                    as u8,
                scope: s(a, "scope").and_then(scope::parse).unwrap_or(0),
                secondary: a.get("secondary").and_then(Value::as_bool).unwrap_or(false),
            });
        }
    }
    st.links.sort_by_key(|l| l.index);
    Ok(())
}

fn route_is_v6(r: &Value) -> bool {
    let has_colon = |k| s(r, k).is_some_and(|x| x.contains(':'));
    has_colon("dst") || has_colon("gateway") || has_colon("prefsrc") || r.get("pref").is_some()
}

/// Adds the routes of an `ip -j route show table all` dump (an array of routes, IPv4 and IPv6
/// mixed; no `table` means main) to `st`.
pub fn parse_routes(v: &Value, st: &mut NetState) -> Result<(), String> {
    let routes = v.as_array().ok_or("expected a JSON array of routes")?;
    for r in routes {
        let v4 = !route_is_v6(r);
        let kind = RouteType::parse(s(r, "type").unwrap_or("unicast"));
        let dst_s = s(r, "dst").ok_or("a route without dst")?;
        let Some(dst) = prefix(dst_s, v4) else {
            return Err(format!("bad dst {dst_s:?}"));
        };
        let table = match r.get("table") {
            None => RT_TABLE_MAIN,
            Some(Value::Number(n)) => n.as_u64().unwrap_or(0) as u32,
            Some(Value::String(t)) => parse_table(t).ok_or(format!("unknown table {t:?}"))?,
            Some(_) => return Err("bad table".into()),
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
    }
    Ok(())
}

/// Adds the policy rules of an `ip -j rule` dump (either family; the family is taken from the
/// addresses or `family`) to `st`.
pub fn parse_rules(v: &Value, st: &mut NetState) -> Result<(), String> {
    let rules = v.as_array().ok_or("expected a JSON array of rules")?;
    for r in rules {
        let addr_fam = |k: &str| s(r, k).filter(|x| *x != "all").map(|x| x.contains(':'));
        let v4 = !(addr_fam("src") == Some(true) || addr_fam("dst") == Some(true))
            && s(r, "family") != Some("inet6");
        let pfx = |k: &str, lk: &str| -> Result<Option<Prefix>, String> {
            match s(r, k) {
                None | Some("all") => Ok(None),
                Some(x) => {
                    let a: IpAddr = x.parse().map_err(|_| format!("bad {k} {x:?}"))?;
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
                Some(x) if x != "lookup" => return Err(format!("unknown rule action {x:?}")),
                _ => {
                    let t = match r.get("table") {
                        Some(Value::Number(n)) => n.as_u64().unwrap_or(0) as u32,
                        Some(Value::String(t)) => {
                            parse_table(t).ok_or(format!("unknown table {t:?}"))?
                        }
                        _ => RT_TABLE_MAIN,
                    };
                    RuleAction::Table(t)
                }
            }
        };
        let fwmark =
            u(r, "fwmark").map(|m| (m as u32, u(r, "fwmask").unwrap_or(0xffff_ffff) as u32));
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
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_of_every_shape() {
        let v: Value = serde_json::from_str(
            r#"[{"priority":0,"src":"all","table":"local"},
                {"priority":100,"src":"all","fwmark":"0x1","fwmask":"0xff","table":"200"},
                {"priority":105,"src":"all","fwmark":"0x2","nop":null},
                {"priority":150,"not":null,"src":"10.0.0.0","srclen":8,"dst":"10.93.0.0","dstlen":16,"table":"201"},
                {"priority":160,"src":"all","table":"main","suppress_prefixlen":0},
                {"priority":170,"src":"all","dst":"10.73.0.0","dstlen":16,"action":"unreachable"},
                {"priority":180,"src":"all","dst":"10.76.0.0","dstlen":16,"goto":32000},
                {"priority":200,"src":"all","iif":"eth0","oif":"net1","table":"main"}]"#,
        )
        .unwrap();
        let mut st = NetState::default();
        parse_rules(&v, &mut st).unwrap();
        let r = &st.rules;
        assert_eq!(r[0].action, RuleAction::Table(RT_TABLE_LOCAL));
        assert_eq!(r[1].fwmark, Some((1, 0xff)));
        assert_eq!(r[2].action, RuleAction::Nop);
        assert!(r[3].invert);
        assert_eq!(r[3].src.unwrap().to_string(), "10.0.0.0/8");
        assert_eq!(r[4].suppress_prefixlen, Some(0));
        assert_eq!(r[5].action, RuleAction::Unreachable);
        assert_eq!(r[6].action, RuleAction::Goto(32000));
        assert_eq!(r[7].iif.as_deref(), Some("eth0"));
        assert_eq!(r[7].oif.as_deref(), Some("net1"));
        assert_eq!(
            r[3].spec(),
            "150: not from 10.0.0.0/8 to 10.93.0.0/16 lookup 201"
        );
    }

    #[test]
    fn routes_family_and_table() {
        let v: Value = serde_json::from_str(
            r#"[{"dst":"default","gateway":"fd00::1","dev":"eth0","metric":1024,"flags":[],"pref":"medium"},
                {"dst":"default","gateway":"192.0.2.1","dev":"eth0","flags":[]},
                {"type":"blackhole","dst":"198.18.1.0/26","protocol":"bird","flags":[]},
                {"dst":"10.0.0.0/8","nexthops":[{"gateway":"192.0.2.1","dev":"eth0","weight":1,"flags":[]},{"gateway":"192.0.2.2","dev":"eth0","weight":2,"flags":["dead"]}],"table":"100","flags":[]}]"#,
        )
        .unwrap();
        let mut st = NetState::default();
        parse_routes(&v, &mut st).unwrap();
        assert!(st.routes[0].dst.addr.is_ipv6());
        assert!(st.routes[1].dst.addr.is_ipv4());
        assert_eq!(st.routes[1].table, RT_TABLE_MAIN);
        assert_eq!(st.routes[2].kind, RouteType::Blackhole);
        assert!(st.routes[2].nexthops.is_empty());
        assert_eq!(st.routes[3].table, 100);
        assert_eq!(st.routes[3].nexthops.len(), 2);
        assert!(st.routes[3].nexthops[1].dead);
    }
}
