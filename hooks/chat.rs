//! `jkz-chat`: the cross-chat registry's hook, one binary for every event
//! it handles (the event is read from the input's `hook_event_name`): the
//! registry's rules are one, and one registration line per event names it.
//!
//! Exit codes: 0, always (a hook never blocks the chat).

const LONG_ABOUT: &str = "\
Claude Code hook for the cross-chat registry, state/chat.db. Register it for
SessionStart (registers the chat: cwd, worktree, branch, client pid),
UserPromptSubmit and PostToolUse (refresh the chat's heartbeat, written at
most every 30 s), SessionEnd (marks the chat gone, releases its claims) and
PreToolUse with the matcher Edit|Write|MultiEdit|NotebookEdit|Bash.

PreToolUse prints {\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",
\"permissionDecision\":\"deny\",\"permissionDecisionReason\":…}} when the call
would change a file inside a worktree, or issue N's pipeline state
(state/pipeline/N.json and its companions, `jkz state set N`, a redirection,
tee, mv, cp, rm or sed -i into one), that another live chat has claimed
(jkz claim). A chat silent for 5 minutes is stale: its claims no longer
stop anyone and `jkz claim N --take` takes them over. Anything else passes
with no output.

State directory: JKZ_STATE_DIR, else $CLAUDE_PROJECT_DIR/state, else the
event's cwd + /state; only JKZ_STATE_DIR is created when missing, the others
are used only if they exist (jkz install creates state/).

Exit code: 0, always; a problem (bad input, a corrupt registry, which is
then rebuilt empty, an unwritable state directory) is one line on stderr.";

fn main() -> std::process::ExitCode {
    let cli = jkz::hook::command(
        "jkz-chat",
        "Register the chat, keep its heartbeat, refuse edits of what another live chat claimed",
        LONG_ABOUT,
    );
    jkz::hook::main(cli, |warnings| {
        if let Some(answer) = jkz::registry::hook::run(std::io::stdin().lock(), warnings) {
            jkz::hook::print(&answer, warnings);
        }
    })
}
