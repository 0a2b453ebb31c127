//! `rocetap analyze --format csv`: one row per flow, the columns of the JSON flow
//! objects flattened (`a.b` for nested keys, one `k=v;...` cell for the count maps),
//! written as the summaries serialize, with no document tree in between.

use crate::analysis::Report;
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Write};

pub(super) fn csv_flows(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    let mut cells: Vec<(String, String)> = Vec::new();
    for (i, f) in r.flows.iter().enumerate() {
        cells.clear();
        f.serialize(Flat {
            prefix: String::new(),
            out: &mut cells,
        })
        .map_err(io::Error::other)?;
        if i == 0 {
            w.write_record(cells.iter().map(|(k, _)| k.as_str()))
                .map_err(io::Error::other)?;
        }
        w.write_record(cells.iter().map(|(_, c)| c.as_str()))
            .map_err(io::Error::other)?;
    }
    w.flush()
}

/// Flattens a flow summary into (column, cell) pairs as it serializes, with no
/// `serde_json::Value` in between: nested objects become `a.b` columns, the maps of
/// counts (`opcodes`, `rnr_timers`) one `k=v;...` cell, `null` an empty cell, strings
/// as they are and numbers as JSON writes them (the cells of the former Value-based
/// writer, byte for byte).
struct Flat<'a> {
    prefix: String,
    out: &'a mut Vec<(String, String)>,
}

/// Columns whose map is one `k=v;...` cell.
fn one_cell(prefix: &str) -> bool {
    prefix == "opcodes" || prefix == "rnr_timers"
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// A map key or a value inside a one-cell map, as the JSON text of a `Value` shows it.
fn json_text<T: Serialize + ?Sized>(v: &T) -> Result<String, serde_json::Error> {
    Ok(match serde_json::to_value(v)? {
        Value::String(s) => s,
        other => other.to_string(),
    })
}

impl<'a> Flat<'a> {
    fn cell(self, c: String) -> Result<(), serde_json::Error> {
        self.out.push((self.prefix, c));
        Ok(())
    }
    fn json<T: Serialize>(self, v: T) -> Result<(), serde_json::Error> {
        let c = serde_json::to_string(&v)?;
        self.cell(c)
    }
}

/// Collects a compound the flattener does not split (a sequence) as one JSON cell.
struct FlatSeq<'a> {
    flat: Flat<'a>,
    items: Vec<Value>,
}

struct FlatMap<'a> {
    prefix: String,
    out: &'a mut Vec<(String, String)>,
    key: Option<String>,
    /// `Some` while collecting a one-cell map's `k=v` parts.
    parts: Option<Vec<String>>,
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

    fn serialize_bool(self, v: bool) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Self::Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Self::Error> {
        // A `Value` holds no NaN or infinity: they were null, an empty cell.
        if v.is_finite() {
            self.json(v)
        } else {
            self.cell(String::new())
        }
    }
    fn serialize_char(self, v: char) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_str(self, v: &str) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Self::Error> {
        self.json(v)
    }
    fn serialize_none(self) -> Result<(), Self::Error> {
        self.cell(String::new())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Self::Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Self::Error> {
        self.cell(String::new())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Self::Error> {
        self.cell(String::new())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Self::Error> {
        self.cell(variant.to_string())
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
        let prefix = join(&self.prefix, variant);
        v.serialize(Flat {
            prefix,
            out: self.out,
        })
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<FlatSeq<'a>, Self::Error> {
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
        let prefix = join(&self.prefix, variant);
        Flat {
            prefix,
            out: self.out,
        }
        .serialize_seq(Some(len))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<FlatMap<'a>, Self::Error> {
        let parts = one_cell(&self.prefix).then(Vec::new);
        Ok(FlatMap {
            prefix: self.prefix,
            out: self.out,
            key: None,
            parts,
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
        let prefix = join(&self.prefix, variant);
        Flat {
            prefix,
            out: self.out,
        }
        .serialize_map(Some(len))
    }
}

impl FlatSeq<'_> {
    fn push<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), serde_json::Error> {
        self.items.push(serde_json::to_value(v)?);
        Ok(())
    }
    fn done(self) -> Result<(), serde_json::Error> {
        let c = Value::Array(self.items).to_string();
        self.flat.cell(c)
    }
}

impl serde::ser::SerializeSeq for FlatSeq<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        self.push(v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

impl serde::ser::SerializeTuple for FlatSeq<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        self.push(v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

impl serde::ser::SerializeTupleStruct for FlatSeq<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        self.push(v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

impl serde::ser::SerializeTupleVariant for FlatSeq<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        self.push(v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

impl FlatMap<'_> {
    fn entry<T: Serialize + ?Sized>(
        &mut self,
        key: String,
        v: &T,
    ) -> Result<(), serde_json::Error> {
        match &mut self.parts {
            Some(parts) => parts.push(format!("{key}={}", json_text(v)?)),
            None => v.serialize(Flat {
                prefix: join(&self.prefix, &key),
                out: &mut *self.out,
            })?,
        }
        Ok(())
    }
    fn done(self) -> Result<(), serde_json::Error> {
        if let Some(parts) = self.parts {
            self.out.push((self.prefix, parts.join(";")));
        }
        Ok(())
    }
}

impl serde::ser::SerializeMap for FlatMap<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Self::Error> {
        self.key = Some(json_text(k)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        let key = self.key.take().unwrap_or_default();
        self.entry(key, v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

impl serde::ser::SerializeStruct for FlatMap<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Self::Error> {
        self.entry(key.to_string(), v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

impl serde::ser::SerializeStructVariant for FlatMap<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Self::Error> {
        self.entry(key.to_string(), v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}
