//! Offline state: a directory holding what `ip -j addr`, `ip -j route show table all`,
//! `ip -j rule` (and optionally the `net.ipv4` sysctls as a flat JSON object) printed in
//! some namespace, e.g. collected with `kubectl exec`. Reads `addr.json`, `route.json`,
//! `rule.json` and `sysctl.json`; tolerates `ip`'s quirks (main-table routes carry no
//! `table`, `default` destinations, protocol names or numbers, IPv4 and IPv6 mixed).
//!
//! Bounded: each file is at most `config::limits::JSON_FILE_BYTES` (a regular file, read
//! through [`crate::sysfile`]) and holds at most the links, addresses, routes, rules and
//! sysctls of `config::limits`; arrays and the sysctl object are read one element at a
//! time, so memory follows the state built, not a JSON tree of the whole file.

use super::model::*;
use crate::config::limits;
use serde::de::{self, Deserializer as _};
use serde_json::Value;
use std::net::IpAddr;
use std::path::Path;

mod error;
pub use error::JsonError;

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

/// The text of `dir/name`, `None` when there is no such file. Err names the file when
/// it is no regular file, longer than [`limits::JSON_FILE_BYTES`], or unreadable.
fn read(dir: &Path, name: &str) -> Result<Option<String>, JsonError> {
    let p = dir.join(name);
    match crate::sysfile::read(&p, limits::JSON_FILE_BYTES) {
        Ok(t) => Ok(Some(t)),
        Err(e) if matches!(e.kind, crate::sysfile::Kind::Missing) => Ok(None),
        Err(e) => Err(JsonError::Read(e)),
    }
}

/// What [`each`] hands on: an array's elements, or an object's entries.
enum Item {
    Element(Value),
    Entry(String, Value),
}

/// Calls `f` with each element of the JSON array `text` (or each entry of the object, for
/// `what == "sysctls"`), one at a time, so that no tree of the whole document is built.
/// Err: not JSON, not an array (object), more than `max` items (named `what`), or the
/// first error of `f`.
fn each(
    text: &str,
    what: &'static str,
    max: usize,
    mut f: impl FnMut(Item) -> Result<(), JsonError>,
) -> Result<(), JsonError> {
    struct Walk<'a, F> {
        f: &'a mut F,
        what: &'static str,
        max: usize,
        /// An error of `f` or a limit, kept as it is (serde would add its position).
        stop: &'a mut Option<JsonError>,
    }
    impl<F> Walk<'_, F> {
        fn count<E: de::Error>(&mut self, n: usize) -> Result<(), E> {
            if n > self.max {
                *self.stop = Some(JsonError::TooMany {
                    max: self.max,
                    what: self.what,
                });
                return Err(E::custom("limit"));
            }
            Ok(())
        }
    }
    impl<'de, F: FnMut(Item) -> Result<(), JsonError>> de::Visitor<'de> for Walk<'_, F> {
        type Value = ();
        fn expecting(&self, w: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(w, "{}", self.what)
        }
        fn visit_seq<A: de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
            let mut n = 0;
            while let Some(v) = seq.next_element::<Value>()? {
                n += 1;
                self.count(n)?;
                if let Err(e) = (self.f)(Item::Element(v)) {
                    *self.stop = Some(e);
                    return Err(de::Error::custom("stop"));
                }
            }
            Ok(())
        }
        fn visit_map<A: de::MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
            let mut n = 0;
            while let Some((k, v)) = map.next_entry::<String, Value>()? {
                n += 1;
                self.count(n)?;
                if let Err(e) = (self.f)(Item::Entry(k, v)) {
                    *self.stop = Some(e);
                    return Err(de::Error::custom("stop"));
                }
            }
            Ok(())
        }
    }
    let mut stop = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let walk = Walk {
        f: &mut f,
        what,
        max,
        stop: &mut stop,
    };
    let res = de.deserialize_any(walk).and_then(|()| de.end());
    match (stop, res) {
        (Some(e), _) => Err(e),
        (None, Ok(())) => Ok(()),
        (None, Err(e)) if e.is_data() => Err(JsonError::ExpectedArray(what)),
        (None, Err(e)) => Err(JsonError::NotJson(e)),
    }
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
pub fn load_dir(dir: &Path) -> Result<NetState, JsonError> {
    if !dir.is_dir() {
        return Err(JsonError::NotADirectory(dir.to_path_buf()));
    }
    let mut st = NetState {
        origin: dir.display().to_string(),
        ..Default::default()
    };
    for (file, name, required) in [
        (StateFile::Addr, "addr.json", true),
        (StateFile::Route, "route.json", true),
        (StateFile::Rule, "rule.json", false),
        (StateFile::Sysctl, "sysctl.json", false),
    ] {
        match read(dir, name)? {
            Some(text) => add_text(&mut st, file, &text).map_err(|e| JsonError::In {
                dir: dir.to_path_buf(),
                name,
                error: Box::new(e),
            })?,
            None if required => {
                return Err(JsonError::Missing {
                    dir: dir.to_path_buf(),
                    name,
                })
            }
            None => {}
        }
    }
    Ok(st)
}

/// The files of a saved state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateFile {
    /// `addr.json`: `ip -j addr`.
    Addr,
    /// `route.json`: `ip -j route show table all`.
    Route,
    /// `rule.json`: `ip -j rule`.
    Rule,
    /// `sysctl.json`: the `net.ipv4` sysctls as one JSON object.
    Sysctl,
}

/// Adds the text of one state file to `st`, one element at a time within the limits of
/// `config::limits` (what [`load_dir`] does with each file; the fuzz target's entry).
pub fn add_text(st: &mut NetState, file: StateFile, text: &str) -> Result<(), JsonError> {
    let array_of = |what: &'static str| Err(JsonError::ExpectedArray(what));
    match file {
        StateFile::Addr => {
            each(text, "links", limits::NETCHECK_LINKS, |i| match i {
                Item::Element(l) => add_link(&l, st),
                Item::Entry(..) => array_of("links"),
            })?;
            st.links.sort_by_key(|l| l.index);
        }
        StateFile::Route => each(text, "routes", limits::NETCHECK_ROUTES, |i| match i {
            Item::Element(r) => add_route(&r, st),
            Item::Entry(..) => array_of("routes"),
        })?,
        StateFile::Rule => each(text, "rules", limits::NETCHECK_RULES, |i| match i {
            Item::Element(r) => add_rule(&r, st),
            Item::Entry(..) => array_of("rules"),
        })?,
        StateFile::Sysctl => {
            each(text, "sysctls", limits::NETCHECK_SYSCTLS, |i| match i {
                Item::Entry(k, v) => {
                    let v = match v {
                        Value::String(x) => x,
                        other => other.to_string(),
                    };
                    st.sysctl.insert(k, v);
                    Ok(())
                }
                Item::Element(_) => Err(JsonError::ExpectedSysctls),
            })?;
            st.have_sysctl = true;
        }
    }
    Ok(())
}

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
fn add_link(l: &Value, st: &mut NetState) -> Result<(), JsonError> {
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
fn add_route(r: &Value, st: &mut NetState) -> Result<(), JsonError> {
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
fn add_rule(r: &Value, st: &mut NetState) -> Result<(), JsonError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reads_one_item_at_a_time_within_its_limit() {
        let mut n = 0;
        let count = |_: Item| -> Result<(), JsonError> {
            n += 1;
            Ok(())
        };
        each("[1, {}, [], \"x\"]", "routes", 4, count).unwrap();
        assert_eq!(n, 4);
        let ok = |_: Item| Ok(());
        assert_eq!(
            each("[1, 2, 3, 4]", "routes", 3, ok)
                .unwrap_err()
                .to_string(),
            "more than 3 routes (netcheck's limit for one file)"
        );
        assert_eq!(
            each("\"routes\"", "routes", 3, ok).unwrap_err().to_string(),
            "expected a JSON array of routes"
        );
        assert!(each("[1,", "routes", 3, ok)
            .unwrap_err()
            .to_string()
            .starts_with("not JSON: "));
        assert!(each("[1] x", "routes", 3, ok)
            .unwrap_err()
            .to_string()
            .starts_with("not JSON: "));
        let fail = |_: Item| Err(JsonError::NoDst);
        assert_eq!(
            each("[{}]", "routes", 3, fail).unwrap_err().to_string(),
            "a route without dst"
        );
        // an object's entries for sysctl.json
        let mut keys = Vec::new();
        each("{\"a\": \"1\", \"b\": 2}", "sysctls", 3, |i| {
            if let Item::Entry(k, _) = i {
                keys.push(k);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(keys, ["a", "b"]);
    }

    #[test]
    fn a_state_file_too_large_or_no_file_is_refused_unread() {
        let d = std::env::temp_dir().join(format!("rocetap-load-json-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("addr.json"), "[]").unwrap();
        // sparse: no disk used; refused after JSON_FILE_BYTES + 1 bytes, never parsed
        let route = std::fs::File::create(d.join("route.json")).unwrap();
        route.set_len(limits::JSON_FILE_BYTES as u64 + 1).unwrap();
        let e = load_dir(&d).unwrap_err().to_string();
        assert!(e.ends_with("route.json: longer than 16777216 bytes"), "{e}");
        std::fs::remove_file(d.join("route.json")).unwrap();
        nix::unistd::mkfifo(&d.join("route.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = load_dir(&d).unwrap_err().to_string();
        assert!(
            e.ends_with("route.json: not a regular file (a FIFO)"),
            "{e}"
        );
        std::fs::remove_file(d.join("route.json")).unwrap();
        std::fs::write(d.join("route.json"), "[]").unwrap();
        std::fs::write(d.join("sysctl.json"), "[1]").unwrap();
        let e = load_dir(&d).unwrap_err().to_string();
        assert!(
            e.ends_with("sysctl.json: expected a JSON object of sysctls"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

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
