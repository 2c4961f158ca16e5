//! Claude Code's side of jkz's hooks: its event names and fields, and the
//! answers its contract allows (`../claude-code-notes.md` for what was
//! measured; docs/clients.md).
//!
//! | jkz's answer | Claude Code's contract |
//! |---|---|
//! | deny, ask | `hookSpecificOutput.permissionDecision` `deny`/`ask` with `permissionDecisionReason` |
//! | a rewritten command | `hookSpecificOutput.updatedInput`: the tool input, `command` replaced (the permission stays the client's) |
//! | a replaced output | `hookSpecificOutput.updatedToolOutput` (MCP: `updatedMCPToolOutput`) in the tool's own result shape ([`response`]) |
//! | context to add | `hookSpecificOutput.additionalContext` |
//! | instructions for the summarizer | plain text on stdout: the client appends a PreCompact hook's stdout to the summarizing request |
//!
//! Its Bash tool runs each command as `eval CMD && pwd -P >| FILE` in one
//! shell that sourced the user's snapshot (aliases, functions), and keeps
//! the directory a `cd` moved to; it checks permissions on the command a
//! hook rewrote, word for word, so a rewrite that hid the original in
//! quotes would escape the user's deny rules (measured: docs/clients.md).
//! So jkz's Bash wrap keeps the command inline in that shell
//! ([`super::ShellWrap::Inline`]), and only where every Bash command is
//! pre-approved ([`bash_pre_approved`]). The wrap is the only way a
//! failing command's output reaches jkz: `PostToolUse` does not run on
//! failure, and `PostToolUseFailure` cannot replace the output.
//!
//! Around a compaction (measured on 2.1.332): a full compaction's
//! `SessionStart` (`compact`) runs *before* its `PostCompact`, so the items
//! a summary dropped reach the model at the session's next `SessionStart`
//! (`resume`, or `compact` after a partial compaction, whose `PostCompact`
//! runs first); after a compaction that kept messages instead of
//! summarizing them, `compact_summary` is empty (`""`). What a hook prints
//! is kept up to [`HOOK_OUTPUT_CAP`] characters.
//!
//! Codex CLI sends and reads the same shape ([`super::codex`] says where it
//! differs), so its module parses with [`parse_with`].

pub mod help;
pub mod persisted;
pub mod response;
pub mod shown;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::edge::Hook;
use super::event::{EventKind, EventName, HookEvent, StartSource, Tool, ToolUse};
use super::{Answer, Client, Parsed};
use crate::hook_input::HookInput;

/// The most characters of a hook's output Claude Code keeps (the context
/// it adds, the instructions it appends to a summary): jkz's budgets for
/// both stay under it ([`crate::compaction::digest`]).
pub const HOOK_OUTPUT_CAP: usize = 10_000;

const _: () = assert!(
    crate::compaction::digest::REINJECTION_BUDGET < HOOK_OUTPUT_CAP
        && crate::compaction::digest::SUMMARIZER_BUDGET < HOOK_OUTPUT_CAP
);

/// The tools whose input names the one file they change.
pub const EDIT_TOOLS: [&str; 4] = ["Edit", "Write", "MultiEdit", "NotebookEdit"];

/// Codex CLI's edit tool, as its PreToolUse names it (`tool_name`): a patch
/// body in `tool_input.command`.
pub const APPLY_PATCH: &str = "apply_patch";

/// True when the process `name` runs Claude Code: its native binary,
/// `claude` (any name starting with it). It runs the hooks and the model's
/// shell commands.
pub fn is_process(name: &str) -> bool {
    name.starts_with("claude")
}

/// Claude Code's name of `name`.
pub fn spelling(name: EventName) -> Option<&'static str> {
    match name {
        EventName::SessionStart => Some("SessionStart"),
        EventName::UserPrompt => Some("UserPromptSubmit"),
        EventName::PreToolUse => Some("PreToolUse"),
        EventName::PostToolUse => Some("PostToolUse"),
        EventName::PreCompact => Some("PreCompact"),
        EventName::PostCompact => Some("PostCompact"),
        EventName::SessionEnd => Some("SessionEnd"),
        EventName::ModelRequest => None,
    }
}

/// The event Claude Code names `sent`.
fn event_of(sent: &str) -> Option<EventName> {
    Some(match sent {
        "SessionStart" => EventName::SessionStart,
        "UserPromptSubmit" => EventName::UserPrompt,
        "PreToolUse" => EventName::PreToolUse,
        "PostToolUse" => EventName::PostToolUse,
        "PreCompact" => EventName::PreCompact,
        "PostCompact" => EventName::PostCompact,
        "SessionEnd" => EventName::SessionEnd,
        _ => return None,
    })
}

/// A Claude Code event as jkz's.
pub fn parse(input: HookInput, hook: &Hook) -> Parsed {
    parse_with(Client::Claude, input, hook)
}

/// An event in Claude Code's shape, from `client`, as jkz's.
pub fn parse_with(client: Client, mut input: HookInput, hook: &Hook) -> Parsed {
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
                used.output = response::take(&mut input, &used.name);
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
        EventName::ModelRequest => {
            return Parsed::Unknown(input.raw.get("hook_event_name").map(Value::to_string))
        }
    };
    Parsed::Event(Box::new(HookEvent::new(client, kind, input)))
}

/// The tool call of a tool event, by Claude Code's (and Codex CLI's) tool
/// names.
fn tool_use(input: &HookInput) -> ToolUse {
    let name = input.text("tool_name").unwrap_or_default().to_string();
    let args = input.raw.get("tool_input").unwrap_or(&Value::Null);
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let set = |key: &str| args.get(key).and_then(Value::as_bool) == Some(true);
    let tool = match name.as_str() {
        "Bash" => Tool::Shell {
            command: text("command").unwrap_or_default().to_string(),
            dir: None,
            background: set("run_in_background") || set("is_background"),
        },
        "Read" => Tool::Read {
            range: !args["offset"].is_null() || !args["limit"].is_null(),
        },
        APPLY_PATCH => Tool::Patch {
            body: text("command").unwrap_or_default().to_string(),
        },
        n if EDIT_TOOLS.contains(&n) => Tool::Edit {
            file: text("file_path")
                .or_else(|| text("notebook_path"))
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

/// `answer` in Claude Code's contract.
pub fn render(event: &HookEvent, answer: Answer) -> Option<String> {
    match answer {
        Answer::Nothing => None,
        Answer::Deny(why) => Some(decision("deny", &why)),
        Answer::Ask(why) => Some(decision("ask", &why)),
        Answer::RewriteCommand(command) => {
            // Only the command changes; the permission stays the client's.
            let updated = updated_input(event, command)?;
            Some(
                json!({
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "updatedInput": updated,
                    }
                })
                .to_string(),
            )
        }
        Answer::ReplaceOutput(text) => Some(response::answer(&event.raw, text).to_string()),
        Answer::AddContext(context) => Some(format!("{}\n", additional_context(event, &context))),
        Answer::Summarize { instructions, .. } => Some(instructions),
    }
}

/// The PreToolUse answer with a permission decision (`deny`, `ask`) and
/// `why`.
pub fn decision(decision: &str, why: &str) -> String {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": why,
        }
    })
    .to_string()
}

/// The `additionalContext` answer to `event`.
pub fn additional_context(event: &HookEvent, context: &str) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": event.client.spelling(event.name()).unwrap_or_default(),
            "additionalContext": context,
        }
    })
}

/// `event`'s tool input with `command` in place of its own; `None` when
/// it has no input object.
pub fn updated_input(event: &HookEvent, command: String) -> Option<Value> {
    let mut updated = event.raw.raw.get("tool_input")?.as_object()?.clone();
    updated.insert("command".into(), Value::String(command));
    Some(Value::Object(updated))
}

/// True when the user's permissions let every Bash command run without a
/// prompt: then a rewrite (whose words the client checks) runs as the
/// original would. Measured on the client (docs/clients.md): with narrower
/// rules it asks for the rewrite, or refuses it, where the original would
/// have run, so jkz leaves the call alone. Pre-approved: the session's
/// `bypassPermissions` mode; the client started with
/// `--dangerously-skip-permissions`, `--permission-mode bypassPermissions`
/// or `--allowedTools` naming `Bash` whole; an allow rule `Bash`,
/// `Bash(*)` or `Bash(:*)` in the project's or the user's settings.
pub fn bash_pre_approved(event: &HookEvent, project: &Path) -> bool {
    if event.raw.text("permission_mode") == Some("bypassPermissions") {
        return true;
    }
    if client_args_approve(&client_args()) {
        return true;
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let files = [
        Some(project.join(".claude/settings.json")),
        Some(project.join(".claude/settings.local.json")),
        home.map(|h| h.join(".claude/settings.json")),
    ];
    files.into_iter().flatten().any(|f| settings_approve(&f))
}

/// The whole-Bash rules.
fn whole_bash(rule: &str) -> bool {
    matches!(rule.trim(), "Bash" | "Bash(*)" | "Bash(:*)")
}

/// The command line of the nearest Claude Code process above this one.
fn client_args() -> Vec<String> {
    let (crate::process::tree::Tree::Whole(found) | crate::process::tree::Tree::TooDeep(found)) =
        crate::process::tree::ancestors()
    else {
        return Vec::new();
    };
    found
        .iter()
        .find(|a| is_process(&a.name) || a.name == "node" && is_claude_node(a))
        .map(|a| {
            a.args()
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn is_claude_node(a: &crate::process::tree::Ancestor) -> bool {
    a.args()
        .iter()
        .skip(1)
        .find(|x| !x.starts_with(b"-"))
        .is_some_and(|script| String::from_utf8_lossy(script).contains("claude-code"))
}

/// True when a client's command line pre-approves every Bash command.
pub fn client_args_approve(args: &[String]) -> bool {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (a, None),
        };
        match flag {
            "--dangerously-skip-permissions" => return true,
            "--permission-mode"
                if inline.or(args.get(i + 1).map(String::as_str)) == Some("bypassPermissions") =>
            {
                return true;
            }
            "--allowedTools" | "--allowed-tools" => {
                let mut values: Vec<&str> = inline.into_iter().collect();
                if inline.is_none() {
                    values.extend(
                        args[i + 1..]
                            .iter()
                            .map(String::as_str)
                            .take_while(|v| !v.starts_with('-')),
                    );
                }
                if values
                    .iter()
                    .flat_map(|v| v.split([',', ' ']))
                    .any(whole_bash)
                {
                    return true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// True when a settings file allows every Bash command.
fn settings_approve(file: &Path) -> bool {
    let Ok(text) = crate::user_file::read_user_file_bounded(file, 1 << 20) else {
        return false;
    };
    let Ok(v) = serde_json::from_slice::<Value>(&text) else {
        return false;
    };
    v["permissions"]["allow"]
        .as_array()
        .is_some_and(|rules| rules.iter().filter_map(Value::as_str).any(whole_bash))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(v: Value) -> HookEvent {
        let input = HookInput::parse(v.to_string().as_bytes()).unwrap();
        match parse(input, &Hook::ANY) {
            Parsed::Event(e) => *e,
            Parsed::Unknown(n) => panic!("unknown event {n:?}"),
        }
    }

    #[test]
    fn tools_by_what_they_do() {
        let e = event(json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "cargo test", "run_in_background": true}}));
        assert_eq!(
            e.tool_use().unwrap().tool,
            Tool::Shell {
                command: "cargo test".into(),
                dir: None,
                background: true
            }
        );
        let e = event(
            json!({"hook_event_name": "PreToolUse", "tool_name": "NotebookEdit",
            "tool_input": {"notebook_path": "/p/n.ipynb"}}),
        );
        assert_eq!(
            e.tool_use().unwrap().tool,
            Tool::Edit {
                file: Some("/p/n.ipynb".into())
            }
        );
        let e = event(json!({"hook_event_name": "PreToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": "src/a.rs"}}));
        assert_eq!(
            e.tool_use().unwrap().tool,
            Tool::Edit {
                file: Some("src/a.rs".into())
            }
        );
        let e = event(
            json!({"hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": {"file_path": ""}}),
        );
        assert_eq!(e.tool_use().unwrap().tool, Tool::Edit { file: None });
        let e = event(json!({"hook_event_name": "PreToolUse", "tool_name": "Read",
            "tool_input": {"file_path": "/x"}}));
        assert_eq!(e.tool_use().unwrap().tool, Tool::Read { range: false });
        let e = event(json!({"hook_event_name": "PreToolUse", "tool_name": "Read",
            "tool_input": {"file_path": "/x", "offset": 10}}));
        assert_eq!(e.tool_use().unwrap().tool, Tool::Read { range: true });
        let e = event(json!({"hook_event_name": "PreToolUse", "tool_name": "Grep"}));
        assert_eq!(e.tool_use().unwrap().tool, Tool::Other);
        assert_eq!(e.tool_use().unwrap().name, "Grep");
    }

    /// Codex CLI's patch tool, in the shape both clients share: its body
    /// is `tool_input.command`; anything but a text is an empty body.
    #[test]
    fn a_patch_tool_carries_its_body() {
        let body = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** End Patch\n";
        for (input, want) in [
            (json!({ "command": body }), body),
            (json!({ "command": 7 }), ""),
            (json!({}), ""),
        ] {
            let e = event(
                json!({"hook_event_name": "PreToolUse", "tool_name": APPLY_PATCH,
                "tool_input": input}),
            );
            assert_eq!(
                e.tool_use().unwrap().tool,
                Tool::Patch { body: want.into() }
            );
        }
    }

    #[test]
    fn answers_in_claude_codes_shape() {
        let e = event(json!({"hook_event_name": "PreToolUse", "session_id": "s",
            "tool_name": "Bash", "tool_input": {"command": "ls", "description": "list"}}));
        let deny: Value =
            serde_json::from_str(&render(&e, Answer::Deny("held".into())).unwrap()).unwrap();
        assert_eq!(
            deny,
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": "held"}})
        );
        let rewrite: Value =
            serde_json::from_str(&render(&e, Answer::RewriteCommand("wrapped ls".into())).unwrap())
                .unwrap();
        assert_eq!(
            rewrite["hookSpecificOutput"]["updatedInput"],
            json!({"command": "wrapped ls", "description": "list"})
        );
        assert!(rewrite["hookSpecificOutput"]
            .get("permissionDecision")
            .is_none());
        assert_eq!(render(&e, Answer::Nothing), None);
        let start = event(json!({"hook_event_name": "SessionStart", "source": "compact"}));
        assert!(matches!(
            start.kind,
            EventKind::SessionStart {
                source: Some(StartSource::Compact)
            }
        ));
        let text = render(&start, Answer::AddContext("state".into())).unwrap();
        assert!(text.ends_with('\n'));
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
        assert_eq!(v["hookSpecificOutput"]["additionalContext"], "state");
        let pre = event(json!({"hook_event_name": "PreCompact", "trigger": "manual"}));
        let said = Answer::Summarize {
            instructions: "keep the plan".into(),
            snapshot: None,
            state_root: None,
        };
        assert_eq!(render(&pre, said).as_deref(), Some("keep the plan"));
    }

    #[test]
    fn pre_approval_from_the_clients_command_line() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for yes in [
            &["claude", "-p", "x", "--allowedTools", "Bash"][..],
            &["claude", "--allowedTools", "Read,Bash", "-p"],
            &["claude", "--allowed-tools", "Read", "Bash(*)"],
            &["claude", "--allowedTools=Edit Bash"],
            &["claude", "--dangerously-skip-permissions"],
            &["claude", "--permission-mode", "bypassPermissions"],
        ] {
            assert!(client_args_approve(&args(yes)), "{yes:?}");
        }
        for no in [
            &["claude", "-p", "Bash"][..],
            &["claude", "--allowedTools", "Bash(git:*)"],
            &["claude", "--allowedTools", "Read", "-p", "Bash"],
            &["claude", "--permission-mode", "acceptEdits"],
        ] {
            assert!(!client_args_approve(&args(no)), "{no:?}");
        }
    }
}
