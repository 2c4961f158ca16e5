//! `jkz-session-start`: the Claude Code `SessionStart` hook (sources
//! `compact` and `resume`). Re-injects the decision-critical pipeline state.
//!
//! Exit codes: 0, always (a hook never blocks the session).

const LONG_ABOUT: &str = "\
Claude Code's SessionStart hook (register it for the sources compact and
resume). Reads the hook event (JSON) on stdin and prints
{\"hookSpecificOutput\":{\"hookEventName\":\"SessionStart\",\"additionalContext\":…}}
with the decision-critical items (under 4,000 characters): the live pipeline
state, compared with the newest snapshot of this session, else of the
project, which supplies pipelines whose files are gone since; says when the
snapshot was taken, which items changed since, and when the branch or HEAD
moved. Prints nothing for other sources.

State directory: JKZ_STATE_DIR, else $CLAUDE_PROJECT_DIR/state, else the
event's cwd + /state; only JKZ_STATE_DIR is created when missing, the others
are used only if they exist (jkz install creates state/).

Exit code: 0, always; a problem is one line on stderr.";

fn main() -> std::process::ExitCode {
    let cli = jkz::hook::command(
        "jkz-session-start",
        "Re-inject the decision-critical pipeline state after compaction or on resume",
        LONG_ABOUT,
    );
    jkz::hook::main(cli, |warnings| {
        jkz::compaction::session_start::run(std::io::stdin().lock(), warnings)
    })
}
