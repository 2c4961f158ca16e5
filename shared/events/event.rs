//! One event: what one line of the log holds.
//!
//! The line is a JSON object whose first member is `id`, then `type`,
//! `timestamp`, `issue` (when there is one), `session` (when known) and
//! `payload`. Writers produce exactly that order (readers rely on a line
//! starting with `{"id":"` to find an event glued behind a torn one, see
//! [`super::scan`]); readers accept any order and keep unknown members (the
//! index stores the line as read).

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::session_id::{SessionId, SESSION_ENV};

/// The largest line a writer appends: a payload that would make the line
/// longer is replaced by a note of its size. Readers skip longer lines.
pub const MAX_LINE: usize = 64 * 1024;

/// How an event starts on its line, as writers write it.
pub const LINE_START: &[u8] = b"{\"id\":\"";

/// One event of the log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Sortable and unique: see [`super::id`].
    pub id: String,
    /// Dotted: `phase.changed`, `agent.finished`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// RFC 3339, UTC, microseconds: when the writer wrote it (or, for a
    /// reconciled change, when jkz saw it).
    pub timestamp: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "issue_text"
    )]
    pub issue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default)]
    pub payload: Value,
}

/// What the index needs of an event: everything but the payload, which is
/// checked to be JSON but not kept (reading a million events, most of the
/// time would go to building payloads nobody asked for).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct EventHead {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub timestamp: String,
    #[serde(default, deserialize_with = "issue_text")]
    pub issue: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
}

impl EventHead {
    /// Parses one line (without its newline) as [`Event::parse`] does.
    pub fn parse(line: &[u8]) -> Option<EventHead> {
        let head: EventHead = serde_json::from_slice(line).ok()?;
        (!head.id.is_empty() && !head.kind.is_empty()).then_some(head)
    }
}

/// An issue written as a number (by hand) or as a string (by jkz).
fn issue_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    })
}

impl Event {
    /// A new event of type `kind`, now ([`crate::clock::log_now`]), in this
    /// process's session (the first of [`SESSION_ENV`] that holds a valid
    /// id).
    pub fn new(kind: &str) -> Event {
        Event::at(kind, crate::clock::log_now())
    }

    /// A new event of type `kind` as of `now` (ids stay unique and sorted
    /// even when `now` goes backwards: see [`super::id::next`]).
    pub fn at(kind: &str, now: DateTime<Utc>) -> Event {
        let (id, at) = super::id::next(now);
        Event {
            id,
            kind: kind.to_string(),
            timestamp: at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            issue: None,
            session: env_session(),
            payload: Value::Object(Default::default()),
        }
    }

    pub fn issue(mut self, issue: impl Into<Option<String>>) -> Event {
        self.issue = issue.into().filter(|i| !i.is_empty());
        self
    }

    pub fn session(mut self, session: Option<&str>) -> Event {
        if let Some(s) = session.and_then(|s| SessionId::parse(s).ok()) {
            self.session = Some(s.as_str().to_string());
        }
        self
    }

    pub fn payload(mut self, payload: Value) -> Event {
        self.payload = payload;
        self
    }

    /// The line to append, newline included, at most [`MAX_LINE`] bytes.
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).expect("an event serializes");
        if line.len() >= MAX_LINE {
            let small = Event {
                payload: serde_json::json!({"omitted": true, "bytes": line.len()}),
                ..self.clone()
            };
            line = serde_json::to_vec(&small).expect("an event serializes");
            line.truncate(MAX_LINE - 1); // only a hostile id or type gets here
        }
        line.push(b'\n');
        line
    }

    /// Parses one line (without its newline): an object with a non-empty
    /// `id` and `type`, else `None`.
    pub fn parse(line: &[u8]) -> Option<Event> {
        let event: Event = serde_json::from_slice(line).ok()?;
        (!event.id.is_empty() && !event.kind.is_empty()).then_some(event)
    }

    /// The UTC day the event belongs to (its segment's day); today when its
    /// timestamp does not parse.
    pub fn day(&self) -> NaiveDate {
        self.time().unwrap_or_else(Utc::now).date_naive()
    }

    /// The event's time, from its timestamp.
    pub fn time(&self) -> Option<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(&self.timestamp)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    /// The payload's member `key`, when the payload is an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.payload.get(key)
    }
}

/// The chat a command acts for once it has been told ([`act_as`]).
static ACTING: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// From now on, this process's events are `chat`'s: a command that acts
/// for a chat (`--session ID`, checked) logs as that chat, whatever the
/// environment says. The first call wins.
pub fn act_as(chat: &SessionId) {
    let _ = ACTING.set(chat.as_str().to_string());
}

/// The session this process runs in: the chat it acts for ([`act_as`]),
/// else the environment's, when valid.
fn env_session() -> Option<String> {
    if let Some(chat) = ACTING.get() {
        return Some(chat.clone());
    }
    SESSION_ENV
        .into_iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.is_empty())
        .and_then(|v| SessionId::parse(&v).ok())
        .map(|s| s.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_line_starts_with_its_id_and_round_trips() {
        let e = Event::new("phase.changed")
            .issue(Some("42".to_string()))
            .payload(json!({"from": "plan", "to": "build"}));
        let line = e.to_line();
        assert!(line.starts_with(LINE_START));
        assert_eq!(*line.last().unwrap(), b'\n');
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let back = Event::parse(&line[..line.len() - 1]).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn a_huge_payload_is_replaced_by_its_size() {
        let e = Event::new("x.y").payload(json!({"big": "a".repeat(MAX_LINE * 2)}));
        let line = e.to_line();
        assert!(line.len() <= MAX_LINE);
        let back = Event::parse(&line[..line.len() - 1]).unwrap();
        assert_eq!(back.payload["omitted"], true);
    }

    #[test]
    fn hand_written_lines_are_read_leniently() {
        let e =
            Event::parse(br#"{"type":"a.b","id":"1","timestamp":"t","issue":7,"x":1}"#).unwrap();
        assert_eq!(e.issue.as_deref(), Some("7"));
        assert_eq!(e.payload, Value::Null);
        assert!(Event::parse(br#"{"id":"","type":"a"}"#).is_none());
        assert!(Event::parse(br#"[1]"#).is_none());
        assert!(Event::parse(b"garbage").is_none());
    }
}
