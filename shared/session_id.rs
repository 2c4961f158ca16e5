//! Session ids: `[A-Za-z0-9._-]{1,128}`, and never `.` or `..`. Anything else
//! is refused before it can become part of a path.
//!
//! Which session a tool runs in is decided once, here ([`resolve_raw`]), so
//! that the hooks and `jkz-session` agree: an explicit id (`jkz-session
//! --session`, or the hook event's `session_id`) > `JKZ_SESSION` >
//! `CLAUDE_SESSION_ID` > `CLAUDE_CODE_SESSION_ID`. `jkz-session` falls
//! back to `anonymous`; a hook with none updates no session record.

use std::fmt;

/// A validated session id, safe to use as a file name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(String);

/// Why a session id was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidSessionId {
    /// The refused id, escaped and shortened for a one-line message.
    pub shown: String,
}

impl fmt::Display for InvalidSessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid session id {}: expected 1 to 128 characters from A-Z a-z 0-9 . _ - (and not . or ..)",
            self.shown
        )
    }
}

impl std::error::Error for InvalidSessionId {}

impl SessionId {
    pub fn parse(raw: &str) -> Result<SessionId, InvalidSessionId> {
        if crate::file_name::is_safe(raw) {
            Ok(SessionId(raw.to_string()))
        } else {
            let mut shown: String = raw
                .chars()
                .take(40)
                .collect::<String>()
                .escape_debug()
                .to_string();
            if raw.chars().count() > 40 {
                shown.push('…');
            }
            Err(InvalidSessionId {
                shown: format!("\"{shown}\""),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The environment variables that name the session, in the order consulted:
/// jkz's own (a pipeline script exports it, so every jkz command it runs, and
/// every agent it starts without jkz's hooks, acts as the script's session),
/// a user's or a wrapper's choice, then the one Claude Code sets for every
/// hook and every command its Bash tool runs.
pub const SESSION_ENV: [&str; 3] = ["JKZ_SESSION", "CLAUDE_SESSION_ID", "CLAUDE_CODE_SESSION_ID"];

/// [`SESSION_ENV`] in the order consulted, as help texts name it:
/// `$JKZ_SESSION, else $…` with `sigil` `"$"`.
pub fn env_in_order(sigil: &str) -> String {
    SESSION_ENV.map(|v| format!("{sigil}{v}")).join(", else ")
}

/// The session id to run as, not yet validated, and whether it was explicit:
/// `explicit` when given, else the first of [`SESSION_ENV`] that is set and
/// not empty (read through `env`); none when nothing names one.
pub fn resolve_raw(
    explicit: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Option<(String, bool)> {
    match explicit {
        Some(id) => Some((id.to_string(), true)),
        None => SESSION_ENV
            .into_iter()
            .find_map(|k| env(k).filter(|v| !v.is_empty()))
            .map(|id| (id, false)),
    }
}

/// A variable of the process environment, lossily: a value that is not
/// UTF-8 must be refused as an invalid id, not skipped as if unset (which
/// would save into another session).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_alphabet() {
        for ok in ["a", "0f3c-9a.b_c", &"x".repeat(128), "..."] {
            assert!(SessionId::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_paths_and_oddities() {
        for bad in [
            "",
            ".",
            "..",
            "../../etc",
            "a/b",
            "/abs",
            "a b",
            "é",
            "a\0b",
            &"x".repeat(129),
        ] {
            let err = SessionId::parse(bad).unwrap_err();
            assert!(!err.to_string().contains('\n'));
        }
    }
}
