//! `jkz install | uninstall | doctor | gc` against real project directories.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use crate::util::{bin, Dir, Run};

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
    assert_eq!(s["hooks"]["PostToolUse"], original["hooks"]["PostToolUse"]);
    assert_eq!(
        s["hooks"]["PreCompact"][0],
        original["hooks"]["PreCompact"][0]
    );
    assert_eq!(
        s["hooks"]["SessionStart"][0],
        original["hooks"]["SessionStart"][0]
    );
    // jkz's hooks point at the installed binaries.
    let pre = bin_dir().join("jkz-pre-compact").display().to_string();
    let start = bin_dir().join("jkz-session-start").display().to_string();
    assert_eq!(
        commands_of(&s, "PreCompact", ""),
        ["other-tool pre-compact", &pre]
    );
    assert_eq!(
        commands_of(&s, "SessionStart", "compact"),
        ["other-tool start", &start]
    );
    assert_eq!(commands_of(&s, "SessionStart", "resume"), [start]);
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
    assert!(
        first.stdout_str().contains("registered hooks"),
        "{}",
        first.report()
    );

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
    // What was replaced is kept beside it.
    let backup: Value =
        serde_json::from_slice(&dir.read("project/.claude/settings.json.jkz-backup")).unwrap();
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
        "FAIL hook PreCompact (matcher \"\") not registered; run jkz install",
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
    let t = SystemTime::now() - age;
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_modified(t).set_accessed(t))
        .unwrap();
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
