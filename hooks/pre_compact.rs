//! `jkz-pre-compact`: the PreCompact hook (Gemini CLI: PreCompress).
//! Snapshots the event and the pipeline state, and says what the summary
//! must keep; its help and rules live in `jkz::compaction::pre_compact`.
//!
//! Exit codes: 0, always (a hook never blocks compaction).

use jkz::compaction::hooks;

fn main() -> std::process::ExitCode {
    let cli = jkz::commands::hook("jkz-pre-compact");
    jkz::hook::main(cli, |warnings| {
        let started = std::time::Instant::now();
        let early_git = hooks::early_git();
        jkz::client::edge::run(
            std::io::stdin().lock(),
            &hooks::PRE_COMPACT,
            warnings,
            |event, warnings| hooks::pre_compact(event, started, early_git, warnings),
        )
    })
}
