//! PostCompact and SessionStart `fork` on the real client: what the
//! summary dropped comes back first, a forked session gets the state, and
//! the fidelity of the six decision-critical items after compaction with
//! and without jkz.

use std::sync::Arc;

use serde_json::{json, Value};

use super::adapter::ClaudeCode;
use super::compaction::project_with_pipeline;
use super::pipeline::{BRANCH, DECISION, FAILURE, ITEMS, PHASE, PLAN, SUMMARY};
use super::stub_model::{Request, StubModel, Turn};
use super::{Project, RealClient};

/// A summary that keeps the plan, the verdict of #42 and the branch, and
/// drops the phase, the pending decision and the failure.
fn partial_summary() -> String {
    format!(
        "<summary>\n1. Primary Request and Intent: finish issue #42 (checkout totals).\n   \
         - Approved plan: {PLAN}\n   - #42 active verdicts: review passed, QA failed; overall FAIL\n   \
         - Working on branch {BRANCH}\n2. Pending Tasks: none noted.\n</summary>"
    )
}

fn server_summarizing_with(summary: String) -> StubModel {
    StubModel::start(Arc::new(move |r: &Request| {
        if ClaudeCode::is_summarizing(r) {
            Turn::Text(summary.clone())
        } else {
            Turn::Text("Noted.".into())
        }
    }))
}

/// Three turns, `/compact`, one more turn; returns the session id and the
/// first model request after compaction (the next turn's).
fn compact_and_go_on(project: &Project<ClaudeCode>, server: &StubModel) -> (String, Request) {
    let session = project.run("Let us talk about apples.", &[]).session_id();
    for prompt in ["And pears?", "And plums?"] {
        let run = project.run(prompt, &["--resume", &session]);
        assert_eq!(run.session_id(), session, "{}", run.report());
    }
    let compact = project.run("/compact", &["--resume", &session]);
    assert!(
        compact.finished.status.is_some_and(|s| s.success()),
        "{}",
        compact.report()
    );
    let last = project.run("What next?", &["--resume", &session]);
    assert_eq!(last.session_id(), session, "{}", last.report());
    let messages = server.model_requests();
    let at = messages
        .iter()
        .position(ClaudeCode::is_summarizing)
        .unwrap_or_else(|| panic!("no summarizing request ({} requests)", messages.len()));
    let next = messages
        .get(at + 1)
        .unwrap_or_else(|| panic!("no request after compaction"))
        .clone();
    (session, next)
}

#[test]
fn post_compact_puts_what_the_summary_dropped_first() {
    let server = server_summarizing_with(partial_summary());
    let project = project_with_pipeline(&server);
    let (session, next) = compact_and_go_on(&project, &server);

    // PostCompact recorded what the summary dropped, for this compaction.
    let record: Value = serde_json::from_slice(
        &std::fs::read(
            project
                .path()
                .join(format!("state/session-snapshots/{session}.json")),
        )
        .unwrap(),
    )
    .unwrap();
    let found = &record["summary_dropped"];
    assert_eq!(
        found["snapshot"], record["last_pre_compact_snapshot"],
        "{record}"
    );
    assert_eq!(found["trigger"], "manual", "{record}");
    let kinds: Vec<&str> = found["dropped"]
        .as_array()
        .unwrap_or_else(|| panic!("no summary_dropped in {record}"))
        .iter()
        .map(|d| d["kind"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        ["phase", "pending_decision", "failure_context"],
        "{record}"
    );

    // The next request carries them first, then the whole state. (The
    // client runs a full compaction's SessionStart before its PostCompact:
    // the next SessionStart is the resume's.)
    let text = next.all_text();
    assert!(
        text.contains("jkz: pipeline state restored after compaction"),
        "{text}"
    );
    let (_, context) = text
        .rsplit_once("jkz: pipeline state restored on resume")
        .unwrap_or_else(|| panic!("no re-injected context on resume\n{text}"));
    let context = context
        .split("</system-reminder>")
        .next()
        .unwrap_or_default();
    let block = context
        .find("Dropped by the compaction summary")
        .unwrap_or_else(|| panic!("no dropped items first\n{context}"));
    let rest = context
        .find("### Issue #42")
        .unwrap_or_else(|| panic!("no digest\n{context}"));
    assert!(block < rest, "{context}");
    let first = &context[block..rest];
    for want in [
        "#42 phase and iteration: fixing, active agent builder".to_string(),
        format!("#42 pending human decision: {DECISION}"),
        format!("#42 failure context (current fix cycle): {FAILURE}"),
    ] {
        assert!(first.contains(&want), "lacks {want:?}\n{first}");
    }
    for kept in [PLAN, "overall FAIL", BRANCH] {
        assert!(!first.contains(kept), "{kept:?} was kept\n{first}");
    }
    for item in ITEMS.map(|(_, marker)| marker) {
        assert!(context[rest..].contains(item), "lacks {item:?}\n{context}");
    }
}

#[test]
fn a_forked_session_gets_the_state_like_a_resumed_one() {
    let server = server_summarizing_with(SUMMARY.into());
    let project = project_with_pipeline(&server);
    let session = project.run("Let us talk about apples.", &[]).session_id();
    let before = server.model_requests().len();
    let fork = project.run("And now?", &["--resume", &session, "--fork-session"]);
    let forked = fork.session_id();
    assert_ne!(forked, session, "{}", fork.report());
    let messages = server.model_requests();
    let first = messages
        .get(before)
        .unwrap_or_else(|| panic!("no request in the fork\n{}", fork.report()));
    let text = first.all_text();
    let (_, context) = text
        .rsplit_once("jkz: pipeline state restored in this forked session")
        .unwrap_or_else(|| panic!("no re-injected context in the fork\n{text}"));
    for item in ITEMS.map(|(_, marker)| marker) {
        assert!(context.contains(item), "lacks {item:?}\n{context}");
    }
}

/// The six items in the first request after compaction, without jkz (no
/// hooks) and with jkz, for a summary that drops all of them and one that
/// keeps half. The summarizer is our model server: the figures measure
/// what the hooks put back, not how well a model summarizes.
#[test]
fn fidelity_of_the_six_items_after_compaction() {
    let items = [
        ("approved plan", PLAN),
        ("phase and iteration", PHASE),
        ("active verdicts", "overall FAIL"),
        ("pending decision", DECISION),
        ("failure context", FAILURE),
        ("git branch", BRANCH),
    ];
    let mut table = Vec::new();
    for (label, summary) in [
        ("summary drops all", SUMMARY.to_string()),
        ("summary keeps half", partial_summary()),
    ] {
        let mut row = Vec::new();
        for with_jkz in [false, true] {
            let server = server_summarizing_with(summary.clone());
            let project = project_with_pipeline(&server);
            if !with_jkz {
                project.register_hooks(json!({}));
            }
            let (_, next) = compact_and_go_on(&project, &server);
            let text = next.all_text();
            let kept: Vec<bool> = items.iter().map(|(_, m)| text.contains(m)).collect();
            row.push(kept);
        }
        table.push((label, row));
    }
    let mut shown = String::from("item | ");
    for (label, _) in &table {
        shown.push_str(&format!("{label}: without jkz | with jkz | "));
    }
    for (i, (name, _)) in items.iter().enumerate() {
        shown.push_str(&format!("\n{name} | "));
        for (_, row) in &table {
            for kept in row {
                shown.push_str(if kept[i] { "kept | " } else { "lost | " });
            }
        }
    }
    eprintln!(
        "fidelity after compaction (Claude Code {}):\n{shown}",
        ClaudeCode::NPM.version
    );
    for (label, row) in &table {
        assert!(row[1].iter().all(|k| *k), "{label}: with jkz\n{shown}");
    }
    // Without jkz, of the pipeline's items exactly what the summary kept
    // survives (the client's own context may name the branch).
    assert_eq!(table[0].1[0][..5], [false; 5], "{shown}");
    assert_eq!(
        table[1].1[0][..5],
        [true, false, true, false, false],
        "{shown}"
    );
}
