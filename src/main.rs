//! rocetap: parse the command line, run the command, map the result to an exit code.

mod analysis;
mod analyze;
mod capture;
mod capture_cmd;
mod cli;
mod decode;
mod error;
mod gen;
mod interfaces;
mod netcheck;
mod report;
mod source;
mod synth;
mod tui;

use error::{exit, Failure};

fn main() {
    let cli = cli::Cli::parse_args();
    let color = cli.color_on();
    let result: Result<i32, Failure> = match cli.command {
        cli::Command::Decode(a) => decode::run(a, color),
        cli::Command::Synth(a) => synth::run(a),
        cli::Command::Netcheck(a) => netcheck::run(a, color),
        cli::Command::Analyze(a) => analyze::run(a, color),
        cli::Command::Capture(a) => capture_cmd::run(a),
        cli::Command::Interfaces(a) => interfaces::run(a),
        cli::Command::Top(a) => tui::run(a),
        cli::Command::Completions(a) => gen::completions(a.shell),
        cli::Command::Man(a) => gen::man_pages(&a.out_dir),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(f) => {
            eprintln!("rocetap: {}", f.what);
            if let Some(h) = f.hint {
                eprintln!("hint: {h}");
            }
            std::process::exit(exit::ERROR);
        }
    }
}
