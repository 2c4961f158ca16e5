//! The event log: jkz's history, the source of truth for "when did issue 42
//! enter review, how many fix cycles did it take".
//!
//! Every jkz writer appends one JSON line per event to a segment under
//! `state/events/` ([`segment`]): `id` (sortable, unique: [`id`]), `type`
//! (dotted: `phase.changed`, `agent.finished`, …), `timestamp`, `issue`
//! when there is one, `session`, and a `payload`. A line is appended with
//! one `write` under `O_APPEND`, so concurrent writers never interleave, and
//! a line torn by a crash loses only itself: readers skip it with one
//! warning ([`scan`]). Segments roll over by day and by size; a closed one
//! is gzip-compressed ([`close`]). Nothing removes a segment, `jkz gc`
//! included: the log is the audit trail.
//!
//! Everything else is derived and can be rebuilt from the log: the SQLite
//! index `state/events/index.db` ([`index`]), and from it `state/metrics.db`
//! ([`crate::metrics`]). A change to `state/pipeline/<N>.json` that jkz did
//! not write becomes an event the next time a jkz process looks
//! ([`reconcile`]).
//!
//! Appending never fails the writer it serves: [`emit`] turns any error into
//! a one-line warning, and does nothing where the project has not opted in
//! (no state directory).
//!
//! | `type` | written by | `payload` |
//! |---|---|---|
//! | `phase.changed` | `jkz state set`, [`reconcile`] | `from`, `to` (`direct: true` when seen, not written, by jkz) |
//! | `state.changed` | `jkz state set`, [`reconcile`] | `field`, `from`, `to` (`direct` as above) |
//! | `agent.finished` | `jkz run`, `jkz-truncate --record` | `role`, `status`, `duration_ms`, `record`, `phase`, `iteration`, `exit_code`, `tokens` |
//! | `verdict.recorded` | `jkz run`, `jkz-truncate --record` | `role`, `verdict`, `record` |
//! | `session.compacted` | `jkz-pre-compact` | `trigger`, `snapshot` |
//! | `session.started` | `jkz-session-start` | `source` |
//! | `claim.taken`, `claim.released` | `jkz claim`, `jkz release` | `worktree`, `taken_from` |
//! | `lock.acquired`, `lock.released`, `lock.reclaimed` | `jkz lock`, `jkz run --lock` | `kind`, `name`, `owner`, `previous_owner` |
//! | `circuit.opened`, `circuit.closed` | `jkz run --service`, `jkz circuit reset` | `service`, `failures` |
//! | `tool_output.guarded` | `jkz-post-tool-use` | `tool`, `bytes_in`, `bytes_out` |
//! | `guard.denied`, `guard.asked` ([`GUARD_DENIED`], [`GUARD_ASKED`]) | `jkz-chat` (PreToolUse) | `chat`, `client`, `tool`, `target`, `owner` (the issue is the owner's claim) |
//! | `pattern.injected`, `pattern.feedback`, `pattern.pinned`, … | `jkz patterns`, `jkz run`, `jkz ui` | see [`crate::patterns::history`] |

pub mod close;
pub mod cmd;
pub mod describe;
pub mod event;
pub mod id;
pub mod index;
pub mod lines;
pub mod pending;
pub mod reconcile;
pub mod scan;
pub mod segment;
pub mod sources;

use std::io;
use std::path::Path;
use std::sync::Mutex;

pub use event::{act_as, Event};

use crate::state_dir::StateDir;

pub use crate::state_dir::layout::EVENTS_DIR;

/// The PreToolUse guard refused a tool call.
pub const GUARD_DENIED: &str = "guard.denied";
/// The PreToolUse guard left a tool call to the user: it could not tell
/// where the command writes, and another chat's claim could be there.
pub const GUARD_ASKED: &str = "guard.asked";

/// Appends `event` to the log of `state`. Never fails: an error is one
/// warning line on stderr (once per process). Nothing is logged where the
/// state directory is not there (not opted in, or not a directory: the
/// writer that needed it says so), so the log never adds a second warning
/// to a hook's.
pub fn emit(state: &StateDir, event: Event) {
    if !state.path().is_dir() {
        return;
    }
    if let Err(e) = try_emit(state, &event) {
        warn_once(
            "append",
            format!(
                "event {} not logged in {}: {e}",
                event.kind,
                state.join(EVENTS_DIR).display()
            ),
        );
    }
}

/// [`emit`] for a writer that knows only the state directory's path (a
/// file's parent): the directory exists, or nothing is logged.
pub fn emit_at(root: &Path, event: Event) {
    if root.is_dir() {
        emit(&StateDir::at(root), event);
    }
}

/// Appends `event`; `Ok(false)` when there is no state directory.
pub fn try_emit(state: &StateDir, event: &Event) -> io::Result<bool> {
    let Some(dir) = state.ensure_subdir(EVENTS_DIR)? else {
        return Ok(false);
    };
    let line = event.to_line();
    segment::append(&dir, &line, event.day())?;
    Ok(true)
}

/// The index of `state`'s log, up to date: closed segments compressed,
/// every event indexed, direct writes to pipeline files reconciled. `None`
/// when there is no state directory. Warnings go to stderr.
pub fn up_to_date(state: &StateDir) -> io::Result<Option<index::Index>> {
    up_to_date_for(state, None)
}

/// [`up_to_date`] for a reader of one issue's events: only that issue's
/// pipeline file is reconciled.
pub fn up_to_date_for(state: &StateDir, only: Option<&str>) -> io::Result<Option<index::Index>> {
    let Some(dir) = state.ensure_subdir(EVENTS_DIR)? else {
        return Ok(None);
    };
    let now = chrono::Utc::now();
    for problem in close::close_due(&dir, now.date_naive(), std::time::SystemTime::now()) {
        warn(problem);
    }
    let opened = index::Index::open(&dir)
        .and_then(|mut index| reconcile::reconcile(state, &mut index, only).map(|_| index));
    match opened {
        Ok(index) => Ok(Some(index)),
        // Damaged where opening could not see it: derived, so built anew.
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            warn(format!(
                "{}: {e}: rebuilding it from the log",
                dir.join(index::INDEX_FILE).display()
            ));
            let mut index = index::Index::rebuild(&dir)?;
            reconcile::reconcile(state, &mut index, only)?;
            Ok(Some(index))
        }
        Err(e) => Err(e),
    }
}

/// Writes `program: warning: message` on stderr, once per `key` in this
/// process: a log that cannot be appended to must not flood a hook's output.
pub fn warn_once(key: &'static str, message: String) {
    static SAID: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if said.contains(&key) {
        return;
    }
    said.push(key);
    drop(said);
    warn(message);
}

/// Writes `program: warning: message` on stderr unless this process said
/// exactly that already (a torn tail seen by two catch-ups is one warning).
pub fn warn_once_text(message: String) {
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if said.contains(&message) {
        return;
    }
    said.push(message.clone());
    drop(said);
    warn(message);
}

/// Writes `program: warning: message` on stderr, one line.
pub fn warn(message: impl AsRef<str>) {
    let program = std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "jkz".into());
    let line = message.as_ref().replace(['\n', '\r'], " ");
    eprintln!("{program}: warning: {}", crate::terminal_text::inert(&line));
}
