//! `jkz-compress`: parse arguments, run the library, map the result to an
//! exit code. Its arguments, help and every rule live in `jkz::compress`.

use std::process::ExitCode;

use clap::Parser;
use jkz::compress::command::{run, CompressCli, PROGRAM};

fn main() -> ExitCode {
    jkz::exit::exit(PROGRAM, run(CompressCli::parse()))
}
