//! The pipeline every client's compaction test starts from: issue 42 in a
//! fix cycle, with one marker per kind of decision-critical item, so each
//! can be traced from the pipeline state through the summarizing request to
//! what the model sees after compaction.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::json;

use super::stub_model::Request;
use super::{Project, RealClient};
use crate::util::{bin, git};

pub const PLAN: &str = "MARMALADE-PLAN: migrate the checkout totals to integer cents";
pub const DECISION: &str = "PLUM-DECISION: ship behind a flag or wait for the migration?";
pub const FAILURE: &str = "TANGERINE-FAILURE: test_checkout_total expected 10.00, got 9.99";
/// The branch the project's repository is on.
pub const BRANCH: &str = "quince-topic-branch";
pub const PHASE: &str = "Phase and iteration: fixing, active agent builder; plan iteration 2, review fix cycle 1, QA fix cycle 3";
pub const VERDICTS: &str = "Active verdicts: review passed, QA failed; overall FAIL";

/// The six items, each with the name the fidelity tables give it.
pub const ITEMS: [(&str, &str); 6] = [
    ("approved plan", PLAN),
    ("phase and iteration", PHASE),
    ("verdicts", VERDICTS),
    ("pending decision", DECISION),
    ("failure being fixed", FAILURE),
    ("git state (branch)", BRANCH),
];

/// What a summarizer stand-in answers when it keeps nothing: none of the
/// markers, so their presence after compaction proves jkz put them back.
pub const SUMMARY: &str = "<summary>1. Primary Request: the user chatted about fruit.</summary>";

/// A summarizer stand-in that keeps exactly the items its prompt (the
/// request's last user message) names, as a summarizer following its
/// instructions would, and nothing else of the conversation: an item is in
/// its summary only when the client passed it to the summarizer's prompt.
pub fn summary_keeping_what_its_prompt_names(r: &Request) -> String {
    summary_keeping_what_is_named_in(&r.last_user_text())
}

/// The summary a summarizer stand-in writes when `instructions` are what
/// it follows: the items they name, and nothing else.
pub fn summary_keeping_what_is_named_in(prompt: &str) -> String {
    let kept: Vec<&str> = ITEMS
        .iter()
        .map(|(_, m)| *m)
        .filter(|m| prompt.contains(m))
        .collect();
    format!(
        "<summary>The user and the agent looked at the checkout code.\n{}</summary>",
        kept.join("\n")
    )
}

/// Writes issue 42's pipeline state and approved plan into `project` and
/// makes it a repository on [`BRANCH`] with one commit (a `.gitignore` of
/// `state/` and the client's configuration directory).
pub fn issue_42_in_a_fix_cycle<C: RealClient>(project: &Project<C>) {
    project.write(
        "state/pipeline/42.json",
        serde_json::to_string_pretty(&json!({
            "42": {
                "current_phase": "fixing", "active_agent": "builder", "issue_type": "feature",
                "pr_number": "42", "started_at": "2025-01-01T00:00:00Z",
                "last_updated": "2025-01-02T00:00:00.000Z", "plan_iterations": "2",
                "review_fix_count": "1", "qa_fix_count": "3",
                "review_passed": "true", "qa_passed": "false",
                "pending_decisions": [DECISION], "failure_context": FAILURE,
                "steps": {"plan": "done"}, "x-team-field": {"kept": true}
            },
            "lastActivity": "2025-01-02T00:00:00.000Z", "heartbeat_pid": 47281
        }))
        .unwrap(),
    );
    project.write(
        "state/pipeline/42-compact-plan.md",
        format!("{PLAN}\n1. add cents column\n2. backfill\n"),
    );
    project.write(".gitignore", format!("state/\n{}/\n", C::CONFIG_DIR));
    if !project.path().join(".git").exists() {
        git(project.path(), &["init", "-q", "-b", BRANCH]);
    }
    git(project.path(), &["add", ".gitignore"]);
    git(project.path(), &["commit", "-q", "-m", "init"]);
}

/// Another live chat, `chat-a`, registers and claims issue 42 with its
/// worktree `wt/i42` of `project`, which it returns: what every client's
/// contested-edit test sets up before its own chat edits there.
pub fn chat_a_claims_issue_42<C: RealClient>(project: &Project<C>) -> PathBuf {
    let wt = project.path().join("wt/i42");
    let start = json!({"session_id": "chat-a", "cwd": project.path(),
                       "hook_event_name": "SessionStart", "source": "startup"});
    let mut hook = Command::new(bin("jkz-chat"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(start.to_string().as_bytes())
        .unwrap();
    assert!(hook.wait().unwrap().success());
    let claim = Command::new(bin("jkz"))
        .current_dir(project.path())
        .args(["claim", "42", "--worktree"])
        .arg(&wt)
        .args(["--session", "chat-a"])
        .output()
        .unwrap();
    assert!(
        claim.status.success(),
        "{}",
        String::from_utf8_lossy(&claim.stderr)
    );
    wt
}

/// A project of client `C` talking to `server`, with [`issue_42_in_a_fix_cycle`].
pub fn project_with_issue_42<C: RealClient>(server: &super::stub_model::StubModel) -> Project<C> {
    let project = C::project(server);
    issue_42_in_a_fix_cycle(&project);
    project
}

/// A call of the shell tool Copilot CLI and OpenCode both name `bash`.
pub fn bash(command: &str) -> super::stub_model::Turn {
    super::stub_model::Turn::Call {
        name: "bash".into(),
        input: json!({"command": command, "description": "run"}),
    }
}
