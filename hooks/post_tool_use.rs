//! `jkz-post-tool-use`: the Claude Code `PostToolUse` hook. Applies the
//! truncation contract to a tool's output longer than the cap before the
//! model sees it.
//!
//! Exit codes: 0, always (a hook never hurts the tool call).

const LONG_ABOUT: &str = "\
Claude Code's PostToolUse hook, for Bash, Read, Grep and MCP tools (mcp__*).
Reads the hook event (JSON) on stdin. When the tool's output is longer than
the cap, prints {\"hookSpecificOutput\": {\"updatedToolOutput\": …}} (MCP tools:
updatedMCPToolOutput) holding what jkz-truncate's engine makes of the full
output: the head, every protected block that fits, the tail, one marker per
gap naming the saved full output. The full output is read from the file the
client saved (persistedOutputPath) when there is one, else from the event.
At or under the cap it prints nothing and the tool's output stands.

Cap: JKZ_TOOL_OUTPUT_BYTES bytes (default 20000; 0 turns the guard off); for
Bash at most 30,000 less stderr, the most the client shows inline.

The head share comes from the command (Bash) or the tool's name. The user's
rules come first: .claude/jkz-tool-roles in the project, one rule a line,
SHARE WORDS… (e.g. `0.2 bazel test`), # comments. Built-in rules, tried in
order (first match wins):
";

const AFTER: &str = "
State directory: JKZ_STATE_DIR, else $CLAUDE_PROJECT_DIR/state, else the
event's cwd + /state; written only when it exists (jkz install creates it)
or JKZ_STATE_DIR names it. Writes state/context-offload/full-*.txt (the full
output) and one line per guarded call to state/tool-output.jsonl (the
savings ledger; jkz stats sums it up).

Exit code: 0, always; a problem is one line on stderr and no output, so the
tool's own output stands.";

fn main() -> std::process::ExitCode {
    let help = format!("{LONG_ABOUT}{}{AFTER}", jkz::tool_output::roles::table());
    let cli = jkz::hook::command(
        "jkz-post-tool-use",
        "Cap a tool's output before the model sees it, keeping head, tail and protected blocks",
        Box::leak(help.into_boxed_str()),
    );
    jkz::hook::main(cli, |warnings| {
        if let Some(answer) = jkz::tool_output::run(std::io::stdin().lock(), warnings) {
            jkz::hook::print(&answer, warnings);
        }
    })
}
