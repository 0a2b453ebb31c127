//! `--topology FILE`: where each address sits in the fleet, so the per-peer series
//! (`peers.rs`) carry `local_node`/`peer_node`, `local_tor`/`peer_tor`, `local_rail`/
//! `peer_rail` and `local_switch`/`peer_switch` labels and the rules in `deploy/prometheus/`
//! can rank node pairs and ToRs. The file (YAML or JSON, read by the one YAML reader with
//! its limits, and the limits of `config::limits`) is a list of prefixes:
//!
//! ```yaml
//! prefixes:
//!   - prefix: 198.51.100.0/30   # IPv4 or IPv6, a bare address is a /32 or /128
//!     node: node-a              # any of node, tor, rail, switch; all optional
//!     tor: tor-1
//!     rail: rail-0
//! ```
//!
//! An address takes the names of the longest prefix holding it; a name a longer prefix
//! does not give is taken from the shorter ones holding it (so a rail's /16 can name the
//! rail and each node's /30 the node). An address no prefix holds has empty names.

use crate::config::limits::{TOPOLOGY_MAX_BYTES, TOPOLOGY_MAX_NAME, TOPOLOGY_MAX_PREFIXES};
use std::io::Read;
use std::net::IpAddr;
use std::path::Path;

/// The names a prefix can give, in label order.
pub const NAMES: [&str; 4] = ["node", "tor", "rail", "switch"];

/// One prefix and its names.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    v6: bool,
    net: u128,
    len: u8,
    names: [Option<String>; 4],
}

/// The prefixes of a topology file, longest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    entries: Vec<Entry>,
}

fn bits(a: IpAddr) -> (bool, u128) {
    match a {
        IpAddr::V4(v) => (false, u128::from(u32::from(v))),
        IpAddr::V6(v) => (true, u128::from(v)),
    }
}

fn mask(v6: bool, len: u8) -> u128 {
    let width = if v6 { 128 } else { 32 };
    if len == 0 {
        0
    } else {
        let m = u128::MAX << (width - u32::from(len));
        if v6 {
            m
        } else {
            m & u128::from(u32::MAX)
        }
    }
}

fn prefix(s: &str) -> Option<(bool, u128, u8)> {
    let (a, l) = match s.trim().split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (s.trim(), None),
    };
    let (v6, b) = bits(a.parse().ok()?);
    let width = if v6 { 128 } else { 32 };
    let len = match l {
        Some(l) => l.parse::<u8>().ok().filter(|l| u32::from(*l) <= width)?,
        None => width as u8,
    };
    Some((v6, b & mask(v6, len), len))
}

impl Topology {
    /// Reads and checks `path`; errors are one line, naming the file and the line.
    pub fn load(path: &Path) -> Result<Topology, String> {
        let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
        if !meta.is_file() {
            return Err("not a regular file".into());
        }
        let mut buf = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(TOPOLOGY_MAX_BYTES + 1).read_to_end(&mut buf))
            .map_err(|e| e.to_string())?;
        if buf.len() as u64 > TOPOLOGY_MAX_BYTES {
            return Err(format!(
                "more than {} MiB; a topology file is at most that",
                TOPOLOGY_MAX_BYTES >> 20
            ));
        }
        let text = String::from_utf8(buf).map_err(|e| {
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            )
        })?;
        Self::parse(&text)
    }

    /// [`Topology::load`] of text read already.
    pub fn parse(text: &str) -> Result<Topology, String> {
        let docs = crate::yaml::load(text).map_err(|e| format!("not YAML: {e}"))?;
        if docs.len() > 1 {
            return Err("more than one YAML document".into());
        }
        let Some(doc) = docs.first() else {
            return Err("empty: give `prefixes:` with a list of prefixes".into());
        };
        let Some(map) = doc.map() else {
            return Err(format!("line {}: expected a mapping", doc.pos.line));
        };
        let mut list = None;
        for (k, kp, v) in map {
            if k != "prefixes" {
                return Err(format!(
                    "line {}: unknown key '{}' (known: prefixes)",
                    kp.line,
                    crate::report::safe::term(k)
                ));
            }
            list = Some(
                v.seq()
                    .ok_or_else(|| format!("line {}: 'prefixes' must be a list", v.pos.line))?,
            );
        }
        let list = list.ok_or("no 'prefixes' key")?;
        if list.len() > TOPOLOGY_MAX_PREFIXES {
            return Err(format!(
                "{} prefixes; a topology holds at most {TOPOLOGY_MAX_PREFIXES}",
                list.len()
            ));
        }
        let mut entries = Vec::with_capacity(list.len());
        for item in list {
            let line = item.pos.line;
            let Some(m) = item.map() else {
                return Err(format!("line {line}: each prefix is a mapping"));
            };
            let mut e = Entry {
                v6: false,
                net: 0,
                len: 0,
                names: Default::default(),
            };
            let mut seen = false;
            for (k, kp, v) in m {
                let val = v.text().filter(|_| v.seq().is_none() && v.map().is_none());
                let Some(val) = val else {
                    return Err(format!("line {}: '{k}' must be a single value", kp.line));
                };
                if k == "prefix" {
                    let (v6, net, len) = prefix(&val).ok_or_else(|| {
                        format!(
                            "line {}: '{}' is not an IP prefix (ADDR/LEN)",
                            kp.line,
                            crate::report::safe::term(&val)
                        )
                    })?;
                    (e.v6, e.net, e.len, seen) = (v6, net, len, true);
                } else if let Some(i) = NAMES.iter().position(|n| n == k) {
                    if val.is_empty()
                        || val.chars().count() > TOPOLOGY_MAX_NAME
                        || val.chars().any(char::is_control)
                    {
                        return Err(format!(
                            "line {}: '{k}' must be 1 to {TOPOLOGY_MAX_NAME} printable characters",
                            kp.line
                        ));
                    }
                    e.names[i] = Some(val);
                } else {
                    return Err(format!(
                        "line {}: unknown key '{}' (known: prefix, {})",
                        kp.line,
                        crate::report::safe::term(k),
                        NAMES.join(", ")
                    ));
                }
            }
            if !seen {
                return Err(format!("line {line}: no 'prefix'"));
            }
            entries.push(e);
        }
        entries.sort_by_key(|e| std::cmp::Reverse(e.len));
        Ok(Topology { entries })
    }

    /// The names of `addr` (node, tor, rail, switch; empty where none is given).
    pub fn names(&self, addr: &str) -> [String; 4] {
        let mut out: [String; 4] = Default::default();
        let Ok(ip) = addr.parse::<IpAddr>() else {
            return out;
        };
        let (v6, b) = bits(ip);
        for e in &self.entries {
            if e.v6 != v6 || b & mask(v6, e.len) != e.net {
                continue;
            }
            for (o, n) in out.iter_mut().zip(&e.names) {
                if o.is_empty() {
                    if let Some(n) = n {
                        o.clone_from(n);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_names_and_shorter_ones_fill_in() {
        let t = Topology::parse(
            "prefixes:\n  - prefix: 198.51.100.0/24\n    rail: rail-0\n    tor: tor-x\n  - prefix: 198.51.100.0/30\n    node: a\n    tor: tor-1\n  - {prefix: '2001:db8::/64', node: six}\n",
        )
        .unwrap();
        assert_eq!(t.names("198.51.100.2"), ["a", "tor-1", "rail-0", ""]);
        assert_eq!(t.names("198.51.100.9"), ["", "tor-x", "rail-0", ""]);
        assert_eq!(t.names("2001:db8::7"), ["six", "", "", ""]);
        assert_eq!(t.names("203.0.113.1"), ["", "", "", ""]);
        assert_eq!(t.names("other"), ["", "", "", ""]);
    }

    #[test]
    fn bad_files_are_one_line_errors() {
        for (text, want) in [
            ("", "empty"),
            ("x: 1", "unknown key 'x'"),
            ("prefixes: 3", "must be a list"),
            ("prefixes:\n  - node: a", "no 'prefix'"),
            ("prefixes:\n  - prefix: 198.51.100.0/33", "not an IP prefix"),
            ("prefixes:\n  - prefix: nope", "not an IP prefix"),
            (
                "prefixes:\n  - prefix: 192.0.2.1\n    pod: x",
                "unknown key 'pod'",
            ),
            (
                "prefixes:\n  - prefix: 192.0.2.1\n    node: [a]",
                "single value",
            ),
            (
                "prefixes:\n  - prefix: 192.0.2.1\n    node: ''",
                "printable",
            ),
            ("[", "not YAML"),
        ] {
            let e = Topology::parse(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let many = format!(
            "prefixes:\n{}",
            "  - prefix: 192.0.2.1\n".repeat(TOPOLOGY_MAX_PREFIXES + 1)
        );
        assert!(Topology::parse(&many).unwrap_err().contains("at most"));
    }
}
