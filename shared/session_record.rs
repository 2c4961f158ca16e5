//! The per-session record `state/session-snapshots/<session_id>.json`.
//!
//! One JSON object per Claude Code session, written by several owners, each
//! updating only its own top-level fields through a locked read-modify-write
//! ([`crate::json_file::update_object`]), so every other field survives:
//!
//! | field | owner | meaning |
//! |---|---|---|
//! | `session_id` | first writer | the session's id (same as the file name) |
//! | `compaction_count` | `jkz-pre-compact` | compactions seen for this session (integer) |
//! | `last_compaction_at` | `jkz-pre-compact` | RFC 3339 UTC time of the latest one |
//! | `last_compaction_trigger` | `jkz-pre-compact` | `manual` or `auto` (as the client said) |
//! | `last_pre_compact_snapshot` | `jkz-pre-compact` | file name (in `state/`) of its snapshot |
//! | anything else | `jkz-session` (`/jkz:save`) | completed work, decisions, next steps, … |
//!
//! The snapshot is stored as a bare file name, never a path, so a record
//! edited by hand cannot point a reader outside `state/`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::atomic::Durability;
use crate::json_file::{self, PendingUpdate, UpdateError};
use crate::session_id::SessionId;
use crate::state_dir::StateDir;

/// The subdirectory of the state directory holding session records.
use crate::state_dir::layout::SESSION_RECORD_DIR;

/// Where a session's record lives (the directory may not exist yet).
pub fn record_path(state: &StateDir, session: &SessionId) -> PathBuf {
    state
        .join(SESSION_RECORD_DIR)
        .join(format!("{}.json", session.as_str()))
}

/// What one compaction adds to the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionNudge<'a> {
    pub at: &'a str,
    pub trigger: Option<&'a str>,
    /// The pre-compact snapshot's file name in `state/`.
    pub snapshot: Option<&'a str>,
}

/// Counts one compaction in the record at `path` (created when missing),
/// leaving every other field untouched. Returns the new count.
///
/// Written with [`Durability::Content`]: a power loss within seconds may
/// undo the nudge (the record is then one compaction behind, like its
/// snapshot, which is written the same way), never leave half a record.
pub fn nudge_compaction(
    path: &Path,
    session: &SessionId,
    nudge: &CompactionNudge,
) -> Result<u64, UpdateError> {
    // Bounded wait: a frozen holder must not hold up compaction.
    json_file::update_object_within(
        path,
        Durability::Content,
        json_file::HOOK_LOCK_WAIT,
        |record| Ok::<_, UpdateError>(count_compaction(record, session, nudge)),
    )
}

/// [`nudge_compaction`] written and synced, but put in place only by
/// [`PendingUpdate::commit`]: the hook prepares it while the snapshot it
/// names is being finished, and commits it once that snapshot is in place,
/// so the record never names a snapshot that is not there. The record's
/// lock is held until then: prepare it only when the commit is
/// milliseconds away.
pub fn prepare_nudge(
    path: &Path,
    session: &SessionId,
    nudge: &CompactionNudge,
) -> Result<(u64, PendingUpdate), UpdateError> {
    json_file::prepare_update_within(
        path,
        Durability::Content,
        json_file::HOOK_LOCK_WAIT,
        |record| Ok::<_, UpdateError>(count_compaction(record, session, nudge)),
    )
}

/// Counts one compaction in `record`; returns the new count.
fn count_compaction(
    record: &mut Map<String, Value>,
    session: &SessionId,
    nudge: &CompactionNudge,
) -> u64 {
    record
        .entry("session_id")
        .or_insert_with(|| Value::from(session.as_str()));
    let count = record
        .get("compaction_count")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        + 1;
    record.insert("compaction_count".into(), Value::from(count));
    record.insert("last_compaction_at".into(), Value::from(nudge.at));
    record.insert(
        "last_compaction_trigger".into(),
        nudge.trigger.map(Value::from).unwrap_or(Value::Null),
    );
    record.insert(
        "last_pre_compact_snapshot".into(),
        nudge.snapshot.map(Value::from).unwrap_or(Value::Null),
    );
    count
}

/// The most bytes read from a session record (real ones are a few KiB).
pub const MAX_RECORD_BYTES: u64 = 64 * 1024 * 1024;

/// The snapshot file name the record points at, if it is one of ours (a bare
/// `pre-compact-….json` name; anything else is ignored).
pub fn last_snapshot_name(path: &Path) -> Option<String> {
    let bytes = crate::state_dir::read_state_file(path, MAX_RECORD_BYTES).ok()?;
    let record: Value = serde_json::from_slice(&bytes).ok()?;
    let name = record.get("last_pre_compact_snapshot")?.as_str()?;
    crate::state_dir::layout::is_snapshot_name(name).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nudge_counts_and_keeps_other_fields() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let id = SessionId::parse("s-1").unwrap();
        let path = record_path(&state, &id);
        assert_eq!(path, tmp.path().join("session-snapshots/s-1.json"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, r#"{"decisions":["keep"],"next_steps":"x"}"#).unwrap();
        let snap = "pre-compact-20250101T000000.000Z-1.json";
        let nudge = CompactionNudge {
            at: "T1",
            trigger: Some("manual"),
            snapshot: Some(snap),
        };
        assert_eq!(nudge_compaction(&path, &id, &nudge).unwrap(), 1);
        let nudge = CompactionNudge { at: "T2", ..nudge };
        assert_eq!(nudge_compaction(&path, &id, &nudge).unwrap(), 2);
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "decisions",
                "next_steps",
                "session_id",
                "compaction_count",
                "last_compaction_at",
                "last_compaction_trigger",
                "last_pre_compact_snapshot"
            ]
        );
        assert_eq!(v["decisions"][0], "keep");
        assert_eq!(v["last_compaction_at"], "T2");
        assert_eq!(last_snapshot_name(&path).as_deref(), Some(snap));
    }

    #[test]
    fn a_record_pointing_outside_state_is_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("r.json");
        for bad in [
            "../../etc/passwd",
            "/etc/passwd",
            "pre-compact-x/../../y.json",
        ] {
            std::fs::write(
                &path,
                serde_json::json!({ "last_pre_compact_snapshot": bad }).to_string(),
            )
            .unwrap();
            assert_eq!(last_snapshot_name(&path), None, "{bad}");
        }
    }
}
