//! The `jkz-pre-compact` hook: runs just before a client compacts a
//! conversation.
//!
//! Compaction waits for the hook, so its steps overlap wherever they can:
//!
//! 1. `git status` starts first (before the event is read, when the
//!    client's environment names the project: [`hook::env_project_dir`]),
//!    so it runs while the rest is done.
//! 2. The event is read (bounded; bad input is reported and the rest goes on).
//! 3. Every `state/pipeline/<N>.json` is read, on all cores, each file
//!    rendered into its snapshot entry as it is read ([`PipelineEntries`]),
//!    keeping only the views the digest can show ([`Candidates`]). When a state
//!    directory is available (never created implicitly), the snapshot's
//!    header and these entries are written out run by run as they come
//!    ([`SnapshotWriter`]), while later runs are still being read.
//! 4. If git is still running then, what is written is synced meanwhile.
//!    Meanwhile a side thread finds this chat's work ([`focus`]), which
//!    the digest puts first.
//! 5. With git's answer: a side thread prepares the session record's nudge
//!    (written and synced beside the record, under its lock), while the
//!    digest is built and the snapshot gets its last fields, its sync and
//!    its rename; then old snapshots are pruned.
//! 6. Once the snapshot is in place, the nudge is (a rename): while the
//!    system runs, the record never names a snapshot that is not there.
//!    (After a power loss that holds on filesystems that commit renames in
//!    order, as ext4 and xfs do; neither directory is synced.) If the
//!    snapshot could not be written, the prepared nudge is dropped and the
//!    record nudged without one.
//! 7. The summarizer instructions are the answer
//!    ([`crate::client::Answer::Summarize`]), which each client's module
//!    renders as its contract lets it: on stdout for a client that appends
//!    a hook's output to the summarizing request, into a prompt file for
//!    one whose hook cannot steer the summary (the client's own answer,
//!    made above this module).

use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::Utc;

use super::digest::{summarizer_instructions, Candidates};
use super::focus;
use super::snapshot::{self, PipelineEntries, SnapshotHeader, SnapshotWriter};
use crate::client::help::HookProgram;
use crate::client::{EventKind, HookEvent};
use crate::findings::compaction::{self as findings, Audience};
use crate::git::{GitProbe, Started};
use crate::hook::{self, Warnings};
use crate::json_file::PendingUpdate;
use crate::pipeline::{self, FileContent, PipelineFile};
use crate::session_id::SessionId;
use crate::session_record::{self, CompactionNudge};
use crate::state_dir::StateDir;

/// The hook's one-line description.
pub const ABOUT: &str =
    "Snapshot the pipeline state before compaction; tell the summarizer what must survive";

/// The hook's long help, its retention spelled from the retention table,
/// each client's registration and answer from its module
/// ([`crate::client::help`]).
pub fn long_about() -> String {
    use crate::state_dir::retention::{PRE_COMPACT_KEEP_NEWEST, PRE_COMPACT_MAX_AGE};
    format!(
        "\
Compaction hook: runs just before the client compacts the conversation.
Reads the hook event (JSON) on stdin; writes
state/pre-compact-<UTC time>-<pid>.json (the event as received, every
pipeline file, the normalized views, git state), nudges the session's record
in state/session-snapshots/, applies retention (older than {days} days removed,
the newest {keep} always kept) and gives the summarizer the decision-critical
items with their current values, as far as the client lets a hook steer its
summary (each client below).{clients}
{}",
        crate::hook::STATE_AND_EXIT_HELP,
        days = PRE_COMPACT_MAX_AGE.as_secs() / (24 * 60 * 60),
        keep = PRE_COMPACT_KEEP_NEWEST,
        clients = crate::client::help::clients(HookProgram::PreCompact),
    )
}

/// What [`snapshot`] made: the summarizer instructions, the snapshot's path
/// when it was written, and the state directory's root when there is one
/// (a client's own answer is made of them by the hook's entry).
pub struct Snapshot {
    pub instructions: String,
    pub written: Option<String>,
    pub root: Option<PathBuf>,
}

/// Takes the snapshot of `event` and makes the summarizer instructions;
/// `early_git` is a git probe started before the event was read, if any.
pub fn snapshot(
    started: Instant,
    early_git: Option<Started>,
    event: &HookEvent,
    warnings: &mut Warnings,
) -> Snapshot {
    let cwd = event.cwd.clone();
    let git = early_git.unwrap_or_else(|| GitProbe::start(&hook::project_dir(cwd.clone())));
    let state = StateDir::resolve(None, cwd.as_deref());
    hook::warn_state_problem(&state, warnings);
    let session = session_id(event, warnings);
    let root = state_root(&state, warnings);
    let now = Utc::now();
    let name = crate::state_dir::layout::snapshot_name(now, std::process::id());
    let created_at = now.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    let nudge = CompactionNudge {
        at: &created_at,
        trigger: match &event.kind {
            EventKind::PreCompact { trigger } => trigger.as_deref(),
            _ => None,
        },
        snapshot: Some(&name),
    };

    let start = hook::project_dir(cwd.clone());
    let (instructions, written) = std::thread::scope(|s| {
        // This chat's work (the registry, the branch), found while the
        // pipeline files are read.
        let focus = {
            let (state, session, start) = (&state, session.as_ref(), &start);
            s.spawn(move || focus::find(state, session, start))
        };
        let files = match pipeline::list(&state) {
            Ok(files) => files,
            Err(e) => {
                warnings.warn(format!(
                    "reading {}: {e}",
                    state.join(crate::state_dir::layout::PIPELINE_DIR).display()
                ));
                Vec::new()
            }
        };
        let header = SnapshotHeader {
            created_at: &created_at,
            pid: std::process::id(),
            session_id: session.as_ref().map(SessionId::as_str),
            event: Some(&event.raw.raw),
            event_error: None,
        };
        let mut writer = root
            .as_deref()
            .map(|root| SnapshotWriter::create(root, &name, &header));
        let mut candidates = Candidates::default();
        pipeline::visit_in_order(&files, Run::default, Run::add, |run| {
            if let Some(writer) = &mut writer {
                writer.pipelines(&run.entries);
            }
            candidates.merge(run.candidates);
        });
        // The process ends right after: freeing thousands of allocations
        // one at a time would cost milliseconds the exit does at once.
        std::mem::forget(files);
        // Review findings of the pipelines the digest will detail, read
        // while git runs.
        let issues = candidates.newest_issues();
        let findings = s.spawn(|| {
            let read = findings::read(&state, &issues, Audience::Summarizer);
            (issues, read)
        });
        let git = match git {
            Started::Running(mut probe) => {
                // Git still running: sync what is written meanwhile, so
                // that little is left to sync once it answers.
                if let Some(writer) = writer.as_mut().filter(|_| !probe.has_exited()) {
                    writer.sync();
                }
                probe.finish(started + crate::git::HOOK_TIMEOUT)
            }
            Started::Failed(state) => state,
        };
        // The nudge is prepared now, beside the snapshot's last steps: its
        // lock is held from here until the snapshot is in place, never
        // while git runs (another hook of this session waits for it).
        let side = root.as_ref().and(session.as_ref()).map(|session| {
            let (state, nudge) = (&state, &nudge);
            s.spawn(move || prepare_nudge(state, session, nudge))
        });
        let focus = focus.join().unwrap_or_default();
        let focused = focus
            .as_ref()
            .filter(|f| !candidates.has(&f.issue))
            .and_then(|f| focus::load(&state, &f.issue));
        let mut digest = candidates.digest(
            &state.join(crate::state_dir::layout::PIPELINE_DIR),
            git.clone(),
            focus,
            focused,
        );
        let ahead = findings.join().ok();
        digest.attach_findings(&state, ahead, Audience::Summarizer, warnings);
        let written = writer.zip(root.as_deref()).and_then(|(writer, root)| {
            match writer.finish(&git, &digest) {
                Ok(path) => Some(path.display().to_string()),
                Err(e) => {
                    warnings.warn(format!(
                        "writing snapshot {}: {e}",
                        root.join(&name).display()
                    ));
                    None
                }
            }
        });
        // After the write, so the newest twenty kept include this one; beside
        // the nudge below.
        let pruned = root.as_deref().map(|root| {
            s.spawn(move || {
                snapshot::prune(root, now)
                    .err()
                    .map(|e| format!("pruning old snapshots in {}: {e}", root.display()))
            })
        });
        if let (Some(side), Some(session)) = (side, &session) {
            let nudged = match side.join() {
                Ok(Ok(None)) => Ok(()),
                Ok(Ok(Some(pending))) if written.is_some() => {
                    pending.commit().map_err(|e| e.to_string())
                }
                Ok(Ok(Some(pending))) => {
                    drop(pending); // and its lock with it
                    let unsaved = CompactionNudge {
                        snapshot: None,
                        ..nudge
                    };
                    nudge_now(&state, session, &unsaved)
                }
                Ok(Err(e)) => Err(e),
                Err(_) => {
                    warnings.warn("preparing the session record's nudge failed (internal error); nudging it directly");
                    let direct = CompactionNudge {
                        snapshot: written.as_ref().map(|_| name.as_str()),
                        ..nudge
                    };
                    nudge_now(&state, session, &direct)
                }
            };
            if let Err(e) = nudged {
                warnings.warn(format!("updating the session record of {session}: {e}"));
            }
        }
        if let Some(Ok(Some(w))) = pruned.map(|t| t.join()) {
            warnings.warn(w);
        }
        let snapshot = written.as_ref().map(|_| name.as_str());
        crate::events::sources::session_compacted(
            &state,
            session.as_ref().map(SessionId::as_str),
            nudge.trigger,
            snapshot,
        );
        (
            summarizer_instructions(&digest, written.as_deref()),
            written,
        )
    });
    Snapshot {
        instructions,
        written,
        root,
    }
}

/// What one reading thread keeps of its run of pipeline files.
#[derive(Default)]
struct Run {
    /// The files' snapshot entries.
    entries: PipelineEntries,
    /// The views the digest may use.
    candidates: Candidates,
}

impl Run {
    fn add(&mut self, file: &PipelineFile, content: FileContent) {
        self.entries.push(file, &content);
        if let FileContent::Valid { view, .. } = content {
            self.candidates.offer(view);
        }
    }
}

/// The state directory to write in; none when the project did not opt in
/// (no `state/`) or it cannot be created.
fn state_root(state: &StateDir, warnings: &mut Warnings) -> Option<PathBuf> {
    match state.ensure() {
        Ok(root) => root.map(Path::to_path_buf),
        Err(e) => {
            warnings.warn(format!(
                "creating {}: {e}; no snapshot written",
                state.describe()
            ));
            None
        }
    }
}

/// The side thread: prepares the session record's nudge (see
/// [`session_record::prepare_nudge`]). `Ok(None)` when there is no state
/// directory to write in.
fn prepare_nudge(
    state: &StateDir,
    session: &SessionId,
    nudge: &CompactionNudge,
) -> Result<Option<PendingUpdate>, String> {
    match record_path(state, session)? {
        Some(record) => session_record::prepare_nudge(&record, session, nudge)
            .map(|(_, pending)| Some(pending))
            .map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

/// Nudges the session record at once (when there is no prepared nudge to
/// commit).
fn nudge_now(state: &StateDir, session: &SessionId, nudge: &CompactionNudge) -> Result<(), String> {
    match record_path(state, session)? {
        Some(record) => session_record::nudge_compaction(&record, session, nudge)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        None => Ok(()),
    }
}

/// The session's record, its directory made when missing; none when the
/// state directory is not there.
fn record_path(state: &StateDir, session: &SessionId) -> Result<Option<PathBuf>, String> {
    match state.ensure_subdir(crate::state_dir::layout::SESSION_RECORD_DIR) {
        Ok(Some(_)) => Ok(Some(session_record::record_path(state, session))),
        Ok(None) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

fn session_id(event: &HookEvent, warnings: &mut Warnings) -> Option<SessionId> {
    let explicit = event.session_id.as_deref();
    let (raw, _) = crate::session_id::resolve_raw(explicit, crate::session_id::process_env)?;
    match SessionId::parse(&raw) {
        Ok(id) => Some(id),
        Err(e) => {
            warnings.warn(format!("{e}; session record not updated"));
            None
        }
    }
}
