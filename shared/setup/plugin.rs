//! The jkz Claude Code plugin (`plugin/` in the repository, listed by its
//! `.claude-plugin/marketplace.json`) as the client records it: which
//! settings file enables it and where the client keeps its copy.
//!
//! Claude Code enables a plugin with `"enabledPlugins": {"jkz@MARKET": true}`
//! in the user's, the project's or the project's local settings (the most
//! local file that names it decides), and lists installed copies in
//! `~/.claude/plugins/installed_plugins.json` (`plugins[id][].installPath`).
//! Measured on Claude Code 2.1.197.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::settings;
use super::Target;

/// The plugin's name: its id is `jkz@<marketplace>`.
pub const PLUGIN_NAME: &str = "jkz";

/// The hooks configuration inside the plugin, as shipped.
pub const HOOKS_JSON: &str = include_str!("../../plugin/hooks/hooks.json");

/// The slash-command files, as shipped: `(file name, contents)`. One source
/// for both ways of installing: the plugin carries them in
/// `plugin/commands/` (where Claude Code looks for a plugin's commands), and
/// `jkz install` writes the same files under `.claude/commands/jkz/`, so
/// either way Claude Code names them `/jkz:save` and `/jkz:load`.
pub const COMMANDS: [(&str, &str); 2] = [
    ("save.md", include_str!("../../plugin/commands/save.md")),
    ("load.md", include_str!("../../plugin/commands/load.md")),
];

/// An enabled jkz plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnabledPlugin {
    /// `jkz@<marketplace>`.
    pub id: String,
    /// The settings file that enables it.
    pub enabled_in: PathBuf,
    /// The client's copy of the plugin, when installed_plugins.json names
    /// one that exists.
    pub install_path: Option<PathBuf>,
}

/// The settings files Claude Code reads for a project, most local first:
/// `.claude/settings.local.json`, `.claude/settings.json`, then the user's.
pub fn settings_files(project: &Target, user: Option<&Target>) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = project.local_settings().into_iter().collect();
    files.push(project.settings());
    files.extend(user.map(Target::settings));
    files
}

/// A settings file's object; none when missing or not a JSON object.
pub fn read_settings(path: &Path) -> Option<serde_json::Map<String, Value>> {
    settings::parse(&crate::state_dir::read_user_file(path).ok()?).ok()
}

/// The jkz plugin enabled for `project`, if any.
pub fn enabled(project: &Target, user: Option<&Target>) -> Option<EnabledPlugin> {
    let mut decided: Vec<String> = Vec::new();
    for file in settings_files(project, user) {
        let Some(map) = read_settings(&file) else {
            continue;
        };
        let Some(plugins) = map.get("enabledPlugins").and_then(Value::as_object) else {
            continue;
        };
        for (id, on) in plugins {
            let is_jkz = id
                .split_once('@')
                .is_some_and(|(name, _)| name == PLUGIN_NAME);
            if !is_jkz || decided.contains(id) {
                continue;
            }
            decided.push(id.clone());
            if on.as_bool() == Some(true) {
                let install_path = user.and_then(|u| install_path(&u.claude_dir, id));
                return Some(EnabledPlugin {
                    id: id.clone(),
                    enabled_in: file,
                    install_path,
                });
            }
        }
    }
    None
}

/// Where the client keeps its copy of plugin `id` (`~/.claude/plugins/…`).
fn install_path(claude_dir: &Path, id: &str) -> Option<PathBuf> {
    let path = claude_dir.join("plugins").join("installed_plugins.json");
    let value: Value =
        serde_json::from_slice(&crate::state_dir::read_user_file(&path).ok()?).ok()?;
    value["plugins"][id]
        .as_array()?
        .iter()
        .filter_map(|entry| entry["installPath"].as_str())
        .map(PathBuf::from)
        .find(|p| p.is_dir())
}

/// The program a plugin hook command runs: its last word
/// (`"${CLAUDE_PLUGIN_ROOT}/scripts/run-hook" jkz-pre-compact`).
pub fn hook_program(command: &str) -> &str {
    command.split_whitespace().last().unwrap_or("")
}

/// The registrations of [`settings::REGISTRATIONS`] a plugin's hooks
/// configuration lacks, as `event (matcher "m")`.
pub fn missing_hooks(hooks_json: &[u8]) -> Vec<String> {
    let value: Value = serde_json::from_slice(hooks_json).unwrap_or(Value::Null);
    settings::REGISTRATIONS
        .iter()
        .filter(|reg| {
            !value["hooks"][reg.event]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|g| g["matcher"].as_str().unwrap_or("") == reg.matcher)
                .filter_map(|g| g["hooks"].as_array())
                .flatten()
                .filter_map(|h| h["command"].as_str())
                .any(|c| hook_program(c) == reg.program)
        })
        .map(|reg| format!("{} (matcher \"{}\")", reg.event, reg.matcher))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_hooks_register_everything_install_does() {
        assert_eq!(missing_hooks(HOOKS_JSON.as_bytes()), Vec::<String>::new());
        assert_eq!(missing_hooks(b"{}").len(), settings::REGISTRATIONS.len());
    }
}
