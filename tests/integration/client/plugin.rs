//! jkz as a Claude Code plugin on the real client: in a fresh `HOME`, the
//! checkout is added as a marketplace and the `jkz` plugin installed with the
//! client's own commands; with no `jkz install` in the project (no hooks in
//! its settings, no commands of its own), `/compact` runs the plugin's
//! PreCompact and SessionStart hooks, and the plugin's `/jkz:save` and
//! `/jkz:load` carry a decision from one chat to the next.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use super::adapter::ClaudeCode;
use super::stub_model::{Request, StubModel, Turn};
use super::RealClient;

const PLAN: &str = "DAMSON-PLAN: split the invoice renderer from the mailer";
const DECISION: &str = "SLOE-DECISION: keep the renderer pure, no I/O";
const FAILURE: &str = "ELDER-FAILURE: test_invoice_total expected 3 lines, got 2";
/// The first words of the shipped save.md: the model's cue to save.
const SAVE_PROMPT: &str = "Save a jkz session snapshot of this conversation";
const SAVED_DECISION: &str = "ROWAN-DECISION: invoices are rendered as UTF-8 only";

fn answers_a_tool_call(r: &Request) -> bool {
    r.body["messages"]
        .as_array()
        .and_then(|ms| ms.last())
        .and_then(|m| m["content"].as_array())
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
}

fn succeeded(run: &super::ClientRun) {
    assert!(
        run.finished.status.is_some_and(|s| s.success()),
        "{}",
        run.report()
    );
}

#[test]
fn the_plugin_alone_keeps_the_state_through_compact_and_runs_save_and_load() {
    let responder = Arc::new(|r: &Request| {
        if ClaudeCode::is_summarizing(r) {
            Turn::Text("<summary>We chatted about invoices.</summary>".into())
        } else if answers_a_tool_call(r) {
            Turn::Text("Saved.".into())
        } else if r.last_user_text().contains(SAVE_PROMPT) {
            let notes = format!("## Decisions\n- {SAVED_DECISION}\n");
            Turn::Call {
                name: "Bash".into(),
                input: json!({
                    "command": format!("jkz-session save <<'JKZ_SESSION_EOF'\n{notes}JKZ_SESSION_EOF"),
                    "description": "Save the session notes"
                }),
            }
        } else {
            Turn::Text("Noted.".into())
        }
    });
    let server = StubModel::start(responder);
    let project = ClaudeCode::project(&server);

    // The checkout is the marketplace; the client installs the plugin.
    let checkout = env!("CARGO_MANIFEST_DIR");
    let add = project.cli(&["plugin", "marketplace", "add", checkout]);
    succeeded(&add);
    let install = project.cli(&["plugin", "install", "jkz@jkz"]);
    succeeded(&install);
    let user_settings: Value = serde_json::from_slice(
        &std::fs::read(project.home().join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        user_settings["enabledPlugins"]["jkz@jkz"],
        true,
        "{user_settings}\n{}",
        install.report()
    );

    // The project opted in to a state directory and has a pipeline; it has
    // no .claude/ at all: everything jkz does here comes from the plugin.
    project.write(
        "state/pipeline/7.json",
        serde_json::to_string_pretty(&json!({
            "7": {"current_phase": "fixing", "active_agent": "builder",
                  "plan_iterations": "2", "review_passed": "true", "qa_passed": "false",
                  "pending_decisions": [DECISION], "failure_context": FAILURE},
            "lastActivity": "2025-01-02T00:00:00.000Z"
        }))
        .unwrap(),
    );
    project.write("state/pipeline/7-compact-plan.md", format!("{PLAN}\n"));
    assert!(!project.path().join(".claude").exists());

    let first = project.run("Let us talk about invoices.", &[]);
    let session = first.session_id();
    for prompt in ["And totals?", "And taxes?"] {
        let run = project.run(prompt, &["--resume", &session]);
        assert_eq!(run.session_id(), session, "{}", run.report());
    }
    let compact = project.run("/compact", &["--resume", &session]);
    succeeded(&compact);
    let last = project.run("What next?", &["--resume", &session]);
    assert_eq!(last.session_id(), session, "{}", last.report());

    // PreCompact ran: its snapshot is there, and its instructions reached
    // the summarizer.
    let state = project.path().join("state");
    let snapshots = names_starting(&state, "pre-compact-");
    assert_eq!(snapshots.len(), 1, "{snapshots:?}\n{}", compact.report());
    let messages = server.model_requests();
    let at = messages
        .iter()
        .position(ClaudeCode::is_summarizing)
        .expect("a summarizing request");
    let summarizing = messages[at].last_user_text();
    assert!(
        summarizing.contains("jkz: decision-critical pipeline state") && summarizing.contains(PLAN),
        "{summarizing}"
    );
    // SessionStart(compact) ran: the next request carries the re-injection.
    let next = messages
        .get(at + 1)
        .expect("a request after compaction")
        .all_text();
    let (_, context) = next
        .split_once("jkz: pipeline state restored after compaction")
        .unwrap_or_else(|| panic!("no re-injected context after compaction\n{next}"));
    for item in [PLAN, DECISION, FAILURE] {
        assert!(context.contains(item), "lacks {item:?}\n{context}");
    }

    // /jkz:save in one chat, /jkz:load in the next: the plugin's commands.
    let save = project.run("/jkz:save", &[]);
    let saver = save.session_id();
    let record: Value = serde_json::from_slice(
        &std::fs::read(state.join(format!("session-snapshots/{saver}.json")))
            .unwrap_or_else(|e| panic!("no session record ({e})\n{}", save.report())),
    )
    .unwrap();
    assert!(record.to_string().contains(SAVED_DECISION), "{record}");
    let before = server.model_requests().len();
    let load = project.run("/jkz:load", &[]);
    assert_ne!(load.session_id(), saver);
    assert!(
        server.model_requests()[before..]
            .iter()
            .any(|r| r.all_text().contains(SAVED_DECISION)),
        "no request of the loading chat carries the saved decision\n{}",
        load.report()
    );
    // Still nothing of jkz in the project's own settings.
    assert!(!project.path().join(".claude/settings.json").exists());
}

fn names_starting(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(prefix))
        .collect()
}
