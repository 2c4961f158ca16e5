//! Gemini CLI's side of the hooks: its event and tool names, its answers.
//!
//! Gemini CLI (`@google/gemini-cli`, measured on 0.61.0) runs hooks from
//! `.gemini/settings.json` with Claude Code's registration shape (timeouts
//! in milliseconds) and sends a JSON event on stdin (`session_id`,
//! `transcript_path`, `cwd`, `hook_event_name`, `timestamp`, plus the
//! event's own fields). What jkz does with each event (`docs/clients.md`):
//!
//! | Gemini event | jkz's event | jkz hook | Claude Code counterpart |
//! |---|---|---|---|
//! | `PreCompress` | pre compaction | `jkz-pre-compact` ([`pre_compress`]) | `PreCompact`, but it fires before every turn and cannot steer the summary |
//! | `BeforeModel` | a model request | `jkz-session-start` ([`before_model`]) | `SessionStart` `compact`: re-injection after a compression |
//! | `SessionStart` `resume` | session start | `jkz-session-start` | `SessionStart` `resume` (same answer shape) |
//! | `AfterTool` `run_shell_command` | post tool use | `jkz-post-tool-use` | `PostToolUse`, but it can only add to the output: the blocks the client's cut drops |
//! | `BeforeTool` | pre tool use | `jkz-chat` | `PreToolUse` (answered by [`deny`] or [`ask`]) |
//! | `SessionStart`, `BeforeAgent`, `AfterTool`, `SessionEnd` | session start, user prompt, post tool use, session end | `jkz-chat` | `SessionStart`, `UserPromptSubmit`, `PostToolUse`, `SessionEnd` |
//!
//! Its tools: `run_shell_command` (`command`, run in `dir_path` when
//! given) is a shell command, `write_file` and `replace` (`file_path`)
//! edit one file.
//!
//! Output rules of the client, read from its bundle and confirmed by
//! running it: stdout is parsed as JSON; when stdout is empty, stderr is
//! read instead and, with exit 0, becomes a `systemMessage` shown to the
//! user with the decision `allow`. So a hook with nothing to say prints
//! nothing (an allow), and never prints plain text on stdout.

pub mod before_model;
pub mod help;
pub mod memo;
pub mod pre_compress;

use serde_json::{json, Value};

use super::edge::Hook;
use super::event::{EventKind, EventName, HookEvent, StartSource, Tool, ToolOutput, ToolUse};
use super::{claude, Answer, Client, Parsed};
use crate::hook::Warnings;
use crate::hook_input::HookInput;
use crate::reduce::ClientCut;

/// Environment variables only Gemini CLI sets for its hooks.
const ENV: [&str; 2] = ["GEMINI_PROJECT_DIR", "GEMINI_SESSION_ID"];

/// Event names only Gemini CLI sends.
const EVENTS: [&str; 8] = [
    "PreCompress",
    "BeforeTool",
    "AfterTool",
    "BeforeModel",
    "AfterModel",
    "BeforeAgent",
    "AfterAgent",
    "BeforeToolSelection",
];

/// Gemini CLI cuts a shell output longer than 40,000 characters
/// (`tools.truncateToolOutputThreshold`) to 40,000 and a note of about 200.
pub const SHELL_KEEPS: u64 = 40_000;
pub const SHELL_NOTE: u64 = 200;

/// How Gemini CLI cuts a shell output: its first fifth and last four
/// fifths.
pub const SHELL_CUT: ClientCut = ClientCut {
    whole: SHELL_KEEPS as usize,
    read: usize::MAX,
    head: SHELL_KEEPS as usize / 5,
    tail: SHELL_KEEPS as usize * 4 / 5,
};

/// Bytes Gemini CLI shows of a shell output of `chars` characters and
/// `bytes` bytes.
pub fn shell_shown(chars: u64, bytes: u64) -> u64 {
    if chars > SHELL_KEEPS {
        SHELL_KEEPS + SHELL_NOTE
    } else {
        bytes
    }
}

/// True when Gemini CLI sent `input`: by its event names, or by the
/// environment it gives its hooks (`env_set`: set and not empty).
pub fn sent(input: &HookInput, env_set: impl Fn(&str) -> bool) -> bool {
    let event = input.event_name().unwrap_or_default();
    EVENTS.contains(&event) || ENV.iter().any(|v| env_set(v))
}

/// True when the process environment is the one Gemini CLI gives its
/// hooks: known before the event is read.
pub fn env_says() -> bool {
    ENV.iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
}

/// True when the process `name` runs Gemini CLI: `gemini` when built as a
/// single executable, else `node` whose script ([`runs_gemini`] of its
/// `args`) is Gemini's (`…/bundle/gemini.js`, or the `gemini` link to it).
/// It starts itself again as a child `node` with more memory, and that
/// child runs the hooks and the shell commands.
pub fn is_process(name: &str, args: &dyn Fn() -> Vec<Vec<u8>>) -> bool {
    name == "gemini" || name == "node" && runs_gemini(&args())
}

/// True when a `node` command line runs Gemini CLI: its script (the first
/// argument after node's own options) is `gemini` or `gemini.js`.
fn runs_gemini(args: &[Vec<u8>]) -> bool {
    let Some(script) = args.iter().skip(1).find(|a| !a.starts_with(b"-")) else {
        return false;
    };
    let name = script.rsplit(|&b| b == b'/').next().unwrap_or_default();
    name == b"gemini" || name == b"gemini.js"
}

/// Gemini CLI's name of `name`.
pub fn spelling(name: EventName) -> Option<&'static str> {
    match name {
        EventName::SessionStart => Some("SessionStart"),
        EventName::UserPrompt => Some("BeforeAgent"),
        EventName::PreToolUse => Some("BeforeTool"),
        EventName::PostToolUse => Some("AfterTool"),
        EventName::PreCompact => Some("PreCompress"),
        EventName::PostCompact => None,
        EventName::SessionEnd => Some("SessionEnd"),
        EventName::ModelRequest => Some("BeforeModel"),
    }
}

fn event_of(sent: &str) -> Option<EventName> {
    Some(match sent {
        "SessionStart" => EventName::SessionStart,
        "BeforeAgent" => EventName::UserPrompt,
        "BeforeTool" => EventName::PreToolUse,
        "AfterTool" => EventName::PostToolUse,
        "PreCompress" => EventName::PreCompact,
        "SessionEnd" => EventName::SessionEnd,
        "BeforeModel" => EventName::ModelRequest,
        _ => return None,
    })
}

/// A Gemini CLI event as jkz's.
pub fn parse(mut input: HookInput, hook: &Hook) -> Parsed {
    let name = match input.raw.get("hook_event_name") {
        None => hook.default,
        Some(Value::String(sent)) => event_of(sent),
        Some(_) => None,
    };
    let Some(name) = name else {
        return Parsed::Unknown(input.raw.get("hook_event_name").map(Value::to_string));
    };
    let kind = match name {
        EventName::SessionStart => EventKind::SessionStart {
            source: input.source().and_then(StartSource::parse),
        },
        EventName::UserPrompt => EventKind::UserPrompt,
        EventName::PreToolUse => EventKind::PreToolUse(tool_use(&input)),
        EventName::PostToolUse => {
            let mut used = tool_use(&input);
            if hook.tool_output {
                used.output = output(&mut input, &used.tool);
            }
            EventKind::PostToolUse(used)
        }
        EventName::PreCompact => EventKind::PreCompact {
            trigger: input.trigger().map(str::to_string),
        },
        EventName::PostCompact => EventKind::PostCompact {
            trigger: input.trigger().map(str::to_string),
            summary: input.raw.remove("compact_summary"),
        },
        EventName::SessionEnd => EventKind::SessionEnd,
        EventName::ModelRequest => EventKind::ModelRequest,
    };
    Parsed::Event(Box::new(HookEvent::new(Client::Gemini, kind, input)))
}

/// The tool call of a `BeforeTool` or `AfterTool` event.
fn tool_use(input: &HookInput) -> ToolUse {
    let name = input.text("tool_name").unwrap_or_default().to_string();
    let args = input.raw.get("tool_input").unwrap_or(&Value::Null);
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let set = |key: &str| args.get(key).and_then(Value::as_bool) == Some(true);
    let tool = match name.as_str() {
        "run_shell_command" => Tool::Shell {
            command: text("command").unwrap_or_default().to_string(),
            dir: text("dir_path")
                .filter(|d| !d.is_empty())
                .map(str::to_string),
            background: set("is_background") || set("run_in_background"),
        },
        "write_file" | "replace" => Tool::Edit {
            file: text("file_path")
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

/// A shell command's output (`tool_response.llmContent`), moved out of
/// the event; `None` when it is not text (an error, parts: the client
/// does not cut those either) or another tool's.
fn output(input: &mut HookInput, tool: &Tool) -> Option<ToolOutput> {
    let Tool::Shell { .. } = tool else {
        return None;
    };
    ToolOutput::shell_text(input, "/tool_response/llmContent", Client::Gemini, None)
}

/// The client's memo says whether `event` needs any work
/// ([`pre_compress`], [`before_model`]).
pub fn goes_on(event: &mut HookEvent, warnings: &mut Warnings) -> bool {
    match event.name() {
        EventName::PreCompact => pre_compress::goes_on(event, warnings),
        EventName::ModelRequest => before_model::goes_on(event, warnings),
        EventName::SessionStart
        | EventName::PostToolUse
        | EventName::UserPrompt
        | EventName::PreToolUse
        | EventName::PostCompact
        | EventName::SessionEnd => true,
    }
}

/// `answer` in Gemini CLI's contract.
pub fn render(event: &HookEvent, answer: Answer, warnings: &mut Warnings) -> Option<String> {
    match answer {
        Answer::Nothing => None,
        Answer::Deny(why) => Some(deny(&why)),
        Answer::Ask(why) => Some(ask(&why)),
        Answer::RewriteCommand(command) => Some(
            json!({
                "hookSpecificOutput": {
                    "hookEventName": "BeforeTool",
                    "tool_input": { "command": command },
                }
            })
            .to_string(),
        ),
        // Its AfterTool cannot replace an output (a deny marks the call failed).
        Answer::ReplaceOutput(_) => None,
        Answer::AddContext(context) => match event.name() {
            EventName::ModelRequest => before_model::render(event, &context, warnings),
            EventName::PostToolUse => Some(
                json!({
                    "hookSpecificOutput": {
                        "hookEventName": "AfterTool",
                        "additionalContext": context,
                    }
                })
                .to_string(),
            ),
            EventName::SessionStart
            | EventName::UserPrompt
            | EventName::PreToolUse
            | EventName::PreCompact
            | EventName::PostCompact
            | EventName::SessionEnd => {
                Some(format!("{}\n", claude::additional_context(event, &context)))
            }
        },
        // PreCompress cannot steer the summary: the snapshot is taken and
        // remembered, nothing printed.
        Answer::Summarize { .. } => {
            pre_compress::remember(event, warnings);
            None
        }
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
    use crate::client::event::Body;

    fn event(v: Value) -> HookEvent {
        let input = HookInput::parse(v.to_string().as_bytes()).unwrap();
        match parse(input, &Hook::ANY) {
            Parsed::Event(e) => *e,
            Parsed::Unknown(n) => panic!("unknown event {n:?}"),
        }
    }

    #[test]
    fn maps_the_tools_and_events_jkz_guards() {
        let e = event(
            json!({"hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
            "tool_input": {"command": "make", "dir_path": "sub"}}),
        );
        assert_eq!(e.name(), EventName::PreToolUse);
        assert_eq!(
            e.tool_use().unwrap().tool,
            Tool::Shell {
                command: "make".into(),
                dir: Some("sub".into()),
                background: false
            }
        );
        let e = event(
            json!({"hook_event_name": "BeforeTool", "tool_name": "replace",
            "tool_input": {"file_path": "a.rs"}}),
        );
        assert_eq!(
            e.tool_use().unwrap().tool,
            Tool::Edit {
                file: Some("a.rs".into())
            }
        );
        let e = event(json!({"hook_event_name": "BeforeTool", "tool_name": "read_file"}));
        assert_eq!(e.tool_use().unwrap().tool, Tool::Other);
        assert_eq!(
            event(json!({"hook_event_name": "BeforeAgent"})).name(),
            EventName::UserPrompt
        );
        assert_eq!(
            event(json!({"hook_event_name": "PreCompress"})).name(),
            EventName::PreCompact
        );
        let answer: Value = serde_json::from_str(&deny("held by chat x")).unwrap();
        assert_eq!(
            answer,
            json!({"decision": "deny", "reason": "held by chat x"})
        );
    }

    #[test]
    fn gemini_is_told_by_its_script() {
        let args = |a: &[&str]| a.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        for yes in [
            &[
                "node",
                "/usr/lib/node_modules/@google/gemini-cli/bundle/gemini.js",
            ][..],
            &[
                "/usr/bin/node",
                "--max-old-space-size=8192",
                "/home/u/.npm/bin/gemini",
                "-p",
                "hi",
            ],
        ] {
            assert!(runs_gemini(&args(yes)), "{yes:?}");
        }
        for no in [
            &["node"][..],
            &["node", "server.js", "gemini"],
            &["node", "/srv/not-gemini.js"],
        ] {
            assert!(!runs_gemini(&args(no)), "{no:?}");
        }
    }

    #[test]
    fn after_tool_can_only_append() {
        let e = event(
            json!({"hook_event_name": "AfterTool", "tool_name": "run_shell_command",
            "tool_input": {"command": "make"}, "tool_response": {"llmContent": "out"}}),
        );
        let out = e.tool_use().unwrap().output.as_ref().unwrap();
        assert_eq!(out.body, Body::Inline("out".into()));
        let mut w = Warnings::new("jkz-test");
        assert_eq!(render(&e, Answer::ReplaceOutput("x".into()), &mut w), None);
        let added: Value = serde_json::from_str(
            &render(&e, Answer::AddContext("rescued".into()), &mut w).unwrap(),
        )
        .unwrap();
        assert_eq!(
            added,
            json!({"hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": "rescued"}})
        );
    }
}
