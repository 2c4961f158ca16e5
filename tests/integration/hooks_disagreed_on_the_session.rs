//! Regression: the two compaction hooks resolved the session differently.
//! With no `session_id` in the event, `jkz-pre-compact` took the session from
//! `CLAUDE_CODE_SESSION_ID` and `jkz-session-start` did not, so after a
//! compaction the session's own snapshot was not the one re-injected.

use serde_json::{json, Value};

use crate::util::Dir;

/// A hook event with no `session_id`.
fn event_without_session(dir: &Dir, name: &str, extra: Value) -> Vec<u8> {
    let mut e = json!({"cwd": dir.path(), "hook_event_name": name});
    for (k, v) in extra.as_object().unwrap() {
        e[k] = v.clone();
    }
    serde_json::to_vec(&e).unwrap()
}

#[test]
fn both_hooks_take_the_session_from_the_environment() {
    let dir = Dir::new();
    dir.write(
        "state/pipeline/3.json",
        json!({"3": {"current_phase": "building"}}).to_string(),
    );
    // Another session's snapshot, newer than this one's.
    dir.cmd("jkz-pre-compact")
        .env("CLAUDE_CODE_SESSION_ID", "mine")
        .stdin(event_without_session(
            &dir,
            "PreCompact",
            json!({"trigger": "auto"}),
        ))
        .run()
        .success();
    std::thread::sleep(std::time::Duration::from_millis(5));
    dir.cmd("jkz-pre-compact")
        .env("CLAUDE_CODE_SESSION_ID", "other")
        .stdin(event_without_session(
            &dir,
            "PreCompact",
            json!({"trigger": "auto"}),
        ))
        .run()
        .success();
    let record: Value =
        serde_json::from_slice(&dir.read("state/session-snapshots/mine.json")).unwrap();
    assert_eq!(record["compaction_count"], 1, "{record}");

    let run = dir
        .cmd("jkz-session-start")
        .env("CLAUDE_CODE_SESSION_ID", "mine")
        .stdin(event_without_session(
            &dir,
            "SessionStart",
            json!({"source": "compact"}),
        ))
        .run()
        .success();
    let v: Value = serde_json::from_str(&run.stdout_str()).unwrap();
    let text = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", run.report()));
    assert!(text.contains("this session's snapshot"), "{text}");
}
