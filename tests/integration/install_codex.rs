//! `jkz install --client codex` / `jkz uninstall --client codex` against
//! real project directories: `.codex/hooks.json` and `.codex/config.toml`
//! come back byte for byte, the user's entries are never touched, and a
//! malformed file is refused with where it is broken.

use std::path::PathBuf;

use serde_json::Value;

use crate::util::{bin, Dir, Run};

/// A user's hooks.json, in their own formatting (4-space indents, no final
/// newline), with a hook on an event jkz uses.
const USER_HOOKS: &str = r#"{
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard", "timeout": 5}]}]
    }
}"#;

/// A user's config.toml with comments, odd spacing and tables.
const USER_CONFIG: &str = "# my Codex settings\nmodel   = \"o3\"   # the big one\n\n[profiles.fast]\nmodel = 'o4-mini'\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [ \"--port\",  \"9\" ]\n";

fn jkz(dir: &Dir, sub: &str) -> Run {
    let bins = bin("jkz").parent().unwrap().to_path_buf();
    dir.cmd("jkz")
        .env("HOME", dir.join("home"))
        .env("PATH", format!("{}:/usr/bin:/bin", bins.display()))
        .args([
            sub,
            "--client",
            "codex",
            "--project",
            &dir.join("project").display().to_string(),
        ])
        .run()
}

fn project() -> Dir {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project/.git")).unwrap();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    dir
}

fn tree(dir: &Dir) -> Vec<(PathBuf, Vec<u8>)> {
    dir.files()
        .into_iter()
        .map(|p| {
            let b = dir.read(&p);
            (p, b)
        })
        .collect()
}

fn hooks(dir: &Dir) -> Value {
    serde_json::from_slice(&dir.read("project/.codex/hooks.json")).unwrap()
}

fn commands(hooks: &Value, event: &str) -> Vec<String> {
    hooks["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().unwrap().iter())
        .map(|h| h["command"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn codex_install_uninstall_round_trips_a_fresh_project() {
    let dir = project();
    let before = tree(&dir);
    let run = jkz(&dir, "install").success();
    let h = hooks(&dir);
    assert!(commands(&h, "PreCompact")[0].ends_with("jkz-pre-compact"));
    assert!(commands(&h, "PreToolUse")[0].ends_with("jkz-chat"));
    assert_eq!(h["hooks"]["PreToolUse"][0]["matcher"], "Bash|apply_patch");
    let post = commands(&h, "PostToolUse");
    assert!(
        !post.is_empty() && post.iter().all(|c| c.ends_with("jkz-chat")),
        "no output guard for Codex: {h}"
    );
    // A file projects commit: the prompt is named relative to .codex/, as
    // Codex reads it, never by a path of this machine.
    let config = String::from_utf8(dir.read("project/.codex/config.toml")).unwrap();
    let prompt = dir.join("project/state/codex-compact-prompt.md");
    assert_eq!(
        config,
        "experimental_compact_prompt_file = \"../state/codex-compact-prompt.md\"\n",
        "{}",
        run.report()
    );
    assert!(!config.contains(&dir.path().display().to_string()));
    assert!(std::fs::read_to_string(&prompt)
        .unwrap()
        .contains("handoff summary"));
    // Installed twice: nothing changes.
    let installed = tree(&dir);
    let again = jkz(&dir, "install").success();
    assert!(
        again.stdout_str().contains("nothing changed"),
        "{}",
        again.report()
    );
    assert_eq!(tree(&dir), installed);

    jkz(&dir, "uninstall").success();
    assert_eq!(tree(&dir), before);
}

#[test]
fn codex_install_uninstall_gives_the_users_files_back_byte_for_byte() {
    let dir = project();
    dir.write("project/.codex/hooks.json", USER_HOOKS);
    dir.write("project/.codex/config.toml", USER_CONFIG);
    dir.write("project/.gitignore", "target\n");
    let before = tree(&dir);
    jkz(&dir, "install").success();
    let h = hooks(&dir);
    let pre_tool = commands(&h, "PreToolUse");
    assert_eq!(pre_tool[0], "my-guard", "the user's hook stays first: {h}");
    assert!(pre_tool.iter().any(|c| c.ends_with("jkz-chat")));
    let config = String::from_utf8(dir.read("project/.codex/config.toml")).unwrap();
    assert!(
        config.contains("model   = \"o3\"   # the big one"),
        "{config}"
    );
    assert!(config.contains("[mcp_servers.docs]"), "{config}");
    jkz(&dir, "uninstall").success();
    let after = tree(&dir);
    assert_eq!(
        after.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        before.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for ((path, want), (_, got)) in before.iter().zip(&after) {
        assert_eq!(
            String::from_utf8_lossy(got),
            String::from_utf8_lossy(want),
            "{}",
            path.display()
        );
    }
}

#[test]
fn codex_install_keeps_a_users_own_compaction_prompt() {
    let dir = project();
    let mine = "experimental_compact_prompt_file = \"/home/me/prompt.md\"\n";
    dir.write("project/.codex/config.toml", mine);
    let run = jkz(&dir, "install").success();
    assert!(run.stdout_str().contains("it is yours"), "{}", run.report());
    assert_eq!(dir.read("project/.codex/config.toml"), mine.as_bytes());
    jkz(&dir, "uninstall").success();
    assert_eq!(dir.read("project/.codex/config.toml"), mine.as_bytes());
}

#[test]
fn codex_install_refuses_malformed_files_and_writes_nothing() {
    for (file, text, where_) in [
        (
            "hooks.json",
            "{\"hooks\": {\n  \"PreToolUse\": [,]\n}}",
            "line 2",
        ),
        (
            "hooks.json",
            "{\"hooks\": []}",
            "\"hooks\" is not an object",
        ),
        (
            "config.toml",
            "model = \"o3\"\n[profiles\nx = 1\n",
            "line 2",
        ),
    ] {
        let dir = project();
        dir.write(format!("project/.codex/{file}"), text);
        let before = tree(&dir);
        let run = jkz(&dir, "install").expect_code(1);
        let err = run.stderr_str();
        assert!(
            err.contains(file) && err.contains(where_) && err.contains("nothing was changed"),
            "{file}: {}",
            run.report()
        );
        assert_eq!(tree(&dir), before, "{file}: something was written");
        jkz(&dir, "uninstall").expect_code(1);
        assert_eq!(tree(&dir), before);
    }
}

#[test]
fn codex_install_refuses_user_scope() {
    let dir = project();
    let run = dir
        .cmd("jkz")
        .env("HOME", dir.join("home"))
        .args(["install", "--client", "codex", "--user"])
        .run()
        .expect_code(2);
    assert!(run.stderr_str().contains("--project"), "{}", run.report());
}

#[test]
fn codex_doctor_checks_the_hooks_and_the_prompt() {
    let dir = project();
    let before = jkz(&dir, "doctor").expect_code(1);
    assert!(
        before.stdout_str().contains("not registered"),
        "{}",
        before.report()
    );
    jkz(&dir, "install").success();
    let after = jkz(&dir, "doctor").success();
    let out = after.stdout_str();
    assert!(!out.contains("FAIL"), "{}", after.report());
    assert!(
        out.contains("Codex CLI hook PreToolUse (Bash|apply_patch) → jkz-chat"),
        "{out}"
    );
    assert!(out.contains("names jkz's compaction prompt"), "{out}");
    // What every client's doctor checks: the binaries and the state directory.
    for check in [
        "ok   binaries on PATH",
        "is private (mode 700)",
        "state/ is git-ignored",
        "pipeline files valid",
    ] {
        assert!(out.contains(check), "{check}\n{out}");
    }
}
