//! The command layer: one file per subcommand. Each turns its clap arguments (`cli`)
//! into the validated configuration the library takes, runs it, and returns the exit
//! code; nothing below this layer sees a clap type.

pub mod agent;
pub mod analyze;
pub mod capture;
pub mod decode;
pub mod gen;
pub mod interfaces;
pub mod nccl;
pub mod netcheck;
pub mod qptable;
pub mod sflow;
pub mod synth;
pub mod top;

use crate::cli::{Cli, Command};
use rocetap::error::Failure;

/// Runs the subcommand; `Ok` carries the exit code.
pub fn run(cli: Cli) -> Result<i32, Failure> {
    let color = cli.color_on();
    match cli.command {
        Command::Decode(a) => decode::run(a, color),
        Command::Synth(a) => synth::run(a),
        Command::Netcheck(a) => netcheck::run(a, color),
        Command::Analyze(a) => analyze::run(a, color),
        Command::Capture(a) => capture::run(a),
        Command::Interfaces(a) => interfaces::run(a),
        Command::Top(a) => top::run(a),
        Command::Agent(a) => agent::run(*a),
        Command::QpTable(a) => qptable::run(a),
        Command::Nccl(a) => nccl::run(a),
        Command::Sflow(a) => sflow::run(a),
        Command::Completions(a) => gen::completions(a.shell),
        Command::Man(a) => gen::man_pages(&a.out_dir),
    }
}
