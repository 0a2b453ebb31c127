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
mod parse;
pub use error::JsonError;
use parse::{add_link, add_route, add_rule};
pub use parse::{parse_addrs, parse_routes, parse_rules};

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

#[cfg(test)]
mod tests;
