//! The `jkz-session-start` hook: after a compaction (`source` `compact`), a
//! resumed session (`resume`) or a forked one (`fork`, where a client forks
//! sessions; re-injected as on resume), puts the decision-critical state
//! back. Registered for `PostCompact` too, it runs the
//! [`post_compact`](super::post_compact) arm instead (dispatched on
//! the event).
//!
//! What it re-injects ([`reconcile`](super::reconcile)): the live pipeline
//! state, read now, compared with the newest snapshot — the one this
//! session's record points at, else the project's newest. The snapshot
//! supplies the pipelines whose files are gone since; the text says when the
//! snapshot was taken and which items changed since, and a moved branch or
//! HEAD. Without a snapshot (PreCompact never ran, or it cannot be read: the
//! text says which) the live state alone; without a readable pipeline
//! directory, the snapshot alone, said to be so.
//!
//! This chat's work comes first ([`focus`]): the issue it claimed, else
//! the one whose worktree or branch it runs in. The items the latest
//! compaction's summary dropped (found by the PostCompact arm) come before
//! everything else. A client may run a full compaction's SessionStart
//! (`compact`) *before* its PostCompact (the client's module says which
//! does): they then reach the model at the session's next SessionStart;
//! the `compact` re-injection right after the summary carries every item
//! all the same.
//!
//! Output: the context to add ([`Answer::AddContext`]), under 4,000
//! characters, which each client's module renders in its contract. Nothing
//! is answered for other sources. Nothing is ever written.

use std::time::Instant;

use super::digest::{phase_text, reinjection_context, verdicts_text, Digest, PipelineDigest};
use super::focus;
use super::reconcile::{reconcile, LiveFile};
use super::snapshot::{self, HeadError, SnapshotHead};
use super::summary_check::{self, DroppedItem, ItemKind};
use crate::client::help::HookProgram;
use crate::client::{Answer, EventKind, HookEvent, StartSource};
use crate::client_text::head_units;
use crate::findings::compaction::Audience;
use crate::git::{GitProbe, GitState, Started};
use crate::hook::{self, Warnings};
use crate::outside_text::{self, short};
use crate::pipeline::{self, IssueNumber, PipelineFile};
use crate::session_id::SessionId;
use crate::session_record;
use crate::state_dir::StateDir;
use chrono::{DateTime, Utc};

/// The sources this hook answers.
pub const SOURCES: &[&str] = &["compact", "resume", "fork"];

/// The hook's one-line description.
pub const ABOUT: &str =
    "Re-inject the decision-critical pipeline state after compaction or on resume";

/// The hook's long help, each client's registration and answer from its
/// module ([`crate::client::help`]).
pub fn long_about() -> String {
    format!(
        "\
Re-injection hook: after a compaction, on resume and in a forked session
(the session-start sources {sources}), it gives the model back
the decision-critical items (under 4,000 characters): the live pipeline
state, compared with the newest snapshot of this session, else of the
project, which supplies pipelines whose files are gone since; says when the
snapshot was taken, which items changed since, and when the branch or HEAD
moved; the items the latest compaction's summary dropped come first. Reads
the hook event (JSON) on stdin; prints nothing for other session starts.
After a compaction whose summary the client hands its hooks (PostCompact),
it checks which decision-critical items the summary dropped and records
them in the session's record in state/session-snapshots/; it prints
nothing.{clients}
{}",
        crate::hook::STATE_AND_EXIT_HELP,
        sources = SOURCES.join(", "),
        clients = crate::client::help::clients(HookProgram::SessionStart),
    )
}

/// The most "changed since the snapshot" lines shown (the rest are counted).
const MAX_CHANGE_LINES: usize = 8;

/// The most client characters of one such line.
const MAX_CHANGE_LINE: usize = 400;

/// Answers one event: SessionStart (or a model request after a
/// compaction: re-injected as after `compact`), or PostCompact.
pub fn answer(event: &HookEvent, warnings: &mut Warnings) -> Answer {
    let source = match &event.kind {
        EventKind::PostCompact { .. } => {
            super::post_compact::run(event, warnings);
            return Answer::Nothing;
        }
        EventKind::SessionStart { source } => {
            match source.filter(|s| SOURCES.contains(&s.as_str())) {
                Some(source) => source,
                None => return Answer::Nothing,
            }
        }
        EventKind::ModelRequest => StartSource::Compact,
        EventKind::UserPrompt
        | EventKind::PreToolUse(_)
        | EventKind::PostToolUse(_)
        | EventKind::PreCompact { .. }
        | EventKind::SessionEnd => return Answer::Nothing,
    };
    let restored = restore(event, source.as_str(), warnings);
    crate::events::sources::session_started(
        &restored.state,
        restored.session.as_ref().map(SessionId::as_str),
        source.as_str(),
    );
    crate::events::reconcile::in_hook(&restored.state, warnings);
    Answer::AddContext(restored.context)
}

/// The re-injected context of one event, with the state directory and the
/// session it was read for.
pub struct Restored {
    pub context: String,
    pub state: StateDir,
    pub session: Option<SessionId>,
}

/// Builds the context `source` (`compact` or `resume`) re-injects for
/// `input`'s session: every client's re-injection (at a session start, or
/// at the first model request after a compaction, for a client that has
/// no session start there: [`EventKind::ModelRequest`]).
pub fn restore(input: &HookEvent, source: &str, warnings: &mut Warnings) -> Restored {
    let started = Instant::now();
    let git = GitProbe::start(&hook::project_dir(input.cwd.clone()));
    let state = StateDir::resolve(None, input.cwd.as_deref());
    hook::warn_state_problem(&state, warnings);
    let raw =
        crate::session_id::resolve_raw(input.session_id.as_deref(), crate::session_id::process_env);
    let session = match raw.map(|(id, _)| SessionId::parse(&id)) {
        Some(Ok(id)) => Some(id),
        Some(Err(e)) => {
            warnings.warn(format!("{e}; using the project's newest snapshot"));
            None
        }
        None => None,
    };
    // Read before waiting on git, so the two overlap.
    let found = find_snapshot(&state, session.as_ref());
    if let Err(Some(problem)) = &found {
        warnings.warn(problem);
    }
    let focus = focus::find(
        &state,
        session.as_ref(),
        &hook::project_dir(input.cwd.clone()),
    );
    let live = super::live::live_digest(&state, focus.clone());
    let current_git = match git {
        Started::Running(probe) => probe.finish(started + crate::git::HOOK_TIMEOUT),
        Started::Failed(state) => state,
    };
    let now = Utc::now();
    let (mut digest, origin, mut notes) = match (found, live) {
        (Ok(found), Ok(live)) => {
            let r = reconcile(&found.head.digest, live, |issue| live_file(&state, issue));
            let origin = format!(
                "the live pipeline state, read now; compared with {}",
                found.describe(now)
            );
            let mut notes = moved_notes(&found.head.digest.git, &current_git);
            notes.extend(change_notes(&r.changes));
            (r.digest, origin, notes)
        }
        (Ok(found), Err(why)) => {
            warnings.warn(format!("{why}; re-injecting the snapshot's values"));
            let origin = format!(
                "{}; the live pipeline state cannot be read now ({why}), so these are the snapshot's values",
                found.describe(now)
            );
            let notes = moved_notes(&found.head.digest.git, &current_git);
            let mut digest = found.head.digest;
            digest.put_first(focus);
            (digest, origin, notes)
        }
        (Err(problem), live) => {
            let digest = live.unwrap_or_else(|why| {
                warnings.warn(why);
                Digest::default()
            });
            let origin = match problem {
                None => "live pipeline state; no pre-compact snapshot found".to_string(),
                Some(problem) => format!("live pipeline state; {problem}"),
            };
            (digest, origin, Vec::new())
        }
    };
    digest.git = current_git;
    digest.attach_findings(&state, None, Audience::Reinjection, warnings);
    // What the summary of this session's latest compaction dropped, first:
    // the summary stays the conversation's memory until the next
    // compaction, so every SessionStart until then says it again.
    let dropped = session
        .as_ref()
        .and_then(|s| super::post_compact::recorded(&state, s))
        .unwrap_or_default();
    let mut first = dropped_first(&dropped, &digest);
    first.append(&mut notes);
    notes = first;
    let context = reinjection_context(&digest, source, &origin, &notes);
    Restored {
        context,
        state,
        session,
    }
}

/// The snapshot compared with: its name, its head, and whose it is.
struct Found {
    name: String,
    head: SnapshotHead,
    whose: &'static str,
}

impl Found {
    /// "this session's snapshot NAME, taken TIME (12 min ago)".
    fn describe(&self, now: DateTime<Utc>) -> String {
        let age = DateTime::parse_from_rfc3339(&self.head.created_at)
            .ok()
            .map(|t| format!(" ({})", ago(now - t.with_timezone(&Utc))))
            .unwrap_or_default();
        format!(
            "{} snapshot {}, taken {}{age} before compaction",
            self.whose, self.name, self.head.created_at
        )
    }
}

/// A duration as people say it: "40 s ago", "12 min ago", "3 h ago", "2 days ago".
fn ago(d: chrono::Duration) -> String {
    let s = d.num_seconds().max(0);
    match s {
        0..=89 => format!("{s} s ago"),
        90..=5399 => format!("{} min ago", (s + 30) / 60),
        5400..=172_799 => format!("{} h ago", (s + 1800) / 3600),
        _ => format!("{} days ago", s / 86_400),
    }
}

/// The "changed since the snapshot" lines.
fn change_notes(changes: &[String]) -> Vec<String> {
    if changes.is_empty() {
        return vec!["Nothing in the pipeline state changed since the snapshot.".into()];
    }
    let mut notes = vec!["Changed since the snapshot (the values below are the live ones):".into()];
    for c in changes.iter().take(MAX_CHANGE_LINES) {
        let line = head_units(c, MAX_CHANGE_LINE);
        let more = if line.len() < c.len() { " …" } else { "" };
        notes.push(format!("- {line}{more}"));
    }
    if changes.len() > MAX_CHANGE_LINES {
        notes.push(format!(
            "- (+{} more issues changed: `jkz state list`)",
            changes.len() - MAX_CHANGE_LINES
        ));
    }
    notes
}

/// The newest usable snapshot: the session's own, else the project's.
/// `Err(None)` when there is none; `Err(Some(why))` when the newest one
/// there is cannot be used (e.g. too large), said instead of "not found".
fn find_snapshot(state: &StateDir, session: Option<&SessionId>) -> Result<Found, Option<String>> {
    let mut problem = None;
    let mut try_read =
        |name: String, whose: &'static str| match snapshot::read_head(&state.join(&name)) {
            Ok(head) => Some(Found { name, head, whose }),
            Err(HeadError::Missing) => None,
            Err(e) => {
                problem.get_or_insert(format!("{whose} snapshot {name} cannot be used: {e}"));
                None
            }
        };
    if let Some(session) = session {
        let record = session_record::record_path(state, session);
        if let Some(name) = session_record::last_snapshot_name(&record) {
            if let Some(found) = try_read(name, "this session's") {
                return Ok(found);
            }
        }
    }
    // The project's newest readable one; a few tries past broken files.
    snapshot::list(state.path())
        .into_iter()
        .take(5)
        .find_map(|name| try_read(name, "the project's newest"))
        .ok_or(problem)
}

/// What is known now of one issue a snapshot detailed.
fn live_file(state: &StateDir, issue: &str) -> LiveFile {
    let Ok(issue) = IssueNumber::parse(issue) else {
        return LiveFile::Unreadable("not an issue number".into());
    };
    let file = PipelineFile {
        path: pipeline::pipeline_path(state, &issue),
        issue,
        regular: false,
    };
    match std::fs::symlink_metadata(&file.path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return LiveFile::Gone,
        _ => {}
    }
    let loaded = pipeline::load_all(std::slice::from_ref(&file));
    match loaded.into_iter().next().map(|l| l.view) {
        Some(Ok(view)) => {
            let dir = state.join(crate::state_dir::layout::PIPELINE_DIR);
            let plan = pipeline::approved_plan(&dir, &view.issue, Some(&view));
            let digest = PipelineDigest::of(&view, plan);
            LiveFile::Read(Box::new(digest), view.is_active())
        }
        Some(Err(e)) => LiveFile::Unreadable(e.to_string()),
        None => LiveFile::Unreadable("not read".into()),
    }
}

/// The most client characters the items a summary dropped take, all
/// together, at the head of the re-injection.
const DROPPED_BUDGET: usize = 1_600;

/// The lines that put back first what the compaction summary dropped, each
/// with its live value (from `digest`, the state re-injected below) where
/// the live state still has it, else as the snapshot recorded it; a
/// pending decision taken since is left out.
fn dropped_first(dropped: &[DroppedItem], digest: &Digest) -> Vec<String> {
    let live_of = |item: &DroppedItem| {
        item.issue
            .as_deref()
            .and_then(|i| digest.pipelines.iter().find(|p| p.issue == i))
    };
    // A decision taken since is no longer critical (the change notes say so).
    let taken = |item: &DroppedItem| {
        item.kind == ItemKind::PendingDecision
            && live_of(item).is_some_and(|p| {
                !p.pending_decisions
                    .iter()
                    .any(|d| summary_check::recorded_text(d) == item.text)
            })
    };
    let dropped: Vec<&DroppedItem> = dropped.iter().filter(|i| !taken(i)).collect();
    if dropped.is_empty() {
        return Vec::new();
    }
    let each = (DROPPED_BUDGET / dropped.len()).max(120);
    let mut lines =
        vec!["Dropped by the compaction summary, restored here first (details below):".to_string()];
    for item in dropped {
        let live = live_of(item);
        let text = match (item.kind, live) {
            (ItemKind::ApprovedPlan, Some(p)) => p
                .approved_plan
                .as_ref()
                .map(|plan| format!("({}) {}", plan.source, plan.text)),
            (ItemKind::Phase, Some(p)) => Some(phase_text(p)),
            (ItemKind::Verdicts, Some(p)) => Some(verdicts_text(p)),
            (ItemKind::FailureContext, Some(p)) => p.failure_context.clone(),
            (ItemKind::Git, _) if digest.git.is_known() => Some(format!(
                "branch {}, HEAD {}",
                digest.git.branch.as_deref().unwrap_or("(detached)"),
                digest.git.short_head().unwrap_or("(none)")
            )),
            _ => None,
        }
        .unwrap_or_else(|| item.text.clone());
        let whole = match &item.issue {
            Some(issue) => format!("`jkz state get {issue}`"),
            None => "`git status`".to_string(),
        };
        let issue = item
            .issue
            .as_deref()
            .map(|i| format!("#{} ", short(i)))
            .unwrap_or_default();
        lines.push(format!(
            "- {issue}{}: {}",
            item.kind.label(),
            outside_text::inline(&text, each, &whole)
        ));
    }
    lines
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
            then.branch.as_deref().map_or("(detached)".into(), short),
            now.branch.as_deref().map_or("(detached)".into(), short)
        ));
    }
    if then.head != now.head {
        notes.push(format!(
            "NOTE: HEAD moved since the snapshot: {} → {}.",
            then.short_head().map_or("(none)".into(), short),
            now.short_head().map_or("(none)".into(), short)
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_is_answered_like_a_resume() {
        assert!(SOURCES.contains(&"fork"));
        let text = reinjection_context(&Digest::default(), "fork", "live", &[]);
        assert!(text.starts_with("## jkz: pipeline state restored in this forked session"));
    }

    #[test]
    fn dropped_items_come_with_their_live_values() {
        let live = PipelineDigest {
            issue: "42".into(),
            phase: "reviewing".into(),
            cycles: crate::pipeline::Cycles {
                review_passed: Some(true),
                qa_passed: Some(true),
                ..Default::default()
            },
            verdict: Some("PASS".into()),
            pending_decisions: vec!["still open?".into()],
            ..PipelineDigest::default()
        };
        let digest = Digest {
            pipelines: vec![live],
            ..Digest::default()
        };
        let item = |issue: Option<&str>, kind, text: &str| DroppedItem {
            issue: issue.map(str::to_string),
            kind,
            text: text.into(),
        };
        let lines = dropped_first(
            &[
                item(
                    Some("42"),
                    ItemKind::Verdicts,
                    "review passed, QA failed; overall FAIL",
                ),
                item(Some("42"), ItemKind::PendingDecision, "taken since?"),
                item(Some("42"), ItemKind::PendingDecision, "still open?"),
                item(Some("7"), ItemKind::FailureContext, "gone issue's failure"),
                item(None, ItemKind::Git, "branch main, HEAD abc"),
            ],
            &digest,
        );
        assert_eq!(
            lines,
            [
                "Dropped by the compaction summary, restored here first (details below):",
                "- #42 active verdicts: review passed, QA passed; overall PASS",
                "- #42 pending human decision: still open?",
                "- #7 failure context (current fix cycle): gone issue's failure",
                "- git state: branch main, HEAD abc",
            ]
        );
        assert!(dropped_first(&[], &digest).is_empty());
        let taken = [item(Some("42"), ItemKind::PendingDecision, "taken since?")];
        assert!(dropped_first(&taken, &digest).is_empty());
    }

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
