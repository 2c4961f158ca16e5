//! The JSON a Claude Code hook receives on stdin, read with a size bound and
//! parsed tolerantly.
//!
//! The client sends one small JSON object (`session_id`, `transcript_path`,
//! `cwd`, `hook_event_name`, and per event `trigger`, `custom_instructions`,
//! `source`, …). A hook reads at most [`MAX_HOOK_INPUT`] bytes: anything
//! bigger is not a hook event, and reading 50 MB just to refuse it would cost
//! the host time. The whole object is kept as received (unknown fields
//! included) so a snapshot records the event exactly; the fields jkz acts on
//! are looked up from it. The session id is validated ([`SessionId`]) before
//! it can become part of a path.

use std::fmt;
use std::io::{self, Read};
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::session_id::{InvalidSessionId, SessionId};

/// The most bytes read from a hook's stdin.
pub const MAX_HOOK_INPUT: u64 = 4 * 1024 * 1024;

/// A hook event as received.
#[derive(Clone, Debug, PartialEq)]
pub struct HookInput {
    /// The whole object, unknown fields included, in the order received.
    pub raw: Map<String, Value>,
}

/// Why the input is not a usable hook event.
#[derive(Debug)]
pub enum InputError {
    Empty,
    /// Larger than the bound it was read with (that bound, in bytes).
    TooLarge(u64),
    NotJson(String),
    NotAnObject,
    Read(io::Error),
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Empty => f.write_str("empty hook input: expected a JSON object on stdin"),
            InputError::TooLarge(max) => {
                let mib = match max % (1024 * 1024) {
                    0 if *max > 0 => format!(" ({} MiB)", max / (1024 * 1024)),
                    _ => String::new(),
                };
                write!(
                    f,
                    "hook input larger than {} bytes{mib}: not a hook event, ignored",
                    crate::thousands::thousands(*max)
                )
            }
            InputError::NotJson(e) => write!(f, "hook input is not JSON ({e})"),
            InputError::NotAnObject => f.write_str("hook input is JSON but not an object"),
            InputError::Read(e) => write!(f, "reading hook input: {e}"),
        }
    }
}

impl HookInput {
    /// Reads and parses at most [`MAX_HOOK_INPUT`] bytes from `reader`.
    pub fn read(reader: impl Read) -> Result<HookInput, InputError> {
        Self::read_bounded(reader, MAX_HOOK_INPUT)
    }

    /// [`HookInput::read`] with a given bound (tests use tiny ones).
    pub fn read_bounded(reader: impl Read, max: u64) -> Result<HookInput, InputError> {
        let mut bytes = Vec::new();
        reader
            .take(max + 1)
            .read_to_end(&mut bytes)
            .map_err(InputError::Read)?;
        if bytes.len() as u64 > max {
            return Err(InputError::TooLarge(max));
        }
        Self::parse(&bytes)
    }

    pub fn parse(bytes: &[u8]) -> Result<HookInput, InputError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(InputError::Empty);
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(raw)) => Ok(HookInput { raw }),
            Ok(_) => Err(InputError::NotAnObject),
            Err(e) => Err(InputError::NotJson(e.to_string())),
        }
    }

    /// A string field, if present and a string.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.raw.get(name).and_then(Value::as_str)
    }

    /// The session id, validated. `None` when absent.
    pub fn session_id(&self) -> Option<Result<SessionId, InvalidSessionId>> {
        self.text("session_id").map(SessionId::parse)
    }

    /// The project directory the client ran in (`cwd`).
    pub fn cwd(&self) -> Option<PathBuf> {
        self.text("cwd")
            .filter(|c| !c.is_empty())
            .map(PathBuf::from)
    }

    pub fn event_name(&self) -> Option<&str> {
        self.text("hook_event_name")
    }

    /// PreCompact: `manual` or `auto`.
    pub fn trigger(&self) -> Option<&str> {
        self.text("trigger")
    }

    /// SessionStart: `startup`, `resume`, `clear`, `compact` or `fork`.
    pub fn source(&self) -> Option<&str> {
        self.text("source")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_unknown_fields_in_order() {
        let input = HookInput::parse(
            br#"{"session_id":"abc","zz":{"new":1},"cwd":"/p","trigger":"manual","aa":[1]}"#,
        )
        .unwrap();
        let keys: Vec<_> = input.raw.keys().collect();
        assert_eq!(keys, ["session_id", "zz", "cwd", "trigger", "aa"]);
        assert_eq!(input.session_id().unwrap().unwrap().as_str(), "abc");
        assert_eq!(input.trigger(), Some("manual"));
        assert_eq!(input.cwd(), Some(PathBuf::from("/p")));
    }

    #[test]
    fn refuses_bad_input_with_one_line() {
        for (bytes, want) in [
            (&b""[..], "empty"),
            (b" \n", "empty"),
            (b"{", "not JSON"),
            (b"\xff\xfe\x00garbage", "not JSON"),
            (b"[1]", "not an object"),
        ] {
            let err = HookInput::parse(bytes).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
            assert!(!err.contains('\n'));
        }
    }

    #[test]
    fn stops_reading_past_the_bound() {
        let endless = io::repeat(b' ');
        let err = HookInput::read_bounded(endless, 1000).unwrap_err();
        assert!(matches!(err, InputError::TooLarge(1000)));
        assert_eq!(
            err.to_string(),
            "hook input larger than 1,000 bytes: not a hook event, ignored"
        );
        let err = HookInput::read_bounded(&[b' '; 33][..], 32).unwrap_err();
        assert!(err.to_string().contains("larger than 32 bytes:"), "{err}");
        assert_eq!(
            InputError::TooLarge(MAX_HOOK_INPUT).to_string(),
            "hook input larger than 4,194,304 bytes (4 MiB): not a hook event, ignored"
        );
        let exact = HookInput::read_bounded(&b"{\"a\":1}"[..], 7).unwrap();
        assert_eq!(exact.raw["a"], 1);
        assert!(HookInput::read_bounded(&b"{\"a\":1}"[..], 6).is_err());
    }

    #[test]
    fn hostile_session_id_is_refused() {
        let input = HookInput::parse(br#"{"session_id":"../../etc"}"#).unwrap();
        assert!(input.session_id().unwrap().is_err());
        let input = HookInput::parse(br#"{"session_id":42}"#).unwrap();
        assert!(input.session_id().is_none());
    }
}
