//! OpenCode's side of jkz's hooks (measured on `opencode-ai` 1.18.33;
//! docs/opencode.md).
//!
//! OpenCode has no command hooks: jkz's plugin (`plugin/opencode/jkz.js`)
//! runs inside it and hands each hook to a jkz binary as one JSON object,
//! `{"client": "opencode", "hook_event_name", "session_id", "cwd",
//! "worktree", "input", "output"}`, where `input` and `output` are the two
//! objects OpenCode gave the hook. The `client` field is the only sign of
//! OpenCode: the environment the binaries inherit (`OPENCODE=1`, `AGENT=1`)
//! is the model's shell commands' too.
//!
//! | OpenCode hook or event | jkz's event | answer the plugin applies |
//! |---|---|---|
//! | `session.created` | session start (`startup`) | `system` |
//! | `chat.message` | user prompt | `system` |
//! | `tool.execute.before` | pre tool use | `deny` (a question too: the plugin cannot ask); the Bash wrap as `args` (every argument: keys left out are gone) |
//! | `tool.execute.after` | post tool use | `output`: what the model reads instead |
//! | `experimental.session.compacting` | pre compaction | `context`: appended to the summarizer's request |
//! | `session.compacted` | session start (`compact`) | `system`: in every later request's system prompt |
//! | `session.deleted` | session end | nothing |
//!
//! Context jkz adds is a `system` answer: OpenCode rebuilds the system
//! prompt for every request, and the plugin adds the session's last one to
//! each, so it survives a compaction.

pub mod help;

use serde_json::{json, Map, Value};

use super::edge::Hook;
use super::event::{EventKind, EventName, HookEvent, StartSource, Tool, ToolOutput, ToolUse};
use super::{Answer, Client, Parsed};
use crate::hook_input::HookInput;
use crate::reduce::ClientCut;

/// The `client` field jkz's plugin sends.
pub const CLIENT_FIELD: &str = "opencode";

/// OpenCode's `bash` tool keeps the last 51,200 bytes (or 2,000 lines) of
/// an output (measured: 50,184 characters came whole, 52 KB did not).
pub const SHELL_KEEPS: u64 = 51_200;
/// What it puts before that tail: `...output truncated...` and the path
/// of the saved output (51,346 characters in all for a 52 KB output).
pub const SHELL_NOTE: u64 = 146;

/// How OpenCode cuts a shell output: its tail.
pub const SHELL_CUT: ClientCut = ClientCut {
    whole: SHELL_KEEPS as usize,
    read: usize::MAX,
    head: 0,
    tail: SHELL_KEEPS as usize,
};

/// Bytes OpenCode shows of a shell output of `bytes` bytes.
pub fn shell_shown(bytes: u64) -> u64 {
    if bytes > SHELL_KEEPS {
        SHELL_KEEPS + SHELL_NOTE
    } else {
        bytes
    }
}

/// True when jkz's OpenCode plugin sent `input`.
pub fn sent(input: &HookInput) -> bool {
    input.text("client") == Some(CLIENT_FIELD)
}

/// OpenCode's name of `name`.
pub fn spelling(name: EventName) -> Option<&'static str> {
    match name {
        EventName::SessionStart => Some("session.created"),
        EventName::UserPrompt => Some("chat.message"),
        EventName::PreToolUse => Some("tool.execute.before"),
        EventName::PostToolUse => Some("tool.execute.after"),
        EventName::PreCompact => Some("experimental.session.compacting"),
        EventName::SessionEnd => Some("session.deleted"),
        EventName::PostCompact | EventName::ModelRequest => None,
    }
}

/// An OpenCode event as jkz's.
pub fn parse(mut input: HookInput, hook: &Hook) -> Parsed {
    let sent = input.raw.get("hook_event_name").cloned();
    // An event naming none is the hook's own (as for every client).
    let name = match &sent {
        None => hook.default.and_then(spelling),
        Some(Value::String(name)) => Some(name.as_str()),
        Some(_) => None,
    };
    let kind = match name {
        Some("session.created") => EventKind::SessionStart {
            source: Some(StartSource::Startup),
        },
        // The compaction's summary is in; the state goes back in.
        Some("session.compacted") => EventKind::SessionStart {
            source: Some(StartSource::Compact),
        },
        Some("chat.message") => EventKind::UserPrompt,
        Some("tool.execute.before") => EventKind::PreToolUse(tool_use(&input)),
        Some("tool.execute.after") => {
            let mut used = tool_use(&input);
            if hook.tool_output {
                used.output = output(&mut input, &used.tool);
            }
            EventKind::PostToolUse(used)
        }
        Some("experimental.session.compacting") => EventKind::PreCompact { trigger: None },
        Some("session.deleted") => EventKind::SessionEnd,
        _ => return Parsed::Unknown(sent.map(|v| v.to_string())),
    };
    let mut event = HookEvent::new(Client::OpenCode, kind, input);
    if event.session_id.is_none() {
        event.session_id = hook_input(&event.raw, "sessionID").map(str::to_string);
    }
    Parsed::Event(Box::new(event))
}

/// The text `key` of the hook's `input` object.
fn hook_input<'a>(raw: &'a HookInput, key: &str) -> Option<&'a str> {
    raw.raw.get("input")?.get(key)?.as_str()
}

/// The tool call's arguments: `output.args` before it runs (the object
/// OpenCode will run it with), `input.args` after.
pub fn tool_input(raw: &HookInput) -> Option<&Map<String, Value>> {
    let before = raw.text("hook_event_name") == Some("tool.execute.before");
    let args = if before {
        raw.raw.get("output")?.get("args")
    } else {
        raw.raw.get("input")?.get("args")
    };
    args?.as_object()
}

/// The tool call of a tool event, by OpenCode's tool names: `bash`
/// (`command`, `workdir`), `read` (`filePath`, `offset`, `limit`), `edit`
/// and `write` (`filePath`).
fn tool_use(input: &HookInput) -> ToolUse {
    let name = hook_input(input, "tool").unwrap_or_default().to_string();
    let empty = Map::new();
    let args = tool_input(input).unwrap_or(&empty);
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let tool = match name.as_str() {
        "bash" => Tool::Shell {
            command: text("command").unwrap_or_default().to_string(),
            dir: text("workdir")
                .filter(|d| !d.is_empty())
                .map(str::to_string),
            background: false,
        },
        "read" => Tool::Read {
            range: args.get("offset").is_some_and(|v| !v.is_null())
                || args.get("limit").is_some_and(|v| !v.is_null()),
        },
        "edit" | "write" => Tool::Edit {
            file: text("filePath")
                .filter(|p| !p.is_empty())
                .map(str::to_string),
        },
        _ => Tool::Other,
    };
    ToolUse {
        tool,
        name,
        output: None,
    }
}

/// A shell command's output as the model would read it (`output.output`),
/// moved out of the event.
fn output(input: &mut HookInput, tool: &Tool) -> Option<ToolOutput> {
    let Tool::Shell { .. } = tool else {
        return None;
    };
    // `metadata.exit`: the status OpenCode keeps from its model.
    let exit = input
        .raw
        .get("output")
        .and_then(|o| o.pointer("/metadata/exit"))
        .and_then(Value::as_i64)
        .and_then(|e| i32::try_from(e).ok());
    ToolOutput::shell_text(input, "/output/output", Client::OpenCode, exit)
}

/// `answer` in the plugin's contract.
pub fn render(event: &HookEvent, answer: Answer) -> Option<String> {
    let out = match answer {
        Answer::Nothing => return None,
        Answer::Deny(why) => json!({ "deny": why }),
        Answer::Ask(why) => json!({
            "deny": format!(
                "{why} OpenCode's plugins cannot ask the user, so jkz refuses instead: ask the user \
                 to run it, or spell the command so that what it writes is named."
            )
        }),
        Answer::RewriteCommand(command) => {
            // The plugin replaces every argument: each one goes back.
            let mut args = tool_input(&event.raw)?.clone();
            args.insert("command".into(), Value::String(command));
            json!({ "args": args })
        }
        Answer::ReplaceOutput(text) => json!({ "output": text }),
        Answer::AddContext(context) => json!({ "system": context }),
        Answer::Summarize { instructions, .. } => json!({ "context": instructions }),
    };
    Some(format!("{out}\n"))
}

/// True when the process `name` runs OpenCode (its Bun executable).
pub fn is_process(name: &str) -> bool {
    name == "opencode"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::event::Body;
    use std::path::PathBuf;

    // Events as jkz's plugin sends them (the shapes OpenCode 1.18.33 gave
    // its hooks, measured with a stand-in binary).
    const BEFORE: &str = r#"{"client":"opencode","hook_event_name":"tool.execute.before","session_id":"ses_3f1a2b3c4d5e","cwd":"/r","worktree":"/r","input":{"tool":"bash","sessionID":"ses_3f1a2b3c4d5e","callID":"call_1"},"output":{"args":{"command":"echo one","description":"Echo"}}}"#;
    const AFTER: &str = r#"{"client":"opencode","hook_event_name":"tool.execute.after","session_id":"ses_3f1a2b3c4d5e","cwd":"/r","worktree":"/r","input":{"tool":"bash","sessionID":"ses_3f1a2b3c4d5e","callID":"call_1","args":{"command":"echo one","description":"Echo"}},"output":{"title":"Echo","output":"one\n","metadata":{"output":"one\n","exit":0,"truncated":false}}}"#;
    const COMPACTING: &str = r#"{"client":"opencode","hook_event_name":"experimental.session.compacting","session_id":"ses_3f1a2b3c4d5e","cwd":"/r","worktree":"/r","input":{"sessionID":"ses_3f1a2b3c4d5e"},"output":{"context":[]}}"#;
    const COMPACTED: &str = r#"{"client":"opencode","hook_event_name":"session.compacted","session_id":"ses_3f1a2b3c4d5e","cwd":"/r","worktree":"/r","input":{"type":"session.compacted","properties":{"sessionID":"ses_3f1a2b3c4d5e"}},"output":{}}"#;

    fn input(json: &str) -> HookInput {
        HookInput::parse(json.as_bytes()).unwrap()
    }

    fn event(json: &str) -> HookEvent {
        match parse(input(json), &Hook::ANY) {
            Parsed::Event(e) => *e,
            Parsed::Unknown(n) => panic!("unknown {n:?}"),
        }
    }

    #[test]
    fn the_client_field_alone_tells_opencode() {
        let no_env = |_: &str| false;
        assert_eq!(
            Client::detect_with(&input(BEFORE), no_env),
            Client::OpenCode
        );
        // OpenCode's variables are the model's commands' too: they say nothing.
        let bare = input(r#"{"session_id":"s","hook_event_name":"PreToolUse"}"#);
        assert_eq!(
            Client::detect_with(&bare, |v| v == "OPENCODE" || v == "AGENT"),
            Client::Claude
        );
        let other = input(r#"{"client":"other","hook_event_name":"PreToolUse"}"#);
        assert_eq!(Client::detect_with(&other, no_env), Client::Claude);
    }

    #[test]
    fn reads_the_plugins_events() {
        let e = event(BEFORE);
        assert_eq!(e.name(), EventName::PreToolUse);
        assert_eq!(e.session_id.as_deref(), Some("ses_3f1a2b3c4d5e"));
        assert_eq!(e.cwd, Some(PathBuf::from("/r")));
        let used = e.tool_use().unwrap();
        assert_eq!(used.name, "bash");
        assert_eq!(
            used.tool,
            Tool::Shell {
                command: "echo one".into(),
                dir: None,
                background: false
            }
        );
        assert_eq!(e.tool_input().unwrap()["description"], "Echo");

        let e = event(AFTER);
        assert_eq!(e.name(), EventName::PostToolUse);
        let out = e.tool_use().unwrap().output.as_ref().unwrap();
        assert_eq!(out.body, Body::Inline("one\n".into()));
        assert_eq!(
            e.raw.raw.get("output").unwrap()["output"],
            "",
            "moved out of the event"
        );
        assert_eq!(e.tool_input().unwrap()["command"], "echo one");

        assert_eq!(event(COMPACTING).name(), EventName::PreCompact);
        assert!(matches!(
            event(COMPACTED).kind,
            EventKind::SessionStart {
                source: Some(StartSource::Compact)
            }
        ));
        let e = event(
            r#"{"client":"opencode","hook_event_name":"tool.execute.before","session_id":"s","input":{"tool":"write","sessionID":"s"},"output":{"args":{"filePath":"/r/src/a.rs","content":"x"}}}"#,
        );
        assert_eq!(
            e.tool_use().unwrap().tool,
            Tool::Edit {
                file: Some("/r/src/a.rs".into())
            }
        );
        let e = event(
            r#"{"client":"opencode","hook_event_name":"tool.execute.before","session_id":"s","input":{"tool":"read","sessionID":"s"},"output":{"args":{"filePath":"/r/a","offset":498}}}"#,
        );
        assert_eq!(e.tool_use().unwrap().tool, Tool::Read { range: true });
        // An event jkz does not handle.
        assert!(matches!(
            parse(input(r#"{"client":"opencode","hook_event_name":"session.idle"}"#), &Hook::ANY),
            Parsed::Unknown(Some(n)) if n == r#""session.idle""#
        ));
    }

    #[test]
    fn the_session_comes_from_the_hooks_input_when_the_event_has_none() {
        let json = BEFORE.replace(r#""session_id":"ses_3f1a2b3c4d5e","#, "");
        assert_eq!(event(&json).session_id.as_deref(), Some("ses_3f1a2b3c4d5e"));
    }

    #[test]
    fn renders_what_the_plugin_applies() {
        let parsed = |e: &HookEvent, a: Answer| -> Value {
            serde_json::from_str(&render(e, a).unwrap()).unwrap()
        };
        let before = event(BEFORE);
        assert_eq!(render(&before, Answer::Nothing), None);
        assert_eq!(
            parsed(&before, Answer::Deny("held".into())),
            json!({"deny": "held"})
        );
        let asked = parsed(&before, Answer::Ask("unsure.".into()));
        let text = asked["deny"].as_str().unwrap();
        assert!(
            text.starts_with("unsure. OpenCode's plugins cannot ask"),
            "{text}"
        );
        // Every argument goes back, the command replaced.
        assert_eq!(
            parsed(
                &before,
                Answer::RewriteCommand("jkz-truncate --run x".into())
            ),
            json!({"args": {"command": "jkz-truncate --run x", "description": "Echo"}})
        );
        let after = event(AFTER);
        assert_eq!(
            parsed(&after, Answer::ReplaceOutput("v".into())),
            json!({"output": "v"})
        );
        let compacted = event(COMPACTED);
        assert_eq!(
            parsed(&compacted, Answer::AddContext("state".into())),
            json!({"system": "state"})
        );
        let compacting = event(COMPACTING);
        let summarize = Answer::Summarize {
            instructions: "keep the plan".into(),
            snapshot: None,
            state_root: None,
        };
        assert_eq!(
            parsed(&compacting, summarize),
            json!({"context": "keep the plan"})
        );
    }

    #[test]
    fn shows_the_tail_of_a_long_shell_output() {
        assert_eq!(shell_shown(50_184), 50_184);
        assert_eq!(shell_shown(400_000), SHELL_KEEPS + SHELL_NOTE);
    }
}
