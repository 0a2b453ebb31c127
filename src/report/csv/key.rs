//! A map key's bare text for a CSV column name or a `k=v` part: what the key's
//! `Serialize` gives — a name (`#[serde(flatten)]` fields, opcode names) or a number (the
//! RNR timer counts) — without the quotes JSON puts around it. A key that is anything
//! else, or a string JSON would have to escape, is refused (`Err`), and the caller takes
//! the text of its serde_json `Value` instead; so this only saves serde_json's escaping
//! loop on the 110 keys of every flow, it decides no text of its own.

use serde::ser::{self, Impossible, Serialize};
use serde_json::Error;

/// Writes `key`'s bare text into `buf`; false (and `buf` as it was) when it is not a
/// plain name or number.
pub(super) fn key_text<T: Serialize + ?Sized>(buf: &mut Vec<u8>, key: &T) -> bool {
    let at = buf.len();
    let ok = key.serialize(KeyText(buf)).is_ok();
    if !ok {
        buf.truncate(at);
    }
    ok
}

struct KeyText<'a>(&'a mut Vec<u8>);

fn refused() -> Error {
    ser::Error::custom("not a plain key")
}

macro_rules! ints {
    ($($name:ident: $t:ty),*) => {$(
        fn $name(self, v: $t) -> Result<(), Error> {
            self.0.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
            Ok(())
        }
    )*};
}

macro_rules! refuse {
    ($($name:ident: $t:ty),*) => {$(
        fn $name(self, _: $t) -> Result<(), Error> {
            Err(refused())
        }
    )*};
}

impl ser::Serializer for KeyText<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    ints!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64);
    refuse!(serialize_bool: bool, serialize_f32: f32, serialize_f64: f64,
        serialize_bytes: &[u8], serialize_unit_struct: &'static str);

    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        if needs_escape(v.as_bytes()) {
            return Err(refused());
        }
        self.0.extend_from_slice(v.as_bytes());
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Error> {
        Err(refused())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Error> {
        Err(refused())
    }
    fn serialize_unit(self) -> Result<(), Error> {
        Err(refused())
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
        Err(refused())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(refused())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(refused())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(refused())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(refused())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(refused())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(refused())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(refused())
    }
}

/// Whether any byte is `"`, `\` or a control character, eight bytes at a time (field
/// names never are). Every key of every row is checked, most of them a few to 30 bytes
/// long: so no early exit and no byte loop, only whole words
/// (the last one overlapping the one before; under 8 bytes, two overlapping halves or
/// three single bytes), their tests or-ed together.
#[inline(always)]
fn needs_escape(bytes: &[u8]) -> bool {
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

#[cfg(test)]
mod tests {
    use super::{key_text, needs_escape};
    use serde_json::Value;

    /// What `key_text` writes is the text of the key's serde_json `Value` (the CSV's
    /// fallback), and what it refuses has a `Value` text of its own.
    #[test]
    fn a_key_is_the_text_of_its_value_or_refused() {
        #[derive(serde::Serialize)]
        enum Op {
            SendOnly,
        }
        fn text(v: Value) -> String {
            match v {
                Value::String(s) => s,
                other => other.to_string(),
            }
        }
        fn check<T: serde::Serialize>(k: T, plain: bool) {
            let mut buf = b"x".to_vec();
            assert_eq!(key_text(&mut buf, &k), plain);
            let want = text(serde_json::to_value(&k).unwrap());
            if plain {
                assert_eq!(String::from_utf8(buf[1..].to_vec()).unwrap(), want);
            } else {
                assert_eq!(buf, b"x", "{want}");
            }
        }
        check("pfc_stall_ns", true);
        check(7u8, true);
        check(-3i64, true);
        check(u64::MAX, true);
        check('k', true);
        check(Op::SendOnly, true);
        check("a\"b", false);
        check("tab\there", false);
        check(1.5f64, false);
        check(true, false);
        check(Option::<u8>::None, false);
        check(vec![1u8], false);
    }

    #[test]
    fn needs_escape_is_exactly_the_bytewise_rule() {
        let naive = |b: &[u8]| b.iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\');
        for len in 0..=17 {
            for at in 0..len.max(1) {
                for c in 0..=255u8 {
                    let mut v = vec![b'x'; len];
                    if len > 0 {
                        v[at] = c;
                    }
                    assert_eq!(needs_escape(&v), naive(&v), "byte {c:#x} at {at} of {len}");
                }
            }
        }
    }
}
