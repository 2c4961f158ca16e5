//! What jkz's event log ([`crate::events`]) hears of the patterns: each
//! injection, signal, pin, unpin, reject, approval, revocation and prune a
//! command makes, once it is committed. (A build or a rebuild replays the
//! feedback log and logs nothing: it changes no fact.)
//!
//! | `type` | `payload` |
//! |---|---|
//! | `pattern.injected` | `patterns` (ids, best first), `role`, `record` |
//! | `pattern.feedback` | `pattern`, `verdict` (`helpful`, `harmful`), `source` (`person`, `verdict`, `pass`, `fail`), `record` |
//! | `pattern.pinned`, `pattern.unpinned`, `pattern.rejected`, `pattern.revoked`, `pattern.pruned` | `pattern` |
//! | `pattern.approved` | `pattern`, `text` (the text approved) |

use std::path::Path;

use serde_json::json;

use super::log::Event;

/// Logs `events` in the event log of the state directory `state`.
pub fn emit(state: &Path, events: &[Event]) {
    for e in events {
        let (kind, issue, payload) = match e {
            Event::Inject {
                record,
                issue,
                role,
                patterns,
                ..
            } => (
                "pattern.injected",
                Some(issue.to_string()),
                json!({
                    "patterns": patterns.iter().map(|p| &p.id).collect::<Vec<_>>(),
                    "role": role,
                    "record": record,
                }),
            ),
            Event::Feedback {
                pattern,
                verdict,
                source,
                record,
                ..
            } => (
                "pattern.feedback",
                None,
                json!({
                    "pattern": pattern.id,
                    "verdict": verdict.name(),
                    "source": source,
                    "record": record,
                }),
            ),
            Event::Pin { pattern, .. } => ("pattern.pinned", None, json!({"pattern": pattern.id})),
            Event::Unpin { pattern, .. } => {
                ("pattern.unpinned", None, json!({"pattern": pattern.id}))
            }
            Event::Reject { pattern, .. } => {
                ("pattern.rejected", None, json!({"pattern": pattern.id}))
            }
            Event::Approve { pattern, text, .. } => (
                "pattern.approved",
                None,
                json!({"pattern": pattern.id, "text": text}),
            ),
            Event::Revoke { pattern, .. } => {
                ("pattern.revoked", None, json!({"pattern": pattern.id}))
            }
            Event::Prune { pattern, .. } => {
                ("pattern.pruned", None, json!({"pattern": pattern.id}))
            }
            Event::Resolve { .. } => continue,
        };
        crate::events::emit_at(
            state,
            crate::events::Event::new(kind)
                .issue(issue)
                .payload(payload),
        );
    }
}
