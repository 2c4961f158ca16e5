//! What every hook's `main` shares: a hook never hurts its host.
//!
//! Exit codes of a hook: exactly one, 0. Whatever happens — bad input, an
//! unwritable state directory, a panic — the hook says why in one line on
//! stderr and exits 0, so compaction (or the session) goes on.

use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::state_dir::StateDir;

/// A hook's command line: no options of its own, only `--help` and
/// `--version`. `about` is the one-line summary, `long_about` the rest of
/// the help (what it reads, what it writes, its one exit code).
/// The end of the compaction hooks' help: where their state is and their
/// one exit code (the state-root order is [`crate::state_dir::StateDir::resolve`]'s).
pub const STATE_AND_EXIT_HELP: &str = "
State directory: the repository's, used only if it exists and git does not
track it (which one, and why: docs/worktrees.md).

Exit code: 0, always; a problem is one line on stderr.";

pub fn command(
    program: &'static str,
    about: &'static str,
    long_about: &'static str,
) -> clap::Command {
    clap::Command::new(program)
        .version(env!("CARGO_PKG_VERSION"))
        .about(about)
        .long_about(long_about)
}

/// Runs a hook body: its warnings go to stderr one line each (prefixed with
/// `program`), a panic is caught and reported in one line, and the exit code
/// is always 0. `--help` and `--version` print and exit; any other argument
/// is reported in one line and ignored, so a mistyped registration still
/// never blocks the host.
pub fn main(cli: clap::Command, body: impl FnOnce(&mut Warnings)) -> ExitCode {
    // The default panic message spans lines and names source files; the
    // catch below reports one line instead.
    panic::set_hook(Box::new(|_| {}));
    crate::deadline::start_hook();
    let mut warnings = Warnings {
        program: cli.get_name().to_string(),
    };
    if let Err(e) = cli.try_get_matches() {
        use clap::error::ErrorKind;
        if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        let first = e.to_string().lines().next().unwrap_or_default().to_string();
        warnings.warn(format!("arguments ignored: {first}"));
    }
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| body(&mut warnings)));
    if let Err(payload) = outcome {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        warnings.warn(format!("internal error, hook skipped: {why}"));
    }
    ExitCode::SUCCESS
}

/// One-line reasons a hook writes on stderr.
pub struct Warnings {
    program: String,
}

impl Warnings {
    /// Warnings prefixed with `program`.
    pub fn new(program: &str) -> Warnings {
        Warnings {
            program: program.to_string(),
        }
    }

    /// Writes `program: message` (newlines flattened). Errors writing stderr
    /// are ignored: there is nowhere else to say it.
    pub fn warn(&mut self, message: impl AsRef<str>) {
        let line = message.as_ref().replace(['\n', '\r'], " ");
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{}: {line}", self.program);
        let _ = err.flush();
    }
}

/// Says, in one line, that the repository's layout could not be read and
/// the hook goes on with the fallback (read, never written: see
/// [`StateDir::ensure`]).
pub fn warn_state_problem(state: &StateDir, warnings: &mut Warnings) {
    if let Some(problem) = state.problem() {
        warnings.warn(format!(
            "state directory: {problem}; reading {} instead and writing nothing",
            state.path().display()
        ));
    }
}

/// True when git tracks the state directory (a repository that committed
/// `state/`): the hook then neither reads nor writes it, and says so in
/// one line naming the files and the fix
/// ([`StateDir::tracked_by_git`]).
pub fn refuse_tracked_state(state: &StateDir, warnings: &mut Warnings) -> bool {
    match state.tracked_by_git() {
        Some(line) => {
            warnings.warn(line);
            true
        }
        None => false,
    }
}

/// The project directory a hook works for: [`env_project_dir`], else the
/// hook input's `cwd`, else the current directory.
pub fn project_dir(hook_cwd: Option<PathBuf>) -> PathBuf {
    env_project_dir()
        .or(hook_cwd)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// `CLAUDE_PROJECT_DIR`, else `GEMINI_PROJECT_DIR` (Gemini CLI sets both),
/// when set: the project directory, known before the hook input is read.
pub fn env_project_dir() -> Option<PathBuf> {
    ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"]
        .into_iter()
        .find_map(|name| std::env::var_os(name).filter(|v| !v.is_empty()))
        .map(PathBuf::from)
}

/// Writes `text` to stdout and flushes; a closed stdout is not an error
/// worth more than a warning (the host stopped listening).
pub fn print(text: &str, warnings: &mut Warnings) {
    let mut out = std::io::stdout().lock();
    let r = out.write_all(text.as_bytes()).and_then(|_| out.flush());
    if let Err(e) = r {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            warnings.warn(format!("writing stdout: {e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_cli() {
        command("jkz-hook", "about", "long about").debug_assert();
    }
}
