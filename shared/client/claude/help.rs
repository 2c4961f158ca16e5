//! Claude Code's paragraph of each hook's `--help`
//! ([`crate::client::help`]): what `jkz install` registers, and the shape
//! of each answer.

use super::shown;
use crate::client::help::HookProgram;
use crate::client::OutputKind;

/// Claude Code's paragraph of `program`'s help.
pub fn paragraph(program: HookProgram) -> Option<String> {
    Some(match program {
        HookProgram::PreCompact => "\
Claude Code: register it for PreCompact (jkz install does); it prints the
items on stdout, which the client appends to the summarizing request."
            .to_string(),
        HookProgram::SessionStart => "\
Claude Code: register it for SessionStart with the sources compact, resume
and fork, and for PostCompact (jkz install does). As SessionStart it prints
{\"hookSpecificOutput\":{\"hookEventName\":\"SessionStart\",
\"additionalContext\":…}}; as PostCompact it reads the summary from
compact_summary."
            .to_string(),
        HookProgram::PostToolUse => format!(
            "\
Claude Code: register it for PostToolUse with the matcher
Bash|Read|Grep|mcp__.* (jkz install does). It prints
{{\"hookSpecificOutput\": {{\"updatedToolOutput\": …}}}} (MCP tools:
updatedMCPToolOutput). The full output is read from the file the client
saved (persistedOutputPath) only when it is a regular file in the client's
own tool-results directory for the session (<transcript dir>/<session_id>/
tool-results/), reached through no symbolic link; any other path leaves the
tool's output as it stands. For Bash the cap is at most {bash} less stderr,
the most the client shows inline.",
            bash = crate::thousands::thousands(
                shown::inline_limit(OutputKind::Shell).unwrap_or_default()
            ),
        ),
        HookProgram::Chat => "\
Claude Code: register it for SessionStart, UserPromptSubmit, PostToolUse,
SessionEnd and PreToolUse with the matcher
Edit|Write|MultiEdit|NotebookEdit|Bash (jkz install does). A refusal is
{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",
\"permissionDecision\":\"deny\",\"permissionDecisionReason\":…}}, a question
permissionDecision \"ask\". The Bash wrap keeps a Bash command inline, and
only where every Bash command is pre-approved (bypassPermissions,
--allowedTools Bash, an allow rule Bash); it answers only updatedInput: the
client still checks the command's words."
            .to_string(),
    })
}
