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
/// nobody refused ([`crate::client::codex::guard`]).
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

/// A file of `.codex/` as found.
struct CodexFile {
    kind: Kind,
    path: PathBuf,
    bytes: Option<Vec<u8>>,
}

impl CodexFile {
    fn read(dir: &Path, kind: Kind) -> Result<CodexFile, Failure> {
        let path = dir.join(kind.file_name());
        let bytes = match crate::state_dir::read_user_file(&path) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Failure::io(1, format!("reading {}", path.display()), e)),
        };
        Ok(CodexFile { kind, path, bytes })
    }

    fn bytes(&self) -> &[u8] {
        self.bytes.as_deref().unwrap_or_default()
    }

    /// Writes `new` in place of the file, keeping its permission bits.
    fn replace(&self, new: &[u8]) -> Result<(), Failure> {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&self.path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644);
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Failure::io(1, format!("creating {}", dir.display()), e))?;
        }
        write_file(&self.path, new, mode)
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
                remove_file(&self.path)?;
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
            format_args!(
                "registered hooks PreCompact, SessionStart (compact, resume), and jkz-chat (SessionStart, UserPromptSubmit, PreToolUse Bash|apply_patch, PostToolUse, SessionEnd) in {}",
                hooks.path.display()
            ),
        )?;
        changes += 1;
    }

    let prompt = compact_prompt::path(&state);
    let prompt_text = prompt.display().to_string();
    match doc.get(PROMPT_KEY).map(|v| v.as_str()) {
        Some(Some(current)) if current == prompt_text => {}
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
            doc.insert(PROMPT_KEY, toml_edit::value(prompt_text.as_str()));
            config.install(
                doc.to_string().as_bytes(),
                false,
                &Kind::Config.backup(&root, project),
            )?;
            say(
                out,
                format_args!(
                    "set {PROMPT_KEY} in {} to {}",
                    config.path.display(),
                    prompt.display()
                ),
            )?;
            changes += 1;
        }
    }
    // The prompt with the items as they are now; each compaction refreshes it.
    let items =
        crate::compaction::live::codex_live_items(&crate::state_dir::StateDir::at(&state), project);
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
        .is_some_and(|p| Path::new(p) == prompt);
    if ours {
        doc.remove(PROMPT_KEY);
        let said = config.uninstall(
            doc.to_string().as_bytes(),
            &Kind::Config.backup(&root, project),
        )?;
        say(out, said)?;
        changes += 1;
    }
    if remove_file(&prompt)? {
        say(out, format_args!("removed {}", prompt.display()))?;
        changes += 1;
    }
    remove_dir_if_empty(&codex_dir);
    changes += release_state(&root, gitignore, out)?;
    if changes == 0 {
        say(out, "jkz is not installed here for Codex; nothing changed")?;
    }
    out.flush()
        .map_err(|e| Failure::io(1, "writing stdout", e))?;
    Ok(0)
}

/// Runs `jkz doctor --client codex`: every jkz hook registered in
/// `.codex/hooks.json` and its program there, the compaction prompt named
/// in `.codex/config.toml` and present. One line per check (`ok  `,
/// `FAIL`, `note`); exit 1 when a check failed.
pub fn doctor(project: Option<&Path>, mut out: impl Write) -> Result<u8, Failure> {
    let (target, codex_dir, root) = resolve(project, false, "doctor")?;
    let mut failed = 0;
    let mut line = |ok: bool, text: String| -> Result<(), Failure> {
        failed += usize::from(!ok);
        let tag = if ok { "ok  " } else { "FAIL" };
        writeln!(out, "{tag} {text}").map_err(|e| Failure::io(1, "writing stdout", e))
    };
    if let Some(note) = target.moved_note() {
        line(true, note)?;
    }
    let hooks = CodexFile::read(&codex_dir, Kind::Hooks)?;
    match parse_hooks(&hooks) {
        Err(e) => line(false, e.to_string())?,
        Ok(map) => {
            for reg in REGISTRATIONS {
                let commands =
                    settings::registered_commands(&map, reg.event, reg.matcher, reg.program);
                let runnable = commands.iter().any(|c| {
                    let program = settings::command_path(c);
                    let path = Path::new(&program);
                    if path.is_absolute() {
                        path.is_file()
                    } else {
                        let var = std::env::var_os("PATH").unwrap_or_default();
                        std::env::split_paths(&var).any(|d| d.join(&program).is_file())
                    }
                });
                let what = format!("{} ({:?}) → {}", reg.event, reg.matcher, reg.program);
                line(
                    runnable,
                    if runnable {
                        format!("{what} in {}", hooks.path.display())
                    } else if commands.is_empty() {
                        format!(
                            "{what} not registered in {}: run jkz install --client codex",
                            hooks.path.display()
                        )
                    } else {
                        format!("{what}: {} is not an executable file (run jkz install --client codex again)", commands[0])
                    },
                )?;
            }
        }
    }
    let config = CodexFile::read(&codex_dir, Kind::Config)?;
    let prompt = compact_prompt::path(&root.found.path);
    match parse_config(&config) {
        Err(e) => line(false, e.to_string())?,
        Ok(doc) => match doc.get(PROMPT_KEY).and_then(|v| v.as_str()) {
            Some(p) if Path::new(p) == prompt => line(
                prompt.is_file(),
                if prompt.is_file() {
                    format!(
                        "{PROMPT_KEY} names jkz's compaction prompt {}",
                        prompt.display()
                    )
                } else {
                    format!(
                        "{} is missing: run jkz install --client codex",
                        prompt.display()
                    )
                },
            )?,
            Some(p) => line(
                true,
                format!("{PROMPT_KEY} = {p:?} is yours: jkz's compaction prompt is not used"),
            )?,
            None => line(
                false,
                format!(
                    "{PROMPT_KEY} not set in {}: run jkz install --client codex",
                    config.path.display()
                ),
            )?,
        },
    }
    writeln!(
        out,
        "note Codex runs a project's hooks only in a trusted project, once the hooks are trusted (or with --dangerously-bypass-hook-trust)"
    )
    .map_err(|e| Failure::io(1, "writing stdout", e))?;
    out.flush()
        .map_err(|e| Failure::io(1, "writing stdout", e))?;
    Ok(if failed == 0 { 0 } else { 1 })
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
