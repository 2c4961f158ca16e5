//! The `jkz-pre-compact` hook: runs just before Claude Code compacts.
//!
//! 1. Reads the event (bounded; bad input is reported and the rest goes on).
//! 2. Starts `git status` at once, so it runs while the pipeline files are read.
//! 3. Reads every `state/pipeline/<N>.json` and builds the [`Digest`].
//! 4. When a state directory is available (never created implicitly): writes
//!    the snapshot, nudges the session record, prunes old snapshots.
//! 5. Prints the summarizer instructions on stdout: the client appends a
//!    PreCompact hook's stdout to the summarizing request.

use std::io::Read;
use std::time::{Duration, Instant};

use super::digest::{summarizer_instructions, Digest};
use super::snapshot::{self, Snapshot};
use crate::git::{GitProbe, GitState, Started};
use crate::hook::{self, Warnings};
use crate::hook_input::HookInput;
use crate::pipeline::{self, LoadedPipeline};
use crate::session_id::SessionId;
use crate::session_snapshot::{self, CompactionNudge};
use crate::state_dir::StateDir;

/// How long git may take before its state is reported unknown.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs the hook with `stdin` as the event; prints the instructions.
pub fn run(stdin: impl Read, warnings: &mut Warnings) {
    let started = Instant::now();
    let input = HookInput::read(stdin);
    let (event, event_error) = match input {
        Ok(input) => (Some(input), None),
        Err(e) => {
            warnings.warn(e.to_string());
            (None, Some(e.to_string()))
        }
    };
    let cwd = event.as_ref().and_then(HookInput::cwd);
    let git = GitProbe::start(&hook::project_dir(cwd.clone()));
    let state = StateDir::resolve(None, cwd.as_deref());

    let session = session_id(event.as_ref(), warnings);

    let files = match pipeline::list(&state) {
        Ok(files) => files,
        Err(e) => {
            warnings.warn(format!(
                "reading {}: {e}",
                state.join(pipeline::PIPELINE_DIR).display()
            ));
            Vec::new()
        }
    };
    let loaded = pipeline::load_all(&files);

    let git = match git {
        Started::Running(probe) => probe.finish(started + GIT_TIMEOUT),
        Started::Failed(state) => state,
    };
    let views = loaded.iter().filter_map(|p| p.view.as_ref().ok());
    let digest = Digest::build(views, &state.join(pipeline::PIPELINE_DIR), git.clone());

    let saved = save(
        &state,
        event.as_ref(),
        event_error.as_deref(),
        session.as_ref(),
        &git,
        &digest,
        &loaded,
        warnings,
    );
    hook::print(
        &summarizer_instructions(&digest, saved.as_deref()),
        warnings,
    );
}

fn session_id(event: Option<&HookInput>, warnings: &mut Warnings) -> Option<SessionId> {
    let raw = event
        .and_then(|e| e.text("session_id").map(str::to_string))
        // Lossy, so a value that is not UTF-8 is reported, not ignored.
        .or_else(|| {
            std::env::var_os("CLAUDE_CODE_SESSION_ID")
                .filter(|v| !v.is_empty())
                .map(|v| v.to_string_lossy().into_owned())
        })?;
    match SessionId::parse(&raw) {
        Ok(id) => Some(id),
        Err(e) => {
            warnings.warn(format!("{e}; session record not updated"));
            None
        }
    }
}

/// Writes the snapshot, nudges the session record and prunes. Returns the
/// snapshot's path as shown to the summarizer (`state/<name>`).
#[allow(clippy::too_many_arguments)]
fn save(
    state: &StateDir,
    event: Option<&HookInput>,
    event_error: Option<&str>,
    session: Option<&SessionId>,
    git: &GitState,
    digest: &Digest,
    loaded: &[LoadedPipeline],
    warnings: &mut Warnings,
) -> Option<String> {
    let root = match state.ensure() {
        Ok(Some(root)) => root.to_path_buf(),
        Ok(None) => return None, // the project did not opt in: write nothing
        Err(e) => {
            warnings.warn(format!(
                "creating {}: {e}; no snapshot written",
                state.path().display()
            ));
            return None;
        }
    };
    let now = chrono::Utc::now();
    let created_at = now.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    let name = snapshot::snapshot_name(now, std::process::id());
    let snap = Snapshot {
        created_at: &created_at,
        pid: std::process::id(),
        session_id: session.map(SessionId::as_str),
        event: event.map(|e| &e.raw),
        event_error,
        git,
        digest,
        pipelines: loaded,
    };
    let written = match snapshot::write(&root, &name, &snap) {
        Ok(path) => Some(path.display().to_string()),
        Err(e) => {
            warnings.warn(format!(
                "writing snapshot {}: {e}",
                root.join(&name).display()
            ));
            None
        }
    };
    if let Some(session) = session {
        let nudge = CompactionNudge {
            at: &created_at,
            trigger: event.and_then(HookInput::trigger),
            snapshot: written.as_ref().map(|_| name.as_str()),
        };
        let result = state
            .ensure_subdir(session_snapshot::SESSION_SNAPSHOT_DIR)
            .map_err(|e| e.to_string())
            .and_then(|dir| match dir {
                Some(_) => session_snapshot::nudge_compaction(
                    &session_snapshot::record_path(state, session),
                    session,
                    &nudge,
                )
                .map(|_| ())
                .map_err(|e| e.to_string()),
                None => Ok(()),
            });
        if let Err(e) = result {
            warnings.warn(format!("updating the session record of {session}: {e}"));
        }
    }
    if let Err(e) = snapshot::prune(&root, now) {
        warnings.warn(format!("pruning old snapshots in {}: {e}", root.display()));
    }
    written
}
