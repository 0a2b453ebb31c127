//! The two commands at the top of README.md, held to what they promise:
//! - the second is exactly the test command `.ci/run` runs;
//! - the first works as root on a machine without sudo and as a user with sudo: it is run
//!   by sh, bash (and zsh where installed) with stand-ins for `apt-get` and `cargo` that
//!   record how they were called, with and without a `sudo` on PATH, and the real
//!   `rocetap` — whose output must be the sample's golden analysis;
//! - the packages it installs exist for apt (installed, or known to apt-cache);
//! - its `cargo install --locked --path .` really installs a working `rocetap` (into a
//!   temporary root; in the dev profile, reusing this test build's artifacts: a release
//!   build takes minutes on a small machine).

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The commands of README.md's first ```sh block (comments and blank lines dropped).
fn readme_commands() -> Vec<String> {
    let text = fs::read_to_string(repo().join("README.md")).expect("README.md");
    let block: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim() != "```sh")
        .skip(1)
        .take_while(|l| l.trim() != "```")
        .collect();
    block
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

fn install_command() -> String {
    let c = readme_commands();
    assert_eq!(
        c.len(),
        2,
        "README's first block must hold two commands: {c:?}"
    );
    c[0].clone()
}

#[test]
fn the_second_command_is_the_test_suite_ci_runs() {
    let c = readme_commands();
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(c[1], "cargo test --workspace --locked");
    let ci = fs::read_to_string(repo().join(".ci/run")).expect(".ci/run");
    assert!(
        ci.lines().any(|l| l.trim() == c[1]),
        ".ci/run does not run {:?} verbatim",
        c[1]
    );
}

#[test]
fn the_first_command_never_hard_requires_sudo() {
    let cmd = install_command();
    let words: Vec<&str> = cmd.split_whitespace().collect();
    assert!(
        !words.contains(&"sudo"),
        "a bare sudo fails where there is none: {cmd}"
    );
    // every apt-get goes through `$(command -v sudo)`, and nothing else does
    for (i, w) in words.iter().enumerate() {
        if *w == "apt-get" {
            assert!(i >= 3, "{cmd}");
            assert_eq!(words[i - 3..i], ["$(command", "-v", "sudo)"], "{cmd}");
        }
    }
    assert_eq!(
        cmd.matches("$(command -v sudo)").count(),
        cmd.matches("apt-get").count()
    );
    // the sample it runs on ships with the repository
    let sample = words.last().unwrap();
    assert!(sample.starts_with("samples/"), "{cmd}");
    assert!(repo().join(sample).is_file(), "{sample} missing");
    if repo().join(".git").exists() {
        let o = Command::new("git")
            .args(["ls-files", "--error-unmatch", sample])
            .current_dir(repo())
            .output();
        if let Ok(o) = o {
            assert!(
                o.status.success(),
                "{sample} is not tracked by git: a clone lacks it"
            );
        }
    }
}

/// A directory of stand-ins: `apt-get` and `cargo` append their argv to `log` and succeed;
/// `sudo` (when asked for) logs and runs the rest; `rocetap` is the binary under test.
fn stubs(tag: &str, with_sudo: bool) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("rocetap-readme-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let log = dir.join("log");
    let mut tools = vec!["apt-get", "cargo"];
    if with_sudo {
        tools.push("sudo");
    }
    for t in tools {
        let body = if t == "sudo" {
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"sudo $*\" >> '{}'\nexec \"$@\"\n",
                log.display()
            )
        } else {
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"{t} $*\" >> '{}'\n",
                log.display()
            )
        };
        let p = bin.join(t);
        fs::write(&p, body).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::os::unix::fs::symlink(common::bin(), bin.join("rocetap")).unwrap();
    (dir, log)
}

/// Runs the README's first command in `shell` with only the stand-ins on PATH.
fn run_install(shell: &str, with_sudo: bool) -> (Vec<String>, String) {
    let tag = format!("{}-{with_sudo}", shell.rsplit('/').next().unwrap());
    let (dir, log) = stubs(&tag, with_sudo);
    let o = Command::new(shell)
        .arg("-c")
        .arg(install_command())
        .current_dir(repo())
        .env_clear()
        .env("PATH", dir.join("bin"))
        .env("HOME", &dir)
        .stdin(Stdio::null())
        .output()
        .expect("run the shell");
    assert!(o.status.success(), "{shell} (sudo: {with_sudo}): {o:?}");
    let calls = fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    fs::remove_dir_all(&dir).unwrap();
    (calls, String::from_utf8(o.stdout).unwrap())
}

fn shells() -> Vec<String> {
    let mut out = vec!["/bin/sh".to_string()];
    if Path::new("/bin/bash").exists() {
        out.push("/bin/bash".into());
    }
    if let Some(z) = ["/bin/zsh", "/usr/bin/zsh"]
        .iter()
        .find(|z| Path::new(z).exists())
    {
        out.push(z.to_string());
    }
    out
}

/// What the run prints: the golden analysis of the sample (named as the command names it).
fn expected_output() -> String {
    let cmd = install_command();
    let sample = cmd.split_whitespace().last().unwrap();
    let stem = sample.trim_end_matches(".pcap");
    let golden = fs::read_to_string(repo().join(format!("{stem}.analyze.txt"))).unwrap();
    let file = Path::new(sample).file_name().unwrap().to_str().unwrap();
    golden.replacen(&format!("{file}:"), &format!("{sample}:"), 1)
}

#[test]
fn as_root_without_sudo_it_runs_apt_get_directly() {
    for sh in shells() {
        let (calls, out) = run_install(&sh, false);
        assert_eq!(
            calls,
            [
                "apt-get update",
                "apt-get install -y libpcap-dev",
                "cargo install --locked --path ."
            ],
            "{sh}"
        );
        assert_eq!(out, expected_output(), "{sh}");
    }
}

#[test]
fn as_a_user_with_sudo_only_apt_get_runs_under_sudo() {
    for sh in shells() {
        let (calls, out) = run_install(&sh, true);
        assert_eq!(
            calls,
            [
                "sudo apt-get update",
                "apt-get update",
                "sudo apt-get install -y libpcap-dev",
                "apt-get install -y libpcap-dev",
                "cargo install --locked --path ."
            ],
            "{sh}"
        );
        assert_eq!(out, expected_output(), "{sh}");
    }
}

#[test]
fn the_packages_it_installs_exist() {
    let cmd = install_command();
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "install").unwrap();
    let pkgs: Vec<&str> = words[at + 1..]
        .iter()
        .take_while(|w| **w != "&&")
        .filter(|w| !w.starts_with('-'))
        .copied()
        .collect();
    assert_eq!(pkgs, ["libpcap-dev"]);
    if Command::new("apt-cache").arg("--version").output().is_err() {
        common::skip("no apt-cache here (not Debian/Ubuntu)");
        return;
    }
    for p in pkgs {
        let installed = Command::new("dpkg-query")
            .args(["-W", "-f", "${Status}", p])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"));
        let known = Command::new("apt-cache")
            .args(["show", "--no-all-versions", p])
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
        if !(installed || known) {
            common::skip(&format!(
                "{p}: neither installed nor in apt's lists (run apt-get update)"
            ));
        }
    }
}

#[test]
fn its_cargo_install_installs_a_working_rocetap() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // The test binary lives in TARGET/debug/: build there, in the dev profile, so the
    // dependencies this test run already compiled are reused.
    let target = Path::new(common::bin())
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf();
    let root = std::env::temp_dir().join(format!("rocetap-readme-root-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    let t = std::time::Instant::now();
    let o = Command::new(&cargo)
        .args([
            "install",
            "--locked",
            "--offline",
            "--debug",
            "--path",
            ".",
            "--root",
        ])
        .arg(&root)
        .current_dir(repo())
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTFLAGS")
        .stdin(Stdio::null())
        .output()
        .expect("run cargo");
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() && err.contains("offline") {
        common::skip(&format!("cargo install needs the network here: {err}"));
        return;
    }
    assert!(o.status.success(), "{err}");
    let installed = root.join("bin/rocetap");
    assert!(installed.is_file(), "{err}");
    let cmd = install_command();
    let sample = cmd.split_whitespace().last().unwrap();
    let a = Command::new(&installed)
        .args(["analyze", sample])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(a.status.success(), "{a:?}");
    assert_eq!(String::from_utf8(a.stdout).unwrap(), expected_output());
    fs::remove_dir_all(&root).unwrap();
    assert!(
        t.elapsed().as_secs() < 180,
        "cargo install took {:?}",
        t.elapsed()
    );
}
