//! One hook run, from stdin to stdout: the only place that reads a
//! client's event and writes a client's answer.
//!
//! 1. The event is read with a bound ([`HookInput::read_bounded`]);
//! 2. its client is told, once ([`Client::detect`]);
//! 3. the client's module parses it into a [`HookEvent`]: an event this
//!    hook does not handle is said in one line and left;
//! 4. a state directory git tracks is refused, for every client and
//!    event: nothing of it is read, nothing written
//!    ([`hook::refuse_tracked_state`]);
//! 5. the client's own bookkeeping may end the run there
//!    ([`Client::goes_on`]);
//! 6. the feature answers ([`Answer`]), and the client's module renders
//!    the answer in its contract, printed on stdout.

use std::io::Read;

use super::{Answer, Client, EventName, HookEvent, Parsed};
use crate::hook::{self, Warnings};
use crate::hook_input::HookInput;
use crate::state_dir::StateDir;

/// What one hook binary handles.
#[derive(Clone, Copy, Debug)]
pub struct Hook {
    /// The events it answers.
    pub handles: &'static [EventName],
    /// The event an input naming none is taken as.
    pub default: Option<EventName>,
    /// The most bytes of input read.
    pub max_input: u64,
    /// Said after why an input was refused (`; the tool's output stands`).
    pub on_bad_input: &'static str,
    /// Whether a state directory git tracks ends the run before the
    /// feature is asked (a feature that reads nothing there before it
    /// knows it must decides for itself).
    pub refuse_tracked_state: bool,
    /// Whether it reads a tool's output: only then is the output moved out
    /// of the event into [`ToolOutput`](super::ToolOutput) (for another
    /// hook, an MCP tool's text is not even joined).
    pub tool_output: bool,
}

impl Hook {
    /// A hook that takes every event as it comes, its tool output included
    /// (what the clients' own tests read events with).
    pub const ANY: Hook = Hook {
        handles: &[
            EventName::SessionStart,
            EventName::UserPrompt,
            EventName::PreToolUse,
            EventName::PostToolUse,
            EventName::PreCompact,
            EventName::PostCompact,
            EventName::SessionEnd,
            EventName::ModelRequest,
        ],
        default: None,
        max_input: crate::hook_input::MAX_HOOK_INPUT,
        on_bad_input: "",
        refuse_tracked_state: false,
        tool_output: true,
    };
}

/// Runs one hook: `answer` is the feature.
pub fn run(
    stdin: impl Read,
    hook: &Hook,
    warnings: &mut Warnings,
    answer: impl FnOnce(&HookEvent, &mut Warnings) -> Answer,
) {
    let Some(mut event) = read(stdin, hook, warnings) else {
        return;
    };
    if hook.refuse_tracked_state
        && hook::refuse_tracked_state(&StateDir::resolve(None, event.cwd.as_deref()), warnings)
    {
        return;
    }
    let client = event.client;
    if !client.goes_on(&mut event, warnings) {
        return;
    }
    let said = answer(&event, warnings);
    if let Some(out) = client.render(&event, said, warnings) {
        hook::print(&out, warnings);
    }
}

/// Reads, tells the client of, and parses one event; `None` (said in one
/// line) when it is not one `hook` handles.
pub fn read(stdin: impl Read, hook: &Hook, warnings: &mut Warnings) -> Option<HookEvent> {
    let input = match HookInput::read_bounded(stdin, hook.max_input) {
        Ok(input) => input,
        Err(e) => {
            warnings.warn(format!("{e}{}", hook.on_bad_input));
            return None;
        }
    };
    let client = Client::detect(&input);
    match client.parse(input, hook) {
        Parsed::Event(event) if hook.handles.contains(&event.name()) => Some(*event),
        Parsed::Event(event) => {
            let sent = event.raw.event_name().unwrap_or_default().to_string();
            not_handled(client, hook, &format!("{sent:?}"), warnings);
            None
        }
        Parsed::Unknown(name) => {
            not_handled(client, hook, name.as_deref().unwrap_or("none"), warnings);
            None
        }
    }
}

fn not_handled(client: Client, hook: &Hook, sent: &str, warnings: &mut Warnings) {
    warnings.warn(not_handled_line(client, hook, sent));
}

/// Why `client`'s event `sent` (its JSON text) is left by `hook`: the
/// events the hook does handle, by the client's names.
fn not_handled_line(client: Client, hook: &Hook, sent: &str) -> String {
    let handled: Vec<&str> = hook
        .handles
        .iter()
        .filter_map(|&n| client.spelling(n))
        .collect();
    format!(
        "{} event {} is not one this hook handles ({}): ignored",
        client.title(),
        crate::pipeline::shorten(sent, 60),
        handled.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRE_COMPACT: Hook = Hook {
        handles: &[EventName::PreCompact],
        default: Some(EventName::PreCompact),
        ..Hook::ANY
    };

    fn read_for(hook: &Hook, json: &str) -> Option<HookEvent> {
        read(json.as_bytes(), hook, &mut Warnings::new("jkz-test"))
    }

    #[test]
    fn an_event_is_read_once_for_the_hook_that_handles_it() {
        let e = read_for(
            &PRE_COMPACT,
            r#"{"session_id":"s","hook_event_name":"PreCompact"}"#,
        );
        assert_eq!(
            e.map(|e| (e.client, e.name())),
            Some((Client::Claude, EventName::PreCompact))
        );
        // Gemini CLI's name for it.
        let e = read_for(
            &PRE_COMPACT,
            r#"{"session_id":"s","hook_event_name":"PreCompress"}"#,
        );
        assert_eq!(
            e.map(|e| (e.client, e.name())),
            Some((Client::Gemini, EventName::PreCompact))
        );
        // No name: the hook's own event.
        let e = read_for(&PRE_COMPACT, r#"{"session_id":"s","turn_id":"t"}"#);
        assert_eq!(
            e.map(|e| (e.client, e.name())),
            Some((Client::Codex, EventName::PreCompact))
        );
        // Another event, one jkz does not know, and input that is no event.
        assert!(read_for(&PRE_COMPACT, r#"{"hook_event_name":"SessionStart"}"#).is_none());
        assert!(read_for(&PRE_COMPACT, r#"{"hook_event_name":"Stop"}"#).is_none());
        assert!(read_for(&PRE_COMPACT, "not json").is_none());
        let small = Hook {
            max_input: 8,
            ..PRE_COMPACT
        };
        assert!(read_for(&small, r#"{"session_id":"s"}"#).is_none());
    }

    #[test]
    fn an_event_left_says_which_ones_the_hook_handles() {
        let line = not_handled_line(Client::Claude, &PRE_COMPACT, r#""Stop""#);
        assert_eq!(
            line,
            r#"Claude Code event "Stop" is not one this hook handles (PreCompact): ignored"#
        );
        let line = not_handled_line(Client::Gemini, &PRE_COMPACT, "7");
        assert_eq!(
            line,
            "Gemini CLI event 7 is not one this hook handles (PreCompress): ignored"
        );
    }
}
