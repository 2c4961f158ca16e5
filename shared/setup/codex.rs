//! `jkz install --client codex` and `jkz uninstall --client codex`: jkz's
//! entries in a project's Codex CLI configuration.
//!
//! What install adds, and so what uninstall takes away:
//! - the hooks of [`REGISTRATIONS`] in `.codex/hooks.json` (merged: other
//!   keys and other tools' hooks are never touched). Codex reads a
//!   project's `.codex/` only in a project it trusts, and runs hooks only
//!   once they are trusted (`--dangerously-bypass-hook-trust` for headless
//!   runs that vet their hooks otherwise);
//! - `experimental_compact_prompt_file` in `.codex/config.toml`, naming the
//!   compaction prompt jkz keeps in the state directory
//!   ([`crate::client::codex::compact_prompt`]), written now with the live
//!   decision-critical items. A user's own setting of the key is kept (and
//!   said so): jkz never replaces someone's compaction prompt;
//! - the repository's state directory and its `.gitignore` line, as for
//!   Claude Code.
//!
//! Both files are edited in place: `config.toml` with `toml_edit`, which
//! keeps every byte of the user's formatting; `hooks.json` re-serialized.
//! Before the first change, a file's bytes (or its absence) are kept in the
//! state directory; uninstall puts those bytes back when removing jkz's
//! entries from the current file gives the same content (nobody edited it
//! meanwhile), so the original comes back byte for byte. A file that does
//! not parse is refused, with where it is broken, and nothing is written.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::install::{
    hook_command, prepare_state, project_gitignore, refusal, release_state, remove_dir_if_empty,
    remove_file, say, write_file, ProjectRoot,
};
use super::settings::{self, Registration};
use super::{binary_dir, Target, BINARIES};
use super::{InstallArgs, UninstallArgs};
use crate::client::codex::compact_prompt;
use crate::exit::Failure;
use crate::state_dir::layout;

/// The config key Codex reads its compaction prompt file from.
pub const PROMPT_KEY: &str = "experimental_compact_prompt_file";

/// What `jkz install --client codex` registers in `.codex/hooks.json`:
/// PreCompact for both triggers; SessionStart after a compaction and on
/// resume; the registry's `jkz-chat` on every event of a chat's life and
/// before the tools that change files (`Bash`, `apply_patch`). No
/// PostToolUse guard: Codex cannot replace a tool's output; the guard
/// answers in `jkz-chat`'s `PreToolUse` instead, rewriting a `Bash` call
/// nobody refused ([`crate::tool_output::wrap`]).
pub const REGISTRATIONS: [Registration; 8] = [
    Registration {
        event: "PreCompact",
        matcher: "",
        program: "jkz-pre-compact",
    },
    Registration {
        event: "SessionStart",
        matcher: "compact",
        program: "jkz-session-start",
    },
    Registration {
        event: "SessionStart",
        matcher: "resume",
        program: "jkz-session-start",
    },
    Registration {
        event: "SessionStart",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "UserPromptSubmit",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "PreToolUse",
        matcher: "Bash|apply_patch",
        program: "jkz-chat",
    },
    Registration {
        event: "PostToolUse",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "SessionEnd",
        matcher: "",
        program: "jkz-chat",
    },
];

/// The value of [`PROMPT_KEY`] that names `prompt` (in the state
/// directory) from `codex_dir` (the project's `.codex/`): a path relative to
/// that directory. Codex resolves a relative path in a project's
/// `config.toml` against the directory holding the file (measured on
/// 0.169.0: `"../state/p.md"` in `/r/.codex/config.toml` is read as
/// `/r/state/p.md`), so the file, which projects commit, names no path of
/// this machine and serves every clone.
pub fn prompt_value(codex_dir: &Path, prompt: &Path) -> String {
    let real = |p: &Path| -> PathBuf {
        match (p.parent(), p.file_name()) {
            (Some(dir), Some(name)) => std::fs::canonicalize(dir)
                .map(|d| d.join(name))
                .unwrap_or_else(|_| p.to_path_buf()),
            _ => p.to_path_buf(),
        }
    };
    let (from, to) = (real(codex_dir), real(prompt));
    let common = from
        .components()
        .zip(to.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut rel = PathBuf::new();
    for _ in from.components().skip(common) {
        rel.push("..");
    }
    for c in to.components().skip(common) {
        rel.push(c);
    }
    rel.display().to_string()
}

/// The file a value of [`PROMPT_KEY`] names, as Codex reads it from
/// `codex_dir`'s `config.toml`.
pub fn named_by(codex_dir: &Path, value: &str) -> PathBuf {
    let codex_dir = std::path::absolute(codex_dir).unwrap_or_else(|_| codex_dir.to_path_buf());
    let mut path = PathBuf::new();
    for c in codex_dir.join(value).components() {
        match c {
            std::path::Component::ParentDir => {
                path.pop();
            }
            std::path::Component::CurDir => {}
            other => path.push(other),
        }
    }
    path
}

/// True when a value of [`PROMPT_KEY`] names a compaction prompt of jkz's
/// (its file name), whichever checkout's state directory it points at.
fn is_jkz_value(value: &str) -> bool {
    Path::new(value).file_name() == Some(std::ffi::OsStr::new(layout::CODEX_COMPACT_PROMPT))
}

/// One of Codex's files jkz edits.
#[derive(Clone, Copy)]
enum Kind {
    Hooks,
    Config,
}

impl Kind {
    fn file_name(self) -> &'static str {
        match self {
            Kind::Hooks => "hooks.json",
            Kind::Config => "config.toml",
        }
    }

    /// The name of its backup in the state directory, one per checkout.
    fn backup(self, root: &ProjectRoot, project: &Path) -> PathBuf {
        let name = layout::settings_backup_name(&root.found.path, project).replacen(
            layout::SETTINGS_BACKUP,
            &format!("codex-{}.jkz-backup", self.file_name()),
            1,
        );
        root.found.path.join(name)
    }

    /// The same content, whatever the formatting.
    fn same(self, a: &[u8], b: &[u8]) -> bool {
        match self {
            Kind::Hooks => settings::parse(a).ok() == settings::parse(b).ok(),
            Kind::Config => {
                let table = |x: &[u8]| {
                    std::str::from_utf8(x)
                        .ok()
                        .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok())
                        .map(|d| d.to_string())
                };
                table(a).is_some() && table(a) == table(b)
            }
        }
    }

    /// True when the content holds nothing at all.
    fn is_empty(self, bytes: &[u8]) -> bool {
        match self {
            Kind::Hooks => settings::parse(bytes).is_ok_and(|m| m.is_empty()),
            Kind::Config => bytes.iter().all(u8::is_ascii_whitespace),
        }
    }
}

/// A file of `.codex/` as found: `path` as the user knows it, `real` where
/// its bytes live (a symlinked file is edited at its target, the link kept:
/// [`super::config_file`]).
struct CodexFile {
    kind: Kind,
    path: PathBuf,
    real: PathBuf,
    bytes: Option<Vec<u8>>,
}

impl CodexFile {
    fn read(dir: &Path, kind: Kind) -> Result<CodexFile, Failure> {
        let path = dir.join(kind.file_name());
        let real = super::config_file::resolve(&path)?;
        let bytes = match crate::state_dir::read_user_file(&real) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Failure::io(1, format!("reading {}", path.display()), e)),
        };
        Ok(CodexFile {
            kind,
            path,
            real,
            bytes,
        })
    }

    fn bytes(&self) -> &[u8] {
        self.bytes.as_deref().unwrap_or_default()
    }

    /// Writes `new` in place of the file, keeping its permission bits.
    fn replace(&self, new: &[u8]) -> Result<(), Failure> {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&self.real)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644);
        if let Some(dir) = self.real.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Failure::io(1, format!("creating {}", dir.display()), e))?;
        }
        write_file(&self.real, new, mode)
    }

    /// Installs `new` (jkz's entries added), keeping the bytes from before
    /// jkz in `backup` when the file held none of jkz's yet.
    fn install(&self, new: &[u8], had_jkz: bool, backup: &Path) -> Result<(), Failure> {
        if !had_jkz {
            match &self.bytes {
                Some(bytes) => write_file(backup, bytes, 0o600)?,
                None => {
                    remove_file(backup)?;
                }
            }
        }
        self.replace(new)
    }

    /// Puts the file back without jkz's entries (`without`): the bytes from
    /// before jkz when nothing else changed since, the file removed when
    /// jkz created it and nothing else is in it, else `without`. Returns
    /// what it did, for the user.
    fn uninstall(&self, without: &[u8], backup: &Path) -> Result<String, Failure> {
        let original = crate::state_dir::read_user_file(backup).ok();
        let shown = self.path.display();
        let said = match &original {
            Some(orig) if self.kind.same(orig, without) => {
                self.replace(orig)?;
                format!("restored {shown} as it was before jkz install")
            }
            None if self.kind.is_empty(without) => {
                remove_file(&self.real)?;
                format!("removed {shown} (jkz install created it)")
            }
            _ => {
                self.replace(without)?;
                format!(
                    "removed jkz's entries from {shown} (edited since install: the rest is kept)"
                )
            }
        };
        remove_file(backup)?;
        Ok(said)
    }
}

/// Parses `hooks.json` (empty counts as `{}`), refusing a malformed one.
fn parse_hooks(file: &CodexFile) -> Result<Map<String, Value>, Failure> {
    let map = settings::parse(file.bytes()).map_err(|why| refusal(&file.path, &why))?;
    settings::check_shape(&map).map_err(|e| refusal(&file.path, &e.0))?;
    Ok(map)
}

/// Parses `config.toml` keeping its formatting, refusing a malformed one
/// with the line and column the parser names.
fn parse_config(file: &CodexFile) -> Result<toml_edit::DocumentMut, Failure> {
    let text = std::str::from_utf8(file.bytes())
        .map_err(|e| refusal(&file.path, &format!("not UTF-8 text ({e})")))?;
    text.parse::<toml_edit::DocumentMut>().map_err(|e| {
        let why = e.to_string().trim().replace('\n', " ");
        refusal(&file.path, &format!("invalid TOML: {why}"))
    })
}

/// The project, its `.codex/` and its state root; `--user` is refused.
fn resolve(
    project: Option<&Path>,
    user: bool,
    command: &str,
) -> Result<(Target, PathBuf, ProjectRoot), Failure> {
    if user {
        return Err(Failure::new(
            2,
            format!(
                "jkz {command} --client codex works on a project (its .codex/ and its state directory); drop --user and pass --project DIR"
            ),
        ));
    }
    let target = Target::resolve(project, false)?;
    let project = target.project.clone().expect("a project target");
    let root = ProjectRoot::of(&project)?;
    Ok((target, project.join(".codex"), root))
}

/// Runs `jkz install --client codex`.
pub fn install(args: &InstallArgs, out: &mut impl Write) -> Result<u8, Failure> {
    if args.registry.is_some() {
        return Err(Failure::new(
            2,
            "--registry is recorded by jkz install (Claude Code); run it once without --client codex",
        ));
    }
    let (target, codex_dir, root) = resolve(args.project.as_deref(), args.user, "install")?;
    if let Some(note) = target.moved_note() {
        say(out, note)?;
    }
    let bin_dir = binary_dir()?;
    for program in BINARIES {
        if !bin_dir.join(program).is_file() {
            return Err(Failure::new(
                1,
                format!(
                    "{program} is not next to jkz in {}: install all jkz binaries together (./install.sh)",
                    bin_dir.display()
                ),
            ));
        }
    }
    let project = target.project.as_deref().expect("a project target");
    // Both files are read and parsed before anything is written.
    let hooks = CodexFile::read(&codex_dir, Kind::Hooks)?;
    let config = CodexFile::read(&codex_dir, Kind::Config)?;
    let mut hooks_map = parse_hooks(&hooks)?;
    let mut doc = parse_config(&config)?;
    let gitignore = project_gitignore(&target)?.expect("read for a project");
    super::registrations::clear_elsewhere(
        super::registrations::user_file_elsewhere(
            super::registrations::codex_user_hooks(),
            &hooks.path,
        ),
        args.replace,
        "Codex CLI",
        &hooks.path,
        "jkz install --client codex",
        out,
    )?;

    let mut changes = prepare_state(&root, gitignore, out)?;
    let state = root.found.path.clone();

    let had_jkz = settings::has_jkz_hooks(&hooks_map);
    let changed = settings::add_registrations(&mut hooks_map, &REGISTRATIONS, |reg| {
        let mut hook = serde_json::Map::new();
        hook.insert("type".into(), "command".into());
        hook.insert("command".into(), hook_command(&bin_dir, reg.program).into());
        hook
    })
    .map_err(|e| refusal(&hooks.path, &e.0))?;
    if changed {
        hooks.install(
            &settings::serialize(&hooks_map),
            had_jkz,
            &Kind::Hooks.backup(&root, project),
        )?;
        say(
            out,
            settings::registered_summary(&REGISTRATIONS, &hooks.path),
        )?;
        changes += 1;
    }

    let prompt = compact_prompt::path(&state);
    let wanted = prompt_value(&codex_dir, &prompt);
    let current = doc.get(PROMPT_KEY).map(|v| v.as_str().map(str::to_string));
    match current.as_ref().map(Option::as_deref) {
        Some(Some(current)) if current == wanted => {}
        // jkz's, in another form: an absolute path an older jkz wrote, or
        // the main checkout's committed value read in a linked worktree.
        Some(Some(current)) if is_jkz_value(current) => {
            doc.insert(PROMPT_KEY, toml_edit::value(wanted.as_str()));
            config.replace(doc.to_string().as_bytes())?;
            say(
                out,
                format_args!(
                    "set {PROMPT_KEY} in {} to {wanted:?} (was {current:?}): {}",
                    config.path.display(),
                    prompt.display()
                ),
            )?;
            changes += 1;
        }
        Some(current) => say(
            out,
            format_args!(
                "kept {PROMPT_KEY} = {} in {}: it is yours; jkz's compaction prompt ({}) is not used",
                current.map_or_else(|| "(not a string)".to_string(), |c| format!("{c:?}")),
                config.path.display(),
                prompt.display()
            ),
        )?,
        None => {
            doc.insert(PROMPT_KEY, toml_edit::value(wanted.as_str()));
            config.install(
                doc.to_string().as_bytes(),
                false,
                &Kind::Config.backup(&root, project),
            )?;
            say(
                out,
                format_args!(
                    "set {PROMPT_KEY} in {} to {wanted:?} ({}; relative to .codex/, as Codex reads it, so the file names no path of this machine)",
                    config.path.display(),
                    prompt.display()
                ),
            )?;
            changes += 1;
        }
    }
    // The prompt with the items as they are now; each compaction refreshes it.
    let items =
        crate::compaction::live::summarizer_items(&crate::state_dir::StateDir::at(&state), project);
    let fresh = compact_prompt::text(&items);
    if crate::state_dir::read_user_file(&prompt).ok().as_deref() != Some(fresh.as_bytes()) {
        compact_prompt::write(&state, &items)
            .map_err(|e| Failure::io(1, format!("writing {}", prompt.display()), e))?;
        say(
            out,
            format_args!("wrote the compaction prompt {}", prompt.display()),
        )?;
        changes += 1;
    }

    if changes == 0 {
        say(
            out,
            "jkz is already installed here for Codex; nothing changed",
        )?;
    }
    out.flush()
        .map_err(|e| Failure::io(1, "writing stdout", e))?;
    Ok(0)
}

/// Runs `jkz uninstall --client codex`.
pub fn uninstall(args: &UninstallArgs, out: &mut impl Write) -> Result<u8, Failure> {
    let (target, codex_dir, root) = resolve(args.project.as_deref(), args.user, "uninstall")?;
    if let Some(note) = target.moved_note() {
        say(out, note)?;
    }
    let project = target.project.as_deref().expect("a project target");
    let hooks = CodexFile::read(&codex_dir, Kind::Hooks)?;
    let config = CodexFile::read(&codex_dir, Kind::Config)?;
    let mut hooks_map = parse_hooks(&hooks)?;
    let mut doc = parse_config(&config)?;
    let gitignore = project_gitignore(&target)?.expect("read for a project");
    let state = root.found.path.clone();
    let prompt = compact_prompt::path(&state);

    let mut changes = 0;
    if settings::remove_hooks(&mut hooks_map).map_err(|e| refusal(&hooks.path, &e.0))? {
        let said = hooks.uninstall(
            &settings::serialize(&hooks_map),
            &Kind::Hooks.backup(&root, project),
        )?;
        say(out, said)?;
        changes += 1;
    }
    let ours = doc
        .get(PROMPT_KEY)
        .and_then(|v| v.as_str())
        .is_some_and(is_jkz_value);
    if ours {
        doc.remove(PROMPT_KEY);
        let said = config.uninstall(
            doc.to_string().as_bytes(),
            &Kind::Config.backup(&root, project),
        )?;
        say(out, said)?;
        changes += 1;
    }
    // A prompt in a state directory other checkouts share is theirs too:
    // the main checkout's config.toml names it, and Codex refuses to start
    // without it.
    if !root.own && prompt.is_file() {
        say(
            out,
            format_args!(
                "kept {}: the repository's checkouts share it",
                prompt.display()
            ),
        )?;
    } else if remove_file(&prompt)? {
        say(out, format_args!("removed {}", prompt.display()))?;
        changes += 1;
    }
    remove_dir_if_empty(&codex_dir);
    changes += release_state(project, &root, gitignore, out)?;
    if changes == 0 {
        say(out, "jkz is not installed here for Codex; nothing changed")?;
    }
    out.flush()
        .map_err(|e| Failure::io(1, "writing stdout", e))?;
    Ok(0)
}

/// `jkz doctor --client codex`'s lines about Codex's own files: (ok, text)
/// for each jkz hook registered in `.codex/hooks.json` and runnable, and
/// for the compaction prompt `.codex/config.toml` names (relative to
/// `.codex/`, as Codex reads it) being this checkout's and present. The
/// rest (binaries, state directory, registry, pipeline files) is the same
/// doctor as every client's.
pub fn doctor_lines(project: &Path) -> Vec<(bool, String)> {
    let codex_dir = project.join(".codex");
    let mut lines = Vec::new();
    match CodexFile::read(&codex_dir, Kind::Hooks).and_then(|f| parse_hooks(&f).map(|m| (f, m))) {
        Err(e) => lines.push((false, e.to_string())),
        Ok((hooks, map)) => {
            let path_var = std::env::var_os("PATH").unwrap_or_default();
            for reg in REGISTRATIONS {
                let commands =
                    settings::registered_commands(&map, reg.event, reg.matcher, reg.program);
                let runnable = commands.iter().any(|c| {
                    let program = settings::command_path(c);
                    if program.contains('/') {
                        super::doctor::is_executable(Path::new(&program))
                    } else {
                        super::doctor::find_on_path(&path_var, &program).is_some()
                    }
                });
                let what = format!("Codex CLI hook {}", settings::describe(&reg));
                lines.push(if runnable {
                    (true, format!("{what} ({})", hooks.path.display()))
                } else if commands.is_empty() {
                    (
                        false,
                        format!(
                            "{what} not registered in {}; run jkz install --client codex",
                            hooks.path.display()
                        ),
                    )
                } else {
                    (
                        false,
                        format!(
                            "{what}: {} is not an executable file; run jkz install --client codex again",
                            commands[0]
                        ),
                    )
                });
            }
        }
    }
    let prompt = match ProjectRoot::of(project) {
        Ok(root) => compact_prompt::path(&root.found.path),
        Err(e) => {
            lines.push((false, e.to_string()));
            return lines;
        }
    };
    let config = match CodexFile::read(&codex_dir, Kind::Config)
        .and_then(|f| parse_config(&f).map(|d| (f, d)))
    {
        Ok(found) => found,
        Err(e) => {
            lines.push((false, e.to_string()));
            return lines;
        }
    };
    let (config, doc) = config;
    let shown = config.path.display();
    lines.push(match doc.get(PROMPT_KEY).and_then(|v| v.as_str()) {
        None => (
            false,
            format!("{PROMPT_KEY} not set in {shown}; run jkz install --client codex"),
        ),
        Some(value) if !is_jkz_value(value) => (
            true,
            format!("{PROMPT_KEY} = {value:?} in {shown} is yours: jkz's compaction prompt is not used"),
        ),
        Some(value) => {
            let named = named_by(&codex_dir, value);
            let here = |p: &Path| std::fs::canonicalize(p).ok();
            if !named.is_file() {
                (
                    false,
                    format!(
                        "{PROMPT_KEY} = {value:?} in {shown} names {}, which does not exist: Codex refuses to start (\"failed to read experimental compact prompt file\"); run jkz install --client codex here (it writes {})",
                        named.display(),
                        prompt.display()
                    ),
                )
            } else if here(&named) != here(&prompt) {
                (
                    false,
                    format!(
                        "{PROMPT_KEY} = {value:?} in {shown} names {}, not this checkout's compaction prompt {}; run jkz install --client codex here",
                        named.display(),
                        prompt.display()
                    ),
                )
            } else {
                (
                    true,
                    format!(
                        "{PROMPT_KEY} = {value:?} in {shown} names jkz's compaction prompt {}",
                        prompt.display()
                    ),
                )
            }
        }
    });
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_edit_gives_the_bytes_back() {
        for original in [
            "",
            "model = \"o3\"\n",
            "# mine\nmodel = 'o3' # trailing\n\n[profiles.x]\nmodel = \"y\"\n",
            "[a]\nb = 1",
        ] {
            let mut doc: toml_edit::DocumentMut = original.parse().unwrap();
            doc.insert(PROMPT_KEY, toml_edit::value("/r/state/p.md"));
            let added = doc.to_string();
            assert!(added.contains(PROMPT_KEY), "{added}");
            let mut again: toml_edit::DocumentMut = added.parse().unwrap();
            assert_eq!(again[PROMPT_KEY].as_str(), Some("/r/state/p.md"));
            again.remove(PROMPT_KEY);
            assert!(Kind::Config.same(again.to_string().as_bytes(), original.as_bytes()));
        }
    }

    #[test]
    fn registrations_name_hook_programs() {
        for reg in REGISTRATIONS {
            assert!(settings::HOOK_PROGRAMS.contains(&reg.program), "{reg:?}");
        }
    }
}
