//! `--help` is part of the interface: the help of `rocetap` and of every subcommand is
//! compared with `tests/golden/help/<subcommand>.txt` (`rocetap.txt` for the top level),
//! so a changed option shows up in review. `UPDATE_EXPECT=1 cargo test --test cli help::`
//! rewrites them (review the diff like code).
//!
//! The rendering is pinned: 100 columns (COLUMNS; no terminal on any of stdin, stdout or
//! stderr, so clap's wrap_help cannot see one) and no color.

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/help")
}

fn update() -> bool {
    std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1")
}

fn help_of(sub: Option<&str>) -> String {
    let mut c = Command::new(common::bin());
    if let Some(s) = sub {
        c.arg(s);
    }
    let o = c
        .arg("--help")
        .env("COLUMNS", "100")
        .env_remove("LINES")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .output()
        .expect("run rocetap");
    assert!(o.status.success(), "{sub:?}: {o:?}");
    assert!(o.stderr.is_empty(), "{sub:?}");
    String::from_utf8(o.stdout).expect("utf-8 help")
}

/// The subcommands `rocetap --help` lists (without clap's `help`).
fn subcommands(top: &str) -> Vec<String> {
    top.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|s| *s != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn help_of_every_subcommand_matches_its_snapshot() {
    let top = help_of(None);
    let subs = subcommands(&top);
    assert!(subs.contains(&"analyze".to_string()), "{top}");
    let mut pages = vec![("rocetap".to_string(), top)];
    for s in &subs {
        pages.push((s.clone(), help_of(Some(s))));
    }
    let dir = golden_dir();
    if update() {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut failed = Vec::new();
    for (name, text) in &pages {
        let path = dir.join(format!("{name}.txt"));
        if update() {
            std::fs::write(&path, text).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(want) if want == *text => {}
            Ok(want) => {
                let first = want
                    .lines()
                    .zip(text.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or(want.lines().count().min(text.lines().count()));
                failed.push(format!(
                    "{}: differs from line {}:\n  want: {:?}\n  got:  {:?}",
                    path.display(),
                    first + 1,
                    want.lines().nth(first),
                    text.lines().nth(first)
                ));
            }
            Err(e) => failed.push(format!("{}: {e}", path.display())),
        }
    }
    // a snapshot of a subcommand that no longer exists is stale
    let names: BTreeSet<String> = pages.iter().map(|(n, _)| format!("{n}.txt")).collect();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let f = e.file_name().to_string_lossy().to_string();
        if !names.contains(&f) {
            failed.push(format!("{f}: no such subcommand any more (remove it)"));
        }
    }
    assert!(
        failed.is_empty(),
        "--help changed (UPDATE_EXPECT=1 cargo test --test cli help:: rewrites the snapshots; \
         review the diff):\n{}",
        failed.join("\n")
    );
}

#[test]
fn help_does_not_depend_on_a_wide_terminal_setting() {
    // Lines stay within the pinned width (clap wraps at COLUMNS) ...
    for l in help_of(Some("analyze")).lines() {
        assert!(l.chars().count() <= 100, "{l}");
    }
    // ... and `help SUB` is the same text as `SUB --help`.
    let o = Command::new(common::bin())
        .args(["help", "decode"])
        .env("COLUMNS", "100")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        help_of(Some("decode"))
    );
}
