//! The registry's storage, whichever backend holds it: `state/chat.db`
//! ([`super::db::Registry`], the default) or, in team mode, PostgreSQL
//! ([`crate::team::registry::TeamRegistry`]). The rules (who is live, which
//! claim stands in the way) are the same code for both; a [`Store`] only
//! reads and writes, one transaction per call.
//!
//! [`with_registry`] chooses the backend ([`crate::team::backend`]) and runs
//! a caller's operation on it within the caller's [`Bound`].

use std::path::Path;
use std::time::Instant;

use super::chat::{Chat, Client, Place};
use super::db::{Claim, Claimed, Holder, Released};
use super::RegistryError;
use crate::state_dir::layout::CHAT_DB;
use crate::team::{Backend, Budget};

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
    /// [`super::HEARTBEAT_EVERY`] s; an unknown chat is registered at
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

/// How long a caller may wait on the registry.
#[derive(Clone, Copy, Debug)]
pub enum Bound {
    /// A hook, whose local wait ends at the instant given; in team mode the
    /// hook's budget ([`Budget::hook`]).
    Hook(Instant),
    /// A command, likewise ([`Budget::command`]).
    Command(Instant),
}

impl Bound {
    /// The local backend's deadline for waiting on other writers.
    pub fn deadline(self) -> Instant {
        match self {
            Bound::Hook(at) | Bound::Command(at) => at,
        }
    }

    /// The team backend's budget.
    pub fn budget(self) -> Budget {
        match self {
            Bound::Hook(_) => Budget::hook(),
            Bound::Command(_) => Budget::command(),
        }
    }
}

/// Runs `op` on the registry of the state directory `root`: `state/chat.db`
/// (created when missing, rebuilt when corrupt: the note says so), or the
/// team registry. An unusable team URL is an error, never the local file.
pub fn with_registry<T, F>(
    root: &Path,
    bound: Bound,
    op: F,
) -> Result<(T, Option<String>), RegistryError>
where
    T: Send + 'static,
    F: FnMut(&mut dyn Store) -> Result<T, StoreError> + Send + 'static,
{
    match crate::team::backend(root).map_err(RegistryError::Unavailable)? {
        Backend::Local => super::db::with_local_registry(root, bound.deadline(), op),
        Backend::Team(url, _) => {
            crate::team::registry::with_team_registry(&url, bound.budget(), op)
                .map(|t| (t, None))
                .map_err(|e| RegistryError::Unavailable(e.to_string()))
        }
    }
}

/// False only when the registry certainly holds no claim: the local
/// backend's `chat.db` does not exist yet (so a hook can answer without
/// opening anything). A team registry, or a backend that cannot be chosen,
/// may.
pub fn may_hold_claims(root: &Path) -> bool {
    match crate::team::backend(root) {
        Ok(Backend::Local) => root.join(CHAT_DB).exists(),
        _ => true,
    }
}

/// Every chat not gone, with its claims.
pub type ChatsAndClaims = Vec<(Chat, Vec<Claim>)>;

/// Every chat not gone, with its claims, for observers that must leave the
/// state as they found it: `state/chat.db` read-only, or the team registry
/// without migrating it. `present` says whether there is a registry at all.
pub fn chats_for_observer(
    root: &Path,
    bound: Bound,
) -> (bool, Result<ChatsAndClaims, RegistryError>) {
    match crate::team::backend(root) {
        Err(why) => (true, Err(RegistryError::Unavailable(why))),
        Ok(Backend::Local) => {
            let path = root.join(CHAT_DB);
            (
                path.is_file(),
                super::db::chats_read_only_until(&path, bound.deadline()),
            )
        }
        Ok(Backend::Team(url, _)) => (
            true,
            crate::team::registry::chats_read_only(&url, bound.budget())
                .map_err(|e| RegistryError::Unavailable(e.to_string())),
        ),
    }
}
