//! Locks with a TTL: `state/locks/<kind>-<name>.json`, one per worktree or
//! pipeline, so that two runs never work on the same issue at once and a
//! crashed run stops blocking it.
//!
//! A lock records its owner (an id the caller chooses), the holding pid and
//! host, when it was acquired and when it expires. It is *reclaimable* once
//! it expired, or when its pid no longer runs on this host (see
//! [`crate::process`]); a reclaimable lock goes to the next acquirer, and
//! `jkz gc` removes it.
//!
//! Acquire and release are read-modify-writes of the lock file under its
//! writers' advisory lock ([`crate::json_file::lock_within`]), and the lock
//! file is replaced atomically: of any number of concurrent acquirers,
//! exactly one finds the lock free and writes itself in; the others find it
//! held. Release by anyone but the owner is refused. An owner acquiring its
//! own lock again renews it (a new expiry).
//!
//! In team mode ([`crate::team`]) the locks live in PostgreSQL instead
//! ([`crate::team::locks`]), shared by every machine, with the same rules
//! ([`decide`]) and the same records; `state/locks/` is then not used.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::atomic::write_atomic;
use crate::events::{emit, Event};
use crate::json_file::{lock_wait, lock_within};
use crate::process::Holder;
use crate::state_dir::{read_whole_state_file, StateDir, LOCKS_DIR};
use crate::team::{Backend, RegistryUrl};

/// Default TTL: 30 minutes, longer than an agent call, short enough that a
/// crashed run on another host stops blocking its issue within the hour.
pub const DEFAULT_TTL: u64 = 1800;

/// The largest lock file read (they are a few hundred bytes).
const MAX_LOCK_FILE: u64 = 64 * 1024;

/// One lock, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockRecord {
    pub kind: String,
    pub name: String,
    pub owner: String,
    #[serde(flatten)]
    pub holder: Holder,
    /// RFC 3339, UTC.
    pub acquired: String,
    /// RFC 3339, UTC: `acquired` + `ttl_s`.
    pub expires: String,
    pub ttl_s: u64,
}

/// Why a lock is no longer held, if it is not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockState {
    Held,
    Expired,
    /// Its pid no longer runs on this host.
    OwnerGone,
}

impl LockState {
    pub fn name(self) -> &'static str {
        match self {
            LockState::Held => "held",
            LockState::Expired => "expired",
            LockState::OwnerGone => "owner gone",
        }
    }
}

impl LockRecord {
    /// Held, expired, or left by a process that is gone.
    pub fn state(&self, now: DateTime<Utc>) -> LockState {
        let expired = DateTime::parse_from_rfc3339(&self.expires).map_or(true, |e| now >= e);
        if expired {
            LockState::Expired
        } else if self.holder.is_gone() {
            LockState::OwnerGone
        } else {
            LockState::Held
        }
    }

    /// `kind-name`, the file's stem.
    pub fn id(&self) -> String {
        format!("{}-{}", self.kind, self.name)
    }
}

/// A lock to take: which, for whom, for how long.
#[derive(Clone, Debug)]
pub struct Request {
    pub kind: String,
    pub name: String,
    pub owner: String,
    /// The process whose life the lock follows.
    pub pid: u32,
    pub ttl: Duration,
}

/// What an acquire found.
#[derive(Debug)]
pub enum Acquired {
    /// Now held by the requester (`renewed`: it held it already).
    Taken { record: LockRecord, renewed: bool },
    /// Held by another owner.
    Busy(LockRecord),
}

/// What a release found.
#[derive(Debug, PartialEq, Eq)]
pub enum Released {
    Released,
    /// There was no lock.
    NotHeld,
    /// Held by another owner: left alone.
    Refused(LockRecord),
}

/// A kind is lower-case letters, digits and `_` (no `-`: it ends the kind in
/// the file name); a name is `[A-Za-z0-9._-]`, at most 128 bytes, not
/// starting with `.`.
pub fn validate(kind: &str, name: &str) -> Result<(), String> {
    let kind_ok = !kind.is_empty()
        && kind.len() <= 32
        && kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !kind_ok {
        return Err(format!(
            "lock kind '{kind}': use lower-case letters, digits and _ (e.g. pipeline, worktree)"
        ));
    }
    if !crate::file_name::is_safe_visible(name) {
        return Err(format!(
            "lock name '{name}': use letters, digits, '.', '_' and '-' (at most 128, not starting with '.')"
        ));
    }
    Ok(())
}

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

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The latest expiry a lock records: the last millisecond RFC 3339 can
/// write (year 9999). A later one would be stamped in a form its readers
/// reject, and the lock would read as expired at once.
fn latest_expiry() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("9999-12-31T23:59:59.999Z")
        .expect("a valid time")
        .with_timezone(&Utc)
}

/// When a lock taken at `now` for `ttl` expires: clamped to
/// [`latest_expiry`], so a TTL of any length holds the lock (at worst until
/// year 9999) and never stamps an unreadable, instantly-expired time.
fn expiry(now: DateTime<Utc>, ttl: Duration) -> DateTime<Utc> {
    let latest = latest_expiry();
    chrono::Duration::from_std(ttl)
        .ok()
        .and_then(|ttl| now.checked_add_signed(ttl))
        .map_or(latest, |t| t.min(latest))
}

/// The team registry's URL when team mode is on; an unusable one is an
/// error, never the local files.
fn team_url(state: &StateDir) -> io::Result<Option<RegistryUrl>> {
    match crate::team::backend(state.path()).map_err(io::Error::other)? {
        Backend::Local => Ok(None),
        Backend::Team(url, _) => Ok(Some(url)),
    }
}

/// What an acquire at `now` does with the lock as found (`current`): the
/// one rule both backends apply. `Taken` carries the record to write.
pub fn decide(current: Option<LockRecord>, req: &Request, now: DateTime<Utc>) -> Acquired {
    let renewed = match current {
        Some(held) if held.owner == req.owner => true,
        Some(held) if held.state(now) == LockState::Held => return Acquired::Busy(held),
        _ => false,
    };
    let record = LockRecord {
        kind: req.kind.clone(),
        name: req.name.clone(),
        owner: req.owner.clone(),
        holder: Holder::local(req.pid),
        acquired: stamp(now),
        expires: stamp(expiry(now, req.ttl)),
        ttl_s: req.ttl.as_secs(),
    };
    Acquired::Taken { record, renewed }
}

/// Tries once to take the lock.
pub fn try_acquire(state: &StateDir, req: &Request) -> io::Result<Acquired> {
    validate(&req.kind, &req.name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if let Some(url) = team_url(state)? {
        return Ok(crate::team::locks::acquire(&url, req, Duration::ZERO)?);
    }
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

/// Takes the lock, retrying while it is busy for at most `wait`.
pub fn acquire(state: &StateDir, req: &Request, wait: Duration) -> io::Result<Acquired> {
    validate(&req.kind, &req.name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if let Some(url) = team_url(state)? {
        return Ok(crate::team::locks::acquire(&url, req, wait)?);
    }
    retry(wait, || try_acquire(state, req))
}

/// Calls `attempt` until it does not find the lock busy, for at most `wait`
/// (pausing 2 ms, doubling up to 50 ms, between attempts).
pub fn retry<E>(
    wait: Duration,
    mut attempt: impl FnMut() -> Result<Acquired, E>,
) -> Result<Acquired, E> {
    // A wait past what the clock can count (`--wait inf`) has no deadline.
    let deadline = Instant::now().checked_add(wait);
    let mut pause = Duration::from_millis(2);
    loop {
        let outcome = attempt()?;
        let now = Instant::now();
        match outcome {
            Acquired::Busy(_) if deadline.is_none_or(|d| now < d) => {
                let left = deadline.map_or(pause, |d| d - now);
                std::thread::sleep(pause.min(left));
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            outcome => return Ok(outcome),
        }
    }
}

/// Releases the lock if `owner` holds it.
pub fn release(state: &StateDir, kind: &str, name: &str, owner: &str) -> io::Result<Released> {
    validate(kind, name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if let Some(url) = team_url(state)? {
        return Ok(crate::team::locks::release(&url, kind, name, owner)?);
    }
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

/// Every lock (in `state/locks/`, or the team registry's), sorted by name.
pub fn list(state: &StateDir) -> io::Result<Vec<LockRecord>> {
    if let Some(url) = team_url(state)? {
        return Ok(crate::team::locks::list(&url)?);
    }
    Ok(list_files(state)?.into_iter().map(|(_, r)| r).collect())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn req(owner: &str, pid: u32, ttl: u64) -> Request {
        Request {
            kind: "pipeline".into(),
            name: "42".into(),
            owner: owner.into(),
            pid,
            ttl: Duration::from_secs(ttl),
        }
    }

    #[test]
    fn one_owner_at_a_time_renewal_and_refused_release() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        let me = std::process::id();
        let taken = try_acquire(&state, &req("a", me, 60)).unwrap();
        assert!(matches!(taken, Acquired::Taken { renewed: false, .. }));
        let busy = try_acquire(&state, &req("b", me, 60)).unwrap();
        assert!(matches!(busy, Acquired::Busy(ref r) if r.owner == "a"));
        let again = try_acquire(&state, &req("a", me, 60)).unwrap();
        assert!(matches!(again, Acquired::Taken { renewed: true, .. }));
        assert!(matches!(
            release(&state, "pipeline", "42", "b").unwrap(),
            Released::Refused(_)
        ));
        assert_eq!(
            release(&state, "pipeline", "42", "a").unwrap(),
            Released::Released
        );
        assert_eq!(
            release(&state, "pipeline", "42", "a").unwrap(),
            Released::NotHeld
        );
    }

    #[test]
    fn expired_and_orphaned_locks_are_reclaimed() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        let me = std::process::id();
        try_acquire(&state, &req("a", me, 0)).unwrap();
        let list = list(&state).unwrap();
        assert_eq!(list[0].state(Utc::now()), LockState::Expired);
        assert!(matches!(
            try_acquire(&state, &req("b", me, 60)).unwrap(),
            Acquired::Taken { renewed: false, .. }
        ));
        if fs::metadata("/proc/self/stat").is_ok() {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let pid = child.id();
            child.wait().unwrap();
            // b's lock now follows a process that is gone.
            fs::remove_file(lock_file(&state.join(LOCKS_DIR), "pipeline", "42")).unwrap();
            try_acquire(&state, &req("b", pid, 600)).unwrap();
            assert!(matches!(
                try_acquire(&state, &req("c", me, 60)).unwrap(),
                Acquired::Taken { .. }
            ));
        }
    }

    #[test]
    fn a_ttl_past_year_9999_holds_the_lock_until_then() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        let me = std::process::id();
        for ttl in [300_000_000_000, u64::MAX] {
            let Acquired::Taken { record, .. } = try_acquire(&state, &req("a", me, ttl)).unwrap()
            else {
                panic!("not taken");
            };
            assert_eq!(record.expires, "9999-12-31T23:59:59.999Z");
            assert_eq!(record.state(Utc::now()), LockState::Held);
            assert!(matches!(
                try_acquire(&state, &req("b", me, 60)).unwrap(),
                Acquired::Busy(_)
            ));
            release(&state, "pipeline", "42", "a").unwrap();
        }
    }

    #[test]
    fn names_that_are_not_file_names_are_refused() {
        assert!(validate("pipeline", "42").is_ok());
        assert!(validate("worktree", "i17-audit").is_ok());
        for (kind, name) in [
            ("pipe-line", "1"),
            ("", "1"),
            ("Pipeline", "1"),
            ("pipeline", ""),
            ("pipeline", "../x"),
            ("pipeline", ".hidden"),
            ("pipeline", "a/b"),
        ] {
            assert!(validate(kind, name).is_err(), "{kind} {name}");
        }
    }
}
