//! One short line saying what an event's payload holds, for `jkz events`'
//! table: `plan → build`, `review_fix_count: 1 → 2`, `judge ok 12.4s`.

use serde_json::Value;

use super::Event;

/// The event's details, one line.
pub fn describe(event: &Event) -> String {
    let p = &event.payload;
    let text = |key: &str| p.get(key).map(shown).unwrap_or_else(|| "-".into());
    let direct = match p.get("direct") {
        Some(Value::Bool(true)) => " (written directly)",
        _ => "",
    };
    let line = match event.kind.as_str() {
        "phase.changed" => format!("{} → {}{direct}", text("from"), text("to")),
        "state.changed" => format!(
            "{}: {} → {}{direct}",
            text("field"),
            text("from"),
            text("to")
        ),
        "agent.finished" => {
            let took = p
                .get("duration_ms")
                .and_then(Value::as_u64)
                .map(|ms| {
                    format!(
                        " {}",
                        crate::time_span::format_span(std::time::Duration::from_millis(ms))
                    )
                })
                .unwrap_or_default();
            format!(
                "{} {}{took} ({})",
                text("role"),
                text("status"),
                text("record")
            )
        }
        "verdict.recorded" => format!("{} {} ({})", text("role"), text("verdict"), text("record")),
        super::GUARD_DENIED | super::GUARD_ASKED => {
            let owner = match p.get("owner") {
                Some(Value::String(o)) => format!(", claimed by {o}"),
                _ => String::new(),
            };
            format!(
                "{} ({} {}): {}{owner}",
                text("chat"),
                text("client"),
                text("tool"),
                text("target")
            )
        }
        _ => match p {
            Value::Object(map) => map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| format!("{k}={}", shown(v)))
                .collect::<Vec<_>>()
                .join(" "),
            Value::Null => String::new(),
            other => shown(other),
        },
    };
    let line = line.replace(['\n', '\r', '\t'], " ");
    crate::pipeline::shorten(&line, 160)
}

/// A value bare when it is a string, else as compact JSON.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines() {
        let e = |kind: &str, p: Value| Event::new(kind).payload(p);
        assert_eq!(
            describe(&e("phase.changed", json!({"from": null, "to": "plan"}))),
            "- → plan"
        );
        assert_eq!(
            describe(&e(
                "state.changed",
                json!({"field": "qa_fix_count", "from": "1", "to": "2", "direct": true})
            )),
            "qa_fix_count: 1 → 2 (written directly)"
        );
        assert_eq!(
            describe(&e(
                "agent.finished",
                json!({"role": "judge", "status": "ok", "duration_ms": 1500, "record": "r1"})
            )),
            "judge ok 1.5s (r1)"
        );
        assert_eq!(
            describe(&e(
                "lock.acquired",
                json!({"kind": "pipeline", "name": "4", "x": null})
            )),
            "kind=pipeline name=4"
        );
        assert_eq!(describe(&e("odd", json!("a\nb"))), "a b");
        assert_eq!(
            describe(&e(
                "guard.denied",
                json!({"chat": "b", "client": "claude", "tool": "Bash",
                       "target": "issue 42's pipeline state", "owner": "a"})
            )),
            "b (claude Bash): issue 42's pipeline state, claimed by a"
        );
        assert_eq!(
            describe(&e(
                "guard.denied",
                json!({"chat": "b", "client": "codex", "tool": "Bash",
                       "target": "/p/state", "owner": null})
            )),
            "b (codex Bash): /p/state"
        );
    }
}
