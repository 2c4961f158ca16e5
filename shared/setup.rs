//! `jkz install`, `jkz uninstall`, `jkz doctor`: putting jkz into a project's
//! Claude Code settings, taking it out again, and checking it works; `jkz
//! attach`, `jkz detach`: sharing another checkout's state directory.
//!
//! What install adds, and so what uninstall takes away:
//! - the hooks of [`settings::REGISTRATIONS`] in `.claude/settings.json`
//!   (merged: other keys and other tools' hooks are never touched);
//! - the slash commands `.claude/commands/jkz/save.md` and `load.md`;
//! - for a project: the repository's state directory (mode 0700) when
//!   missing (its own `state/`; for a linked worktree, the main checkout's;
//!   see [`crate::state_dir::root`]) and, when that is the project's own
//!   `state/`, a two-line block in `.gitignore` (only when `state/` is not
//!   ignored already). Uninstall never removes a state directory other
//!   checkouts share.
//!
//! Settings are rewritten atomically. Before the first change, the file's
//! bytes as they were before jkz touched them are kept beside it as
//! `settings.json.jkz-backup`; uninstall puts those bytes back when removing
//! jkz's entries from the current settings gives the same JSON (nobody edited
//! the file meanwhile), so the original comes back byte for byte. Otherwise it
//! removes jkz's entries surgically, re-serializes the rest, and keeps the
//! bytes it replaced in the backup.

mod attach;
pub mod codex;
mod config_file;
pub mod copilot;
mod doctor;
pub(crate) mod gemini;
mod install;
pub mod opencode;
pub mod plugin;
mod probe;
mod registrations;
pub mod settings;
mod whole_file;

use std::path::{Path, PathBuf};

use crate::client::Client;

use crate::exit::EXIT_FAILED;

pub use attach::{attach, detach, AttachArgs, DetachArgs};
pub use doctor::{doctor, DoctorArgs};
pub use install::{InstallArgs, UninstallArgs};

/// Runs `jkz install` for the client named by `--client`.
pub fn install(
    args: &InstallArgs,
    out: &mut impl std::io::Write,
) -> Result<u8, crate::exit::Failure> {
    match args.client {
        Client::Claude => install::install(args, out),
        Client::Codex => codex::install(args, out),
        Client::Gemini => gemini::install(args, out),
        Client::Copilot => copilot::install(args, out),
        Client::OpenCode => opencode::install(args, out),
    }
}

/// Runs `jkz uninstall` for the client named by `--client`.
pub fn uninstall(
    args: &UninstallArgs,
    out: &mut impl std::io::Write,
) -> Result<u8, crate::exit::Failure> {
    match args.client {
        Client::Claude => install::uninstall(args, out),
        Client::Codex => codex::uninstall(args, out),
        Client::Gemini => gemini::uninstall(args, out),
        Client::Copilot => copilot::uninstall(args, out),
        Client::OpenCode => opencode::uninstall(args, out),
    }
}

/// Every binary jkz is made of: the one list. It is the `[[bin]]`s of
/// `Cargo.toml` (which `./install.sh` installs, all of them); `jkz install`
/// refuses to register hooks unless each is next to `jkz`, `jkz doctor`
/// checks each is on `PATH`, and the tests hold the harness, `Cargo.toml`
/// and the README's table to it.
pub const BINARIES: [&str; 8] = [
    "jkz",
    "jkz-truncate",
    "jkz-compress",
    "jkz-pre-compact",
    "jkz-session-start",
    "jkz-post-tool-use",
    "jkz-chat",
    "jkz-session",
];

pub use plugin::COMMANDS;

/// The lines install appends to `.gitignore`.
pub const GITIGNORE_BLOCK: &str = "# jkz runtime state (added by jkz install)\n/state/";

/// Where an installation goes.
#[derive(Clone, Debug)]
pub struct Target {
    /// `.claude/` of the project, or `~/.claude/` with `--user`.
    pub claude_dir: PathBuf,
    /// The project directory; `None` with `--user` (no `state/`, no `.gitignore`).
    pub project: Option<PathBuf>,
    /// Set when no `--project` was given and the current directory is below
    /// the root of its git repository: the directory the command was run
    /// in, while `project` is the repository's root.
    pub moved_from: Option<PathBuf>,
}

impl Target {
    /// The project at `project`, or the user's own settings. Without
    /// `--project`, the project is the root of the git repository the
    /// current directory is in (Claude Code's project is the repository, and
    /// `state/`, `.gitignore` belong at its root), else the current directory.
    pub fn resolve(project: Option<&Path>, user: bool) -> Result<Target, crate::exit::Failure> {
        if user {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .ok_or_else(|| {
                    crate::exit::Failure::new(EXIT_FAILED, "--user needs HOME to be set")
                })?;
            return Ok(Target {
                claude_dir: PathBuf::from(home).join(".claude"),
                project: None,
                moved_from: None,
            });
        }
        let (project, moved_from) = match project {
            Some(dir) => (dir.to_path_buf(), None),
            None => match std::env::current_dir().ok().and_then(|cwd| {
                let root = repository_root(&cwd)?;
                (root != cwd).then_some((root, cwd))
            }) {
                Some((root, cwd)) => (root, Some(cwd)),
                None => (PathBuf::from("."), None),
            },
        };
        if !project.is_dir() {
            return Err(crate::exit::Failure::new(
                EXIT_FAILED,
                format!(
                    "project directory {} does not exist (pass --project DIR)",
                    project.display()
                ),
            ));
        }
        Ok(Target {
            claude_dir: project.join(".claude"),
            project: Some(project),
            moved_from,
        })
    }

    pub fn settings(&self) -> PathBuf {
        self.claude_dir.join("settings.json")
    }

    /// `.claude/settings.local.json`: the project's settings that are not
    /// committed (Claude Code reads hooks there too). None with `--user`.
    pub fn local_settings(&self) -> Option<PathBuf> {
        self.project
            .as_ref()
            .map(|_| self.claude_dir.join("settings.local.json"))
    }

    pub fn commands_dir(&self) -> PathBuf {
        self.claude_dir.join("commands").join("jkz")
    }

    /// The line saying which directory a command without `--project` chose.
    pub fn moved_note(&self) -> Option<String> {
        let (from, to) = (self.moved_from.as_ref()?, self.project.as_ref()?);
        Some(format!(
            "using the repository root {} (you are in {}; pass --project DIR to choose another directory)",
            to.display(),
            from.display()
        ))
    }
}

/// The root of the git repository `dir` is in: the nearest directory, from
/// `dir` up, holding `.git` (a directory, or a file for worktrees and
/// submodules).
pub fn repository_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The directory holding the running jkz binary: its siblings are the hook
/// programs install registers.
pub fn binary_dir() -> Result<PathBuf, crate::exit::Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| crate::exit::Failure::io(EXIT_FAILED, "finding the jkz binary", e))?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    Ok(exe
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".")))
}

/// True when `.gitignore` text already ignores the top-level `state/`.
pub fn gitignore_ignores_state(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .any(|l| matches!(l, "state" | "state/" | "/state" | "/state/"))
}
