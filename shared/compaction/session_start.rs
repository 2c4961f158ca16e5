//! The `jkz-session-start` hook: after a compaction (`source` `compact`) or
//! a resumed session (`resume`), puts the decision-critical state back.
//!
//! Where the digest comes from, first that applies: the snapshot this
//! session's record points at, the project's newest snapshot, the live
//! pipeline state (so it works even when PreCompact never ran). When it
//! comes from a snapshot, the current git state is compared with the
//! snapshot's and a moved branch or HEAD is said first.
//!
//! Output: `{"hookSpecificOutput":{"hookEventName":"SessionStart",
//! "additionalContext":"…"}}`, the context under 4,000 characters. Nothing is
//! printed for other sources. Nothing is ever written.

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::json;

use super::digest::{reinjection_context, Digest};
use super::snapshot::{self, SnapshotHead};
use crate::git::{GitProbe, GitState, Started};
use crate::hook::{self, Warnings};
use crate::hook_input::HookInput;
use crate::pipeline;
use crate::session_id::SessionId;
use crate::session_snapshot;
use crate::state_dir::StateDir;

/// How long git may take before its state is reported unknown.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(2);

/// The sources this hook answers.
pub const SOURCES: &[&str] = &["compact", "resume"];

/// Runs the hook with `stdin` as the event; prints the hook output.
pub fn run(stdin: impl Read, warnings: &mut Warnings) {
    let started = Instant::now();
    let input = match HookInput::read(stdin) {
        Ok(input) => input,
        Err(e) => {
            warnings.warn(e.to_string());
            return;
        }
    };
    let Some(source) = input.source().filter(|s| SOURCES.contains(s)) else {
        return;
    };
    let git = GitProbe::start(&hook::project_dir(input.cwd()));
    let state = StateDir::resolve(None, input.cwd().as_deref());
    let session = match input.session_id() {
        Some(Ok(id)) => Some(id),
        Some(Err(e)) => {
            warnings.warn(format!("{e}; using the project's newest snapshot"));
            None
        }
        None => None,
    };
    // Read before waiting on git, so the two overlap.
    let found =
        find_snapshot(&state, session.as_ref()).ok_or_else(|| live_digest(&state, warnings));
    let current_git = match git {
        Started::Running(probe) => probe.finish(started + GIT_TIMEOUT),
        Started::Failed(state) => state,
    };
    let context = match found {
        Ok((name, head, whose)) => {
            let notes = moved_notes(&head.digest.git, &current_git);
            let origin = format!(
                "{whose} snapshot {name}, taken {} before compaction",
                head.created_at
            );
            let mut digest = head.digest;
            digest.git = current_git;
            reinjection_context(&digest, source, &origin, &notes)
        }
        Err(mut digest) => {
            digest.git = current_git;
            reinjection_context(
                &digest,
                source,
                "live pipeline state; no pre-compact snapshot found",
                &[],
            )
        }
    };
    let out = json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": context,
        }
    });
    hook::print(&format!("{out}\n"), warnings);
}

/// The newest usable snapshot: the session's own, else the project's.
fn find_snapshot(
    state: &StateDir,
    session: Option<&SessionId>,
) -> Option<(String, SnapshotHead, &'static str)> {
    if let Some(session) = session {
        let record = session_snapshot::record_path(state, session);
        if let Some(name) = session_snapshot::last_snapshot_name(&record) {
            if let Some(head) = snapshot::read_head(&state.join(&name)) {
                return Some((name, head, "this session's"));
            }
        }
    }
    // The project's newest readable one; a few tries past broken files.
    snapshot::list(state.path())
        .into_iter()
        .take(5)
        .find_map(|name| {
            snapshot::read_head(&state.join(&name)).map(|h| (name, h, "the project's newest"))
        })
}

fn live_digest(state: &StateDir, warnings: &mut Warnings) -> Digest {
    let files = pipeline::list(state).unwrap_or_else(|e| {
        warnings.warn(format!(
            "reading {}: {e}",
            state.join(pipeline::PIPELINE_DIR).display()
        ));
        Vec::new()
    });
    let views: Vec<_> = pipeline::load_all(&files)
        .into_iter()
        .filter_map(|p| p.view.ok())
        .collect();
    Digest::build(
        &views,
        &state.join(pipeline::PIPELINE_DIR),
        GitState::default(),
    )
}

/// Lines saying what moved in git since the snapshot.
pub fn moved_notes(then: &GitState, now: &GitState) -> Vec<String> {
    let mut notes = Vec::new();
    if !then.is_known() || !now.is_known() {
        return notes;
    }
    if then.branch != now.branch {
        notes.push(format!(
            "NOTE: the branch changed since the snapshot: {} → {}.",
            then.branch.as_deref().unwrap_or("(detached)"),
            now.branch.as_deref().unwrap_or("(detached)")
        ));
    }
    if then.head != now.head {
        notes.push(format!(
            "NOTE: HEAD moved since the snapshot: {} → {}.",
            then.short_head().unwrap_or("(none)"),
            now.short_head().unwrap_or("(none)")
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moved_notes_name_both_ends() {
        let a = GitState {
            branch: Some("main".into()),
            head: Some("a".repeat(40)),
            ..GitState::default()
        };
        assert!(moved_notes(&a, &a).is_empty());
        let b = GitState {
            branch: Some("fix".into()),
            head: Some("b".repeat(40)),
            ..GitState::default()
        };
        let notes = moved_notes(&a, &b);
        assert_eq!(notes.len(), 2);
        assert!(notes[0].contains("main → fix"));
        assert!(notes[1].contains("aaaaaaaaaaaa → bbbbbbbbbbbb"));
        assert!(moved_notes(&a, &GitState::default()).is_empty());
    }
}
