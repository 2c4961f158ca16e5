//! The hooks on Codex CLI's event shapes (measured on Codex 0.169.0), and
//! on bad ones: each answers in Codex's contract, exits 0, and says what
//! was wrong in one line on stderr.

use serde_json::{json, Value};

use crate::util::{write_pipeline, Dir, Run};

const ROLLOUT: &str = "/h/.codex/sessions/2026/11/25/rollout-2026-11-25T15-43-01-01a2135f.jsonl";

fn event(dir: &Dir, name: &str, extra: Value) -> Value {
    let mut e = json!({
        "session_id": "01a2135f-e513-7150-a55d-424e8a6d7542",
        "turn_id": "01a2135f-e52e-7620-b12a-d78e194db591",
        "transcript_path": ROLLOUT,
        "cwd": dir.path(),
        "hook_event_name": name,
        "model": "gpt-5.5",
    });
    for (k, v) in extra.as_object().unwrap() {
        e[k] = v.clone();
    }
    e
}

fn hook(dir: &Dir, program: &str, input: impl AsRef<[u8]>) -> Run {
    dir.cmd(program).stdin(input).run().success()
}

fn with_state() -> Dir {
    let dir = Dir::new();
    write_pipeline(
        &dir.join("state"),
        42,
        &json!({"42": {"current_phase": "fixing", "failure_context": "FIG-FAILURE"}}),
    );
    dir
}

#[test]
fn codex_pre_compact_answers_only_a_system_message_and_refreshes_the_prompt() {
    let dir = with_state();
    let run = hook(
        &dir,
        "jkz-pre-compact",
        event(&dir, "PreCompact", json!({"trigger": "auto"})).to_string(),
    );
    let answer: Value = serde_json::from_slice(run.stdout())
        .unwrap_or_else(|_| panic!("Codex needs JSON on stdout\n{}", run.report()));
    let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["systemMessage"], "{answer}");
    assert!(answer["systemMessage"]
        .as_str()
        .unwrap()
        .contains("pre-compact-"));
    let prompt = String::from_utf8(dir.read("state/codex-compact-prompt.md")).unwrap();
    assert!(prompt.contains("FIG-FAILURE"), "{prompt}");
    assert!(run.stderr_str().is_empty(), "{}", run.report());

    // No state directory: still JSON, nothing written.
    let bare = Dir::new();
    let run = hook(
        &bare,
        "jkz-pre-compact",
        event(&bare, "PreCompact", json!({"trigger": "manual"})).to_string(),
    );
    let answer: Value = serde_json::from_slice(run.stdout()).unwrap();
    assert!(answer["systemMessage"]
        .as_str()
        .unwrap()
        .contains("no state directory"));
    assert!(bare.files().is_empty(), "{:?}", bare.files());
}

#[test]
fn codex_session_start_after_compaction_reinjects_as_additional_context() {
    let dir = with_state();
    // Codex's SessionStart carries no turn_id: the rollout transcript says Codex.
    let mut start = event(&dir, "SessionStart", json!({"source": "compact"}));
    start.as_object_mut().unwrap().remove("turn_id");
    let run = hook(&dir, "jkz-session-start", start.to_string());
    let answer: Value = serde_json::from_slice(run.stdout()).unwrap();
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.contains("FIG-FAILURE"), "{context}");
}

#[test]
fn codex_post_tool_use_prints_nothing_codex_cannot_use() {
    let dir = with_state();
    let big = "x".repeat(600_000);
    let run = hook(
        &dir,
        "jkz-post-tool-use",
        event(
            &dir,
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "cat big"}, "tool_response": big, "tool_use_id": "call_0"}),
        )
        .to_string(),
    );
    assert!(run.stdout().is_empty(), "{}", run.report());
}

#[test]
fn codex_bad_events_exit_zero_with_one_line() {
    let dir = with_state();
    // Fields of the wrong type: the compaction hooks still answer.
    let wrong = json!({"session_id": 7, "turn_id": 1, "hook_event_name": "PreCompact",
                       "cwd": dir.path(), "trigger": ["auto"]});
    let run = hook(&dir, "jkz-pre-compact", wrong.to_string());
    let answer: Value = serde_json::from_slice(run.stdout()).unwrap();
    assert!(answer.get("systemMessage").is_some(), "{}", run.report());
    // An event jkz-chat does not handle.
    let unknown = event(&dir, "SubagentStop", json!({}));
    hook(&dir, "jkz-chat", unknown.to_string()).one_line("jkz-chat", "SubagentStop");
    // A missing session id.
    let mut anonymous = event(
        &dir,
        "PreToolUse",
        json!({"tool_name": "apply_patch", "tool_input": {"command": "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"}}),
    );
    anonymous.as_object_mut().unwrap().remove("session_id");
    let run = hook(&dir, "jkz-chat", anonymous.to_string());
    run.one_line("jkz-chat", "without session_id");
    assert!(run.stdout().is_empty());
    // An apply_patch whose patch is not text: nothing to refuse, no output.
    let odd = event(
        &dir,
        "PreToolUse",
        json!({"tool_name": "apply_patch", "tool_input": {"command": 42}}),
    );
    let run = hook(&dir, "jkz-chat", odd.to_string());
    assert!(
        run.stdout().is_empty() && run.stderr_str().is_empty(),
        "{}",
        run.report()
    );
    // Not JSON at all.
    hook(&dir, "jkz-pre-compact", "turn_id: 1").one_line("jkz-pre-compact", "not JSON");
}

/// The output guard: a Codex `Bash` call nobody refuses is answered with
/// the same `tool_input`, its command running the original through
/// `jkz-truncate --run`; running that command gives the original's output
/// and exit status. An interactive command, and any with
/// `JKZ_CODEX_GUARD=0`, is left alone (no output).
#[test]
fn codex_bash_calls_are_rewritten_through_the_guard_unless_left_alone() {
    let dir = with_state();
    let original = "printf 'it'\"'\"'s %s\\n' \"$HOME\" >&2; exit 4";
    let call = |command: &str| {
        event(
            &dir,
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": command, "workdir": "sub"}}),
        )
        .to_string()
    };
    let run = hook(&dir, "jkz-chat", call(original));
    let answer: Value = serde_json::from_slice(run.stdout())
        .unwrap_or_else(|_| panic!("Codex needs JSON on stdout\n{}", run.report()));
    let out = &answer["hookSpecificOutput"];
    assert_eq!(out["hookEventName"], "PreToolUse");
    assert_eq!(out["permissionDecision"], "allow");
    assert_eq!(out["updatedInput"]["workdir"], "sub");
    let rewritten = out["updatedInput"]["command"].as_str().unwrap();
    assert!(
        rewritten.contains("jkz-truncate") && rewritten.contains("--run"),
        "{rewritten}"
    );
    let ran = std::process::Command::new("/bin/sh")
        .args(["-c", rewritten])
        .env("HOME", "/nowhere")
        .env("SHELL", "/bin/sh")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(4), "{ran:?}");
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "it's /nowhere\n");
    // One ledger line, with the exit code known once the command ended.
    let ledger = std::fs::read_to_string(dir.join("state/tool-output.jsonl")).unwrap();
    let line: Value = serde_json::from_str(ledger.lines().last().unwrap()).unwrap();
    assert_eq!(line["via"], "wrap");
    assert_eq!(line["exit"], 4);
    assert_eq!(
        line["jkz"], line["client"],
        "a short output stands: nothing saved"
    );

    let interactive = hook(&dir, "jkz-chat", call("vim notes.txt"));
    assert!(interactive.stdout().is_empty(), "{}", interactive.report());
    let off = dir
        .cmd("jkz-chat")
        .env("JKZ_CODEX_GUARD", "0")
        .stdin(call("ls"))
        .run()
        .success();
    assert!(off.stdout().is_empty(), "{}", off.report());
}
