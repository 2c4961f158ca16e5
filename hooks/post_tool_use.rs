//! `jkz-post-tool-use`: the Claude Code `PostToolUse` hook. Applies the
//! truncation contract to a tool's output longer than the cap before the
//! model sees it; its help and rules live in `jkz::tool_output`.
//!
//! Exit codes: 0, always (a hook never hurts the tool call).

use jkz::tool_output::help;

fn main() -> std::process::ExitCode {
    let long_about = Box::leak(help::long_about().into_boxed_str());
    let cli = jkz::hook::command(jkz::tool_output::PROGRAM, help::ABOUT, long_about);
    jkz::hook::main(cli, |warnings| {
        if let Some(answer) = jkz::tool_output::run(std::io::stdin().lock(), warnings) {
            jkz::hook::print(&answer, warnings);
        }
    })
}
