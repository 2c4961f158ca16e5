//! The compaction hooks on the real client: a project with pipeline state,
//! a few turns, `/compact`, one more turn.

use std::sync::Arc;

use serde_json::{json, Value};

use super::adapter::ClaudeCode;
use super::pipeline::{
    issue_42_in_a_fix_cycle, BRANCH, DECISION, FAILURE, ITEMS, PHASE, PLAN, SUMMARY, VERDICTS,
};
use super::stub_model::{numbered, Request, StubModel, Turn};
use super::{Project, RealClient};
use crate::util::bin;

/// Issue 42 in a fix cycle ([`issue_42_in_a_fix_cycle`]), a file git sees
/// changed, and the compaction hooks registered by hand.
pub(super) fn project_with_pipeline(server: &StubModel) -> Project<ClaudeCode> {
    let project = ClaudeCode::project(server);
    issue_42_in_a_fix_cycle(&project);
    project.write("dirty.txt", "uncommitted");
    let pre = bin("jkz-pre-compact");
    let start = bin("jkz-session-start");
    let hook = |path: &std::path::Path| json!([{"type": "command", "command": path.display().to_string(), "timeout": 30}]);
    project.register_hooks(json!({
        "PreCompact": [{"matcher": "", "hooks": hook(&pre)}],
        "PostCompact": [{"matcher": "", "hooks": hook(&start)}],
        "SessionStart": [
            {"matcher": "compact", "hooks": hook(&start)},
            {"matcher": "resume", "hooks": hook(&start)},
            {"matcher": "fork", "hooks": hook(&start)}
        ]
    }));
    project
}

#[test]
fn compaction_keeps_the_decision_critical_state() {
    let responder = Arc::new(|r: &Request| {
        if ClaudeCode::is_summarizing(r) {
            Turn::Text(SUMMARY.into())
        } else {
            Turn::Text("Noted.".into())
        }
    });
    let server = StubModel::start(responder);
    let project = project_with_pipeline(&server);

    let first = project.run("Let us talk about apples.", &[]);
    let session = first.session_id();
    for prompt in ["And pears?", "And plums?"] {
        let run = project.run(prompt, &["--resume", &session]);
        assert_eq!(run.session_id(), session, "{}", run.report());
    }
    let compact = project.run("/compact keep the plan", &["--resume", &session]);
    assert!(
        compact.finished.status.is_some_and(|s| s.success())
            && !compact
                .finished
                .stdout
                .windows(12)
                .any(|w| w == b"Not enough m"),
        "{}",
        compact.report()
    );
    let last = project.run("What next?", &["--resume", &session]);
    assert_eq!(last.session_id(), session, "{}", last.report());

    // The snapshot: the event as received, the pipeline state, git.
    let state = project.path().join("state");
    let snapshots: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("pre-compact-"))
        .collect();
    assert_eq!(
        snapshots.len(),
        1,
        "one PreCompact, one snapshot: {snapshots:?}"
    );
    let snap: Value =
        serde_json::from_slice(&std::fs::read(state.join(&snapshots[0])).unwrap()).unwrap();
    let event = &snap["event"];
    assert_eq!(event["hook_event_name"], "PreCompact", "{event}");
    assert_eq!(event["trigger"], "manual", "{event}");
    assert_eq!(event["session_id"], session.as_str(), "{event}");
    assert!(
        event["custom_instructions"]
            .as_str()
            .unwrap_or("")
            .contains("keep the plan"),
        "{event}"
    );
    assert!(
        event.get("transcript_path").is_some(),
        "unknown-to-us fields kept: {event}"
    );
    let pipeline = &snap["pipelines"][0];
    assert_eq!(pipeline["file"], "42.json");
    assert_eq!(pipeline["raw"]["42"]["x-team-field"]["kept"], true);
    assert_eq!(pipeline["raw"]["heartbeat_pid"], 47281);
    assert_eq!(pipeline["normalized"]["verdict"], "FAIL");
    assert_eq!(pipeline["normalized"]["pr_number"], 42);
    assert_eq!(snap["git"]["branch"], BRANCH);
    assert_eq!(snap["git"]["dirty"], json!(["dirty.txt"]));

    // The session record was nudged.
    let record: Value = serde_json::from_slice(
        &std::fs::read(state.join(format!("session-snapshots/{session}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(record["compaction_count"], 1, "{record}");
    assert_eq!(record["last_compaction_trigger"], "manual", "{record}");
    assert_eq!(
        record["last_pre_compact_snapshot"],
        snapshots[0].as_str(),
        "{record}"
    );

    let messages = server.model_requests();
    let shown = || numbered(&messages, Request::last_user_text);
    let kinds = ITEMS.map(|(_, marker)| marker);

    // The summarizing request carries the items under the hook's instructions.
    let at = messages
        .iter()
        .position(ClaudeCode::is_summarizing)
        .unwrap_or_else(|| panic!("no summarizing request\n{}", shown()));
    let summarizing = messages[at].last_user_text();
    let (_, instructions) = summarizing
        .split_once("jkz: decision-critical pipeline state")
        .unwrap_or_else(|| {
            panic!("the PreCompact output is not in the summarizing request\n{summarizing}")
        });
    for kind in kinds {
        assert!(
            instructions.contains(kind),
            "summarizing request lacks {kind:?}\n{instructions}"
        );
    }

    // The first request after compaction carries the re-injected context,
    // from the SessionStart(compact) hook (the summary itself has none of it).
    let next = messages
        .get(at + 1)
        .unwrap_or_else(|| panic!("no request after compaction\n{}", shown()));
    let text = next.all_text();
    let (_, context) = text
        .split_once("jkz: pipeline state restored after compaction")
        .unwrap_or_else(|| panic!("no re-injected context after compaction\n{text}"));
    let context = context
        .split("</system-reminder>")
        .next()
        .unwrap_or_default();
    assert!(context.contains("this session's snapshot"), "{context}");
    for kind in kinds {
        assert!(
            context.contains(kind),
            "re-injected context lacks {kind:?}\n{context}"
        );
    }
}

/// Compacted while issue 42 was fixing with a FAIL verdict and a pending
/// decision; the pipeline then moved on (reviewing, QA passed, the decision
/// taken). The first request after `--resume` must carry the live values,
/// not the snapshot's.
#[test]
fn resume_after_the_pipeline_moved_on_carries_the_live_state() {
    let responder = Arc::new(|r: &Request| {
        if ClaudeCode::is_summarizing(r) {
            Turn::Text(SUMMARY.into())
        } else {
            Turn::Text("Noted.".into())
        }
    });
    let server = StubModel::start(responder);
    let project = project_with_pipeline(&server);
    let session = project.run("Let us talk about apples.", &[]).session_id();
    for prompt in ["And pears?", "And plums?"] {
        project.run(prompt, &["--resume", &session]).session_id();
    }
    let compact = project.run("/compact keep the plan", &["--resume", &session]);
    assert!(
        compact.finished.status.is_some_and(|s| s.success()),
        "{}",
        compact.report()
    );
    // The pipeline moves on while the chat is closed.
    for (field, value) in [
        ("current_phase", "reviewing"),
        ("active_agent", "reviewer"),
        ("qa_passed", "true"),
    ] {
        let set = std::process::Command::new(bin("jkz"))
            .current_dir(project.path())
            .args(["state", "set", "--state-dir", "state", "42", field, value])
            .output()
            .unwrap();
        assert!(set.status.success(), "{set:?}");
    }
    let set = std::process::Command::new(bin("jkz"))
        .current_dir(project.path())
        .args(["state", "set", "--state-dir", "state", "--json"])
        .args(["42", "pending_decisions", "[]"])
        .output()
        .unwrap();
    assert!(set.status.success(), "{set:?}");

    let before = server.model_requests().len();
    let resumed = project.run("What next?", &["--resume", &session]);
    assert_eq!(resumed.session_id(), session, "{}", resumed.report());
    let messages = server.model_requests();
    let first = messages
        .get(before)
        .unwrap_or_else(|| panic!("no request after --resume\n{}", resumed.report()));
    let text = first.all_text();
    let (_, context) = text
        .rsplit_once("jkz: pipeline state restored on resume")
        .unwrap_or_else(|| panic!("no re-injected context on resume\n{text}"));
    let context = context
        .split("</system-reminder>")
        .next()
        .unwrap_or_default();
    for live in [
        "Phase and iteration: reviewing, active agent reviewer",
        "Active verdicts: review passed, QA passed; overall PASS",
        "Pending human decisions: none",
        "Changed since the snapshot",
        "#42: phase fixing → reviewing",
        "pending decisions 1 → none",
        PLAN,
        FAILURE,
    ] {
        assert!(context.contains(live), "lacks {live:?}\n{context}");
    }
    for stale in [PHASE, VERDICTS, DECISION] {
        assert!(!context.contains(stale), "stale {stale:?}\n{context}");
    }
}
