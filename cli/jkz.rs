//! `jkz`: the toolkit's command for a person at a terminal (and for pipeline
//! scripts). Its subcommands, their arguments and its exit codes live in
//! `jkz::jkz_cmd`; this file parses, runs, and maps the result to an exit
//! code.

use std::process::ExitCode;

use clap::Parser;
use jkz::jkz_cmd::{run, JkzCli};

fn main() -> ExitCode {
    let (program, result) = run(JkzCli::parse());
    jkz::exit::exit(program, result)
}
