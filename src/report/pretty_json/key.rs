//! Map keys as serde_json writes them (`#[serde(flatten)]` and maps go through here).

use super::{escape_into, float_digits, needs_escape, Error};
use serde::ser::{self, Serialize};

/// Map keys, as serde_json writes them: strings, and numbers, booleans and chars in
/// quotes; anything else is an error ("key must be a string"). Not `quoted`: the key's
/// bare text, and an error for a string that JSON would have to escape.
pub(super) struct KeySerializer<'a> {
    pub(super) buf: &'a mut Vec<u8>,
    pub(super) quoted: bool,
}

impl KeySerializer<'_> {
    #[inline]
    fn quote(&mut self) {
        if self.quoted {
            self.buf.push(b'"');
        }
    }

    /// A float key: its digits in quotes; serde_json refuses a non-finite one.
    fn float<F: zmij::Float>(mut self, v: F, finite: bool) -> Result<(), Error> {
        if !finite {
            return Err(ser::Error::custom("float key must be finite"));
        }
        self.quote();
        float_digits(self.buf, v);
        self.quote();
        Ok(())
    }
}

fn key_error() -> Error {
    ser::Error::custom("key must be a string")
}

macro_rules! quoted {
    ($($name:ident: $t:ty => $fmt:expr),*) => {$(
        fn $name(mut self, v: $t) -> Result<(), Error> {
            self.quote();
            #[allow(clippy::redundant_closure_call)] // one formatting expression per type
            ($fmt)(&mut *self.buf, v);
            self.quote();
            Ok(())
        }
    )*};
}

fn itoa_into<I: itoa::Integer>(buf: &mut Vec<u8>, v: I) {
    buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

impl ser::Serializer for KeySerializer<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    quoted!(
        serialize_bool: bool => |b: &mut Vec<u8>, v: bool| b.extend_from_slice(if v { b"true" } else { b"false" }),
        serialize_i8: i8 => itoa_into, serialize_i16: i16 => itoa_into,
        serialize_i32: i32 => itoa_into, serialize_i64: i64 => itoa_into,
        serialize_i128: i128 => itoa_into, serialize_u8: u8 => itoa_into,
        serialize_u16: u16 => itoa_into, serialize_u32: u32 => itoa_into,
        serialize_u64: u64 => itoa_into, serialize_u128: u128 => itoa_into
    );
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.float(v, v.is_finite())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.float(v, v.is_finite())
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        if !self.quoted {
            if needs_escape(v.as_bytes()) {
                return Err(ser::Error::custom("key text needs escaping"));
            }
            self.buf.extend_from_slice(v.as_bytes());
            return Ok(());
        }
        self.buf.push(b'"');
        escape_into(self.buf, v);
        self.buf.push(b'"');
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Error> {
        Err(key_error())
    }
    fn serialize_none(self) -> Result<(), Error> {
        Err(key_error())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Error> {
        Err(key_error())
    }
    fn serialize_unit(self) -> Result<(), Error> {
        Err(key_error())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        Err(key_error())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, v: &'static str) -> Result<(), Error> {
        self.serialize_str(v)
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
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(key_error())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(key_error())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(key_error())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(key_error())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(key_error())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(key_error())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(key_error())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(key_error())
    }
}
