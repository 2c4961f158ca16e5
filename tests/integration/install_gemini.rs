//! `jkz install --client gemini` / `jkz uninstall --client gemini` against
//! real project directories: `.gemini/settings.json` merged, never clobbered,
//! and given back byte for byte.

use std::path::PathBuf;

use serde_json::Value;

use crate::util::{bin, Dir, Run};

/// Settings the user wrote, in their own formatting (4-space indents, no
/// final newline), with a hook on an event jkz uses and keys jkz does not.
const USER_SETTINGS: &str = r#"{
    "model": {"name": "gemini-2.5-pro", "compressionThreshold": 0.6},
    "hooks": {
        "BeforeTool": [{"matcher": "read_file", "hooks": [{"type": "command", "command": "audit-read", "timeout": 500}]}],
        "Notification": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send jkz"}]}]
    },
    "ui": {"theme": "GitHub"}
}"#;

fn bin_dir() -> PathBuf {
    bin("jkz").parent().unwrap().to_path_buf()
}

fn jkz(dir: &Dir, sub: &str) -> Run {
    dir.cmd("jkz")
        .env("HOME", dir.join("home"))
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir().display()))
        .args([
            sub,
            "--client",
            "gemini",
            "--project",
            &dir.join("project").display().to_string(),
        ])
        .run()
}

fn tree(dir: &Dir) -> Vec<(PathBuf, Vec<u8>)> {
    dir.files()
        .into_iter()
        .map(|p| {
            let bytes = dir.read(&p);
            (p, bytes)
        })
        .collect()
}

fn settings(dir: &Dir) -> Value {
    serde_json::from_slice(&dir.read("project/.gemini/settings.json")).unwrap()
}

fn jkz_hooks(settings: &Value) -> Vec<(String, String, String, u64)> {
    let mut out = Vec::new();
    for (event, groups) in settings["hooks"].as_object().unwrap() {
        for g in groups.as_array().unwrap() {
            for h in g["hooks"].as_array().unwrap() {
                let command = h["command"].as_str().unwrap();
                if command.contains("jkz-") {
                    out.push((
                        event.clone(),
                        g["matcher"].as_str().unwrap_or("").to_string(),
                        command.rsplit('/').next().unwrap().to_string(),
                        h["timeout"].as_u64().unwrap_or(0),
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn gemini_install_into_a_fresh_project_round_trips() {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project/.git")).unwrap();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let before = tree(&dir);
    let run = jkz(&dir, "install").success();
    let hooks = jkz_hooks(&settings(&dir));
    for (event, matcher, program, timeout) in [
        ("PreCompress", "", "jkz-pre-compact", 30_000),
        ("BeforeModel", "", "jkz-session-start", 30_000),
        ("SessionStart", "resume", "jkz-session-start", 30_000),
        (
            "AfterTool",
            "^run_shell_command$",
            "jkz-post-tool-use",
            30_000,
        ),
        ("SessionStart", "", "jkz-chat", 10_000),
        ("BeforeAgent", "", "jkz-chat", 10_000),
        (
            "BeforeTool",
            "^(run_shell_command|write_file|replace)$",
            "jkz-chat",
            10_000,
        ),
        ("AfterTool", "", "jkz-chat", 10_000),
        ("SessionEnd", "", "jkz-chat", 10_000),
    ] {
        let want = (
            event.to_string(),
            matcher.to_string(),
            program.to_string(),
            timeout,
        );
        assert!(
            hooks.contains(&want),
            "{want:?} missing: {hooks:?}\n{}",
            run.report()
        );
    }
    assert_eq!(hooks.len(), 9, "{hooks:?}");
    assert!(dir.join("project/state").is_dir(), "{}", run.report());
    let doctor = jkz(&dir, "doctor");
    let text = doctor.stdout_str();
    assert_eq!(
        text.matches("ok   Gemini CLI hook").count(),
        9,
        "{}",
        doctor.report()
    );
    assert!(!text.contains("/jkz:save"), "{}", doctor.report());
    let again = jkz(&dir, "install").success();
    assert!(
        again.stdout_str().contains("nothing changed"),
        "{}",
        again.report()
    );
    jkz(&dir, "uninstall").success();
    assert_eq!(tree(&dir), before, "uninstall gives the project back");
    assert!(!dir.join("project/.gemini").exists());
}

#[test]
fn gemini_install_keeps_the_users_settings_and_gives_back_their_bytes() {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project/.git")).unwrap();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    dir.write("project/.gemini/settings.json", USER_SETTINGS);
    dir.write("project/.gitignore", "target/\n");
    let before = tree(&dir);
    jkz(&dir, "install").success();
    let merged = settings(&dir);
    let user: Value = serde_json::from_str(USER_SETTINGS).unwrap();
    assert_eq!(merged["model"], user["model"]);
    assert_eq!(merged["ui"], user["ui"]);
    assert_eq!(
        merged["hooks"]["Notification"],
        user["hooks"]["Notification"]
    );
    let before_tool = merged["hooks"]["BeforeTool"].as_array().unwrap();
    assert_eq!(
        before_tool[0], user["hooks"]["BeforeTool"][0],
        "the user's hook first, untouched"
    );
    assert_eq!(before_tool.len(), 2);
    // Reinstalled: nothing moves.
    let bytes = dir.read("project/.gemini/settings.json");
    jkz(&dir, "install").success();
    assert_eq!(
        dir.read("project/.gemini/settings.json"),
        bytes,
        "idempotent"
    );
    jkz(&dir, "uninstall").success();
    assert_eq!(tree(&dir), before, "byte for byte");
    // Nothing of jkz's left: a second uninstall changes nothing.
    let run = jkz(&dir, "uninstall").success();
    assert!(
        run.stdout_str().contains("nothing changed"),
        "{}",
        run.report()
    );
}

#[test]
fn gemini_uninstall_after_the_user_edited_keeps_their_edit() {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project/.git")).unwrap();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    dir.write("project/.gemini/settings.json", USER_SETTINGS);
    jkz(&dir, "install").success();
    let mut edited = settings(&dir);
    edited["ui"]["theme"] = "Dracula".into();
    dir.write(
        "project/.gemini/settings.json",
        serde_json::to_vec_pretty(&edited).unwrap(),
    );
    jkz(&dir, "uninstall").success();
    let left = settings(&dir);
    assert_eq!(left["ui"]["theme"], "Dracula");
    assert!(jkz_hooks(&left).is_empty(), "{left}");
    assert_eq!(
        left["hooks"]["BeforeTool"].as_array().unwrap().len(),
        1,
        "{left}"
    );
}

#[test]
fn gemini_install_refuses_malformed_settings_and_says_where() {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project/.git")).unwrap();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let broken =
        "{\n  \"model\": {\"name\": \"x\"},\n  \"hooks\": {\n    \"BeforeTool\": [\n  }\n}\n";
    dir.write("project/.gemini/settings.json", broken);
    let before = tree(&dir);
    for sub in ["install", "uninstall"] {
        let run = jkz(&dir, sub).expect_code(1);
        let err = run.stderr_str();
        assert!(
            err.contains(".gemini/settings.json") && err.contains("line 5"),
            "names the file and the line: {}",
            run.report()
        );
        assert_eq!(tree(&dir), before, "nothing written by {sub}");
    }
    dir.write("project/.gemini/settings.json", r#"{"hooks": []}"#);
    let run = jkz(&dir, "install").expect_code(1);
    assert!(
        run.stderr_str().contains("\"hooks\" is not an object"),
        "{}",
        run.report()
    );
    assert!(!dir.join("project/state").exists(), "{}", run.report());
}
