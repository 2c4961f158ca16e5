//! This chat's work: the issue a chat works on, which PreCompact's text for
//! the summarizer and SessionStart's re-injection put first, before the
//! repository's other live pipelines (every worktree of a repository shares
//! one state directory, so a chat sees them all).
//!
//! The first that applies:
//! 1. the issue this chat has claimed in the registry (`jkz claim`, or the
//!    implicit claim of `jkz state set`; the newest claim when it holds
//!    several);
//! 2. the issue whose claimed worktree holds the chat's directory;
//! 3. an issue number in the chat's branch name (`issue-42`, `i42-fix`,
//!    `fix/42`), then in its checkout's directory name (`wt-42`), that has a
//!    pipeline file.
//!
//! Read only: the registry is read without being created or written
//! ([`chats_read_only`]), the branch from the checkout's `HEAD` with a plain
//! file read. No registry, no claim, no number: no focus, and the digest
//! keeps its newest-first order.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::git::repository::head_branch;
use crate::pipeline::{self, IssueNumber, Normalized, PipelineFile};
use crate::registry::backend::{chats_for_observer, Bound};
use crate::resolved_path::resolve;
use crate::session_id::SessionId;

use crate::state_dir::root;
use crate::state_dir::StateDir;

/// The issue a chat works on, and how that is known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Focus {
    /// The issue number, canonical (no leading zeros).
    pub issue: String,
    /// "claimed by this chat", "this chat runs in its worktree /r/wt-42",
    /// "this chat's branch is issue-42".
    pub why: String,
}

/// This chat's work (see the module documentation): `session` is the
/// chat, `start` the directory it runs in.
pub fn find(state: &StateDir, session: Option<&SessionId>, start: &Path) -> Option<Focus> {
    if let Some(focus) = from_registry(state, session, start) {
        return Some(focus);
    }
    from_names(state, start)
}

/// How long a hook waits for the registry here: a part of its budget, the
/// pipeline files being read meanwhile.
const REGISTRY_WAIT: Duration = Duration::from_millis(500);

/// Steps 1 and 2: the registry (`state/chat.db`, or the team's).
fn from_registry(state: &StateDir, session: Option<&SessionId>, start: &Path) -> Option<Focus> {
    let bound = Bound::Hook(Instant::now() + REGISTRY_WAIT);
    let (present, chats) = chats_for_observer(state.path(), bound);
    if !present {
        return None;
    }
    let chats = chats.ok()?;
    if let Some(session) = session {
        let mine = chats
            .iter()
            .find(|(chat, _)| chat.session_id == session.as_str())
            .and_then(|(_, claims)| claims.iter().max_by_key(|c| (c.acquired, c.issue.len())));
        if let Some(claim) = mine {
            return Some(Focus {
                issue: claim.issue.clone(),
                why: "claimed by this chat".into(),
            });
        }
    }
    let here = resolve(&std::path::absolute(start).ok()?);
    chats
        .iter()
        .flat_map(|(_, claims)| claims)
        .filter(|c| c.worktree.as_deref().is_some_and(|wt| here.starts_with(wt)))
        // The deepest claimed worktree holding the directory.
        .max_by_key(|c| c.worktree.as_ref().map_or(0, String::len))
        .map(|c| Focus {
            issue: c.issue.clone(),
            why: format!(
                "this chat runs in its worktree {}",
                c.worktree.as_deref().unwrap_or_default()
            ),
        })
}

/// Step 3: a number in the branch's name, then in the checkout's, that has
/// a pipeline file.
fn from_names(state: &StateDir, start: &Path) -> Option<Focus> {
    let (_, repository) = root::repository_of(start).ok()?;
    let checkout = repository?.checkout?;
    let branch = head_branch(&checkout.git_dir);
    let dir_name = checkout
        .top
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let named = [
        branch.map(|b| (format!("this chat's branch is {b}"), b)),
        dir_name.map(|d| (format!("this chat runs in the checkout {d}"), d)),
    ];
    for (why, name) in named.into_iter().flatten() {
        for number in numbers_in(&name) {
            let Ok(issue) = IssueNumber::parse(number) else {
                continue;
            };
            let path = pipeline::pipeline_path(state, &issue);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                return Some(Focus {
                    issue: issue.to_string(),
                    why,
                });
            }
        }
    }
    None
}

/// The runs of ASCII digits in `name` (at most 20 long), in order.
fn numbers_in(name: &str) -> impl Iterator<Item = &str> {
    name.split(|c: char| !c.is_ascii_digit())
        .filter(|d| !d.is_empty() && d.len() <= 20)
}

/// The view of the focused issue's pipeline file, read on its own (when the
/// gathering of the newest views did not keep it); none when it has no
/// readable pipeline file.
pub fn load(state: &StateDir, issue: &str) -> Option<Normalized> {
    let issue = IssueNumber::parse(issue).ok()?;
    let file = PipelineFile {
        path: pipeline::pipeline_path(state, &issue),
        issue,
        regular: false,
    };
    let loaded = pipeline::load_all(std::slice::from_ref(&file));
    loaded.into_iter().next()?.view.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_in_branch_names() {
        let got: Vec<_> = numbers_in("i42-fix-v2").collect();
        assert_eq!(got, ["42", "2"]);
        assert_eq!(numbers_in("fix/issue-7").collect::<Vec<_>>(), ["7"]);
        assert!(numbers_in("main").next().is_none());
    }
}
