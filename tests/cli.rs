//! Integration tests of the command line end to end through the binary: `--help` goldens,
//! color, `decode`, completions and man pages, `-v`, closed outputs, README.md's commands,
//! `qp-table`, and the docs (ARCHITECTURE.md places every file, links resolve).
//!
//! One test binary for the area (`cargo test --test cli`); each module is one former
//! `tests/NAME.rs` binary, kept under `tests/cli/` (`cargo test --test cli NAME::`). Tests
//! here run on parallel threads: those that must not overlap another hold
//! `common::serial()` for their length.

mod common;

#[path = "cli/cli_color.rs"]
mod cli_color;
#[path = "cli/cli_decode.rs"]
mod cli_decode;
#[path = "cli/cli_gen.rs"]
mod cli_gen;
#[path = "cli/cli_verbose.rs"]
mod cli_verbose;
#[path = "cli/docs.rs"]
mod docs;
#[path = "cli/help.rs"]
mod help;
#[path = "cli/output_closed.rs"]
mod output_closed;
#[path = "cli/qp_table_cli.rs"]
mod qp_table_cli;
#[path = "cli/readme_commands.rs"]
mod readme_commands;
