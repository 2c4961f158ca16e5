//! Gemini CLI's side of the hooks: its event and tool names, its answers.
//!
//! Gemini CLI (`@google/gemini-cli`, measured on 0.61.0) runs hooks from
//! `.gemini/settings.json` with Claude Code's registration shape (timeouts
//! in milliseconds) and sends a JSON event on stdin (`session_id`,
//! `transcript_path`, `cwd`, `hook_event_name`, `timestamp`, plus the
//! event's own fields). What jkz does with each event (`docs/clients.md`):
//!
//! | Gemini event | jkz hook | Claude Code counterpart |
//! |---|---|---|
//! | `PreCompress` | `jkz-pre-compact` ([`pre_compress`]) | `PreCompact`, but it fires before every turn and cannot steer the summary |
//! | `BeforeModel` | `jkz-session-start` ([`before_model`]) | `SessionStart` `compact`: re-injection after a compression |
//! | `SessionStart` `resume` | `jkz-session-start` | `SessionStart` `resume` (same answer shape) |
//! | `AfterTool` `run_shell_command` | `jkz-post-tool-use` ([`after_tool`]) | `PostToolUse`, but it can only add to the output: the blocks the client's cut drops |
//! | `BeforeTool` | `jkz-chat` | `PreToolUse` (tools mapped by [`claude_tool`], answer by [`deny`] or [`ask`]) |
//! | `SessionStart`, `BeforeAgent`, `AfterTool`, `SessionEnd` | `jkz-chat` | `SessionStart`, `UserPromptSubmit`, `PostToolUse`, `SessionEnd` |
//!
//! Output rules of the client, read from its bundle and confirmed by
//! running it: stdout is parsed as JSON; when stdout is empty, stderr is
//! read instead and, with exit 0, becomes a `systemMessage` shown to the
//! user with the decision `allow`. So a hook with nothing to say prints
//! nothing (an allow), and never prints plain text on stdout.

pub mod after_tool;
pub mod memo;

use serde_json::json;

/// The Claude Code tool whose input means the same to the registry as the
/// Gemini CLI tool `name`'s: `run_shell_command` (`command`) is `Bash`,
/// `write_file` and `replace` (`file_path`) are `Write` and `Edit`.
pub fn claude_tool(name: &str) -> Option<&'static str> {
    match name {
        "run_shell_command" => Some("Bash"),
        "write_file" => Some("Write"),
        "replace" => Some("Edit"),
        _ => None,
    }
}

/// The Claude Code event `jkz-chat` handles as it handles the Gemini CLI
/// event `name`.
pub fn claude_event(name: &str) -> Option<&'static str> {
    match name {
        "SessionStart" => Some("SessionStart"),
        "SessionEnd" => Some("SessionEnd"),
        "BeforeAgent" => Some("UserPromptSubmit"),
        "BeforeTool" => Some("PreToolUse"),
        "AfterTool" => Some("PostToolUse"),
        _ => None,
    }
}

/// The `BeforeTool` answer that refuses the call; the model receives
/// "Tool execution blocked: REASON" as the tool's error.
pub fn deny(reason: &str) -> String {
    json!({"decision": "deny", "reason": reason}).to_string()
}

/// The `BeforeTool` answer that leaves the call to the user: Gemini CLI
/// (0.61.0's scheduler: a hook's `ask` forces the confirmation, whatever
/// the approval mode) shows `systemMessage` in its confirmation.
pub fn ask(reason: &str) -> String {
    json!({"decision": "ask", "reason": reason, "systemMessage": reason}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_the_tools_and_events_jkz_guards() {
        assert_eq!(claude_tool("run_shell_command"), Some("Bash"));
        assert_eq!(claude_tool("write_file"), Some("Write"));
        assert_eq!(claude_tool("replace"), Some("Edit"));
        assert_eq!(claude_tool("read_file"), None);
        assert_eq!(claude_event("BeforeTool"), Some("PreToolUse"));
        assert_eq!(claude_event("PreCompress"), None);
        let answer: serde_json::Value = serde_json::from_str(&deny("held by chat x")).unwrap();
        assert_eq!(
            answer,
            json!({"decision": "deny", "reason": "held by chat x"})
        );
    }
}
