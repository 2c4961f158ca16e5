//! Gemini CLI's `PreCompress`: a snapshot only when something changed.
//!
//! Gemini CLI fires `PreCompress` at the start of every turn, before it
//! checks whether the history is over its compression threshold, and it
//! neither waits for nor reads anything the hook says about the summary.
//! So the hook must be cheap and idempotent: it takes the snapshot
//! `jkz-pre-compact` takes for Claude Code only when the pipeline state
//! changed since this session's last one, and prints nothing.
//!
//! "Changed" is a fingerprint ([`fingerprint`]): the sha256 of the name,
//! size and modification time of every entry of `state/pipeline/`
//! (a listing and one `stat` per file, no file read), kept in the session's
//! [memo](super::memo). A `manual` trigger (`/compress`) always snapshots:
//! the user asked for a compression, it is about to happen. Git state alone
//! moving does not make a new snapshot: the re-injection reads git live.

use std::path::Path;
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};

use super::memo;
use crate::client::HookEvent;
use crate::hook::Warnings;
use crate::state_dir::{layout, StateDir};

/// True when this `PreCompress` needs a snapshot: the pipeline state
/// changed since the session's last one, or the user asked for the
/// compression. The fingerprint is kept in the event's note for
/// [`remember`].
pub fn goes_on(event: &mut HookEvent, warnings: &mut Warnings) -> bool {
    // A project that did not opt in (no state/) has nothing to keep.
    let Some((state, session)) = memo::state_and_session(event, "PreCompress", warnings) else {
        return false;
    };
    let print = fingerprint(&state.join(layout::PIPELINE_DIR));
    let manual = event.raw.trigger() == Some("manual");
    let memo = memo::read(&state, &session);
    if !manual && memo.snapshot_fingerprint.as_deref() == Some(print.as_str()) {
        return false;
    }
    event.note = Some(print);
    true
}

/// Records the snapshot's fingerprint in the session's memo. The
/// summarizer instructions are not printed: Gemini CLI has no place for
/// them, and plain text would reach the user as a message.
pub fn remember(event: &HookEvent, warnings: &mut Warnings) {
    let state = StateDir::resolve(None, event.cwd.as_deref());
    let Some(Ok(session)) = event.session() else {
        return;
    };
    let mut memo = memo::read(&state, &session);
    memo.snapshot_fingerprint = event.note.clone();
    if let Err(e) = memo::write(&state, &session, &memo) {
        warnings.warn(format!(
            "writing {}: {e}",
            memo::path(&state, &session).display()
        ));
    }
}

/// The fingerprint of the pipeline directory `dir`: sha256 over its
/// entries' names, sizes and modification times, in name order. A missing
/// or unreadable directory has a fingerprint of its own.
pub fn fingerprint(dir: &Path) -> String {
    let mut entries: Vec<(String, u64, u128)> = match std::fs::read_dir(dir) {
        Ok(read) => read
            .flatten()
            .map(|e| {
                let meta = e.metadata().ok();
                let len = meta.as_ref().map_or(0, |m| m.len());
                let mtime = meta
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                (e.file_name().to_string_lossy().into_owned(), len, mtime)
            })
            .collect(),
        Err(e) => vec![(format!("unreadable: {}", e.kind()), 0, 0)],
    };
    entries.sort_unstable();
    let mut hash = Sha256::new();
    for (name, len, mtime) in entries {
        hash.update(name.as_bytes());
        hash.update([0]);
        hash.update(len.to_le_bytes());
        hash.update(mtime.to_le_bytes());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_moves_with_the_pipeline_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let missing = fingerprint(&dir.path().join("pipeline"));
        let pipeline = dir.path().join("pipeline");
        std::fs::create_dir(&pipeline).unwrap();
        let empty = fingerprint(&pipeline);
        assert_ne!(missing, empty);
        std::fs::write(pipeline.join("1.json"), "{}").unwrap();
        let one = fingerprint(&pipeline);
        assert_ne!(one, empty);
        assert_eq!(fingerprint(&pipeline), one, "nothing changed, same print");
        std::fs::write(pipeline.join("1.json"), r#"{"1":{}}"#).unwrap();
        assert_ne!(fingerprint(&pipeline), one, "a rewrite changes the size");
        std::fs::write(dir.path().join("other.txt"), "x").unwrap();
        let now = fingerprint(&pipeline);
        assert_eq!(fingerprint(&pipeline), now);
    }
}
