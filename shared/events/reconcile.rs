//! Direct writers, reconciled: pipeline scripts may write
//! `state/pipeline/<N>.json` themselves. A change of a tracked field
//! ([`TRACKED_FIELDS`]: the phase, the verdicts, the iteration counts) that
//! the log does not know becomes an event the next time a jkz process looks
//! (`jkz events`, `jkz metrics`, `jkz slo check`, the observer, the
//! `SessionStart` hook), stamped with the time it was seen and marked
//! `"direct": true`.
//!
//! What the log knows of each field comes from the log itself (the index's
//! `fields`, derived from `phase.changed` and `state.changed`), so jkz's own
//! writes are never mistaken for direct ones, and rebuilding the index
//! changes nothing. Only files whose size or modification time changed
//! since they were last compared are read again.
//!
//! Races: `jkz state set` appends its event while it still holds the
//! pipeline file's lock, right after the new file is renamed into place. A
//! file that differs from the log is compared again under that lock (after
//! catching up the index), so a write in progress is never taken for a
//! direct one.
//! One reconciler runs at a time (`events/.reconcile.lock`); another that
//! finds it busy leaves the work to it.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::index::{Index, TRACKED_FIELDS};
use super::sources::field_change;
use crate::pipeline::{self, IssueNumber, PipelineDoc, PipelineFile};
use crate::state_dir::StateDir;

/// How long a reconciler waits for a pipeline file's writer (who holds its
/// lock for milliseconds).
const WRITER_WAIT: Duration = Duration::from_millis(500);

/// Compares every pipeline file of `state` (only issue `only`'s, when
/// given) with what the log knows and appends an event for each
/// difference; returns how many. `index` must be the index of `state`'s
/// log; it is caught up afterwards.
pub fn reconcile(state: &StateDir, index: &mut Index, only: Option<&str>) -> io::Result<u64> {
    let dir = state.join(super::EVENTS_DIR);
    let lock = crate::state_dir::open_lock_file(&dir.join(".reconcile.lock"))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => return Ok(0),
        Err(fs::TryLockError::Error(e)) => return Err(e),
    }
    let (files, seen) = match only.and_then(|n| IssueNumber::parse(n).ok()) {
        // One issue: its file alone, never the listing of thousands.
        Some(issue) => {
            let path = pipeline::pipeline_path(state, &issue);
            let seen = index
                .seen(issue.as_str())?
                .map(|s| (issue.as_str().to_string(), s));
            let file = PipelineFile {
                issue,
                path,
                regular: false,
            };
            (vec![file], seen.into_iter().collect())
        }
        None => (pipeline::list(state)?, index.all_seen()?),
    };
    let mut stamps = Vec::new();
    let mut differing = Vec::new();
    for file in &files {
        let Some(stamp) = stamp_of(&file.path) else {
            continue;
        };
        if seen.get(file.issue.as_str()) == Some(&stamp) {
            continue;
        }
        match differences(index, file)?.is_empty() {
            true => stamps.push((file.issue.as_str(), stamp)),
            false => differing.push(file),
        }
    }
    // Compared again under their writers' locks (see the module docs), a
    // batch at a time: one catch-up before, one after.
    let mut logged = 0;
    for batch in differing.chunks(BATCH) {
        let locked: Vec<_> = batch
            .iter()
            .filter_map(|f| {
                crate::json_file::lock_within(&f.path, WRITER_WAIT)
                    .ok()
                    .map(|l| (f, l))
            })
            .collect(); // a file whose writer is at it: next time
        index.catch_up()?;
        for (file, _) in &locked {
            let Some(stamp) = stamp_of(&file.path) else {
                continue;
            };
            let issue = file.issue.as_str();
            for (field, from, to) in differences(index, file)? {
                let event = field_change(issue, &field, from.as_ref(), &to, true);
                super::try_emit(state, &event)?;
                logged += 1;
            }
            stamps.push((issue, stamp));
        }
        index.catch_up()?;
    }
    index.set_seen_all(&stamps)?;
    Ok(logged)
}

/// How many differing pipeline files are locked and compared at once.
const BATCH: usize = 256;

/// A file's modification time (ns) and size, when it is a regular file.
fn stamp_of(path: &Path) -> Option<(i64, i64)> {
    let meta = fs::symlink_metadata(path).ok().filter(|m| m.is_file())?;
    Some((
        meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
        meta.len() as i64,
    ))
}

/// The most bytes of the log a hook indexes before it reconciles; with
/// more, it leaves both to the next reader.
const HOOK_BACKLOG: u64 = 1024 * 1024;

/// [`reconcile`] from a hook: only with an index that exists and is nearly
/// up to date (a hook never rebuilds one); a failure is one warning.
pub fn in_hook(state: &StateDir, warnings: &mut crate::hook::Warnings) {
    let dir = state.join(super::EVENTS_DIR);
    let done = Index::open_in_hook(&dir, HOOK_BACKLOG).and_then(|index| match index {
        Some(mut index) => reconcile(state, &mut index, None).map(|_| ()),
        None => Ok(()),
    });
    if let Err(e) = done {
        warnings.warn(format!(
            "reconciling pipeline files with the event log in {}: {e}",
            dir.display()
        ));
    }
}

/// The tracked fields of `file` whose value differs from the log's: (field,
/// the log's value, the file's). A file that cannot be read or parsed has
/// none (`jkz state validate` reports it).
fn differences(
    index: &Index,
    file: &PipelineFile,
) -> io::Result<Vec<(String, Option<Value>, Value)>> {
    let Some(doc) = read(&file.path, file) else {
        return Ok(Vec::new());
    };
    let known = index.fields(file.issue.as_str())?;
    Ok(changes(doc.data(), &known))
}

/// The differences between an issue's data and the known values (JSON text).
fn changes(
    data: Option<&serde_json::Map<String, Value>>,
    known: &HashMap<String, String>,
) -> Vec<(String, Option<Value>, Value)> {
    let mut out = Vec::new();
    for field in TRACKED_FIELDS {
        let now = data
            .and_then(|d| d.get(field))
            .cloned()
            .unwrap_or(Value::Null);
        let was = known
            .get(field)
            .and_then(|t| serde_json::from_str::<Value>(t).ok());
        if was.as_ref().unwrap_or(&Value::Null) != &now {
            out.push((field.to_string(), was, now));
        }
    }
    out
}

fn read(path: &Path, file: &PipelineFile) -> Option<PipelineDoc> {
    let bytes = crate::state_dir::read_state_file(path, pipeline::MAX_PIPELINE_FILE).ok()?;
    if bytes.len() as u64 > pipeline::MAX_PIPELINE_FILE {
        return None;
    }
    PipelineDoc::parse(file.issue.clone(), &bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_tracked_fields_that_differ_are_changes() {
        let data = json!({"current_phase": "build", "qa_passed": "true", "steps": {}});
        let mut known = HashMap::new();
        known.insert("current_phase".to_string(), "\"plan\"".to_string());
        known.insert("qa_passed".to_string(), "\"true\"".to_string());
        known.insert("review_passed".to_string(), "\"false\"".to_string());
        let got = changes(data.as_object(), &known);
        assert_eq!(
            got,
            vec![
                ("current_phase".into(), Some(json!("plan")), json!("build")),
                ("review_passed".into(), Some(json!("false")), Value::Null),
            ]
        );
        assert!(changes(None, &HashMap::new()).is_empty());
    }
}
