//! Checking a pipeline file against the contract: one problem per field
//! the view cannot read, named as `file: field: expected …, found …`.
//!
//! `pr_number` is the exception the contract makes: an unparsable one reads
//! as null and the file stays valid, so it is a warning ([`check`]), never a
//! problem; `jkz state set` never refuses a write because of it.

use std::fmt;

use serde_json::Value;

use super::normalized::{coerce_count, coerce_flag, coerce_pr_number, coerce_text};
use super::{IssueNumber, PipelineDoc, COUNT_FIELDS, FLAG_FIELDS, SIBLINGS, STRING_FIELDS};
use crate::json_type::json_type;

/// One contract violation, shown as `file: field: expected …, found …`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub field: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.field, self.message)
        }
    }
}

/// Checks a file's bytes against the contract. `file` names it in messages.
pub fn validate(file: &str, issue: &IssueNumber, bytes: &[u8]) -> Vec<Problem> {
    check(file, issue, bytes).problems
}

/// What [`check`] found: contract violations, and values that are valid but
/// read as null (a `pr_number` that is not one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    pub problems: Vec<Problem>,
    pub warnings: Vec<Problem>,
}

/// [`validate`], also giving the warnings.
pub fn check(file: &str, issue: &IssueNumber, bytes: &[u8]) -> Checked {
    match PipelineDoc::parse(issue.clone(), bytes) {
        Ok(doc) => Checked {
            problems: validate_doc(file, &doc),
            warnings: warnings_doc(file, &doc),
        },
        Err(e) => Checked {
            problems: vec![Problem {
                file: file.into(),
                field: String::new(),
                message: e.0,
            }],
            warnings: Vec::new(),
        },
    }
}

/// The warnings of a parsed document: one per field of the issue's data
/// that is valid but reads as null ([`field_warning`]).
pub fn warnings_doc(file: &str, doc: &PipelineDoc) -> Vec<Problem> {
    let Some(Value::Object(data)) = doc.object.get(doc.issue.as_str()) else {
        return Vec::new();
    };
    data.iter()
        .filter_map(|(field, value)| {
            Some(Problem {
                file: file.into(),
                field: field.clone(),
                message: field_warning(field, value)?,
            })
        })
        .collect()
}

/// A valid value the view reads as null although it is set: a `pr_number`
/// that is not a PR number. Never a contract violation.
pub fn field_warning(field: &str, value: &Value) -> Option<String> {
    let unset = value.is_null() || value.as_str() == Some("");
    if field != "pr_number" || unset || coerce_pr_number(value.into()).is_some() {
        return None;
    }
    Some(format!(
        "{}; it reads as null (a PR number is digits, a leading # allowed, e.g. \"42\" or \"#42\")",
        found(value)
    ))
}

/// Checks a parsed document against the contract.
pub fn validate_doc(file: &str, doc: &PipelineDoc) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut report = |field: &str, message: String| {
        problems.push(Problem {
            file: file.into(),
            field: field.into(),
            message,
        })
    };
    let key = doc.issue.as_str();
    match doc.object.get(key) {
        None => report(
            key,
            format!("missing: expected the issue's data under the key \"{key}\""),
        ),
        Some(Value::Object(data)) => {
            for (field, value) in data {
                if let Some(message) = field_problem(field, value) {
                    report(field, message);
                }
            }
        }
        Some(other) => report(
            key,
            format!("expected an object, found {}", json_type(other)),
        ),
    }
    for (name, value) in &doc.object {
        let message = match name.as_str() {
            n if n == key => None,
            n if SIBLINGS.contains(&n) => sibling_problem(n, value),
            n if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => Some(format!(
                "unexpected issue key: this file holds issue {key} only"
            )),
            _ => None,
        };
        if let Some(message) = message {
            report(name, message);
        }
    }
    problems
}

/// What is wrong with one field of the issue's data, if anything.
///
/// One rule with the normalized view: a value is wrong exactly when the view
/// cannot read what it means (writers store scalars as strings, readers
/// coerce, so a count written as the integer `2` reads as 2 and is valid).
/// Null and the empty string mean "not set".
pub fn field_problem(field: &str, value: &Value) -> Option<String> {
    let unset = value.is_null() || value.as_str() == Some("");
    if unset {
        return None;
    }
    if COUNT_FIELDS.contains(&field) {
        return coerce_count(value.into())
            .is_none()
            .then(|| expected("a count as a string of digits, e.g. \"2\"", value));
    }
    if field == "pr_number" {
        // Unparsable reads as null: valid, a warning at most (field_warning).
        return None;
    }
    if FLAG_FIELDS.contains(&field) {
        return coerce_flag(value.into())
            .is_none()
            .then(|| expected("\"true\" or \"false\"", value));
    }
    if STRING_FIELDS.contains(&field) {
        return coerce_text(value.into())
            .is_none()
            .then(|| expected("a string (scalars are stored as strings)", value));
    }
    match field {
        "pending_decisions" => match value {
            Value::Array(items) if items.iter().all(Value::is_string) => None,
            _ => Some(expected("an array of strings", value)),
        },
        "sub_issues" => (!value.is_array()).then(|| expected("an array", value)),
        "steps" | "tokens" => (!value.is_object()).then(|| expected("an object", value)),
        _ => None,
    }
}

fn expected(what: &str, value: &Value) -> String {
    format!("expected {what}, {}", found(value))
}

/// `found "abc"`, `found an array`, `found 2.5`.
fn found(value: &Value) -> String {
    let shown = match value {
        Value::String(s) => format!("{:?}", shorten(s, 40)),
        Value::Array(_) | Value::Object(_) => json_type(value).to_string(),
        other => other.to_string(),
    };
    format!("found {shown}")
}

/// At most `max` characters of `s`, with `…` when cut.
pub fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}…", crate::cut::cut_str(s, cut, crate::cut::Keep::Head)),
    }
}

/// What is wrong with a sibling's value, if anything (the rule
/// [`validate_doc`] applies to them).
pub(super) fn sibling_problem(name: &str, value: &Value) -> Option<String> {
    match name {
        "lastActivity" => {
            (!matches!(value, Value::String(_) | Value::Null)).then(|| expected("a string", value))
        }
        "heartbeat_pid" => (coerce_count(value.into()).is_none() && !value.is_null())
            .then(|| expected("a process id (integer)", value)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::testing::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn validation_names_file_field_and_expectation() {
        let bytes = br#"{"42": {"current_phase": [3], "qa_passed": "maybe",
            "plan_iterations": "two", "pending_decisions": [1], "steps": [],
            "x-unknown": {"k": 1}}, "lastActivity": 5, "heartbeat_pid": "pid", "43": {}}"#;
        let shown: Vec<String> = validate("state/pipeline/42.json", &issue("42"), bytes)
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(
            shown,
            [
                "state/pipeline/42.json: current_phase: expected a string (scalars are stored as strings), found an array",
                "state/pipeline/42.json: qa_passed: expected \"true\" or \"false\", found \"maybe\"",
                "state/pipeline/42.json: plan_iterations: expected a count as a string of digits, e.g. \"2\", found \"two\"",
                "state/pipeline/42.json: pending_decisions: expected an array of strings, found an array",
                "state/pipeline/42.json: steps: expected an object, found an array",
                "state/pipeline/42.json: lastActivity: expected a string, found 5",
                "state/pipeline/42.json: heartbeat_pid: expected a process id (integer), found \"pid\"",
                "state/pipeline/42.json: 43: unexpected issue key: this file holds issue 42 only",
            ]
        );
        let p = validate("f", &issue("42"), b"{\"41\": {}}");
        assert_eq!(
            p[0].to_string(),
            "f: 42: missing: expected the issue's data under the key \"42\""
        );
        assert!(validate("f", &issue("42"), b"[]")[0]
            .to_string()
            .contains("expected a JSON object"));
        assert!(validate("f", &issue("42"), b"{").len() == 1);
        let good = br#"{"42": {"current_phase": "qa", "pr_number": "42", "review_passed": "true",
            "qa_passed": "", "sub_issues": [43], "steps": {}, "tokens": {}, "active_agent": null},
            "lastActivity": "t", "heartbeat_pid": 47281}"#;
        assert_eq!(validate("f", &issue("42"), good), []);
    }

    #[test]
    fn an_unparsable_pr_number_is_valid_and_warned_about() {
        for bad in [
            json!("abc"),
            json!("PR-42"),
            json!("null"),
            json!(4.5),
            json!([1]),
        ] {
            let bytes = json!({"9": {"pr_number": bad, "current_phase": "qa"}}).to_string();
            let checked = check("f", &issue("9"), bytes.as_bytes());
            assert_eq!(checked.problems, [], "{bad}");
            let shown: Vec<String> = checked.warnings.iter().map(|w| w.to_string()).collect();
            assert_eq!(shown.len(), 1, "{bad}");
            assert!(
                shown[0].starts_with("f: pr_number: found ") && shown[0].contains("reads as null"),
                "{shown:?}"
            );
        }
        for good in [json!("42"), json!("#42"), json!(42), json!(""), json!(null)] {
            let bytes = json!({"9": {"pr_number": good}}).to_string();
            assert_eq!(
                check("f", &issue("9"), bytes.as_bytes()),
                Checked::default(),
                "{good}"
            );
        }
    }

    proptest! {
        /// One rule for validate and the view: a field's value is a problem
        /// exactly when it is set and the view cannot read it.
        #[test]
        fn validate_flags_exactly_what_the_view_cannot_read(
            value in prop_oneof![scalar(), Just(json!([1])), Just(json!({"a": 1})), Just(json!(2.5))],
            field in prop_oneof![Just("plan_iterations"), Just("review_fix_count"),
                Just("qa_fix_count"), Just("pr_number"), Just("review_passed"),
                Just("qa_passed"), Just("active_agent"), Just("failure_context")],
        ) {
            let n = view(json!({ field: value.clone() }));
            let read = match field {
                "plan_iterations" => n.cycles.plan_iterations.is_some(),
                "review_fix_count" => n.cycles.review_fix_count.is_some(),
                "qa_fix_count" => n.cycles.qa_fix_count.is_some(),
                "pr_number" => n.pr_number.is_some(),
                "review_passed" => n.cycles.review_passed.is_some(),
                "qa_passed" => n.cycles.qa_passed.is_some(),
                "active_agent" => n.active_agent.is_some(),
                _ => n.failure_context.is_some(),
            };
            let unset = value.is_null() || value.as_str() == Some("");
            if field == "pr_number" {
                // Unparsable reads as null: never a problem, a warning.
                prop_assert!(field_problem(field, &value).is_none());
                prop_assert_eq!(field_warning(field, &value).is_none(), unset || read, "{} = {}", field, value);
            } else {
                prop_assert_eq!(field_problem(field, &value).is_none(), unset || read, "{} = {}", field, value);
                prop_assert!(field_warning(field, &value).is_none());
            }
        }
    }
}
