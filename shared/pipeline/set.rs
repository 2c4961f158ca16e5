//! `jkz state set`: the locked read-modify-write of one field, which keeps
//! every other field (known or not) and never leaves a file invalid.

use std::fmt;
use std::path::Path;

use serde_json::{Map, Value};

use super::normalized::coerce_count;
use super::validate::{field_problem, sibling_problem, validate_doc};
use super::{IssueNumber, PipelineDoc};
use crate::atomic::Durability;
use crate::json_file::{self, UpdateError};
use crate::json_type::json_type;

/// Why `set` could not be done.
#[derive(Debug)]
pub enum SetError {
    Update(UpdateError),
    /// The change was refused; the file is untouched.
    Refused(String),
}

impl From<UpdateError> for SetError {
    fn from(e: UpdateError) -> Self {
        SetError::Update(e)
    }
}

impl fmt::Display for SetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetError::Update(e) => e.fmt(f),
            SetError::Refused(why) => f.write_str(why),
        }
    }
}

/// The current time as the contract writes it: RFC 3339, UTC, milliseconds.
pub fn now_timestamp() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// The fields that sit beside the issue's data, not in it.
pub const SIBLINGS: [&str; 2] = ["lastActivity", "heartbeat_pid"];

/// Sets one field of issue N to `value`, and `last_updated` (in the data)
/// and `lastActivity` (sibling) to `now`, under the file's lock and
/// atomically. A field of [`SIBLINGS`] is set where the contract puts it,
/// beside the data (`heartbeat_pid` as an integer, as the contract writes
/// it). Every other field, known or not, keeps its value and place.
/// Refused (file untouched) when the value breaks the contract for that
/// field, or when the file would still break it afterwards (fix those
/// fields first: set never leaves a file invalid). Once the new file is in
/// place, still under its lock, `logged` is told the field's value before
/// and after (the writer's event: see `events::reconcile`).
pub fn set_field(
    path: &Path,
    issue: &IssueNumber,
    field: &str,
    value: Value,
    now: &str,
    logged: impl FnOnce(Option<&Value>, &Value),
) -> Result<(), SetError> {
    if field.is_empty() {
        return Err(SetError::Refused("empty field name".into()));
    }
    let sibling = SIBLINGS.contains(&field);
    let problem = match sibling {
        true => sibling_problem(field, &value),
        false => field_problem(field, &value),
    };
    if let Some(why) = problem {
        return Err(SetError::Refused(format!("{field}: {why}")));
    }
    let value = match (field, &value) {
        ("heartbeat_pid", Value::String(_)) => coerce_count((&value).into())
            .map(Value::from)
            .unwrap_or(value),
        _ => value,
    };
    // The file nests the value two levels down (object, issue data).
    let max = crate::json_depth::MAX_READABLE_DEPTH - 2;
    let depth = crate::json_depth::depth(&value);
    if depth > max {
        return Err(SetError::Refused(format!(
            "{field}: the value nests {depth} levels; at most {max} fit in a pipeline file jkz can read back"
        )));
    }
    let after = value.clone();
    let edit = |object: &mut Map<String, Value>| {
        let previous = match sibling {
            true => object.get(field),
            false => object.get(issue.as_str()).and_then(|d| d.get(field)),
        }
        .cloned();
        let data = object
            .entry(issue.as_str())
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(data) = data else {
            return Err(SetError::Refused(format!(
                "{}: {issue}: expected an object, found {}; fix the file first (jkz state validate)",
                path.display(),
                json_type(data)
            )));
        };
        data.insert("last_updated".into(), Value::String(now.into()));
        object.insert("lastActivity".into(), Value::String(now.into()));
        match sibling {
            true => object.insert(field.into(), value),
            false => match object.get_mut(issue.as_str()) {
                Some(Value::Object(data)) => data.insert(field.into(), value),
                _ => unreachable!("checked to be an object above"),
            },
        };
        let doc = PipelineDoc {
            issue: issue.clone(),
            object: object.clone(),
        };
        let left = validate_doc(&path.display().to_string(), &doc);
        if let Some(first) = left.first() {
            let more = match left.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            return Err(SetError::Refused(format!(
                "the file breaks the contract elsewhere, nothing was changed: {first}{more}; fix those fields first (jkz state validate lists them)"
            )));
        }
        Ok(previous)
    };
    let wait = json_file::lock_wait();
    let (previous, pending) = json_file::prepare_update_within(path, Durability::Full, wait, edit)?;
    // Logged once the new file is in place, under its lock: see events::reconcile.
    let log = || logged(previous.as_ref(), &after);
    pending
        .commit_then(log)
        .map_err(|e| SetError::Update(UpdateError::Io(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::testing::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn set_keeps_unknown_fields_order_and_stamps_time() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("42.json");
        std::fs::write(
            &path,
            r#"{"zeta": 1, "42": {"x-custom": [1], "current_phase": "plan", "steps": {"b": 1, "a": 2}}, "heartbeat_pid": 9}"#,
        )
        .unwrap();
        set_field(
            &path,
            &issue("42"),
            "current_phase",
            json!("build"),
            "T1",
            |_, _| {},
        )
        .unwrap();
        set_field(
            &path,
            &issue("42"),
            "sub_issues",
            json!([43]),
            "T2",
            |_, _| {},
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let top: Vec<_> = v.as_object().unwrap().keys().collect();
        assert_eq!(top, ["zeta", "42", "heartbeat_pid", "lastActivity"]);
        let data: Vec<_> = v["42"].as_object().unwrap().keys().collect();
        assert_eq!(
            data,
            [
                "x-custom",
                "current_phase",
                "steps",
                "last_updated",
                "sub_issues"
            ]
        );
        assert_eq!(v["42"]["current_phase"], "build");
        assert_eq!(v["42"]["last_updated"], "T2");
        assert_eq!(v["lastActivity"], "T2");
        let steps: Vec<_> = v["42"]["steps"].as_object().unwrap().keys().collect();
        assert_eq!(steps, ["b", "a"]);
        // Refused values leave the file as it was.
        assert!(matches!(
            set_field(
                &path,
                &issue("42"),
                "qa_passed",
                json!("yes"),
                "T3",
                |_, _| {}
            ),
            Err(SetError::Refused(_))
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert_eq!(names, Vec::<String>::new());
    }

    proptest! {
        #[test]
        fn set_preserves_everything_else(
            keys in proptest::collection::vec("[a-z_]{1,8}", 0..8),
            field in "[a-z_]{1,8}",
            value in ".{0,10}",
        ) {
            prop_assume!(field_problem(&field, &json!(value)).is_none());
            let tmp = tempfile::tempdir().unwrap();
            let path = tmp.path().join("5.json");
            let mut data = Map::new();
            for (i, k) in keys.iter().enumerate() {
                data.insert(k.clone(), json!({"n": i}));
            }
            let mut top = Map::new();
            top.insert("before".into(), json!([1, 2]));
            top.insert("5".into(), Value::Object(data.clone()));
            std::fs::write(&path, serde_json::to_vec(&Value::Object(top)).unwrap()).unwrap();
            set_field(&path, &issue("5"), &field, json!(value), "T", |_, _| {}).unwrap();
            let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            // Oracle: the old map with last_updated then field inserted (in place when present).
            let mut want = data;
            want.insert("last_updated".into(), json!("T"));
            want.insert(field.clone(), json!(value));
            let got = v["5"].as_object().unwrap();
            prop_assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
            prop_assert_eq!(got, &want);
            prop_assert_eq!(&v["before"], &json!([1, 2]));
        }
    }
}
