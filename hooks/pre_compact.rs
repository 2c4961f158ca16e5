//! `jkz-pre-compact`: the Claude Code `PreCompact` hook. Snapshots the event
//! and the pipeline state, and prints what the summary must keep; its help
//! and rules live in `jkz::compaction::pre_compact`.
//!
//! Exit codes: 0, always (a hook never blocks compaction).

fn main() -> std::process::ExitCode {
    let cli = jkz::commands::hook("jkz-pre-compact");
    jkz::hook::main(cli, |warnings| {
        jkz::compaction::hooks::pre_compact(std::io::stdin().lock(), warnings)
    })
}
