//! What a claim is and how a conflict between claims is decided: the
//! records both backends store (`state/chat.db`, [`super::db`]; PostgreSQL,
//! [`super::postgres`]) and the rules they share ([`in_the_way`],
//! [`blocking`]).

use std::path::Path;

use super::chat::{Chat, Liveness};

/// A claim as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The issue number, canonical (no leading zeros).
    pub issue: String,
    pub session_id: String,
    /// The worktree the claim covers (absolute, resolved), if any.
    pub worktree: Option<String>,
    /// Unix seconds.
    pub acquired: i64,
    /// The machine the claim was made on: recorded by the team registry
    /// (many machines share it); `None` in `state/chat.db`, which only
    /// this machine writes.
    pub host: Option<String>,
}

/// Another chat's claim and that chat, as a conflict reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub claim: Claim,
    /// `None` when the chat's row is missing (treated as gone).
    pub chat: Option<Chat>,
}

impl Holder {
    pub fn liveness(&self, now: i64) -> Liveness {
        self.chat
            .as_ref()
            .map_or(Liveness::Gone, |c| c.liveness(now))
    }
}

/// What `claim` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claimed {
    /// The issue is now this chat's (it was free, or already its own).
    Claimed,
    /// Taken over from a stale or gone chat.
    Taken(Vec<Holder>),
    /// Held by another chat: live, or stale and `take` was not asked.
    Held(Box<Holder>),
}

/// What `release` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Released {
    Released,
    NotClaimed,
    HeldByOther(Box<Holder>),
}

/// The other chats' claims that stand in the way of a claim on an issue:
/// `on_issue` (those on the issue itself) and, of `with_worktrees`, those
/// whose worktree is `worktree`, contains it or lies inside it (claimed
/// worktrees never nest); by issue, once each.
pub fn in_the_way(
    mut on_issue: Vec<Holder>,
    with_worktrees: Vec<Holder>,
    worktree: Option<&str>,
) -> Vec<Holder> {
    if let Some(wt) = worktree {
        on_issue.extend(with_worktrees.into_iter().filter(|h| {
            h.claim
                .worktree
                .as_deref()
                .is_some_and(|theirs| nested(Path::new(wt), Path::new(theirs)))
        }));
    }
    on_issue.sort_by(|a, b| a.claim.issue.cmp(&b.claim.issue));
    on_issue.dedup_by(|a, b| a.claim.issue == b.claim.issue);
    on_issue
}

/// The claim among `others` that stops the claim: a live chat's, or any
/// when `take` was not asked; `None` when every one may be taken over.
pub fn blocking(others: &[Holder], take: bool, now: i64) -> Option<&Holder> {
    others
        .iter()
        .find(|h| h.liveness(now) == Liveness::Live || !take)
}

/// True when `a` and `b` are the same directory or one lies inside the
/// other, compared component by component (`/a/wt-4` is not inside
/// `/a/wt-42`). Both are absolute and resolved, as claims store them.
pub fn nested(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}
