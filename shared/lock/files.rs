//! Locks as files: `state/locks/<kind>-<name>.json`, the local backend.
//!
//! Acquire and release are read-modify-writes of the lock file under its
//! writers' advisory lock ([`crate::json_file::lock_within`]), and the lock
//! file is replaced atomically: of any number of concurrent acquirers,
//! exactly one finds the lock free and writes itself in. Each change is
//! logged to the event log.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chrono::Utc;
use serde_json::json;

use super::record::{decide, Acquired, LockRecord, Released, Request};
use crate::atomic::write_atomic;
use crate::events::{emit, Event};
use crate::json_file::{lock_wait, lock_within};
use crate::state_dir::{read_whole_state_file, StateDir, LOCKS_DIR};

/// The largest lock file read (they are a few hundred bytes).
const MAX_LOCK_FILE: u64 = 64 * 1024;

/// `state/locks/<kind>-<name>.json`.
pub fn lock_file(locks: &Path, kind: &str, name: &str) -> PathBuf {
    locks.join(format!("{kind}-{name}.json"))
}

/// Reads a lock file; `None` when there is none. A file that is not a lock
/// record counts as no lock (it is replaced by the next acquire).
pub fn read(path: &Path) -> io::Result<Option<LockRecord>> {
    match read_whole_state_file(path, MAX_LOCK_FILE) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn locks_dir(state: &StateDir) -> io::Result<PathBuf> {
    state
        .ensure_subdir(LOCKS_DIR)?
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, state.missing()))
}

/// Tries once to take the lock in `state/locks/` (`req` is valid).
pub fn try_acquire(state: &StateDir, req: &Request) -> io::Result<Acquired> {
    let path = lock_file(&locks_dir(state)?, &req.kind, &req.name);
    let _guard = lock_within(&path, lock_wait())?;
    let current = read(&path)?;
    let outcome = decide(current.clone(), req, Utc::now());
    if let Acquired::Taken { record, renewed } = &outcome {
        let mut bytes = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
        bytes.push(b'\n');
        write_atomic(&path, &bytes)?;
        if !renewed {
            log_acquired(state, record, current.as_ref());
        }
    }
    Ok(outcome)
}

/// Logs that a lock was taken: `lock.acquired`, or `lock.reclaimed` when it was
/// taken from a holder that expired or died (`previous`).
fn log_acquired(state: &StateDir, record: &LockRecord, previous: Option<&LockRecord>) {
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

/// Logs that a lock was released by its owner.
fn log_released(state: &StateDir, kind: &str, name: &str, owner: &str) {
    let event = Event::new("lock.released")
        .issue(lock_issue(kind, name))
        .payload(json!({"kind": kind, "name": name, "owner": owner}));
    emit(state, event);
}

/// The issue a lock is for: a pipeline lock named by an issue number.
fn lock_issue(kind: &str, name: &str) -> Option<String> {
    (kind == "pipeline")
        .then(|| crate::pipeline::IssueNumber::parse(name).ok())
        .flatten()
        .map(|n| n.as_str().to_string())
}

/// Releases the lock in `state/locks/` if `owner` holds it (`kind` and
/// `name` are valid).
pub fn release(state: &StateDir, kind: &str, name: &str, owner: &str) -> io::Result<Released> {
    let path = lock_file(&state.join(LOCKS_DIR), kind, name);
    if !state.join(LOCKS_DIR).is_dir() {
        return Ok(Released::NotHeld);
    }
    let _guard = lock_within(&path, lock_wait())?;
    match read(&path)? {
        None if !path.exists() => Ok(Released::NotHeld),
        Some(held) if held.owner != owner => Ok(Released::Refused(held)),
        _ => match fs::remove_file(&path) {
            Ok(()) => {
                log_released(state, kind, name, owner);
                Ok(Released::Released)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Released::NotHeld),
            Err(e) => Err(e),
        },
    }
}

/// Every lock file in `state/locks/` (path and record), sorted by name.
pub fn list_files(state: &StateDir) -> io::Result<Vec<(PathBuf, LockRecord)>> {
    let dir = state.join(LOCKS_DIR);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    crate::state_dir::check_listed_dir(&dir)?;
    let mut out = Vec::new();
    for entry in fs::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        if let Ok(Some(record)) = read(&entry.path()) {
            out.push((entry.path(), record));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}
