//! The registry's storage, whichever backend holds it: `state/chat.db`
//! ([`super::db::Registry`], the default) or, in team mode, PostgreSQL
//! ([`super::postgres::TeamRegistry`]). The rules (who is live, which
//! claim stands in the way: [`super::chat`], [`super::claim`]) are the same
//! code for both; a [`Store`] only reads and writes, one transaction per
//! call. [`super::backend`] chooses the backend.

use super::chat::{Chat, Client, Place};
use super::claim::{Claim, Claimed, Holder, Released};

/// What the registry stores, and every transaction on it.
pub trait Store {
    /// Registers a chat (or re-registers it: a resumed chat is live again),
    /// with its client when known; forgets chats gone for more than a day.
    fn register(
        &mut self,
        session: &str,
        place: &Place,
        client: Option<&Client>,
        now: i64,
    ) -> Result<(), StoreError>;
    /// Refreshes a chat's heartbeat (a write at most every
    /// [`super::chat::HEARTBEAT_EVERY`] s; an unknown chat is registered at
    /// `place()`); true when it wrote.
    fn heartbeat(
        &mut self,
        session: &str,
        place: &dyn Fn() -> Place,
        now: i64,
    ) -> Result<bool, StoreError>;
    /// Marks a chat gone and releases its claims; returns how many.
    fn end(&mut self, session: &str, now: i64) -> Result<usize, StoreError>;
    /// Claims `issue` (and `worktree`) for `session` (see
    /// [`super::db::Registry::claim`] for the rules).
    fn claim(
        &mut self,
        session: &str,
        issue: &str,
        worktree: Option<&str>,
        take: bool,
        place: &dyn Fn() -> Place,
        now: i64,
    ) -> Result<Claimed, StoreError>;
    /// The claim on `issue`, whoever holds it, with its chat.
    fn holder_of(&mut self, issue: &str) -> Result<Option<Holder>, StoreError>;
    /// Releases `session`'s claim on `issue`.
    fn release(&mut self, session: &str, issue: &str) -> Result<Released, StoreError>;
    /// Every chat not gone, with its claims, most recent heartbeat first.
    fn chats(&mut self) -> Result<Vec<(Chat, Vec<Claim>)>, StoreError>;
    /// Every claim held by a chat other than `session`, with its chat.
    fn claims_of_others(&mut self, session: &str) -> Result<Vec<Holder>, StoreError>;
    /// The claims of chats other than `session` covering `file` (in their
    /// worktree) or `issue`.
    fn claims_covering(
        &mut self,
        session: &str,
        file: Option<&str>,
        issue: Option<&str>,
    ) -> Result<Vec<Holder>, StoreError>;
    /// One chat by session id.
    fn chat(&mut self, session: &str) -> Result<Option<Chat>, StoreError>;
    /// Every chat whose recorded client is the process `pid` started at
    /// `pid_start`, ended ones too (a client outlives the chats it ran:
    /// [`super::identity`]), those not ended first, then the most recent
    /// heartbeat.
    fn chats_of_client(&mut self, pid: i64, pid_start: i64) -> Result<Vec<Chat>, StoreError>;
    /// Forgets chat `session` when it holds no claim and its heartbeat is
    /// still `heartbeat`, as it was judged (a chat that beat or claimed
    /// since is kept); true when it went ([`super::prune`]).
    fn forget(&mut self, session: &str, heartbeat: i64) -> Result<bool, StoreError>;
}

/// The questions the PreToolUse guard asks of the registry: which other
/// chats' claims a change could run into. Any [`Store`] answers them
/// ([`ThroughStore`]); in team mode, so does this machine's replica of the
/// team registry ([`super::replica`]) while it is fresh. Nothing here
/// writes, so nothing is ever decided from the replica.
pub trait GuardReads {
    /// See [`Store::claims_of_others`].
    fn claims_of_others(&mut self, session: &str) -> Result<Vec<Holder>, StoreError>;
    /// See [`Store::claims_covering`].
    fn claims_covering(
        &mut self,
        session: &str,
        file: Option<&str>,
        issue: Option<&str>,
    ) -> Result<Vec<Holder>, StoreError>;
}

/// A [`Store`] asked only the guard's questions.
pub struct ThroughStore<'a>(pub &'a mut dyn Store);

impl GuardReads for ThroughStore<'_> {
    fn claims_of_others(&mut self, session: &str) -> Result<Vec<Holder>, StoreError> {
        self.0.claims_of_others(session)
    }

    fn claims_covering(
        &mut self,
        session: &str,
        file: Option<&str>,
        issue: Option<&str>,
    ) -> Result<Vec<Holder>, StoreError> {
        self.0.claims_covering(session, file, issue)
    }
}

/// A failed transaction.
#[derive(Debug)]
pub enum StoreError {
    Sqlite(rusqlite::Error),
    Team(crate::team::TeamError),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        StoreError::Sqlite(e)
    }
}

impl From<crate::team::TeamError> for StoreError {
    fn from(e: crate::team::TeamError) -> StoreError {
        StoreError::Team(e)
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Sqlite(e) => e.fmt(f),
            StoreError::Team(e) => e.fmt(f),
        }
    }
}

/// Why the registry could not be used.
#[derive(Debug)]
pub enum RegistryError {
    /// Opening, reading or writing failed (a read-only directory, a full
    /// disk, a link in the file's place): nothing was changed.
    Unavailable(String),
}

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegistryError::Unavailable(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for RegistryError {}
