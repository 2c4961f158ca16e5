//! Codex CLI's side of jkz's hooks: what Codex sends, and the answers its
//! contract allows (measured on `@openai/codex` 0.169.0; see
//! `docs/clients.md`).
//!
//! - `PreToolUse` (tools `Bash` and `apply_patch`, the input in
//!   `tool_input.command`): refused with the same
//!   `hookSpecificOutput.permissionDecision: "deny"` and a non-empty
//!   `permissionDecisionReason` Claude Code reads; an `apply_patch` body's
//!   files are read by [`patch`].
//! - `PreCompact`: stdout must be JSON with only `continue`, `stopReason`,
//!   `suppressOutput` or `systemMessage`; it cannot steer the summary. The
//!   summary is steered instead by the compaction prompt Codex reads from
//!   `experimental_compact_prompt_file` when a session starts, which
//!   [`compact_prompt`] keeps current.
//! - `SessionStart` (`startup`, `resume`, `clear`, `compact`): the same
//!   `hookSpecificOutput.additionalContext` as Claude Code's; Codex puts it
//!   in the next request as a developer message.
//! - `PostToolUse`: cannot replace a tool's output, so jkz's guard answers
//!   nothing there; it works in `PreToolUse` instead, rewriting a `Bash`
//!   call to run through `jkz-truncate --run` ([`guard`]).

pub mod compact_prompt;
pub mod guard;
pub mod patch;

use serde_json::json;

/// A `PreCompact` answer Codex accepts: JSON with `systemMessage` only,
/// shown to the user (the model never sees it).
pub fn pre_compact_answer(message: &str) -> String {
    format!("{}\n", json!({ "systemMessage": message }))
}

/// The PreCompact hook's answer to Codex: `instructions` (what the summary
/// must carry) written into the compaction prompt file of the state
/// directory `root`, and a `systemMessage` saying where the snapshot and
/// the prompt are. Without a state directory nothing is written and the
/// message says so.
pub fn answer_pre_compact(
    root: Option<&std::path::Path>,
    instructions: &str,
    snapshot: Option<String>,
    warnings: &mut crate::hook::Warnings,
) -> String {
    let Some(root) = root else {
        return pre_compact_answer(
            "jkz: no state directory here (run jkz install --client codex); nothing saved",
        );
    };
    let prompt = match compact_prompt::write(root, instructions) {
        Ok(path) => format!(
            "; compaction prompt for the next session refreshed in {}",
            path.display()
        ),
        Err(e) => {
            let path = compact_prompt::path(root);
            warnings.warn(format!("writing {}: {e}", path.display()));
            String::new()
        }
    };
    let saved = match snapshot {
        Some(path) => format!("jkz: pipeline state saved to {path}"),
        None => "jkz: no snapshot written".to_string(),
    };
    pre_compact_answer(&format!("{saved}{prompt}"))
}

/// Codex's edit tool, as PreToolUse names it (`tool_name`).
pub const APPLY_PATCH: &str = "apply_patch";
