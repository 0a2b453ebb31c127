//! The `analyze` document written field by field ([`ObjectWriter`]), its long lists
//! rendered on two threads.

use super::{Error, Pretty};
use crate::analysis::report::Connection;
use crate::analysis::FlowSummary;
use serde::Serialize;
use std::io::Write;

/// A JSON object written field by field, byte for byte as [`to_writer_pretty`](super::to_writer_pretty) writes a
/// struct with those fields in that order; a long list can be written on two threads
/// ([`ObjectWriter::list_field`]).
pub struct ObjectWriter<W: Write> {
    s: Pretty<W>,
    first: bool,
}

impl<W: Write> ObjectWriter<W> {
    /// Starts the object (`{`) on `out`.
    pub fn new(out: W) -> Self {
        let mut s = Pretty::new(out);
        s.buf.push(b'{');
        s.depth = 1;
        ObjectWriter { s, first: true }
    }

    /// Writes `"key": value`.
    pub fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        self.s.field_key(&mut self.first, key);
        value.serialize(&mut self.s)?;
        self.s.maybe_flush()
    }

    /// Writes `"key": [items...]` as [`ObjectWriter::field`] would, the items rendered in
    /// blocks on two threads when there are many (`super::par`).
    pub fn list_field<T: Serialize + Sync>(&mut self, key: &str, items: &[T]) -> Result<(), Error> {
        self.list(key, items, |depth, first, block, buf| {
            let mut p = Pretty {
                out: std::io::sink(),
                buf: std::mem::take(buf),
                depth,
                flush_at: usize::MAX, // the block stays whole in `buf`
            };
            let mut none_yet = first == 0;
            for item in block {
                p.item(&mut none_yet);
                item.serialize(&mut p)?;
            }
            *buf = p.buf;
            Ok(())
        })
    }

    /// [`ObjectWriter::list_field`] of the report's flows, written without serde
    /// (`super::flow`); the same bytes.
    pub fn flows_field(&mut self, key: &str, flows: &[FlowSummary]) -> Result<(), Error> {
        self.direct_list_field(key, flows, super::flow::write_flow)
    }

    /// [`ObjectWriter::list_field`] of the report's connections, written without serde
    /// (`super::connection`); the same bytes.
    pub fn connections_field(&mut self, key: &str, conns: &[Connection]) -> Result<(), Error> {
        self.direct_list_field(key, conns, super::connection::write_connection)
    }

    /// [`ObjectWriter::list_field`] with each item written by `write(buf, depth, item)`
    /// instead of serde, down to [`super::flow::MAX_DEPTH`] (serde below that).
    fn direct_list_field<T: Serialize + Sync>(
        &mut self,
        key: &str,
        items: &[T],
        write: fn(&mut Vec<u8>, usize, &T),
    ) -> Result<(), Error> {
        if self.s.depth + 1 > super::flow::MAX_DEPTH {
            return self.list_field(key, items);
        }
        self.list(key, items, |depth, first, block, buf| {
            for (i, item) in block.iter().enumerate() {
                if first + i > 0 {
                    buf.push(b',');
                }
                buf.push(b'\n');
                buf.extend_from_slice(&super::INDENT[..2 * depth]);
                write(buf, depth, item);
            }
            Ok(())
        })
    }

    /// `"key": [...]`, the items rendered in blocks by `render(depth, first, block,
    /// buf)` (items at nesting `depth`; `first`: the block's first item's index) on two
    /// threads when there are many, and written in order.
    fn list<T: Sync>(
        &mut self,
        key: &str,
        items: &[T],
        render: impl Fn(usize, usize, &[T], &mut Vec<u8>) -> Result<(), Error> + Sync,
    ) -> Result<(), Error> {
        self.s.field_key(&mut self.first, key);
        if items.is_empty() {
            self.s.buf.extend_from_slice(b"[]");
            return Ok(());
        }
        self.s.buf.push(b'[');
        self.s.flush()?; // what comes before; the blocks go straight to the writer
        let depth = self.s.depth + 1;
        let out = &mut self.s.out;
        crate::report::par::in_blocks(
            items,
            crate::report::par::BLOCK,
            |first, block, buf| render(depth, first, block, buf),
            |bytes| out.write_all(bytes).map_err(Error::io),
        )?;
        self.s.newline();
        self.s.buf.push(b']');
        Ok(())
    }

    /// Ends the object (`}`) and writes what is still buffered.
    pub fn finish(mut self) -> Result<(), Error> {
        self.s.depth = 0;
        if !self.first {
            self.s.newline();
        }
        self.s.buf.push(b'}');
        self.s.flush()
    }
}
