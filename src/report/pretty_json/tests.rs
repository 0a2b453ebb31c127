//! The writer against `serde_json::to_string_pretty` itself.

use super::*;
use proptest::prelude::*;
use serde_json::{json, Value};

/// `v` written at nesting `depth` by [`write_at`].
fn ours_at<T: Serialize + ?Sized>(v: &T, depth: usize) -> String {
    let mut buf = Vec::new();
    write_at(&mut buf, depth, v).unwrap();
    String::from_utf8(buf).unwrap()
}

/// serde_json's pretty text of `v`, every line after the first indented `depth` levels.
fn theirs_at<T: Serialize + ?Sized>(v: &T, depth: usize) -> String {
    let indent = format!("\n{}", "  ".repeat(depth));
    serde_json::to_string_pretty(v)
        .unwrap()
        .replace('\n', &indent)
}

#[derive(serde::Serialize)]
enum E {
    Unit,
    New(u8),
    Tup(u8, &'static str),
    Rec { a: f64, b: Option<u32> },
    NoFields {},
    NoItems(),
}

#[derive(serde::Serialize)]
struct Unit;

#[derive(serde::Serialize)]
struct Wrap(u16);

#[derive(serde::Serialize)]
struct Empty {}

#[derive(serde::Serialize)]
struct S {
    e: Vec<E>,
    empty: Vec<u8>,
    empty_map: std::collections::BTreeMap<u32, u8>,
    keys: std::collections::BTreeMap<i64, &'static str>,
    nan: f64,
    f: f32,
    c: char,
    bytes: &'static [u8],
    bool_keys: std::collections::BTreeMap<bool, Unit>,
    char_keys: std::collections::BTreeMap<char, Empty>,
    big_keys: std::collections::BTreeMap<u128, Wrap>,
    tuple: (u8, Option<&'static str>, ()),
    #[serde(rename = "odd \"key\"\n")]
    odd_key: u8,
    #[serde(flatten)]
    more: Value,
}

#[test]
fn derive_shapes_at_any_depth_match_serde_json() {
    let s = S {
        e: vec![
            E::Unit,
            E::New(7),
            E::Tup(1, "x\"y\\z\n\u{1}\u{7f}é"),
            E::Rec { a: 0.1, b: None },
            E::NoFields {},
            E::NoItems(),
        ],
        empty: vec![],
        empty_map: Default::default(),
        keys: [(-3, "a"), (5, "b")].into_iter().collect(),
        nan: f64::NAN,
        f: 1.5,
        c: '\t',
        bytes: b"ab",
        bool_keys: [(true, Unit), (false, Unit)].into_iter().collect(),
        char_keys: [('"', Empty {}), ('x', Empty {})].into_iter().collect(),
        big_keys: [(u128::MAX, Wrap(3))].into_iter().collect(),
        tuple: (1, Some("long enough to take two words"), ()),
        odd_key: 1,
        more: json!({"k": [1, 2.0, {"z": null}], "t": true}),
    };
    // Past 31 levels the indentation is more than one slice of `NL`.
    for depth in [0, 1, 2, 3, 31, 32, 33, 70] {
        assert_eq!(ours_at(&s, depth), theirs_at(&s, depth), "depth {depth}");
    }
}

/// A float key is quoted when finite and refused otherwise, as serde_json does.
#[test]
fn float_keys_are_quoted_or_refused_as_serde_json_does() {
    #[derive(serde::Serialize)]
    struct K(#[serde(serialize_with = "float_key")] f64);
    fn float_key<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(v, &1u8)?;
        m.end()
    }
    for v in [0.5, -1e300, 3.0] {
        assert_eq!(ours_at(&K(v), 2), theirs_at(&K(v), 2));
    }
    for v in [f64::NAN, f64::INFINITY] {
        let mut buf = Vec::new();
        assert!(write_at(&mut buf, 0, &K(v)).is_err());
        assert!(serde_json::to_vec_pretty(&K(v)).is_err());
    }
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((".{0,6}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn any_value_at_any_depth_matches_serde_json(v in value(), depth in 0usize..40) {
        prop_assert_eq!(ours_at(&v, depth), theirs_at(&v, depth));
    }
}

#[derive(serde::Serialize)]
struct Item {
    id: usize,
    name: String,
    #[serde(flatten)]
    more: Value,
}

#[derive(serde::Serialize)]
struct Listed<'a> {
    head: &'static str,
    items: &'a [Item],
    empty: &'a [Item],
    tail: Vec<u8>,
}

fn items(n: usize) -> Vec<Item> {
    (0..n)
        .map(|id| Item {
            id,
            name: format!("item \"{id}\"\n"),
            more: json!({"nested": [id, {"x": id as f64 / 3.0}]}),
        })
        .collect()
}

#[test]
fn an_object_written_field_by_field_is_the_struct_serde_json_writes() {
    let block = crate::report::par::BLOCK;
    for n in [0, 1, 2, block - 1, block, block + 1, 3 * block + 5] {
        let items = items(n);
        let doc = Listed {
            head: "h",
            items: &items,
            empty: &[],
            tail: vec![1, 2],
        };
        let mut out = Vec::new();
        let mut w = ObjectWriter::new(&mut out);
        w.field("head", doc.head).unwrap();
        w.list_field("items", doc.items).unwrap();
        w.list_field("empty", doc.empty).unwrap();
        w.field("tail", &doc.tail).unwrap();
        w.finish().unwrap();
        let want = serde_json::to_string_pretty(&doc).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), want, "{n} items");
    }
    let mut out = Vec::new();
    ObjectWriter::new(&mut out).finish().unwrap();
    assert_eq!(out, b"{}");
}

/// A writer that takes `room` bytes, then fails as a full disk does.
struct Full {
    room: usize,
}

impl std::io::Write for Full {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.room == 0 {
            return Err(std::io::Error::from_raw_os_error(28)); // ENOSPC
        }
        let n = b.len().min(self.room);
        self.room -= n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_full_disk_in_the_middle_of_a_list_is_an_error() {
    let items = items(3 * crate::report::par::BLOCK);
    let mut whole = Vec::new();
    let mut w = ObjectWriter::new(&mut whole);
    w.field("head", "h").unwrap();
    w.list_field("items", &items).unwrap();
    w.finish().unwrap();
    for room in [0, 10, 50_000, whole.len() / 2, whole.len() - 1] {
        let mut w = ObjectWriter::new(Full { room });
        let r = w
            .field("head", "h")
            .and_then(|()| w.list_field("items", &items))
            .and_then(|()| w.finish());
        let e = r.expect_err("the disk fills up");
        assert!(e.is_io(), "{e}");
    }
}

/// A map whose key serde_json refuses (not a string or number) is an error, not a
/// document silently wrong.
#[test]
fn a_key_serde_json_refuses_is_an_error() {
    let bad: std::collections::BTreeMap<Vec<u8>, u8> = [(vec![1], 2)].into_iter().collect();
    let mut out = Vec::new();
    let mut w = ObjectWriter::new(&mut out);
    assert!(w.field("bad", &bad).is_err());
}
