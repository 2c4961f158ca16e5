//! `jkz install | uninstall | doctor | gc` against real project directories.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::{bin, git, Cmd, Dir, Run};

/// Settings another tool wrote, in its own formatting (4-space indents, no
/// final newline), with hooks on the events jkz uses and one it does not.
const OTHER_TOOL_SETTINGS: &str = r#"{
    "permissions": {"allow": ["Bash(make:*)"]},
    "hooks": {
        "PreCompact": [{"matcher": "", "hooks": [{"type": "command", "command": "other-tool pre-compact"}]}],
        "SessionStart": [{"matcher": "compact", "hooks": [{"type": "command", "command": "other-tool start", "timeout": 5}]}],
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "other-tool post"}]}]
    },
    "env": {"GREETING": "héllo"}
}"#;

fn bin_dir() -> PathBuf {
    bin("jkz").parent().unwrap().to_path_buf()
}

fn jkz_cmd(dir: &Dir, sub: &str) -> Run {
    dir.cmd("jkz")
        .env("HOME", dir.join("home"))
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir().display()))
        .args([sub, "--project", &dir.join("project").display().to_string()])
        .run()
}

fn settings(dir: &Dir) -> Value {
    serde_json::from_slice(&dir.read("project/.claude/settings.json")).unwrap()
}

fn commands_of(settings: &Value, event: &str, matcher: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["matcher"].as_str().unwrap_or("") == matcher)
        .flat_map(|g| g["hooks"].as_array().unwrap().iter())
        .map(|h| h["command"].as_str().unwrap().to_string())
        .collect()
}

fn snapshot_tree(dir: &Dir) -> Vec<(PathBuf, Vec<u8>)> {
    dir.files()
        .into_iter()
        .map(|p| {
            let bytes = dir.read(&p);
            (p, bytes)
        })
        .collect()
}

#[test]
fn install_merges_with_other_tools_is_idempotent_and_uninstall_restores_bytes() {
    let dir = Dir::new();
    dir.write("project/.claude/settings.json", OTHER_TOOL_SETTINGS);
    dir.write("project/src/main.rs", "fn main() {}\n");
    let before = snapshot_tree(&dir);

    let first = jkz_cmd(&dir, "install").success();
    let s = settings(&dir);
    let original: Value = serde_json::from_str(OTHER_TOOL_SETTINGS).unwrap();
    // Other tools' entries are all still there, unchanged, first.
    assert_eq!(s["permissions"], original["permissions"]);
    assert_eq!(s["env"], original["env"]);
    assert_eq!(
        s["hooks"]["PostToolUse"][0],
        original["hooks"]["PostToolUse"][0]
    );
    assert_eq!(
        s["hooks"]["PreCompact"][0],
        original["hooks"]["PreCompact"][0]
    );
    assert_eq!(
        s["hooks"]["SessionStart"][0],
        original["hooks"]["SessionStart"][0]
    );
    // jkz's hooks run the installed binaries by name: they are first on PATH.
    let pre = "jkz-pre-compact".to_string();
    let start = "jkz-session-start".to_string();
    assert_eq!(
        commands_of(&s, "PreCompact", ""),
        ["other-tool pre-compact", &pre]
    );
    assert_eq!(
        commands_of(&s, "SessionStart", "compact"),
        ["other-tool start", &start]
    );
    assert_eq!(commands_of(&s, "SessionStart", "resume"), [start]);
    assert_eq!(
        commands_of(&s, "PostToolUse", "Bash|Read|Grep|mcp__.*"),
        ["jkz-post-tool-use"]
    );
    assert_eq!(commands_of(&s, "PostToolUse", "Bash"), ["other-tool post"]);
    // Commands, state/ (0700) and .gitignore.
    let save_md = String::from_utf8(dir.read("project/.claude/commands/jkz/save.md")).unwrap();
    assert!(save_md.contains("jkz-session save") && save_md.contains("allowed-tools:"));
    let load_md = String::from_utf8(dir.read("project/.claude/commands/jkz/load.md")).unwrap();
    assert!(load_md.contains("!`jkz-session load"));
    let mode = std::fs::metadata(dir.join("project/state"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    assert!(String::from_utf8(dir.read("project/.gitignore"))
        .unwrap()
        .contains("/state/"));
    // The summary names every registration, as doctor does.
    assert!(
        first.stdout_str().contains(&format!(
            "registered {} hooks in {}:",
            jkz::setup::settings::REGISTRATIONS.len(),
            dir.join("project/.claude/settings.json").display()
        )),
        "{}",
        first.report()
    );
    for reg in jkz::setup::settings::REGISTRATIONS {
        let line = format!("\n  {}\n", jkz::setup::settings::describe(&reg));
        assert!(
            first.stdout_str().contains(&line),
            "{line}{}",
            first.report()
        );
    }

    // Twice changes nothing, not a byte.
    let installed = snapshot_tree(&dir);
    let again = jkz_cmd(&dir, "install").success();
    assert!(
        again.stdout_str().contains("nothing changed"),
        "{}",
        again.report()
    );
    assert_eq!(snapshot_tree(&dir), installed);

    // Doctor is green with the binaries on PATH.
    let doctor = jkz_cmd(&dir, "doctor").success();
    assert!(
        doctor.stdout_str().contains("all checks passed"),
        "{}",
        doctor.report()
    );
    assert!(!doctor.stdout_str().contains("FAIL"));

    // Uninstall gives every original byte back and leaves nothing behind.
    jkz_cmd(&dir, "uninstall").success();
    assert_eq!(snapshot_tree(&dir), before);
    assert!(!dir.join("project/.claude/commands").exists());
    assert!(!dir.join("project/state").exists());
    let again = jkz_cmd(&dir, "uninstall").success();
    assert!(again.stdout_str().contains("nothing changed"));
}

#[test]
fn install_into_an_empty_project_and_out_again() {
    let dir = Dir::new();
    dir.write("project/.gitignore", "target");
    let before = snapshot_tree(&dir);
    jkz_cmd(&dir, "install").success();
    assert_eq!(
        dir.read("project/.gitignore"),
        b"target\n# jkz runtime state (added by jkz install)\n/state/"
    );
    assert!(settings(&dir)["hooks"]["PreCompact"].is_array());
    jkz_cmd(&dir, "uninstall").success();
    assert_eq!(snapshot_tree(&dir), before);
    assert!(!dir.join("project/.claude").exists());
}

#[test]
fn install_keeps_an_existing_state_ignore() {
    let dir = Dir::new();
    dir.write("project/.gitignore", "/target\n/state\n");
    jkz_cmd(&dir, "install").success();
    assert_eq!(dir.read("project/.gitignore"), b"/target\n/state\n");
}

#[test]
fn install_refuses_unparsable_settings_and_changes_nothing() {
    for bad in [
        "{\"hooks\": {\"PreCompact\": [",
        "// comment\n{}",
        "[1, 2]",
        "{\"hooks\": []}",
        "{\"hooks\": {\"SessionStart\": {\"matcher\": \"\"}}}",
    ] {
        let dir = Dir::new();
        dir.write("project/.claude/settings.json", bad);
        let before = snapshot_tree(&dir);
        for sub in ["install", "uninstall"] {
            let run = jkz_cmd(&dir, sub).expect_code(1);
            let err = run.stderr_str();
            assert!(
                err.contains("settings.json") && err.contains("nothing was changed"),
                "{}",
                run.report()
            );
            assert_eq!(snapshot_tree(&dir), before, "{bad}");
            assert!(!dir.join("project/state").exists());
        }
    }
}

#[test]
fn uninstall_after_the_user_edited_settings_removes_only_jkz() {
    let dir = Dir::new();
    dir.write("project/.claude/settings.json", OTHER_TOOL_SETTINGS);
    jkz_cmd(&dir, "install").success();
    let mut s = settings(&dir);
    s["model"] = json!("added-later");
    dir.write(
        "project/.claude/settings.json",
        serde_json::to_vec_pretty(&s).unwrap(),
    );
    let run = jkz_cmd(&dir, "uninstall").success();
    assert!(
        run.stdout_str().contains("edited since install"),
        "{}",
        run.report()
    );
    let mut expected: Value = serde_json::from_str(OTHER_TOOL_SETTINGS).unwrap();
    expected["model"] = json!("added-later");
    assert_eq!(settings(&dir), expected);
    // What was replaced is kept, in the git-ignored state/.
    let backup: Value =
        serde_json::from_slice(&dir.read("project/state/settings.json.jkz-backup")).unwrap();
    assert_eq!(backup, s);
}

#[test]
fn user_install_writes_only_below_home() {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project")).unwrap();
    let run = dir
        .cmd("jkz")
        .env("HOME", dir.join("home"))
        .args(["install", "--user"])
        .run()
        .success();
    let files: Vec<String> = dir
        .files()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(
        files,
        [
            "home/.claude/commands/jkz/load.md",
            "home/.claude/commands/jkz/save.md",
            "home/.claude/settings.json"
        ],
        "{}",
        run.report()
    );
    dir.cmd("jkz")
        .env("HOME", dir.join("home"))
        .args(["uninstall", "--user"])
        .run()
        .success();
    assert!(dir.files().is_empty(), "{:?}", dir.files());
}

#[test]
fn doctor_says_what_to_fix() {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project")).unwrap();
    let run = dir
        .cmd("jkz")
        .env("HOME", dir.join("home"))
        .env("PATH", "/usr/bin:/bin")
        .args([
            "doctor",
            "--project",
            &dir.join("project").display().to_string(),
        ])
        .run()
        .expect_code(1);
    let out = run.stdout_str();
    for expected in [
        "FAIL not on PATH: jkz, jkz-truncate",
        "FAIL hook PreCompact → jkz-pre-compact not registered; run jkz install",
        "FAIL /jkz:load not installed; run jkz install",
        "does not exist; run jkz install",
    ] {
        assert!(
            out.contains(expected),
            "missing {expected:?}\n{}",
            run.report()
        );
    }
    // Every line is one check: ok, FAIL or note, then the summary.
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[..lines.len() - 1]
        .iter()
        .all(|l| l.starts_with("ok ") || l.starts_with("FAIL ") || l.starts_with("note ")));

    jkz_cmd(&dir, "install").success();
    std::fs::set_permissions(
        dir.join("project/state"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    dir.write("project/state/pipeline/7.json", "{not json");
    dir.write(
        "project/state/pipeline/7-compact-plan.md",
        "a companion, not a pipeline file",
    );
    let run = jkz_cmd(&dir, "doctor").expect_code(1);
    let out = run.stdout_str();
    assert!(
        out.contains("has mode 755") && out.contains("chmod 700"),
        "{}",
        run.report()
    );
    assert!(
        out.contains("pipeline/7.json: invalid JSON"),
        "{}",
        run.report()
    );
    assert!(!out.contains("7-compact-plan"), "{}", run.report());
    assert_eq!(out.matches("FAIL").count(), 2, "{}", run.report());

    // A PATH the user's shell lacks is a note, not a failure.
    std::fs::set_permissions(
        dir.join("project/state"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::fs::remove_file(dir.join("project/state/pipeline/7.json")).unwrap();
    let run = dir
        .cmd("jkz")
        .env("HOME", dir.join("home"))
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir().display()))
        .args(["doctor", "--shell-path", "/usr/bin:/bin", "--project"])
        .arg(dir.join("project"))
        .run()
        .success();
    assert!(
        run.stdout_str().contains("is not on your shell's PATH"),
        "{}",
        run.report()
    );
}

fn aged(dir: &Dir, rel: &str, age: Duration) {
    let path = dir.write(rel, vec![b'x'; 1000]);
    crate::util::age(&path, age);
}

#[test]
fn gc_applies_retention_and_reports_what_it_freed() {
    let dir = Dir::new();
    let day = Duration::from_secs(86_400);
    for i in 0..22 {
        aged(
            &dir,
            &format!("state/pre-compact-{i:02}.json"),
            day * (8 + i),
        );
    }
    aged(&dir, "state/context-offload/old.md", day * 8);
    aged(&dir, "state/context-offload/fresh.md", day);
    aged(&dir, "state/session-snapshots/gone.json", day * 31);
    aged(&dir, "state/session-snapshots/live.json", day);
    aged(
        &dir,
        "state/.pre-compact-x.json.abc.tmp",
        Duration::from_secs(3600),
    );
    aged(&dir, "state/pipeline/1.json", day * 100);
    let gc = |extra: &[&str]| {
        dir.cmd("jkz")
            .args([
                "--state-dir".to_string(),
                dir.join("state").display().to_string(),
                "gc".into(),
            ])
            .args(extra.iter().copied())
            .run()
            .success()
    };
    let before = dir.files();
    let dry = gc(&["--dry-run"]);
    assert_eq!(dir.files(), before, "dry run removes nothing");
    assert!(
        dry.stdout_str().contains("would free 4.9 KiB in 5 file(s)"),
        "{}",
        dry.report()
    );
    let run = gc(&[]);
    assert!(
        run.stdout_str().contains("freed 4.9 KiB in 5 file(s)"),
        "{}",
        run.report()
    );
    let left: Vec<String> = dir
        .files()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    for gone in [
        "state/pre-compact-20.json",
        "state/pre-compact-21.json",
        "state/context-offload/old.md",
        "state/session-snapshots/gone.json",
        "state/.pre-compact-x.json.abc.tmp",
    ] {
        assert!(!left.contains(&gone.to_string()), "{gone} kept");
    }
    assert_eq!(left.len(), before.len() - 5, "{left:?}");
    assert!(gc(&[]).stdout_str().contains("freed 0 bytes in 0 file(s)"));
}

/// The repository's own files, for tests of install.sh and the plugin.
pub(crate) fn checkout_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A `cargo` that builds nothing: `build --release` copies the test's
/// binaries to `${CARGO_TARGET_DIR:-target}/release/`, `install --root R`
/// to `R/bin/`, as the real one would put them. Each call's arguments are
/// appended to `fakebin/cargo-args`, one line per call.
pub(crate) fn fake_cargo(dir: &Dir) -> PathBuf {
    let script = format!(
        r#"#!/bin/sh
bins="{bins}"
echo "$*" >> "$(dirname "$0")/cargo-args"
case "$1" in
  build) out="${{CARGO_TARGET_DIR:-target}}/release" ;;
  install)
    while [ $# -gt 0 ]; do [ "$1" = --root ] && out="$2/bin"; shift; done ;;
  *) echo "fake cargo: $*" >&2; exit 1 ;;
esac
mkdir -p "$out" && for b in {names}; do cp "$bins/$b" "$out"/; done
"#,
        bins = bin_dir().display(),
        names = jkz::setup::BINARIES.join(" ")
    );
    let path = dir.write("fakebin/cargo", script);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir.join("fakebin")
}

/// `dir/checkout`, holding only this repository's install.sh.
fn checkout_with_install_sh(dir: &Dir) -> PathBuf {
    let checkout = dir.join("checkout");
    std::fs::create_dir_all(&checkout).unwrap();
    std::fs::copy(checkout_file("install.sh"), checkout.join("install.sh")).unwrap();
    checkout
}

/// What a finished process said, for an assertion's message.
fn shown(out: &std::process::Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn install_sh_with_cargo_target_dir_set_installs_what_cargo_built() {
    let dir = Dir::new();
    let checkout = checkout_with_install_sh(&dir);
    dir.write("checkout/.gitignore", "/target\n");
    let fakebin = fake_cargo(&dir);
    for target_dir in [Some(dir.join("elsewhere")), None] {
        let prefix = dir.join("prefix");
        let _ = std::fs::remove_dir_all(&prefix);
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(checkout.join("install.sh"))
            .arg("--prefix")
            .arg(&prefix)
            .current_dir(dir.path())
            .env("HOME", dir.join("home"))
            .env("PATH", format!("{}:/usr/bin:/bin", fakebin.display()))
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("JKZ_STATE_DIR");
        if let Some(t) = &target_dir {
            cmd.env("CARGO_TARGET_DIR", t);
        }
        let out = cmd.output().unwrap();
        let shown = format!("CARGO_TARGET_DIR={target_dir:?}\n{}", shown(&out));
        assert!(out.status.success(), "{shown}");
        for b in jkz::setup::BINARIES {
            assert!(prefix.join(b).is_file(), "{b} not installed\n{shown}");
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("all checks passed"), "{shown}");
    }
}

#[test]
fn install_sh_stopped_before_doctor_when_jkz_was_registered_for_the_user() {
    let dir = Dir::new();
    let checkout = checkout_with_install_sh(&dir);
    let fakebin = fake_cargo(&dir);
    let prefix = dir.join("prefix");
    let home = dir.join("home");
    let env = |cmd: &mut std::process::Command| {
        cmd.current_dir(&checkout)
            .env("HOME", &home)
            .env(
                "PATH",
                format!("{}:{}:/usr/bin:/bin", prefix.display(), fakebin.display()),
            )
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("JKZ_STATE_DIR");
    };
    // jkz is already registered for this user (an earlier install).
    let mut first = std::process::Command::new("bash");
    first
        .arg(checkout.join("install.sh"))
        .arg("--prefix")
        .arg(&prefix);
    env(&mut first);
    assert!(first.output().unwrap().status.success());
    let mut user = std::process::Command::new(prefix.join("jkz"));
    user.args(["uninstall", "--project", "."]);
    env(&mut user);
    assert!(user.output().unwrap().status.success());
    let mut user = std::process::Command::new(prefix.join("jkz"));
    user.args(["install", "--user"]);
    env(&mut user);
    let out = user.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut again = std::process::Command::new("bash");
    again
        .arg(checkout.join("install.sh"))
        .arg("--prefix")
        .arg(&prefix);
    env(&mut again);
    let out = again.output().unwrap();
    let shown = shown(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("jkz is registered for your user in"),
        "{shown}"
    );
    assert!(
        stdout.contains("all checks passed"),
        "doctor ran and passed: {shown}"
    );
    assert!(out.status.success(), "{shown}");
}

#[test]
fn install_keeps_a_user_edited_slash_command_and_says_how_to_take_the_new_one() {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project")).unwrap();
    jkz_cmd(&dir, "install").success();
    let edited = "---\ndescription: my own save\n---\nSave it my way.\n";
    dir.write("project/.claude/commands/jkz/save.md", edited);
    let doctor = jkz_cmd(&dir, "doctor").expect_code(1);
    assert!(
        doctor
            .stdout_str()
            .contains("differs from this jkz version's"),
        "{}",
        doctor.report()
    );
    let run = jkz_cmd(&dir, "install").success();
    assert_eq!(
        dir.read("project/.claude/commands/jkz/save.md"),
        edited.as_bytes()
    );
    assert!(
        run.stdout_str().contains("kept")
            && run
                .stdout_str()
                .contains("remove it and run jkz install again"),
        "{}",
        run.report()
    );
    // Uninstall keeps it too; the untouched load.md goes.
    let run = jkz_cmd(&dir, "uninstall").success();
    assert_eq!(
        dir.read("project/.claude/commands/jkz/save.md"),
        edited.as_bytes()
    );
    assert!(!dir.join("project/.claude/commands/jkz/load.md").exists());
    assert!(run.stdout_str().contains("kept"), "{}", run.report());
    // Taking the new one: remove it, install again.
    std::fs::remove_file(dir.join("project/.claude/commands/jkz/save.md")).unwrap();
    jkz_cmd(&dir, "install").success();
    assert!(
        String::from_utf8(dir.read("project/.claude/commands/jkz/save.md"))
            .unwrap()
            .contains("jkz-session save")
    );
}

#[test]
fn uninstall_keeps_the_state_ignore_line_while_state_stays() {
    let dir = Dir::new();
    dir.write("project/.gitignore", "target\n");
    jkz_cmd(&dir, "install").success();
    dir.write("project/state/session-snapshots/abc.json", "{}");
    let run = jkz_cmd(&dir, "uninstall").success();
    let gitignore = String::from_utf8(dir.read("project/.gitignore")).unwrap();
    assert!(
        gitignore.contains("/state/"),
        "{gitignore}\n{}",
        run.report()
    );
    assert!(dir
        .join("project/state/session-snapshots/abc.json")
        .exists());
    assert!(
        run.stdout_str().contains("kept") && run.stdout_str().contains(".gitignore"),
        "{}",
        run.report()
    );
    // Once state/ is gone, the next uninstall takes the line out.
    std::fs::remove_dir_all(dir.join("project/state")).unwrap();
    jkz_cmd(&dir, "uninstall").success();
    assert_eq!(dir.read("project/.gitignore"), b"target\n");
}

#[test]
fn install_leaves_no_settings_backup_for_git_to_commit() {
    let dir = Dir::new();
    dir.write("project/.claude/settings.json", OTHER_TOOL_SETTINGS);
    git(&dir.join("project"), &["init", "-q"]);
    jkz_cmd(&dir, "install").success();
    assert!(!dir
        .join("project/.claude/settings.json.jkz-backup")
        .exists());
    // Everything install added that git would see: the settings, commands
    // and .gitignore, never the backup nor anything in state/.
    let untracked = git(
        &dir.join("project"),
        &["status", "--porcelain", "--untracked-files=all"],
    );
    assert!(!untracked.contains("jkz-backup"), "{untracked}");
    assert!(!untracked.contains("state/"), "{untracked}");
    assert!(untracked.contains(".claude/settings.json"), "{untracked}");
    // Uninstall still gives the original bytes back, and state/ goes.
    jkz_cmd(&dir, "uninstall").success();
    assert_eq!(
        dir.read("project/.claude/settings.json"),
        OTHER_TOOL_SETTINGS.as_bytes()
    );
    assert!(!dir.join("project/state").exists());
}

#[test]
fn uninstall_of_an_older_install_finds_the_backup_beside_the_settings() {
    let dir = Dir::new();
    dir.write("project/.claude/settings.json", OTHER_TOOL_SETTINGS);
    jkz_cmd(&dir, "install").success();
    // Where versions before this one kept it.
    std::fs::rename(
        dir.join("project/state/settings.json.jkz-backup"),
        dir.join("project/.claude/settings.json.jkz-backup"),
    )
    .unwrap();
    jkz_cmd(&dir, "uninstall").success();
    assert_eq!(
        dir.read("project/.claude/settings.json"),
        OTHER_TOOL_SETTINGS.as_bytes()
    );
    assert!(!dir
        .join("project/.claude/settings.json.jkz-backup")
        .exists());
}

#[test]
fn uninstall_user_removes_the_empty_claude_dir_install_created() {
    let dir = Dir::new();
    let user = |sub: &str| {
        dir.cmd("jkz")
            .env("HOME", dir.join("home"))
            .args([sub, "--user"])
            .run()
            .success()
    };
    std::fs::create_dir_all(dir.join("home")).unwrap();
    user("install");
    assert!(dir.join("home/.claude/settings.json").exists());
    user("uninstall");
    assert!(!dir.join("home/.claude").exists());
    // A ~/.claude with anything else in it stays.
    dir.write("home/.claude/CLAUDE.md", "mine");
    user("install");
    user("uninstall");
    assert_eq!(dir.read("home/.claude/CLAUDE.md"), b"mine");
}

#[test]
fn install_in_a_repository_subdirectory_uses_the_root_and_says_so() {
    let dir = Dir::new();
    git(&dir.join(""), &["init", "-q"]);
    std::fs::create_dir_all(dir.join("src/deep")).unwrap();
    let run = Cmd::new("jkz", &dir.join("src/deep"))
        .env("HOME", dir.join("home"))
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir().display()))
        .arg("install")
        .run()
        .success();
    assert!(
        run.stdout_str().contains("using the repository root")
            && run.stdout_str().contains("src/deep"),
        "{}",
        run.report()
    );
    assert!(
        dir.join(".claude/settings.json").exists(),
        "{}",
        run.report()
    );
    assert!(dir.join("state").is_dir());
    assert!(!dir.join("src/deep/.claude").exists());
    assert!(!dir.join("src/deep/state").exists());
    // An explicit --project is taken as given.
    Cmd::new("jkz", &dir.join("src/deep"))
        .env("HOME", dir.join("home"))
        .args(["install", "--project", "."])
        .run()
        .success();
    assert!(dir.join("src/deep/.claude/settings.json").exists());
}

#[test]
fn committed_settings_name_the_hooks_on_path_by_name_else_by_absolute_path() {
    // On PATH (the jkz that installs is the first one found): bare names,
    // which work on every machine of a team sharing the file.
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project")).unwrap();
    jkz_cmd(&dir, "install").success();
    let s = settings(&dir);
    assert_eq!(commands_of(&s, "PreCompact", ""), ["jkz-pre-compact"]);
    assert_eq!(
        commands_of(&s, "SessionStart", "compact"),
        ["jkz-session-start"]
    );
    // Not on PATH: the absolute path, or the hooks would not run at all.
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project")).unwrap();
    dir.cmd("jkz")
        .env("HOME", dir.join("home"))
        .env("PATH", "/usr/bin:/bin")
        .args(["install", "--project"])
        .arg(dir.join("project"))
        .run()
        .success();
    let s = settings(&dir);
    assert_eq!(
        commands_of(&s, "PreCompact", ""),
        [bin_dir().join("jkz-pre-compact").display().to_string()]
    );
}

#[test]
fn install_killed_by_sigkill_leaves_no_temp_behind_and_keeps_the_settings_mode() {
    let dir = Dir::new();
    let settings_path = dir.write("project/.claude/settings.json", OTHER_TOOL_SETTINGS);
    std::fs::set_permissions(&settings_path, std::fs::Permissions::from_mode(0o640)).unwrap();
    // What a kill between the temp file's creation and its rename leaves.
    let stale = dir.write("project/.claude/.settings.json.Xk3v9a.tmp", "{\"half\":");
    let mut killed = 0;
    for round in 0..40u64 {
        let sub = if round % 2 == 0 {
            "install"
        } else {
            "uninstall"
        };
        let mut child = std::process::Command::new(bin("jkz"))
            .args([sub, "--project"])
            .arg(dir.join("project"))
            .env("HOME", dir.join("home"))
            .env("PATH", format!("{}:/usr/bin:/bin", bin_dir().display()))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(300 * (round % 7)));
        if child.try_wait().unwrap().is_none() {
            let _ = child.kill();
            killed += 1;
        }
        child.wait().unwrap();
        if let Ok(meta) = std::fs::metadata(&settings_path) {
            assert_eq!(
                meta.permissions().mode() & 0o777,
                0o640,
                "round {round} ({sub}): the settings' mode changed"
            );
        }
    }
    // A run to completion cleans up what the killed ones left.
    jkz_cmd(&dir, "install").success();
    jkz_cmd(&dir, "uninstall").success();
    assert!(!stale.exists());
    let temps: Vec<PathBuf> = dir
        .files()
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(temps.is_empty(), "{temps:?} ({killed} runs killed)");
    assert_eq!(
        std::fs::metadata(&settings_path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o640
    );
    assert_eq!(
        dir.read("project/.claude/settings.json"),
        OTHER_TOOL_SETTINGS.as_bytes()
    );
}

#[test]
fn plugin_launcher_finds_the_binaries_or_says_in_one_line_how_to_install_them() {
    let dir = Dir::new();
    let launcher = checkout_file("plugin/scripts/run-hook");
    let run = |path: &str| {
        std::process::Command::new(&launcher)
            .arg("jkz-session-start")
            .env_clear()
            .env("HOME", dir.join("home"))
            .env("PATH", path)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    // Missing everywhere: exit 0, one line saying how to install.
    let out = run("/usr/bin:/bin");
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("./install.sh"), "{err}");
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(shown["systemMessage"]
        .as_str()
        .unwrap()
        .contains("./install.sh"));
    // The tool-output guard runs after every tool call: it says so on
    // stderr only, never as a message shown to the user on each call.
    let guard = std::process::Command::new(&launcher)
        .arg("jkz-post-tool-use")
        .env_clear()
        .env("HOME", dir.join("home"))
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(guard.status.success(), "{guard:?}");
    assert!(guard.stdout.is_empty(), "{guard:?}");
    assert_eq!(String::from_utf8_lossy(&guard.stderr).lines().count(), 1);
    // On PATH, or in the documented fallback ~/.local/bin: it runs the binary
    // (which says its own stdin was empty).
    for path in [
        format!("{}:/usr/bin:/bin", bin_dir().display()),
        "/usr/bin:/bin".into(),
    ] {
        if !path.starts_with('/') || path.starts_with("/usr") {
            std::fs::create_dir_all(dir.join("home/.local/bin")).unwrap();
            let _ = std::os::unix::fs::symlink(
                bin("jkz-session-start"),
                dir.join("home/.local/bin/jkz-session-start"),
            );
        }
        let out = run(&path);
        assert!(out.status.success(), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("jkz-session-start: empty hook input"),
            "{out:?}"
        );
    }
}

/// A HOME where the client installed and enabled the jkz plugin, as
/// `claude plugin install jkz@jkz` leaves it (measured on 2.1.197).
fn home_with_plugin(dir: &Dir) {
    let copy = dir.join("home/.claude/plugins/cache/jkz/jkz/0.1.0");
    for rel in [
        "hooks/hooks.json",
        "commands/save.md",
        "commands/load.md",
        ".claude-plugin/plugin.json",
    ] {
        dir.write(
            copy.join(rel),
            std::fs::read(checkout_file(&format!("plugin/{rel}"))).unwrap(),
        );
    }
    dir.write(
        "home/.claude/settings.json",
        json!({"enabledPlugins": {"jkz@jkz": true}}).to_string(),
    );
    dir.write(
        "home/.claude/plugins/installed_plugins.json",
        json!({"version": 2, "plugins": {"jkz@jkz": [
            {"scope": "user", "installPath": copy.display().to_string(), "version": "0.1.0"}]}})
        .to_string(),
    );
}

#[test]
fn doctor_reports_the_active_path_and_warns_when_jkz_is_registered_twice() {
    // The plugin alone: green, and said to be the active path.
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project")).unwrap();
    home_with_plugin(&dir);
    let run = jkz_cmd(&dir, "install").success();
    assert!(
        run.stdout_str().contains("the jkz plugin (jkz@jkz"),
        "{}",
        run.report()
    );
    assert!(!dir.join("project/.claude").exists(), "{}", run.report());
    assert!(dir.join("project/state").is_dir());
    let run = jkz_cmd(&dir, "doctor").success();
    assert!(
        run.stdout_str().contains("active path: the plugin jkz@jkz"),
        "{}",
        run.report()
    );

    // Plugin and project settings: twice.
    dir.write(
        "project/.claude/settings.json",
        json!({"hooks": {"PreCompact": [{"matcher": "", "hooks": [
            {"type": "command", "command": "jkz-pre-compact"}]}]}})
        .to_string(),
    );
    let run = jkz_cmd(&dir, "doctor").expect_code(1);
    assert!(
        run.stdout_str()
            .contains("registered more than once (the plugin jkz@jkz; ")
            && run.stdout_str().contains("jkz uninstall --project"),
        "{}",
        run.report()
    );

    // Settings alone: the active path is settings; user and project: twice.
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project")).unwrap();
    jkz_cmd(&dir, "install").success();
    let run = jkz_cmd(&dir, "doctor").success();
    assert!(
        run.stdout_str()
            .contains("active path: settings (jkz install)"),
        "{}",
        run.report()
    );
    dir.cmd("jkz")
        .env("HOME", dir.join("home"))
        .args(["install", "--user"])
        .run()
        .success();
    let run = jkz_cmd(&dir, "doctor").expect_code(1);
    assert!(
        run.stdout_str().contains("registered more than once")
            && run.stdout_str().contains("jkz uninstall --user"),
        "{}",
        run.report()
    );
}
