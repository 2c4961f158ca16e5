//! `jkz install --client copilot` and `jkz uninstall --client copilot`:
//! jkz's hooks file for GitHub Copilot CLI.
//!
//! Copilot reads every `*.json` of a repository's `.github/hooks/` (only
//! in a folder it trusts) and of `~/.copilot/hooks/` (always), each
//! `{"version": 1, "hooks": {EVENT: [{"type": "command", "bash": …,
//! "timeoutSec": …}]}}`. jkz owns one such file, `jkz.json` ([`file`]):
//! install writes it whole, uninstall removes it (and the directories
//! install created, when empty), so the tree is as it was byte for byte. A
//! `jkz.json` holding hooks that are not jkz's is refused, untouched.
//!
//! Copilot's events do not name themselves, so each command line starts
//! with `JKZ_COPILOT_EVENT=<event>` (read by [`crate::client::copilot`]).
//! As for the other clients, a project install creates the state
//! directory (with `/state/` in `.gitignore`); `--user` writes none.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::install::{hook_command, installed_binaries, say};
use super::settings::{self, Registration};
use super::whole_file::{self, WholeFile};
use super::{InstallArgs, Target, UninstallArgs};
use crate::client::copilot::EVENT_VAR;
use crate::exit::Failure;

/// What `jkz install --client copilot` registers: the snapshot on
/// `preCompact`; the re-injection on a resumed `sessionStart` and on the
/// first `postToolUse` after a compaction (the one carrier that reaches
/// every later request); the registry's `jkz-chat` on every event of a
/// chat's life, its `preToolUse` refusing claimed paths and wrapping shell
/// commands in jkz's output guard (`modifiedArgs`).
pub const REGISTRATIONS: [Registration; 8] = [
    Registration {
        event: "preCompact",
        matcher: "",
        program: "jkz-pre-compact",
    },
    Registration {
        event: "sessionStart",
        matcher: "",
        program: "jkz-session-start",
    },
    Registration {
        event: "postToolUse",
        matcher: "",
        program: "jkz-session-start",
    },
    Registration {
        event: "sessionStart",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "userPromptSubmitted",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "preToolUse",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "postToolUse",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "sessionEnd",
        matcher: "",
        program: "jkz-chat",
    },
];

/// What install says about trust, and doctor notes.
pub const TRUST_NOTE: &str = "Copilot CLI runs a repository's hooks (.github/hooks/) only in a folder it trusts: accept its trust prompt once in this folder, or add the folder to \"trustedFolders\" in ~/.copilot/config.json (headless runs: --allow-all or COPILOT_ALLOW_ALL=true); without trust no hook of jkz runs, silently. Hooks installed with --user run in every folder";

/// A hook's time limit in seconds: the compaction hooks get 30 s,
/// `jkz-chat` 10 s (it waits at most 2 s for a busy registry).
pub fn timeout_sec(program: &str) -> u64 {
    match program {
        "jkz-chat" => 10,
        _ => 30,
    }
}

/// jkz's hooks file: the project's `.github/hooks/jkz.json`, or
/// `~/.copilot/hooks/jkz.json`.
pub fn file(project: Option<&Path>) -> Option<PathBuf> {
    match project {
        Some(p) => Some(p.join(".github").join("hooks").join("jkz.json")),
        None => std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| {
            PathBuf::from(h)
                .join(".copilot")
                .join("hooks")
                .join("jkz.json")
        }),
    }
}

/// The command line Copilot runs for `reg`.
pub fn command(reg: &Registration, program_command: &str) -> String {
    format!("{EVENT_VAR}={} {program_command}", reg.event)
}

/// The program a registered command line runs, past the event's name.
pub fn program_of(command: &str) -> String {
    let rest = command
        .trim_start()
        .strip_prefix(EVENT_VAR)
        .and_then(|r| r.strip_prefix('='))
        .and_then(|r| r.split_once(' ').map(|(_, p)| p))
        .unwrap_or(command);
    settings::command_program(rest)
}

/// The event a registered command line names (`None`: none).
pub fn event_of(command: &str) -> Option<&str> {
    command
        .trim_start()
        .strip_prefix(EVENT_VAR)?
        .strip_prefix('=')?
        .split(' ')
        .next()
}

/// The whole file jkz writes (`command_for(program)`: a program's
/// command line).
pub fn contents(command_for: impl Fn(&str) -> String) -> Value {
    let mut hooks = Map::new();
    for reg in &REGISTRATIONS {
        let entry = json!({
            "type": "command",
            "bash": command(reg, &command_for(reg.program)),
            "timeoutSec": timeout_sec(reg.program),
        });
        hooks
            .entry(reg.event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .expect("an array")
            .push(entry);
    }
    json!({"version": 1, "hooks": hooks})
}

/// Every hook command of a Copilot hooks file: (event, command line).
pub fn commands(v: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (event, entries) in v
        .get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        for entry in entries.as_array().into_iter().flatten() {
            if let Some(bash) = entry.get("bash").and_then(Value::as_str) {
                out.push((event.clone(), bash.to_string()));
            }
        }
    }
    out
}

/// True when every hook of the file runs one of jkz's programs.
fn only_jkz(v: &Value) -> bool {
    let hooks = v.get("hooks").and_then(Value::as_object);
    hooks.is_some_and(|h| {
        h.values().all(|entries| {
            entries.as_array().is_some_and(|list| {
                list.iter().all(|e| {
                    e.get("bash")
                        .and_then(Value::as_str)
                        .is_some_and(|c| settings::HOOK_PROGRAMS.contains(&program_of(c).as_str()))
                })
            })
        })
    })
}

/// True when `path` is a hooks file holding a hook of jkz's.
pub fn has_jkz_hooks(path: &Path) -> bool {
    read(path).is_some_and(|v| {
        commands(&v)
            .iter()
            .any(|(_, c)| settings::HOOK_PROGRAMS.contains(&program_of(c).as_str()))
    })
}

fn read(path: &Path) -> Option<Value> {
    let bytes = crate::state_dir::read_user_file(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Runs `jkz install --client copilot`.
pub fn install(args: &InstallArgs, out: &mut impl Write) -> Result<u8, Failure> {
    let target = whole_file::target(
        "copilot",
        args.project.as_deref(),
        args.user,
        args.registry.is_some(),
        out,
    )?;
    let bin_dir = installed_binaries()?;
    let file = whole_file(&target)?;
    let mut bytes =
        serde_json::to_vec_pretty(&contents(|p| hook_command(&bin_dir, p))).expect("serializes");
    bytes.push(b'\n');
    let written = settings::registered_summary(&REGISTRATIONS, &file.path);
    file.install(&target, &bytes, &written, out)?;
    if target.project.is_some() {
        say(out, format_args!("note: {TRUST_NOTE}"))?;
    }
    out.flush()
        .map_err(|e| Failure::io(1, "writing stdout", e))?;
    Ok(0)
}

/// Runs `jkz uninstall --client copilot`.
pub fn uninstall(args: &UninstallArgs, out: &mut impl Write) -> Result<u8, Failure> {
    let target = whole_file::target("copilot", args.project.as_deref(), args.user, false, out)?;
    whole_file(&target)?.uninstall(&target, out)
}

/// True when `bytes` are a hooks file holding jkz's hooks only.
fn only_jkz_bytes(bytes: &[u8]) -> bool {
    serde_json::from_slice(bytes)
        .ok()
        .as_ref()
        .is_some_and(only_jkz)
}

/// The hooks file of `target`, as jkz writes it whole.
fn whole_file(target: &Target) -> Result<WholeFile<'static>, Failure> {
    Ok(WholeFile {
        client: "Copilot CLI",
        path: whole_file::path(
            "copilot",
            "~/.copilot/hooks/",
            file(target.project.as_deref()),
        )?,
        is_ours: &only_jkz_bytes,
        not_ours: (
            "holds hooks that are not jkz's (jkz writes this file whole)",
            "holds hooks that are not jkz's; remove jkz's entries by hand",
        ),
        // .github/hooks/, then .github/; the user's ~/.copilot/hooks/ only.
        empty_parents: if target.project.is_some() { 2 } else { 1 },
    })
}

/// True when `project` is among the folders Copilot trusts
/// (`trustedFolders` of `~/.copilot/config.json`, or a folder above it).
fn trusted(project: &Path) -> bool {
    let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
        return false;
    };
    let config = PathBuf::from(home).join(".copilot").join("config.json");
    let real = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    read(&config)
        .and_then(|v| v.get("trustedFolders").cloned())
        .and_then(|v| v.as_array().cloned())
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(PathBuf::from))
        .any(|f| real.starts_with(std::fs::canonicalize(&f).unwrap_or(f)))
}

/// `jkz doctor --client copilot`'s lines: the hooks file (the project's,
/// else the user's) and each of [`REGISTRATIONS`], then trust.
pub fn doctor_lines(project: &Path) -> Vec<(bool, String)> {
    let project_file = file(Some(project)).expect("a project file");
    let user_file = file(None);
    let (path, is_project) = if project_file.exists() {
        (project_file, true)
    } else if let Some(u) = user_file.filter(|u| u.exists()) {
        (u, false)
    } else {
        return vec![(
            false,
            format!(
                "{}: no such file; run jkz install --client copilot",
                project_file.display()
            ),
        )];
    };
    let Some(v) = read(&path) else {
        return vec![(
            false,
            format!("{}: not a JSON hooks file; fix the file", path.display()),
        )];
    };
    let found = commands(&v);
    let mut lines: Vec<(bool, String)> = REGISTRATIONS
        .iter()
        .map(|reg| {
            let hit = found.iter().find(|(event, c)| {
                event == reg.event && program_of(c) == reg.program && event_of(c) == Some(reg.event)
            });
            match hit {
                Some((_, c)) => (
                    true,
                    format!(
                        "Copilot CLI hook {} → {}: {c} ({})",
                        reg.event,
                        reg.program,
                        path.display()
                    ),
                ),
                None => (
                    false,
                    format!(
                        "Copilot CLI hook {} → {} not registered in {}; run jkz install --client copilot",
                        reg.event,
                        reg.program,
                        path.display()
                    ),
                ),
            }
        })
        .collect();
    if is_project {
        lines.push(if trusted(project) {
            (
                true,
                format!(
                    "Copilot CLI trusts {} (~/.copilot/config.json trustedFolders)",
                    project.display()
                ),
            )
        } else {
            (
                false,
                format!(
                    "Copilot CLI does not list {} in ~/.copilot/config.json trustedFolders: {TRUST_NOTE}",
                    project.display()
                ),
            )
        });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_names_each_event_in_its_command_line() {
        let v = contents(|p| format!("/opt/jkz/{p}"));
        assert_eq!(v["version"], 1);
        let pre = &v["hooks"]["preToolUse"][0];
        assert_eq!(pre["type"], "command");
        assert_eq!(
            pre["bash"],
            "JKZ_COPILOT_EVENT=preToolUse /opt/jkz/jkz-chat"
        );
        assert_eq!(pre["timeoutSec"], 10);
        assert_eq!(v["hooks"]["postToolUse"].as_array().unwrap().len(), 2);
        assert!(only_jkz(&v));
        let all = commands(&v);
        assert_eq!(all.len(), REGISTRATIONS.len());
        for (event, c) in &all {
            assert_eq!(event_of(c), Some(event.as_str()));
        }
        assert_eq!(
            program_of("JKZ_COPILOT_EVENT=preCompact '/a b/jkz-pre-compact'"),
            "jkz-pre-compact"
        );
        let mut other = v.clone();
        other["hooks"]["preToolUse"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "command", "bash": "audit.sh"}));
        assert!(!only_jkz(&other));
    }
}
