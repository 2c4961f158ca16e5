//! `jkz-truncate`: parse arguments, run the library, map the result to an
//! exit code. Its arguments, help and every rule live in `jkz::truncate`.

use std::process::ExitCode;

use jkz::truncate::command;

fn main() -> ExitCode {
    let cli = command::parse();
    jkz::exit::exit(command::PROGRAM, command::run(cli))
}
