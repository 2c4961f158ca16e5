//! `jkz`: the toolkit's command for a person at a terminal (and for pipeline
//! scripts): its arguments and which library module runs each subcommand.
//! Each subcommand's own arguments and behaviour live in its module.
//!
//! Exit codes: `jkz state`: see [`crate::state_cmd`]; `jkz run`:
//! [`crate::run`]; `jkz deliberations`: [`crate::deliberation::show`];
//! `jkz lock`: [`crate::lock_cmd`]; `jkz circuit`: [`crate::circuit_cmd`];
//! `jkz findings`: [`crate::findings::cli`];
//! `jkz ui`: [`crate::ui`].
//! `jkz claim`, `release`, `chats`: [`crate::registry::cmd`].
//! `jkz registry`: [`crate::team::cmd`].
//! Every subcommand that uses the state directory stops, with its code for
//! an I/O failure (`jkz state`: 2, `jkz run`: 125, the others 1), when the
//! repository's layout cannot be read (see [`StateDir::check`]), and with
//! 1 (`jkz run`: 125, which CMD's own codes cannot be told from otherwise)
//! when git tracks the state directory (see
//! [`StateDir::tracked_by_git`]): it is not jkz's until the user untracks it.
//! `jkz events`: [`crate::events::cmd`]; `jkz metrics`: [`crate::metrics::cmd`];
//! `jkz slo`: [`crate::slo::cmd`].
//! `jkz patterns`: [`crate::patterns::cmd`].
//! `jkz reduce`: [`crate::reduce::cmd`]; `jkz filters`: [`crate::reduce::filters_cmd`].
//! Every subcommand that needs a state directory and finds none stops
//! with [`crate::exit::EXIT_NO_STATE_DIR`] (4) and one message (see
//! [`needs`]).
//! `install`, `uninstall`, `doctor`, `attach`, `detach`, `gc`, `stats`:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success; for `doctor`, every check passed |
//! | 1 | failure: a check failed (`doctor`), settings jkz refuses to edit, an I/O error |
//! | 2 | usage: unknown subcommand or bad arguments |
//! | 4 | no state directory (`gc`, `stats`) |

use std::io::BufWriter;

use clap::{Parser, Subcommand};

use crate::exit::Failure;
use crate::gc::GcArgs;
use crate::setup::{DoctorArgs, InstallArgs, UninstallArgs};

#[derive(Parser, Debug)]
#[command(
    name = "jkz",
    version,
    about = "Keep long-running Claude Code pipelines inside the context window"
)]
pub struct JkzCli {
    #[command(flatten)]
    pub state: crate::state_dir::StateDirArg,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Read and write the pipeline state (state/pipeline/<N>.json).
    State(crate::state_cmd::StateArgs),
    /// Register jkz's hooks and /jkz:save, /jkz:load in a project (none where the
    /// jkz plugin is enabled); create state/.
    Install(InstallArgs),
    /// Remove exactly what install added.
    Uninstall(UninstallArgs),
    /// Check binaries, how jkz is registered (the plugin or settings, once),
    /// commands, the state directory (which one, and why) and pipeline files.
    Doctor(DoctorCmd),
    /// Share another checkout's state directory: record its root in this
    /// repository's git config (jkz.stateDir), for every tool started here.
    Attach(crate::setup::AttachArgs),
    /// Undo `jkz attach`: this repository uses its own state directory again.
    Detach(crate::setup::DetachArgs),
    /// Apply retention to the state directory and report what it freed.
    Gc(GcArgs),
    /// Sum up the savings ledger per tool, family or command: bytes in the
    /// window without jkz (the client alone) and with it.
    Stats(crate::tool_output::stats::StatsArgs),
    /// Reduce a command's output (stdin) to what matters, by what it is: signal
    /// lines kept verbatim, noise collapsed with counts, the whole kept on disk.
    Reduce(crate::reduce::cmd::ReduceArgs),
    /// Check the reducer's rules against their examples, or list them.
    Filters(crate::reduce::filters_cmd::FiltersArgs),
    /// Run a model wrapper: its answer truncated to stdout, kept whole in a
    /// deliberation record; its circuit and lock honoured; its exit code out.
    Run(Box<crate::run::RunArgs>),
    /// List the deliberation records, or show one's full response.
    Deliberations(crate::deliberation::show::DeliberationsArgs),
    /// Show or reset the circuit breakers of external services.
    Circuit(crate::circuit_cmd::CircuitArgs),
    /// Review findings across iterations (state/cr-history.db): import them,
    /// list an issue's with their status (new, open, resolved,
    /// reintroduced, dismissed), dismiss one.
    Findings(crate::findings::cli::FindingsArgs),
    /// Acquire, release and list worktree and pipeline locks.
    Lock(crate::lock_cmd::LockArgs),
    /// Serve a live view of every pipeline on 127.0.0.1, for the browser.
    #[cfg(feature = "ui")]
    Ui(crate::ui::UiArgs),
    /// Show the event log (state/events/): what happened, when, to which issue.
    Events(crate::events::cmd::EventsArgs),
    /// Pipeline metrics from the event log: completion rate, iterations,
    /// phase durations, agent runs (a table, JSON or Prometheus' format).
    Metrics(crate::metrics::cmd::MetricsArgs),
    /// Check the service-level objectives of jkz.toml against the metrics.
    Slo(crate::slo::cmd::SloArgs),
    /// Claim an issue (and its worktree) for a chat: other live chats' edits
    /// there are refused.
    Claim(crate::registry::cmd::ClaimArgs),
    /// Release a chat's claim on an issue.
    Release(crate::registry::cmd::ReleaseArgs),
    /// List the live and stale chats with their claims.
    Chats(crate::registry::cmd::ChatsArgs),
    /// Patterns learned from deliberations: mine, inject into prompts, give
    /// feedback, prune, list, search, show (state/memory.db).
    Patterns(crate::patterns::cmd::PatternsArgs),
    /// The team registry (PostgreSQL): `migrate` creates or upgrades its tables.
    Registry(crate::team::cmd::RegistryArgs),
    /// Print the completion script of jkz (or of another of its binaries)
    /// for bash, zsh or fish.
    Completions(crate::manual::CompletionsArgs),
    /// Write the man pages of every jkz binary and subcommand into a
    /// directory.
    Man(crate::manual::ManArgs),
}

/// `jkz doctor`: its checks ([`DoctorArgs`]), for people or as JSON.
#[derive(clap::Args, Debug, Clone)]
pub struct DoctorCmd {
    #[command(flatten)]
    pub args: DoctorArgs,
    /// Print one JSON object instead of lines: ok, failed (a count) and
    /// checks, each with its status (ok, fail, note) and text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `jkz doctor`, its lines turned into one JSON object with `--json`
/// ([`crate::json_output::checks`]).
fn doctor(
    cmd: &DoctorCmd,
    state_flag: Option<&std::path::Path>,
    out: &mut dyn std::io::Write,
) -> Result<u8, Failure> {
    if !cmd.json {
        return crate::setup::doctor(&cmd.args, state_flag, out);
    }
    let mut lines = Vec::new();
    let code = crate::setup::doctor(&cmd.args, state_flag, &mut lines)?;
    let checks = crate::json_output::checks(&String::from_utf8_lossy(&lines));
    crate::json_output::write(out, &checks)
        .map_err(|e| Failure::io(crate::exit::EXIT_FAILED, "writing stdout", e))?;
    Ok(code)
}

/// `jkz reduce` with only its own arguments and `--state-dir` parsed: it
/// runs once per command an agent runs, and building the whole command
/// line's parser (every subcommand's arguments) cost it half a
/// millisecond. `None` when the arguments are not `reduce …`, or are not
/// valid for it (`--help`, a bad flag: the whole parser then answers, with
/// the same messages as ever).
pub fn run_reduce(args: &[std::ffi::OsString]) -> Option<(&'static str, Result<u8, Failure>)> {
    #[derive(Parser, Debug)]
    #[command(name = "jkz reduce")]
    struct ReduceCli {
        #[command(flatten)]
        state: crate::state_dir::StateDirArg,
        #[command(flatten)]
        args: crate::reduce::cmd::ReduceArgs,
    }
    if args.get(1).map(|a| a.as_os_str()) != Some(std::ffi::OsStr::new("reduce")) {
        return None;
    }
    let cli = ReduceCli::try_parse_from(args[1..].iter()).ok()?;
    let state = cli.state.resolve();
    Some((
        crate::reduce::cmd::PROGRAM,
        crate::reduce::cmd::run(&cli.args, &state),
    ))
}

/// Runs a parsed command line: the program name its errors carry
/// (`jkz gc`, …) and the subcommand's result.
pub fn run(cli: JkzCli) -> (&'static str, Result<u8, Failure>) {
    let state = cli.state.resolve();
    // A repository whose layout cannot be read stops every command that
    // uses the state directory (a hook falls back instead); the setup
    // commands report it themselves.
    let failed_code = match &cli.command {
        Command::Install(_)
        | Command::Uninstall(_)
        | Command::Doctor(_)
        | Command::Attach(_)
        | Command::Detach(_)
        // A filter fails open: it keeps no full output rather than stop.
        | Command::Reduce(_)
        | Command::Filters(_)
        | Command::Completions(_)
        | Command::Man(_) => None,
        // 1 means "an objective was violated": nothing to measure is 2.
        Command::State(_) | Command::Slo(_) => Some(2),
        Command::Run(_) => Some(crate::run::EXIT_FAILED),
        _ => Some(1),
    };
    if let (Some(code), Err(why)) = (failed_code, state.check()) {
        return (program(&cli.command), Err(Failure::new(code, why)));
    }
    // A state directory git tracks is not jkz's: no command reads or
    // writes it until the user untracks it (the line says how).
    if let (Some(code), Err(why)) = (failed_code, state.check_untracked()) {
        let code = match &cli.command {
            Command::Run(_) => code,
            _ => crate::exit::EXIT_FAILED,
        };
        return (program(&cli.command), Err(Failure::new(code, why)));
    }
    // No state directory: one message and one code for every subcommand
    // that uses it; a writer creates a root the user named.
    let missing = match needs(&cli.command) {
        Needs::Nothing => false,
        Needs::Existing => state.is_absent(),
        Needs::Writable => state.is_absent() && !state.source().is_explicit(),
    };
    if missing {
        return (
            program(&cli.command),
            Err(Failure::new(
                crate::exit::EXIT_NO_STATE_DIR,
                state.missing(),
            )),
        );
    }
    // Every subcommand given `buffered()` flushes it explicitly.
    let buffered = || BufWriter::new(std::io::stdout().lock());
    match cli.command {
        Command::State(args) => {
            let mut out = std::io::stdout().lock();
            ("jkz state", crate::state_cmd::run(args, &state, &mut out))
        }
        Command::Install(args) => ("jkz install", crate::setup::install(&args, &mut buffered())),
        Command::Uninstall(args) => (
            "jkz uninstall",
            crate::setup::uninstall(&args, &mut buffered()),
        ),
        Command::Doctor(cmd) => (
            "jkz doctor",
            doctor(&cmd, cli.state.named(), &mut buffered()),
        ),
        Command::Gc(args) => ("jkz gc", crate::gc::gc(&args, &state, &mut buffered())),
        Command::Stats(args) => (
            "jkz stats",
            crate::tool_output::stats::stats(&args, &state, &mut buffered()),
        ),
        Command::Run(args) => ("jkz run", crate::run::run(&args, &state)),
        Command::Reduce(args) => (
            crate::reduce::cmd::PROGRAM,
            crate::reduce::cmd::run(&args, &state),
        ),
        Command::Filters(args) => (
            "jkz filters",
            crate::reduce::filters_cmd::run(&args, &state, &mut buffered()),
        ),
        Command::Deliberations(args) => {
            use crate::deliberation::show::{self, DeliberationsCommand};
            let mut err = std::io::stderr();
            let result = match &args.command {
                DeliberationsCommand::List(a) => show::list(a, &state, &mut buffered(), &mut err),
                DeliberationsCommand::Show(a) => show::show(a, &state, &mut buffered(), &mut err),
            };
            ("jkz deliberations", result)
        }
        Command::Circuit(args) => (
            "jkz circuit",
            crate::circuit_cmd::run(&args, &state, &mut buffered()),
        ),
        Command::Findings(args) => (
            "jkz findings",
            crate::findings::cli::run(&args, &state, &mut buffered()),
        ),
        Command::Lock(args) => (
            "jkz lock",
            crate::lock_cmd::run(&args, &state, &mut buffered()),
        ),
        #[cfg(feature = "ui")]
        Command::Ui(args) => (
            "jkz ui",
            crate::ui::run(&args, &state, &mut std::io::stdout()),
        ),
        Command::Events(args) => (
            "jkz events",
            crate::events::cmd::run(&args, &state, &mut std::io::stdout().lock()),
        ),
        Command::Metrics(args) => (
            "jkz metrics",
            crate::metrics::cmd::run(&args, &state, &mut std::io::stdout().lock()),
        ),
        Command::Slo(args) => (
            "jkz slo",
            crate::slo::cmd::run(&args, &state, &mut std::io::stdout().lock()),
        ),
        Command::Claim(args) => (
            "jkz claim",
            crate::registry::cmd::claim(&args, &state, &mut buffered()),
        ),
        Command::Release(args) => (
            "jkz release",
            crate::registry::cmd::release(&args, &state, &mut buffered()),
        ),
        Command::Chats(args) => (
            "jkz chats",
            crate::registry::cmd::chats(&args, &state, &mut buffered()),
        ),
        Command::Patterns(args) => (
            crate::patterns::cmd::program(&args),
            crate::patterns::cmd::run(&args, &state, &mut buffered(), &mut std::io::stderr()),
        ),
        Command::Registry(args) => (
            "jkz registry",
            crate::team::cmd::run(&args, &state, &mut buffered()),
        ),
        Command::Completions(args) => (
            "jkz completions",
            crate::manual::completions(&args, &mut buffered()),
        ),
        Command::Man(args) => ("jkz man", crate::manual::man(&args, &mut buffered())),
        Command::Attach(args) => ("jkz attach", crate::setup::attach(&args, &mut buffered())),
        Command::Detach(args) => ("jkz detach", crate::setup::detach(&args, &mut buffered())),
    }
}

/// What a subcommand needs of the state directory before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Needs {
    /// Nothing, or it says itself: the setup commands (they make or check
    /// it), `jkz run` (its CMD runs without one; its own code, 125, when
    /// `--service` or `--lock` needs one), the filters (they fail open) and
    /// the team registry (PostgreSQL).
    Nothing,
    /// One that exists: a reader has nothing to read without it.
    Existing,
    /// One that exists, or one the user named (`--state-dir`,
    /// `JKZ_STATE_DIR`), which a writer creates.
    Writable,
}

fn needs(command: &Command) -> Needs {
    use crate::events::cmd::EventsCommand;
    use crate::findings::cli::FindingsCommand;
    use crate::lock_cmd::LockCommand;
    use crate::patterns::cmd::PatternsCommand;
    use crate::state_cmd::StateCommand;
    match command {
        Command::Install(_)
        | Command::Uninstall(_)
        | Command::Doctor(_)
        | Command::Attach(_)
        | Command::Detach(_)
        | Command::Run(_)
        | Command::Reduce(_)
        | Command::Filters(_)
        | Command::Registry(_)
        | Command::Completions(_)
        | Command::Man(_) => Needs::Nothing,
        Command::State(args) => match args.command {
            StateCommand::Set { .. } => Needs::Writable,
            _ => Needs::Existing,
        },
        Command::Lock(args) => match args.command {
            LockCommand::Acquire { .. } => Needs::Writable,
            _ => Needs::Existing,
        },
        Command::Findings(args) => match args.command {
            Some(FindingsCommand::Import(_)) => Needs::Writable,
            _ => Needs::Existing,
        },
        Command::Patterns(args) => match args.command {
            PatternsCommand::Mine(_) => Needs::Writable,
            _ => Needs::Existing,
        },
        Command::Events(args) => match args.command {
            Some(EventsCommand::Rebuild) => Needs::Writable,
            None => Needs::Existing,
        },
        Command::Claim(_) => Needs::Writable,
        Command::Gc(_)
        | Command::Stats(_)
        | Command::Deliberations(_)
        | Command::Circuit(_)
        | Command::Metrics(_)
        | Command::Slo(_)
        | Command::Release(_)
        | Command::Chats(_) => Needs::Existing,
        #[cfg(feature = "ui")]
        Command::Ui(_) => Needs::Existing,
    }
}

/// The name a subcommand's errors carry.
fn program(command: &Command) -> &'static str {
    match command {
        Command::State(_) => "jkz state",
        Command::Install(_) => "jkz install",
        Command::Uninstall(_) => "jkz uninstall",
        Command::Doctor(_) => "jkz doctor",
        Command::Attach(_) => "jkz attach",
        Command::Detach(_) => "jkz detach",
        Command::Gc(_) => "jkz gc",
        Command::Stats(_) => "jkz stats",
        Command::Run(_) => "jkz run",
        Command::Reduce(_) => crate::reduce::cmd::PROGRAM,
        Command::Filters(_) => "jkz filters",
        Command::Deliberations(_) => "jkz deliberations",
        Command::Circuit(_) => "jkz circuit",
        Command::Lock(_) => "jkz lock",
        #[cfg(feature = "ui")]
        Command::Ui(_) => "jkz ui",
        Command::Claim(_) => "jkz claim",
        Command::Release(_) => "jkz release",
        Command::Chats(_) => "jkz chats",
        Command::Events(_) => "jkz events",
        Command::Metrics(_) => "jkz metrics",
        Command::Slo(_) => "jkz slo",
        Command::Findings(_) => "jkz findings",
        Command::Registry(_) => "jkz registry",
        Command::Completions(_) => "jkz completions",
        Command::Man(_) => "jkz man",
        Command::Patterns(args) => crate::patterns::cmd::program(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        JkzCli::command().debug_assert()
    }
}
