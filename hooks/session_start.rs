//! `jkz-session-start`: the SessionStart hook (sources `compact`, `resume`
//! and `fork`), the PostCompact hook, and Gemini CLI's BeforeModel.
//! Re-injects the decision-critical pipeline state, first what the
//! compaction summary dropped; its help and rules live in
//! `jkz::compaction::session_start` and `jkz::compaction::post_compact`.
//!
//! Exit codes: 0, always (a hook never blocks the session).

use jkz::compaction::{hooks, session_start};

fn main() -> std::process::ExitCode {
    let cli = jkz::commands::hook("jkz-session-start");
    jkz::hook::main(cli, |warnings| {
        jkz::client::edge::run(
            std::io::stdin().lock(),
            &hooks::SESSION_START,
            warnings,
            session_start::answer,
        )
    })
}
