//! The `verdict` and `jg` sources: findings listed in JSON by the pipeline's
//! own agents.
//!
//! - `verdict`: the last `verdict-json` block of the input (any of the
//!   protected-block forms: a fence, a `<!-- jkz:verdict-json … -->`
//!   comment; or the input is the block's JSON object itself) with a
//!   `findings`, `blockers` or `concerns` array. An empty array is a
//!   reviewer that found nothing: it resolves what that reviewer found
//!   before.
//! - `jg`: a `review-result.json` object (`blockers`, `concerns`, `nits`)
//!   or a `test-result.json` object (`failures`).
//!
//! Each item is an object `{file, line, message, severity}` (also `path`
//! for `file`; `description`, `title`, `text`, `body` or, for a test,
//! `error` for `message`; `test` or `name` names a failing test; optional
//! `suggestion`), or a string `path:line: message` (also `path: message`).
//! An item's own severity wins; else the array's: blockers critical,
//! concerns major, nits nit, failures critical, findings unrated.
//! A finding must name its file: an item without one refuses the input.

use serde_json::{Map, Value};

use super::finding::{bounded, Reported, Severity, MAX_MESSAGE, MAX_TEXT};
use super::identity::normalize_path;
use super::parsed::{json_error, line_of, Parsed};
use crate::json_type::json_type;

/// The arrays of a verdict, with the severity their items default to.
const VERDICT_ARRAYS: [(&str, Option<Severity>); 3] = [
    ("findings", None),
    ("blockers", Some(Severity::Critical)),
    ("concerns", Some(Severity::Major)),
];

/// The arrays of a jg review result.
const REVIEW_ARRAYS: [(&str, Option<Severity>); 3] = [
    ("blockers", Some(Severity::Critical)),
    ("concerns", Some(Severity::Major)),
    ("nits", Some(Severity::Nit)),
];

/// Whether an object carries any array a verdict's findings are read from.
pub fn has_findings(object: &Map<String, Value>) -> bool {
    VERDICT_ARRAYS.iter().any(|(k, _)| object.contains_key(*k))
}

/// The `verdict` source.
pub fn parse_verdict(bytes: &[u8]) -> Result<Parsed, String> {
    let object = match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(format!(
                "expected a verdict-json object, or a text holding a verdict-json block; got {}",
                json_type(&other)
            ))
        }
        Err(e) => {
            let trimmed = bytes.trim_ascii_start();
            if trimmed.starts_with(b"{") || trimmed.starts_with(b"[") {
                return Err(json_error(&e));
            }
            crate::deliberation::verdict::last_object(bytes, has_findings).ok_or_else(|| {
                "no verdict-json block with a findings, blockers or concerns array in the input"
                    .to_string()
            })?
        }
    };
    verdict_findings(&object)
}

/// The findings of a verdict's JSON object.
pub fn verdict_findings(object: &Map<String, Value>) -> Result<Parsed, String> {
    if !has_findings(object) {
        return Err(
            "the verdict-json object has no findings, blockers or concerns array".to_string(),
        );
    }
    let mut parsed = Parsed::default();
    read_arrays(object, &VERDICT_ARRAYS, &mut parsed.findings)?;
    Ok(parsed)
}

/// The `jg` source.
pub fn parse_jg(bytes: &[u8]) -> Result<Parsed, String> {
    let object = match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(format!(
                "expected a review-result.json or test-result.json object, got {}",
                json_type(&other)
            ))
        }
        Err(e) => return Err(json_error(&e)),
    };
    let review = REVIEW_ARRAYS.iter().any(|(k, _)| object.contains_key(*k));
    let test = object.contains_key("failures");
    if !review && !test {
        return Err("expected review-result.json (blockers, concerns, nits arrays) or test-result.json (a failures array); found none of them".into());
    }
    let mut parsed = Parsed {
        default_role: Some(if review { "review" } else { "test" }),
        ..Parsed::default()
    };
    read_arrays(&object, &REVIEW_ARRAYS, &mut parsed.findings)?;
    read_arrays(
        &object,
        &[("failures", Some(Severity::Critical))],
        &mut parsed.findings,
    )?;
    Ok(parsed)
}

fn read_arrays(
    object: &Map<String, Value>,
    arrays: &[(&str, Option<Severity>)],
    out: &mut Vec<Reported>,
) -> Result<(), String> {
    for (key, default) in arrays {
        let Some(value) = object.get(*key) else {
            continue;
        };
        let Value::Array(items) = value else {
            return Err(format!(
                "`{key}` is {}, expected an array of findings",
                json_type(value)
            ));
        };
        for (i, item) in items.iter().enumerate() {
            let at = format!("{key}[{i}]");
            out.push(item_finding(item, &at, *default, *key == "failures")?);
        }
    }
    Ok(())
}

/// The first string among `keys` in `object`.
fn text_field<'a>(object: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| object.get(*k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn item_finding(
    item: &Value,
    at: &str,
    default: Option<Severity>,
    failure: bool,
) -> Result<Reported, String> {
    match item {
        Value::String(s) => string_finding(s, at, default),
        Value::Object(o) => object_finding(o, at, default, failure),
        other => Err(format!(
            "{at} is {}, expected an object {{file, line, message, severity}} or a string \"path:line: message\"",
            json_type(other)
        )),
    }
}

fn object_finding(
    o: &Map<String, Value>,
    at: &str,
    default: Option<Severity>,
    failure: bool,
) -> Result<Reported, String> {
    let file = text_field(o, &["file", "path", "filename", "location"]);
    let test = failure.then(|| text_field(o, &["test", "name"])).flatten();
    let raw_message = text_field(
        o,
        &[
            "message",
            "description",
            "title",
            "text",
            "body",
            "error",
            "reason",
        ],
    );
    // A failing test is known by its name (its error text changes from run
    // to run); the error is its detail.
    let (message, detail) = match (test, raw_message) {
        (Some(t), m) => (format!("{t} failed"), m.map(str::to_string)),
        (None, Some(m)) => (m.to_string(), None),
        (None, None) => {
            return Err(format!(
                "{at} has no message (nor description, title or text)"
            ))
        }
    };
    // A file may come with its line (`src/a.rs:42`), or from a test id
    // (`tests/test_x.py::test_y`).
    let (file, line_in_file) = match file.or_else(|| test.filter(|t| t.contains("::"))) {
        Some(f) => split_location(f),
        None => (None, None),
    };
    let file = file.and_then(|f| normalize_path(&f)).ok_or_else(|| {
        format!("{at} has no file (or path): every finding names the file it is about")
    })?;
    let severity = text_field(o, &["severity", "level", "priority"])
        .and_then(Severity::parse)
        .or(default);
    Ok(Reported {
        file,
        line: line_of(o.get("line"))
            .or_else(|| line_of(o.get("start_line")))
            .or(line_in_file),
        message: bounded(&message, MAX_MESSAGE),
        detail: detail.map(|d| bounded(&d, MAX_TEXT)),
        severity,
        suggestion: text_field(o, &["suggestion", "fix"]).map(|s| bounded(s, MAX_TEXT)),
        ..Reported::default()
    })
}

/// `src/a.rs:42` → (`src/a.rs`, 42); `tests/t.py::test_x` → (`tests/t.py`, none).
fn split_location(s: &str) -> (Option<String>, Option<u32>) {
    let s = s.trim().trim_matches('`');
    let path = s.split("::").next().unwrap_or(s);
    match path.split_once(':') {
        Some((p, rest)) => (Some(p.to_string()), line_of(Some(&Value::from(rest)))),
        None => (Some(path.to_string()), None),
    }
}

/// A string item: `path:line: message`, `path:line - message`,
/// `path: message`, `` `path:line` message ``; the path must hold a `/` or
/// a `.` to count as one.
fn string_finding(s: &str, at: &str, default: Option<Severity>) -> Result<Reported, String> {
    let refuse = || {
        format!(
            "{at} is a string without a file ({:?}): write it as \"path:line: message\" or as an object {{file, line, message, severity}}",
            bounded(s.trim(), 80)
        )
    };
    let s = s.trim();
    let (location, rest) = match s.strip_prefix('`') {
        Some(quoted) => quoted.split_once('`').ok_or_else(refuse)?,
        None => {
            let end = s
                .find(|c: char| c.is_whitespace() || c == ',')
                .unwrap_or(s.len());
            s.split_at(end)
        }
    };
    // `path:42:` / `path:` / `path::test` — the location's own trailing
    // separators belong to it.
    let location = location.trim_end_matches([':', '-']);
    let (file, line) = split_location(location);
    let file = file
        .filter(|f| f.contains('/') || f.contains('.'))
        .and_then(|f| normalize_path(&f))
        .ok_or_else(refuse)?;
    let mut message = rest.trim_start_matches(|c: char| {
        c.is_whitespace() || matches!(c, ':' | '-' | '–' | '—' | ',')
    });
    if let Some(after) = location.split_once("::").map(|(_, t)| t) {
        // A test id: the test is the message's subject.
        message = if message.is_empty() { after } else { message };
    }
    if message.trim().is_empty() {
        return Err(format!("{at} names a file but has no message"));
    }
    Ok(Reported {
        file,
        line,
        message: bounded(message.trim(), MAX_MESSAGE),
        severity: default,
        ..Reported::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_carry_their_location() {
        let f = string_finding("src/a.rs:42: unwrap on None", "x", None).unwrap();
        assert_eq!((f.file.as_str(), f.line), ("src/a.rs", Some(42)));
        assert_eq!(f.message, "unwrap on None");
        let f = string_finding("`src/a.rs:42:7` — unwrap", "x", None).unwrap();
        assert_eq!(
            (f.file.as_str(), f.line, f.message.as_str()),
            ("src/a.rs", Some(42), "unwrap")
        );
        let f = string_finding("README.md: typo in heading", "x", None).unwrap();
        assert_eq!((f.file.as_str(), f.line), ("README.md", None));
        let e = string_finding("Consider adding docs", "concerns[0]", None).unwrap_err();
        assert!(e.contains("concerns[0] is a string without a file"), "{e}");
    }

    #[test]
    fn objects_need_a_file_and_a_message() {
        let o = |v: Value| v.as_object().unwrap().clone();
        let f = object_finding(
            &o(serde_json::json!({"path": "./a.rs", "line": "12-14", "description": "x", "severity": "HIGH"})),
            "f[0]",
            None,
            false,
        )
        .unwrap();
        assert_eq!(
            (f.file.as_str(), f.line, f.severity),
            ("a.rs", Some(12), Some(Severity::Major))
        );
        let e = object_finding(
            &o(serde_json::json!({"message": "x"})),
            "blockers[1]",
            None,
            false,
        )
        .unwrap_err();
        assert!(e.starts_with("blockers[1] has no file"), "{e}");
        let f = object_finding(
            &o(serde_json::json!({"test": "tests/t.py::test_total", "error": "expected 10, got 9"})),
            "failures[0]",
            Some(Severity::Critical),
            true,
        )
        .unwrap();
        assert_eq!(f.file, "tests/t.py");
        assert_eq!(f.message, "tests/t.py::test_total failed");
        assert_eq!(f.detail.as_deref(), Some("expected 10, got 9"));
    }
}
