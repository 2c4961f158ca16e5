//! jkz's canonical answer to a hook event: what jkz wants done, in jkz's
//! words. The client's module renders it in its own contract (a JSON shape
//! on stdout, or nothing), and does the nearest thing its client allows
//! when it cannot express it (Codex CLI cannot ask the user, so a question
//! becomes a refusal that says why; Gemini CLI's `AfterTool` can only
//! append to an output).

use std::path::PathBuf;

/// What a feature answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Nothing to say: the client goes on as it would have.
    Nothing,
    /// Refuse the tool call; the reason is for the model.
    Deny(String),
    /// Leave the tool call to the user, with the reason.
    Ask(String),
    /// Run this shell command instead of the one the model wrote.
    RewriteCommand(String),
    /// Show the model this text instead of the tool's output.
    ReplaceOutput(String),
    /// Put this text in the model's context (after the tool's output, or
    /// at the start of the session).
    AddContext(String),
    /// Steer the compaction's summary: what it must keep. `snapshot`: where
    /// the state was saved, if it was; `state_root`: the state directory,
    /// when there is one.
    Summarize {
        instructions: String,
        snapshot: Option<String>,
        state_root: Option<PathBuf>,
    },
}
