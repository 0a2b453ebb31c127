//! The one writer of the `rocetap.analyze/1` document: serde_json's serializer (its
//! escapes, its number formatting, `null` for a non-finite float) over the report's own
//! `Serialize` impls, in serde_json's pretty layout (two-space indent, `"key": value`).
//! The CSV rows take their values from the same impls (`super::csv`).
//!
//! What is not `serde_json::to_writer_pretty` is only the order of work: the document is
//! written field by field ([`ObjectWriter`]) so that its long lists (thousands of flows
//! and connections on a busy node) render in blocks on two threads (`super::par`), each
//! block into its own buffer with the nesting it sits at (`Indented`); the bytes are
//! those of `to_writer_pretty` on a struct with the same fields in the same order.

use serde::Serialize;
use serde_json::ser::{Formatter, Serializer};
use serde_json::Error;
use std::io::{self, Write};

/// The buffer goes to the writer once it holds this much.
const FLUSH_AT: usize = 1 << 16;

/// A newline and 64 spaces: the indentation of a depth is sliced out of it.
const NL: &[u8] = b"\n                                                                ";

/// Writes a newline and the indentation of nesting `depth` (two spaces a level).
fn newline<W: ?Sized + Write>(w: &mut W, depth: usize) -> io::Result<()> {
    let mut n = 1 + 2 * depth;
    w.write_all(&NL[..n.min(NL.len())])?;
    n = n.saturating_sub(NL.len());
    while n > 0 {
        let k = n.min(NL.len() - 1);
        w.write_all(&NL[1..=k])?;
        n -= k;
    }
    Ok(())
}

/// serde_json's `PrettyFormatter` (two-space indent) for a value that sits at nesting
/// `depth` of the document: the same whitespace, each line indented `depth` levels more.
/// (serde_json's own formatter always starts at depth 0.)
pub(super) struct Indented {
    depth: usize,
    has_value: bool,
}

impl Indented {
    /// The formatter of a value at nesting `depth`.
    pub(super) fn at(depth: usize) -> Self {
        Indented {
            depth,
            has_value: false,
        }
    }
}

impl Formatter for Indented {
    #[inline]
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(b"[")
    }
    #[inline]
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            newline(w, self.depth)?;
        }
        w.write_all(b"]")
    }
    #[inline]
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        newline(w, self.depth)
    }
    #[inline]
    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    #[inline]
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(b"{")
    }
    #[inline]
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            newline(w, self.depth)?;
        }
        w.write_all(b"}")
    }
    #[inline]
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        newline(w, self.depth)
    }
    #[inline]
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
    #[inline]
    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Writes `value` into `buf` as pretty JSON that sits at nesting `depth`.
fn write_at<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    depth: usize,
    value: &T,
) -> Result<(), Error> {
    value.serialize(&mut Serializer::with_formatter(buf, Indented::at(depth)))
}

/// A JSON object written field by field, byte for byte as `serde_json::to_writer_pretty`
/// writes a struct with those fields in that order; a long list can be written on two
/// threads ([`ObjectWriter::list_field`]).
pub struct ObjectWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    first: bool,
}

impl<W: Write> ObjectWriter<W> {
    /// Starts the object (`{`) on `out`.
    pub fn new(out: W) -> Self {
        let mut buf = Vec::with_capacity(FLUSH_AT + 4096);
        buf.push(b'{');
        ObjectWriter {
            out,
            buf,
            first: true,
        }
    }

    /// `,` (unless first), newline, indentation, `"key": `.
    fn key(&mut self, key: &str) -> Result<(), Error> {
        if !std::mem::take(&mut self.first) {
            self.buf.push(b',');
        }
        newline(&mut self.buf, 1).map_err(Error::io)?;
        serde_json::to_writer(&mut self.buf, key)?;
        self.buf.extend_from_slice(b": ");
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Error> {
        self.out.write_all(&self.buf).map_err(Error::io)?;
        self.buf.clear();
        Ok(())
    }

    /// Writes `"key": value`.
    pub fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        self.key(key)?;
        write_at(&mut self.buf, 1, value)?;
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes `"key": [items...]` as [`ObjectWriter::field`] would, the items rendered in
    /// blocks on two threads when there are many (`super::par`) and written in order.
    pub fn list_field<T: Serialize + Sync>(&mut self, key: &str, items: &[T]) -> Result<(), Error> {
        self.key(key)?;
        if items.is_empty() {
            self.buf.extend_from_slice(b"[]");
            return Ok(());
        }
        self.buf.push(b'[');
        self.flush()?; // what comes before; the blocks go straight to the writer
        let out = &mut self.out;
        super::par::in_blocks(
            items,
            super::par::BLOCK,
            |first, block, buf| {
                for (i, item) in block.iter().enumerate() {
                    if first + i > 0 {
                        buf.push(b',');
                    }
                    newline(buf, 2).map_err(Error::io)?;
                    write_at(buf, 2, item)?;
                }
                Ok(())
            },
            |bytes| out.write_all(bytes).map_err(Error::io),
        )?;
        newline(&mut self.buf, 1).map_err(Error::io)?;
        self.buf.push(b']');
        Ok(())
    }

    /// Ends the object (`}`) and writes what is still buffered.
    pub fn finish(mut self) -> Result<(), Error> {
        if !self.first {
            self.buf.push(b'\n');
        }
        self.buf.push(b'}');
        self.flush()
    }
}

#[cfg(test)]
mod tests;
