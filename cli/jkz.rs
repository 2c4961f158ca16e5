//! `jkz`: the toolkit's command for a person at a terminal (and for pipeline
//! scripts). Its subcommands, their arguments and its exit codes live in
//! `jkz::jkz_cmd`; this file parses, runs, and maps the result to an exit
//! code.

use std::process::ExitCode;

use clap::Parser;
use jkz::jkz_cmd::{run, run_reduce, JkzCli};

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let (program, result) = match run_reduce(&args) {
        Some(done) => done,
        None => run(JkzCli::parse_from(args)),
    };
    jkz::exit::exit(program, result)
}
