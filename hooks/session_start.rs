//! `jkz-session-start`: the Claude Code `SessionStart` hook (sources
//! `compact`, `resume` and `fork`) and `PostCompact` hook. Re-injects the
//! decision-critical pipeline state, first what the compaction summary
//! dropped; its help and rules live in `jkz::compaction::session_start` and
//! `jkz::compaction::post_compact`.
//!
//! Exit codes: 0, always (a hook never blocks the session).

fn main() -> std::process::ExitCode {
    let cli = jkz::commands::hook("jkz-session-start");
    jkz::hook::main(cli, |warnings| {
        jkz::compaction::hooks::session_start(std::io::stdin().lock(), warnings)
    })
}
