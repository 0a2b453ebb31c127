//! `--color auto|always|never` and `NO_COLOR` (https://no-color.org) on the text outputs
//! that use color: `analyze`, `netcheck` and `decode`.
//! - into a pipe (every test here) `auto` writes no escape at all, so goldens hold;
//! - `always` colors, `never` does not, whatever the environment says;
//! - on a terminal (a pty from util-linux `script`) `auto` colors, unless NO_COLOR is set
//!   and not empty;
//! - color adds escapes and nothing else: without them the text is byte for byte the plain one.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

const ESC: u8 = 0x1b;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The commands whose text output has color, run from the repository root.
const CASES: &[&[&str]] = &[
    &[
        "analyze",
        "samples/loss-upstream.pcap",
        "--fail-on",
        "nak_psn_seq > 0",
    ],
    &["analyze", "samples/congestion.pcap", "--events"],
    &["netcheck", "--capture", "samples/sbr-arp.pcap"],
    &["decode", "samples/rnr.pcap"],
    &["decode", "samples/loss-upstream.pcap"],
    &["decode", "-v", "-c", "40", "samples/congestion.pcap"],
    &["analyze", "-v", "samples/rnr.pcap"],
];

/// rocetap with a clean color environment plus `env`.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(common::bin());
    c.args(args)
        .current_dir(repo())
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR")
        .env_remove("CLICOLOR_FORCE")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run rocetap")
}

fn has_esc(b: &[u8]) -> bool {
    b.contains(&ESC)
}

/// Removes the SGR sequences (`ESC [ ... m`) rocetap writes.
fn strip_sgr(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == ESC && b.get(i + 1) == Some(&b'[') {
            let mut j = i + 2;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b';') {
                j += 1;
            }
            assert_eq!(b.get(j), Some(&b'm'), "not an SGR sequence at {i}");
            i = j + 1;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn with(args: &[&str], color: &str) -> Vec<String> {
    let mut v: Vec<String> = args.iter().map(std::string::ToString::to_string).collect();
    v.insert(1, format!("--color={color}"));
    v
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn a_pipe_gets_no_color_by_default_or_with_never() {
    for args in CASES {
        let plain = run(args, &[]);
        assert!(!plain.stdout.is_empty(), "{args:?}: {plain:?}");
        assert!(!has_esc(&plain.stdout), "{args:?}: escape in a pipe");
        assert!(!has_esc(&plain.stderr), "{args:?}: escape on stderr");
        let never = run(&strs(&with(args, "never")), &[("CLICOLOR_FORCE", "1")]);
        assert_eq!(never.stdout, plain.stdout, "{args:?}: --color never");
        assert_eq!(never.status.code(), plain.status.code());
        let no_color = run(args, &[("NO_COLOR", "1")]);
        assert_eq!(no_color.stdout, plain.stdout, "{args:?}: NO_COLOR=1");
    }
}

#[test]
fn always_colors_and_adds_nothing_but_escapes() {
    for args in CASES {
        let plain = run(args, &[]);
        // NO_COLOR only speaks to `auto`: `always` is an explicit request.
        let colored = run(&strs(&with(args, "always")), &[("NO_COLOR", "1")]);
        assert!(
            has_esc(&colored.stdout),
            "{args:?}: no color with --color always"
        );
        assert_eq!(
            String::from_utf8_lossy(&strip_sgr(&colored.stdout)),
            String::from_utf8_lossy(&plain.stdout),
            "{args:?}: colored text differs from the plain text beyond the escapes"
        );
        assert_eq!(colored.status.code(), plain.status.code(), "{args:?}");
    }
}

#[test]
fn color_is_a_global_option_accepted_after_the_subcommand() {
    let a = run(&["--color", "always", "decode", "samples/rnr.pcap"], &[]);
    let b = run(&["decode", "samples/rnr.pcap", "--color", "always"], &[]);
    assert!(a.status.success() && b.status.success());
    assert_eq!(a.stdout, b.stdout);
    assert!(has_esc(&a.stdout));
}

#[test]
fn colors_mark_the_trouble_words() {
    let o = run(
        &["--color=always", "analyze", "samples/loss-upstream.pcap"],
        &[],
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("\x1b[1;31mERROR\x1b[0m   6 NAKs"), "{text}");
    let o = run(&["--color=always", "decode", "samples/rnr.pcap"], &[]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("\x1b[1;33mRNR-NAK timer="), "{text}");
    let o = run(
        &["--color=always", "decode", "samples/congestion.pcap"],
        &[],
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("\x1b[35mECN=CE\x1b[0m"), "{text}");
    let o = run(
        &[
            "--color=always",
            "netcheck",
            "--capture",
            "samples/sbr-arp.pcap",
        ],
        &[],
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("\x1b[1;31mERROR\x1b[0m capture-"), "{text}");
}

#[test]
fn bad_color_values_are_one_line_and_exit_2() {
    for v in ["sometimes", "", "ALWAYS"] {
        let o = run(&["--color", v, "decode", "samples/rnr.pcap"], &[]);
        assert_eq!(o.status.code(), Some(2), "{v:?}: {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        let lines: Vec<&str> = err.lines().collect();
        assert!(lines[0].starts_with("rocetap: "), "{err}");
        assert!(lines[0].contains("'--color <WHEN>'"), "{err}");
        assert_eq!(lines.len(), 2, "{err}");
        assert_eq!(
            lines[1], "hint: possible values: auto, always, never",
            "{err}"
        );
        assert!(o.stdout.is_empty());
    }
}

/// Runs `rocetap ARGS` on a pseudo-terminal (util-linux `script`), returning what it wrote.
fn on_a_terminal(args: &[&str], no_color: Option<&str>) -> Option<Vec<u8>> {
    let have_script = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_script {
        common::skip("util-linux `script` is not installed (needed for a pseudo-terminal)");
        return None;
    }
    let cmd = std::iter::once(common::bin().to_string())
        .chain(args.iter().map(std::string::ToString::to_string))
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let mut c = Command::new("script");
    c.args(["-q", "-e", "-c", &format!("exec {cmd}"), "/dev/null"])
        .current_dir(repo())
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .stdin(Stdio::null());
    if let Some(v) = no_color {
        c.env("NO_COLOR", v);
    }
    let o = c.output().expect("run script");
    assert!(o.status.success(), "{o:?}");
    Some(o.stdout)
}

#[test]
fn auto_colors_a_terminal_unless_no_color_is_set() {
    let args = ["analyze", "samples/loss-upstream.pcap"];
    let Some(tty) = on_a_terminal(&args, None) else {
        return;
    };
    assert!(has_esc(&tty), "{}", String::from_utf8_lossy(&tty));
    let tty = on_a_terminal(&args, Some("1")).unwrap();
    assert!(
        !has_esc(&tty),
        "NO_COLOR=1: {}",
        String::from_utf8_lossy(&tty)
    );
    // An empty NO_COLOR does not count (no-color.org).
    let tty = on_a_terminal(&args, Some("")).unwrap();
    assert!(has_esc(&tty), "NO_COLOR empty");
    let tty = on_a_terminal(&["--color", "never", "analyze", "samples/rnr.pcap"], None).unwrap();
    assert!(!has_esc(&tty), "--color never on a terminal");
}

#[test]
fn clap_help_follows_color_too() {
    let plain = run(&["decode", "--help"], &[]);
    assert!(!has_esc(&plain.stdout));
    let colored = run(&["--color", "always", "decode", "--help"], &[]);
    assert!(has_esc(&colored.stdout));
    assert_eq!(strip_sgr(&colored.stdout), plain.stdout);
    let never = run(
        &["--color=never", "decode", "--help"],
        &[("CLICOLOR_FORCE", "1")],
    );
    assert_eq!(never.stdout, plain.stdout);
}
