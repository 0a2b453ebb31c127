//! `rocetap completions SHELL` and `rocetap man --out-dir DIR`: shell completion scripts
//! and man pages generated from the clap definitions in `cli`, so they can never disagree
//! with what the parser accepts. Hidden subcommands and options stay out of both.

use crate::cli::Cli;
use clap::CommandFactory;
use rocetap::error::{exit, is_broken_pipe, Failure};
use std::io::{self, Write};
use std::path::Path;

/// Writes the completion script for `shell` to stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<i32, Failure> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "rocetap", &mut buf);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match out.write_all(&buf).and_then(|()| out.flush()) {
        Ok(()) => Ok(exit::OK),
        Err(e) if is_broken_pipe(&e) => Ok(exit::OK),
        Err(e) => Err(Failure::new(format!("writing output: {e}"))),
    }
}

/// Writes `rocetap.1` and `rocetap-SUBCOMMAND.1` for every visible subcommand into `dir`
/// (created when missing) and lists the files written on stdout.
pub fn man_pages(dir: &Path) -> Result<i32, Failure> {
    let fail = |e: io::Error| Failure::new(format!("man: writing into {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let mut list = String::new();
    for page in pages() {
        let path = dir.join(page.get_filename());
        page.generate_to(dir).map_err(fail)?;
        list.push_str(&format!("{}\n", path.display()));
    }
    let mut out = io::stdout().lock();
    match out.write_all(list.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(exit::OK),
        Err(e) if is_broken_pipe(&e) => Ok(exit::OK),
        Err(e) => Err(Failure::new(format!("writing output: {e}"))),
    }
}

/// The pages: the top-level one, then one per visible subcommand (named
/// `rocetap-SUBCOMMAND`, as git and cargo name theirs).
fn pages() -> Vec<clap_mangen::Man> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let page = |c: &clap::Command| {
        clap_mangen::Man::new(c.clone()).source(format!("rocetap {}", env!("CARGO_PKG_VERSION")))
    };
    let mut out = vec![page(&cmd)];
    // Once built, clap names each subcommand `rocetap-SUBCOMMAND` (its display name, the
    // page's title and file name) and `rocetap SUBCOMMAND` (its bin name, the synopsis).
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out.push(page(sub));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every visible subcommand with its visible long options, from the real clap tree.
    fn tree() -> Vec<(String, Vec<String>)> {
        let mut cmd = Cli::command();
        cmd.build();
        let longs = |c: &clap::Command| -> Vec<String> {
            c.get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long().map(str::to_string))
                .collect()
        };
        let mut out = vec![(String::new(), longs(&cmd))];
        for s in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            if s.get_name() != "help" {
                out.push((s.get_name().to_string(), longs(s)));
            }
        }
        out
    }

    #[test]
    fn completions_name_every_subcommand_and_long_option() {
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
            clap_complete::Shell::Elvish,
            clap_complete::Shell::PowerShell,
        ] {
            let mut cmd = Cli::command();
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cmd, "rocetap", &mut buf);
            let text = String::from_utf8(buf).unwrap();
            for (sub, longs) in tree() {
                assert!(text.contains(&sub), "{shell}: no subcommand {sub}");
                for l in longs {
                    // fish writes `-l color`, the others `--color`
                    let found =
                        text.contains(&format!("--{l}")) || text.contains(&format!("-l {l}"));
                    assert!(found, "{shell}: no --{l} of {sub:?}");
                }
            }
        }
    }

    #[test]
    fn a_man_page_per_subcommand_with_its_long_options() {
        let pages = pages();
        let names: Vec<String> = pages.iter().map(clap_mangen::Man::get_filename).collect();
        for (sub, longs) in tree() {
            let file = if sub.is_empty() {
                "rocetap.1".to_string()
            } else {
                format!("rocetap-{sub}.1")
            };
            let i = names.iter().position(|n| *n == file);
            let i = i.unwrap_or_else(|| panic!("no {file} in {names:?}"));
            let mut buf = Vec::new();
            pages[i].render(&mut buf).unwrap();
            let text = String::from_utf8(buf).unwrap();
            for l in longs {
                // roff escapes each '-' of an option as `\-`
                let roff = format!("\\-\\-{}", l.replace('-', "\\-"));
                assert!(text.contains(&roff), "{file}: no --{l}");
            }
        }
    }
}
