//! Helpers shared by the pipeline family's unit tests.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::{IssueNumber, Normalized, PipelineDoc};

pub(crate) fn issue(n: &str) -> IssueNumber {
    IssueNumber::parse(n).unwrap()
}

pub(crate) fn view(data: Value) -> Normalized {
    view_with(data, json!({}))
}

pub(crate) fn view_with(data: Value, siblings: Value) -> Normalized {
    let mut object = siblings.as_object().unwrap().clone();
    object.insert("42".into(), data);
    PipelineDoc {
        issue: issue("42"),
        object,
    }
    .normalized()
}

pub(crate) fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[0-9]{0,6}".prop_map(Value::from),
        prop_oneof![Just("true"), Just("false"), Just(""), Just("x")].prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
    ]
}
