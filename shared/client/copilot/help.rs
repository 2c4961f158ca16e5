//! Copilot CLI's paragraph of each hook's `--help`
//! ([`crate::client::help`]): what `jkz install --client copilot`
//! registers, and the shape of each answer.

use super::EVENT_VAR;
use crate::client::help::HookProgram;

/// Copilot CLI's paragraph of `program`'s help.
pub fn paragraph(program: HookProgram) -> Option<String> {
    Some(match program {
        HookProgram::PreCompact => "\
Copilot CLI (preCompact): the same snapshot; nothing reaches its
summarizer, so nothing is printed, and the session is marked for the
re-injection after the summary (docs/clients.md)."
            .to_string(),
        HookProgram::SessionStart => "\
Copilot CLI: registered for sessionStart (a resumed session: the same
items) and postToolUse: the first tool call after a compaction answers
{\"additionalContext\":…}, which reaches every later request; once per
compaction (docs/clients.md)."
            .to_string(),
        HookProgram::PostToolUse => "\
Copilot CLI: not registered (its postToolUse gets only a short note of a
long output); the Bash wrap of jkz-chat guards a shell command's output
instead."
            .to_string(),
        HookProgram::Chat => format!(
            "\
Copilot CLI: registered for sessionStart, userPromptSubmitted, preToolUse,
postToolUse and sessionEnd in .github/hooks/jkz.json (jkz install --client
copilot does; each command line names its event in {EVENT_VAR}). A
refusal is {{\"permissionDecision\":\"deny\",\"permissionDecisionReason\":…}},
a question permissionDecision \"ask\". The Bash wrap runs a bash command
through jkz-truncate --run (modifiedArgs, every argument repeated)."
        ),
    })
}
