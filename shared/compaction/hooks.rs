//! The compaction hooks' entries: what `jkz-pre-compact` and
//! `jkz-session-start` handle ([`PRE_COMPACT`], [`SESSION_START`]) and
//! their answers to jkz's canonical event; the client's contract is the
//! client's module's (`crate::client`), applied at the edge
//! (`crate::client::edge`).
//!
//! - `jkz-pre-compact`: the snapshot is taken ([`pre_compact::snapshot`])
//!   and the answer is what the summary must keep (rendered by each client
//!   as it can: each client's module says how its summarizer gets it).
//! - `jkz-session-start`: [`super::session_start::answer`].

use std::time::Instant;

use super::pre_compact;
use crate::client::edge::Hook;
use crate::client::{Answer, Client, EventName, HookEvent};
use crate::git::{GitProbe, Started};
use crate::hook::{self, Warnings};
use crate::hook_input::MAX_HOOK_INPUT;

/// What `jkz-pre-compact` handles.
pub const PRE_COMPACT: Hook = Hook {
    handles: &[EventName::PreCompact],
    default: Some(EventName::PreCompact),
    max_input: MAX_HOOK_INPUT,
    on_bad_input: "",
    refuse_tracked_state: true,
    tool_output: false,
};

/// What `jkz-session-start` handles: SessionStart, PostCompact, and a
/// model request after a compaction.
pub const SESSION_START: Hook = Hook {
    handles: &[
        EventName::SessionStart,
        EventName::PostCompact,
        EventName::ModelRequest,
    ],
    default: Some(EventName::SessionStart),
    max_input: MAX_HOOK_INPUT,
    on_bad_input: "",
    refuse_tracked_state: true,
    tool_output: false,
};

/// `git status`, started before the event is read (it takes longest),
/// when the environment names the project; not for a client whose
/// PreCompact fires before every turn (most of those need no snapshot).
pub fn early_git() -> Option<Started> {
    if Client::from_env().is_some_and(Client::pre_compact_every_turn) {
        return None;
    }
    hook::env_project_dir().map(|dir| GitProbe::start(&dir))
}

/// `jkz-pre-compact`'s answer to `event`: the snapshot taken, what the
/// summary must keep.
pub fn pre_compact(
    event: &HookEvent,
    started: Instant,
    early_git: Option<Started>,
    warnings: &mut Warnings,
) -> Answer {
    let made = pre_compact::snapshot(started, early_git, event, warnings);
    Answer::Summarize {
        instructions: made.instructions,
        snapshot: made.written,
        state_root: made.root,
    }
}
