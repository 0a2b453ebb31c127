//! `rocetap analyze --format csv`: one row per flow, the columns of the JSON flow
//! objects flattened (`a.b` for nested keys, one `k=v;...` cell for the count maps),
//! written as the summaries serialize, with no document tree in between.

use crate::analysis::Report;
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Write};

mod key;

pub(super) fn csv_flows(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let Some((first, rest)) = r.flows.split_first() else {
        return out.flush();
    };
    // The first row names the columns.
    let mut cells = Cells::default();
    flow_row(&mut cells, first, true)?;
    let mut head = Vec::new();
    for (j, k) in cells.keys.iter().enumerate() {
        if j > 0 {
            head.push(b',');
        }
        let at = head.len();
        head.extend_from_slice(k);
        quote_from(&mut head, at);
    }
    head.push(b'\n');
    out.write_all(&head)?;
    out.write_all(&cells.row)?;
    // The rest in blocks, on two threads when there are many (`super::par`).
    super::par::in_blocks(
        rest,
        super::par::BLOCK,
        |_, block, buf| {
            let mut cells = Cells::default();
            for f in block {
                flow_row(&mut cells, f, false)?;
                buf.extend_from_slice(&cells.row);
            }
            Ok(())
        },
        |rows| out.write_all(rows),
    )?;
    out.flush()
}

/// Writes `f`'s row into `cells.row` (and with `header`, its column names into
/// `cells.keys`).
fn flow_row(cells: &mut Cells, f: &crate::analysis::FlowSummary, header: bool) -> io::Result<()> {
    cells.start(header);
    f.serialize(Flat { cells, depth: 0 })
        .map_err(io::Error::other)?;
    cells.end_row();
    Ok(())
}

/// Quotes the field that starts at `at` (the last one of `buf`) where CSV needs it — it
/// holds a comma, a double quote, CR or LF — doubling its quotes: what the `csv` crate's
/// writer does by default (QuoteStyle::Necessary), written here because a row is built
/// in one buffer as the summary serializes and the crate's per-field calls and second
/// buffer cost more than the serializing (16,384 flows x 99 columns).
fn quote_from(buf: &mut Vec<u8>, at: usize) {
    let needs = buf[at..]
        .iter()
        .any(|&b| matches!(b, b',' | b'"' | b'\r' | b'\n'));
    if !needs {
        return;
    }
    let field: Vec<u8> = buf.drain(at..).collect();
    buf.push(b'"');
    for b in field {
        if b == b'"' {
            buf.push(b'"');
        }
        buf.push(b);
    }
    buf.push(b'"');
}

/// One row, built in one buffer reused from row to row (a row allocates nothing once the
/// first has sized it): the cells written so far, the column names (collected for the
/// first row only, for the header) and the column path of the value being written.
#[derive(Default)]
struct Cells {
    row: Vec<u8>,
    /// Where the last cell starts in `row`.
    cell_at: usize,
    n: usize,
    keys: Vec<Vec<u8>>,
    header: bool,
    /// `a.b` of the current value, on the header row (after it, only `top_one` is kept);
    /// its parts end at `ends`.
    path: Vec<u8>,
    ends: Vec<usize>,
    /// Inside a one-cell map (`k=v;...`): whether a part was written yet.
    parts: Option<bool>,
    /// Key buffers of maps that ended, for the next ones (no allocation per row).
    spare_keys: Vec<Vec<u8>>,
    /// After the header: the top-level key being written has a one-cell map.
    top_one: bool,
}

impl Cells {
    fn start(&mut self, header: bool) {
        self.row.clear();
        self.cell_at = 0;
        self.n = 0;
        self.header = header;
        self.path.clear();
        self.ends.clear();
        self.parts = None;
        self.top_one = false;
    }

    /// Ends the row: its last cell, the line.
    fn end_row(&mut self) {
        if self.n > 0 {
            quote_from(&mut self.row, self.cell_at);
        }
        self.row.push(b'\n');
    }

    /// A new cell, empty, for the value at the current path.
    fn cell(&mut self) -> &mut Vec<u8> {
        if self.header {
            self.keys.push(self.path.clone());
        }
        if self.n > 0 {
            quote_from(&mut self.row, self.cell_at);
            self.row.push(b',');
        }
        self.cell_at = self.row.len();
        self.n += 1;
        &mut self.row
    }

    /// Where a value goes: a new cell, or the open `k=v;...` cell after its `k=`.
    fn out(&mut self) -> &mut Vec<u8> {
        if self.parts.is_some() {
            &mut self.row
        } else {
            self.cell()
        }
    }

    fn enter(&mut self, key: &[u8]) {
        self.ends.push(self.path.len());
        if self.header {
            if !self.path.is_empty() {
                self.path.push(b'.');
            }
            self.path.extend_from_slice(key);
        } else if self.ends.len() == 1 {
            // After the header only the top-level key matters: whether its map is one
            // cell (the path stays empty).
            self.top_one = one_cell(key);
        }
    }

    /// Whether a map here is one `k=v;...` cell.
    fn one_cell_here(&self) -> bool {
        if self.header {
            one_cell(&self.path)
        } else {
            !self.ends.is_empty() && self.top_one
        }
    }

    fn leave(&mut self) {
        let at = self.ends.pop().unwrap_or(0);
        self.path.truncate(at);
    }
}

/// Flattens a flow summary into its row as it serializes, with no `serde_json::Value`
/// in between: nested objects become `a.b` columns, the maps of counts (`opcodes`,
/// `rnr_timers`) one `k=v;...` cell, `null` an empty cell, strings as they are and
/// numbers as JSON writes them (the cells of the former Value-based writer, byte for
/// byte).
struct Flat<'a> {
    cells: &'a mut Cells,
    /// Nesting of maps and structs above this value.
    depth: usize,
}

/// Columns whose map is one `k=v;...` cell.
fn one_cell(path: &[u8]) -> bool {
    path == b"opcodes" || path == b"rnr_timers"
}

/// A value inside a one-cell map, or a sequence, as the JSON text of a `Value` shows it.
fn json_text<T: Serialize + ?Sized>(v: &T) -> Result<String, serde_json::Error> {
    Ok(match serde_json::to_value(v)? {
        Value::String(s) => s,
        other => other.to_string(),
    })
}

impl Flat<'_> {
    fn text(self, t: &[u8]) -> Result<(), serde_json::Error> {
        self.cells.out().extend_from_slice(t);
        Ok(())
    }
    fn int(self, v: impl itoa::Integer) -> Result<(), serde_json::Error> {
        let mut b = itoa::Buffer::new();
        self.text(b.format(v).as_bytes())
    }
    /// `null`: an empty cell (inside a `k=v` cell, JSON's `null`).
    fn null(self) -> Result<(), serde_json::Error> {
        let t: &[u8] = if self.cells.parts.is_some() {
            b"null"
        } else {
            b""
        };
        self.text(t)
    }
}

/// Collects a compound the flattener does not split (a sequence) as one JSON cell.
struct FlatSeq<'a> {
    flat: Flat<'a>,
    items: Vec<Value>,
}

/// An object's fields (a column each, `a.b` when nested) or a one-cell map's parts.
struct FlatMap<'a> {
    cells: &'a mut Cells,
    depth: usize,
    /// Path parts above it before a struct variant entered its name.
    base: usize,
    /// This map is a one-cell map whose cell it opened.
    one: bool,
    /// The text of the key of the entry whose value comes next.
    key: Vec<u8>,
}

macro_rules! ints {
    ($($f:ident: $t:ty),*) => {
        $(fn $f(self, v: $t) -> Result<(), Self::Error> {
            self.int(v)
        })*
    };
}

impl<'a> serde::Serializer for Flat<'a> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = FlatSeq<'a>;
    type SerializeTuple = FlatSeq<'a>;
    type SerializeTupleStruct = FlatSeq<'a>;
    type SerializeTupleVariant = FlatSeq<'a>;
    type SerializeMap = FlatMap<'a>;
    type SerializeStruct = FlatMap<'a>;
    type SerializeStructVariant = FlatMap<'a>;

    ints!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64);

    fn serialize_bool(self, v: bool) -> Result<(), Self::Error> {
        self.text(if v { b"true" } else { b"false" })
    }
    fn serialize_f32(self, v: f32) -> Result<(), Self::Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Self::Error> {
        // A `Value` holds no NaN or infinity: they were null.
        if v.is_finite() {
            serde_json::to_writer(self.cells.out(), &v)
        } else {
            self.null()
        }
    }
    fn serialize_char(self, v: char) -> Result<(), Self::Error> {
        self.text(v.encode_utf8(&mut [0; 4]).as_bytes())
    }
    fn serialize_str(self, v: &str) -> Result<(), Self::Error> {
        self.text(v.as_bytes())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Self::Error> {
        serde_json::to_writer(self.cells.out(), v)
    }
    fn serialize_none(self) -> Result<(), Self::Error> {
        self.null()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Self::Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Self::Error> {
        self.null()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Self::Error> {
        self.null()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Self::Error> {
        self.text(variant.as_bytes())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Self::Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Self::Error> {
        if self.cells.parts.is_some() {
            return nested_in_cell();
        }
        self.cells.enter(variant.as_bytes());
        v.serialize(Flat {
            cells: &mut *self.cells,
            depth: self.depth + 1,
        })?;
        self.cells.leave();
        Ok(())
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<FlatSeq<'a>, Self::Error> {
        if self.cells.parts.is_some() {
            return nested_in_cell();
        }
        Ok(FlatSeq {
            flat: self,
            items: Vec::with_capacity(len.unwrap_or(0)),
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<FlatSeq<'a>, Self::Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<FlatSeq<'a>, Self::Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<FlatSeq<'a>, Self::Error> {
        if self.cells.parts.is_some() {
            return nested_in_cell();
        }
        // The sequence's one cell is named after the variant.
        self.cells.enter(variant.as_bytes());
        self.serialize_seq(Some(len))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<FlatMap<'a>, Self::Error> {
        if self.cells.parts.is_some() {
            return nested_in_cell();
        }
        let one = self.cells.one_cell_here();
        if one {
            self.cells.cell();
            self.cells.parts = Some(false);
        }
        let key = self.cells.spare_keys.pop().unwrap_or_default();
        Ok(FlatMap {
            cells: self.cells,
            depth: self.depth,
            base: self.depth,
            one,
            key,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<FlatMap<'a>, Self::Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<FlatMap<'a>, Self::Error> {
        if self.cells.parts.is_some() {
            return nested_in_cell();
        }
        self.cells.enter(variant.as_bytes());
        let base = self.depth;
        let mut m = Flat {
            cells: self.cells,
            depth: base + 1,
        }
        .serialize_map(Some(len))?;
        m.base = base;
        Ok(m)
    }
}

/// A one-cell map of counts holds scalars only: anything else is an error (the report
/// fails visibly), never a cell silently wrong.
fn nested_in_cell<T>() -> Result<T, serde_json::Error> {
    Err(serde::ser::Error::custom(
        "a CSV count cell (k=v;...) cannot hold a nested value",
    ))
}

impl FlatSeq<'_> {
    fn push<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), serde_json::Error> {
        self.items.push(serde_json::to_value(v)?);
        Ok(())
    }
    fn done(self) -> Result<(), serde_json::Error> {
        let depth = self.flat.depth;
        let cells = self.flat.cells;
        serde_json::to_writer(cells.cell(), &Value::Array(self.items))?;
        // A tuple variant entered its name (a plain sequence did not).
        if cells.ends.len() > depth {
            cells.leave();
        }
        Ok(())
    }
}

macro_rules! seq_impls {
    ($($tr:ident :: $m:ident),*) => {
        $(impl serde::ser::$tr for FlatSeq<'_> {
            type Ok = ();
            type Error = serde_json::Error;
            fn $m<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
                self.push(v)
            }
            fn end(self) -> Result<(), Self::Error> {
                self.done()
            }
        })*
    };
}
seq_impls!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl FlatMap<'_> {
    fn entry<T: Serialize + ?Sized>(&mut self, key: &[u8], v: &T) -> Result<(), serde_json::Error> {
        if self.one {
            let first = self.cells.parts == Some(false);
            self.cells.parts = Some(true);
            let c = self.cells.out();
            if !first {
                c.push(b';');
            }
            c.extend_from_slice(key);
            c.push(b'=');
            return v.serialize(Flat {
                cells: &mut *self.cells,
                depth: self.depth,
            });
        }
        self.cells.enter(key);
        v.serialize(Flat {
            cells: &mut *self.cells,
            depth: self.depth + 1,
        })?;
        self.cells.leave();
        Ok(())
    }
    fn done(self) -> Result<(), serde_json::Error> {
        if self.one {
            self.cells.parts = None;
        }
        // A struct variant entered its name.
        if self.cells.ends.len() > self.base {
            self.cells.leave();
        }
        self.cells.spare_keys.push(self.key);
        Ok(())
    }
}

impl serde::ser::SerializeMap for FlatMap<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Self::Error> {
        // Keys are names and numbers (`#[serde(flatten)]` fields, the count maps): their
        // text without JSON's quotes, in the reused buffer; one JSON would have to escape
        // (or anything else) as the text of its `Value`.
        self.key.clear();
        if !key::key_text(&mut self.key, k) {
            self.key.clear();
            self.key.extend_from_slice(json_text(k)?.as_bytes());
        }
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        let key = std::mem::take(&mut self.key);
        let done = self.entry(&key, v);
        self.key = key;
        done?;
        Ok(())
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

macro_rules! struct_impls {
    ($($tr:ident),*) => {
        $(impl serde::ser::$tr for FlatMap<'_> {
            type Ok = ();
            type Error = serde_json::Error;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Result<(), Self::Error> {
                self.entry(key.as_bytes(), v)
            }
            fn end(self) -> Result<(), Self::Error> {
                self.done()
            }
        })*
    };
}
struct_impls!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    /// Fields quoted exactly as the `csv` crate's writer quotes them.
    #[test]
    fn quoting_matches_the_csv_crate() {
        let fields = [
            "plain",
            "",
            "a,b",
            "say \"hi\"",
            "two\nlines",
            "cr\r",
            "198.51.100.7",
            "x=1;y=2",
            "\"",
            ",",
            " lead",
            "é",
        ];
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(fields).unwrap();
        let want = w.into_inner().unwrap();
        let mut got = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                got.push(b',');
            }
            let at = got.len();
            got.extend_from_slice(f.as_bytes());
            super::quote_from(&mut got, at);
        }
        got.push(b'\n');
        assert_eq!(
            String::from_utf8(got).unwrap(),
            String::from_utf8(want).unwrap()
        );
    }
}
