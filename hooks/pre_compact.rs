//! `jkz-pre-compact`: the Claude Code `PreCompact` hook. Snapshots the event
//! and the pipeline state, and prints what the summary must keep.
//!
//! Exit codes: 0, always (a hook never blocks compaction).

fn main() -> std::process::ExitCode {
    jkz::hook::main("jkz-pre-compact", |warnings| {
        jkz::compaction::pre_compact::run(std::io::stdin().lock(), warnings)
    })
}
