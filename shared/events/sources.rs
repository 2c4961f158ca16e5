//! The events each jkz writer appends, one function per kind of write: a
//! writer calls one of these at the point of its write, in one line, and
//! goes on whatever happens (an event that cannot be appended is a warning;
//! see [`super::emit`]).

use std::path::Path;

use serde_json::{json, Value};

use super::{emit, emit_at, Event};
use crate::circuit::{Circuit, State as CircuitState};
use crate::deliberation::Record;
use crate::lock::LockRecord;
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

/// A deliberation record `id` was kept in `records_dir`
/// (`state/deliberations/`): `agent.finished`, and `verdict.recorded`
/// when the answer carried a verdict.
pub fn agent_finished(records_dir: &Path, id: &str, record: &Record) {
    let records = records_dir
        .file_name()
        .is_some_and(|n| n == crate::state_dir::DELIBERATIONS_DIR);
    let Some(root) = records_dir.parent().filter(|_| records) else {
        return;
    };
    let issue = record.issue.map(|n| n.to_string());
    let finished = Event::new("agent.finished")
        .issue(issue.clone())
        .payload(json!({
            "role": record.role,
            "status": record.status.name(),
            "duration_ms": record.duration_ms,
            "record": id,
            "phase": record.phase,
            "iteration": record.iteration,
            "exit_code": record.exit_code,
            "tokens": record.tokens,
        }));
    emit_at(root, finished);
    if let Some(verdict) = &record.verdict {
        let recorded = Event::new("verdict.recorded").issue(issue).payload(json!({
            "role": record.role,
            "verdict": verdict,
            "record": id,
        }));
        emit_at(root, recorded);
    }
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

/// `jkz-session-start` ran for `session` (`source`: `compact`, `resume`).
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

/// A lock was taken: `lock.acquired`, or `lock.reclaimed` when it was
/// taken from a holder that expired or died (`previous`).
pub fn lock_acquired(state: &StateDir, record: &LockRecord, previous: Option<&LockRecord>) {
    let kind = if previous.is_some() {
        "lock.reclaimed"
    } else {
        "lock.acquired"
    };
    let mut payload = json!({
        "kind": record.kind,
        "name": record.name,
        "owner": record.owner,
        "pid": record.holder.pid,
        "expires": record.expires,
    });
    if let Some(previous) = previous {
        payload["previous_owner"] = json!(previous.owner);
    }
    let event = Event::new(kind)
        .issue(lock_issue(&record.kind, &record.name))
        .payload(payload);
    emit(state, event);
}

/// A lock was released by its owner.
pub fn lock_released(state: &StateDir, kind: &str, name: &str, owner: &str) {
    let event = Event::new("lock.released")
        .issue(lock_issue(kind, name))
        .payload(json!({"kind": kind, "name": name, "owner": owner}));
    emit(state, event);
}

/// The issue a lock is for: a pipeline lock named by an issue number.
fn lock_issue(kind: &str, name: &str) -> Option<String> {
    (kind == "pipeline")
        .then(|| IssueNumber::parse(name).ok())
        .flatten()
        .map(|n| n.as_str().to_string())
}

/// A circuit changed state from `before`: `circuit.opened` when it opened,
/// `circuit.closed` when it closed; half-opening is not an event (the
/// probe's outcome is).
pub fn circuit_changed(state: &StateDir, before: CircuitState, after: &Circuit) {
    let kind = match (before, after.state) {
        (b, CircuitState::Open) if b != CircuitState::Open => "circuit.opened",
        (b, CircuitState::Closed) if b != CircuitState::Closed => "circuit.closed",
        _ => return,
    };
    let event = Event::new(kind).payload(json!({
        "service": after.service,
        "failures": after.consecutive_failures,
    }));
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
