//! `jkz-post-tool-use --help`: what the hook does, with its cap and the
//! built-in role rules spelled from the constants that apply them.

use super::{roles, CAP_VARIABLE, DEFAULT_CAP};
use crate::client::{Client, Viewer};

/// The one-line description.
pub const ABOUT: &str =
    "Cap a tool's output before the model sees it, keeping head, tail and protected blocks";

/// The long help: what the hook does, its cap, the role rules, its state
/// and its exit code.
pub fn long_about() -> String {
    format!(
        "\
Claude Code's PostToolUse hook, for Bash, Read, Grep and MCP tools (mcp__*).
Reads the hook event (JSON) on stdin. When the tool's output is longer than
the cap, prints {{\"hookSpecificOutput\": {{\"updatedToolOutput\": …}}}} (MCP tools:
updatedMCPToolOutput) holding what jkz-truncate's engine makes of the full
output: the head, every protected block that fits, the tail, one marker per
gap naming the saved full output. The full output is read from the file the
client saved (persistedOutputPath) when there is one, else from the event.
That file is read only when it is a regular file in the client's own
tool-results directory for the session (<transcript dir>/<session_id>/
tool-results/), reached through no symbolic link; any other path leaves the
tool's output as it stands. At or under the cap it prints nothing and the
tool's output stands.

Cap: {CAP_VARIABLE} bytes (default {DEFAULT_CAP}; 0 turns the guard off); for
Bash at most {bash} less stderr, the most the client shows inline.

The head share comes from the command (Bash) or the tool's name. The user's
rules come first: {rules_file} in the project, one rule a line,
SHARE WORDS… (e.g. `0.2 bazel test`), # comments. Built-in rules, tried in
order (first match wins):
{table}
State directory: the repository's, used only if it exists and git does not
track it (which one, and why: docs/worktrees.md). Writes
state/context-offload/full-*.txt (the full output) and one line per guarded
call to state/tool-output.jsonl (the savings ledger; jkz stats sums it up).

Exit code: 0, always; a problem is one line on stderr and no output, so the
tool's own output stands.",
        bash = crate::truncate::thousands(
            Viewer::shell(Client::Claude)
                .inline_limit()
                .unwrap_or_default()
        ),
        table = roles::table(),
        rules_file = crate::jkz_toml::TOOL_ROLES_FILE,
    )
}
