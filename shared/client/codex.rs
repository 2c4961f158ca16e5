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
//!   call to run through `jkz-truncate --run` (`permissionDecision:
//!   "allow"` with `updatedInput`).
//! - Its hooks cannot ask the user (`ask` is an error Codex ignores): a
//!   question is rendered as a refusal that says why.
//!
//! Its events have Claude Code's shape and names, so they are parsed by
//! [`claude::parse_with`].

pub mod compact_prompt;
pub mod help;
pub mod patch;

use std::path::PathBuf;

use serde_json::json;

use super::edge::Hook;
use super::event::HookEvent;
use super::{claude, Answer, Client, Parsed};
use crate::hook::Warnings;
use crate::hook_input::HookInput;
use crate::reduce::ClientCut;

/// The older variable that turns the Bash wrap off for Codex CLI (`0`,
/// `off`, `false`, `no`), beside `JKZ_BASH_WRAP`.
pub const OLD_OPT_OUT: &str = "JKZ_CODEX_GUARD";

/// Codex CLI keeps 10,000 tokens of a shell output, counted as 4 bytes
/// each, head and tail (measured: 419,000 bytes reached the model as
/// 40,214 characters).
pub const SHELL_KEEPS: u64 = 40_000;
const SHELL_SHOWN: u64 = 40_214;

/// How Codex CLI cuts a shell output: head and tail, half each.
pub const SHELL_CUT: ClientCut = ClientCut {
    whole: SHELL_KEEPS as usize,
    read: usize::MAX,
    head: SHELL_KEEPS as usize / 2,
    tail: SHELL_KEEPS as usize / 2,
};

/// Bytes Codex CLI shows of a shell output of `bytes` bytes.
pub fn shell_shown(bytes: u64) -> u64 {
    if bytes > SHELL_KEEPS {
        SHELL_SHOWN
    } else {
        bytes
    }
}

/// True when the process `name` runs Codex CLI: its native binary, `codex`
/// (the `codex` command of npm is a `node` script that starts it; hooks
/// and shell commands run under the native one).
pub fn is_process(name: &str) -> bool {
    name == "codex"
}

/// True when Codex CLI sent `input`: its events carry a `turn_id`, and its
/// `SessionStart` (which has none) names a rollout file as its transcript.
pub fn sent(input: &HookInput) -> bool {
    input.raw.contains_key("turn_id") || is_rollout(input)
}

/// True when the event's `transcript_path` is a Codex rollout file: Codex
/// names every session's transcript `rollout-<time>-<id>.jsonl`, Claude
/// Code `<session id>.jsonl`.
fn is_rollout(input: &HookInput) -> bool {
    input
        .text("transcript_path")
        .and_then(|p| std::path::Path::new(p).file_name())
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
}

/// A Codex CLI event as jkz's.
pub fn parse(input: HookInput, hook: &Hook) -> Parsed {
    claude::parse_with(Client::Codex, input, hook)
}

/// `answer` in Codex CLI's contract.
pub fn render(event: &HookEvent, answer: Answer, warnings: &mut Warnings) -> Option<String> {
    match answer {
        Answer::Nothing => None,
        Answer::Deny(why) => Some(claude::decision("deny", &why)),
        Answer::Ask(why) => Some(claude::decision(
            "deny",
            &format!(
                "{why} Codex CLI's hooks cannot ask the user, so jkz refuses instead: ask the user to \
                 run it, or spell the command so that what it writes is named."
            ),
        )),
        Answer::RewriteCommand(command) => {
            let updated = claude::updated_input(event, command)?;
            Some(
                json!({
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "allow",
                        "updatedInput": updated,
                    }
                })
                .to_string(),
            )
        }
        // Its PostToolUse takes no updated output.
        Answer::ReplaceOutput(_) => None,
        Answer::AddContext(context) => Some(format!(
            "{}\n",
            claude::additional_context(event, &context)
        )),
        Answer::Summarize {
            instructions,
            snapshot,
            state_root,
        } => Some(answer_pre_compact(
            state_root.as_deref(),
            &instructions,
            snapshot,
            warnings,
        )),
    }
}

/// Why Codex CLI leaves a command starting with `first` to itself:
/// `apply_patch` (its edit tool, which it intercepts by its first word).
pub fn intercepts(first: &str) -> Option<&'static str> {
    matches!(first, "apply_patch" | "applypatch").then_some("Codex intercepts apply_patch")
}

/// The files a patch body in `text` names ([`patch`]).
pub fn patched_files(text: &str) -> Vec<PathBuf> {
    if !patch::looks_like_patch(text) {
        return Vec::new();
    }
    patch::patched_files(text)
        .iter()
        .map(|f| PathBuf::from(f.path))
        .collect()
}

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
