//! `jkz`: the toolkit's command for a person at a terminal (and for pipeline
//! scripts). Each subcommand's arguments and behaviour live in its library
//! module; this file only wires them to clap.
//!
//! Exit codes: `jkz state`: see `jkz::state_cmd`; `jkz run`: `jkz::run`;
//! `jkz deliberations`: `jkz::deliberation::show`; `jkz lock`:
//! `jkz::lock_cmd`; `jkz circuit`: `jkz::circuit_cmd`; `jkz claim`, `release`,
//! `chats`: `jkz::registry::cmd`. `install`, `uninstall`,
//! `doctor`, `gc`, `stats`:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success; for `doctor`, every check passed |
//! | 1 | failure: a check failed (`doctor`), settings jkz refuses to edit, an I/O error |
//! | 2 | usage: unknown subcommand or bad arguments |

use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use jkz::gc::GcArgs;
use jkz::setup::{DoctorArgs, InstallArgs, UninstallArgs};
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
    /// Register jkz's hooks and /jkz:save, /jkz:load in a project (none where the
    /// jkz plugin is enabled); create state/.
    Install(InstallArgs),
    /// Remove exactly what install added.
    Uninstall(UninstallArgs),
    /// Check binaries, how jkz is registered (the plugin or settings, once),
    /// commands, the state directory and pipeline files.
    Doctor(DoctorArgs),
    /// Apply retention to the state directory and report what it freed.
    Gc(GcArgs),
    /// Sum up the tool-output guard's ledger: bytes in the window with and without jkz.
    Stats(jkz::tool_output::stats::StatsArgs),
    /// Run a model wrapper: its answer truncated to stdout, kept whole in a
    /// deliberation record; its circuit and lock honoured; its exit code out.
    Run(Box<jkz::run::RunArgs>),
    /// List the deliberation records, or show one's full response.
    Deliberations(jkz::deliberation::show::DeliberationsArgs),
    /// Show or reset the circuit breakers of external services.
    Circuit(jkz::circuit_cmd::CircuitArgs),
    /// Acquire, release and list worktree and pipeline locks.
    Lock(jkz::lock_cmd::LockArgs),
    /// Claim an issue (and its worktree) for a chat: other live chats' edits
    /// there are refused.
    Claim(jkz::registry::cmd::ClaimArgs),
    /// Release a chat's claim on an issue.
    Release(jkz::registry::cmd::ReleaseArgs),
    /// List the live and stale chats with their claims.
    Chats(jkz::registry::cmd::ChatsArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let state = StateDir::resolve(cli.state_dir.as_deref(), None);
    // install, uninstall, doctor and gc flush explicitly before returning.
    let buffered = || BufWriter::new(std::io::stdout().lock());
    match cli.command {
        Command::State(args) => {
            let mut out = std::io::stdout().lock();
            jkz::cli::exit("jkz state", jkz::state_cmd::run(args, &state, &mut out))
        }
        Command::Install(args) => {
            jkz::cli::exit("jkz install", jkz::setup::install(&args, &mut buffered()))
        }
        Command::Uninstall(args) => jkz::cli::exit(
            "jkz uninstall",
            jkz::setup::uninstall(&args, &mut buffered()),
        ),
        Command::Doctor(args) => jkz::cli::exit(
            "jkz doctor",
            jkz::setup::doctor(&args, cli.state_dir.as_deref(), &mut buffered()),
        ),
        Command::Gc(args) => jkz::cli::exit("jkz gc", jkz::gc::gc(&args, &state, &mut buffered())),
        Command::Stats(args) => jkz::cli::exit(
            "jkz stats",
            jkz::tool_output::stats::stats(&args, &state, &mut buffered()),
        ),
        Command::Run(args) => jkz::cli::exit("jkz run", jkz::run::run(&args, &state)),
        Command::Deliberations(args) => {
            use jkz::deliberation::show::{self, DeliberationsCommand};
            let mut err = std::io::stderr();
            let result = match &args.command {
                DeliberationsCommand::List(a) => show::list(a, &state, &mut buffered(), &mut err),
                DeliberationsCommand::Show(a) => show::show(a, &state, &mut buffered(), &mut err),
            };
            jkz::cli::exit("jkz deliberations", result)
        }
        Command::Circuit(args) => jkz::cli::exit(
            "jkz circuit",
            jkz::circuit_cmd::run(&args, &state, &mut buffered()),
        ),
        Command::Lock(args) => jkz::cli::exit(
            "jkz lock",
            jkz::lock_cmd::run(&args, &state, &mut buffered()),
        ),
        Command::Claim(args) => jkz::cli::exit(
            "jkz claim",
            jkz::registry::cmd::claim(&args, &state, &mut buffered()),
        ),
        Command::Release(args) => jkz::cli::exit(
            "jkz release",
            jkz::registry::cmd::release(&args, &state, &mut buffered()),
        ),
        Command::Chats(args) => jkz::cli::exit(
            "jkz chats",
            jkz::registry::cmd::chats(&args, &state, &mut buffered()),
        ),
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
