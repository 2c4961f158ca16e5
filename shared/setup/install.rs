//! `jkz install` and `jkz uninstall` (the rules are in the parent module).
//!
//! Both read and check everything first and write only when nothing stands
//! in the way: a settings file that cannot be parsed, or whose `hooks` have
//! an unexpected shape, stops them before any change anywhere.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::settings::{self, shell_quote};
use super::{
    binary_dir, gitignore_ignores_state, plugin, Target, BINARIES, COMMANDS, GITIGNORE_BLOCK,
};
use crate::atomic::write_atomic_mode;
use crate::client::Client;
use crate::exit::{Failure, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::state_dir::root::{self, Found, Why};
use crate::state_dir::{create_private_dir, layout};

/// `jkz install`: register jkz's hooks and slash commands in a project.
#[derive(clap::Args, Debug, Clone)]
pub struct InstallArgs {
    /// The project to install into (its `.claude/settings.json`, `.claude/commands/jkz/`,
    /// `state/`, `.gitignore`). Default: the root of the git repository the current
    /// directory is in, else the current directory.
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub project: Option<PathBuf>,
    /// Install into your own `~/.claude/` (settings and commands for every project)
    /// instead; no `state/` or `.gitignore` is touched.
    #[arg(long)]
    pub user: bool,
    /// Team mode: record URL (postgres://USER@HOST:PORT/DATABASE) as `jkz.registryUrl` in
    /// the repository's git config (never a committed file), so this clone shares the team's
    /// chats, claims, locks and circuits; run it once per machine. A URL holding a password
    /// is refused: put the password in PGPASSWORD or ~/.pgpass. JKZ_REGISTRY_URL, when set,
    /// wins.
    #[arg(long, value_name = "URL", conflicts_with = "user")]
    pub registry: Option<String>,
    /// The client to install into: claude (`.claude/settings.json`; the plugin is the
    /// other Claude path), codex (`.codex/hooks.json`, `.codex/config.toml`) or gemini
    /// (`.gemini/settings.json`). Only jkz's own entries are written.
    #[arg(long, value_enum, default_value = "claude")]
    pub client: Client,
    /// Move jkz's registration for this client here from where it is now (your user
    /// settings, this project's settings, or its settings.local.json): without it,
    /// install is refused while another registration exists, since the client would
    /// run every hook twice.
    #[arg(long)]
    pub replace: bool,
}

/// `jkz uninstall`: remove exactly what `jkz install` added.
#[derive(clap::Args, Debug, Clone)]
pub struct UninstallArgs {
    /// The project to uninstall from. Default: the root of the git repository the current
    /// directory is in, else the current directory.
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub project: Option<PathBuf>,
    /// Uninstall from your own `~/.claude/` instead.
    #[arg(long)]
    pub user: bool,
    /// The client to uninstall from: claude (`.claude/settings.json`; the plugin is the
    /// other Claude path), codex (`.codex/hooks.json`, `.codex/config.toml`) or gemini
    /// (`.gemini/settings.json`). Only jkz's own entries are removed.
    #[arg(long, value_enum, default_value = "claude")]
    pub client: Client,
}

/// The settings file as found: where its bytes really live (a symlinked
/// settings file is edited at its target), its bytes and its parsed object.
pub(super) struct SettingsFile {
    pub(super) shown: PathBuf,
    pub(super) real: PathBuf,
    pub(super) bytes: Option<Vec<u8>>,
    pub(super) map: Map<String, Value>,
}

impl SettingsFile {
    pub(super) fn read(path: &Path) -> Result<SettingsFile, Failure> {
        let real = super::config_file::resolve(path)?;
        let bytes = match crate::state_dir::read_user_file(&real) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(Failure::io(
                    EXIT_FAILED,
                    format!("reading {}", path.display()),
                    e,
                ))
            }
        };
        let map = settings::parse(bytes.as_deref().unwrap_or_default())
            .map_err(|why| refusal(path, &why))?;
        settings::check_shape(&map).map_err(|e| refusal(path, &e.0))?;
        Ok(SettingsFile {
            shown: path.to_path_buf(),
            real,
            bytes,
            map,
        })
    }

    /// Replaces the file atomically, keeping its permission bits (0644 for a
    /// new file, as Claude Code creates them) from the moment it appears.
    pub(super) fn replace(&self, bytes: &[u8]) -> Result<(), Failure> {
        let mode = fs::metadata(&self.real)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644);
        if let Some(dir) = self.real.parent() {
            fs::create_dir_all(dir)
                .map_err(|e| Failure::io(EXIT_FAILED, format!("creating {}", dir.display()), e))?;
        }
        write_file(&self.real, bytes, mode)
    }
}

/// Where install keeps the settings' bytes from before jkz: in a project,
/// inside the repository's state directory (beside `settings.json` it would
/// be committed with `.claude/`), under the checkout's own name there
/// ([`layout::settings_backup_name`]); for `--user`, beside
/// `~/.claude/settings.json`.
fn backup_for(target: &Target, root: Option<&ProjectRoot>, settings_real: &Path) -> PathBuf {
    match (&target.project, root) {
        (Some(project), Some(root)) => root
            .found
            .path
            .join(layout::settings_backup_name(&root.found.path, project)),
        _ => backup_path(settings_real),
    }
}

/// The backup's file name inside a project's own `state/`.
pub const BACKUP_NAME: &str = layout::SETTINGS_BACKUP;

/// The state directory of an install's project: the repository's root
/// ([`root::find`]), and whether it is the project's own `state/` (else it
/// is shared: a linked worktree's main checkout, a bare repository's
/// shared root, an attached root).
pub(super) struct ProjectRoot {
    pub(super) found: Found,
    pub(super) own: bool,
}

impl ProjectRoot {
    pub(super) fn of(project: &Path) -> Result<ProjectRoot, Failure> {
        let found = root::find(project).map_err(|problem| {
            Failure::new(
                EXIT_FAILED,
                format!(
                    "cannot tell the state directory of {}: {problem}; nothing was changed: fix the repository and run this again",
                    project.display()
                ),
            )
        })?;
        let real = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let own = match &found.why {
            Why::Outside { .. } => true,
            Why::Checkout { top } => real(project) == *top,
            _ => false,
        };
        Ok(ProjectRoot { found, own })
    }

    /// `/r/state (main worktree of /r/wt-42)`.
    fn describe(&self) -> String {
        format!("{} ({})", self.found.path.display(), self.found.why)
    }
}

/// The backup of a settings file: its bytes before jkz first changed it.
pub fn backup_path(settings: &Path) -> PathBuf {
    let name = settings
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    settings.with_file_name(format!("{name}.jkz-backup"))
}

pub(super) fn refusal(path: &Path, why: &str) -> Failure {
    Failure::new(
        EXIT_FAILED,
        format!(
            "{}: {why}; nothing was changed: fix the file (or move it away) and run this again",
            path.display()
        ),
    )
}

/// Writes `path` atomically with permission bits `mode`, after removing the
/// temp files a killed install or uninstall left beside it.
pub(super) fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Failure> {
    remove_stale_temps(path);
    write_atomic_mode(path, bytes, mode)
        .map_err(|e| Failure::io(EXIT_FAILED, format!("writing {}", path.display()), e))
}

/// Removes `.<name>.*.tmp` beside `path`: the temp files of jkz's atomic
/// writes of that file (see `atomic`), which only a killed writer leaves.
fn remove_stale_temps(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) else {
        return;
    };
    for entry in entries.flatten() {
        let entry_name = entry.file_name();
        let entry_name = entry_name.to_string_lossy();
        if entry_name.starts_with(&prefix)
            && entry_name.ends_with(crate::atomic::TEMP_SUFFIX)
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = fs::remove_file(entry.path());
        }
    }
}

pub(super) fn remove_file(path: &Path) -> Result<bool, Failure> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Failure::io(
            EXIT_FAILED,
            format!("removing {}", path.display()),
            e,
        )),
    }
}

/// Removes `dir` when it is empty; anything else (not empty, missing) keeps it.
pub(super) fn remove_dir_if_empty(dir: &Path) -> bool {
    fs::remove_dir(dir).is_ok()
}

pub(super) fn say(out: &mut impl Write, line: impl std::fmt::Display) -> Result<(), Failure> {
    writeln!(out, "{line}").map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))
}

/// The command line of a hook program: its bare name when the first one on
/// `PATH` is the very file install would point at (a project's settings are
/// often committed, and a name works on every machine where jkz is on
/// `PATH`), else its absolute path, shell-quoted.
pub(super) fn hook_command(bin_dir: &Path, program: &str) -> String {
    let installed = bin_dir.join(program);
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let first_on_path = std::env::split_paths(&path_var)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|p| {
            fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        });
    let same = first_on_path.is_some_and(|found| {
        match (fs::canonicalize(found), fs::canonicalize(&installed)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    });
    if same {
        program.to_string()
    } else {
        shell_quote(&installed.to_string_lossy())
    }
}

/// Runs `jkz install` for Claude Code; prints one line per change (or that
/// nothing changed).
pub fn install(args: &InstallArgs, out: &mut impl Write) -> Result<u8, Failure> {
    let registry = match &args.registry {
        None => None,
        Some(raw) => {
            let url = crate::team::RegistryUrl::parse(raw)
                .map_err(|why| Failure::new(EXIT_USAGE, format!("--registry: {why}")))?;
            if url.has_password() {
                return Err(Failure::new(
                    EXIT_USAGE,
                    format!(
                        "--registry: {}",
                        crate::team::config::password_refusal(&url)
                    ),
                ));
            }
            Some(url)
        }
    };
    let target = Target::resolve(args.project.as_deref(), args.user)?;
    if let Some(note) = target.moved_note() {
        say(out, note)?;
    }
    if let (Some(_), Some(project)) = (&registry, &target.project) {
        // Refused before anything changes.
        crate::team::config::config_file_for(project)
            .map_err(|why| Failure::new(EXIT_USAGE, format!("--registry: {why}")))?;
    }
    let bin_dir = installed_binaries()?;
    let file = SettingsFile::read(&target.settings())?;
    let gitignore = project_gitignore(&target)?;
    let root = target.project.as_deref().map(ProjectRoot::of).transpose()?;
    let user = Target::resolve(None, true).ok();
    let from_plugin = plugin::enabled(&target, user.as_ref());

    // Registered for every project in the user's settings: like the
    // plugin, those hooks already run here, so the project only opts in
    // (its state directory) unless --replace moves the registration here.
    let elsewhere = super::registrations::claude_elsewhere(&target);
    let from_user = (from_plugin.is_none() && target.project.is_some() && !args.replace)
        .then(|| match &elsewhere[..] {
            [only] if only.is_user_wide() => Some(only.path.clone()),
            _ => None,
        })
        .flatten();

    // jkz registered elsewhere for the same chats: refused, or moved here.
    if from_plugin.is_none() && from_user.is_none() {
        let command = if target.project.is_some() {
            "jkz install"
        } else {
            "jkz install --user"
        };
        super::registrations::clear_elsewhere(
            elsewhere,
            args.replace,
            "Claude Code",
            &file.shown,
            command,
            out,
        )?;
    }

    // Everything is checked; from here on, changes. The state directory
    // first: in a project it holds the settings' backup. A checkout that
    // shares the repository's (a linked worktree, an attached clone) gets
    // none of its own, nor a .gitignore line for one.
    let mut changes = 0;
    if let Some(root) = &root {
        let gitignore = gitignore.expect("read for a project");
        changes += prepare_state(root, gitignore, out)?;
    }

    if let Some(plugin) = &from_plugin {
        // Registering here too would make Claude Code run every hook twice.
        say(
            out,
            format_args!(
                "the jkz plugin ({}, enabled in {}) provides the hooks and /jkz:save, /jkz:load here: none registered in {}",
                plugin.id,
                plugin.enabled_in.display(),
                file.shown.display()
            ),
        )?;
    } else if let Some(user_settings) = &from_user {
        say(
            out,
            format_args!(
                "jkz is registered for your user in {} (every project): its hooks run here; none registered in {} (`jkz install --replace` moves the registration here)",
                user_settings.display(),
                file.shown.display()
            ),
        )?;
    } else {
        changes += register(&target, root.as_ref(), &file, &bin_dir, out)?;
        if let (Some(project), Some(root)) = (&target.project, &root) {
            commit_note(project, root, &bin_dir, out)?;
        }
    }

    if let (Some(url), Some(project)) = (&registry, &target.project) {
        let (file, recorded) = crate::team::config::record(project, url)
            .map_err(|why| Failure::new(EXIT_FAILED, why))?;
        if recorded == crate::team::config::Recorded::Written {
            say(
                out,
                format_args!(
                    "team registry {url} recorded as jkz.registryUrl in {} (this clone and its worktrees; each machine runs this once; the password goes in PGPASSWORD or ~/.pgpass; `jkz doctor` checks the connection)",
                    file.display()
                ),
            )?;
            changes += 1;
        }
    }

    if changes == 0 {
        say(out, "jkz is already installed here; nothing changed")?;
    }
    out.flush()
        .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(EXIT_OK)
}

/// In a git checkout: says which of the files install wrote git does not
/// track yet, and the one command that commits them. A linked worktree
/// (`git worktree add`) or a clone gets `.claude/` only from a commit, so
/// until then a chat there runs none of jkz's hooks. Also says when the
/// hooks name the binaries by absolute path, which works on this machine
/// only.
fn commit_note(
    project: &Path,
    root: &ProjectRoot,
    bin_dir: &Path,
    out: &mut impl Write,
) -> Result<(), Failure> {
    if root.found.repository.is_none() {
        return Ok(());
    }
    let project = &std::path::absolute(project).unwrap_or_else(|_| project.to_path_buf());
    let files = [".claude/settings.json", ".claude/commands/jkz"];
    let untracked: Vec<&str> = files
        .into_iter()
        .filter(|rel| {
            project.join(rel).exists()
                && crate::state_dir::tracked::is_tracked(&project.join(rel)) != Some(true)
        })
        .collect();
    let settings_path = project.join(".claude").join("settings.json");
    let by_path = plugin::read_settings(&settings_path).is_some_and(|map| {
        settings::REGISTRATIONS.iter().any(|reg| {
            settings::registered_commands(&map, reg.event, reg.matcher, reg.program)
                .iter()
                .any(|c| settings::command_path(c).contains('/'))
        })
    });
    if by_path {
        say(
            out,
            format_args!(
                "note: the hooks name jkz's binaries by their path in {} (it is not first on PATH here): {} works on this machine only; put {} first on PATH and run jkz install again before you commit it",
                bin_dir.display(),
                settings_path.display(),
                bin_dir.display()
            ),
        )?;
    }
    if untracked.is_empty() {
        return Ok(());
    }
    let dir = shell_quote(&project.to_string_lossy());
    say(
        out,
        format_args!(
            "commit {} so that every linked worktree (git worktree add) and clone made from that commit runs jkz's hooks: `git -C {dir} add {} && git -C {dir} commit -m 'Register jkz hooks'` (a worktree that exists already gets them once its branch has that commit; docs/setup.md#worktrees-and-clones)",
            untracked.join(" and "),
            untracked.join(" ")
        ),
    )
}

/// The directory of the running jkz, checked to hold every jkz binary (the
/// hooks install registers are its siblings).
pub(super) fn installed_binaries() -> Result<PathBuf, Failure> {
    let bin_dir = binary_dir()?;
    for program in BINARIES {
        if !bin_dir.join(program).is_file() {
            return Err(Failure::new(
                EXIT_FAILED,
                format!(
                    "{program} is not next to jkz in {}: install all jkz binaries together (./install.sh)",
                    bin_dir.display()
                ),
            ));
        }
    }
    Ok(bin_dir)
}

/// Creates the project's state directory when missing and keeps git from
/// committing it (the `.gitignore` block, for the project's own
/// `state/`); returns how many changes it made.
pub(super) fn prepare_state(
    root: &ProjectRoot,
    gitignore: (PathBuf, String),
    out: &mut impl Write,
) -> Result<usize, Failure> {
    let mut changes = 0;
    let state = &root.found.path;
    if !state.is_dir() {
        create_private_dir(state)
            .map_err(|e| Failure::io(EXIT_FAILED, format!("creating {}", state.display()), e))?;
        say(
            out,
            format_args!(
                "created {} (mode 0700; {})",
                state.display(),
                root.found.why
            ),
        )?;
        changes += 1;
    } else if !root.own {
        say(
            out,
            format_args!(
                "this checkout shares the state directory {}",
                root.describe()
            ),
        )?;
    }
    let (path, text) = gitignore;
    if root.own && !gitignore_ignores_state(&text) {
        write_gitignore(&path, &with_gitignore_block(&text))?;
        say(out, format_args!("added /state/ to {}", path.display()))?;
        changes += 1;
    }
    if let Why::MainWorktree { .. } = root.found.why {
        main_ignore_note(&root.found.path, out)?;
    }
    Ok(changes)
}

/// Registers the hooks in the settings and installs the slash commands;
/// returns how many changes it made.
fn register(
    target: &Target,
    root: Option<&ProjectRoot>,
    file: &SettingsFile,
    bin_dir: &Path,
    out: &mut impl Write,
) -> Result<usize, Failure> {
    let mut changes = 0;
    let mut map = file.map.clone();
    let had_jkz = settings::has_jkz_hooks(&map);
    let changed = settings::add_hooks(&mut map, |program| hook_command(bin_dir, program))
        .map_err(|e| refusal(&file.shown, &e.0))?;
    if changed {
        if !had_jkz {
            // These bytes are the settings before jkz: what uninstall restores.
            let backup = backup_for(target, root, &file.real);
            match &file.bytes {
                Some(bytes) => write_file(&backup, bytes, 0o600)?,
                None => {
                    remove_file(&backup)?;
                }
            }
        }
        file.replace(&settings::serialize(&map))?;
        say(
            out,
            settings::registered_summary(&settings::REGISTRATIONS, &file.shown),
        )?;
        changes += 1;
    }

    let commands = target.commands_dir();
    for (name, text) in COMMANDS {
        let path = commands.join(name);
        match crate::state_dir::read_user_file(&path) {
            Ok(bytes) if bytes == text.as_bytes() => continue,
            Ok(_) => {
                // The user's own version (or an older jkz's): never overwritten.
                say(
                    out,
                    format_args!(
                        "kept {}: it differs from the one this jkz ships (edited?); to take the new one, remove it and run jkz install again",
                        path.display()
                    ),
                )?;
                continue;
            }
            Err(_) => {}
        }
        fs::create_dir_all(&commands)
            .map_err(|e| Failure::io(EXIT_FAILED, format!("creating {}", commands.display()), e))?;
        write_file(&path, text.as_bytes(), 0o644)?;
        say(out, format_args!("installed {}", path.display()))?;
        changes += 1;
    }
    Ok(changes)
}

/// A linked worktree's install: says so when the main checkout's
/// `.gitignore`, where the shared `state/` lies, does not ignore it.
fn main_ignore_note(state: &Path, out: &mut impl Write) -> Result<(), Failure> {
    let Some(main) = state.parent() else {
        return Ok(());
    };
    let text = crate::state_dir::read_user_file(&main.join(".gitignore"))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if gitignore_ignores_state(&text) {
        return Ok(());
    }
    say(
        out,
        format_args!(
            "note: {} does not ignore state/: run jkz install in {} (it adds the line)",
            main.join(".gitignore").display(),
            main.display()
        ),
    )
}

/// The project's `.gitignore` (path and text; empty when missing), none for
/// the user-wide target.
pub(super) fn project_gitignore(target: &Target) -> Result<Option<(PathBuf, String)>, Failure> {
    target
        .project
        .as_ref()
        .map(|project| read_gitignore(&project.join(".gitignore")))
        .transpose()
}

fn read_gitignore(path: &Path) -> Result<(PathBuf, String), Failure> {
    match crate::state_dir::read_user_file(&super::config_file::resolve(path)?) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(|t| (path.to_path_buf(), t))
            .map_err(|_| {
                Failure::new(
                    EXIT_FAILED,
                    format!("{} is not UTF-8 text; nothing was changed", path.display()),
                )
            }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((path.to_path_buf(), String::new())),
        Err(e) => Err(Failure::io(
            EXIT_FAILED,
            format!("reading {}", path.display()),
            e,
        )),
    }
}

/// Writes `.gitignore` at `path` (a link is written through to its file);
/// left empty, a file of its own is removed, a linked one kept empty.
pub(super) fn write_gitignore(path: &Path, text: &str) -> Result<(), Failure> {
    let real = super::config_file::resolve(path)?;
    if text.is_empty() && real == path {
        remove_file(path)?;
        return Ok(());
    }
    write_file(&real, text.as_bytes(), gitignore_mode(&real))
}

pub(super) fn gitignore_mode(path: &Path) -> u32 {
    fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644)
}

/// `text` with install's block at its end. A file without a final newline
/// keeps lacking one, so that uninstall can give the exact bytes back.
pub fn with_gitignore_block(text: &str) -> String {
    let mut new = text.to_string();
    if new.is_empty() || new.ends_with('\n') {
        new.push_str(GITIGNORE_BLOCK);
        new.push('\n');
    } else {
        new.push('\n');
        new.push_str(GITIGNORE_BLOCK);
    }
    new
}

/// `text` without the block install added, if it is there.
pub fn without_gitignore_block(text: &str) -> Option<String> {
    let joined = format!("\n{GITIGNORE_BLOCK}");
    if let Some(rest) = text.strip_suffix(&joined) {
        // Added to a file without a final newline: it had none before.
        return Some(rest.to_string());
    }
    let line_block = format!("{GITIGNORE_BLOCK}\n");
    let mut at = 0;
    while let Some(found) = text[at..].find(&line_block) {
        let start = at + found;
        if start == 0 || text.as_bytes()[start - 1] == b'\n' {
            let mut out = String::with_capacity(text.len());
            out.push_str(&text[..start]);
            out.push_str(&text[start + line_block.len()..]);
            return Some(out);
        }
        at = start + 1;
    }
    None
}

/// Runs `jkz uninstall` for Claude Code; prints one line per change.
pub fn uninstall(args: &UninstallArgs, out: &mut impl Write) -> Result<u8, Failure> {
    let target = Target::resolve(args.project.as_deref(), args.user)?;
    if let Some(note) = target.moved_note() {
        say(out, note)?;
    }
    let file = SettingsFile::read(&target.settings())?;
    let gitignore = project_gitignore(&target)?;
    let root = target.project.as_deref().map(ProjectRoot::of).transpose()?;

    let mut changes = unregister(&target, root.as_ref(), &file, out)?;
    if let (Some(project), Some(root)) = (&target.project, &root) {
        let gitignore = gitignore.expect("read for a project");
        changes += release_state(project, root, gitignore, out)?;
    }
    if changes == 0 {
        say(out, "jkz is not installed here; nothing changed")?;
    }
    out.flush()
        .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(EXIT_OK)
}

/// Takes jkz's hooks out of `target`'s settings (`file`, as read) and its
/// slash commands out of its commands directory, restoring the settings'
/// bytes from before jkz when nobody edited them since; returns how many
/// changes it made. The state directory is [`release_state`]'s.
pub(super) fn unregister(
    target: &Target,
    root: Option<&ProjectRoot>,
    file: &SettingsFile,
    out: &mut impl Write,
) -> Result<usize, Failure> {
    let mut changes = 0;
    let mut map = file.map.clone();
    // The backup, where this version keeps it, else where older versions
    // did: in the checkout's own state/ (a linked worktree had one), or
    // beside the settings.
    let backup = backup_for(target, root, &file.real);
    let legacy = backup_path(&file.real);
    let own_state_backup = target
        .project
        .as_ref()
        .map(|p| p.join("state").join(BACKUP_NAME))
        .filter(|p| *p != backup);
    if settings::remove_hooks(&mut map).map_err(|e| refusal(&file.shown, &e.0))? {
        let original = crate::state_dir::read_user_file(&backup)
            .or_else(|e| match &own_state_backup {
                Some(p) => crate::state_dir::read_user_file(p),
                None => Err(e),
            })
            .or_else(|_| crate::state_dir::read_user_file(&legacy))
            .ok();
        let restorable = original
            .as_deref()
            .and_then(|b| settings::parse(b).ok())
            .is_some_and(|o| o == map);
        if restorable {
            file.replace(original.as_deref().expect("checked"))?;
            remove_file(&backup)?;
            remove_file(&legacy)?;
            if let Some(p) = &own_state_backup {
                remove_file(p)?;
            }
            say(
                out,
                format_args!(
                    "restored {} as it was before jkz install",
                    file.shown.display()
                ),
            )?;
        } else if original.is_none() && map.is_empty() {
            remove_file(&file.real)?;
            say(
                out,
                format_args!("removed {} (jkz install created it)", file.shown.display()),
            )?;
        } else {
            let keep = if backup.parent().is_some_and(Path::is_dir) {
                remove_file(&legacy)?;
                &backup
            } else {
                &legacy
            };
            write_file(keep, file.bytes.as_deref().unwrap_or_default(), 0o600)?;
            file.replace(&settings::serialize(&map))?;
            say(
                out,
                format_args!(
                    "removed jkz's hooks from {} (edited since install: the rest is kept, re-serialized; previous bytes in {})",
                    file.shown.display(),
                    keep.display()
                ),
            )?;
        }
        changes += 1;
    }

    let commands = target.commands_dir();
    for (name, text) in COMMANDS {
        let path = commands.join(name);
        match crate::state_dir::read_user_file(&path) {
            Ok(bytes) if bytes != text.as_bytes() => say(
                out,
                format_args!(
                    "kept {}: it differs from the one jkz installs (edited?); remove it yourself if you no longer need it",
                    path.display()
                ),
            )?,
            Ok(_) => {
                if remove_file(&path)? {
                    say(out, format_args!("removed {}", path.display()))?;
                    changes += 1;
                }
            }
            Err(_) => {}
        }
    }
    // Directories install may have created go when nothing else is in them.
    if remove_dir_if_empty(&commands) {
        if let Some(parent) = commands.parent() {
            if remove_dir_if_empty(parent) {
                remove_dir_if_empty(&target.claude_dir);
            }
        }
    }
    Ok(changes)
}

/// Removes the project's own state directory when empty, and then its
/// `.gitignore` block; a shared or non-empty one is kept and said so, and
/// so is one another client's registration of jkz still uses
/// ([`super::registrations`]). Returns how many changes it made.
pub(super) fn release_state(
    project: &Path,
    root: &ProjectRoot,
    gitignore: (PathBuf, String),
    out: &mut impl Write,
) -> Result<usize, Failure> {
    let mut changes = 0;
    if root.own {
        let remaining = super::registrations::in_project(project);
        if !remaining.is_empty() {
            if root.found.path.is_dir() {
                say(
                    out,
                    format_args!(
                        "kept {} and its /state/ line in .gitignore: jkz is still registered here for {}",
                        root.found.path.display(),
                        remaining.join("; ")
                    ),
                )?;
            }
            return Ok(0);
        }
    }
    // state/ first: while it stays, so does the line that keeps git
    // from committing it. A root the repository's checkouts share is
    // never removed from one of them.
    let state = root.found.path.clone();
    let mut state_kept = false;
    if !root.own {
        if state.is_dir() {
            say(
                out,
                format_args!(
                    "kept the state directory {}: the repository's checkouts share it",
                    root.describe()
                ),
            )?;
        }
    } else if state.is_dir() {
        if remove_dir_if_empty(&state) {
            say(out, format_args!("removed empty {}", state.display()))?;
            changes += 1;
        } else {
            state_kept = true;
            say(
                out,
                format_args!(
                    "kept {} and its /state/ line in .gitignore: it holds runtime state (snapshots, offloaded outputs); remove it yourself if you no longer need it, then run jkz uninstall again",
                    state.display()
                ),
            )?;
        }
    }
    let (path, text) = gitignore;
    if root.own && !state_kept {
        if let Some(rest) = without_gitignore_block(&text) {
            write_gitignore(&path, &rest)?;
            say(out, format_args!("removed /state/ from {}", path.display()))?;
            changes += 1;
        }
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_block_comes_out_exactly() {
        for original in ["", "target\n", "target", "a\n\nb\n"] {
            let added = with_gitignore_block(original);
            assert_eq!(without_gitignore_block(&added).as_deref(), Some(original));
        }
        assert_eq!(without_gitignore_block("target\n/state/\n"), None);
        let user_moved = format!("x\n{GITIGNORE_BLOCK}\ny\n");
        assert_eq!(
            without_gitignore_block(&user_moved).as_deref(),
            Some("x\ny\n")
        );
    }

    proptest::proptest! {
        /// Whatever `.gitignore` held, adding the block and taking it out
        /// gives the same bytes back.
        #[test]
        fn gitignore_block_round_trips(original in "([a-z/#*. ]{0,12}\n?){0,6}") {
            proptest::prop_assume!(!super::gitignore_ignores_state(&original));
            let added = with_gitignore_block(&original);
            proptest::prop_assert!(super::gitignore_ignores_state(&added));
            proptest::prop_assert_eq!(without_gitignore_block(&added), Some(original));
        }
    }
}
