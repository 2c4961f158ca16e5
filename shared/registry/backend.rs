//! Which backend holds the registry: `state/chat.db` ([`super::db`]) or, in
//! team mode ([`crate::team::backend`]), PostgreSQL ([`super::postgres`]).
//! [`with_registry`] runs a caller's operation on it within the caller's
//! [`Bound`]; [`with_guard_reads`] answers the PreToolUse guard's questions,
//! in team mode from this machine's replica while it is fresh
//! ([`super::replica`]). Neither backend knows the other; only this file
//! knows both.

use std::path::Path;
use std::time::Instant;

use super::chat::Chat;
use super::claim::Claim;
use super::replica;
use super::store::{GuardReads, RegistryError, Store, StoreError, ThroughStore};
use crate::state_dir::layout::CHAT_DB;
use crate::team::{Backend, Budget};

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
        Backend::Team(url, _) => with_team(root, &url, bound, op),
    }
}

/// `op` on the team registry at `url`, then the snapshot the same
/// connection read stored in the replica in `root` (a replica that cannot
/// be written is the note; the answer stands). A hook leaves a copy
/// refreshed under [`replica::REFRESH_AFTER_MS`] ago as it is.
fn with_team<T, F>(
    root: &Path,
    url: &crate::team::RegistryUrl,
    bound: Bound,
    op: F,
) -> Result<(T, Option<String>), RegistryError>
where
    T: Send + 'static,
    F: FnMut(&mut dyn Store) -> Result<T, StoreError> + Send + 'static,
{
    let server = url.masked();
    let known = replica::known(root, &server);
    let unavailable = |e: crate::team::TeamError| RegistryError::Unavailable(e.to_string());
    if matches!(bound, Bound::Hook(_)) && known.recent(crate::clock::now_ms()) {
        let t =
            super::postgres::with_team_registry(url, bound.budget(), op).map_err(unavailable)?;
        return Ok((t, None));
    }
    let (t, pulled) = super::postgres::with_team_registry_pulling(url, bound.budget(), known, op)
        .map_err(unavailable)?;
    let note = pulled.and_then(|p| {
        let until = std::time::Instant::now() + std::time::Duration::from_millis(200);
        replica::store(root, &server, &p, until.max(bound.deadline()))
            .err()
            .map(|why| format!("the team registry's local replica was not refreshed: {why}"))
    });
    Ok((t, note))
}

/// Runs the PreToolUse guard's `op` ([`GuardReads`]: reads only) on the
/// registry of `root`: locally `state/chat.db`, as [`with_registry`]; in
/// team mode this machine's replica when it was refreshed within
/// [`replica::FRESH_FOR_MS`], else the server, as [`with_registry`] (which
/// refreshes the replica on the way), within the hook's budget.
pub fn with_guard_reads<T, F>(
    root: &Path,
    bound: Bound,
    mut op: F,
) -> Result<(T, Option<String>), RegistryError>
where
    T: Send + 'static,
    F: FnMut(&mut dyn GuardReads) -> Result<T, StoreError> + Send + 'static,
{
    if let Ok(Backend::Team(url, _)) = crate::team::backend(root) {
        let now_ms = crate::clock::now_ms();
        if let Some(mut copy) = replica::fresh(root, &url.masked(), now_ms, bound.deadline()) {
            // A replica that cannot answer is asked no more: the server is.
            if let Ok(t) = op(&mut copy) {
                return Ok((t, None));
            }
        }
    }
    with_registry(root, bound, move |r| op(&mut ThroughStore(r)))
}

/// How fresh this machine's replica of the team registry is: `None` in
/// local mode (or with no replica yet).
pub fn replica_freshness(root: &Path) -> Option<replica::Freshness> {
    match crate::team::backend(root) {
        Ok(Backend::Team(url, _)) => replica::freshness(root, &url.masked()),
        _ => None,
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
            super::postgres::chats_read_only(&url, bound.budget())
                .map_err(|e| RegistryError::Unavailable(e.to_string())),
        ),
    }
}
