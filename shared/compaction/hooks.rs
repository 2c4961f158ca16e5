//! The entries of the compaction hooks: each reads its event, tells the
//! client ([`Client::detect`]) and hands the event to that client's path:
//! the rules are `pre_compact` and `session_start`, the clients' contracts
//! `crate::client`. A state directory git tracks is refused first, for
//! every client and event: nothing of it is injected, nothing written
//! there ([`hook::refuse_tracked_state`]).
//!
//! - `jkz-pre-compact`: Gemini CLI's PreCompress goes to
//!   [`gemini::pre_compress`]; otherwise the snapshot is taken
//!   ([`pre_compact::snapshot`]) and answered as the client reads it:
//!   Claude Code (and anything unknown) the summarizer instructions, Codex
//!   CLI its JSON only ([`codex::answer_pre_compact`]).
//! - `jkz-session-start`: Gemini CLI's BeforeModel goes to
//!   [`gemini::before_model`]; otherwise [`session_start::run`].

use std::io::Read;
use std::time::Instant;

use super::{gemini, pre_compact, session_start};
use crate::client::{codex, Client};
use crate::git::GitProbe;
use crate::hook::{self, Warnings};
use crate::hook_input::HookInput;
use crate::state_dir::StateDir;

/// The events `jkz-pre-compact` handles: Claude Code's and Codex CLI's
/// PreCompact, Gemini CLI's PreCompress.
pub const PRE_COMPACT_EVENTS: &[&str] = &["PreCompact", "PreCompress"];

/// The events `jkz-session-start` handles: SessionStart and PostCompact,
/// and Gemini CLI's BeforeModel.
pub const SESSION_START_EVENTS: &[&str] = &["SessionStart", "PostCompact", "BeforeModel"];

/// `jkz-pre-compact` with `stdin` as the event.
pub fn pre_compact(stdin: impl Read, warnings: &mut Warnings) {
    let started = Instant::now();
    // Gemini CLI fires PreCompress before every turn: its path decides
    // whether to snapshot at all, so git is not started ahead for it.
    let gemini_env = Client::gemini_env();
    let early_git = hook::env_project_dir()
        .filter(|_| !gemini_env)
        .map(|dir| GitProbe::start(&dir));
    // Input that is not the event (not JSON, another event) is said in one
    // line; nothing is snapshot and nothing printed: a summarizer steered
    // by a guess would be worse than one left alone.
    let input = match HookInput::read(stdin) {
        Ok(input) => input,
        Err(e) => {
            warnings.warn(e.to_string());
            return;
        }
    };
    if let Some(why) = input.not_handled(PRE_COMPACT_EVENTS) {
        warnings.warn(why);
        return;
    }
    let cwd = input.cwd();
    if hook::refuse_tracked_state(&StateDir::resolve(None, cwd.as_deref()), warnings) {
        return;
    }
    let client = Client::detect(&input);
    if client == Client::Gemini {
        gemini::pre_compress::run(&input, warnings);
        return;
    }
    let made = pre_compact::snapshot(started, early_git, Ok(input), warnings);
    // What the client reads on stdout: Codex takes JSON only.
    let answer = match client {
        Client::Codex => codex::answer_pre_compact(
            made.root.as_deref(),
            &made.instructions,
            made.written,
            warnings,
        ),
        Client::Claude | Client::Gemini => made.instructions,
    };
    hook::print(&answer, warnings);
}

/// `jkz-session-start` with `stdin` as the event.
pub fn session_start(stdin: impl Read, warnings: &mut Warnings) {
    let input = match HookInput::read(stdin) {
        Ok(input) => input,
        Err(e) => {
            warnings.warn(e.to_string());
            return;
        }
    };
    if let Some(why) = input.not_handled(SESSION_START_EVENTS) {
        warnings.warn(why);
        return;
    }
    if hook::refuse_tracked_state(&StateDir::resolve(None, input.cwd().as_deref()), warnings) {
        return;
    }
    if Client::detect(&input) == Client::Gemini && input.event_name() == Some("BeforeModel") {
        if let Some(answer) = gemini::before_model::run(&input, warnings) {
            hook::print(&format!("{answer}\n"), warnings);
        }
        return;
    }
    session_start::run(&input, warnings);
}
