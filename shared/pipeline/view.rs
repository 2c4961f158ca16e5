//! The normalized view read straight from a pipeline file's bytes, without
//! building the whole document.
//!
//! `jkz-pre-compact` reads every pipeline file (thousands of them) and needs,
//! of each, only the view and the bytes. Parsing each file into a
//! `serde_json::Value` allocates every string and map of the opaque fields
//! (`steps`, `tokens`, …) only to drop them again, and that was most of the
//! hook's time. Here the [`Scanner`] checks the whole document exactly as
//! strictly as a `Value` parse (its own tests hold it to `serde_json`), so a
//! file is accepted exactly when [`PipelineDoc::parse`](super::PipelineDoc::parse)
//! accepts it; but it keeps only the fields the view reads ([`VIEW_FIELDS`]
//! of the issue's data, and the siblings `lastActivity` and
//! `heartbeat_pid`), their strings borrowed. The coercions are
//! [`Normalized::from_fields`], the same code [`Normalized::of`] runs, so the
//! two routes cannot disagree; a property test holds them to it.
//!
//! Duplicate keys behave as in a `serde_json` map: the last one wins.

use super::fields::{VIEW_FIELDS, VIEW_SIBLINGS};
use super::scan::{Kept, Scanner};
use super::{Field, IssueNumber, Normalized};

impl Kept<'_> {
    fn field(&self) -> Field<'_> {
        match self {
            Kept::Str(s) => Field::Str(s),
            Kept::Other(v) => Field::from(v),
        }
    }
}

type DataFields<'a> = [Option<Kept<'a>>; VIEW_FIELDS.len()];

/// Where a name is in [`VIEW_FIELDS`]. A `match`, which compares lengths
/// first: every key of every file is looked up here.
fn field_index(name: &[u8]) -> Option<usize> {
    Some(match name {
        b"current_phase" => 0,
        b"active_agent" => 1,
        b"issue_type" => 2,
        b"pr_number" => 3,
        b"started_at" => 4,
        b"last_updated" => 5,
        b"plan_iterations" => 6,
        b"review_fix_count" => 7,
        b"qa_fix_count" => 8,
        b"review_passed" => 9,
        b"qa_passed" => 10,
        b"failure_context" => 11,
        b"pending_decisions" => 12,
        b"approved_plan" => 13,
        b"sub_issues" => 14,
        _ => return None,
    })
}

/// Where a name is in [`VIEW_SIBLINGS`].
fn sibling_index(name: &[u8]) -> Option<usize> {
    match name {
        b"lastActivity" => Some(0),
        b"heartbeat_pid" => Some(1),
        _ => None,
    }
}

fn lookup<'a>(
    index: fn(&[u8]) -> Option<usize>,
    values: &'a [Option<Kept>],
    name: &str,
) -> Option<Field<'a>> {
    let i = index(name.as_bytes());
    debug_assert!(i.is_some(), "{name} missing from the view's field list");
    values[i?].as_ref().map(Kept::field)
}

/// The normalized view of a pipeline file's bytes; `None` when they are not
/// a JSON object (the caller asks `PipelineDoc::parse` for the precise reason).
pub(super) fn normalized(issue: &IssueNumber, bytes: &[u8]) -> Option<Normalized> {
    let mut scan = Scanner::new(bytes);
    scan.whitespace();
    if scan.peek()? != b'{' {
        return None;
    }
    // The numeric key's wanted fields, filled in place; `has_data` is false
    // when the key is missing or its value is not an object.
    let mut data: DataFields = Default::default();
    let mut has_data = false;
    let mut siblings: [Option<Kept>; VIEW_SIBLINGS.len()] = Default::default();
    scan.object(|scan, key| {
        if key.as_bytes() == issue.as_str().as_bytes() {
            has_data = data_fields(scan, &mut data)?;
        } else if let Some(i) = sibling_index(key.as_bytes()) {
            siblings[i] = Some(scan.kept()?);
        } else {
            scan.value()?;
        }
        Some(())
    })?;
    scan.end()?;
    Some(Normalized::from_fields(
        issue,
        |name| match has_data {
            true => lookup(field_index, &data, name),
            false => None,
        },
        |name| lookup(sibling_index, &siblings, name),
    ))
}

/// The value under the numeric key: when it is an object, its wanted fields
/// go to `data` (anew: the last duplicate key wins) and the answer is true;
/// anything else is checked and the answer is false.
fn data_fields<'a>(scan: &mut Scanner<'a>, data: &mut DataFields<'a>) -> Option<bool> {
    if scan.peek()? != b'{' {
        return scan.value().map(|()| false);
    }
    *data = Default::default();
    scan.object(|scan, key| {
        match field_index(key.as_bytes()) {
            Some(i) => data[i] = Some(scan.kept()?),
            None => scan.value()?,
        }
        Some(())
    })?;
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::PipelineDoc;
    use proptest::prelude::*;

    /// The oracle: the whole document parsed into a `Value`, then viewed.
    fn oracle(issue: &IssueNumber, bytes: &[u8]) -> Option<Normalized> {
        PipelineDoc::parse(issue.clone(), bytes)
            .ok()
            .map(|d| d.normalized())
    }

    fn issue() -> IssueNumber {
        IssueNumber::parse("42").unwrap()
    }

    /// JSON texts of values of every shape, including ones only a strict
    /// parser refuses.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            "-?[0-9]{1,3}",
            Just("012".to_string()),
            Just("1.5e3".to_string()),
            Just("1e999".to_string()),
            "\"[a-z0-9 ]{0,6}\"",
            Just("\"\"".to_string()),
            Just("\" 42 \"".to_string()),
            Just("\"true\"".to_string()),
            Just("\"\\u00e9\\n\\ud83d\\ude00\"".to_string()),
            Just("\"\\ud800\"".to_string()),
            Just("\"a\\\"b\\\\c\\u0001\\u007f\\u001f/\"".to_string()),
            Just("[\"x\\ty\", {\"k\": \"\\u00e9\"}, 1.5, -2]".to_string()),
            Just("\"\\x\"".to_string()),
            Just("[\"a\", 1, null, \"\"]".to_string()),
            Just("{\"k\": [1, {}], \"k\": 2}".to_string()),
            Just(format!("{}1{}", "[".repeat(130), "]".repeat(130))),
        ]
    }

    fn key() -> impl Strategy<Value = String> {
        let mut names: Vec<&str> = VIEW_FIELDS.to_vec();
        names.extend(VIEW_SIBLINGS);
        names.extend(["42", "steps", "tokens", "x", "curr\\u0065nt_phase"]);
        proptest::sample::select(names).prop_map(|n| n.to_string())
    }

    fn object(entries: Vec<(String, String)>) -> String {
        let body: Vec<String> = entries
            .iter()
            .map(|(k, v)| format!("\"{k}\": {v}"))
            .collect();
        format!("{{{}}}", body.join(", "))
    }

    proptest! {
        #[test]
        fn the_direct_view_agrees_with_the_full_parse(
            data in proptest::collection::vec((key(), value()), 0..12),
            data_instead in proptest::option::weighted(0.1, value()),
            top in proptest::collection::vec((key(), value()), 0..4),
            tail in prop_oneof![Just(""), Just("\n"), Just(" x")],
        ) {
            let data = data_instead.unwrap_or_else(|| object(data));
            let mut entries = vec![("42".to_string(), data)];
            entries.extend(top);
            let text = format!("{}{tail}", object(entries));
            let view = normalized(&issue(), text.as_bytes());
            prop_assert_eq!(&view, &oracle(&issue(), text.as_bytes()), "{}", text);
            // And it renders as serde would.
            if let Some(view) = view {
                let mut fast = Vec::new();
                view.write_json(&mut fast);
                let want = serde_json::to_vec(&view).unwrap();
                prop_assert_eq!(String::from_utf8(fast).unwrap(), String::from_utf8(want).unwrap());
            }
        }
    }

    #[test]
    fn refuses_what_a_value_refuses_even_in_opaque_fields() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        for steps in ["1e999", "\"\\ud800\"", "\"\\x\"", "012", deep.as_str()] {
            let text = format!(r#"{{"42": {{"current_phase": "b", "steps": {steps}}}}}"#);
            assert_eq!(oracle(&issue(), text.as_bytes()), None, "{text}");
            assert_eq!(normalized(&issue(), text.as_bytes()), None, "{text}");
        }
        let mut bad_utf8 = br#"{"42": {"steps": "x"#.to_vec();
        bad_utf8.extend([0xff, b'"', b'}', b'}']);
        assert_eq!(normalized(&issue(), &bad_utf8), None);
        for not_object in [&b"[1]"[..], b"\"x\"", b"", b"{} {}"] {
            assert_eq!(normalized(&issue(), not_object), None);
        }
    }

    #[test]
    fn field_indexes_match_the_field_lists() {
        for (i, name) in VIEW_FIELDS.iter().enumerate() {
            assert_eq!(field_index(name.as_bytes()), Some(i), "{name}");
            assert_eq!(sibling_index(name.as_bytes()), None, "{name}");
        }
        for (i, name) in VIEW_SIBLINGS.iter().enumerate() {
            assert_eq!(sibling_index(name.as_bytes()), Some(i), "{name}");
            assert_eq!(field_index(name.as_bytes()), None, "{name}");
        }
        for other in ["", "42", "steps", "Current_phase", "current_phase "] {
            let other = other.as_bytes();
            assert_eq!((field_index(other), sibling_index(other)), (None, None));
        }
    }

    #[test]
    fn the_last_duplicate_wins_as_in_a_map() {
        let text =
            br#"{"42": {"current_phase": "a", "current_phase": "b"}, "42": {"issue_type": "bug"}}"#;
        let view = normalized(&issue(), text).unwrap();
        assert_eq!(view, oracle(&issue(), text).unwrap());
        assert_eq!(
            (view.current_phase.as_str(), view.issue_type.as_str()),
            ("unknown", "bug")
        );
    }
}
