//! `jkz-session-start`: the Claude Code `SessionStart` hook (sources
//! `compact` and `resume`). Re-injects the decision-critical pipeline state.
//!
//! Exit codes: 0, always (a hook never blocks the session).

fn main() -> std::process::ExitCode {
    jkz::hook::main("jkz-session-start", |warnings| {
        jkz::compaction::session_start::run(std::io::stdin().lock(), warnings)
    })
}
