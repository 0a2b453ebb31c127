//! A serde serializer that writes exactly what `serde_json::to_writer_pretty` writes
//! (two-space indent, the same escapes, `zmij` floats, `null` for non-finite ones), into a
//! buffer that goes to the writer in 64 KiB pieces.
//!
//! Why not serde_json itself: for a report of thousands of flows, serde_json's pretty
//! writer spends most of its time in many tiny `write_all` calls (each a `memcpy` call
//! through the `BufWriter`) and in escaping the field names derive hands it, which are
//! Rust identifiers that never need escaping. Here a field name is copied in one piece,
//! indentation comes from a constant, and values are formatted straight into the
//! buffer. The output is byte for byte serde_json's (tested against it on arbitrary
//! values), so the `rocetap.analyze/1` document does not change.

use serde::ser::{self, Serialize};
use serde_json::Error;
use std::io::Write;

mod connection;
mod flow;
mod key;
mod object;
use key::KeySerializer;
pub use object::ObjectWriter;

/// Writes a map key's bare text (the document's key without its quotes) into `buf`;
/// false when it cannot be a key or is a string the document would have to escape.
pub(in crate::report) fn write_key_text<T: Serialize + ?Sized>(buf: &mut Vec<u8>, key: &T) -> bool {
    key.serialize(KeySerializer { buf, quoted: false }).is_ok()
}

/// Writes `value` as pretty JSON to `out`, as `serde_json::to_writer_pretty` would.
pub fn to_writer_pretty<W: Write, T: Serialize + ?Sized>(out: W, value: &T) -> Result<(), Error> {
    let mut s = Pretty::new(out);
    value.serialize(&mut s)?;
    s.flush()
}

/// The buffer goes to the writer once it holds this much.
const FLUSH_AT: usize = 1 << 16;
const INDENT: &[u8] = b"                                                                ";

struct Pretty<W> {
    out: W,
    buf: Vec<u8>,
    /// Nesting depth of the value being written.
    depth: usize,
    /// The buffer goes to `out` once it holds this much.
    flush_at: usize,
}

impl<W: Write> Pretty<W> {
    fn new(out: W) -> Self {
        Pretty {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            depth: 0,
            flush_at: FLUSH_AT,
        }
    }

    fn flush(&mut self) -> Result<(), Error> {
        self.out.write_all(&self.buf).map_err(Error::io)?;
        self.buf.clear();
        Ok(())
    }

    #[inline]
    fn maybe_flush(&mut self) -> Result<(), Error> {
        if self.buf.len() >= self.flush_at {
            self.flush()?;
        }
        Ok(())
    }

    /// A newline and the indentation of the current depth.
    #[inline]
    fn newline(&mut self) {
        self.buf.push(b'\n');
        let mut n = self.depth * 2;
        while n > 0 {
            let k = n.min(INDENT.len());
            self.buf.extend_from_slice(&INDENT[..k]);
            n -= k;
        }
    }

    /// Before an element of an array or object: a comma unless `first` (which it clears),
    /// then a newline and the indentation.
    #[inline]
    fn item(&mut self, first: &mut bool) {
        if !*first {
            self.buf.push(b',');
        }
        *first = false;
        self.newline();
    }

    /// Before an object's value: [`Pretty::item`], then `"key": `.
    #[inline]
    fn field_key(&mut self, first: &mut bool, key: &str) {
        self.item(first);
        self.string(key);
        self.buf.extend_from_slice(b": ");
    }

    #[inline]
    fn string(&mut self, s: &str) {
        self.buf.push(b'"');
        escape_into(&mut self.buf, s);
        self.buf.push(b'"');
    }

    fn open(&mut self, c: u8) -> Compound<'_, W> {
        self.buf.push(c);
        self.depth += 1;
        Compound {
            s: self,
            first: true,
            close: if c == b'[' { b']' } else { b'}' },
            variant: false,
        }
    }

    /// A float value: its shortest digits when finite, else `null` (as serde_json).
    #[inline]
    fn float<F: zmij::Float>(&mut self, v: F, finite: bool) {
        if finite {
            float_digits(&mut self.buf, v);
        } else {
            self.buf.extend_from_slice(b"null");
        }
    }

    /// `{"name": ` of an externally tagged enum variant.
    fn open_variant(&mut self, name: &str) {
        self.buf.push(b'{');
        self.depth += 1;
        self.newline();
        self.string(name);
        self.buf.extend_from_slice(b": ");
    }

    fn close_variant(&mut self) {
        self.depth -= 1;
        self.newline();
        self.buf.push(b'}');
    }
}

/// A finite float's shortest round-trip digits, formatted by zmij as serde_json does.
#[inline]
pub(super) fn float_digits<F: zmij::Float>(buf: &mut Vec<u8>, v: F) {
    buf.extend_from_slice(zmij::Buffer::new().format_finite(v).as_bytes());
}

/// Escapes as serde_json does: `"`, `\`, and control characters (`\b \t \n \f \r`, the
/// rest as `\u00xx`); everything else, DEL and non-ASCII included, as it is.
#[inline(always)]
pub(super) fn escape_into(buf: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if needs_escape(bytes) {
        escape_slow(buf, bytes);
    } else {
        buf.extend_from_slice(bytes);
    }
}

/// [`escape_into`] of a string that has something to escape.
#[cold]
#[inline(never)]
fn escape_slow(buf: &mut Vec<u8>, bytes: &[u8]) {
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            0x00..=0x1f => {
                buf.extend_from_slice(&bytes[start..i]);
                const HEX: &[u8; 16] = b"0123456789abcdef";
                buf.extend_from_slice(b"\\u00");
                buf.push(HEX[usize::from(b >> 4)]);
                buf.push(HEX[usize::from(b & 0xf)]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        buf.extend_from_slice(&bytes[start..i]);
        buf.extend_from_slice(esc);
        start = i + 1;
    }
    buf.extend_from_slice(&bytes[start..]);
}

/// Whether any byte is `"`, `\` or a control character, eight bytes at a time (field
/// names and addresses never are). Every key and string of a document is checked, most
/// of them a few to 30 bytes long: so no early exit and no byte loop, only whole words
/// (the last one overlapping the one before; under 8 bytes, two overlapping halves or
/// three single bytes), their tests or-ed together.
#[inline(always)]
pub(super) fn needs_escape(bytes: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // A byte of `v` is zero / below `n` (n <= 128): the classic exact word tests.
    let zero = |v: u64| v.wrapping_sub(LO) & !v & HI;
    let below = |v: u64, n: u64| v.wrapping_sub(LO * n) & !v & HI;
    let bad = |w: u64| below(w, 0x20) | zero(w ^ (LO * 0x22)) | zero(w ^ (LO * 0x5c));
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let half = |at: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&bytes[at..at + 4]);
        u64::from(u32::from_le_bytes(w))
    };
    let n = bytes.len();
    let hits = if n >= 8 {
        let mut hits = bad(word(n - 8));
        let mut at = 0;
        while at + 8 < n {
            hits |= bad(word(at));
            at += 8;
        }
        hits
    } else if n >= 4 {
        bad(half(0) | half(n - 4) << 32)
    } else if n > 0 {
        // Bytes 0, n / 2 and n - 1 are all of them; the rest is a byte that never needs it.
        let w = [
            bytes[0],
            bytes[n / 2],
            bytes[n - 1],
            b'a',
            b'a',
            b'a',
            b'a',
            b'a',
        ];
        bad(u64::from_le_bytes(w))
    } else {
        0
    };
    hits != 0
}

/// An array or object being written.
struct Compound<'a, W> {
    s: &'a mut Pretty<W>,
    first: bool,
    close: u8,
    /// Inside `{"variant": ...}`: one more brace to close.
    variant: bool,
}

impl<W: Write> Compound<'_, W> {
    #[inline]
    fn next(&mut self) {
        self.s.item(&mut self.first);
    }

    fn end(self) -> Result<(), Error> {
        self.s.depth -= 1;
        if !self.first {
            self.s.newline();
        }
        self.s.buf.push(self.close);
        if self.variant {
            self.s.close_variant();
        }
        self.s.maybe_flush()
    }

    #[inline]
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        self.s.field_key(&mut self.first, key);
        value.serialize(&mut *self.s)
    }
}

macro_rules! int {
    ($($name:ident: $t:ty),*) => {$(
        #[inline]
        fn $name(self, v: $t) -> Result<(), Error> {
            self.buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
            Ok(())
        }
    )*};
}

impl<'a, W: Write> ser::Serializer for &'a mut Pretty<W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a, W>;
    type SerializeTuple = Compound<'a, W>;
    type SerializeTupleStruct = Compound<'a, W>;
    type SerializeTupleVariant = Compound<'a, W>;
    type SerializeMap = Compound<'a, W>;
    type SerializeStruct = Compound<'a, W>;
    type SerializeStructVariant = Compound<'a, W>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.buf
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    int!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
         serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
         serialize_u64: u64, serialize_u128: u128);
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.float(v, v.is_finite());
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.float(v, v.is_finite());
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.string(v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.string(v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        use ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for b in v {
            seq.serialize_element(b)?;
        }
        seq.end()
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.buf.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.serialize_none()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, v: &'static str) -> Result<(), Error> {
        self.string(v);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.open_variant(variant);
        v.serialize(&mut *self)?;
        self.close_variant();
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a, W>, Error> {
        Ok(self.open(b'['))
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'a, W>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Compound<'a, W>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a, W>, Error> {
        self.open_variant(variant);
        let mut c = self.open(b'[');
        c.variant = true;
        Ok(c)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a, W>, Error> {
        Ok(self.open(b'{'))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a, W>, Error> {
        Ok(self.open(b'{'))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a, W>, Error> {
        self.open_variant(variant);
        let mut c = self.open(b'{');
        c.variant = true;
        Ok(c)
    }
}

impl<W: Write> ser::SerializeSeq for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    #[inline]
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.next();
        v.serialize(&mut *self.s)?;
        self.s.maybe_flush()
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

/// Tuples, tuple structs and tuple variants are arrays.
macro_rules! as_seq {
    ($($tr:ident :: $m:ident),*) => {$(
        impl<W: Write> ser::$tr for Compound<'_, W> {
            type Ok = ();
            type Error = Error;
            fn $m<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
                ser::SerializeSeq::serialize_element(self, v)
            }
            fn end(self) -> Result<(), Error> {
                Compound::end(self)
            }
        }
    )*};
}
as_seq!(
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl<W: Write> ser::SerializeMap for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.next();
        key.serialize(KeySerializer {
            buf: &mut self.s.buf,
            quoted: true,
        })?;
        self.s.buf.extend_from_slice(b": ");
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        v.serialize(&mut *self.s)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

impl<W: Write> ser::SerializeStruct for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    #[inline]
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.field(key, v)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

impl<W: Write> ser::SerializeStructVariant for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.field(key, v)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;
