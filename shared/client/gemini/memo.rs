//! One Gemini CLI session's memo, `state/clients/gemini/<session_id>.json`:
//! what the hooks already did for it, so that events Gemini CLI sends
//! again and again cost nothing when nothing changed.
//!
//! - `snapshot_fingerprint`: the [`super::pre_compress`] fingerprint of the
//!   state its last snapshot was taken of;
//! - `answered_summary`: the sha256 of the last compression summary
//!   (`<state_snapshot>`) the re-injection answered ([`super::before_model`]).
//!
//! Unknown fields survive a rewrite. A missing or unreadable memo is an
//! empty one (the next event then does its work once more). The events of
//! one session come one after the other, so the read-modify-write needs no
//! lock; the write is atomic.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::session_id::SessionId;
use crate::state_dir::{layout, StateDir};

/// The memo's fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Memo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_fingerprint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_summary: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The state directory (when the project opted in) and the session an
/// `event` named `hook` keeps its memo for; `None` after one line on
/// stderr when either is missing or bad (a project that did not opt in is
/// said nothing of).
pub fn state_and_session(
    event: &crate::client::HookEvent,
    hook: &str,
    warnings: &mut crate::hook::Warnings,
) -> Option<(StateDir, SessionId)> {
    let state = StateDir::resolve(None, event.cwd.as_deref());
    match state.ensure() {
        Ok(Some(_)) => {}
        Ok(None) => return None,
        Err(e) => {
            warnings.warn(format!("state directory {}: {e}", state.describe()));
            return None;
        }
    }
    match event.session() {
        Some(Ok(id)) => Some((state, id)),
        Some(Err(e)) => {
            warnings.warn(format!("{e}; {hook} ignored"));
            None
        }
        None => {
            warnings.warn(format!("{hook} event without a string session_id: ignored"));
            None
        }
    }
}

/// Where `session`'s memo lives.
pub fn path(state: &StateDir, session: &SessionId) -> PathBuf {
    state
        .join(layout::GEMINI_DIR)
        .join(format!("{}.json", session.as_str()))
}

/// The memo of `session`; empty when there is none or it cannot be read.
pub fn read(state: &StateDir, session: &SessionId) -> Memo {
    crate::state_dir::read_user_file(&path(state, session))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Writes `memo` (atomically); nothing when the state directory is not
/// there.
pub fn write(state: &StateDir, session: &SessionId, memo: &Memo) -> std::io::Result<()> {
    if state.ensure_subdir(layout::GEMINI_DIR)?.is_none() {
        return Ok(());
    }
    let mut bytes = serde_json::to_vec_pretty(memo).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    crate::atomic::write_atomic(&path(state, session), &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_keeps_unknown_fields() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("state")).unwrap();
        let state = StateDir::resolve(Some(&dir.path().join("state")), None);
        let session = SessionId::parse("s-1").unwrap();
        assert_eq!(read(&state, &session), Memo::default());
        std::fs::create_dir_all(state.join(layout::GEMINI_DIR)).unwrap();
        std::fs::write(
            path(&state, &session),
            r#"{"x-team":1,"answered_summary":"a"}"#,
        )
        .unwrap();
        let mut memo = read(&state, &session);
        assert_eq!(memo.answered_summary.as_deref(), Some("a"));
        memo.snapshot_fingerprint = Some("f".into());
        write(&state, &session, &memo).unwrap();
        let again = read(&state, &session);
        assert_eq!(again, memo);
        assert_eq!(again.other["x-team"], 1);
    }
}
