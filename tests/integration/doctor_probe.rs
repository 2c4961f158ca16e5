//! `jkz doctor --probe`: every hook a client's configuration registers is
//! run as the client would run it, and its effect checked. After `jkz
//! install` it passes for every client and leaves the project as it was;
//! a registration broken on purpose (a wrong path, a wrong event name, a
//! program that answers nothing) is named.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::install_clients::{jkz, CLIENTS};
use crate::util::{Dir, Run};

/// A git repository (the probe's claim names its worktree) with a home of
/// its own.
pub(crate) fn project() -> Dir {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project")).unwrap();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let init = std::process::Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(dir.join("project"))
        .status()
        .unwrap();
    assert!(init.success());
    dir
}

/// Every file below `root`, with its bytes (`.git` left out).
pub(crate) fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if rel == ".git" {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                files.insert(format!("{rel}/"), Vec::new());
                todo.push(path);
            } else {
                files.insert(rel, std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    files
}

pub(crate) fn probe_lines(run: &Run) -> Vec<String> {
    run.stdout_str()
        .lines()
        .filter(|l| l.contains(" probe "))
        .map(str::to_string)
        .collect()
}

/// `jkz install --client CLIENT`, then `jkz doctor --probe`: every probe
/// line says its hook fired, a line proves each of `effects`, and the
/// project is as it was. Returns the project, the probe lines and doctor's
/// exit status (a check other than the probe may fail: Copilot CLI's
/// trust of the folder).
pub(crate) fn probe_after_install(
    client: &str,
    effects: &[&str],
) -> (Dir, Vec<String>, Option<i32>) {
    let dir = project();
    jkz(&dir, &["install", "--client", client]).success();
    let before = tree(&dir.join("project"));
    let run = jkz(&dir, &["doctor", "--probe", "--client", client]);
    let lines = probe_lines(&run);
    for line in &lines {
        assert!(
            line.starts_with("ok   probe ") && line.contains(": fired: "),
            "{client}: {line}\n{}",
            run.report()
        );
    }
    for effect in effects {
        assert!(
            lines.iter().any(|l| l.contains(effect)),
            "{client}: no hook proved `{effect}`: {}",
            run.report()
        );
    }
    assert_eq!(
        tree(&dir.join("project")),
        before,
        "{client}: the probe changed the project"
    );
    (dir, lines, run.code())
}

#[test]
fn doctor_probe_fires_every_hook_of_every_client_and_leaves_the_project_as_it_was() {
    for client in CLIENTS {
        let effects = [
            "refused",
            "snapshot was written",
            "pipeline state",
            "registry",
        ];
        let (dir, lines, code) = probe_after_install(client, &effects);
        assert_eq!(code, Some(0), "{client}: {lines:?}");
        let registered = settings_hooks(&dir, client);
        assert!(
            lines.len() >= registered,
            "{client}: a probe line per registered hook ({registered}): {lines:?}"
        );
    }
}

/// How many of jkz's hooks `client`'s file registers.
fn settings_hooks(dir: &Dir, client: &str) -> usize {
    let file = match client {
        "claude" => "project/.claude/settings.json",
        "codex" => "project/.codex/hooks.json",
        _ => "project/.gemini/settings.json",
    };
    let settings: Value = serde_json::from_slice(&dir.read(file)).unwrap();
    settings["hooks"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|groups| groups.as_array().unwrap())
        .flat_map(|g| g["hooks"].as_array().unwrap())
        .filter(|h| h["command"].as_str().unwrap_or("").contains("jkz-"))
        .count()
}

/// Rewrites `.claude/settings.json` with `edit`.
fn edit_settings(dir: &Dir, edit: impl FnOnce(&mut Value)) {
    let path = "project/.claude/settings.json";
    let mut settings: Value = serde_json::from_slice(&dir.read(path)).unwrap();
    edit(&mut settings);
    dir.write(path, serde_json::to_string_pretty(&settings).unwrap());
}

#[test]
fn doctor_probe_names_a_hook_registered_at_a_wrong_path() {
    let dir = project();
    jkz(&dir, &["install"]).success();
    edit_settings(&dir, |s| {
        s["hooks"]["PreCompact"][0]["hooks"][0]["command"] = "/opt/gone/jkz-pre-compact".into();
    });
    let run = jkz(&dir, &["doctor", "--probe"]);
    assert_eq!(run.code(), Some(1), "{}", run.report());
    let lines = probe_lines(&run);
    let broken: Vec<&String> = lines.iter().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(broken.len(), 1, "{}", run.report());
    assert!(
        broken[0].starts_with(
            "FAIL probe PreCompact → jkz-pre-compact: not run: the command was not found"
        ) && broken[0].contains("/opt/gone/jkz-pre-compact"),
        "{}",
        run.report()
    );
}

#[test]
fn doctor_probe_names_a_hook_registered_under_a_wrong_event_name() {
    let dir = project();
    jkz(&dir, &["install"]).success();
    edit_settings(&dir, |s| {
        let hooks = s["hooks"].as_object_mut().unwrap();
        let groups = hooks.remove("PreCompact").unwrap();
        hooks.insert("PreCompaction".into(), groups);
    });
    let run = jkz(&dir, &["doctor", "--probe"]);
    assert_eq!(run.code(), Some(1), "{}", run.report());
    let out = run.stdout_str();
    assert!(
        out.contains(
            "FAIL probe PreCompact → jkz-pre-compact: not run: Claude Code has no such hook"
        ),
        "{}",
        run.report()
    );
    assert!(
        out.contains("FAIL probe PreCompaction → jkz-pre-compact: not run: jkz registers jkz-pre-compact for no such event"),
        "{}",
        run.report()
    );
}

#[test]
fn doctor_probe_names_a_hook_that_runs_but_answers_nothing() {
    let dir = project();
    jkz(&dir, &["install", "--client", "gemini"]).success();
    // A stand-in named like jkz's program that reads the event and does
    // nothing: the configuration reads right, the hook does nothing.
    let stand_in = dir.write("elsewhere/jkz-chat", "#!/bin/sh\ncat >/dev/null\n");
    std::fs::set_permissions(
        &stand_in,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = "project/.gemini/settings.json";
    let mut settings: Value = serde_json::from_slice(&dir.read(path)).unwrap();
    for group in settings["hooks"]["BeforeTool"].as_array_mut().unwrap() {
        for hook in group["hooks"].as_array_mut().unwrap() {
            hook["command"] = stand_in.display().to_string().into();
        }
    }
    dir.write(path, serde_json::to_string_pretty(&settings).unwrap());
    let run = jkz(&dir, &["doctor", "--probe", "--client", "gemini"]);
    assert_eq!(run.code(), Some(1), "{}", run.report());
    let broken: Vec<String> = probe_lines(&run)
        .into_iter()
        .filter(|l| l.starts_with("FAIL"))
        .collect();
    assert_eq!(broken.len(), 1, "{}", run.report());
    assert!(
        broken[0].starts_with("FAIL probe BeforeTool (^(run_shell_command|write_file|replace)$) → jkz-chat: wrong answer: an edit in a worktree chat")
            && broken[0].contains("was not refused"),
        "{}",
        run.report()
    );
}
