//! What a lock is and how an acquire is decided: the record both backends
//! store (a file in `state/locks/`, [`super::files`]; a row of `jkz_locks`,
//! [`super::postgres`]), the one rule they apply ([`decide`]) and the wait
//! between attempts ([`retry`]).

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::process::Holder;

/// Default TTL: 30 minutes, longer than an agent call, short enough that a
/// crashed run on another host stops blocking its issue within the hour.
pub const DEFAULT_TTL: u64 = 1800;

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
