//! Which coding-agent client a hook serves, and so whose contract its answer
//! speaks: Claude Code, Codex CLI or Gemini CLI.
//!
//! One set of binaries serves every client (see `docs/clients.md`). A hook
//! learns its client from the event itself and from the environment the
//! client gives it, never from configuration:
//! - Gemini CLI names its events differently (`PreCompress`, `BeforeTool`,
//!   `AfterTool`, `BeforeModel`, `BeforeAgent`, …) and sets
//!   `GEMINI_PROJECT_DIR` / `GEMINI_SESSION_ID` for its hooks;
//! - Codex CLI's events carry a `turn_id` (Claude Code's never do);
//! - anything else is Claude Code, the contract jkz has always spoken.

use crate::hook_input::HookInput;

pub mod gemini;

/// A client jkz answers hooks for, and installs into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Client {
    /// Claude Code (`.claude/settings.json`, or the plugin).
    Claude,
    /// Codex CLI (`.codex/hooks.json`).
    Codex,
    /// Gemini CLI (`.gemini/settings.json`).
    Gemini,
}

/// Event names only Gemini CLI sends.
const GEMINI_EVENTS: [&str; 8] = [
    "PreCompress",
    "BeforeTool",
    "AfterTool",
    "BeforeModel",
    "AfterModel",
    "BeforeAgent",
    "AfterAgent",
    "BeforeToolSelection",
];

/// Environment variables only Gemini CLI sets for its hooks.
const GEMINI_ENV: [&str; 2] = ["GEMINI_PROJECT_DIR", "GEMINI_SESSION_ID"];

impl Client {
    /// The client that sent `input`, read with the process environment.
    pub fn detect(input: &HookInput) -> Client {
        Self::detect_with(input, |name| {
            std::env::var_os(name).is_some_and(|v| !v.is_empty())
        })
    }

    /// True when the process environment is the one Gemini CLI gives its
    /// hooks: known before the event is read.
    pub fn gemini_env() -> bool {
        GEMINI_ENV
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
    }

    /// [`Client::detect`] with the environment as a predicate (set and not
    /// empty), so tests need not touch the process's own.
    pub fn detect_with(input: &HookInput, env_set: impl Fn(&str) -> bool) -> Client {
        let event = input.event_name().unwrap_or_default();
        if GEMINI_EVENTS.contains(&event) || GEMINI_ENV.iter().any(|v| env_set(v)) {
            Client::Gemini
        } else if input.raw.contains_key("turn_id") {
            Client::Codex
        } else {
            Client::Claude
        }
    }

    /// The name users type (`--client codex`) and jkz prints.
    pub fn name(self) -> &'static str {
        match self {
            Client::Claude => "claude",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(json: &str) -> HookInput {
        HookInput::parse(json.as_bytes()).unwrap()
    }

    #[test]
    fn tells_the_clients_apart() {
        let no_env = |_: &str| false;
        let claude = input(r#"{"session_id":"s","hook_event_name":"PreCompact"}"#);
        assert_eq!(Client::detect_with(&claude, no_env), Client::Claude);
        let codex = input(r#"{"session_id":"s","hook_event_name":"PreCompact","turn_id":"t1"}"#);
        assert_eq!(Client::detect_with(&codex, no_env), Client::Codex);
        let gemini = input(r#"{"session_id":"s","hook_event_name":"PreCompress"}"#);
        assert_eq!(Client::detect_with(&gemini, no_env), Client::Gemini);
        let gemini_start = input(r#"{"session_id":"s","hook_event_name":"SessionStart"}"#);
        assert_eq!(
            Client::detect_with(&gemini_start, |v| v == "GEMINI_SESSION_ID"),
            Client::Gemini
        );
    }
}
