//! `jkz-pre-compact`: the Claude Code `PreCompact` hook. Snapshots the event
//! and the pipeline state, and prints what the summary must keep; its help
//! and rules live in `jkz::compaction::pre_compact`.
//!
//! Exit codes: 0, always (a hook never blocks compaction).

use jkz::compaction::pre_compact;

fn main() -> std::process::ExitCode {
    let long_about = Box::leak(pre_compact::long_about().into_boxed_str());
    let cli = jkz::hook::command("jkz-pre-compact", pre_compact::ABOUT, long_about);
    jkz::hook::main(cli, |warnings| {
        jkz::compaction::hooks::pre_compact(std::io::stdin().lock(), warnings)
    })
}
