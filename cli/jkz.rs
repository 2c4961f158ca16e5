//! `jkz`: the toolkit's command for a person at a terminal (and for pipeline
//! scripts). Each subcommand's arguments and behaviour live in its library
//! module; this file only wires them to clap.
//!
//! Exit codes: see each subcommand's module (`jkz state`: `jkz::state_cmd`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use jkz::state_dir::StateDir;

#[derive(Parser, Debug)]
#[command(
    name = "jkz",
    version,
    about = "Keep long-running Claude Code pipelines inside the context window"
)]
struct Cli {
    /// The state directory (default: $JKZ_STATE_DIR, else $CLAUDE_PROJECT_DIR/state, else ./state).
    #[arg(long, global = true, value_name = "DIR")]
    state_dir: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Read and write the pipeline state (state/pipeline/<N>.json).
    State(jkz::state_cmd::StateArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let state = StateDir::resolve(cli.state_dir.as_deref(), None);
    match cli.command {
        Command::State(args) => {
            let mut out = std::io::stdout().lock();
            jkz::cli::exit("jkz state", jkz::state_cmd::run(args, &state, &mut out))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert()
    }
}
