//! `rocetap completions SHELL` and `rocetap man --out-dir DIR`, end to end through the
//! binary. The subcommands and their (visible) long options are read from the binary's
//! own `--help`, so a new option that the generated files miss fails here:
//! - every shell's script names every subcommand and every long option; bash's script is
//!   sourced and asked for real completions;
//! - there is `rocetap.1` plus one `rocetap-SUBCOMMAND.1` per subcommand, each naming
//!   its long options, and groff formats them without a warning;
//! - bad input is one line and exit 2.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SHELLS: &[&str] = &["bash", "zsh", "fish", "elvish", "powershell"];

fn run(args: &[&str]) -> Output {
    Command::new(common::bin())
        .args(args)
        .env("COLUMNS", "100")
        .output()
        .expect("run rocetap")
}

fn help(args: &[&str]) -> String {
    let mut a = args.to_vec();
    a.push("--help");
    let o = run(&a);
    assert!(o.status.success(), "{a:?}: {o:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// The entries of a help section (`Commands:`): the first word of each line indented
/// by exactly two spaces, up to the next blank line.
fn section<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| *l != title)
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

/// The visible subcommands (without clap's `help`).
fn subcommands() -> Vec<String> {
    let top = help(&[]);
    let subs: Vec<String> = section(&top, "Commands:")
        .into_iter()
        .filter(|s| *s != "help")
        .map(str::to_string)
        .collect();
    assert!(subs.len() >= 9, "{subs:?}");
    subs
}

/// The long options a help text documents in its `Options:` section.
fn long_options(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for l in text.lines() {
        if l == "Options:" {
            inside = true;
            continue;
        }
        if inside && !l.starts_with(' ') && !l.is_empty() {
            inside = false;
        }
        if !inside {
            continue;
        }
        let t = l.trim_start();
        // "-c, --count <N>" or "--events"
        let t = match t.split_once(", ") {
            Some((short, rest)) if short.len() == 2 && short.starts_with('-') => rest,
            _ => t,
        };
        if let Some(name) = t.strip_prefix("--") {
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if !name.is_empty() && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// (subcommand, its long options); "" is the top level.
fn tree() -> Vec<(String, Vec<String>)> {
    let mut out = vec![(String::new(), long_options(&help(&[])))];
    for s in subcommands() {
        let longs = long_options(&help(&[&s]));
        assert!(longs.contains(&"help".to_string()), "{s}: {longs:?}");
        out.push((s, longs));
    }
    out
}

#[test]
fn help_parsing_sees_the_options() {
    let t = tree();
    let analyze = &t.iter().find(|(s, _)| s == "analyze").unwrap().1;
    for l in ["fail-on", "events", "verbose", "color", "format"] {
        assert!(analyze.contains(&l.to_string()), "{analyze:?}");
    }
    // hidden options stay hidden
    assert!(!analyze.contains(&"stop-after".to_string()));
}

#[test]
fn completions_name_every_subcommand_and_long_option() {
    let t = tree();
    for shell in SHELLS {
        let o = run(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {o:?}");
        assert!(o.stderr.is_empty(), "{shell}");
        let text = String::from_utf8(o.stdout).unwrap();
        for (sub, longs) in &t {
            assert!(text.contains(sub.as_str()), "{shell}: no {sub}");
            for l in longs {
                let found = text.contains(&format!("--{l}")) || text.contains(&format!("-l {l}"));
                assert!(found, "{shell}: no --{l} of {sub:?}");
            }
        }
    }
}

/// Sources the bash script and asks it to complete `words` (the last one being typed).
fn bash_complete(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let prog = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={cword}; COMP_LINE='{}'; COMP_POINT=${{#COMP_LINE}}; \
         _rocetap rocetap '{}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.join(" "),
        words[cword],
    );
    let o = Command::new("bash").args(["-c", &prog]).output().unwrap();
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_options_and_values() {
    if !common::have("bash") {
        common::skip("bash is not installed");
        return;
    }
    let dir = tempdir("bash");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("rocetap.bash");
    std::fs::write(&script, run(&["completions", "bash"]).stdout).unwrap();
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(syntax.status.success(), "{syntax:?}");
    assert_eq!(bash_complete(&script, &["rocetap", "ana"]), ["analyze"]);
    assert_eq!(
        bash_complete(&script, &["rocetap", "analyze", "--fail-"]),
        ["--fail-on"]
    );
    assert_eq!(
        bash_complete(&script, &["rocetap", "--color", ""]),
        ["auto", "always", "never"]
    );
    let shells = bash_complete(&script, &["rocetap", "completions", ""]);
    for s in SHELLS {
        assert!(shells.iter().any(|x| x == s), "{shells:?}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocetap-gen-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn a_man_page_per_subcommand_naming_its_options() {
    let dir = tempdir("man");
    // the directory is created, with parents
    let out_dir = dir.join("share/man/man1");
    let o = run(&["man", "--out-dir", out_dir.to_str().unwrap()]);
    assert!(o.status.success(), "{o:?}");
    let listed: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let t = tree();
    assert_eq!(listed.len(), t.len(), "{listed:?}");
    let groff = common::have("groff");
    if !groff {
        common::skip("groff is not installed: man pages not formatted");
    }
    for (sub, longs) in &t {
        let name = if sub.is_empty() {
            "rocetap.1".to_string()
        } else {
            format!("rocetap-{sub}.1")
        };
        let path = out_dir.join(&name);
        assert!(
            listed.contains(&path.display().to_string()),
            "{name} not listed"
        );
        let page = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let title = if sub.is_empty() {
            "rocetap".into()
        } else {
            format!("rocetap-{sub}")
        };
        assert!(page.contains(&format!(".TH {title} 1 ")), "{name}: title");
        for l in longs {
            let roff = format!("\\-\\-{}", l.replace('-', "\\-"));
            assert!(page.contains(&roff), "{name}: no --{l}");
        }
        if groff {
            let g = Command::new("groff")
                .args(["-man", "-Tutf8", "-ww", "-z"])
                .arg(&path)
                .output()
                .unwrap();
            assert!(g.status.success() && g.stderr.is_empty(), "{name}: {g:?}");
        }
    }
    // the top-level page lists every subcommand's page
    let top = std::fs::read_to_string(out_dir.join("rocetap.1")).unwrap();
    for (sub, _) in t.iter().skip(1) {
        assert!(
            // roff escapes every hyphen, also those in a subcommand's name (qp-table)
            top.contains(&format!("rocetap\\-{}(1)", sub.replace('-', "\\-"))),
            "rocetap.1: no {sub}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let file = tempdir("file");
    std::fs::write(&file, b"not a directory").unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["completions", "nosuchshell"],
            "rocetap: invalid value 'nosuchshell'",
        ),
        (
            &["completions"],
            "rocetap: the following required arguments",
        ),
        (&["man"], "rocetap: the following required arguments"),
        (
            &["man", "--out-dir", file.to_str().unwrap()],
            "rocetap: man: writing into",
        ),
    ];
    for (args, want) in cases {
        let o = run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with(want), "{args:?}: {err}");
        assert!(err.lines().count() <= 2, "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    std::fs::remove_file(file).unwrap();
}
