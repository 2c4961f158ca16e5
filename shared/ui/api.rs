//! The JSON API behind the page: what each endpoint answers, built from the
//! state directory with the project's readers (documented in docs/ui.md).
//!
//! Every part of the state that does not exist yet (no deliberations, no
//! locks, no registry, no ledger) answers empty, never an error.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::own_files::{read_live_session, read_watch_list};
use super::poll::{Row, Table};
use crate::compaction::snapshot::{self, SnapshotHead};
use crate::deliberation::index::{load_read_only, read_record, Entry};
use crate::json_file::HOOK_LOCK_WAIT;
use crate::pipeline::IssueNumber;
use crate::process::{liveness, Liveness};
use crate::state_dir::layout::CHAT_DB;
use crate::state_dir::{StateDir, DELIBERATIONS_DIR};

/// `GET /api/pipelines`: every pipeline's normalized view, in issue order,
/// with `pinned`, `stale` and why. Rendered by joining the poller's rows.
pub fn pipelines(
    state: &StateDir,
    table: &Table,
    stale_after: Duration,
    now: DateTime<Utc>,
) -> Vec<u8> {
    let watch = read_watch_list(state);
    let mut out = Vec::with_capacity(64 + table.rows.len() * 700);
    out.extend_from_slice(b"{\"version\":");
    out.extend_from_slice(table.version.to_string().as_bytes());
    out.extend_from_slice(b",\"count\":");
    out.extend_from_slice(table.rows.len().to_string().as_bytes());
    out.extend_from_slice(b",\"watch_list\":");
    out.extend(serde_json::to_vec(&watch).expect("serializes"));
    out.extend_from_slice(b",\"pipelines\":[");
    // Pipelines share few heartbeat pids: each is looked up once.
    let mut gone = HashMap::new();
    for (i, row) in table.rows.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let pinned = watch.pinned.iter().any(|p| p == row.issue.as_str());
        let stale = stale_reason_with(row, stale_after, now, &mut gone);
        write_row(&mut out, row, pinned, stale);
    }
    out.extend_from_slice(b"]}");
    out
}

fn write_row(out: &mut Vec<u8>, row: &Row, pinned: bool, stale: Option<String>) {
    let str_or_null = |out: &mut Vec<u8>, s: Option<&str>| match s {
        Some(s) => serde_json::to_writer(&mut *out, s).expect("writes to a Vec"),
        None => out.extend_from_slice(b"null"),
    };
    out.extend_from_slice(b"{\"issue\":");
    str_or_null(out, Some(row.issue.as_str()));
    out.extend_from_slice(if pinned {
        b",\"pinned\":true"
    } else {
        b",\"pinned\":false"
    });
    out.extend_from_slice(if stale.is_some() {
        b",\"stale\":true"
    } else {
        b",\"stale\":false"
    });
    out.extend_from_slice(b",\"stale_reason\":");
    str_or_null(out, stale.as_deref());
    out.extend_from_slice(b",\"activity\":");
    let activity = row
        .activity
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    str_or_null(out, activity.as_deref());
    out.extend_from_slice(b",\"error\":");
    str_or_null(out, row.error.as_deref());
    out.extend_from_slice(b",\"view\":");
    str_or_null_raw(out, row.view_json.as_deref());
    out.push(b'}');
}

fn str_or_null_raw(out: &mut Vec<u8>, json: Option<&str>) {
    out.extend_from_slice(json.unwrap_or("null").as_bytes());
}

/// Why a pipeline counts as stale, if it does: finished pipelines never do.
pub fn stale_reason(row: &Row, stale_after: Duration, now: DateTime<Utc>) -> Option<String> {
    stale_reason_with(row, stale_after, now, &mut HashMap::new())
}

fn stale_reason_with(
    row: &Row,
    stale_after: Duration,
    now: DateTime<Utc>,
    gone: &mut HashMap<u32, bool>,
) -> Option<String> {
    if !row.active {
        return None;
    }
    if let Some(pid) = row.heartbeat_pid.and_then(|p| u32::try_from(p).ok()) {
        if *gone
            .entry(pid)
            .or_insert_with(|| liveness(pid, None) == Liveness::Gone)
        {
            return Some(format!("heartbeat_pid {pid} is gone"));
        }
    }
    let idle = now.signed_duration_since(row.activity?).to_std().ok()?;
    (idle > stale_after).then(|| format!("no activity for {} min", idle.as_secs() / 60))
}

/// Pre-compact snapshot heads, by file name: snapshots are written once, so
/// each is read once per server.
#[derive(Default)]
pub struct SnapshotCache {
    heads: Mutex<HashMap<String, Arc<Result<SnapshotHead, String>>>>,
}

impl SnapshotCache {
    fn head(&self, state: &Path, name: &str) -> Arc<Result<SnapshotHead, String>> {
        if let Some(h) = self.lock().get(name) {
            return Arc::clone(h);
        }
        let head = Arc::new(snapshot::read_head(&state.join(name)).map_err(|e| e.to_string()));
        let mut heads = self.lock();
        let names: std::collections::HashSet<String> = snapshot::list(state).into_iter().collect();
        heads.retain(|n, _| names.contains(n));
        heads.insert(name.to_string(), Arc::clone(&head));
        head
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Result<SnapshotHead, String>>>> {
        self.heads.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `GET /api/issues/N`: the issue's pipeline view, its timeline (phases as
/// far as the files show them, deliberations, compactions) and its locks.
pub fn issue(
    state: &StateDir,
    table: &Table,
    snapshots: &SnapshotCache,
    issue: &IssueNumber,
    stale_after: Duration,
    now: DateTime<Utc>,
) -> Value {
    let row = table.rows.iter().find(|r| r.issue == *issue);
    let view: Value = row
        .and_then(|r| r.view_json.as_deref())
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or(Value::Null);
    let deliberations: Vec<Entry> = deliberations(state)
        .0
        .into_iter()
        .filter(|e| e.issue.map(|n| n.to_string()).as_deref() == Some(issue.as_str()))
        .collect();
    let mut compactions = Vec::new();
    for name in snapshot::list(state.path()) {
        let head = snapshots.head(state.path(), &name);
        match &*head {
            Ok(head) => {
                let detailed = head
                    .digest
                    .pipelines
                    .iter()
                    .find(|p| p.issue == issue.as_str());
                let named = head.digest.other_active.iter().any(|p| p == issue.as_str());
                if detailed.is_some() || named {
                    compactions.push(json!({
                        "snapshot": name,
                        "created_at": head.created_at,
                        "session_id": head.session_id,
                        "phase": detailed.map(|d| d.phase.clone()),
                        "reinjected": detailed,
                    }));
                }
            }
            Err(e) => compactions.push(json!({"snapshot": name, "error": e})),
        }
    }
    // Phases as far as the files show them: each deliberation and snapshot
    // names the phase at its time; the pipeline file names the current one.
    let mut marks: Vec<(String, String, &str)> = Vec::new();
    for d in &deliberations {
        if let Some(p) = &d.phase {
            marks.push((d.timestamp.clone(), p.clone(), "deliberation"));
        }
    }
    for c in &compactions {
        if let (Some(t), Some(p)) = (c["created_at"].as_str(), c["phase"].as_str()) {
            marks.push((t.to_string(), p.to_string(), "compaction"));
        }
    }
    if let Some(p) = view["current_phase"].as_str() {
        let t = view["last_updated"].as_str().unwrap_or("").to_string();
        marks.push((t, p.to_string(), "pipeline file"));
    }
    marks.sort_by(|a, b| a.0.cmp(&b.0));
    let mut phases: Vec<Value> = Vec::new();
    for (at, phase, source) in marks {
        if phases.last().and_then(|l| l["phase"].as_str()) != Some(&phase) {
            phases.push(json!({"phase": phase, "since": at, "source": source}));
        }
    }
    let locks: Vec<Value> = crate::lock::list(state)
        .unwrap_or_default()
        .into_iter()
        .filter(|l| l.name == issue.as_str() || l.name == format!("issue-{issue}"))
        .map(|l| lock_json(&l, now))
        .collect();
    json!({
        "issue": issue.as_str(),
        "exists": row.is_some(),
        "error": row.and_then(|r| r.error.clone()),
        "stale_reason": row.and_then(|r| stale_reason(r, stale_after, now)),
        "view": view,
        "phases": phases,
        "deliberations": deliberations,
        "compactions": compactions,
        "locks": locks,
        "findings": crate::findings::observer::issue_json(state, issue.as_str()),
    })
}

fn lock_json(l: &crate::lock::LockRecord, now: DateTime<Utc>) -> Value {
    let mut v = serde_json::to_value(l).expect("serializes");
    v["state"] = json!(l.state(now).name());
    v
}

/// Every deliberation record's index entry (read-only: the index is not
/// repaired here), and a warning when the directory could not be read.
pub fn deliberations(state: &StateDir) -> (Vec<Entry>, Option<String>) {
    let dir = state.join(DELIBERATIONS_DIR);
    if !dir.is_dir() {
        return (Vec::new(), None);
    }
    match load_read_only(&dir, &mut io::sink()) {
        Ok(entries) => (entries, None),
        Err(e) => (Vec::new(), Some(format!("{}: {e}", dir.display()))),
    }
}

/// Whether `id` can name a deliberation record: the one file-name rule
/// (record ids are made of those characters), no leading dot. Anything
/// else (`..`, `/`) is refused before any path is built.
pub fn is_record_id(id: &str) -> bool {
    crate::file_name::is_safe_visible(id)
}

/// `GET /api/deliberations/ID`: the whole record with its full response
/// (inline, or read from the content-addressed file it names).
pub fn deliberation(state: &StateDir, id: &str) -> Result<Value, (u16, String)> {
    if !is_record_id(id) {
        return Err((400, format!("not a deliberation record id: {id:?}")));
    }
    let dir = state.join(DELIBERATIONS_DIR);
    let record = read_record(&dir, id).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => (404, format!("no deliberation record {id}")),
        _ => (500, e.to_string()),
    })?;
    let mut v = serde_json::to_value(&record).expect("serializes");
    if v["response"].is_null() {
        if let Some(file) = v["response_file"].as_str().map(str::to_string) {
            v["response"] = match offload_text(state, &file) {
                Ok(text) => json!(text),
                Err(e) => {
                    v["response_error"] = json!(e);
                    Value::Null
                }
            };
        }
    }
    Ok(v)
}

/// The largest response shown on the page.
const MAX_RESPONSE_SHOWN: u64 = 16 * 1024 * 1024;

/// A response file named by a record, read when
/// [`response_path`](crate::deliberation::response::response_path) accepts its name.
fn offload_text(state: &StateDir, file: &str) -> Result<String, String> {
    let path = crate::deliberation::response::response_path(state, file)?;
    crate::state_dir::read_state_file(&path, MAX_RESPONSE_SHOWN)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| format!("{file}: {e}"))
}

/// `GET /api/now`: live chats and claims (the registry), open circuits,
/// held locks, the tool-output savings, and the UI's own files.
pub fn now(state: &StateDir, now: DateTime<Utc>) -> Value {
    let circuits: Vec<Value> = crate::circuit::status(state, None)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.state != crate::circuit::State::Closed)
        .map(|c| {
            let mut v = serde_json::to_value(&c).expect("serializes");
            v["state"] = json!(c.state.name());
            v
        })
        .collect();
    let locks: Vec<Value> = crate::lock::list(state)
        .unwrap_or_default()
        .into_iter()
        .filter(|l| l.state(now) == crate::lock::LockState::Held)
        .map(|l| lock_json(&l, now))
        .collect();
    let savings = match crate::tool_output::stats::summarize(state.path()) {
        // Per command, the sums can run to thousands of rows: `jkz stats` has them.
        Ok(s) => {
            json!({"tools": s.tools, "families": s.families, "total": s.total, "bad_lines": s.bad_lines})
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Value::Null,
        Err(e) => json!({"error": e.to_string()}),
    };
    let live_session = match read_live_session(state) {
        Ok(s) => json!({"session": s, "error": null}),
        Err(e) => json!({"session": null, "error": e}),
    };
    json!({
        "registry": registry(state),
        "circuits": circuits,
        "locks": locks,
        "savings": savings,
        "live_session": live_session,
    })
}

/// The live chats and their claims, read-only; empty without a registry.
fn registry(state: &StateDir) -> Value {
    use crate::clock::{now, timestamp};
    // A page refresh waits no longer than a hook on a team registry.
    let bound = crate::registry::Bound::Hook(std::time::Instant::now() + HOOK_LOCK_WAIT);
    let (present, listed) = crate::registry::backend::chats_for_observer(state.path(), bound);
    let (listed, error) = match listed {
        Ok(listed) => (listed, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let backend = match crate::team::backend(state.path()) {
        Ok(crate::team::Backend::Team(url, _)) => {
            // How fresh this machine's copy is, which the guard reads.
            let now_ms = crate::clock::now_ms();
            let replica =
                crate::registry::replica::freshness(state.path(), &url.masked()).map(|f| {
                    json!({
                        "refreshed": timestamp(f.checked_ms.div_euclid(1000)),
                        "age_ms": (now_ms - f.checked_ms).max(0),
                        "fresh": f.is_fresh(now_ms),
                        "text": f.describe(now_ms),
                    })
                });
            json!({"kind": "team", "url": url.masked(), "replica": replica})
        }
        Ok(crate::team::Backend::Local) => json!({"kind": "local", "path": state.join(CHAT_DB)}),
        Err(e) => json!({"kind": "unusable", "error": e}),
    };
    let now = now();
    let mut claims = Vec::new();
    let chats: Vec<Value> = listed
        .iter()
        .map(|(c, held)| {
            for k in held {
                claims.push(json!({
                    "issue": k.issue,
                    "session_id": k.session_id,
                    "worktree": k.worktree,
                    "host": k.host,
                    "acquired": timestamp(k.acquired),
                }));
            }
            crate::registry::cmd::chat_json(c, held, now)
        })
        .collect();
    json!({"present": present, "backend": backend, "error": error, "chats": chats, "claims": claims})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_ids_never_name_a_path() {
        for bad in ["", "..", "../x", "a/b", ".index", "a\\b", "x\0y", "%2e%2e"] {
            assert!(!is_record_id(bad), "{bad:?}");
        }
        assert!(is_record_id("20250101T000000.000Z-42-judge-123"));
    }
}
