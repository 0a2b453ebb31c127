//! rocetap: parse the command line, run the command, map the result to an exit code.

mod cli;
mod cmd;

use rocetap::error::exit;

fn main() {
    match cmd::run(cli::Cli::parse_args()) {
        Ok(code) => std::process::exit(code),
        Err(f) => {
            // Errors name files, devices and entries from outside: escaped, one line.
            eprintln!("rocetap: {}", rocetap::report::safe::term(&f.what));
            if let Some(h) = f.hint {
                eprintln!("hint: {h}");
            }
            std::process::exit(exit::ERROR);
        }
    }
}
