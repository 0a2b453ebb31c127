//! The event-stream loader: yaml-rust2's events into `Node`s with an explicit stack,
//! counting values (aliases by what they expand to) against the limits.

use super::{err, finish_map, key_text, resolve, Frame, Node, Pos, Style, Value, YamlError};
use crate::config::limits::{YAML_MAX_ALIAS_VALUES, YAML_MAX_DEPTH, YAML_MAX_VALUES};
use std::collections::HashMap;
use yaml_rust2::scanner::TScalarStyle;

/// The state of [`load`]: the open collections, the anchors of this document, the
/// values counted so far (aliases expanded) and the documents done.
#[derive(Default)]
pub(super) struct Loader {
    pub(super) stack: Vec<Frame>,
    pub(super) anchors: HashMap<usize, Node>,
    total: usize,
    /// Values copied for anchors and aliases so far.
    aliased: usize,
    root: Option<Node>,
    pub(super) docs: Vec<Node>,
}

impl Loader {
    fn count(&mut self, n: usize, p: Pos, what: &str) -> Result<(), YamlError> {
        self.total = self.total.saturating_add(n);
        if self.total > YAML_MAX_VALUES {
            return Err(err(p, format!("more than {YAML_MAX_VALUES} values{what}")));
        }
        Ok(())
    }

    /// `n` more values copied for anchors and aliases; past `YAML_MAX_ALIAS_VALUES` an error.
    fn copied(&mut self, n: usize, p: Pos) -> Result<(), YamlError> {
        self.aliased = self.aliased.saturating_add(n);
        if self.aliased > YAML_MAX_ALIAS_VALUES {
            return Err(err(
                p,
                format!("more than {YAML_MAX_ALIAS_VALUES} values after expanding aliases (an alias bomb?)"),
            ));
        }
        Ok(())
    }

    pub(super) fn end_document(&mut self) {
        if let Some(r) = self.root.take() {
            if !r.is_null() {
                self.docs.push(r);
            }
        }
    }

    /// A copy of the anchored node, counted again (an alias bomb is stopped here).
    pub(super) fn alias(&mut self, id: usize, p: Pos) -> Result<Node, YamlError> {
        let size = self
            .anchors
            .get(&id)
            .ok_or_else(|| err(p, "an alias to an unknown anchor"))?
            .size;
        self.copied(size, p)?;
        let mut n = self.anchors[&id].clone();
        self.count(size, p, " after expanding aliases (an alias bomb?)")?;
        n.pos = p;
        Ok(n)
    }

    pub(super) fn scalar(
        &mut self,
        s: String,
        style: TScalarStyle,
        is_str_tag: bool,
        p: Pos,
    ) -> Result<Node, YamlError> {
        self.count(1, p, "")?;
        let (value, st) = match style {
            TScalarStyle::Plain if !is_str_tag => (resolve(&s), Style::Plain),
            TScalarStyle::Plain => (Value::Str(s), Style::Plain),
            TScalarStyle::Literal => (Value::Str(s), Style::Literal),
            TScalarStyle::Folded => (Value::Str(s), Style::Folded),
            _ => (Value::Str(s), Style::Quoted),
        };
        Ok(Node {
            pos: p,
            style: st,
            value,
            size: 1,
        })
    }

    /// A sequence (`seq`) or mapping starts.
    pub(super) fn open(&mut self, seq: bool, anchor: usize, p: Pos) -> Result<(), YamlError> {
        self.count(1, p, "")?;
        if self.stack.len() >= YAML_MAX_DEPTH {
            return Err(err(
                p,
                format!("nested deeper than {YAML_MAX_DEPTH} levels"),
            ));
        }
        self.stack.push(if seq {
            Frame::Seq {
                pos: p,
                anchor,
                items: Vec::new(),
                size: 1,
            }
        } else {
            Frame::Map {
                pos: p,
                anchor,
                entries: Vec::new(),
                key: None,
                size: 1,
            }
        });
        Ok(())
    }

    /// The innermost collection ends: its node and anchor.
    pub(super) fn close(&mut self, p: Pos) -> Result<(Node, usize), YamlError> {
        match self.stack.pop() {
            Some(Frame::Seq {
                pos,
                anchor,
                items,
                size,
            }) => Ok((
                Node {
                    pos,
                    style: Style::Collection,
                    value: Value::Seq(items),
                    size,
                },
                anchor,
            )),
            Some(Frame::Map {
                pos,
                anchor,
                entries,
                size,
                ..
            }) => Ok((
                Node {
                    pos,
                    style: Style::Collection,
                    value: Value::Map(finish_map(entries)?),
                    size,
                },
                anchor,
            )),
            None => Err(err(p, "unbalanced document")),
        }
    }

    /// A finished node goes under its anchor and into its parent (or becomes the root).
    pub(super) fn attach(&mut self, node: Node, anchor: usize) -> Result<(), YamlError> {
        if anchor != 0 {
            // the anchor keeps a copy: charged like an alias, or nested anchors over one
            // big value would copy it once per level
            self.copied(node.size, node.pos)?;
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, size, .. }) => {
                *size = size.saturating_add(node.size);
                items.push(node);
            }
            Some(Frame::Map {
                entries, key, size, ..
            }) => {
                *size = size.saturating_add(node.size);
                match key.take() {
                    None => *key = Some((key_text(&node)?, node.pos)),
                    Some((k, kp)) => entries.push((k, kp, node)),
                }
            }
        }
        Ok(())
    }
}
