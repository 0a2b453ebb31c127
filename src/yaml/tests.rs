//! The YAML reader's tests: typing, positions, merge keys, hostile limits.

use super::*;

#[test]
fn positions_types_anchors_merges_and_documents() {
    let text = "# a comment\na: &x\n  b: 1\n  c: 'two'\nd:\n  <<: *x\n  c: three\n---\n- true\n- ~\n- 1.5\n---\n";
    let docs = load(text).unwrap();
    assert_eq!(docs.len(), 2);
    let a = docs[0].get("a").unwrap();
    assert_eq!(docs[0].key_pos("a"), Some(Pos { line: 2, col: 1 }));
    assert_eq!(a.get("b").unwrap().int(), Some(1));
    assert_eq!(a.get("b").unwrap().pos, Pos { line: 3, col: 6 });
    let d = docs[0].get("d").unwrap();
    assert_eq!(d.get("b").unwrap().int(), Some(1));
    assert_eq!(d.get("c").unwrap().str(), Some("three"));
    let s = docs[1].seq().unwrap();
    assert_eq!(s[0].bool(), Some(true));
    assert!(s[1].is_null());
    assert!(matches!(s[2].value, Value::Float(_)));
}

#[test]
fn json_is_read_with_positions() {
    let docs = load("{\"kind\": \"List\",\n \"items\": [{\"a\": \"8\"}]}").unwrap();
    let items = docs[0].get("items").unwrap();
    assert_eq!(items.pos, Pos { line: 2, col: 11 });
    assert_eq!(docs[0].key_pos("kind"), Some(Pos { line: 1, col: 2 }));
    let indented = load("\n  [1, {\"a\": 2}]").unwrap();
    assert_eq!(indented[0].seq().unwrap()[1].pos, Pos { line: 2, col: 7 });
    assert_eq!(items.seq().unwrap()[0].get("a").unwrap().str(), Some("8"));
}

#[test]
fn json_keeps_its_positions_and_streams() {
    let pad = "x".repeat(2000);
    let one = format!("{{\"pad\": \"{pad}, [{{\", \"items\": [{{\"a\": 1}}, {{\"b\": \"c,d\"}}]}}");
    let short = one.replace(&pad, "x");
    let (d1, d2) = (load(&one).unwrap(), load(&short).unwrap());
    assert_eq!(
        d1[0].get("pad").unwrap().str(),
        Some(format!("{pad}, [{{").as_str())
    );
    let b1 = d1[0].get("items").unwrap().seq().unwrap()[1]
        .get("b")
        .unwrap();
    let b2 = d2[0].get("items").unwrap().seq().unwrap()[1]
        .get("b")
        .unwrap();
    assert_eq!(b1.str(), Some("c,d"));
    assert_eq!(b1.pos.line, 1);
    assert_eq!(b1.pos.col, b2.pos.col + 1999);
    // one line of 300,000 items: our tree, not the scanner's token queue
    let big = format!("[{}]", vec!["\"x\""; 300_000].join(","));
    assert_eq!(load(&big).unwrap()[0].seq().unwrap().len(), 300_000);
}

#[test]
fn a_mapping_of_many_keys_takes_linear_time() {
    // Was: each key compared with every earlier one (30,000 keys: ~13 s; 50,000: 37 s).
    let text: String = (0..30_000).map(|i| format!("k{i}: {i}\n")).collect();
    let start = std::time::Instant::now();
    let docs = load(&text).unwrap();
    assert_eq!(docs[0].map().unwrap().len(), 30_000);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let dup = format!("{text}k17: again\n");
    assert!(load(&dup)
        .unwrap_err()
        .msg
        .contains("duplicate key \"k17\""));
}

#[test]
fn bombs_depth_and_duplicates_are_errors() {
    let mut bomb = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["b", "c", "d", "e", "f", "g", "h", "i"];
    let mut prev = "a";
    for n in names {
        bomb.push_str(&format!(
            "{n}: &{n} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
        prev = n;
    }
    let e = load(&bomb).unwrap_err();
    assert!(e.msg.contains("alias"), "{e}");
    // nested anchors over one big value: each would keep its own copy
    let nested: String = (0..60).map(|i| format!("&a{i} [")).collect::<String>()
        + &vec!["x"; 200_000].join(",")
        + &"]".repeat(60);
    assert!(load(&nested).unwrap_err().msg.contains("expanding aliases"));
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    assert!(load(&deep).is_err());
    let deep_block: String = (0..200).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
    assert!(load(&deep_block).unwrap_err().msg.contains("deeper"));
    assert!(load("a: 1\na: 2\n").unwrap_err().msg.contains("duplicate"));
}
