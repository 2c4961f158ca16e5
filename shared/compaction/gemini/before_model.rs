//! Gemini CLI's `BeforeModel`: the re-injection after a compression.
//!
//! Gemini CLI compresses a long history into one user message holding the
//! summary, an XML `<state_snapshot>` its summarizer writes, followed by
//! "Got it. Thanks for the additional context!" and the newest turns. No
//! event says a compression happened, and `PreCompress` cannot steer the
//! summary. `BeforeModel` fires before every model request with the
//! request's text messages (`llm_request.messages`, `{role, content}`).
//! When they carry a `<state_snapshot>` this session's re-injection has
//! not answered yet (its sha256 is not the memo's `answered_summary`),
//! the hook answers once with `hookSpecificOutput.llm_request.messages`:
//! the messages up to the summary's, the summary's own extended with the
//! decision-critical state (the text `jkz-session-start` re-injects for
//! Claude Code after a compaction). Gemini CLI merges the answer into
//! that one request by position (messages past the ones answered stay as
//! they are) and keeps its own history unchanged: the model reads the
//! state in the first request after the compression, not in every later
//! one. Every other request costs a scan of the input and nothing more.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::client::gemini::memo;
use crate::hook::Warnings;
use crate::hook_input::HookInput;
use crate::state_dir::StateDir;

/// The tag of Gemini CLI's compression summary.
pub const SUMMARY_TAG: &str = "<state_snapshot>";

/// The answer to one `BeforeModel` event, if the request needs one.
pub fn run(event: &HookInput, warnings: &mut Warnings) -> Option<String> {
    let Some(messages) = event
        .raw
        .get("llm_request")
        .and_then(|r| r.get("messages"))
        .and_then(Value::as_array)
    else {
        warnings.warn("BeforeModel event without an llm_request.messages array: ignored");
        return None;
    };
    let (at, summary) = summary_message(messages)?;
    let state = StateDir::resolve(None, event.cwd().as_deref());
    match state.ensure() {
        Ok(Some(_)) => {}
        Ok(None) => return None,
        Err(e) => {
            warnings.warn(format!("state directory {}: {e}", state.describe()));
            return None;
        }
    }
    let session = match event.session_id() {
        Some(Ok(id)) => id,
        Some(Err(e)) => {
            warnings.warn(format!("{e}; BeforeModel ignored"));
            return None;
        }
        None => {
            warnings.warn("BeforeModel event without a string session_id: ignored");
            return None;
        }
    };
    let digest = sha256_hex(summary);
    let mut memo = memo::read(&state, &session);
    if memo.answered_summary.as_deref() == Some(digest.as_str()) {
        return None;
    }
    let restored = crate::compaction::session_start::restore(event, "compact", warnings);
    let answered = extended(messages, at, &restored.context);
    memo.answered_summary = Some(digest);
    if let Err(e) = memo::write(&state, &session, &memo) {
        warnings.warn(format!(
            "writing {}: {e}",
            memo::path(&state, &session).display()
        ));
    }
    crate::events::sources::session_started(&state, Some(session.as_str()), "compact");
    Some(
        json!({
            "hookSpecificOutput": {
                "hookEventName": "BeforeModel",
                "llm_request": {"messages": answered},
            }
        })
        .to_string(),
    )
}

/// The last message carrying a compression summary: its index and the
/// summary's text (from the tag on).
pub fn summary_message(messages: &[Value]) -> Option<(usize, &str)> {
    messages.iter().enumerate().rev().find_map(|(i, m)| {
        let content = m.get("content").and_then(Value::as_str)?;
        let start = content.find(SUMMARY_TAG)?;
        Some((i, &content[start..]))
    })
}

/// `messages[..=at]`, the one at `at` with `context` appended.
pub fn extended(messages: &[Value], at: usize, context: &str) -> Vec<Value> {
    let mut out: Vec<Value> = messages[..=at].to_vec();
    if let Some(Value::String(content)) = out[at].get_mut("content") {
        content.push_str("\n\n");
        content.push_str(context);
    }
    out
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_newest_summary_and_extends_only_it() {
        let messages = vec![
            json!({"role": "user", "content": "<session_context>x</session_context><state_snapshot>old</state_snapshot>"}),
            json!({"role": "model", "content": "Got it."}),
            json!({"role": "user", "content": "<state_snapshot>new</state_snapshot>"}),
            json!({"role": "model", "content": "ok"}),
            json!({"role": "user", "content": "what next"}),
        ];
        let (at, summary) = summary_message(&messages).unwrap();
        assert_eq!(at, 2);
        assert_eq!(summary, "<state_snapshot>new</state_snapshot>");
        let out = extended(&messages, at, "## jkz: state");
        assert_eq!(out.len(), 3, "later messages are left to the client");
        assert_eq!(out[..2], messages[..2]);
        assert_eq!(
            out[2]["content"],
            "<state_snapshot>new</state_snapshot>\n\n## jkz: state"
        );
        assert_eq!(out[2]["role"], "user");
        assert!(summary_message(&messages[3..]).is_none());
        assert!(summary_message(&[json!({"role": "user", "content": 7})]).is_none());
    }
}
