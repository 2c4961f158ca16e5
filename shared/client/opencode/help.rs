//! OpenCode's paragraph of each hook's `--help`
//! ([`crate::client::help`]): what jkz's plugin hands each hook, and how
//! the plugin applies each answer.

use crate::client::help::HookProgram;

/// OpenCode's paragraph of `program`'s help.
pub fn paragraph(program: HookProgram) -> Option<String> {
    Some(match program {
        HookProgram::PreCompact => "\
OpenCode: jkz's plugin (jkz install --client opencode) hands it
experimental.session.compacting: the same snapshot, and the items answered
as {\"context\":…}, which the plugin adds to the summarizer's request."
            .to_string(),
        HookProgram::SessionStart => "\
OpenCode: jkz's plugin hands it session.compacted; the items are answered
as {\"system\":…}, which the plugin adds to the system prompt of every
later request."
            .to_string(),
        HookProgram::PostToolUse => format!(
            "\
OpenCode: jkz's plugin hands it tool.execute.after; for the bash tool the
answer {{\"output\":…}} is what the model reads instead (other tools cap
their own output). For bash the cap is at most {keeps}, the most OpenCode
shows.",
            keeps = crate::thousands::thousands(super::SHELL_KEEPS),
        ),
        HookProgram::Chat => "\
OpenCode: jkz's plugin hands it session.created, chat.message,
tool.execute.before, tool.execute.after and session.deleted. A refusal is
{\"deny\":…}, which the plugin throws so the tool does not run; a question
is a refusal (a plugin cannot ask). The Bash wrap runs a bash command
through jkz-truncate --run (args, every argument repeated)."
            .to_string(),
    })
}
