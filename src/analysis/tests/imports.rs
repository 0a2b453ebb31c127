//! Issue 40: the analyzer's modules import each other without a cycle, the report builder
//! aside. Read from the source text (`use` lines and paths): each file of
//! `src/analysis/` is a node named by its first path segment (`net/summary.rs` is `net`);
//! `mod.rs` and the files that hold `impl Analyzer` blocks (the analyzer's own methods,
//! split by concern) are one node, `analyzer`. The report builder (`report`, which reads
//! the analyzer's state at the end of a run and may import anything) is left out of the
//! cycle search, and no file of the state machine may import it but the few that make
//! values for it at the end (listed in [`MAY_IMPORT_REPORT`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The report builder: left out of the cycle search.
const REPORT: &str = "report";
/// Files allowed to import the report builder: the analyzer's root (it folds retired
/// flows into summaries and calls the builder at the end), the CM tracker and its
/// findings (matched to the finished flow summaries), and the link-level summary made at
/// the end (`Net::finish`: PFC summaries, ARP symptoms with their severity).
const MAY_IMPORT_REPORT: &[&str] = &["mod.rs", "cm.rs", "cm/findings.rs", "net/summary.rs"];

/// Edges still allowed, each a cycle not untied yet: `Flow` holds the stop/retry state of
/// `stop.rs`, whose functions take `&mut Flow`. A stale entry (an edge no longer there)
/// fails the test, so the list only shrinks.
const NOT_UNTIED_YET: &[(&str, &str)] = &[];

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src/analysis is readable") {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file: comments dropped, the inline test module (`#[cfg(test)] mod
/// tests {`) and what follows it cut.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
        let t = l.trim();
        let test_mod = |n: &&str| n.trim().starts_with("mod ") && n.trim().ends_with('{');
        if t == "#[cfg(test)]" && lines.peek().is_some_and(test_mod) {
            break;
        }
        let l = l.find("//").map_or(l, |i| &l[..i]);
        out.push_str(l);
        out.push('\n');
    }
    out
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first segments of what follows a path prefix: `x::y` gives `x`, `{a, b::c}` gives
/// `a` and `b` (nested braces too: only the top level names a module or root item).
fn heads(rest: &str) -> Vec<&str> {
    if let Some(inner) = rest.strip_prefix('{') {
        let mut depth = 0;
        let mut out = Vec::new();
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.push(ident_at(inner[start..i].trim_start()));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(ident_at(inner[start..i].trim_start()));
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.retain(|s| !s.is_empty());
        out
    } else {
        vec![ident_at(rest)]
    }
}

/// The import graph (node -> the nodes it names) and the files that name `report`.
fn graph() -> (BTreeMap<String, BTreeSet<String>>, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/analysis");
    let mut files = Vec::new();
    rs_files(&root, &mut files);
    let rel = |p: &Path| {
        p.strip_prefix(&root)
            .expect("under src/analysis")
            .to_string_lossy()
            .into_owned()
    };
    files.retain(|p| {
        let r = rel(p);
        r != "tests.rs" && !r.starts_with("tests/")
    });
    let modules: BTreeSet<String> = files
        .iter()
        .map(|p| {
            let r = rel(p);
            r.split(['/', '.']).next().unwrap_or_default().to_string()
        })
        .filter(|m| m != "mod")
        .collect();
    let texts: Vec<(String, String)> = files
        .iter()
        .map(|p| (rel(p), code(&std::fs::read_to_string(p).expect("readable"))))
        .collect();
    // Files of `impl Analyzer` blocks belong to the analyzer node.
    let analyzer_parts: BTreeSet<String> = texts
        .iter()
        .filter(|(_, t)| t.contains("impl Analyzer {"))
        .map(|(r, _)| r.split(['/', '.']).next().unwrap_or_default().to_string())
        .collect();
    let node = |m: &str| {
        if m == "mod" || analyzer_parts.contains(m) {
            "analyzer".to_string()
        } else {
            m.to_string()
        }
    };
    // A name after `super::` (in a top-level file) or `crate::analysis::`: a module, or
    // an item of `mod.rs`.
    let target = |name: &str| {
        if modules.contains(name) {
            node(name)
        } else {
            "analyzer".to_string()
        }
    };
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut importers = Vec::new();
    for (r, text) in &texts {
        let from = node(r.split(['/', '.']).next().unwrap_or_default());
        let top = !r.contains('/');
        let mut to = BTreeSet::new();
        for (i, _) in text.match_indices("crate::analysis::") {
            let rest = &text[i + "crate::analysis::".len()..];
            to.extend(heads(rest).into_iter().map(target));
        }
        if top && r != "mod.rs" {
            for (i, _) in text.match_indices("super::") {
                let rest = &text[i + "super::".len()..];
                to.extend(heads(rest).into_iter().map(target));
            }
        }
        if r == "mod.rs" {
            // `name::` not after `::` (so `std::net::` is not `net`), and `use name::{..}`.
            for m in &modules {
                let pat = format!("{m}::");
                for (i, _) in text.match_indices(&pat) {
                    let before = &text[..i];
                    let prev = before.chars().next_back();
                    let ident_before = prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
                    if !ident_before && !before.ends_with("::") {
                        to.insert(node(m));
                    }
                }
            }
        }
        if to.contains(REPORT) && from != REPORT {
            importers.push(r.clone());
        }
        to.remove(&from);
        g.entry(from).or_default().extend(to);
    }
    (g, importers)
}

/// A cycle of `g` (its nodes in order, the first repeated at the end), if any.
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            match state.get(m.as_str()) {
                Some(1) => {
                    let at = path.iter().position(|x| x == m).unwrap_or(0);
                    let mut c = path[at..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(m, g, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if !state.contains_key(n.as_str()) {
            if let Some(c) = visit(n, g, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_import_cycle_among_analysis_modules_outside_the_report_builder() {
    let (mut g, mut importers) = graph();
    assert!(
        g.len() > 10 && g["analyzer"].contains("requester") && g["requester"].contains("events"),
        "the graph was read: {g:?}"
    );
    importers.retain(|f| !MAY_IMPORT_REPORT.contains(&f.as_str()));
    assert!(
        importers.is_empty(),
        "the state machine imports the report builder: {importers:?}"
    );
    g.remove(REPORT);
    for to in g.values_mut() {
        to.remove(REPORT);
    }
    for &(a, b) in NOT_UNTIED_YET {
        let there = g.get_mut(a).is_some_and(|to| to.remove(b));
        assert!(there, "{a} -> {b} is untied: take it off NOT_UNTIED_YET");
    }
    if let Some(c) = find_cycle(&g) {
        panic!("import cycle in src/analysis: {}", c.join(" -> "));
    }
}

#[test]
fn the_cycle_finder_finds_a_cycle_and_the_parser_reads_braces() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        g.entry(a.into()).or_default().insert(b.into());
    }
    assert_eq!(
        find_cycle(&g).map(|c| c.join(" ")),
        Some("a b c a".to_string())
    );
    g.get_mut("c").map(|s| s.remove("a"));
    assert_eq!(find_cycle(&g), None);
    assert_eq!(
        heads("{flow::{A, B}, gaps, Analyzer};"),
        ["flow", "gaps", "Analyzer"]
    );
    assert_eq!(heads("ring::Ring;"), ["ring"]);
    assert_eq!(
        code("use a; // super::x\n#[cfg(test)]\nmod tests {\nuse super::y;\n}"),
        "use a; \n"
    );
}
