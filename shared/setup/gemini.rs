//! `jkz install --client gemini` and `jkz uninstall --client gemini`: jkz's
//! entries in a project's `.gemini/settings.json`.
//!
//! Gemini CLI reads hooks from `.gemini/settings.json` in Claude Code's
//! shape (`{"hooks": {EVENT: [{"matcher": …, "hooks": [{"type": "command",
//! "command": …, "timeout": MILLISECONDS}]}]}}`), so the same merge and
//! surgical removal serve ([`super::settings`]): other keys and other
//! hooks are never touched, a file that is not a JSON object (Gemini CLI
//! also accepts comments in it: jkz does not rewrite such a file) is
//! refused with where it is broken, before anything is written.
//!
//! As for Claude Code: the project's state directory is created when
//! missing (with `/state/` in `.gitignore`), and the settings' bytes from
//! before jkz are kept in `state/gemini-settings.json.jkz-backup`;
//! uninstall puts them back byte for byte when nobody edited the file
//! since, removes a settings file (and `.gemini/`) install created, and
//! removes `state/` and its `.gitignore` line only when `state/` is empty.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::install::{
    hook_command, installed_binaries, prepare_state, project_gitignore, refusal, release_state,
    remove_dir_if_empty, remove_file, say, write_file, ProjectRoot, SettingsFile,
};
use super::settings::{self, Registration};
use super::{InstallArgs, Target, UninstallArgs};
use crate::exit::Failure;
use crate::state_dir::layout;

/// What `jkz install --client gemini` registers, and for how long Gemini
/// CLI may wait for each ([`timeout_ms`]).
pub const REGISTRATIONS: [Registration; 9] = [
    Registration {
        event: "PreCompress",
        matcher: "",
        program: "jkz-pre-compact",
    },
    Registration {
        event: "BeforeModel",
        matcher: "",
        program: "jkz-session-start",
    },
    Registration {
        event: "SessionStart",
        matcher: "resume",
        program: "jkz-session-start",
    },
    Registration {
        event: "AfterTool",
        matcher: "^run_shell_command$",
        program: "jkz-post-tool-use",
    },
    Registration {
        event: "SessionStart",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "BeforeAgent",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "BeforeTool",
        matcher: "^(run_shell_command|write_file|replace)$",
        program: "jkz-chat",
    },
    Registration {
        event: "AfterTool",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "SessionEnd",
        matcher: "",
        program: "jkz-chat",
    },
];

/// A hook's timeout in milliseconds (Gemini CLI's unit): the compaction
/// hooks get 30 s (as Claude Code's default budget for them allows),
/// `jkz-chat` 10 s (it waits at most 2 s for a busy registry).
pub fn timeout_ms(program: &str) -> u64 {
    match program {
        "jkz-chat" => 10_000,
        _ => 30_000,
    }
}

/// `.gemini/settings.json` of a project.
pub fn settings_path(project: &Path) -> PathBuf {
    project.join(".gemini").join("settings.json")
}

/// Registers jkz's hooks in `settings` (`command_for(program)` gives a
/// hook's command line); true when anything changed.
pub fn add_hooks(
    settings: &mut Map<String, Value>,
    command_for: impl Fn(&str) -> String,
) -> Result<bool, settings::ShapeError> {
    settings::add_registrations(settings, &REGISTRATIONS, |reg| {
        let mut hook = Map::new();
        hook.insert("type".into(), "command".into());
        hook.insert("command".into(), command_for(reg.program).into());
        hook.insert("timeout".into(), timeout_ms(reg.program).into());
        hook
    })
}

fn project_only(user: bool, verb: &str) -> Result<(), Failure> {
    if user {
        return Err(Failure::new(
            2,
            format!(
                "jkz {verb} --client gemini works on a project's .gemini/settings.json; --user is not supported for Gemini CLI (pass --project DIR)"
            ),
        ));
    }
    Ok(())
}

/// Runs `jkz install --client gemini`.
pub fn install(args: &InstallArgs, out: &mut impl Write) -> Result<u8, Failure> {
    project_only(args.user, "install")?;
    if args.registry.is_some() {
        return Err(Failure::new(
            2,
            "jkz install --client gemini: --registry is recorded by `jkz install --registry URL` (the team's jkz.toml serves every client)",
        ));
    }
    let target = Target::resolve(args.project.as_deref(), false)?;
    if let Some(note) = target.moved_note() {
        say(out, note)?;
    }
    let project = target.project.clone().expect("a project target");
    let bin_dir = installed_binaries()?;
    let file = SettingsFile::read(&settings_path(&project))?;
    let gitignore = project_gitignore(&target)?.expect("read for a project");
    let root = ProjectRoot::of(&project)?;
    super::registrations::clear_elsewhere(
        super::registrations::user_file_elsewhere(
            super::registrations::gemini_user_settings(),
            &file.shown,
        ),
        args.replace,
        "Gemini CLI",
        &file.shown,
        "jkz install --client gemini",
        out,
    )?;

    let mut changes = prepare_state(&root, gitignore, out)?;
    let state = &root.found.path;

    let mut map = file.map.clone();
    let had_jkz = settings::has_jkz_hooks(&map);
    let changed = add_hooks(&mut map, |program| hook_command(&bin_dir, program))
        .map_err(|e| refusal(&file.shown, &e.0))?;
    if changed {
        if !had_jkz {
            // The settings before jkz: what uninstall restores.
            let backup = state.join(layout::GEMINI_SETTINGS_BACKUP);
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
            settings::registered_summary(&REGISTRATIONS, &file.shown),
        )?;
        changes += 1;
    }
    if changes == 0 {
        say(
            out,
            "jkz is already installed here for Gemini CLI; nothing changed",
        )?;
    }
    out.flush()
        .map_err(|e| Failure::io(1, "writing stdout", e))?;
    Ok(0)
}

/// Runs `jkz uninstall --client gemini`.
pub fn uninstall(args: &UninstallArgs, out: &mut impl Write) -> Result<u8, Failure> {
    project_only(args.user, "uninstall")?;
    let target = Target::resolve(args.project.as_deref(), false)?;
    if let Some(note) = target.moved_note() {
        say(out, note)?;
    }
    let project = target.project.clone().expect("a project target");
    let file = SettingsFile::read(&settings_path(&project))?;
    let gitignore = project_gitignore(&target)?.expect("read for a project");
    let root = ProjectRoot::of(&project)?;
    let state = root.found.path.clone();
    let backup = state.join(layout::GEMINI_SETTINGS_BACKUP);

    let mut changes = 0;
    let mut map = file.map.clone();
    if settings::remove_hooks(&mut map).map_err(|e| refusal(&file.shown, &e.0))? {
        let original = crate::state_dir::read_user_file(&backup).ok();
        let restorable = original
            .as_deref()
            .and_then(|b| settings::parse(b).ok())
            .is_some_and(|o| o == map);
        if restorable {
            file.replace(original.as_deref().expect("checked"))?;
            remove_file(&backup)?;
            say(
                out,
                format_args!(
                    "restored {} as it was before jkz install",
                    file.shown.display()
                ),
            )?;
        } else if original.is_none() && map.is_empty() {
            remove_file(&file.real)?;
            if let Some(dir) = file.real.parent() {
                remove_dir_if_empty(dir);
            }
            say(
                out,
                format_args!("removed {} (jkz install created it)", file.shown.display()),
            )?;
        } else {
            if state.is_dir() {
                write_file(&backup, file.bytes.as_deref().unwrap_or_default(), 0o600)?;
            }
            file.replace(&settings::serialize(&map))?;
            say(
                out,
                format_args!(
                    "removed jkz's hooks from {} (edited since install: the rest is kept, re-serialized; previous bytes in {})",
                    file.shown.display(),
                    backup.display()
                ),
            )?;
        }
        changes += 1;
    }
    // state/ and its .gitignore line go only when nothing is in it and no
    // other client's registration of jkz remains.
    changes += release_state(&project, &root, gitignore, out)?;
    if changes == 0 {
        say(
            out,
            "jkz is not installed here for Gemini CLI; nothing changed",
        )?;
    }
    out.flush()
        .map_err(|e| Failure::io(1, "writing stdout", e))?;
    Ok(0)
}

/// `jkz doctor --client gemini`'s lines about the hooks: (ok, text) for
/// the settings file and each of [`REGISTRATIONS`].
pub fn doctor_lines(project: &Path) -> Vec<(bool, String)> {
    let path = settings_path(project);
    let bytes = match crate::state_dir::read_user_file(&path) {
        Ok(bytes) => bytes,
        Err(e) => {
            return vec![(
                false,
                format!("{}: {e}; run jkz install --client gemini", path.display()),
            )]
        }
    };
    let map = match settings::parse(&bytes) {
        Ok(map) => map,
        Err(why) => return vec![(false, format!("{}: {why}; fix the file", path.display()))],
    };
    REGISTRATIONS
        .iter()
        .map(|reg| {
            let shown = settings::describe(reg);
            match settings::registered_commands(&map, reg.event, reg.matcher, reg.program)
                .first()
            {
                Some(command) => (
                    true,
                    format!("Gemini CLI hook {shown}: {command} ({})", path.display()),
                ),
                None => (
                    false,
                    format!(
                        "Gemini CLI hook {shown} not registered in {}; run jkz install --client gemini",
                        path.display()
                    ),
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn registers_with_millisecond_timeouts_and_comes_out_exactly() {
        let user = json!({
            "model": {"name": "gemini-2.5-pro"},
            "hooks": {"BeforeTool": [{"matcher": "read_file", "hooks": [{"type": "command", "command": "audit.sh", "timeout": 500}]}]}
        });
        let mut map = user.as_object().unwrap().clone();
        assert!(add_hooks(&mut map, |p| format!("/opt/jkz/{p}")).unwrap());
        let groups = map["hooks"]["PreCompress"].as_array().unwrap();
        assert_eq!(groups[0]["hooks"][0]["timeout"], 30_000);
        assert_eq!(groups[0]["hooks"][0]["command"], "/opt/jkz/jkz-pre-compact");
        assert_eq!(map["hooks"]["BeforeTool"].as_array().unwrap().len(), 2);
        assert!(
            !add_hooks(&mut map, |p| format!("/opt/jkz/{p}")).unwrap(),
            "idempotent"
        );
        assert!(
            add_hooks(&mut map, |p| format!("/usr/bin/{p}")).unwrap(),
            "moved"
        );
        assert!(settings::remove_hooks(&mut map).unwrap());
        assert_eq!(Value::Object(map), user);
    }
}
