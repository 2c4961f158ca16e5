//! `jkz-pre-compact`: the Claude Code `PreCompact` hook. Snapshots the event
//! and the pipeline state, and prints what the summary must keep.
//!
//! Exit codes: 0, always (a hook never blocks compaction).

const LONG_ABOUT: &str = "\
Claude Code's PreCompact hook. Reads the hook event (JSON) on stdin; writes
state/pre-compact-<UTC time>-<pid>.json (the event as received, every
pipeline file, the normalized views, git state), nudges the session's record
in state/session-snapshots/, applies retention (older than 7 days removed,
the newest 20 always kept) and prints on stdout, for the summarizer, the
decision-critical items with their current values.

State directory: JKZ_STATE_DIR, else $CLAUDE_PROJECT_DIR/state, else the
event's cwd + /state; only JKZ_STATE_DIR is created when missing, the others
are used only if they exist (jkz install creates state/).

Exit code: 0, always; a problem is one line on stderr.";

fn main() -> std::process::ExitCode {
    let cli = jkz::hook::command(
        "jkz-pre-compact",
        "Snapshot the pipeline state before compaction; tell the summarizer what must survive",
        LONG_ABOUT,
    );
    jkz::hook::main(cli, |warnings| {
        jkz::compaction::pre_compact::run(std::io::stdin().lock(), warnings)
    })
}
