//! Which clients have jkz registered for a project: Claude Code (the
//! project's settings or local settings, the user's settings, the plugin),
//! Codex CLI (`.codex/hooks.json`), Gemini CLI (`.gemini/settings.json`),
//! OpenCode (`.opencode/plugins/jkz.js`).
//!
//! The state directory and its `.gitignore` line are the project's opt-in
//! for every client at once: uninstalling one client takes them away only
//! when no registration of any client remains, so the others keep working.

use std::path::{Path, PathBuf};

use super::{gemini, plugin, settings, Target};

/// Every registration of jkz that applies to `project`, one line each
/// (`Claude Code (/p/.claude/settings.json)`), read as the files are now.
pub fn in_project(project: &Path) -> Vec<String> {
    let target = Target {
        claude_dir: project.join(".claude"),
        project: Some(project.to_path_buf()),
        moved_from: None,
    };
    let user = Target::resolve(None, true).ok();
    let mut found = Vec::new();
    let has_hooks = |path: &PathBuf| {
        plugin::read_settings(path).is_some_and(|map| settings::has_jkz_hooks(&map))
    };
    for path in plugin::settings_files(&target, user.as_ref()) {
        if has_hooks(&path) {
            found.push(format!("Claude Code ({})", path.display()));
        }
    }
    if let Some(p) = plugin::enabled(&target, user.as_ref()) {
        found.push(format!(
            "Claude Code (the plugin {}, enabled in {})",
            p.id,
            p.enabled_in.display()
        ));
    }
    for (client, path) in [
        ("Codex CLI", project.join(".codex").join("hooks.json")),
        ("Gemini CLI", gemini::settings_path(project)),
    ] {
        if has_hooks(&path) {
            found.push(format!("{client} ({})", path.display()));
        }
    }
    if let Some(path) = super::copilot::file(Some(project)) {
        if super::copilot::has_jkz_hooks(&path) {
            found.push(format!("Copilot CLI ({})", path.display()));
        }
    }
    if let Some(path) = super::opencode::file(Some(project)) {
        if super::opencode::has_jkz_plugin(&path) {
            found.push(format!("OpenCode ({})", path.display()));
        }
    }
    found
}

/// A registration of jkz for the same client somewhere other than where
/// install is about to register it: both would run, so every hook twice.
pub struct Elsewhere {
    /// What it is, for the user: `your user settings (every project)`.
    pub what: String,
    pub path: PathBuf,
    removal: Removal,
}

impl Elsewhere {
    /// True for the user's own settings: a registration that covers every
    /// project, so a project opts in without registering jkz again.
    pub fn is_user_wide(&self) -> bool {
        matches!(&self.removal, Removal::Installed(t) if t.project.is_none())
    }
}

enum Removal {
    /// A settings file `jkz install` wrote: taken out as `jkz uninstall`
    /// does (its backup restored), without touching the state directory.
    Installed(Target),
    /// A file jkz never wrote: jkz's hooks removed from it, the rest kept.
    Hooks,
}

/// The other registrations of Claude Code's jkz for `target` (a project's
/// settings, or with `--user` the user's): the user's settings and the
/// project's local settings for a project; the current project's settings
/// for the user's.
pub fn claude_elsewhere(target: &Target) -> Vec<Elsewhere> {
    let mut found = Vec::new();
    let has_hooks =
        |path: &Path| plugin::read_settings(path).is_some_and(|m| settings::has_jkz_hooks(&m));
    let project = match &target.project {
        Some(_) => {
            if let Ok(user) = Target::resolve(None, true) {
                if has_hooks(&user.settings()) {
                    found.push(Elsewhere {
                        what: "your user settings (every project)".into(),
                        path: user.settings(),
                        removal: Removal::Installed(user),
                    });
                }
            }
            target.clone()
        }
        None => match Target::resolve(None, false) {
            Ok(mut project) => {
                // Named as the user knows it, not as `.`.
                if let Ok(here) = std::path::absolute(project.claude_dir.as_path()) {
                    project.claude_dir = here;
                }
                if has_hooks(&project.settings()) {
                    found.push(Elsewhere {
                        what: "this project's settings".into(),
                        path: project.settings(),
                        removal: Removal::Installed(project.clone()),
                    });
                }
                project
            }
            Err(_) => return found,
        },
    };
    if let Some(local) = project.local_settings() {
        if has_hooks(&local) {
            found.push(Elsewhere {
                what: "this project's local settings".into(),
                path: local,
                removal: Removal::Hooks,
            });
        }
    }
    found
}

/// A client's user-wide hooks file (`user`) that holds jkz's hooks, for a
/// client jkz installs per project only (Codex CLI: `$CODEX_HOME/hooks.json`,
/// `~/.codex/` by default; Gemini CLI: `~/.gemini/settings.json`), unless
/// it is the project's own file `here` (a project in the home directory).
pub fn user_file_elsewhere(user: Option<PathBuf>, here: &Path) -> Vec<Elsewhere> {
    let same = |a: &Path| {
        let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        real(a) == real(here)
    };
    user.filter(|p| !same(p))
        .filter(|p| plugin::read_settings(p).is_some_and(|m| settings::has_jkz_hooks(&m)))
        .map(|path| Elsewhere {
            what: "your user settings (every project)".into(),
            path,
            removal: Removal::Hooks,
        })
        .into_iter()
        .collect()
}

/// Refuses an install while `found` is not empty, unless `replace`: then
/// each is taken out first, and said so.
pub fn clear_elsewhere(
    found: Vec<Elsewhere>,
    replace: bool,
    client: &str,
    here: &Path,
    command: &str,
    out: &mut impl std::io::Write,
) -> Result<(), crate::exit::Failure> {
    if found.is_empty() {
        return Ok(());
    }
    if !replace {
        let places: Vec<String> = found
            .iter()
            .map(|e| format!("{} {}", e.what, e.path.display()))
            .collect();
        return Err(crate::exit::Failure::new(
            crate::exit::EXIT_FAILED,
            format!(
                "jkz is already registered for {client} in {}: registering it in {} too would make {client} run every hook twice; nothing was changed. \
                 Keep that registration, or move it here with `{command} --replace` (it takes jkz's hooks out of {} first)",
                places.join(" and in "),
                here.display(),
                found
                    .iter()
                    .map(|e| e.path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        ));
    }
    for e in found {
        match &e.removal {
            Removal::Installed(target) => {
                let root = target
                    .project
                    .as_deref()
                    .map(super::install::ProjectRoot::of)
                    .transpose()?;
                let file = super::install::SettingsFile::read(&target.settings())?;
                super::install::unregister(target, root.as_ref(), &file, out)?;
            }
            Removal::Hooks => {
                let file = super::install::SettingsFile::read(&e.path)?;
                let mut map = file.map.clone();
                if settings::remove_hooks(&mut map)
                    .map_err(|why| super::install::refusal(&e.path, &why.0))?
                {
                    file.replace(&settings::serialize(&map))?;
                }
            }
        }
        super::install::say(
            out,
            format_args!(
                "--replace: took jkz's hooks out of {} {}",
                e.what,
                e.path.display()
            ),
        )?;
    }
    Ok(())
}

/// Codex CLI's user-wide hooks file: `$CODEX_HOME/hooks.json`, else
/// `~/.codex/hooks.json`.
pub fn codex_user_hooks() -> Option<PathBuf> {
    let home = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    home("CODEX_HOME")
        .or_else(|| home("HOME").map(|h| h.join(".codex")))
        .map(|dir| dir.join("hooks.json"))
}

/// Gemini CLI's user-wide settings: `~/.gemini/settings.json`.
pub fn gemini_user_settings() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| PathBuf::from(h).join(".gemini").join("settings.json"))
}
