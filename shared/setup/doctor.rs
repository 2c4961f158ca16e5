//! `jkz doctor`: is jkz working in this project? One line per check, `ok` or
//! `FAIL` with what to do; `note` lines inform and never fail. The state
//! directory's line names the root and why (`state: /r/state (main worktree
//! of /r/wt-42)`); a stray `state/` in another checkout of the repository
//! is named with what it holds, and moved by `--fix`.
//!
//! Exit code: 0 when every check is ok, 1 when any failed.

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{binary_dir, gitignore_ignores_state, Target, BINARIES, COMMANDS};
use crate::client::Client;
use crate::exit::{Failure, EXIT_FAILED};
use crate::pipeline;
use crate::state_dir::{create_private_dir, root, stray, StateDir};
use crate::terminal_text::inert;

mod registration;

/// `jkz doctor`: check binaries, hooks, commands, the state directory and
/// pipeline files.
#[derive(clap::Args, Debug, Clone)]
pub struct DoctorArgs {
    /// The project to check. Default: the root of the git repository the current
    /// directory is in, else the current directory.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// The PATH of your login shell, when this run's PATH differs from it
    /// (install.sh passes it): doctor then says whether the binaries'
    /// directory is on it.
    #[arg(long, value_name = "PATH")]
    pub shell_path: Option<String>,
    /// Move the files of a stray state/ (one an older jkz left in a linked
    /// worktree, or an attached checkout's own) into the repository's state
    /// directory; nothing newer there is overwritten.
    #[arg(long)]
    pub fix: bool,
    /// The client whose setup to check: claude (the default: the plugin or
    /// `.claude/settings.json`, and the slash commands), codex (`.codex/hooks.json`,
    /// the compaction prompt in `.codex/config.toml`) or gemini (`.gemini/settings.json`).
    #[arg(long, value_enum, default_value = "claude")]
    pub client: crate::client::Client,
    /// Also run every hook the client's configuration registers, as the
    /// client would (its command line, working directory, environment and
    /// event shape), against a scratch state directory, and check that each
    /// has its effect: fired, wrong answer, or not run, with the reason.
    /// The project's own state is left as it was.
    #[arg(long)]
    pub probe: bool,
}

enum Status {
    Ok,
    Fail,
    Note,
}

struct Report<W: Write> {
    out: W,
    failed: usize,
}

impl<W: Write> Report<W> {
    fn line(&mut self, status: Status, text: impl std::fmt::Display) -> Result<(), Failure> {
        let tag = match status {
            Status::Ok => "ok  ",
            Status::Fail => {
                self.failed += 1;
                "FAIL"
            }
            Status::Note => "note",
        };
        // A line may quote a file, a URL or a record: shown, never obeyed.
        writeln!(self.out, "{tag} {}", inert(&text.to_string()))
            .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))
    }

    fn check(
        &mut self,
        ok: bool,
        good: impl std::fmt::Display,
        bad: impl std::fmt::Display,
    ) -> Result<(), Failure> {
        if ok {
            self.line(Status::Ok, good)
        } else {
            self.line(Status::Fail, bad)
        }
    }
}

pub(super) fn find_on_path(path_var: &OsStr, program: &str) -> Option<PathBuf> {
    std::env::split_paths(path_var)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

pub(super) fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `jkz doctor`. `state_flag` is the global `--state-dir`.
pub fn doctor(
    args: &DoctorArgs,
    state_flag: Option<&Path>,
    out: impl Write,
) -> Result<u8, Failure> {
    let mut report = Report { out, failed: 0 };
    let project = Target::resolve(args.project.as_deref(), false)?;
    let project_dir = project.project.clone().expect("a project target");
    if let Some(note) = project.moved_note() {
        report.line(Status::Note, note)?;
    }
    let bin_dir = binary_dir()?;
    let path_var = std::env::var_os("PATH").unwrap_or_default();

    // 1. Binaries on PATH (the slash commands call jkz-session by name).
    let missing: Vec<&str> = BINARIES
        .iter()
        .copied()
        .filter(|b| find_on_path(&path_var, b).is_none())
        .collect();
    let found_dir = find_on_path(&path_var, "jkz-session")
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| bin_dir.clone());
    report.check(
        missing.is_empty(),
        format_args!("binaries on PATH ({})", found_dir.display()),
        format_args!(
            "not on PATH: {}; add {} to PATH (export PATH=\"{}:$PATH\" in your shell profile) or run ./install.sh",
            missing.join(", "),
            bin_dir.display(),
            bin_dir.display()
        ),
    )?;
    if let Some(shell_path) = &args.shell_path {
        if find_on_path(OsStr::new(shell_path), "jkz-session").is_none() {
            report.line(
                Status::Note,
                format_args!(
                    "{} is not on your shell's PATH: add export PATH=\"{}:$PATH\" to your shell profile so Claude Code finds jkz-session",
                    found_dir.display(),
                    found_dir.display()
                ),
            )?;
        }
    }

    // 2. Hooks, and 3. slash commands: as the client is set up (each
    // client's own setup module says; every client decides here).
    let user = Target::resolve(None, true).ok();
    let claude_commands = match args.client {
        Client::Claude => claude_hooks(&mut report, &project, user.as_ref(), &path_var)?,
        Client::Codex => {
            client_lines(&mut report, super::codex::doctor_lines(&project_dir))?;
            false
        }
        // Gemini CLI has none of jkz's slash commands.
        Client::Gemini => {
            client_lines(&mut report, super::gemini::doctor_lines(&project_dir))?;
            false
        }
        Client::Copilot => {
            client_lines(&mut report, super::copilot::doctor_lines(&project_dir))?;
            false
        }
        Client::OpenCode => {
            client_lines(&mut report, super::opencode::doctor_lines(&project_dir))?;
            false
        }
    };
    if args.probe {
        client_lines(&mut report, super::probe::run(args.client, &project_dir))?;
    }
    match args.client {
        Client::Codex => report.line(
            Status::Note,
            "Codex runs a project's hooks only in a trusted project, once the hooks are trusted (or with --dangerously-bypass-hook-trust)",
        )?,
        Client::Claude | Client::Gemini | Client::Copilot | Client::OpenCode => {}
    }
    if claude_commands {
        claude_slash_commands(&mut report, &project, user.as_ref())?;
    }

    // 4. The state directory: which one, and why.
    let state = StateDir::resolve_for_project(state_flag, &project_dir);
    match state.problem() {
        Some(problem) => report.line(
            Status::Fail,
            format_args!(
                "state: cannot tell this repository's state directory: {problem}; hooks fall back to {} (used only if it exists) and commands stop: fix the repository, or name one with --state-dir or JKZ_STATE_DIR",
                state.path().display()
            ),
        )?,
        None => {
            report.line(Status::Ok, format_args!("state: {}", state.describe()))?;
            check_state_dir(&mut report, state.path())?;
            if let Some(line) = state.tracked_by_git() {
                report.line(Status::Fail, format_args!("state: {line}"))?;
            }
        }
    }
    check_strays(&mut report, &project_dir, args.fix)?;
    for refused in crate::state_dir::refused_entries(state.path()) {
        report.line(
            Status::Fail,
            format_args!(
                "{} is {}: jkz refuses to read it and never follows it; remove it",
                refused.path.display(),
                refused.what
            ),
        )?;
    }
    // The project's own state/ (not a root other checkouts share): git
    // must ignore it.
    let own =
        state.problem().is_none() && resolved(state.path()) == resolved(&project_dir.join("state"));
    if own {
        let text = crate::state_dir::read_user_file(&project_dir.join(".gitignore"))
            .map(|b| String::from_utf8(b).unwrap_or_default())
            .unwrap_or_default();
        report.check(
            gitignore_ignores_state(&text),
            "state/ is git-ignored",
            format_args!(
                "state/ is not in {}; add a line /state/ (jkz install does)",
                project_dir.join(".gitignore").display()
            ),
        )?;
    }

    // 5. The registry, locks and circuits: local, or the team's database.
    check_registry(&mut report, &state)?;

    // 6. Pipeline files, against the contract (as `jkz state validate`).
    let files = pipeline::list(&state).unwrap_or_default();
    let mut bad = 0;
    for file in &files {
        let shown = file.path.display().to_string();
        let problems = match crate::state_dir::read_whole_state_file(
            &file.path,
            pipeline::MAX_PIPELINE_FILE,
        ) {
            Ok(bytes) => pipeline::validate(&shown, &file.issue, &bytes)
                .iter()
                .map(ToString::to_string)
                .collect(),
            Err(e) => vec![format!("{shown}: unreadable: {e}")],
        };
        if let Some(first) = problems.first() {
            bad += 1;
            let more = match problems.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            report.line(
                Status::Fail,
                format_args!(
                    "{first}{more}; fix the file (jkz state validate lists every problem)"
                ),
            )?;
        }
    }
    for (path, why) in pipeline::misnamed_in(&state.join(crate::state_dir::layout::PIPELINE_DIR)) {
        bad += 1;
        report.line(Status::Fail, format_args!("{}: {why}", path.display()))?;
    }
    if bad == 0 {
        report.line(
            Status::Ok,
            format_args!("pipeline files valid ({})", files.len()),
        )?;
    }

    let failed = report.failed;
    if failed == 0 {
        writeln!(report.out, "all checks passed")
            .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    } else {
        writeln!(report.out, "{failed} check(s) failed")
            .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    }
    report
        .out
        .flush()
        .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(if failed == 0 { 0 } else { 1 })
}

/// Reports a client's setup lines: `(ok, text)`.
fn client_lines<W: Write>(
    report: &mut Report<W>,
    lines: Vec<(bool, String)>,
) -> Result<(), Failure> {
    for (ok, line) in lines {
        report.line(if ok { Status::Ok } else { Status::Fail }, line)?;
    }
    Ok(())
}

/// Claude Code's hooks, through the plugin or settings, once; whether
/// jkz's slash commands are then checked as shipped (not in a worktree
/// that must be set up first, not when the plugin ships them).
fn claude_hooks<W: Write>(
    report: &mut Report<W>,
    project: &Target,
    user: Option<&Target>,
    path_var: &OsStr,
) -> Result<bool, Failure> {
    if let Some(step) = registration::worktree_step(project, user) {
        client_lines(report, vec![(false, step)])?;
        return Ok(false);
    }
    registration::check(report, project, user, path_var)?;
    Ok(super::plugin::enabled(project, user).is_none())
}

/// jkz's slash commands for Claude Code, as shipped.
fn claude_slash_commands<W: Write>(
    report: &mut Report<W>,
    project: &Target,
    user: Option<&Target>,
) -> Result<(), Failure> {
    let commands = &COMMANDS[..];
    for (name, text) in commands {
        let candidates = std::iter::once(project)
            .chain(user)
            .map(|t| t.commands_dir().join(name));
        let mut found = None;
        for path in candidates {
            if let Ok(bytes) = crate::state_dir::read_user_file(&path) {
                found = Some((path, bytes == text.as_bytes()));
                break;
            }
        }
        let command = format!("/jkz:{}", name.trim_end_matches(".md"));
        match found {
            Some((path, true)) => {
                report.line(Status::Ok, format_args!("{command} ({})", path.display()))?
            }
            Some((path, false)) => report.line(
                Status::Fail,
                format_args!(
                    "{command} ({}) differs from this jkz version's (edited?); to take this version's, remove it and run jkz install",
                    path.display()
                ),
            )?,
            None => report.line(
                Status::Fail,
                format_args!("{command} not installed; run jkz install"),
            )?,
        }
    }
    Ok(())
}

/// Which backend holds the registry, locks and circuits; for a team
/// registry, its URL (password masked), schema version and round trip,
/// read without changing anything.
fn check_registry<W: Write>(report: &mut Report<W>, state: &StateDir) -> Result<(), Failure> {
    use crate::team::schema::SCHEMA_VERSION;
    use crate::team::Backend;
    match crate::team::backend(state.path()) {
        Ok(Backend::Local) => report.line(
            Status::Note,
            format_args!(
                "registry: local ({}, locks/, circuit/); team mode: set {} (docs/worktrees.md)",
                state.join(crate::state_dir::layout::CHAT_DB).display(),
                crate::team::config::REGISTRY_URL_ENV
            ),
        ),
        Err(why) => report.line(Status::Fail, format_args!("registry: {why}")),
        Ok(Backend::Team(url, origin)) => {
            match crate::team::cmd::probe(&url) {
                Ok(p) => {
                    // Which machines the team's chats are on, and how fresh
                    // this machine's copy the guard reads is.
                    let replica = crate::registry::replica::freshness(state.path(), &url.masked())
                    .map_or_else(
                        || "none yet (the next hook or command that talks to the server makes it)".to_string(),
                        |f| f.describe(crate::clock::now_ms()),
                    );
                    let schema = match p.version {
                    0 => "no tables yet (created on first use, or by `jkz registry migrate`)".to_string(),
                    v if v < SCHEMA_VERSION => format!(
                        "schema version {v} (upgraded to {SCHEMA_VERSION} on first use, or by `jkz registry migrate`)"
                    ),
                    v => format!("schema version {v}"),
                };
                    report.line(
                        Status::Ok,
                        format_args!(
                        "registry: PostgreSQL {url} (from {origin}), {schema}, round trip {:.2} ms",
                        p.round_trip.as_secs_f64() * 1000.0
                    ),
                    )?;
                    report.line(
                        Status::Note,
                        format_args!(
                            "registry: this machine's replica ({}): {replica}",
                            state
                                .join(crate::state_dir::layout::REGISTRY_REPLICA)
                                .display()
                        ),
                    )?;
                    for (host, chats, issues) in
                        crate::registry::replica::machines(state.path(), &url.masked())
                    {
                        let held = match issues.is_empty() {
                            true => "no claim".to_string(),
                            false => format!("claims {}", issues.join(", ")),
                        };
                        report.line(
                            Status::Note,
                            format_args!(
                                "registry: machine {}: {chats} chat(s), {held} (as last copied)",
                                crate::terminal_text::inert(&host)
                            ),
                        )?;
                    }
                    // The version says which migrations ran, not what became
                    // of the tables: each difference fails every claim, lock
                    // or circuit using that table, and every hook fails open.
                    for drift in &p.drifts {
                        report.line(
                        Status::Fail,
                        format_args!(
                            "registry: table {}; until then jkz's statements on it fail and hooks let every call through",
                            drift.line()
                        ),
                    )?;
                    }
                    Ok(())
                }
                Err(e) => report.line(
                    Status::Fail,
                    format_args!(
                        "registry: {e} (from {origin}); hooks let every call through meanwhile"
                    ),
                ),
            }
        }
    }
}

/// Names every stray `state/` of the repository (see
/// [`crate::state_dir::stray`]) and what it holds; with `fix`, moves its
/// files into the repository's state directory and says what was left.
fn check_strays<W: Write>(
    report: &mut Report<W>,
    project_dir: &Path,
    fix: bool,
) -> Result<(), Failure> {
    // A layout that cannot be read was reported with the state line.
    let Ok(found) = root::find(project_dir) else {
        return Ok(());
    };
    let Some(repository) = &found.repository else {
        return Ok(());
    };
    let root = &found.path;
    for s in stray::find(repository, root) {
        let dir = s.dir.display();
        if !fix {
            report.line(
                Status::Fail,
                format_args!(
                    "{dir} is a stray state directory (it holds {}): this repository's is {} ({}), so no tool sees it; run jkz doctor --fix to move its files there (nothing newer there is overwritten)",
                    s.holds,
                    root.display(),
                    found.why
                ),
            )?;
            continue;
        }
        if !root.is_dir() {
            create_private_dir(root)
                .map_err(|e| Failure::io(EXIT_FAILED, format!("creating {}", root.display()), e))?;
            report.line(
                Status::Note,
                format_args!(
                    "created {} (mode 0700) for the stray's files",
                    root.display()
                ),
            )?;
        }
        match stray::migrate(&s.dir, root, &s.checkout) {
            Ok(m) => {
                report.line(
                    Status::Ok,
                    format_args!(
                        "moved {} file(s) from the stray {dir} into {} ({} replaced an older file there; {} were there already)",
                        m.moved.len() + m.replaced.len(),
                        root.display(),
                        m.replaced.len(),
                        m.same.len()
                    ),
                )?;
                for (rel, why) in &m.left {
                    report.line(
                        Status::Fail,
                        format_args!("{} left in place: {why}", s.dir.join(rel).display()),
                    )?;
                }
                if m.removed {
                    report.line(Status::Ok, format_args!("removed the emptied {dir}"))?;
                }
            }
            Err(e) => report.line(
                Status::Fail,
                format_args!("moving the files of {dir} into {}: {e}", root.display()),
            )?,
        }
    }
    Ok(())
}

/// `path` with its directory resolved (it need not exist itself).
fn resolved(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => fs::canonicalize(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        })
        .map(|d| d.join(name))
        .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

fn check_state_dir<W: Write>(report: &mut Report<W>, state: &Path) -> Result<(), Failure> {
    let shown = state.display();
    let meta = match fs::metadata(state) {
        Ok(m) if m.is_dir() => m,
        Ok(_) => {
            return report.line(
                Status::Fail,
                format_args!("{shown} is not a directory; move it away and run jkz install"),
            )
        }
        Err(_) => {
            return report.line(
                Status::Fail,
                format_args!("{shown} does not exist; run jkz install"),
            )
        }
    };
    let writable = tempfile::Builder::new()
        .prefix(".jkz-doctor.")
        .suffix(crate::atomic::TEMP_SUFFIX)
        .tempfile_in(state)
        .is_ok();
    report.check(
        writable,
        format_args!("{shown} exists and is writable"),
        format_args!(
            "{shown} is not writable by you; fix its owner or permissions (chmod 700 {shown})"
        ),
    )?;
    let mode = meta.permissions().mode() & 0o777;
    report.check(
        mode & 0o077 == 0,
        format_args!("{shown} is private (mode {mode:03o})"),
        format_args!(
            "{shown} has mode {mode:03o}: others can read session notes; run chmod 700 {shown}"
        ),
    )
}
