//! `jkz-chat`: the cross-chat registry's hook, one binary for every event
//! it handles (the event is read from the input's `hook_event_name`): the
//! registry's rules are one, and one registration line per event names it.
//! Its help and rules live in `jkz::registry::hook`; a shell call the
//! registry lets through is answered by the Bash wrap
//! (`jkz::tool_output::wrap`).
//!
//! Exit codes: 0, always (a hook never blocks the chat).

use jkz::registry::hook;

fn main() -> std::process::ExitCode {
    let cli = jkz::commands::hook("jkz-chat");
    jkz::hook::main(cli, |warnings| {
        jkz::client::edge::run(
            std::io::stdin().lock(),
            &hook::HOOK,
            warnings,
            jkz::tool_output::wrap::after_registry,
        )
    })
}
