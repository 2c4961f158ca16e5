//! `/jkz:save` and `/jkz:load` on the real client: in session A, `/jkz:save`
//! makes the model run `jkz-session save` through a Bash tool call (allowed
//! by the command's `allowed-tools` alone, no `--allowedTools`); a new
//! session B runs `/jkz:load`, and the decisions reach the model in B's
//! request.

use std::sync::Arc;

use serde_json::{json, Value};

use super::adapter::ClaudeCode;
use super::stub_model::{Request, StubModel, Turn};
use super::RealClient;

const DECISION: &str = "QUINCE-DECISION: keep money in integer cents, never floats";
const GOTCHA: &str = "MEDLAR-GOTCHA: the fixture clock is UTC, the CI clock is not";
/// The first words of the shipped save.md: the model's cue to save.
const SAVE_PROMPT: &str = "Save a jkz session snapshot of this conversation";

/// True when the request's last message carries a tool result.
fn answers_a_tool_call(r: &Request) -> bool {
    r.body["messages"]
        .as_array()
        .and_then(|ms| ms.last())
        .and_then(|m| m["content"].as_array())
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
}

#[test]
fn a_decision_saved_in_one_session_reaches_the_model_in_the_next() {
    let responder = Arc::new(|r: &Request| {
        if answers_a_tool_call(r) {
            Turn::Text("Saved.".into())
        } else if r.last_user_text().contains(SAVE_PROMPT) {
            let notes = format!("## Decisions\n- {DECISION}\n\n## Gotchas\n- {GOTCHA}\n");
            Turn::Call {
                name: "Bash".into(),
                input: json!({
                    "command": format!("jkz-session save <<'JKZ_SESSION_EOF'\n{notes}JKZ_SESSION_EOF"),
                    "description": "Save the session notes"
                }),
            }
        } else {
            Turn::Text("Understood.".into())
        }
    });
    let server = StubModel::start(responder);
    let project = ClaudeCode::project(&server);
    // The real installer sets the project up: hooks, commands, state/.
    project.install_jkz();

    // Session A: /jkz:save; the model runs jkz-session save through Bash.
    let a = project.run("/jkz:save", &[]);
    let session_a = a.session_id();
    let saved: Vec<Value> = std::fs::read_dir(project.path().join("state/session-snapshots"))
        .unwrap_or_else(|e| panic!("no snapshot directory ({e})\n{}", a.report()))
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}\n{}", a.report());
    assert!(saved[0].to_string().contains(DECISION), "{saved:?}");
    // The Bash tool runs with the client's session id in its environment.
    assert_eq!(saved[0]["session_id"], session_a.as_str(), "{saved:?}");

    // Session B, a new chat: /jkz:load injects the snapshot into its request.
    let before = server.model_requests().len();
    let b = project.run("/jkz:load", &[]);
    let session_b = b.session_id();
    assert_ne!(session_a, session_b);
    let requests = server.model_requests();
    let loaded = requests[before..]
        .iter()
        .find(|r| r.all_text().contains(DECISION))
        .unwrap_or_else(|| {
            let texts: Vec<String> = requests[before..].iter().map(Request::all_text).collect();
            panic!(
                "no request of session B carries the decision:\n{texts:#?}\n{}",
                b.report()
            )
        });
    let text = loaded.all_text();
    assert!(text.contains(GOTCHA), "{text}");
    assert!(
        text.contains(&format!("jkz session snapshot: {session_a}")),
        "{text}"
    );

    // Arguments reach jkz-session: a named session that does not exist.
    let before = server.model_requests().len();
    let c = project.run("/jkz:load --session ghost-session", &[]);
    let _ = c.session_id();
    let texts: Vec<String> = server.model_requests()[before..]
        .iter()
        .map(Request::all_text)
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("No snapshot for session ghost-session")),
        "{texts:#?}\n{}",
        c.report()
    );
    assert!(!texts.iter().any(|t| t.contains(DECISION)), "{texts:#?}");
}
