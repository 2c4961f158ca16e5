//! The events of jkz's general writers (pipeline fields, sessions, claims,
//! the tool-output guard, the PreToolUse guard's answers), one function per kind of write: a writer calls
//! one of these at the point of its write, in one line, and goes on whatever
//! happens (an event that cannot be appended is a warning; see
//! [`super::emit`]). A domain with its own records (circuits, locks,
//! deliberations) builds its events beside them and appends them through
//! [`super::emit`]: the log knows nothing of them.

use std::path::Path;

use serde_json::{json, Value};

use super::{emit, emit_at, Event};
use crate::pipeline::IssueNumber;
use crate::state_dir::StateDir;

/// `jkz state set` changed `field` of `issue` in the pipeline file at
/// `path` (`state/pipeline/<N>.json`) from `from` to `to`: `phase.changed`
/// for the phase, `state.changed` for any other field of the issue's data.
/// Nothing when the value did not change.
pub fn pipeline_field_set(
    path: &Path,
    issue: &IssueNumber,
    field: &str,
    from: Option<&Value>,
    to: &Value,
) {
    if from == Some(to) || crate::pipeline::SIBLINGS.contains(&field) {
        return;
    }
    // Only a pipeline file in a state directory has a log beside it.
    let pipeline_dir = path.parent().filter(|d| {
        d.file_name()
            .is_some_and(|n| n == crate::state_dir::layout::PIPELINE_DIR)
    });
    let Some(root) = pipeline_dir.and_then(Path::parent) else {
        return;
    };
    emit_at(root, field_change(issue.as_str(), field, from, to, false));
}

/// The event for a change of a pipeline field; `direct` when jkz saw it
/// rather than wrote it.
pub fn field_change(
    issue: &str,
    field: &str,
    from: Option<&Value>,
    to: &Value,
    direct: bool,
) -> Event {
    let from = from.cloned().unwrap_or(Value::Null);
    let mut payload = match field {
        "current_phase" => json!({"from": from, "to": to}),
        _ => json!({"field": field, "from": from, "to": to}),
    };
    if direct {
        payload["direct"] = Value::Bool(true);
    }
    let kind = match field {
        "current_phase" => "phase.changed",
        _ => "state.changed",
    };
    Event::new(kind)
        .issue(Some(issue.to_string()))
        .payload(payload)
}

/// `jkz-pre-compact` ran for `session`.
pub fn session_compacted(
    state: &StateDir,
    session: Option<&str>,
    trigger: Option<&str>,
    snapshot: Option<&str>,
) {
    let event = Event::new("session.compacted")
        .session(session)
        .payload(json!({"trigger": trigger, "snapshot": snapshot}));
    emit(state, event);
}

/// `jkz-session-start` ran for `session` (`source`: `compact`, `resume`, `fork`).
pub fn session_started(state: &StateDir, session: Option<&str>, source: &str) {
    let event = Event::new("session.started")
        .session(session)
        .payload(json!({"source": source}));
    emit(state, event);
}

/// `session` claimed `issue` (taking it over from `taken_from`, stale chats).
pub fn claim_taken(
    state: &StateDir,
    issue: &str,
    session: &str,
    worktree: Option<&str>,
    taken_from: &[String],
) {
    let mut payload = json!({"worktree": worktree});
    if !taken_from.is_empty() {
        payload["taken_from"] = json!(taken_from);
    }
    let event = Event::new("claim.taken")
        .issue(Some(issue.to_string()))
        .session(Some(session))
        .payload(payload);
    emit(state, event);
}

/// `session` released its claim on `issue`.
pub fn claim_released(state: &StateDir, issue: &str, session: &str) {
    let event = Event::new("claim.released")
        .issue(Some(issue.to_string()))
        .session(Some(session))
        .payload(json!({}));
    emit(state, event);
}

/// The tool-output guard cut a tool's output of `full` bytes to `shown`.
pub fn tool_output_guarded(
    state: &StateDir,
    session: Option<&str>,
    tool: &str,
    full: u64,
    shown: u64,
) {
    let event = Event::new("tool_output.guarded")
        .session(session)
        .payload(json!({"tool": tool, "bytes_in": full, "bytes_out": shown}));
    emit(state, event);
}

/// The PreToolUse guard refused (`refused`) or asked the user about a tool
/// call of `chat` in `client` (`tool`): what was at stake, and whose claim
/// (the event's issue is that claim's).
pub fn guard_decided(
    state: &StateDir,
    refused: bool,
    chat: &str,
    client: &str,
    tool: &str,
    finding: &crate::registry::decision::Finding,
) {
    let kind = if refused {
        super::GUARD_DENIED
    } else {
        super::GUARD_ASKED
    };
    let event = Event::new(kind)
        .issue(finding.issue.clone())
        .session(Some(chat))
        .payload(json!({
            "chat": chat,
            "client": client,
            "tool": tool,
            "target": finding.target,
            "owner": finding.owner,
        }));
    emit(state, event);
}
