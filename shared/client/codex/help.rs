//! Codex CLI's paragraph of each hook's `--help`
//! ([`crate::client::help`]): what `jkz install --client codex` registers,
//! and the shape of each answer.

use crate::client::help::HookProgram;
use crate::state_dir::layout::CODEX_COMPACT_PROMPT;

/// Codex CLI's paragraph of `program`'s help.
pub fn paragraph(program: HookProgram) -> Option<String> {
    Some(match program {
        HookProgram::PreCompact => format!(
            "\
Codex CLI: register it for PreCompact (jkz install --client codex does).
Codex takes only JSON there and cannot steer its summary with it: the items
go to the compaction prompt it reads when a session starts
(state/{CODEX_COMPACT_PROMPT}, named by {key} in
.codex/config.toml), and stdout gets a systemMessage saying where the
snapshot is.",
            key = crate::setup::codex::PROMPT_KEY,
        ),
        HookProgram::SessionStart => "\
Codex CLI: register it for SessionStart with the sources compact and resume
(jkz install --client codex does); the same answer as Claude Code's, which
Codex puts in the next request as a developer message."
            .to_string(),
        HookProgram::PostToolUse => "\
Codex CLI: not registered (its PostToolUse cannot replace an output); the
Bash wrap of jkz-chat guards a shell command's output instead."
            .to_string(),
        HookProgram::Chat => "\
Codex CLI: register it for SessionStart, UserPromptSubmit, PostToolUse,
SessionEnd and PreToolUse with the matcher Bash|apply_patch (jkz install
--client codex does); the refusal is Claude Code's JSON, and a question is
a refusal (Codex's hooks cannot ask). The Bash wrap runs a Bash command
through jkz-truncate --run (permissionDecision \"allow\" with updatedInput)."
            .to_string(),
    })
}
