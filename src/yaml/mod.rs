//! The one YAML reader of rocetap, for every YAML input (NADs, policies and nodes files of
//! `netcheck --nad`, the agent's `--config`): YAML (and JSON, which is YAML's flow style)
//! into a small tree that remembers where every value started (line and column), built
//! from yaml-rust2's event stream. Hostile input is bounded here, by the limits of
//! `config::limits`: more than `YAML_MAX_BYTES` of text, nesting deeper than
//! `YAML_MAX_DEPTH` and more than `YAML_MAX_VALUES` values per input (aliases count with
//! the size of what they expand to, so a billion-laughs document stops after that many
//! values, not after a billion) are errors, never a stack overflow or an exhausted
//! memory. The tree is built with an explicit stack, never by recursion.
//! Scalars are typed with the YAML 1.2 core schema (plain `true`, `8`, `null`; quoted ones
//! stay strings); `<<` merge keys are honoured, as Kubernetes' YAML reader does.

use std::collections::HashSet;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::Marker;

mod loader;
use loader::Loader;

use crate::config::limits::{YAML_MAX_BYTES, YAML_MAX_DEPTH, YAML_TEXT_MAX_BYTES};

/// 1-based line and column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// The line, counted from 1.
    pub line: usize,
    /// The column, counted from 1 (in characters).
    pub col: usize,
}

/// How a string scalar was written (decides how positions inside it map to the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// A plain scalar (`name: value`): the text is the file's text.
    Plain,
    /// A single- or double-quoted scalar: escapes and folding make offsets inside it inexact.
    Quoted,
    /// A literal block (`|`): each line of the value is a line of the file.
    Literal,
    /// A folded block (`>`): lines are joined, so offsets inside it are inexact.
    Folded,
    /// Mappings, sequences.
    Collection,
}

/// A YAML value, typed with the core schema.
#[derive(Clone, Debug)]
pub enum Value {
    /// `null`, `~` or nothing.
    Null,
    /// Plain `true` or `false`.
    Bool(bool),
    /// A plain integer that fits an `i64`.
    Int(i64),
    /// A plain floating-point number.
    Float(f64),
    /// A string: any quoted scalar, or a plain one that is no other type.
    Str(String),
    /// A sequence, in order.
    Seq(Vec<Node>),
    /// Keys are strings (scalar keys as written), in document order.
    Map(Vec<(String, Pos, Node)>),
}

/// A value and where it was written.
#[derive(Clone, Debug)]
pub struct Node {
    /// Where the value starts in the input.
    pub pos: Pos,
    /// How it was written.
    pub style: Style,
    /// The value itself.
    pub value: Value,
    /// Values in this subtree, itself included (what an alias to it costs).
    pub size: usize,
}

impl Node {
    /// The value of `key` in a mapping; `None` when this is no mapping or lacks the key.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(m) => m.iter().find(|(k, _, _)| k == key).map(|(_, _, v)| v),
            _ => None,
        }
    }
    /// The position of `key` itself in a mapping.
    pub fn key_pos(&self, key: &str) -> Option<Pos> {
        match &self.value {
            Value::Map(m) => m.iter().find(|(k, _, _)| k == key).map(|(_, p, _)| *p),
            _ => None,
        }
    }
    /// The string of a string scalar; `None` for any other value (a plain `8` is an int here, see
    /// [`Node::text`]).
    pub fn str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    /// A string, or a number / bool written plainly, as text.
    pub fn text(&self) -> Option<String> {
        match &self.value {
            Value::Str(s) => Some(s.clone()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(f) => Some(f.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
    /// An integer, or a string holding one (`"8"`); `None` otherwise.
    pub fn int(&self) -> Option<i64> {
        match &self.value {
            Value::Int(i) => Some(*i),
            Value::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
    /// A boolean; `None` for anything else (the string `"true"` too).
    pub fn bool(&self) -> Option<bool> {
        match &self.value {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    /// The items of a sequence; `None` when this is no sequence.
    pub fn seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(v) => Some(v),
            _ => None,
        }
    }
    /// The entries of a mapping as (key, key's position, value); `None` when this is no mapping.
    pub fn map(&self) -> Option<&[(String, Pos, Node)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }
    /// True for `null`.
    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }
}

/// Why an input is not YAML this reader accepts (syntax, or a bound exceeded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YamlError {
    /// Where the problem is, when the parser says.
    pub pos: Option<Pos>,
    /// What is wrong.
    pub msg: String,
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pos {
            Some(p) => write!(f, "line {} column {}: {}", p.line, p.col, self.msg),
            None => f.write_str(&self.msg),
        }
    }
}

fn pos(m: &Marker) -> Pos {
    Pos {
        line: m.line(),
        col: m.col() + 1,
    }
}

fn err(p: Pos, msg: impl Into<String>) -> YamlError {
    YamlError {
        pos: Some(p),
        msg: msg.into(),
    }
}

enum Frame {
    Seq {
        pos: Pos,
        anchor: usize,
        items: Vec<Node>,
        size: usize,
    },
    Map {
        pos: Pos,
        anchor: usize,
        entries: Vec<(String, Pos, Node)>,
        key: Option<(String, Pos)>,
        size: usize,
    },
}

/// The core schema's reading of a plain scalar.
fn resolve(s: &str) -> Value {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = s.parse::<i64>() {
            return Value::Int(i);
        }
    }
    if let Some(h) = s.strip_prefix("0x") {
        if let Ok(i) = i64::from_str_radix(h, 16) {
            return Value::Int(i);
        }
    }
    if let Some(o) = s.strip_prefix("0o") {
        if let Ok(i) = i64::from_str_radix(o, 8) {
            return Value::Int(i);
        }
    }
    let looks_float = s
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && s.bytes().any(|b| b.is_ascii_digit());
    if looks_float {
        if let Ok(f) = s.parse::<f64>() {
            return Value::Float(f);
        }
    }
    Value::Str(s.to_string())
}

fn key_text(n: &Node) -> Result<String, YamlError> {
    match &n.value {
        Value::Str(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Int(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        _ => Err(err(n.pos, "a mapping key that is not a scalar")),
    }
}

/// Resolves `<<` merge keys: the merged mappings' entries come after, and never replace,
/// the mapping's own keys. Duplicate keys are an error (as in `kubectl apply`). Keys are
/// looked up in hash sets: a mapping of many keys costs linear time, not quadratic.
fn finish_map(entries: Vec<(String, Pos, Node)>) -> Result<Vec<(String, Pos, Node)>, YamlError> {
    let mut own: Vec<(String, Pos, Node)> = Vec::with_capacity(entries.len());
    let mut own_keys: HashSet<String> = HashSet::with_capacity(entries.len());
    let mut merged: Vec<(String, Pos, Node)> = Vec::new();
    let mut merged_keys: HashSet<String> = HashSet::new();
    for (k, p, v) in entries {
        if k == "<<" && !matches!(v.style, Style::Quoted) {
            let sources: Vec<Node> = match v.value {
                Value::Map(_) => vec![v],
                Value::Seq(items) => items,
                _ => return Err(err(p, "a `<<` merge key needs a mapping or a list of them")),
            };
            for s in sources {
                let Value::Map(m) = s.value else {
                    return Err(err(
                        s.pos,
                        "a `<<` merge key needs a mapping or a list of them",
                    ));
                };
                for e in m {
                    if merged_keys.insert(e.0.clone()) {
                        merged.push(e);
                    }
                }
            }
            continue;
        }
        if !own_keys.insert(k.clone()) {
            return Err(err(p, format!("duplicate key {k:?}")));
        }
        own.push((k, p, v));
    }
    for e in merged {
        if !own_keys.contains(&e.0) {
            own.push(e);
        }
    }
    Ok(own)
}

/// JSON (a flow collection starting the document) with `--- ` put before the line it
/// starts on, and that line's number. yaml-rust2 keeps every token of a flow collection
/// that may be a simple key (`[a, b]: c`) until it closes, ~150 bytes a token: a 10 MB
/// JSON file took 520 MiB. After `---` on its line no simple key may start, so the
/// tokens flow through; JSON has no such keys, so nothing else changes (columns on that
/// line are shifted back by the 4 characters). `None` for any other text.
fn json_as_document(text: &str) -> Option<(String, usize)> {
    let first = text.find(|c: char| !c.is_whitespace())?;
    if !matches!(text.as_bytes()[first], b'{' | b'[')
        || serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()
    {
        return None;
    }
    let start = text[..first].rfind('\n').map_or(0, |i| i + 1);
    let line = text[..start].matches('\n').count() + 1;
    let mut out = String::with_capacity(text.len() + 4);
    out.push_str(&text[..start]);
    out.push_str("--- ");
    out.push_str(&text[start..]);
    Some((out, line))
}

/// Every document of `text`, in order; empty documents are left out.
pub fn load(text: &str) -> Result<Vec<Node>, YamlError> {
    if text.len() > YAML_MAX_BYTES {
        return Err(YamlError {
            pos: None,
            msg: format!("larger than {} MiB", YAML_MAX_BYTES >> 20),
        });
    }
    let doc = json_as_document(text);
    if doc.is_none() && text.len() > YAML_TEXT_MAX_BYTES {
        return Err(YamlError {
            pos: None,
            msg: format!(
                "YAML larger than {} MiB (give it as JSON, `-o json`, which is read up to {} MiB)",
                YAML_TEXT_MAX_BYTES >> 20,
                YAML_MAX_BYTES >> 20
            ),
        });
    }
    let (text, shifted) = match &doc {
        Some((t, line)) => (t.as_str(), *line),
        None => (text, 0),
    };
    let at = |m: &Marker| {
        let mut p = pos(m);
        if p.line == shifted && p.col > 4 {
            p.col -= 4;
        }
        p
    };
    let mut parser = Parser::new_from_str(text);
    let mut l = Loader::default();
    loop {
        let (ev, mark) = parser.next_token().map_err(|e| YamlError {
            pos: Some(at(e.marker())),
            // the scanner's own bound on flow nesting (deeper than ours): said as ours
            msg: if e.info() == "recursion limit exceeded" {
                format!("nested deeper than {YAML_MAX_DEPTH} levels")
            } else {
                e.info().to_string()
            },
        })?;
        let p = at(&mark);
        let done: Option<(Node, usize)> = match ev {
            Event::StreamEnd => break,
            Event::StreamStart | Event::Nothing => None,
            Event::DocumentStart => {
                l.anchors.clear();
                None
            }
            Event::DocumentEnd => {
                l.end_document();
                None
            }
            Event::Alias(id) => Some((l.alias(id, p)?, 0)),
            Event::Scalar(s, style, anchor, tag) => {
                let is_str_tag = tag.as_ref().is_some_and(|t| t.suffix == "str");
                Some((l.scalar(s, style, is_str_tag, p)?, anchor))
            }
            Event::SequenceStart(anchor, _) => {
                l.open(true, anchor, p)?;
                None
            }
            Event::MappingStart(anchor, _) => {
                l.open(false, anchor, p)?;
                None
            }
            Event::SequenceEnd | Event::MappingEnd => Some(l.close(p)?),
        };
        if let Some((node, anchor)) = done {
            l.attach(node, anchor)?;
        }
    }
    l.end_document();
    Ok(l.docs)
}

#[cfg(test)]
mod tests;
