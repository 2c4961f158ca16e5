//! The `PostCompact` arm of `jkz-session-start`: after a client that hands
//! its hooks the summary compacted a session, checks which decision-critical
//! items the summary ([`EventKind::PostCompact`]) dropped, and records them
//! so the session's next `SessionStart` re-injects them first. (A client may
//! run a full compaction's `SessionStart` `compact` before its
//! `PostCompact`: the next one is then the `resume` of the session; the
//! client's module says which does.)
//!
//! The items checked are those the PreCompact hook gave the summarizer: the
//! digest of the snapshot this session's record points at (else the live
//! pipeline state's, without git). Which of them the summary kept is
//! [`summary_check::dropped`]'s rule.
//!
//! The result goes into the session's record
//! (`state/session-snapshots/<session_id>.json`, a locked atomic
//! read-modify-write that keeps every other field) as
//! `summary_dropped`: `{"snapshot", "checked_at", "trigger", "checked",
//! "dropped": [{"issue", "kind", "text"}]}`. `snapshot` is the record's
//! `last_pre_compact_snapshot` at the time: [`recorded`] hands the items
//! to SessionStart only while the record still points at that snapshot,
//! so a later compaction's SessionStart never gets an older summary's
//! gaps.
//!
//! Nothing is printed on stdout (a PostCompact hook has no say in the
//! session); nothing is written when the repository has no state directory,
//! nor for an empty summary (what a client sends after a compaction that
//! kept messages instead of summarizing them).

use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::digest::Digest;
use super::snapshot;
use super::summary_check::{self, DroppedItem};
use crate::atomic::Durability;
use crate::client::{EventKind, HookEvent};
use crate::hook::{self, Warnings};
use crate::json_file::{self, UpdateError};
use crate::json_type::json_type;
use crate::session_id::SessionId;
use crate::session_record;
use crate::state_dir::StateDir;

/// The session record's field it writes.
pub const RECORD_FIELD: &str = "summary_dropped";

/// What one PostCompact found, as stored in the session record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryCheck {
    /// The snapshot whose digest was checked (the record's
    /// `last_pre_compact_snapshot` then), or none (the live state was).
    pub snapshot: Option<String>,
    pub checked_at: String,
    pub trigger: Option<String>,
    /// How many items had decisive content to look for.
    pub checked: usize,
    pub dropped: Vec<DroppedItem>,
}

/// Runs the PostCompact arm on an event already read.
pub fn run(input: &HookEvent, warnings: &mut Warnings) {
    let EventKind::PostCompact { trigger, summary } = &input.kind else {
        return;
    };
    let summary = match summary {
        Some(Value::String(s)) => s,
        Some(other) => {
            warnings.warn(format!(
                "PostCompact: compact_summary is {}, not a string; nothing checked",
                json_type(other)
            ));
            return;
        }
        None => {
            warnings.warn(
                "PostCompact event without compact_summary (the client sends one); nothing checked",
            );
            return;
        }
    };
    if summary.trim().is_empty() {
        // A compaction that kept messages instead of writing a summary (the
        // client sends "" then): there is nothing to hold the items against.
        return;
    }
    let session = match input.session() {
        Some(Ok(id)) => id,
        Some(Err(e)) => {
            warnings.warn(format!("PostCompact: {e}; nothing recorded"));
            return;
        }
        None => {
            let why = match input.raw.raw.get("session_id") {
                Some(v) => format!("session_id is {}, not a string", json_type(v)),
                None => "no session_id".to_string(),
            };
            warnings.warn(format!("PostCompact: {why}; nothing recorded"));
            return;
        }
    };
    let state = StateDir::resolve(None, input.cwd.as_deref());
    hook::warn_state_problem(&state, warnings);
    match state.ensure_subdir(crate::state_dir::layout::SESSION_RECORD_DIR) {
        Ok(Some(_)) => {}
        Ok(None) => return, // The repository did not opt in.
        Err(e) => {
            warnings.warn(format!("PostCompact: {e}; nothing recorded"));
            return;
        }
    }
    let record = session_record::record_path(&state, &session);
    let snapshot = session_record::last_snapshot_name(&record);
    let digest = match digest_checked(&state, snapshot.as_deref()) {
        Ok(digest) => digest,
        Err(why) => {
            warnings.warn(format!("PostCompact: {why}; nothing checked"));
            return;
        }
    };
    let check = summary_check::dropped(&digest, summary);
    let found = SummaryCheck {
        snapshot,
        checked_at: Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        trigger: trigger.clone(),
        checked: check.checked,
        dropped: check.dropped,
    };
    if let Err(e) = store(&record, &session, &found) {
        warnings.warn(format!(
            "PostCompact: updating the session record {}: {e}",
            record.display()
        ));
    }
}

/// The digest the summarizer was given: the snapshot's, else the live
/// state's.
fn digest_checked(state: &StateDir, snapshot: Option<&str>) -> Result<Digest, String> {
    match snapshot {
        Some(name) => snapshot::read_head(&state.join(name))
            .map(|head| head.digest)
            .map_err(|e| format!("snapshot {name} cannot be used: {e}")),
        None => super::live::live_digest(state, None),
    }
}

/// Writes `found` into the record's [`RECORD_FIELD`], keeping the rest.
fn store(
    record: &std::path::Path,
    session: &SessionId,
    found: &SummaryCheck,
) -> Result<(), UpdateError> {
    let value = serde_json::to_value(found).expect("a summary check serializes");
    json_file::update_object_within(
        record,
        Durability::Content,
        json_file::HOOK_LOCK_WAIT,
        |r: &mut Map<String, Value>| {
            r.entry("session_id")
                .or_insert_with(|| Value::from(session.as_str()));
            r.insert(RECORD_FIELD.into(), value);
            Ok::<_, UpdateError>(())
        },
    )
}

/// The items the summary of this session's latest compaction dropped, when
/// the record holds a check of the snapshot it still points at.
pub fn recorded(state: &StateDir, session: &SessionId) -> Option<Vec<DroppedItem>> {
    let path = session_record::record_path(state, session);
    let bytes = crate::state_dir::read_state_file(&path, session_record::MAX_RECORD_BYTES).ok()?;
    let record: Map<String, Value> = serde_json::from_slice(&bytes).ok()?;
    let found: SummaryCheck = serde_json::from_value(record.get(RECORD_FIELD)?.clone()).ok()?;
    let points_at = record
        .get("last_pre_compact_snapshot")
        .and_then(Value::as_str);
    (found.snapshot.as_deref() == points_at).then_some(found.dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session_id::SessionId;

    fn check(snapshot: Option<&str>) -> SummaryCheck {
        SummaryCheck {
            snapshot: snapshot.map(str::to_string),
            checked_at: "T".into(),
            trigger: Some("manual".into()),
            checked: 6,
            dropped: vec![DroppedItem {
                issue: Some("42".into()),
                kind: summary_check::ItemKind::Verdicts,
                text: "review passed, QA failed; overall FAIL".into(),
            }],
        }
    }

    #[test]
    fn stored_checks_keep_the_record_and_are_read_back_while_current() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let id = SessionId::parse("s-1").unwrap();
        let path = session_record::record_path(&state, &id);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let snap = "pre-compact-20250101T000000.000Z-1.json";
        std::fs::write(
            &path,
            serde_json::json!({"next_steps": "x", "last_pre_compact_snapshot": snap}).to_string(),
        )
        .unwrap();
        store(&path, &id, &check(Some(snap))).unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["next_steps"], "x");
        assert_eq!(v[RECORD_FIELD]["dropped"][0]["kind"], "verdicts");
        assert_eq!(recorded(&state, &id).unwrap().len(), 1);
        // A later compaction moved the record on: the old check is stale.
        let newer = "pre-compact-20250102T000000.000Z-1.json";
        let mut v = v;
        v["last_pre_compact_snapshot"] = Value::from(newer);
        std::fs::write(&path, v.to_string()).unwrap();
        assert_eq!(recorded(&state, &id), None);
    }
}
