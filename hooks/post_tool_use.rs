//! `jkz-post-tool-use`: the Claude Code `PostToolUse` hook. Applies the
//! truncation contract to a tool's output longer than the cap before the
//! model sees it; its help and rules live in `jkz::tool_output`.
//!
//! Exit codes: 0, always (a hook never hurts the tool call).

fn main() -> std::process::ExitCode {
    let cli = jkz::commands::hook(jkz::tool_output::PROGRAM);
    jkz::hook::main(cli, |warnings| {
        if let Some(answer) = jkz::tool_output::run(std::io::stdin().lock(), warnings) {
            jkz::hook::print(&answer, warnings);
        }
    })
}
