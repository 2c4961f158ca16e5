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
//! ([`postgres`]), shared by every machine, with the same rules
//! ([`decide`]) and the same records ([`record`]); `state/locks/`
//! ([`files`]) is then not used. This file chooses the backend; neither
//! backend knows the other.

mod files;
mod postgres;
mod record;

use std::io;
use std::time::Duration;

use crate::state_dir::StateDir;
use crate::team::{Backend, RegistryUrl};

pub use files::{list_files, lock_file, read};
pub use record::{
    decide, retry, validate, Acquired, LockRecord, LockState, Released, Request, DEFAULT_TTL,
};

/// The team registry's URL when team mode is on; an unusable one is an
/// error, never the local files.
fn team_url(state: &StateDir) -> io::Result<Option<RegistryUrl>> {
    match crate::team::backend(state.path()).map_err(io::Error::other)? {
        Backend::Local => Ok(None),
        Backend::Team(url, _) => Ok(Some(url)),
    }
}

/// Tries once to take the lock.
pub fn try_acquire(state: &StateDir, req: &Request) -> io::Result<Acquired> {
    validate(&req.kind, &req.name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if let Some(url) = team_url(state)? {
        return Ok(postgres::acquire(&url, req, Duration::ZERO)?);
    }
    files::try_acquire(state, req)
}

/// Takes the lock, retrying while it is busy for at most `wait`.
pub fn acquire(state: &StateDir, req: &Request, wait: Duration) -> io::Result<Acquired> {
    validate(&req.kind, &req.name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if let Some(url) = team_url(state)? {
        return Ok(postgres::acquire(&url, req, wait)?);
    }
    retry(wait, || files::try_acquire(state, req))
}

/// Releases the lock if `owner` holds it.
pub fn release(state: &StateDir, kind: &str, name: &str, owner: &str) -> io::Result<Released> {
    validate(kind, name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if let Some(url) = team_url(state)? {
        return Ok(postgres::release(&url, kind, name, owner)?);
    }
    files::release(state, kind, name, owner)
}

/// Every lock (in `state/locks/`, or the team registry's), sorted by name.
pub fn list(state: &StateDir) -> io::Result<Vec<LockRecord>> {
    if let Some(url) = team_url(state)? {
        return Ok(postgres::list(&url)?);
    }
    Ok(files::list_files(state)?
        .into_iter()
        .map(|(_, r)| r)
        .collect())
}

#[cfg(test)]
mod tests {
    use std::fs;

    use chrono::Utc;

    use super::*;
    use crate::state_dir::LOCKS_DIR;

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
