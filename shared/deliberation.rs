//! Deliberation records: the audit trail of every agent invocation.
//!
//! Truncation protects the live window, not the audit trail: `jkz run` and
//! `jkz-truncate --record` keep each invocation's complete, untruncated
//! answer in `state/deliberations/<UTC time>-<issue or none>-<role>-<pid>.json`,
//! so that weeks later "what did the Judge say on iteration 2?" has an exact
//! answer (`jkz deliberations show --issue N --role judge --iteration 2`).
//!
//! # The record
//!
//! One JSON object, written once, atomically (temp file, fdatasync, rename;
//! the directory is not synced, see [`write`]):
//! `role`, `timestamp`, `status` (`ok`, `failed`, `timeout`,
//! `interrupted`, `short-circuited`), `issue`, `pr`, `phase`, `iteration`,
//! `model`, `endpoint`, `service`, `mode`, `command` (argv; null for a
//! pipe), `exit_code`, `signal` (only for a run interrupted by one),
//! `duration_ms` (null for a pipe), `tokens`, `verdict`, then the response:
//! `response_bytes`, `response_sha256`, and either `response` (the text
//! itself, when it is valid UTF-8 of at most [`INLINE_MAX`] bytes) or
//! `response_file` (`context-offload/<sha256>.txt`, relative to the state
//! directory: content-addressed, write-once); `response_incomplete` (only
//! when it is not the whole answer) says why; `patterns_injected` (only for
//! `jkz run --inject-patterns`) the ids of the patterns CMD was given.
//!
//! A response file is written while the answer streams (memory stays
//! bounded) and renamed into place before the record is written, so a run
//! killed at any moment leaves the record and its response whole or absent
//! (at worst a whole response file that no record names yet, or a temp
//! file `jkz gc` removes). `jkz gc` never removes a record, nor a response
//! file a record names.
//!
//! `tokens` is never invented: it is what the wrapper reported through
//! [`USAGE_FILE_VARIABLE`] (see [`usage`]), else null. `verdict` is the
//! `verdict` field of the last `verdict-json` block of what was printed (the
//! truncated output, where the newest verdict is placed first), else null.
//!
//! Listing reads an index, not the records: see [`index`].

pub mod index;
pub mod record;
pub mod response;
pub mod show;
pub mod usage;
pub mod verdict;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::atomic::{AtomicFile, Durability};
use crate::events::{emit_at, Event};
use crate::state_dir::{StateDir, DELIBERATIONS_DIR};

pub use record::{Context, Record, Status, INLINE_MAX, MAX_RECORD};
pub use usage::USAGE_FILE_VARIABLE;

/// `state/deliberations/`, or `None` (with a one-line warning from
/// `program`) when no record can be kept: a missing state directory, or one
/// that cannot be written, never stops an answer.
pub fn records_dir(state: &StateDir, program: &str) -> Option<PathBuf> {
    match dir(state) {
        Ok(Some(dir)) => Some(dir),
        Ok(None) => {
            eprintln!(
                "{program}: warning: no deliberation record is kept: {}",
                state.missing()
            );
            None
        }
        Err(e) => {
            eprintln!(
                "{program}: warning: {}: {e}; no deliberation record is kept",
                state.join(DELIBERATIONS_DIR).display()
            );
            None
        }
    }
}

/// Writes `record` into `dir` (see [`write`]); a failure is a one-line
/// warning from `program`. Returns the record's path, when it was written.
pub fn keep_record(
    dir: Option<&Path>,
    id: &str,
    record: &Record,
    program: &str,
) -> Option<PathBuf> {
    let dir = dir?;
    let written = write(dir, id, record)
        .inspect_err(|e| {
            eprintln!("{program}: warning: the deliberation record {id} could not be written: {e}")
        })
        .ok();
    log_finished(dir, id, record);
    written
}

/// Logs that a deliberation record `id` was kept in `records_dir`
/// (`state/deliberations/`): `agent.finished`, and `verdict.recorded`
/// when the answer carried a verdict.
fn log_finished(records_dir: &Path, id: &str, record: &Record) {
    let records = records_dir
        .file_name()
        .is_some_and(|n| n == DELIBERATIONS_DIR);
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

/// `state/deliberations/`, created when the state directory may be written
/// (see [`StateDir::ensure`]); `None` when there is none.
pub fn dir(state: &StateDir) -> io::Result<Option<PathBuf>> {
    state.ensure_subdir(DELIBERATIONS_DIR)
}

/// A file-name-safe rendering of a role: `[A-Za-z0-9._-]`, at most 64
/// bytes, `none` when absent or empty.
fn name_part(role: Option<&str>) -> String {
    let safe: String = role
        .unwrap_or("")
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '_',
        })
        .take(64)
        .collect();
    match safe.trim_start_matches('.') {
        "" => "none".to_string(),
        s => s.to_string(),
    }
}

/// The record's id (its file name without `.json`):
/// `<UTC time>-<issue or none>-<role>-<pid>`.
pub fn record_id(record: &Record, started: chrono::DateTime<chrono::Utc>, pid: u32) -> String {
    let issue = record
        .issue
        .map_or_else(|| "none".to_string(), |n| n.to_string());
    format!(
        "{}-{issue}-{}-{pid}",
        started.format("%Y%m%dT%H%M%S%.3fZ"),
        name_part(record.role.as_deref())
    )
}

/// Writes `record` into `dir` atomically, its content synced before the
/// rename, under `id` (or `id-2`, `id-3`, … when that is taken), and adds
/// it to the index. Returns the record's path.
///
/// The directory is not synced ([`Durability::Content`]): a power loss
/// within seconds of the write may lose the newest record, never leave half
/// of one. The sync it saves is a journal commit on every agent call
/// (0.15–0.2 ms on the reference machine, milliseconds on a busy disk), and
/// the response file the record names is not synced either.
pub fn write(dir: &Path, id: &str, record: &Record) -> io::Result<PathBuf> {
    let mut bytes = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
    bytes.push(b'\n');
    for n in 1u32.. {
        let name = match n {
            1 => format!("{id}.json"),
            n => format!("{id}-{n}.json"),
        };
        let path = dir.join(&name);
        let mut file = AtomicFile::create(&path)?.durability(Durability::Content);
        file.write_all(&bytes)?;
        if file.commit_new()? {
            let entry = index::Entry::of(name.trim_end_matches(".json"), record);
            // The index is a cache: a failed append is rebuilt by the next list.
            let _ = index::append(dir, &[entry]);
            return Ok(path);
        }
    }
    unreachable!("some name is free")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_file_names() {
        let t = chrono::DateTime::parse_from_rfc3339("2025-03-01T12:00:00.123Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let mut r = Record::new(&Context::default(), Status::Ok, t);
        assert_eq!(record_id(&r, t, 7), "20250301T120000.123Z-none-none-7");
        r.issue = Some(42);
        r.role = Some("../security reviewer".into());
        assert_eq!(
            record_id(&r, t, 7),
            "20250301T120000.123Z-42-_security_reviewer-7"
        );
    }
}
