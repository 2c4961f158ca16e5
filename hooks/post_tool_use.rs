//! `jkz-post-tool-use`: the PostToolUse hook (Gemini CLI: AfterTool).
//! Applies the truncation contract to a tool's output longer than the cap
//! before the model sees it, as far as the client lets it; its help and
//! rules live in `jkz::tool_output`.
//!
//! Exit codes: 0, always (a hook never hurts the tool call).

fn main() -> std::process::ExitCode {
    let cli = jkz::commands::hook(jkz::tool_output::PROGRAM);
    jkz::hook::main(cli, |warnings| {
        jkz::client::edge::run(
            std::io::stdin().lock(),
            &jkz::tool_output::HOOK,
            warnings,
            jkz::tool_output::answer,
        )
    })
}
