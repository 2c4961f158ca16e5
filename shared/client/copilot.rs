//! GitHub Copilot CLI's side of jkz's hooks (measured on `@github/copilot`
//! 1.0.102; docs/clients.md).
//!
//! Copilot runs the hooks of `.github/hooks/*.json` (only in a folder it
//! trusts) and `~/.copilot/hooks/*.json`, each a `bash` command line, and
//! sends a camelCase event on stdin (`sessionId`, `timestamp`, `cwd`, plus
//! the event's own fields) that does **not** name the event. So jkz's
//! registration names it: each command line starts with
//! `JKZ_COPILOT_EVENT=<event>` ([`EVENT_VAR`]); an event without it is
//! told by its fields ([`inferred`]).
//!
//! | Copilot event | jkz's event | answer jkz gives |
//! |---|---|---|
//! | `preToolUse` | pre tool use | `permissionDecision` `deny`/`ask` with `permissionDecisionReason`; the Bash wrap as `modifiedArgs` (the arguments replaced wholesale, so every key is repeated) |
//! | `postToolUse` | post tool use; for `jkz-session-start`, the next model request | `modifiedResult` (`textResultForLlm`) or `additionalContext` |
//! | `sessionStart` (`new`, `resume`), `userPromptSubmitted` | session start, user prompt | `additionalContext` |
//! | `preCompact` | pre compaction | nothing reaches the summarizer: the snapshot is taken, and the session is marked for re-injection ([`PENDING_DIR`]) |
//! | `sessionEnd` | session end | nothing |
//!
//! What survives a compaction: Copilot drops every context a hook added
//! before it, and reads instruction files only at session start. What
//! reaches every request after the summary is an `additionalContext`
//! answered on the first tool call after `preCompact`, so
//! `jkz-session-start` is registered for `postToolUse` too: it answers
//! once per compaction, when the session is marked, with the
//! decision-critical state. A compaction followed by no tool call before
//! the session ends leaves the model with the summary alone; a resumed
//! session's `sessionStart` (`resume`) re-injects the state again.
//!
//! A non-zero exit of a `preToolUse` hook blocks the tool: jkz's hooks
//! always exit 0.

pub mod help;

use std::path::PathBuf;

use serde_json::{json, Value};

use super::edge::Hook;
use super::event::{EventKind, EventName, HookEvent, StartSource, Tool, ToolOutput, ToolUse};
use super::{Answer, Client, Parsed};
use crate::hook::Warnings;
use crate::hook_input::HookInput;
use crate::reduce::ClientCut;
use crate::state_dir::StateDir;

/// The variable jkz's registration sets to the event's name.
pub const EVENT_VAR: &str = "JKZ_COPILOT_EVENT";

/// Set by Copilot for its hooks only (the model's shell commands get
/// `COPILOT_CLI` too, so that one alone does not tell a hook).
const HOOK_DIR_VAR: &str = "COPILOT_HOOK_DIR";

/// `state/clients/copilot/<session>.compacted`: a compaction whose state
/// jkz has not re-injected yet.
pub const PENDING_DIR: &str = "clients/copilot";

/// Copilot shows a shell output of up to about 20 KiB inline (20,250
/// characters were, 20,623 were not); a longer one is saved to a file and
/// the model gets an 889-character note with its first 500 characters.
pub const SHELL_KEEPS: u64 = 20_250;
/// What the model sees of a longer one.
pub const SHELL_NOTE: u64 = 889;
/// The first characters of a longer one the note shows.
pub const SHELL_PREVIEW: usize = 500;

/// How Copilot cuts a shell output: the head of its preview.
pub const SHELL_CUT: ClientCut = ClientCut {
    whole: SHELL_KEEPS as usize,
    read: usize::MAX,
    head: SHELL_PREVIEW,
    tail: 0,
};

/// jkz's view, in characters: under Copilot's inline limit with room for
/// its `<shellId: N completed with exit code K>` line.
pub const VIEW_BUDGET: usize = 16_000;

/// Bytes Copilot shows of a shell output of `chars` characters and
/// `bytes` bytes.
pub fn shell_shown(chars: u64, bytes: u64) -> u64 {
    if chars > SHELL_KEEPS {
        SHELL_NOTE
    } else {
        bytes
    }
}

/// True when Copilot sent `input`: jkz's registration names the event,
/// Copilot's hook directory is set, or a camelCase event arrives under
/// Copilot. `CLAUDE_PROJECT_DIR`, which Copilot also sets, says nothing.
pub fn sent(input: &HookInput, env_set: impl Fn(&str) -> bool) -> bool {
    env_set(EVENT_VAR)
        || env_set(HOOK_DIR_VAR)
        || env_set("COPILOT_CLI") && input.raw.contains_key("sessionId")
}

/// True when the process environment is the one Copilot gives its hooks.
pub fn env_says() -> bool {
    [EVENT_VAR, HOOK_DIR_VAR]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
}

/// Copilot's name of `name`.
pub fn spelling(name: EventName) -> Option<&'static str> {
    match name {
        EventName::SessionStart => Some("sessionStart"),
        EventName::UserPrompt => Some("userPromptSubmitted"),
        EventName::PreToolUse => Some("preToolUse"),
        EventName::PostToolUse => Some("postToolUse"),
        EventName::PreCompact => Some("preCompact"),
        EventName::SessionEnd => Some("sessionEnd"),
        EventName::PostCompact | EventName::ModelRequest => None,
    }
}

fn event_of(sent: &str) -> Option<EventName> {
    Some(match sent {
        "sessionStart" => EventName::SessionStart,
        "userPromptSubmitted" => EventName::UserPrompt,
        "preToolUse" => EventName::PreToolUse,
        "postToolUse" => EventName::PostToolUse,
        "preCompact" => EventName::PreCompact,
        "sessionEnd" => EventName::SessionEnd,
        _ => return None,
    })
}

/// The event Copilot's fields describe (measured payloads): a tool's
/// result, its arguments, a prompt, a start's source, a compaction's
/// trigger, an end's reason.
pub fn inferred(input: &HookInput) -> Option<&'static str> {
    let has = |k: &str| input.raw.contains_key(k);
    Some(if has("toolResult") {
        "postToolUse"
    } else if has("error") {
        "postToolUseFailure"
    } else if has("toolArgs") {
        "preToolUse"
    } else if has("agentName") {
        "subagentStart"
    } else if has("prompt") {
        "userPromptSubmitted"
    } else if has("source") {
        "sessionStart"
    } else if has("trigger") {
        "preCompact"
    } else if has("stopReason") {
        "agentStop"
    } else if has("reason") {
        "sessionEnd"
    } else {
        return None;
    })
}

/// A Copilot event as jkz's; `event_var`: [`EVENT_VAR`]'s value.
pub fn parse(input: HookInput, hook: &Hook) -> Parsed {
    let named = std::env::var(EVENT_VAR).ok().filter(|v| !v.is_empty());
    parse_named(input, hook, named.as_deref())
}

/// [`parse`] with the registration's event name given.
pub fn parse_named(mut input: HookInput, hook: &Hook, registered: Option<&str>) -> Parsed {
    let sent = ["hookEventName", "hook_event_name"]
        .iter()
        .find_map(|k| input.raw.get(*k))
        .cloned();
    let name = match &sent {
        Some(Value::String(s)) => event_of(s),
        Some(_) => None,
        None => match registered.or_else(|| inferred(&input)) {
            Some(n) => match event_of(n) {
                Some(e) => Some(e),
                None => return Parsed::Unknown(Some(Value::from(n).to_string())),
            },
            None => hook.default,
        },
    };
    let Some(name) = name else {
        return Parsed::Unknown(sent.map(|v| v.to_string()));
    };
    let kind = match name {
        EventName::SessionStart => EventKind::SessionStart {
            source: match input.source() {
                Some("new") => Some(StartSource::Startup),
                other => other.and_then(StartSource::parse),
            },
        },
        EventName::UserPrompt => EventKind::UserPrompt,
        EventName::PreToolUse => EventKind::PreToolUse(tool_use(&input)),
        // Copilot has no model-request event; a postToolUse answer's
        // context is in the next request and every one after it, so for
        // a hook that answers model requests (the re-injection) it is one.
        EventName::PostToolUse
            if !hook.handles.contains(&EventName::PostToolUse)
                && hook.handles.contains(&EventName::ModelRequest) =>
        {
            EventKind::ModelRequest
        }
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
        EventName::SessionEnd => EventKind::SessionEnd,
        EventName::PostCompact | EventName::ModelRequest => {
            return Parsed::Unknown(sent.map(|v| v.to_string()))
        }
    };
    let mut event = HookEvent::new(Client::Copilot, kind, input);
    let text = |k: &str| event.raw.text(k).map(str::to_string);
    event.session_id = text("sessionId").or(event.session_id.take());
    event.transcript_path = text("transcriptPath").or(event.transcript_path.take());
    Parsed::Event(Box::new(event))
}

/// The tool call of a tool event, by Copilot's tool names: `bash`
/// (`command`), `create`, `edit`, `str_replace` (`path`), `view`
/// (`path`, `view_range`), `apply_patch`.
fn tool_use(input: &HookInput) -> ToolUse {
    let name = input.text("toolName").unwrap_or_default().to_string();
    let args = input.raw.get("toolArgs").unwrap_or(&Value::Null);
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let tool = match name.as_str() {
        "bash" => Tool::Shell {
            command: text("command").unwrap_or_default().to_string(),
            dir: None,
            background: text("mode") == Some("async")
                || args.get("detach").and_then(Value::as_bool) == Some(true),
        },
        "view" => Tool::Read {
            range: !args["view_range"].is_null(),
        },
        "create" | "edit" | "str_replace" => Tool::Edit {
            file: text("path").filter(|p| !p.is_empty()).map(str::to_string),
        },
        "apply_patch" => match args {
            Value::String(body) => Tool::Patch { body: body.clone() },
            _ => Tool::Patch {
                body: text("input").unwrap_or_default().to_string(),
            },
        },
        _ => Tool::Other,
    };
    ToolUse {
        tool,
        name,
        output: None,
    }
}

/// A shell command's result (`toolResult.textResultForLlm`), moved out of
/// the event.
fn output(input: &mut HookInput, tool: &Tool) -> Option<ToolOutput> {
    let Tool::Shell { .. } = tool else {
        return None;
    };
    ToolOutput::shell_text(input, "/toolResult/textResultForLlm", Client::Copilot, None)
}

/// Whether there is work: a model request (a tool call's answer) only
/// right after a compaction jkz has not re-injected for.
pub fn goes_on(event: &mut HookEvent, _warnings: &mut Warnings) -> bool {
    match event.name() {
        EventName::ModelRequest => pending(event).is_some_and(|p| p.is_file()),
        EventName::SessionStart
        | EventName::UserPrompt
        | EventName::PreToolUse
        | EventName::PostToolUse
        | EventName::PreCompact
        | EventName::PostCompact
        | EventName::SessionEnd => true,
    }
}

/// The mark of `event`'s session's unanswered compaction.
fn pending(event: &HookEvent) -> Option<PathBuf> {
    let session = event.session()?.ok()?;
    let state = StateDir::resolve(None, event.cwd.as_deref());
    Some(
        state
            .join(PENDING_DIR)
            .join(format!("{}.compacted", session.as_str())),
    )
}

/// `answer` in Copilot's contract.
pub fn render(event: &HookEvent, answer: Answer, warnings: &mut Warnings) -> Option<String> {
    match answer {
        Answer::Nothing => None,
        Answer::Deny(why) => Some(decision("deny", &why)),
        Answer::Ask(why) => Some(decision("ask", &why)),
        Answer::RewriteCommand(command) => {
            // Copilot replaces the arguments wholesale: every key goes back.
            let mut args = event.raw.raw.get("toolArgs")?.as_object()?.clone();
            args.insert("command".into(), Value::String(command));
            Some(json!({"permissionDecision": "allow", "modifiedArgs": args}).to_string())
        }
        Answer::ReplaceOutput(text) => Some(
            json!({"modifiedResult": {"resultType": "success", "textResultForLlm": text}})
                .to_string(),
        ),
        Answer::AddContext(context) => {
            if event.name() == EventName::ModelRequest {
                if let Some(mark) = pending(event) {
                    if let Err(e) = std::fs::remove_file(&mark) {
                        warnings.warn(format!("removing {}: {e}", mark.display()));
                    }
                }
            }
            Some(format!("{}\n", json!({ "additionalContext": context })))
        }
        // Nothing reaches Copilot's summarizer: the snapshot is taken, and
        // the session marked for the re-injection after the summary.
        Answer::Summarize { state_root, .. } => {
            mark_compacted(event, state_root.is_some(), warnings);
            None
        }
    }
}

/// Marks `event`'s session as compacted, in a state directory that is
/// there (`has_state`).
fn mark_compacted(event: &HookEvent, has_state: bool, warnings: &mut Warnings) {
    if !has_state {
        return;
    }
    let Some(mark) = pending(event) else {
        warnings.warn("preCompact event without a valid sessionId: no re-injection marked");
        return;
    };
    let made = mark
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| crate::atomic::write_atomic(&mark, b""));
    if let Err(e) = made {
        warnings.warn(format!("writing {}: {e}", mark.display()));
    }
}

/// The `preToolUse` answer with a permission decision and `why`.
pub fn decision(decision: &str, why: &str) -> String {
    json!({"permissionDecision": decision, "permissionDecisionReason": why}).to_string()
}

/// True when the process `name` runs Copilot CLI (its native binary).
pub fn is_process(name: &str) -> bool {
    name == "copilot"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::event::Body;

    /// Events as Copilot CLI 1.0.102 sent them (camelCase registration).
    const PRE: &str = r#"{"sessionId":"70e0b942-8e00-40eb-8545-20e11119dd00","timestamp":1795869901074,"cwd":"/r","toolName":"bash","toolArgs":{"command":"echo one","description":"s"}}"#;
    const POST: &str = r#"{"sessionId":"70e0b942-8e00-40eb-8545-20e11119dd00","timestamp":1795869901175,"cwd":"/r","toolName":"bash","toolArgs":{"command":"echo one","description":"s"},"toolResult":{"resultType":"success","textResultForLlm":"one\n<shellId: 0 completed with exit code 0>"}}"#;
    const START: &str = r#"{"sessionId":"70e0b942-8e00-40eb-8545-20e11119dd00","timestamp":1795869900804,"cwd":"/r","source":"new","initialPrompt":"first prompt"}"#;
    const COMPACT: &str = r#"{"sessionId":"70e0b942-8e00-40eb-8545-20e11119dd00","timestamp":1795869907558,"cwd":"/r","transcriptPath":"/h/.copilot/session-state/70e0b942/events.jsonl","trigger":"manual","customInstructions":"keep the plan"}"#;
    const PROMPT: &str = r#"{"sessionId":"70e0b942-8e00-40eb-8545-20e11119dd00","timestamp":1795869900908,"cwd":"/r","prompt":"first prompt"}"#;

    fn event(json: &str, hook: &Hook, registered: Option<&str>) -> HookEvent {
        let input = HookInput::parse(json.as_bytes()).unwrap();
        match parse_named(input, hook, registered) {
            Parsed::Event(e) => *e,
            Parsed::Unknown(n) => panic!("unknown {n:?}"),
        }
    }

    #[test]
    fn reads_the_measured_events_by_registration_and_by_their_fields() {
        for registered in [None, Some("preToolUse")] {
            let e = event(PRE, &Hook::ANY, registered);
            assert_eq!(e.name(), EventName::PreToolUse);
            assert_eq!(
                e.session_id.as_deref(),
                Some("70e0b942-8e00-40eb-8545-20e11119dd00")
            );
            assert_eq!(e.cwd, Some(PathBuf::from("/r")));
            assert_eq!(
                e.tool_use().unwrap().tool,
                Tool::Shell {
                    command: "echo one".into(),
                    dir: None,
                    background: false
                }
            );
        }
        let e = event(POST, &Hook::ANY, None);
        let out = e.tool_use().unwrap().output.as_ref().unwrap();
        assert_eq!(
            out.body,
            Body::Inline("one\n<shellId: 0 completed with exit code 0>".into())
        );
        let e = event(START, &Hook::ANY, Some("sessionStart"));
        assert!(matches!(
            e.kind,
            EventKind::SessionStart {
                source: Some(StartSource::Startup)
            }
        ));
        let e = event(COMPACT, &Hook::ANY, None);
        assert_eq!(e.name(), EventName::PreCompact);
        assert_eq!(
            e.transcript_path.as_deref(),
            Some("/h/.copilot/session-state/70e0b942/events.jsonl")
        );
        assert_eq!(
            event(PROMPT, &Hook::ANY, None).name(),
            EventName::UserPrompt
        );
        let e = event(
            r#"{"sessionId":"s","toolName":"create","toolArgs":{"path":"src/a.rs","file_text":"x"}}"#,
            &Hook::ANY,
            None,
        );
        assert_eq!(
            e.tool_use().unwrap().tool,
            Tool::Edit {
                file: Some("src/a.rs".into())
            }
        );
        // An event jkz does not handle, named by the registration.
        let input = HookInput::parse(br#"{"sessionId":"s"}"#.as_slice()).unwrap();
        assert!(matches!(
            parse_named(input, &Hook::ANY, Some("agentStop")),
            Parsed::Unknown(Some(n)) if n == r#""agentStop""#
        ));
    }

    #[test]
    fn a_tool_result_is_a_model_request_for_the_reinjection() {
        let hook = crate::compaction::hooks::SESSION_START;
        assert_eq!(event(POST, &hook, None).name(), EventName::ModelRequest);
        assert_eq!(event(POST, &Hook::ANY, None).name(), EventName::PostToolUse);
    }

    #[test]
    fn renders_in_copilots_contract() {
        let mut w = Warnings::new("jkz-test");
        let e = event(PRE, &Hook::ANY, None);
        let deny: Value =
            serde_json::from_str(&render(&e, Answer::Deny("held".into()), &mut w).unwrap())
                .unwrap();
        assert_eq!(
            deny,
            json!({"permissionDecision": "deny", "permissionDecisionReason": "held"})
        );
        let rewrite: Value = serde_json::from_str(
            &render(
                &e,
                Answer::RewriteCommand("jkz-truncate --run x".into()),
                &mut w,
            )
            .unwrap(),
        )
        .unwrap();
        // Wholesale: the description is repeated.
        assert_eq!(
            rewrite,
            json!({"permissionDecision": "allow",
                   "modifiedArgs": {"command": "jkz-truncate --run x", "description": "s"}})
        );
        let e = event(POST, &Hook::ANY, None);
        let replaced: Value =
            serde_json::from_str(&render(&e, Answer::ReplaceOutput("v".into()), &mut w).unwrap())
                .unwrap();
        assert_eq!(
            replaced,
            json!({"modifiedResult": {"resultType": "success", "textResultForLlm": "v"}})
        );
        let ctx: Value =
            serde_json::from_str(&render(&e, Answer::AddContext("c".into()), &mut w).unwrap())
                .unwrap();
        assert_eq!(ctx, json!({"additionalContext": "c"}));
    }

    #[test]
    fn a_compaction_is_reinjected_once_on_the_next_tool_call() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("state")).unwrap();
        let cwd = dir.path().display().to_string();
        let with_cwd = |json: &str| json.replace(r#""cwd":"/r""#, &format!(r#""cwd":{cwd:?}"#));
        let mut w = Warnings::new("jkz-test");
        let hook = crate::compaction::hooks::SESSION_START;
        let mut next = event(&with_cwd(POST), &hook, None);
        assert!(!goes_on(&mut next, &mut w), "no compaction yet");
        let compact = event(&with_cwd(COMPACT), &Hook::ANY, None);
        let summarize = Answer::Summarize {
            instructions: "keep".into(),
            snapshot: None,
            state_root: Some(dir.path().join("state")),
        };
        assert_eq!(render(&compact, summarize, &mut w), None);
        assert!(goes_on(&mut next, &mut w));
        let out = render(&next, Answer::AddContext("state".into()), &mut w).unwrap();
        assert!(out.contains(r#""additionalContext":"state""#));
        assert!(!goes_on(&mut next, &mut w), "answered once");
    }
}
