//! The PostCompact arm of `jkz-session-start` and the `fork` source,
//! through the real binaries, with the event shapes Claude Code 2.1.332
//! sends (read from its bundled schema: PostCompact carries `trigger` and
//! `compact_summary`; SessionStart `fork` adds `seconds_since_last_response`
//! and `context_tokens`).

use serde_json::{json, Value};

use crate::util::{self, Dir, Run};

const DECISION: &str = "PLUM-DECISION: ship behind a flag or wait for the migration?";
const FAILURE: &str = "TANGERINE-FAILURE: test_checkout_total expected 10.00, got 9.99";
const PLAN: &str = "MARMALADE-PLAN: migrate the checkout totals to integer cents";

fn pipeline(dir: &Dir) {
    let issue = json!({
        "current_phase": "fixing", "active_agent": "builder", "pr_number": "42",
        "plan_iterations": "2", "review_passed": "true", "qa_passed": "false",
        "pending_decisions": [DECISION], "failure_context": FAILURE,
        "last_updated": "2025-01-02T00:00:00.000Z",
    });
    util::write_pipeline(
        &dir.join("state"),
        42,
        &util::pipeline_doc(42, issue, Value::Null),
    );
    dir.write(
        "state/pipeline/42-compact-plan.md",
        format!("{PLAN}\n1. add cents column\n"),
    );
}

fn base(dir: &Dir, session: &str, event: &str) -> Value {
    json!({
        "session_id": session,
        "transcript_path": dir.join("t.jsonl"),
        "cwd": dir.path(),
        "hook_event_name": event,
    })
}

fn hook(dir: &Dir, event: &Value) -> Run {
    dir.cmd("jkz-session-start")
        .stdin(serde_json::to_vec(event).unwrap())
        .run()
        .success()
}

fn post_compact(dir: &Dir, session: &str, summary: Value) -> Run {
    let mut e = base(dir, session, "PostCompact");
    e["trigger"] = json!("manual");
    e["compact_summary"] = summary;
    hook(dir, &e)
}

fn session_start(dir: &Dir, session: &str, source: &str) -> String {
    let mut e = base(dir, session, "SessionStart");
    e["source"] = json!(source);
    if source == "fork" {
        e["seconds_since_last_response"] = json!(12);
        e["context_tokens"] = json!(4200);
    }
    let run = hook(dir, &e);
    let v: Value =
        serde_json::from_str(&run.stdout_str()).unwrap_or_else(|e| panic!("{e}\n{}", run.report()));
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", run.report()))
        .to_string()
}

fn record(dir: &Dir, session: &str) -> Value {
    serde_json::from_slice(&dir.read(format!("state/session-snapshots/{session}.json"))).unwrap()
}

fn pre_compact(dir: &Dir, session: &str) {
    let mut e = base(dir, session, "PreCompact");
    e["trigger"] = json!("manual");
    e["custom_instructions"] = Value::Null;
    dir.cmd("jkz-pre-compact")
        .stdin(serde_json::to_vec(&e).unwrap())
        .run()
        .success();
}

#[test]
fn post_compact_records_what_the_summary_dropped_and_session_start_puts_it_first() {
    let dir = Dir::new();
    pipeline(&dir);
    pre_compact(&dir, "s1");
    // The summary keeps the plan and the verdict of #42; it drops the
    // phase, the decision and the failure (and the branch: no git here).
    let summary = format!(
        "<summary>\n1. Primary Request: issue #42.\n   - Plan: {PLAN}\n   - #42 overall verdict: FAIL\n</summary>"
    );
    let run = post_compact(&dir, "s1", json!(summary));
    assert_eq!(run.stdout_str(), "", "{}", run.report());
    assert_eq!(run.stderr_str(), "", "{}", run.report());
    let r = record(&dir, "s1");
    let found = &r["summary_dropped"];
    assert_eq!(found["snapshot"], r["last_pre_compact_snapshot"], "{r}");
    assert_eq!(found["trigger"], "manual");
    let kinds: Vec<&str> = found["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["phase", "pending_decision", "failure_context"],
        "{found}"
    );
    assert_eq!(
        r["compaction_count"], 1,
        "the record's other fields stay: {r}"
    );

    let text = session_start(&dir, "s1", "compact");
    let block = text
        .find("Dropped by the compaction summary")
        .unwrap_or_else(|| panic!("no dropped block\n{text}"));
    let rest = text.find("### Issue #42").expect("the digest");
    assert!(block < rest, "the dropped items come first\n{text}");
    let first = &text[block..rest];
    for want in [
        "#42 phase and iteration: fixing, active agent builder",
        &format!("#42 pending human decision: {DECISION}"),
        &format!("#42 failure context (current fix cycle): {FAILURE}"),
    ] {
        assert!(first.contains(want), "lacks {want:?}\n{first}");
    }
    assert!(!first.contains("approved plan"), "{first}");
    assert!(!first.contains("active verdicts"), "{first}");

    // On resume too (the summary is still the conversation's memory);
    // after the next compaction (a new snapshot the record points at) the
    // old check is not used.
    let resumed = session_start(&dir, "s1", "resume");
    assert!(
        resumed.contains("Dropped by the compaction summary"),
        "{resumed}"
    );
    std::thread::sleep(std::time::Duration::from_millis(5));
    pre_compact(&dir, "s1");
    assert!(!session_start(&dir, "s1", "compact").contains("Dropped by the compaction summary"));
}

#[test]
fn post_compact_with_a_summary_that_keeps_everything_adds_no_block() {
    let dir = Dir::new();
    pipeline(&dir);
    pre_compact(&dir, "s2");
    let summary = format!(
        "Issue #42: phase fixing; overall FAIL.\nPlan: {PLAN}\nPending: {DECISION}\nFailure: {FAILURE}"
    );
    post_compact(&dir, "s2", json!(summary));
    assert_eq!(record(&dir, "s2")["summary_dropped"]["dropped"], json!([]));
    let text = session_start(&dir, "s2", "compact");
    assert!(
        !text.contains("Dropped by the compaction summary"),
        "{text}"
    );
    assert!(text.contains(DECISION), "{text}");
}

#[test]
fn post_compact_bad_input_exits_0_with_one_line_and_records_nothing() {
    let dir = Dir::new();
    pipeline(&dir);
    pre_compact(&dir, "s3");
    let before = dir.read("state/session-snapshots/s3.json");
    let mut codex = base(&dir, "s3", "PostCompact");
    codex["turn_id"] = json!("t1");
    codex["trigger"] = json!("auto");
    let mut no_session = base(&dir, "s3", "PostCompact");
    no_session["session_id"] = json!(17);
    no_session["compact_summary"] = json!("x");
    let mut hostile = base(&dir, "../../etc", "PostCompact");
    hostile["compact_summary"] = json!("x");
    for (event, why) in [
        (base(&dir, "s3", "PostCompact"), "without compact_summary"),
        (
            {
                let mut e = base(&dir, "s3", "PostCompact");
                e["compact_summary"] = json!(["not", "text"]);
                e
            },
            "compact_summary is an array, not a string",
        ),
        (codex, "without compact_summary"),
        (no_session, "session_id is a number, not a string"),
        (hostile, "nothing recorded"),
    ] {
        let run = hook(&dir, &event);
        assert_eq!(run.stdout_str(), "", "{}", run.report());
        run.one_line("jkz-session-start", why);
        assert_eq!(dir.read("state/session-snapshots/s3.json"), before);
    }
    // An empty summary (a compaction that kept messages instead): nothing
    // to check, nothing said.
    let run = post_compact(&dir, "s3", json!(" "));
    assert_eq!(
        (run.stdout_str(), run.stderr_str()),
        (String::new(), String::new())
    );
    assert_eq!(dir.read("state/session-snapshots/s3.json"), before);
    // Another client's events for this program: nothing printed, nothing
    // written (Gemini's PreCompress carries no SessionStart source).
    let mut gemini = base(&dir, "s3", "PreCompress");
    gemini["trigger"] = json!("auto");
    let run = hook(&dir, &gemini);
    assert_eq!(run.stdout_str(), "", "{}", run.report());
    assert_eq!(dir.read("state/session-snapshots/s3.json"), before);
}

#[test]
fn post_compact_without_a_state_directory_writes_nothing() {
    let dir = Dir::new();
    let run = post_compact(&dir, "s4", json!("a summary"));
    assert_eq!(run.stdout_str(), "");
    assert_eq!(run.stderr_str(), "", "{}", run.report());
    assert!(dir.files().is_empty(), "{:?}", dir.files());
}

#[test]
fn session_start_answers_fork_like_resume() {
    let dir = Dir::new();
    pipeline(&dir);
    pre_compact(&dir, "parent");
    // A fork has a new session id: the project's newest snapshot is used.
    let text = session_start(&dir, "forked-child", "fork");
    assert!(
        text.contains("jkz: pipeline state restored in this forked session"),
        "{text}"
    );
    assert!(text.contains("the project's newest snapshot"), "{text}");
    for want in [PLAN, DECISION, FAILURE, "overall FAIL"] {
        assert!(text.contains(want), "lacks {want:?}\n{text}");
    }
}
