//! What one issue's events say about it: its phases over time, where it
//! ended, its iteration counts, its agent runs and claims. A pure function
//! of the events (in id order, which is time order), so metrics computed
//! from a rebuilt log are the same.

use serde_json::Value;

use crate::events::Event;

/// Phases that end an issue well.
pub const COMPLETED_PHASES: [&str; 2] = ["done", "merged"];
/// Phases that end an issue badly.
pub const FAILED_PHASES: [&str; 2] = ["failed", "abandoned"];

/// How an issue ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Completed,
    Failed,
}

impl Outcome {
    pub fn of_phase(phase: &str) -> Option<Outcome> {
        let phase = phase.trim().to_ascii_lowercase();
        if COMPLETED_PHASES.contains(&phase.as_str()) {
            Some(Outcome::Completed)
        } else if FAILED_PHASES.contains(&phase.as_str()) {
            Some(Outcome::Failed)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
        }
    }
}

/// One stay of an issue in a phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseVisit {
    pub phase: String,
    pub entered_ms: i64,
    /// When it left the phase; `None` while it is still there.
    pub left_ms: Option<i64>,
}

/// One agent invocation (`agent.finished`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentRun {
    pub role: String,
    pub status: String,
    pub at_ms: i64,
    pub duration_ms: Option<i64>,
    pub tokens_in: Option<i64>,
    pub tokens_out: Option<i64>,
}

/// A chat's claim on the issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimSpan {
    pub session: String,
    pub from_ms: i64,
    pub to_ms: Option<i64>,
}

/// Everything the metrics know of one issue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IssueFacts {
    pub issue: String,
    pub first_ms: i64,
    pub last_ms: i64,
    pub phase: Option<String>,
    /// Where it ended and when, while its current phase is an end.
    pub outcome: Option<(Outcome, i64)>,
    pub review_fix_count: Option<u64>,
    pub qa_fix_count: Option<u64>,
    pub plan_iterations: Option<u64>,
    pub visits: Vec<PhaseVisit>,
    pub runs: Vec<AgentRun>,
    pub claims: Vec<ClaimSpan>,
}

impl IssueFacts {
    /// Fix iterations: `review_fix_count` + `qa_fix_count` (either may be
    /// missing; both missing is none).
    pub fn fix_iterations(&self) -> Option<u64> {
        match (self.review_fix_count, self.qa_fix_count) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        }
    }
}

/// The time of an event in ms since the epoch: its timestamp, else its id's.
pub fn event_ms(event: &Event) -> Option<i64> {
    event
        .time()
        .or_else(|| crate::events::id::time_of(&event.id))
        .map(|t| t.timestamp_millis())
}

/// Derives an issue's facts from its events, in id order.
pub fn derive(issue: &str, events: &[Event]) -> IssueFacts {
    let mut facts = IssueFacts {
        issue: issue.to_string(),
        ..IssueFacts::default()
    };
    let mut first = true;
    for event in events {
        let Some(at) = event_ms(event) else {
            continue;
        };
        if first {
            facts.first_ms = at;
            first = false;
        }
        // A clock set back never makes time run backwards here.
        let at = at.max(facts.last_ms);
        facts.last_ms = at;
        match event.kind.as_str() {
            "phase.changed" => {
                let to = match event.get("to") {
                    Some(Value::String(s)) if !s.is_empty() => s.clone(),
                    _ => continue,
                };
                if facts.phase.as_deref() == Some(to.as_str()) {
                    continue;
                }
                if let Some(open) = facts.visits.last_mut().filter(|v| v.left_ms.is_none()) {
                    open.left_ms = Some(at);
                }
                facts.outcome = Outcome::of_phase(&to).map(|o| (o, at));
                facts.visits.push(PhaseVisit {
                    phase: to.clone(),
                    entered_ms: at,
                    left_ms: None,
                });
                facts.phase = Some(to);
            }
            "state.changed" => {
                let count = event
                    .get("to")
                    .and_then(|v| crate::pipeline::coerce_count(v.into()));
                match event.get("field").and_then(Value::as_str) {
                    Some("review_fix_count") => facts.review_fix_count = count,
                    Some("qa_fix_count") => facts.qa_fix_count = count,
                    Some("plan_iterations") => facts.plan_iterations = count,
                    _ => {}
                }
            }
            "agent.finished" => facts.runs.push(agent_run(event, at)),
            "claim.taken" => {
                let Some(session) = event.session.clone() else {
                    continue;
                };
                close_claims(&mut facts.claims, at);
                facts.claims.push(ClaimSpan {
                    session,
                    from_ms: at,
                    to_ms: None,
                });
            }
            "claim.released" => close_claims(&mut facts.claims, at),
            _ => {}
        }
    }
    facts
}

fn close_claims(claims: &mut [ClaimSpan], at: i64) {
    for c in claims.iter_mut().filter(|c| c.to_ms.is_none()) {
        c.to_ms = Some(at);
    }
}

/// The agent run an `agent.finished` event records.
pub fn agent_run(event: &Event, at: i64) -> AgentRun {
    let text = |k: &str| {
        event
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_string()
    };
    let tokens = |names: [&str; 2]| {
        let t = event.get("tokens")?;
        names.iter().find_map(|n| t.get(*n).and_then(Value::as_i64))
    };
    AgentRun {
        role: text("role"),
        status: text("status"),
        at_ms: at,
        duration_ms: event.get("duration_ms").and_then(Value::as_i64),
        tokens_in: tokens(["input_tokens", "input"]),
        tokens_out: tokens(["output_tokens", "output"]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(kind: &str, secs: i64, payload: Value) -> Event {
        let t = chrono::DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap();
        Event {
            id: format!("{secs:013x}"),
            kind: kind.into(),
            timestamp: t.to_rfc3339(),
            issue: Some("7".into()),
            session: Some("s1".into()),
            payload,
        }
    }

    #[test]
    fn phases_outcome_counts_and_runs() {
        let base = 1_700_000_000_000;
        let events = [
            ev("phase.changed", 0, json!({"from": null, "to": "plan"})),
            ev("claim.taken", 1, json!({})),
            ev(
                "state.changed",
                5,
                json!({"field": "plan_iterations", "to": "2"}),
            ),
            ev(
                "phase.changed",
                10,
                json!({"from": "plan", "to": "building"}),
            ),
            ev(
                "agent.finished",
                20,
                json!({"role": "builder", "status": "ok", "duration_ms": 900, "tokens": {"input_tokens": 5, "output_tokens": 7}}),
            ),
            ev(
                "state.changed",
                25,
                json!({"field": "review_fix_count", "to": "1"}),
            ),
            ev(
                "state.changed",
                26,
                json!({"field": "qa_fix_count", "to": 2}),
            ),
            // The clock went back: time stays.
            ev(
                "phase.changed",
                8,
                json!({"from": "building", "to": "done"}),
            ),
            ev("claim.released", 40, json!({})),
        ];
        let f = derive("7", &events);
        assert_eq!(f.phase.as_deref(), Some("done"));
        assert_eq!(f.outcome, Some((Outcome::Completed, base + 26_000)));
        assert_eq!(f.fix_iterations(), Some(3));
        assert_eq!(f.plan_iterations, Some(2));
        assert_eq!(
            f.visits,
            [
                PhaseVisit {
                    phase: "plan".into(),
                    entered_ms: base,
                    left_ms: Some(base + 10_000)
                },
                PhaseVisit {
                    phase: "building".into(),
                    entered_ms: base + 10_000,
                    left_ms: Some(base + 26_000)
                },
                PhaseVisit {
                    phase: "done".into(),
                    entered_ms: base + 26_000,
                    left_ms: None
                },
            ]
        );
        assert_eq!(f.runs[0].tokens_in, Some(5));
        assert_eq!(f.runs[0].duration_ms, Some(900));
        assert_eq!(
            f.claims,
            [ClaimSpan {
                session: "s1".into(),
                from_ms: base + 1000,
                to_ms: Some(base + 40_000)
            }]
        );
        // Reopened: no longer an outcome.
        let mut more = events.to_vec();
        more.push(ev(
            "phase.changed",
            50,
            json!({"from": "done", "to": "building"}),
        ));
        assert_eq!(derive("7", &more).outcome, None);
    }
}
