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

use super::memo;
use crate::client::HookEvent;
use crate::hook::Warnings;
use crate::state_dir::StateDir;

/// The tag of Gemini CLI's compression summary.
pub const SUMMARY_TAG: &str = "<state_snapshot>";

/// The request's messages, if the event has them.
fn messages(event: &HookEvent) -> Option<&Vec<Value>> {
    event
        .raw
        .raw
        .get("llm_request")
        .and_then(|r| r.get("messages"))
        .and_then(Value::as_array)
}

/// True when the request carries a summary this session's re-injection has
/// not answered yet; its digest is kept in the event's note for
/// [`render`].
pub fn goes_on(event: &mut HookEvent, warnings: &mut Warnings) -> bool {
    let Some(messages) = messages(event) else {
        warnings.warn("BeforeModel event without an llm_request.messages array: ignored");
        return false;
    };
    let Some((_, summary)) = summary_message(messages) else {
        return false;
    };
    let digest = sha256_hex(summary);
    let Some((state, session)) = memo::state_and_session(event, "BeforeModel", warnings) else {
        return false;
    };
    if memo::read(&state, &session).answered_summary.as_deref() == Some(digest.as_str()) {
        return false;
    }
    event.note = Some(digest);
    true
}

/// The answer that extends the request's summary with `context`, the
/// summary recorded as answered in the session's memo.
pub fn render(event: &HookEvent, context: &str, warnings: &mut Warnings) -> Option<String> {
    let messages = messages(event)?;
    let (at, _) = summary_message(messages)?;
    let answered = extended(messages, at, context);
    let state = StateDir::resolve(None, event.cwd.as_deref());
    if let Some(Ok(session)) = event.session() {
        let mut memo = memo::read(&state, &session);
        memo.answered_summary = event.note.clone();
        if let Err(e) = memo::write(&state, &session, &memo) {
            warnings.warn(format!(
                "writing {}: {e}",
                memo::path(&state, &session).display()
            ));
        }
    }
    Some(format!(
        "{}\n",
        json!({
            "hookSpecificOutput": {
                "hookEventName": "BeforeModel",
                "llm_request": {"messages": answered},
            }
        })
    ))
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
