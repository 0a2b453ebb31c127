//! The inputs of the NAD lint, read and typed: NetworkAttachmentDefinitions and
//! SriovNetworkNodePolicies from YAML or JSON files (several documents, `List` kinds such as
//! `kubectl get net-attach-def -A -o json` prints, `-` for standard input), and the nodes'
//! PF facts from a nodes file or from `ip -j` dumps (`--from DIR`). Every input is bounded
//! (`MAX_INPUT` bytes, UTF-8, and the YAML bounds of `yaml`); anything unreadable is a
//! `LoadError` naming the file, line and column. Objects of other kinds are counted and
//! left alone, so a directory of mixed manifests can be linted as it is.

use super::ipv4::{parse_ip, Cidr};
use crate::config::limits::YAML_MAX_BYTES;
use crate::yaml::{self, Node, Pos, Style, Value};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest input file read, in bytes: the YAML reader's limit (`config::limits`); a
/// larger file is refused rather than read into memory.
const MAX_INPUT: u64 = YAML_MAX_BYTES as u64;

/// Why an input could not be read or understood, in one line that names the file (and, where known,
/// line and column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// kind, namespace and name of a Kubernetes object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjRef {
    /// The object's `kind`, e.g. `NetworkAttachmentDefinition`.
    pub kind: String,
    /// `metadata.namespace` as written (`default` when the object gives none).
    pub namespace: String,
    /// `metadata.name`; `(unnamed, document N)` when the object has none.
    pub name: String,
}

impl std::fmt::Display for ObjRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// A place in an input file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    /// The file as named on the command line (`-` is standard input).
    pub file: String,
    /// The line, counted from 1.
    pub line: usize,
    /// The column, counted from 1.
    pub col: usize,
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// A NetworkAttachmentDefinition as the lint needs it: who it is, where it was read, its resource
/// annotation and its `spec.config`.
#[derive(Clone, Debug)]
pub struct Nad {
    /// Its kind, namespace and name.
    pub obj: ObjRef,
    /// The file it was read from, as named on the command line.
    pub file: String,
    /// Where the object starts in that file.
    pub pos: Pos,
    /// `k8s.v1.cni.cncf.io/resourceName`, e.g. `nvidia.com/rdma_rail0`.
    pub resource: Option<String>,
    /// Where the resource annotation's value is in the file; `None` without the annotation.
    pub resource_pos: Option<Pos>,
    /// `spec.config` as written (a string holding JSON, normally).
    pub config: Option<Node>,
    /// How positions inside `spec.config`'s text map to the file, where they do exactly.
    pub config_map: Option<super::cni::ConfigMap>,
}

/// One entry of a policy's `nicSelector.pfNames`: `ens1f0`, or `ens1f0#0-7` for part of its VFs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PfName {
    /// The PF's netdev name, without the `#first-last` suffix.
    pub name: String,
    /// `#first-last` VF range, when given.
    pub vfs: Option<(u32, u32)>,
}

/// A SriovNetworkNodePolicy: the resource it defines and the PFs whose VFs back it.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Its kind, namespace and name.
    pub obj: ObjRef,
    /// `spec.resourceName` as written (without the `nvidia.com/` prefix a NAD's annotation
    /// carries).
    pub resource: String,
    /// `spec.nicSelector.pfNames`: the PFs whose VFs the resource hands out.
    pub pf_names: Vec<PfName>,
    /// `spec.numVfs`: VFs created on each PF; `None` when not given.
    pub num_vfs: Option<u32>,
    /// `spec.mtu`: the MTU set on the VFs (and PF) in bytes; `None` when not given.
    pub mtu: Option<u32>,
    /// `spec.isRdma`: the VFs are RDMA devices; `None` when not given.
    pub is_rdma: Option<bool>,
}

impl Policy {
    /// VFs this policy hands out per PF: the `#a-b` range, else `numVfs`.
    pub fn vfs_per_pf(&self, pf: &PfName) -> Option<u32> {
        match pf.vfs {
            Some((a, b)) if b >= a => Some(b - a + 1),
            _ => self.num_vfs,
        }
    }
}

/// A PF on one node: its netdev name, IPv4 addresses and MTU, plus the routes through it.
#[derive(Clone, Debug, Default)]
pub struct Pf {
    /// The PF's netdev name, e.g. `ens1f0`.
    pub name: String,
    /// Its IPv4 addresses as (address, prefix length), the address a host-order `u32`.
    pub addrs: Vec<(u32, u8)>,
    /// Its MTU in bytes; `None` when the facts do not give one.
    pub mtu: Option<u32>,
    /// Next hops of routes through this PF (the ToR's address, normally).
    pub gateways: Vec<u32>,
    /// Destinations reached through a gateway on this PF (routed peers).
    pub routed: Vec<Cidr>,
}

/// What the lint knows about one node: its name and its PFs.
#[derive(Clone, Debug, Default)]
pub struct NodeFacts {
    /// The node's name (from the nodes file, or the name of its `--from` directory).
    pub name: String,
    /// The node's PFs, in the order given.
    pub pfs: Vec<Pf>,
}

impl NodeFacts {
    /// The PF named `name` on this node, if any.
    pub fn pf(&self, name: &str) -> Option<&Pf> {
        self.pfs.iter().find(|p| p.name == name)
    }
}

/// Everything the lint reads, typed: the objects of every file, and the nodes' PF facts.
#[derive(Default, Debug)]
pub struct Inputs {
    /// The object files read, in order, as named on the command line.
    pub files: Vec<String>,
    /// The NetworkAttachmentDefinitions, in file and document order.
    pub nads: Vec<Nad>,
    /// The SriovNetworkNodePolicies, in file and document order.
    pub policies: Vec<Policy>,
    /// Objects of other kinds, left alone.
    pub ignored: usize,
    /// The nodes' facts, from `--nodes FILE` and/or `--from DIR`.
    pub nodes: Vec<NodeFacts>,
    /// True when any node facts were given (even a file listing no PF): the subnet, exclude and
    /// capacity checks run only then.
    pub have_nodes: bool,
}

/// Reads a file (`-`: standard input) whole, refusing more than `MAX_INPUT` bytes and
/// anything that is not UTF-8.
pub fn read_text(p: &Path) -> Result<(String, String), LoadError> {
    let name = if p.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        p.display().to_string()
    };
    let mut buf = Vec::new();
    let r = if p.as_os_str() == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_INPUT + 1)
            .read_to_end(&mut buf)
    } else {
        std::fs::File::open(p).and_then(|f| f.take(MAX_INPUT + 1).read_to_end(&mut buf))
    };
    r.map_err(|e| LoadError(format!("reading {name}: {e}")))?;
    if buf.len() as u64 > MAX_INPUT {
        return Err(LoadError(format!(
            "reading {name}: larger than {} MiB",
            MAX_INPUT >> 20
        )));
    }
    let text = String::from_utf8(buf).map_err(|e| {
        LoadError(format!(
            "reading {name}: not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    if let Some(i) = text.find('\0') {
        return Err(LoadError(format!(
            "reading {name}: not text (a NUL byte at offset {i})"
        )));
    }
    Ok((name, text))
}

fn parse_docs(name: &str, text: &str) -> Result<Vec<Node>, LoadError> {
    // Text meant as JSON (`[`, or `{` with a quoted key first) is checked as JSON first: its
    // messages are the clearer ones, and kubectl reads such text as JSON (a trailing comma
    // is an error there). Other text, a flow-style YAML object too (`{kind: ...}`), is
    // YAML; the YAML reader then reads both with positions. A nesting too deep for
    // serde_json gets the YAML reader's message (its limit, in our words).
    let t = text.trim_start();
    let meant_json = t.starts_with('[')
        || t.strip_prefix('{')
            .is_some_and(|r| r.trim_start().starts_with(['"', '}']));
    if meant_json {
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
            if !e.to_string().starts_with("recursion limit") {
                return Err(LoadError(format!(
                    "{name}:{}:{}: not valid JSON: {}",
                    e.line(),
                    e.column(),
                    super::cni::json_msg(&e)
                )));
            }
        }
    }
    yaml::load(text).map_err(|e| match e.pos {
        Some(p) => LoadError(format!(
            "{name}:{}:{}: not valid YAML: {}",
            p.line, p.col, e.msg
        )),
        None => LoadError(format!("{name}: not valid YAML: {}", e.msg)),
    })
}

/// Where an object starts: its first key (a block mapping's own mark is after it).
fn first_key(d: &Node) -> Pos {
    d.map()
        .and_then(|m| m.iter().map(|(_, p, _)| *p).min_by_key(|p| (p.line, p.col)))
        .unwrap_or(d.pos)
}

fn s_at<'a>(n: &'a Node, path: &[&str]) -> Option<&'a Node> {
    let mut cur = n;
    for k in path {
        cur = cur.get(k)?;
    }
    Some(cur)
}

/// Where `spec.config`'s text sits in the file: a literal block line by line (its
/// position is that of its first content line); a one-line plain or quoted scalar only
/// when written without escapes (else columns inside it would be off).
fn config_map(src: &Source, c: &Node) -> Option<super::cni::ConfigMap> {
    let v = c.str()?;
    let line = src.line(c.pos.line)?;
    match c.style {
        Style::Literal => Some(super::cni::ConfigMap {
            line: c.pos.line,
            col: line.len() - line.trim_start_matches(' ').len() + 1,
            block: true,
        }),
        Style::Quoted | Style::Plain if !v.contains('\n') => {
            let skip = usize::from(c.style == Style::Quoted);
            let body = src.rest_of_line_at(c.pos.line, c.pos.col + skip)?;
            body.starts_with(v).then_some(super::cni::ConfigMap {
                line: c.pos.line,
                col: c.pos.col + skip,
                block: false,
            })
        }
        _ => None,
    }
}

/// An input's text with where each of its lines starts, found once: looking a line up
/// by counting from the top for every NAD would grow with the square of the file.
struct Source<'a> {
    text: &'a str,
    starts: Vec<usize>,
    /// The last column found: (line, column, its byte offset in the text). The objects of
    /// a file come in order, so finding the next column from here is linear in the file
    /// even when it is one line (`kubectl -o json` piped through `jq -c`).
    cursor: std::cell::Cell<(usize, usize, usize)>,
}

impl<'a> Source<'a> {
    fn new(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Source {
            text,
            starts,
            cursor: std::cell::Cell::new((0, 0, 0)),
        }
    }
    /// Line `line` from column `col` (both counted from 1, the column in characters) to
    /// its end; `None` past either end.
    fn rest_of_line_at(&self, line: usize, col: usize) -> Option<&'a str> {
        let l = self.line(line)?;
        let base = self.starts[line - 1];
        let (cl, cc, cb) = self.cursor.get();
        let (mut c, mut b) = if cl == line && cc <= col {
            (cc, cb - base)
        } else {
            (1, 0)
        };
        let mut it = l[b..].char_indices();
        while c < col {
            let (_, ch) = it.next()?;
            b += ch.len_utf8();
            c += 1;
        }
        self.cursor.set((line, c, base + b));
        Some(&l[b..])
    }
    /// Line `n` (counted from 1) without its line break, as `str::lines` gives it.
    fn line(&self, n: usize) -> Option<&'a str> {
        let a = *self.starts.get(n.checked_sub(1)?)?;
        let b = self.starts.get(n).map_or(self.text.len(), |e| e - 1);
        (a < self.text.len() || n == 1).then(|| {
            let l = &self.text[a..b.max(a)];
            l.strip_suffix('\r').unwrap_or(l)
        })
    }
}

/// Reads NAD / policy objects from `paths` into `inp`.
pub fn load_objects(paths: &[PathBuf], inp: &mut Inputs) -> Result<(), LoadError> {
    for p in paths {
        let (name, text) = read_text(p)?;
        load_text(&name, &text, inp)?;
    }
    Ok(())
}

/// Reads the NAD / policy objects of `text` (read already, from the file `name`) into `inp`.
pub fn load_text(name: &str, text: &str, inp: &mut Inputs) -> Result<(), LoadError> {
    let docs = parse_docs(name, text)?;
    inp.files.push(name.to_string());
    let src = Source::new(text);
    for (i, d) in docs.iter().enumerate() {
        object(name, &src, d, i + 1, inp)?;
    }
    Ok(())
}

fn object(
    name: &str,
    text: &Source,
    d: &Node,
    doc: usize,
    inp: &mut Inputs,
) -> Result<(), LoadError> {
    let here = |p: Pos| format!("{name}:{}:{}", p.line, p.col);
    if d.map().is_none() {
        return Err(LoadError(format!(
            "{}: document {doc} is not a Kubernetes object (not a mapping)",
            here(d.pos)
        )));
    }
    let Some(kind) = d.get("kind").and_then(Node::str) else {
        return Err(LoadError(format!(
            "{}: document {doc} is not a Kubernetes object (no kind)",
            here(d.pos)
        )));
    };
    if kind == "List" || kind.ends_with("List") {
        let items = d
            .get("items")
            .and_then(Node::seq)
            .ok_or_else(|| LoadError(format!("{}: a {kind} without items", here(d.pos))))?;
        for it in items {
            // items of a typed list may leave out their kind
            if it.get("kind").is_none() && kind.len() > 4 && kind != "List" {
                let mut it = it.clone();
                if let Value::Map(m) = &mut it.value {
                    m.push((
                        "kind".into(),
                        it.pos,
                        Node {
                            pos: it.pos,
                            style: Style::Plain,
                            value: Value::Str(kind.trim_end_matches("List").to_string()),
                            size: 1,
                        },
                    ));
                }
                object(name, text, &it, doc, inp)?;
            } else {
                object(name, text, it, doc, inp)?;
            }
        }
        return Ok(());
    }
    let meta = d.get("metadata");
    let obj = ObjRef {
        kind: kind.to_string(),
        namespace: meta
            .and_then(|m| m.get("namespace"))
            .and_then(Node::text)
            .unwrap_or_else(|| "default".into()),
        name: meta
            .and_then(|m| m.get("name"))
            .and_then(Node::text)
            .unwrap_or_else(|| format!("(unnamed, document {doc})")),
    };
    match kind {
        "NetworkAttachmentDefinition" => {
            let ann = s_at(d, &["metadata", "annotations"]);
            let res = ann.and_then(|a| a.get("k8s.v1.cni.cncf.io/resourceName"));
            let config = s_at(d, &["spec", "config"]).cloned();
            let config_map = config.as_ref().and_then(|c| config_map(text, c));
            inp.nads.push(Nad {
                obj,
                file: name.to_string(),
                pos: first_key(d),
                resource: res.and_then(Node::text),
                resource_pos: res.map(|r| r.pos),
                config,
                config_map,
            });
        }
        "SriovNetworkNodePolicy" => {
            let spec = d.get("spec");
            let g = |k: &str| spec.and_then(|s| s.get(k));
            let resource = g("resourceName").and_then(Node::text).ok_or_else(|| {
                LoadError(format!(
                    "{}: {} has no spec.resourceName",
                    here(d.pos),
                    crate::report::safe::term(&obj.to_string())
                ))
            })?;
            let pf_names = g("nicSelector")
                .and_then(|n| n.get("pfNames"))
                .and_then(Node::seq)
                .unwrap_or_default()
                .iter()
                .filter_map(Node::text)
                .map(|s| pf_name(&s))
                .collect();
            let num = |k: &str| g(k).and_then(Node::int).and_then(|v| u32::try_from(v).ok());
            inp.policies.push(Policy {
                obj,
                resource,
                pf_names,
                num_vfs: num("numVfs"),
                mtu: num("mtu"),
                is_rdma: g("isRdma").and_then(Node::bool),
            });
        }
        _ => inp.ignored += 1,
    }
    Ok(())
}

/// `ens1f0#0-7` → name and VF range.
pub fn pf_name(s: &str) -> PfName {
    match s.split_once('#') {
        Some((n, r)) => {
            let vfs = r
                .split_once('-')
                .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
            let vfs = vfs.or_else(|| r.trim().parse().ok().map(|a| (a, a)));
            PfName {
                name: n.to_string(),
                vfs,
            }
        }
        None => PfName {
            name: s.to_string(),
            vfs: None,
        },
    }
}

/// The nodes file:
///
/// ```yaml
/// nodes:
///   node1:
///     ens1f0: {address: 198.51.100.1/24, mtu: 9000, gateway: 198.51.100.254, routes: [198.18.0.0/15]}
/// ```
pub fn load_nodes_file(p: &Path, inp: &mut Inputs) -> Result<(), LoadError> {
    let (name, text) = read_text(p)?;
    load_nodes_text(&name, &text, inp)
}

/// [`load_nodes_file`] of text read already, from the file `name`.
pub fn load_nodes_text(name: &str, text: &str, inp: &mut Inputs) -> Result<(), LoadError> {
    let docs = parse_docs(name, text)?;
    let bad = |pos: Pos, what: &str| LoadError(format!("{name}:{}:{}: {what}", pos.line, pos.col));
    let Some(doc) = docs.first() else {
        return Err(LoadError(format!("{name}: empty nodes file")));
    };
    let nodes = doc.get("nodes").and_then(Node::map).ok_or_else(|| {
        bad(
            doc.pos,
            "a nodes file needs `nodes:` mapping node names to their PFs",
        )
    })?;
    for (node, _, pfs) in nodes {
        let mut nf = NodeFacts {
            name: node.clone(),
            pfs: Vec::new(),
        };
        let pfs = pfs
            .map()
            .ok_or_else(|| bad(pfs.pos, "a node maps PF names to {address, mtu}"))?;
        for (pf, _, v) in pfs {
            let mut f = Pf {
                name: pf.clone(),
                ..Default::default()
            };
            for (k, kp, x) in v
                .map()
                .ok_or_else(|| bad(v.pos, "a PF is {address: A/LEN, mtu: N}"))?
            {
                match k.as_str() {
                    "address" | "addresses" => {
                        let list: Vec<&Node> = match x.seq() {
                            Some(s) => s.iter().collect(),
                            None => vec![x],
                        };
                        for a in list {
                            let t = a.text().unwrap_or_default();
                            let c = t
                                .split_once('/')
                                .and_then(|(ad, l)| {
                                    Some((
                                        parse_ip(ad)?,
                                        l.parse::<u8>().ok().filter(|l| *l <= 32)?,
                                    ))
                                })
                                .ok_or_else(|| {
                                    bad(a.pos, &format!("{t:?} is not an IPv4 address/prefix"))
                                })?;
                            f.addrs.push(c);
                        }
                    }
                    "mtu" => {
                        f.mtu = Some(
                            x.int()
                                .and_then(|m| u32::try_from(m).ok())
                                .ok_or_else(|| bad(x.pos, "mtu is a number"))?,
                        );
                    }
                    "gateway" => {
                        let t = x.text().unwrap_or_default();
                        f.gateways.push(
                            parse_ip(&t).ok_or_else(|| {
                                bad(x.pos, &format!("{t:?} is not an IPv4 address"))
                            })?,
                        );
                    }
                    "routes" => {
                        for r in x
                            .seq()
                            .ok_or_else(|| bad(x.pos, "routes is a list of CIDRs"))?
                        {
                            let t = r.text().unwrap_or_default();
                            f.routed.push(Cidr::parse(&t).ok_or_else(|| {
                                bad(r.pos, &format!("{t:?} is not an IPv4 CIDR"))
                            })?);
                        }
                    }
                    other => {
                        return Err(bad(
                            *kp,
                            &format!("unknown PF key {other:?} (address, mtu, gateway, routes)"),
                        ))
                    }
                }
            }
            nf.pfs.push(f);
        }
        inp.nodes.push(nf);
    }
    inp.have_nodes = true;
    Ok(())
}

/// Node facts from `ip -j` dumps: DIR itself when it holds addr.json, else each of its
/// subdirectories that does (one node each, named after the directory).
pub fn load_node_dirs(dirs: &[PathBuf], inp: &mut Inputs) -> Result<(), LoadError> {
    for d in dirs {
        let mut list = Vec::new();
        if d.join("addr.json").is_file() {
            list.push(d.clone());
        } else if d.is_dir() {
            let mut subs: Vec<PathBuf> = std::fs::read_dir(d)
                .map_err(|e| LoadError(format!("reading {}: {e}", d.display())))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.join("addr.json").is_file())
                .collect();
            subs.sort();
            list = subs;
        }
        if list.is_empty() {
            return Err(LoadError(format!(
                "{}: no addr.json in it or in its subdirectories",
                d.display()
            )));
        }
        for dir in list {
            let st = crate::netcheck::load_json::load_dir(&dir)
                .map_err(|e| LoadError(format!("reading node state: {e}")))?;
            let name = dir.file_name().map_or_else(
                || dir.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            inp.nodes.push(facts_of(name, &st));
        }
    }
    inp.have_nodes = true;
    Ok(())
}

fn facts_of(name: String, st: &crate::netcheck::model::NetState) -> NodeFacts {
    use std::net::IpAddr;
    let mut nf = NodeFacts {
        name,
        pfs: Vec::new(),
    };
    for l in st.links.iter().filter(|l| l.name != "lo") {
        let mut pf = Pf {
            name: l.name.clone(),
            mtu: l.mtu,
            ..Default::default()
        };
        for a in st.addrs_of(&l.name) {
            if let IpAddr::V4(v4) = a.addr {
                if a.scope == crate::netcheck::model::scope::UNIVERSE {
                    pf.addrs.push((u32::from(v4), a.prefix_len));
                }
            }
        }
        for r in st
            .routes
            .iter()
            .filter(|r| r.table == crate::netcheck::model::RT_TABLE_MAIN)
        {
            for nh in &r.nexthops {
                if let (Some(IpAddr::V4(g)), Some(dev)) = (nh.gateway, &nh.dev) {
                    if dev == &l.name {
                        pf.gateways.push(u32::from(g));
                        if let IpAddr::V4(d) = r.dst.addr {
                            pf.routed.push(Cidr::new(u32::from(d), r.dst.len));
                        }
                    }
                }
            }
        }
        nf.pfs.push(pf);
    }
    nf
}
