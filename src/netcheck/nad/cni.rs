//! A NAD's `spec.config`: the CNI configuration (a single plugin or a `plugins` chain)
//! as JSON text inside the YAML. Checked as strict JSON (what the CNI runtime reads), then
//! read again for positions; typed into the plugin chain and the whereabouts IPAM of the
//! main plugin. Also the known keys of the plugins this lint reasons about, and the
//! corrected configuration with `sbr` chained after the main plugin.

use super::ipv4::{parse_ip, Cidr};
use crate::config::limits::{CNI_CONFIG_MAX_BYTES, CNI_MAX_PLUGINS};
#[cfg(test)]
use crate::yaml::Style;
use crate::yaml::{self, Node, Pos};
use serde_json::{json, Value};

mod keys;
pub use keys::{is_known, known_keys, suggest, CONFLIST_KEYS, IP_RANGE_KEYS, WHEREABOUTS_KEYS};

/// The CNI specification versions a `cniVersion` may name; anything else is `nad-cni-version`.
pub const CNI_VERSIONS: &[&str] = &[
    "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

/// serde_json's message without its trailing " at line L column C".
pub fn json_msg(e: &serde_json::Error) -> String {
    let m = e.to_string();
    match m.rfind(" at line ") {
        Some(i) => m[..i].to_string(),
        None => m,
    }
}

/// One plugin of the configuration's chain.
#[derive(Clone, Debug)]
pub struct Plugin {
    /// Its `type` (`sriov`, `sbr`, `tuning`, ...); empty when not given.
    pub ty: String,
    /// The plugin's JSON object, with positions relative to the configuration text.
    pub node: Node,
    /// `spec.config.plugins[0]`, or `spec.config` for a single-plugin configuration.
    pub path: String,
}

/// A NAD's `spec.config`, parsed: valid JSON, the same text with positions, and the plugin chain.
#[derive(Clone, Debug)]
pub struct Config {
    /// Positions relative to the configuration text.
    pub root: Node,
    /// The configuration as strict JSON, as the CNI runtime reads it.
    pub json: Value,
    /// True for a plugin list (`plugins` present), false for a single-plugin configuration.
    pub conflist: bool,
    /// The plugins in chain order; one for a single-plugin configuration.
    pub plugins: Vec<Plugin>,
}

/// Why `spec.config` could not be read as a CNI configuration.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigError {
    /// The NAD has no `spec.config`.
    Missing,
    /// `spec.config` is not a string (a mapping or list written in YAML instead of JSON text).
    NotString {
        /// Where the non-string value is in the file.
        pos: Pos,
    },
    /// `spec.config` is not valid JSON.
    Json {
        /// The line inside the configuration text, counted from 1 (serde_json's position).
        line: usize,
        /// The column inside the configuration text, counted from 1.
        col: usize,
        /// serde_json's message, without its position.
        msg: String,
    },
    /// `spec.config` is valid JSON but not an object.
    NotObject,
    /// `spec.config` is beyond a limit of `config::limits`; it is not read further.
    TooLarge(Oversize),
}

/// Which limit a `spec.config` is beyond.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Oversize {
    /// More than `CNI_CONFIG_MAX_BYTES` of text: its length in bytes.
    Bytes(usize),
    /// More than `CNI_MAX_PLUGINS` plugins: how many.
    Plugins(usize),
    /// Beyond a bound of the YAML reader (nesting, values): its words.
    Reader(String),
}

/// Parses a NAD's `spec.config` (`None`: the NAD has none) as strict JSON and types its plugin
/// chain.
pub fn parse(node: Option<&Node>) -> Result<Config, ConfigError> {
    let node = node.ok_or(ConfigError::Missing)?;
    let text = node.str().ok_or(ConfigError::NotString { pos: node.pos })?;
    if text.len() > CNI_CONFIG_MAX_BYTES {
        return Err(ConfigError::TooLarge(Oversize::Bytes(text.len())));
    }
    let json: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json {
        line: e.line(),
        col: e.column(),
        msg: json_msg(&e),
    })?;
    if !json.is_object() {
        return Err(ConfigError::NotObject);
    }
    if let Some(n) = json.get("plugins").and_then(Value::as_array).map(Vec::len) {
        if n > CNI_MAX_PLUGINS {
            return Err(ConfigError::TooLarge(Oversize::Plugins(n)));
        }
    }
    let root = yaml::load(text)
        .map_err(|e| ConfigError::TooLarge(Oversize::Reader(e.msg)))?
        .into_iter()
        .next()
        .ok_or(ConfigError::NotObject)?;
    let ty = |n: &Node| n.get("type").and_then(Node::text).unwrap_or_default();
    let (conflist, plugins) = match root.get("plugins").and_then(Node::seq) {
        Some(list) => (
            true,
            list.iter()
                .enumerate()
                .map(|(i, n)| Plugin {
                    ty: ty(n),
                    node: n.clone(),
                    path: format!("spec.config.plugins[{i}]"),
                })
                .collect(),
        ),
        None => (
            false,
            vec![Plugin {
                ty: ty(&root),
                node: root.clone(),
                path: "spec.config".into(),
            }],
        ),
    };
    Ok(Config {
        root,
        json,
        conflist,
        plugins,
    })
}

/// How positions inside the configuration text map to the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigMap {
    /// Where the text's line 1, column 1 is.
    pub line: usize,
    /// Where the text's column 1 is, on the line `line`.
    pub col: usize,
    /// A literal block (`config: |`): each line of the text is a line of the file, at
    /// `col`; otherwise only the text's first line maps (a one-line scalar written as is).
    pub block: bool,
}

/// Where a position inside the configuration text is in the file, when that is exact.
pub fn file_pos(map: Option<ConfigMap>, p: Pos) -> Option<Pos> {
    let m = map?;
    if m.block {
        Some(Pos {
            line: m.line + p.line - 1,
            col: m.col + p.col - 1,
        })
    } else if p.line == 1 {
        Some(Pos {
            line: m.line,
            col: m.col + p.col - 1,
        })
    } else {
        None
    }
}

/// One `range` of whereabouts (the top-level one or an `ipRanges` entry).
#[derive(Clone, Debug)]
pub struct Range {
    /// The range as a CIDR (for the start-end form, the `/LEN` network of the start address).
    pub cidr: Cidr,
    /// `198.51.100.0/24`, or the start-end form `198.51.100.10-198.51.100.50/24`.
    pub text: String,
    /// The field path, e.g. `spec.config.plugins[0].ipam.range` or `...ipam.ipRanges[1].range`.
    pub path: String,
    /// Where the range's value is in the configuration text.
    pub pos: Pos,
    /// The first address to hand out (`range_start`, or the start of the `a-b/len` form) as
    /// (address, field path, position); `None`: the range's first host.
    pub start: Option<(u32, String, Pos)>,
    /// The last address to hand out (`range_end`, or the end of the `a-b/len` form) as (address,
    /// field path, position); `None`: the range's last host.
    pub end: Option<(u32, String, Pos)>,
    /// The `exclude` entries of this range as (CIDR, field path, position): addresses whereabouts
    /// never hands out.
    pub excludes: Vec<(Cidr, String, Pos)>,
}

/// A plugin's `ipam` section, as far as whereabouts reads it.
#[derive(Clone, Debug, Default)]
pub struct Ipam {
    /// The IPAM plugin's `type` (`whereabouts`, `host-local`, ...); empty when not given.
    pub ty: String,
    /// The IPv4 ranges: the top-level `range` first, then each `ipRanges` entry.
    pub ranges: Vec<Range>,
    /// `ipam.gateway` as (address, field path, position); `None` when not given or not IPv4.
    pub gateway: Option<(u32, String, Pos)>,
    /// `ipam.network_name`: pools of the same range with different names are separate; `None` when
    /// not given.
    pub network_name: Option<String>,
    /// Values that are not what they should be: (path, position, what).
    pub bad: Vec<(String, Pos, String)>,
    /// IPv6 ranges (not checked).
    pub v6: usize,
}

fn addr_field(
    n: &Node,
    key: &str,
    path: &str,
    bad: &mut Vec<(String, Pos, String)>,
) -> Option<(u32, String, Pos)> {
    let v = n.get(key)?;
    let p = format!("{path}.{key}");
    let t = v.text().unwrap_or_default();
    match parse_ip(&t) {
        Some(a) => Some((a, p, v.pos)),
        None => {
            if !t.contains(':') {
                bad.push((p, v.pos, format!("{t:?} is not an IPv4 address")));
            }
            None
        }
    }
}

fn range_of(n: &Node, path: &str, ipam: &mut Ipam) {
    let Some(r) = n.get("range") else {
        return;
    };
    let text = r.text().unwrap_or_default();
    let rp = format!("{path}.range");
    if text.contains(':') {
        ipam.v6 += 1;
        return;
    }
    // `a-b/len`: start and end inside the CIDR of len
    let (cidr, start, end) = match text.split_once('-') {
        Some((a, rest)) => match rest.split_once('/') {
            Some((b, l)) => {
                let c = parse_ip(a).zip(l.parse::<u8>().ok().filter(|l| *l <= 32));
                match (c, parse_ip(b)) {
                    (Some((a, l)), Some(b)) => (Some(Cidr::new(a, l)), Some(a), Some(b)),
                    _ => (None, None, None),
                }
            }
            None => (None, None, None),
        },
        None => (
            Cidr::parse(&text).filter(|_| text.contains('/')),
            None,
            None,
        ),
    };
    let Some(cidr) = cidr else {
        ipam.bad.push((
            rp,
            r.pos,
            format!("{text:?} is not an IPv4 range (A.B.C.D/LEN)"),
        ));
        return;
    };
    let mut range = Range {
        cidr,
        text: text.clone(),
        path: rp.clone(),
        pos: r.pos,
        start: start.map(|a| (a, rp.clone(), r.pos)),
        end: end.map(|b| (b, rp.clone(), r.pos)),
        excludes: Vec::new(),
    };
    if let Some(s) = addr_field(n, "range_start", path, &mut ipam.bad) {
        range.start = Some(s);
    }
    if let Some(e) = addr_field(n, "range_end", path, &mut ipam.bad) {
        range.end = Some(e);
    }
    if let Some(ex) = n.get("exclude") {
        match ex.seq() {
            Some(list) => {
                for (i, x) in list.iter().enumerate() {
                    let t = x.text().unwrap_or_default();
                    let p = format!("{path}.exclude[{i}]");
                    match Cidr::parse(&t) {
                        Some(c) => range.excludes.push((c, p, x.pos)),
                        None if t.contains(':') => {}
                        None => ipam
                            .bad
                            .push((p, x.pos, format!("{t:?} is not an IPv4 CIDR"))),
                    }
                }
            }
            None => ipam.bad.push((
                format!("{path}.exclude"),
                ex.pos,
                "exclude is a list of CIDRs".into(),
            )),
        }
    }
    if path.contains("ipRanges") {
        if let Some(g) = addr_field(n, "gateway", path, &mut ipam.bad) {
            ipam.gateway.get_or_insert(g);
        }
    }
    ipam.ranges.push(range);
}

/// The whereabouts IPAM of a plugin, when it has one.
pub fn ipam_of(p: &Plugin) -> Option<Ipam> {
    let n = p.node.get("ipam")?;
    let path = format!("{}.ipam", p.path);
    let mut ipam = Ipam {
        ty: n.get("type").and_then(Node::text).unwrap_or_default(),
        network_name: n.get("network_name").and_then(Node::text),
        ..Default::default()
    };
    ipam.gateway = addr_field(n, "gateway", &path, &mut ipam.bad);
    range_of(n, &path, &mut ipam);
    if let Some(list) = n.get("ipRanges").and_then(Node::seq) {
        for (i, r) in list.iter().enumerate() {
            range_of(r, &format!("{path}.ipRanges[{i}]"), &mut ipam);
        }
    }
    Some(ipam)
}

/// The configuration with `sbr` right after the main plugin (and nowhere else), as a
/// plugin list; a single-plugin configuration becomes a list with the same name.
pub fn with_sbr(cfg: &Config) -> Value {
    let mut top = cfg.json.clone();
    let Value::Object(obj) = &mut top else {
        return top;
    };
    let mut plugins: Vec<Value> = if cfg.conflist {
        obj.get("plugins")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    } else {
        let mut p = obj.clone();
        p.remove("cniVersion");
        p.remove("name");
        vec![Value::Object(p)]
    };
    let is_sbr = |v: &Value| v.get("type").and_then(Value::as_str) == Some("sbr");
    let old_sbr = plugins.iter().find(|v| is_sbr(v)).cloned();
    plugins.retain(|v| !is_sbr(v));
    let sbr = old_sbr.unwrap_or_else(|| json!({"type": "sbr"}));
    let at = usize::from(!plugins.is_empty());
    plugins.insert(at, sbr);
    if cfg.conflist {
        obj.insert("plugins".into(), Value::Array(plugins));
        top
    } else {
        let mut out = serde_json::Map::new();
        out.insert(
            "cniVersion".into(),
            obj.get("cniVersion")
                .cloned()
                .unwrap_or_else(|| json!("0.3.1")),
        );
        if let Some(n) = obj.get("name") {
            out.insert("name".into(), n.clone());
        }
        out.insert("plugins".into(), Value::Array(plugins));
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests;
