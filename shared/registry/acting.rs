//! Which chat a registry command acts for, and who may name another.
//!
//! A command runs *inside a chat* when the one session rule
//! ([`crate::session_id::resolve_raw`]: `CLAUDE_SESSION_ID`, else
//! `CLAUDE_CODE_SESSION_ID`, which the client sets in its Bash tool) names
//! a session; it then acts for that chat and no other: `--session` may name
//! only the chat itself. A person at a terminal (no session variable) may
//! name any chat, e.g. to release a claim a crashed chat left behind.

use crate::exit::{Failure, EXIT_USAGE};
use crate::session_id::{process_env, resolve_raw, SessionId, SESSION_ENV};

/// Exit code: refused because another chat holds it, or because a chat
/// tried to act for another.
pub const REFUSED: u8 = 3;

/// The chat this process runs inside, if any; a session variable that is
/// not a valid id is a usage error (exit 2), never taken for "no chat".
pub fn enclosing_chat() -> Result<Option<SessionId>, Failure> {
    match resolve_raw(None, process_env) {
        None => Ok(None),
        Some((raw, _)) => SessionId::parse(&raw)
            .map(Some)
            .map_err(|e| Failure::new(EXIT_USAGE, format!("{} (from the environment)", e))),
    }
}

/// The chat to act for: the enclosing chat, which `flag` (`--session`) may
/// only repeat (exit 3 otherwise); outside a chat, `flag` (exit 2 when
/// missing).
pub fn acting_for(flag: Option<&str>) -> Result<SessionId, Failure> {
    let named = flag
        .map(|raw| SessionId::parse(raw).map_err(|e| Failure::new(EXIT_USAGE, e.to_string())))
        .transpose()?;
    match (enclosing_chat()?, named) {
        (Some(chat), Some(named)) if named != chat => Err(Failure::new(
            REFUSED,
            format!(
                "run inside chat {chat}, --session may name only that chat, not {named}: a chat acts only for itself; \
                 a person at a terminal (no {} set) may act for another chat",
                SESSION_ENV.join(" or ")
            ),
        )),
        (Some(chat), _) => Ok(chat),
        (None, Some(named)) => Ok(named),
        (None, None) => Err(Failure::new(
            EXIT_USAGE,
            format!(
                "no chat to act for: run it from a chat's Bash tool ({} is set there) or pass --session ID",
                SESSION_ENV.join(" or ")
            ),
        )),
    }
}
