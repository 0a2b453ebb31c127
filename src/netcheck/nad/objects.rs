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

mod nodes;
mod types;
pub use nodes::{load_node_dirs, load_nodes_file, load_nodes_text};
pub use types::*;

/// The largest input file read, in bytes: the YAML reader's limit (`config::limits`); a
/// larger file is refused rather than read into memory.
const MAX_INPUT: u64 = YAML_MAX_BYTES as u64;

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
