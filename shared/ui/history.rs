//! The observer's pictures of history, from the event log: each issue's
//! timeline (its phases as a band over time, its agent runs, the
//! compactions of the chats that held it, its claims) and the metrics
//! (phase durations, completion rate over time), plus the Prometheus
//! exposition served at `/metrics`.
//!
//! Each read brings the log up to date first ([`crate::events::up_to_date`]:
//! closed segments compressed, the index caught up, direct writes to
//! pipeline files reconciled), so what the page shows is what `jkz events`
//! and `jkz metrics` would print.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::events::describe::describe;
use crate::events::index::Filter;
use crate::events::Event;
use crate::metrics::derive::{self, event_ms};
use crate::pipeline::IssueNumber;
use crate::state_dir::StateDir;

/// The most events of one issue listed under its timeline (the newest).
const LISTED_EVENTS: usize = 200;

/// Issue `issue`'s timeline as JSON (times in ms since the epoch).
pub fn timeline(
    state: &StateDir,
    issue: &IssueNumber,
    now: DateTime<Utc>,
) -> Result<Value, String> {
    let Some(index) =
        crate::events::up_to_date_for(state, Some(issue.as_str())).map_err(|e| e.to_string())?
    else {
        return Ok(
            json!({"issue": issue.as_str(), "now_ms": now.timestamp_millis(), "events": []}),
        );
    };
    let mut events = Vec::new();
    let filter = Filter {
        issue: Some(issue.as_str().to_string()),
        ..Filter::default()
    };
    index
        .query(&filter, &mut |row| {
            events.extend(row.event());
            true
        })
        .map_err(|e| e.to_string())?;
    let facts = derive::derive(issue.as_str(), &events);
    // The compactions of the chats while they held this issue.
    let mut compactions = Vec::new();
    if !facts.claims.is_empty() {
        let filter = Filter {
            kind: Some("session.compacted".into()),
            ..Filter::default()
        };
        index
            .query(&filter, &mut |row| {
                if let Some(e) = row.event() {
                    let at = event_ms(&e).unwrap_or(0);
                    let held = facts.claims.iter().any(|c| {
                        Some(&c.session) == e.session.as_ref()
                            && at >= c.from_ms
                            && c.to_ms.is_none_or(|to| at <= to)
                    });
                    if held {
                        compactions.push(
                            json!({"at_ms": at, "session": e.session, "trigger": e.get("trigger")}),
                        );
                    }
                }
                true
            })
            .map_err(|e| e.to_string())?;
    }
    let listed: Vec<Value> = events
        .iter()
        .rev()
        .take(LISTED_EVENTS)
        .map(|e: &Event| {
            json!({
                "id": e.id, "type": e.kind, "timestamp": e.timestamp,
                "session": e.session, "details": describe(e),
            })
        })
        .collect();
    Ok(json!({
        "issue": issue.as_str(),
        "now_ms": now.timestamp_millis(),
        "start_ms": events.first().and_then(event_ms),
        "phases": facts.visits.iter().map(|v| json!({"phase": v.phase, "from_ms": v.entered_ms, "to_ms": v.left_ms})).collect::<Vec<_>>(),
        "runs": facts.runs.iter().map(|r| json!({"role": r.role, "status": r.status, "at_ms": r.at_ms, "duration_ms": r.duration_ms})).collect::<Vec<_>>(),
        "compactions": compactions,
        "claims": facts.claims.iter().map(|c| json!({"session": c.session, "from_ms": c.from_ms, "to_ms": c.to_ms})).collect::<Vec<_>>(),
        "outcome": facts.outcome.map(|(o, at)| json!({"outcome": o.name(), "at_ms": at})),
        "events": listed,
    }))
}

/// The metrics over `since` (any form of [`crate::time_span::parse_point`]).
pub fn metrics(
    state: &StateDir,
    since: &str,
    now: DateTime<Utc>,
) -> Result<crate::metrics::Report, (u16, String)> {
    let since =
        crate::time_span::parse_point(since, now).map_err(|e| (400, format!("since: {e}")))?;
    let db = crate::metrics::up_to_date(state)
        .map_err(|e| (500, e.to_string()))?
        .ok_or_else(|| (404, state.missing()))?;
    db.report(since, now, None)
        .map_err(|e| (500, e.to_string()))
}
