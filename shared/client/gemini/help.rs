//! Gemini CLI's paragraph of each hook's `--help`
//! ([`crate::client::help`]): what `jkz install --client gemini`
//! registers, and the shape of each answer.

use crate::client::help::HookProgram;

/// Gemini CLI's paragraph of `program`'s help.
pub fn paragraph(program: HookProgram) -> Option<String> {
    Some(match program {
        HookProgram::PreCompact => "\
Gemini CLI (PreCompress, which fires before every turn): the same snapshot,
taken only when state/pipeline/ changed since this session's last one (or
on /compress), and nothing printed (docs/clients.md)."
            .to_string(),
        HookProgram::SessionStart => "\
Gemini CLI: register it for SessionStart (matcher resume; same answer) and
BeforeModel: when the request's messages carry a compression summary
(<state_snapshot>) this session's re-injection has not answered yet, it
prints {\"hookSpecificOutput\":{\"hookEventName\":\"BeforeModel\",
\"llm_request\":{\"messages\":…}}}, the summary's message extended with the
same items; otherwise nothing (docs/clients.md)."
            .to_string(),
        HookProgram::PostToolUse => format!(
            "\
Gemini CLI: register it for AfterTool with the matcher ^run_shell_command$
(jkz install --client gemini does). Gemini cannot replace an output, only
add to it before its own cut (over {keeps} characters): the protected
blocks and signal lines that cut would drop are added as
{{\"hookSpecificOutput\":{{\"hookEventName\":\"AfterTool\",
\"additionalContext\":…}}}} (docs/clients.md).",
            keeps = crate::thousands::thousands(super::SHELL_KEEPS),
        ),
        HookProgram::Chat => "\
Gemini CLI: register it for SessionStart, BeforeAgent, AfterTool,
SessionEnd and BeforeTool with the matcher
^(run_shell_command|write_file|replace)$ (Gemini matchers are regular
expressions); the same refusal is printed as
{\"decision\":\"deny\",\"reason\":…}, a question as {\"decision\":\"ask\",…}
(docs/clients.md). The Bash wrap runs a run_shell_command through
jkz-truncate --run (hookSpecificOutput.tool_input)."
            .to_string(),
    })
}
