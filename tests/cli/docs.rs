//! The documentation held to the tree (no mdbook needed):
//! - ARCHITECTURE.md names every `.rs` file under `src/` and `dissectors/src/`, by its path
//!   from the repository root in backticks (`src/analysis/mod.rs`), and every such path it
//!   names exists;
//! - every relative link of README.md, ARCHITECTURE.md, `docs/**/*.md` and the READMEs of
//!   `deploy/`, `lab/rxe/` and `samples/` points at a file or directory that exists, and a
//!   `#anchor` at a heading of the target (GitHub's slugs);
//! - `docs/SUMMARY.md` lists every page of `docs/`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Files under `dir` (recursively) whose name ends with `ext`, sorted; `skip` directories
/// (relative to the repository) are not entered.
fn files(dir: &Path, ext: &str, skip: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                if !skip.iter().any(|s| p == repo().join(s)) {
                    todo.push(p);
                }
            } else if p.to_string_lossy().ends_with(ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(repo())
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

/// The lines of a markdown text outside fenced code blocks.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let marker = if t.starts_with("```") {
            Some("```")
        } else if t.starts_with("~~~") {
            Some("~~~")
        } else {
            None
        };
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(f), Some(m)) if f == m => fence = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// A line with its inline code spans blanked out.
fn without_code(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else if in_code {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// Link targets of one line: inline links and images `[text](target "title")`, and
/// reference definitions `[label]: target`.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code(line);
    let mut out = Vec::new();
    let t = line.trim_start();
    if t.starts_with('[') {
        if let Some(end) = t.find("]:") {
            if !t[..end].contains("](") {
                let target = t[end + 2..].split_whitespace().next().unwrap_or("");
                if !target.is_empty() {
                    out.push(target.trim_matches(['<', '>']).to_string());
                }
            }
        }
    }
    let b = line.as_bytes();
    let mut i = 0;
    while let Some(at) = line[i..].find("](") {
        let start = i + at + 2;
        // the target runs to the matching ')' (parentheses inside it balanced)
        let mut depth = 0usize;
        let mut end = start;
        while end < b.len() {
            match b[end] {
                b'(' => depth += 1,
                b')' if depth == 0 => break,
                b')' => depth -= 1,
                _ => {}
            }
            end += 1;
        }
        let target = line[start..end].split_whitespace().next().unwrap_or("");
        if !target.is_empty() {
            out.push(target.trim_matches(['<', '>']).to_string());
        }
        i = end.min(line.len());
        if i >= line.len() {
            break;
        }
    }
    out
}

fn external(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

/// GitHub's anchor for a heading's text: the rendered text (code spans, links and
/// emphasis reduced to their text), lowercased, every character that is not a letter,
/// digit, space, `-` or `_` removed, spaces turned into `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // [text](url) -> text
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        match (after.find("]("), after.find(')')) {
            (Some(close), Some(paren)) if paren > close => {
                text.push_str(&rest[..open]);
                text.push_str(&after[..close]);
                rest = &after[paren + 1..];
            }
            _ => {
                text.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a markdown file's headings give, duplicates numbered as GitHub does.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, line) in prose(text) {
        let t = line.trim_start();
        let hashes = t.chars().take_while(|c| *c == '#').count();
        if hashes == 0 || hashes > 6 || !t[hashes..].starts_with(' ') {
            continue;
        }
        let h = t[hashes..].trim().trim_end_matches('#').trim();
        let base = slug(h);
        let mut s = base.clone();
        let mut n = 0;
        while out.contains(&s) {
            n += 1;
            s = format!("{base}-{n}");
        }
        out.insert(s);
    }
    out
}

fn doc_files() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "deploy/README.md",
        "lab/rxe/README.md",
        "samples/README.md",
    ]
    .iter()
    .map(|f| repo().join(f))
    .collect();
    out.extend(files(&repo().join("docs"), ".md", &["docs/book"]));
    out
}

#[test]
fn architecture_names_every_source_file() {
    let arch = read(&repo().join("ARCHITECTURE.md"));
    let mut missing = Vec::new();
    let mut sources = files(&repo().join("src"), ".rs", &[]);
    sources.extend(files(&repo().join("dissectors/src"), ".rs", &[]));
    assert!(
        sources.len() > 100,
        "found only {} source files",
        sources.len()
    );
    for f in &sources {
        let r = rel(f);
        if !arch.contains(&format!("`{r}`")) {
            missing.push(r);
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name these files (add each as `path` to its directory's \
         table in \"Files\", with the first sentence of its `//!` docs):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn every_source_path_architecture_names_exists() {
    let arch = read(&repo().join("ARCHITECTURE.md"));
    let mut gone = Vec::new();
    for (n, line) in arch.lines().enumerate() {
        for (k, span) in line.split('`').enumerate() {
            // a path, not a pattern such as `src/cmd/<name>.rs`
            let is_path = (span.starts_with("src/") || span.starts_with("dissectors/src/"))
                && (span.ends_with(".rs") || span.ends_with('/'))
                && !span.contains(['<', '*', ' ']);
            if k % 2 == 1 && is_path && !repo().join(span).exists() {
                gone.push(format!("ARCHITECTURE.md:{}: `{span}`", n + 1));
            }
        }
    }
    assert!(
        gone.is_empty(),
        "ARCHITECTURE.md names files that do not exist (moved or removed: update the \
         entry):\n  {}",
        gone.join("\n  ")
    );
}

#[test]
fn relative_links_point_at_files_and_headings_that_exist() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in doc_files() {
        let text = read(&doc);
        let dir = doc.parent().unwrap();
        for (n, line) in prose(&text) {
            for target in link_targets(line) {
                if external(&target) {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() {
                    doc.clone()
                } else {
                    dir.join(path)
                };
                let at = format!("{}:{n}: ({target})", rel(&doc));
                if !file.exists() {
                    broken.push(format!("{at}: no file {}", rel(&file)));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if !file.to_string_lossy().ends_with(".md") {
                    broken.push(format!("{at}: an anchor into a file that is not markdown"));
                } else if !anchors(&read(&file)).contains(anchor) {
                    broken.push(format!("{at}: {} has no heading #{anchor}", rel(&file)));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the parser broken?"
    );
    assert!(
        broken.is_empty(),
        "broken links:\n  {}",
        broken.join("\n  ")
    );
}

#[test]
fn the_summary_lists_every_page() {
    let summary = read(&repo().join("docs/SUMMARY.md"));
    let listed: BTreeSet<String> = prose(&summary)
        .iter()
        .flat_map(|(_, l)| link_targets(l))
        .collect();
    let mut missing = Vec::new();
    for page in files(&repo().join("docs"), ".md", &["docs/book"]) {
        let r = page
            .strip_prefix(repo().join("docs"))
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if r != "SUMMARY.md" && !listed.contains(&r) {
            missing.push(r);
        }
    }
    assert!(
        missing.is_empty(),
        "docs/SUMMARY.md does not list these pages (mdbook would leave them out): {missing:?}"
    );
}

#[test]
fn slugs_follow_githubs_rules() {
    assert_eq!(
        slug("`rocetap agent`: memory with 1, 4 and 8 sources, CPU per million packets"),
        "rocetap-agent-memory-with-1-4-and-8-sources-cpu-per-million-packets"
    );
    assert_eq!(
        slug("What tests/lab_rxe.rs holds rocetap to"),
        "what-testslab_rxers-holds-rocetap-to"
    );
    assert_eq!(slug("truth.json"), "truthjson");
    assert_eq!(slug("See [the lab](lab.md) — now"), "see-the-lab--now");
    let a = anchors("# A\n```\n# not a heading\n```\n## A\n### B b\n");
    let want: BTreeSet<String> = ["a", "a-1", "b-b"]
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    assert_eq!(a, want);
    assert_eq!(
        link_targets("see [x](a.md#b) and ![i](img.png \"t\") but not `[c](d.md)`"),
        ["a.md#b", "img.png"]
    );
    assert_eq!(link_targets("[ref]: ../x.md"), ["../x.md"]);
}
