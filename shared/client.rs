//! Which coding-agent client a hook serves, and so whose contract its answer
//! speaks: Claude Code, Codex CLI or Gemini CLI.
//!
//! One set of binaries serves every client (see `docs/clients.md`). A hook
//! learns its client from the event itself and from the environment the
//! client gives it, never from configuration:
//! - Gemini CLI names its events differently (`PreCompress`, `BeforeTool`,
//!   `AfterTool`, `BeforeModel`, `BeforeAgent`, …) and sets
//!   `GEMINI_PROJECT_DIR` / `GEMINI_SESSION_ID` for its hooks;
//! - Codex CLI's events carry a `turn_id` (Claude Code's never do), except
//!   `SessionStart`, whose `transcript_path` is a Codex rollout file
//!   (`…/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, measured on Codex
//!   0.169.0);
//! - anything else is Claude Code, the contract jkz has always spoken.

use crate::hook_input::HookInput;

pub mod codex;
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

/// True when the event's `transcript_path` is a Codex rollout file: Codex
/// names every session's transcript `rollout-<time>-<id>.jsonl`, Claude
/// Code `<session id>.jsonl`.
fn is_codex_rollout(input: &HookInput) -> bool {
    input
        .text("transcript_path")
        .and_then(|p| std::path::Path::new(p).file_name())
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
}

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
        } else if input.raw.contains_key("turn_id") || is_codex_rollout(input) {
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
        // Codex's SessionStart has no turn_id (measured on 0.169.0).
        let codex_start = input(
            r#"{"session_id":"s","hook_event_name":"SessionStart","source":"compact",
                "transcript_path":"/h/.codex/sessions/2026/11/25/rollout-2026-11-25T15-42-22-01a2.jsonl"}"#,
        );
        assert_eq!(Client::detect_with(&codex_start, no_env), Client::Codex);
        let claude_start = input(
            r#"{"session_id":"s","hook_event_name":"SessionStart","source":"compact",
                "transcript_path":"/h/.claude/projects/-p/0b5e.jsonl"}"#,
        );
        assert_eq!(Client::detect_with(&claude_start, no_env), Client::Claude);
        let gemini = input(r#"{"session_id":"s","hook_event_name":"PreCompress"}"#);
        assert_eq!(Client::detect_with(&gemini, no_env), Client::Gemini);
        let gemini_start = input(r#"{"session_id":"s","hook_event_name":"SessionStart"}"#);
        assert_eq!(
            Client::detect_with(&gemini_start, |v| v == "GEMINI_SESSION_ID"),
            Client::Gemini
        );
    }
}
