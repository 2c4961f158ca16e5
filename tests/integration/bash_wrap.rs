//! The Bash wrap in Claude Code's `PreToolUse` (`jkz-chat`): a call nobody
//! refused comes back with its command rewritten; the rewritten command,
//! run as the client runs it (`eval` in one bash), prints jkz's view of the
//! output and keeps the command's exit status, its directory and the whole
//! output on disk.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::util::Dir;

const SESSION: &str = "5d1c6c2e-0f43-4a0e-9d8e-2f7d1a0c9b11";

/// A failing `cargo test` of about `bytes` bytes: thousands of passing
/// tests, two failures with their panics, the summary last.
fn failing_cargo_test(bytes: usize) -> String {
    let mut out = String::from("   Compiling jkz-demo v0.1.0\n    Finished `test` profile\n     Running unittests src/lib.rs\n\nrunning 9000 tests\n");
    let mut i = 0;
    while out.len() < bytes / 2 {
        out.push_str(&format!("test module_{i:05}::case ... ok\n"));
        i += 1;
    }
    out.push_str("test parser::nested ... FAILED\n");
    while out.len() < bytes.saturating_sub(900) {
        out.push_str(&format!("test module_{i:05}::case ... ok\n"));
        i += 1;
    }
    out.push_str("test ledger::rounding ... FAILED\n\nfailures:\n\n---- parser::nested stdout ----\n\nthread 'parser::nested' panicked at src/parser.rs:88:9:\nassertion failed: depth < 64\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n---- ledger::rounding stdout ----\n\nthread 'ledger::rounding' panicked at src/ledger.rs:12:5:\nassertion `left == right` failed\n  left: 99\n right: 100\n\nfailures:\n    ledger::rounding\n    parser::nested\n\ntest result: FAILED. 8998 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.02s\n\nerror: test failed, to rerun pass `--lib`\n");
    out
}

const NEEDED: [&str; 7] = [
    "test parser::nested ... FAILED",
    "test ledger::rounding ... FAILED",
    "thread 'parser::nested' panicked at src/parser.rs:88:9:",
    "assertion failed: depth < 64",
    "thread 'ledger::rounding' panicked at src/ledger.rs:12:5:",
    "test result: FAILED. 8998 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.02s",
    "error: test failed, to rerun pass `--lib`",
];

/// A project that opted in, whose settings let every Bash command run
/// without a prompt (the wrap's condition: docs/tool-output-guard.md).
fn project() -> Dir {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    dir.write(
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash"]}}"#,
    );
    dir
}

fn pre_tool_use(dir: &Dir, tool_input: Value, mode: &str) -> String {
    json!({
        "session_id": SESSION,
        "transcript_path": dir.join(format!("home/.claude/projects/p/{SESSION}.jsonl")),
        "cwd": dir.path(),
        "permission_mode": mode,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": tool_input,
        "tool_use_id": "toolu_01AbC",
    })
    .to_string()
}

/// `jkz-chat`'s answer to a Bash call of `command`: the rewritten command,
/// or `None` when it printed nothing.
fn rewritten(dir: &Dir, command: &str, extra: &[(&str, &str)]) -> Option<String> {
    let mut cmd = dir.cmd("jkz-chat");
    for (k, v) in extra {
        cmd = cmd.env(k, v);
    }
    let run = cmd
        .stdin(pre_tool_use(
            dir,
            json!({"command": command, "description": "Run the tests"}),
            "default",
        ))
        .run()
        .success();
    if run.stdout().is_empty() {
        return None;
    }
    let v: Value = serde_json::from_slice(run.stdout())
        .unwrap_or_else(|e| panic!("not JSON ({e})\n{}", run.report()));
    let out = &v["hookSpecificOutput"];
    assert_eq!(out["hookEventName"], "PreToolUse", "{}", run.report());
    // Only the command changes: the permission stays the client's, and
    // every other field is kept (the client replaces the whole input).
    assert!(out.get("permissionDecision").is_none(), "{}", run.report());
    assert_eq!(out["updatedInput"]["description"], "Run the tests");
    Some(out["updatedInput"]["command"].as_str().unwrap().to_string())
}

/// Runs `command` as Claude Code does (`eval CMD && pwd -P >| FILE` in one
/// bash), then prints the directory the shell ended in on stderr.
fn run_as_the_client(dir: &Path, command: &str) -> (String, i32, String) {
    let script = format!(
        "eval {} && pwd -P >&2",
        jkz::tool_output::wrap::rules::quote(command)
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env_remove("JKZ_STATE_DIR")
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ledger(dir: &Dir) -> Vec<Value> {
    std::fs::read_to_string(dir.join("state/tool-output.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn script(dir: &Dir, name: &str, output: &str, code: i32) {
    dir.write(format!("{name}.out"), output);
    let path = dir.write(
        name,
        format!("#!/bin/sh\ncat \"$(dirname \"$0\")/{name}.out\"\nexit {code}\n"),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_failing_400k_cargo_test_reaches_the_model_reduced_with_its_failures_and_status() {
    let dir = project();
    let raw = failing_cargo_test(400_000);
    script(&dir, "cargo-test", &raw, 101);
    let command = rewritten(&dir, "./cargo-test 2>&1", &[]).expect("a rewrite");
    let (view, code, _) = run_as_the_client(dir.path(), &command);
    assert_eq!(code, 101, "the command's own status");
    // Within what the client shows whole of a failing command (the
    // failure budget, 10,000, under its 11,024).
    assert!(view.chars().count() <= 10_000, "{} chars", view.len());
    for needed in NEEDED {
        assert!(view.contains(needed), "{needed} missing:\n{view}");
    }
    assert!(view.contains("passing tests collapsed"), "{view}");
    // The whole output is kept, named at the end, byte for byte.
    let at = view.find("full output: ").expect("the kept file named") + 13;
    let path = view[at..].split(' ').next().unwrap();
    assert!(
        Path::new(path).starts_with(dir.join("state/context-offload").canonicalize().unwrap())
            || Path::new(path).starts_with(dir.join("state/context-offload")),
        "{path}"
    );
    assert_eq!(std::fs::read(path).unwrap(), raw.as_bytes());
    let l = ledger(&dir);
    assert_eq!(l.len(), 1, "{l:?}");
    assert_eq!(l[0]["via"], "wrap");
    assert_eq!(l[0]["exit"], 101);
    assert_eq!(l[0]["family"], "tests");
    assert_eq!(l[0]["full"], raw.len());
    // What the client shows of it, as measured: its first and last 5,000
    // characters around a 40-character marker.
    assert_eq!(l[0]["client"], 10_040);
    assert_eq!(l[0]["jkz"], view.len() + "Exit code 101\n".len());
    assert_eq!(l[0]["session"], SESSION);

    // The same output again in this session: one line pointing at the first.
    let again = rewritten(&dir, "./cargo-test 2>&1", &[]).unwrap();
    let (view2, code2, _) = run_as_the_client(dir.path(), &again);
    assert_eq!(code2, 101);
    assert_eq!(view2.lines().count(), 1, "{view2}");
    assert!(
        view2.contains("the same output as the call at") && view2.contains("./cargo-test 2>&1"),
        "{view2}"
    );
    assert!(ledger(&dir)[1]["repeat"] == true);
    // Only kept files stay in the offload directory: no run file is left.
    let left: Vec<_> = std::fs::read_dir(dir.join("state/context-offload"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("run-"))
        .collect();
    assert!(left.len() <= 2, "{left:?}");
}

#[test]
fn a_short_output_stands_and_a_cd_stays() {
    let dir = project();
    let command = rewritten(&dir, "cd sub && echo short; echo err >&2", &[]).unwrap();
    let (out, code, stderr) = run_as_the_client(dir.path(), &command);
    assert_eq!(code, 0);
    assert_eq!(out, "short\nerr\n");
    assert!(
        stderr.trim_end().ends_with("/sub"),
        "the cd stayed: {stderr}"
    );
    let runs: Vec<_> = std::fs::read_dir(dir.join("state/context-offload"))
        .unwrap()
        .collect();
    assert!(
        runs.is_empty(),
        "an output that stands leaves no file: {runs:?}"
    );
}

#[test]
fn what_the_wrap_leaves_alone() {
    let dir = project();
    for command in [
        "JKZ_RAW=1 ./cargo-test",
        "vim notes.txt",
        "./server &",
        "jkz stats",
    ] {
        assert_eq!(rewritten(&dir, command, &[]), None, "{command}");
    }
    assert_eq!(rewritten(&dir, "ls", &[("JKZ_BASH_WRAP", "0")]), None);
    // Plan mode, and a call the client runs in the background.
    let run = dir
        .cmd("jkz-chat")
        .stdin(pre_tool_use(&dir, json!({"command": "ls"}), "plan"))
        .run()
        .success();
    assert!(run.stdout().is_empty(), "{}", run.report());
    let run = dir
        .cmd("jkz-chat")
        .stdin(pre_tool_use(
            &dir,
            json!({"command": "ls", "run_in_background": true}),
            "default",
        ))
        .run()
        .success();
    assert!(run.stdout().is_empty(), "{}", run.report());
    // Where the user's permissions would prompt for some Bash commands,
    // the rewrite (which the client checks word for word) could be asked
    // for or refused where the original would run: left alone.
    let narrow = project();
    narrow.write(
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(cargo test:*)"]}}"#,
    );
    assert_eq!(rewritten(&narrow, "cargo test", &[]), None);
    // A project that did not opt in: no rewrite, nothing created.
    let bare = Dir::new();
    bare.write(
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash"]}}"#,
    );
    assert_eq!(rewritten(&bare, "ls", &[]), None);
    assert_eq!(
        bare.files(),
        vec![std::path::PathBuf::from(".claude/settings.json")]
    );
}
