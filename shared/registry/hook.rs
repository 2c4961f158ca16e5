//! `jkz-chat`, the registry's hook, for every event it is registered on;
//! the event comes from the input's `hook_event_name`:
//!
//! | event | what it does |
//! |---|---|
//! | `SessionStart` | registers the chat (cwd, worktree, branch, client pid) |
//! | `UserPromptSubmit`, `PostToolUse` | refreshes its heartbeat (a write at most every [`HEARTBEAT_EVERY`](super::HEARTBEAT_EVERY) s) |
//! | `PreToolUse` | refuses an edit of what another live chat owns ([`super::decision`]) |
//! | `SessionEnd` | marks the chat gone, releases its claims |
//!
//! It works only where the state directory exists (or `JKZ_STATE_DIR`
//! names it): in a project without `state/` it does nothing. A PreToolUse
//! call that targets nothing the registry guards returns before the
//! registry is opened, and with no `chat.db` yet nothing is claimed.
//! Problems (a corrupt or unreadable registry) are one line on stderr; the
//! tool call, prompt or session goes on.

use std::io::Read;
use std::path::Path;

use serde_json::{json, Value};

use super::chat::{client_pid, Place};
use super::clock::now;
use super::db::{with_registry, DB_FILE};
use super::decision::refusal;
use super::target::{pipeline_issue, resolve, targets, Target};
use crate::hook::Warnings;
use crate::hook_input::HookInput;
use crate::state_dir::StateDir;

/// The one-line summary of `jkz-chat --help`.
pub const ABOUT: &str =
    "Register the chat, keep its heartbeat, refuse edits of what another live chat claimed";

/// The rest of `jkz-chat --help`: what it reads, writes, answers; its exit code.
pub const LONG_ABOUT: &str = "\
Claude Code hook for the cross-chat registry, state/chat.db. Register it for
SessionStart (registers the chat: cwd, worktree, branch, client pid),
UserPromptSubmit and PostToolUse (refresh the chat's heartbeat, written at
most every 30 s), SessionEnd (marks the chat gone, releases its claims) and
PreToolUse with the matcher Edit|Write|MultiEdit|NotebookEdit|Bash.

PreToolUse prints {\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",
\"permissionDecision\":\"deny\",\"permissionDecisionReason\":…}} when the call
would change a file inside a worktree, or issue N's pipeline state
(state/pipeline/N.json and its companions, `jkz state set N`, a redirection,
tee, mv, cp, rm or sed -i into one), that another live chat has claimed
(jkz claim). A chat silent for 5 minutes is stale: its claims no longer
stop anyone and `jkz claim N --take` takes them over. Anything else passes
with no output.

State directory: JKZ_STATE_DIR, else the repository's one, found from
$CLAUDE_PROJECT_DIR, else the event's cwd (every worktree of a repository
shares one: see docs/worktrees.md); used only if it exists (jkz install
creates it), JKZ_STATE_DIR is created when missing.

Exit code: 0, always; a problem (bad input, a corrupt registry, which is
then rebuilt empty, an unwritable state directory) is one line on stderr.";

/// Runs the hook on the event read from `input`; returns what to print on
/// stdout (only a PreToolUse refusal prints anything).
pub fn run(input: impl Read, warnings: &mut Warnings) -> Option<String> {
    let event = match HookInput::read(input) {
        Ok(e) => e,
        Err(e) => {
            warnings.warn(e.to_string());
            return None;
        }
    };
    let name = event.event_name().unwrap_or_default().to_string();
    let cwd = event.cwd();
    // A call that targets nothing guarded ends here, before any disk access.
    let guarded = if name == "PreToolUse" {
        let tool = event.text("tool_name").unwrap_or_default();
        let base = cwd.clone().unwrap_or_else(|| ".".into());
        let found = targets(
            tool,
            event.raw.get("tool_input").unwrap_or(&Value::Null),
            &base,
        );
        if found.is_empty() {
            return None;
        }
        found
    } else {
        Vec::new()
    };
    let session = match event.session_id() {
        Some(Ok(id)) => id,
        Some(Err(e)) => {
            warnings.warn(e.to_string());
            return None;
        }
        None => {
            warnings.warn(format!("{name} event without session_id: ignored"));
            return None;
        }
    };
    let state = StateDir::resolve(None, cwd.as_deref());
    crate::hook::warn_state_problem(&state, warnings);
    let root = match state.ensure() {
        Ok(Some(root)) => root.to_path_buf(),
        Ok(None) => return None,
        Err(e) => {
            warnings.warn(format!("state directory {}: {e}", state.describe()));
            return None;
        }
    };
    let place = || Place::of(cwd.as_deref().unwrap_or(Path::new(".")));
    let now = now();
    let session = session.as_str();
    let done = match name.as_str() {
        "SessionStart" => {
            let (place, pid) = (place(), client_pid());
            with_registry(&root, |r| r.register(session, &place, pid, now)).map(|(_, n)| n)
        }
        "UserPromptSubmit" | "PostToolUse" => {
            with_registry(&root, |r| r.heartbeat(session, place, now)).map(|(_, n)| n)
        }
        "SessionEnd" => with_registry(&root, |r| r.end(session, now)).map(|(_, n)| n),
        "PreToolUse" => {
            if !root.join(DB_FILE).exists() {
                return None;
            }
            let pipeline_dir = resolve(&state.join(crate::state_dir::layout::PIPELINE_DIR));
            let lookups: Vec<(Option<String>, Option<String>)> = guarded
                .iter()
                .map(|t| match t {
                    Target::File(f) => (
                        Some(f.display().to_string()),
                        pipeline_issue(f, &pipeline_dir),
                    ),
                    Target::Pipeline(issue) => (None, Some(issue.clone())),
                })
                .collect();
            let found = with_registry(&root, |r| {
                let mut all = Vec::new();
                for (file, issue) in &lookups {
                    all.extend(r.claims_covering(session, file.as_deref(), issue.as_deref())?);
                }
                Ok(all)
            });
            match found {
                Ok((others, note)) => {
                    if let Some(note) = note {
                        warnings.warn(note);
                    }
                    return refusal(&guarded, &others, &pipeline_dir, now).map(|why| deny(&why));
                }
                Err(e) => Err(e),
            }
        }
        other => {
            warnings.warn(format!(
                "event {other:?} is not one jkz-chat handles (SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, SessionEnd): ignored"
            ));
            return None;
        }
    };
    match done {
        Ok(Some(note)) => warnings.warn(note),
        Ok(None) => {}
        Err(e) => warnings.warn(format!(
            "registry unavailable, nothing recorded or checked: {e}"
        )),
    }
    None
}

/// The PreToolUse answer that refuses the call, with `why` for the model.
pub fn deny(why: &str) -> String {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": why,
        }
    })
    .to_string()
}
