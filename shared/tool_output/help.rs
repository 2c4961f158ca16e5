//! `jkz-post-tool-use --help`: what the hook does, with its cap and the
//! built-in role rules spelled from the constants that apply them.

use super::{roles, CAP_VARIABLE, DEFAULT_CAP};
use crate::client::help::HookProgram;

/// The one-line description.
pub const ABOUT: &str =
    "Cap a tool's output before the model sees it, keeping head, tail and protected blocks";

/// The long help: what the hook does, its cap, the role rules, each
/// client's registration and answer ([`crate::client::help`]), its state
/// and its exit code.
pub fn long_about() -> String {
    format!(
        "\
Output guard after a tool call. Reads the hook event (JSON) on stdin. When
the tool's output is longer than the cap, answers with what jkz-truncate's
engine makes of the full output: the head, every protected block that
fits, the tail, one marker per gap naming the saved full output, as far as
the client lets a hook change an output (each client below). The full
output is read from the file the client saved when there is one, else from
the event. At or under the cap it prints nothing and the tool's output
stands.

Cap: {CAP_VARIABLE} bytes (default {DEFAULT_CAP}; 0 turns the guard off);
for a shell command at most what the client shows inline, less stderr.

The head share comes from the command (a shell tool) or the tool's name.
The user's rules come first: {rules_file} in the project, one
rule a line, SHARE WORDS… (e.g. `0.2 bazel test`), # comments. Built-in
rules, tried in order (first match wins):
{table}{clients}

State directory: the repository's, used only if it exists and git does not
track it (which one, and why: docs/worktrees.md). Writes
state/context-offload/full-*.txt (the full output) and one line per guarded
call to state/tool-output.jsonl (the savings ledger; jkz stats sums it up).

Exit code: 0, always; a problem is one line on stderr and no output, so the
tool's own output stands.",
        table = roles::table().trim_end(),
        rules_file = crate::jkz_toml::TOOL_ROLES_FILE,
        clients = crate::client::help::clients(HookProgram::PostToolUse),
    )
}
