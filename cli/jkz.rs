//! `jkz`: the command a person runs at a terminal.
//!
//! Exit codes:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success; for `doctor`, every check passed |
//! | 1 | failure: a check failed (`doctor`), settings jkz refuses to edit, an I/O error |
//! | 2 | usage: unknown subcommand or bad arguments |

use std::io::{self, BufWriter};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use jkz::cli::{exit, Failure};
use jkz::gc::GcArgs;
use jkz::setup::{DoctorArgs, InstallArgs, UninstallArgs};
use jkz::state_dir::StateDir;

#[derive(Parser, Debug)]
#[command(
    name = "jkz",
    version,
    about = "Install, check and maintain jkz in a Claude Code project"
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
    /// Register jkz's hooks and /jkz:save, /jkz:load in a project; create state/.
    Install(InstallArgs),
    /// Remove exactly what install added.
    Uninstall(UninstallArgs),
    /// Check binaries, hooks, commands, the state directory and pipeline files.
    Doctor(DoctorArgs),
    /// Apply retention to the state directory and report what it freed.
    Gc(GcArgs),
}

fn run(cli: Cli) -> Result<u8, Failure> {
    let mut out = BufWriter::new(io::stdout().lock());
    match cli.command {
        Command::Install(args) => jkz::setup::install(&args, &mut out),
        Command::Uninstall(args) => jkz::setup::uninstall(&args, &mut out),
        Command::Doctor(args) => jkz::setup::doctor(&args, cli.state_dir.as_deref(), &mut out),
        Command::Gc(args) => {
            let state = StateDir::resolve(cli.state_dir.as_deref(), None);
            jkz::gc::gc(&args, &state, &mut out)
        }
    }
}

fn main() -> ExitCode {
    exit("jkz", run(Cli::parse()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }
}
