//! The normalized view read straight from a pipeline file's bytes, without
//! building the whole document.
//!
//! `jkz-pre-compact` reads every pipeline file (thousands of them) and needs,
//! of each, only the view and the bytes. Parsing each file into a
//! `serde_json::Value` allocates every string and map of the opaque fields
//! (`steps`, `tokens`, …) only to drop them again, and that was most of the
//! hook's time. Here the parser walks the whole document through the same
//! `serde_json` entry point a `Value` uses (`deserialize_any`: strings checked
//! for UTF-8 and escapes, numbers for range, nesting for depth), so a file is
//! accepted exactly when [`PipelineDoc::parse`](super::PipelineDoc::parse)
//! accepts it; but it keeps, as `Value`s, only the fields the view reads
//! ([`VIEW_FIELDS`] of the issue's data, and the siblings `lastActivity` and
//! `heartbeat_pid`). The coercions are [`Normalized::from_fields`], the same
//! code [`Normalized::of`] runs, so the two routes cannot disagree; a property
//! test holds them to it.
//!
//! Duplicate keys behave as in a `serde_json` map: the last one wins.

use std::fmt;

use std::borrow::Cow;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{Field, IssueNumber, Normalized};

/// The fields of the issue's data that [`Normalized::from_fields`] reads.
pub(super) const VIEW_FIELDS: [&str; 15] = [
    "current_phase",
    "active_agent",
    "issue_type",
    "pr_number",
    "started_at",
    "last_updated",
    "review_passed",
    "qa_passed",
    "plan_iterations",
    "review_fix_count",
    "qa_fix_count",
    "pending_decisions",
    "failure_context",
    "approved_plan",
    "sub_issues",
];

/// The siblings of the numeric key that [`Normalized::from_fields`] reads.
pub(super) const VIEW_SIBLINGS: [&str; 2] = ["lastActivity", "heartbeat_pid"];

/// A wanted field's value as read: strings borrowed from the file's bytes
/// (copied only when an escape had to be undone), anything else a `Value`.
enum Kept<'de> {
    Str(Cow<'de, str>),
    Other(Value),
}

impl Kept<'_> {
    fn field(&self) -> Field<'_> {
        match self {
            Kept::Str(s) => Field::Str(s),
            Kept::Other(v) => Field::from(v),
        }
    }
}

type DataFields<'de> = [Option<Kept<'de>>; VIEW_FIELDS.len()];

/// What the view needs of one file.
struct Fields<'de> {
    /// `None` when the numeric key is missing or not an object.
    data: Option<DataFields<'de>>,
    siblings: [Option<Kept<'de>>; VIEW_SIBLINGS.len()],
}

fn lookup<'a>(names: &[&str], values: &'a [Option<Kept>], name: &str) -> Option<Field<'a>> {
    let i = names.iter().position(|n| *n == name);
    debug_assert!(i.is_some(), "{name} missing from the view's field list");
    values[i?].as_ref().map(Kept::field)
}

/// The normalized view of a pipeline file's bytes; `None` when they are not
/// a JSON object (the caller asks `PipelineDoc::parse` for the precise reason).
pub(super) fn normalized(issue: &IssueNumber, bytes: &[u8]) -> Option<Normalized> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let fields = de
        .deserialize_any(TopVisitor {
            issue: issue.as_str(),
        })
        .ok()?;
    de.end().ok()?;
    Some(Normalized::from_fields(
        issue,
        |name| {
            fields
                .data
                .as_ref()
                .and_then(|d| lookup(&VIEW_FIELDS, d, name))
        },
        |name| lookup(&VIEW_SIBLINGS, &fields.siblings, name),
    ))
}

/// Which of the wanted names a key is (its index), if any; compared without
/// allocating.
struct KeySeed<'n>(&'n [&'n str]);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|n| *n == key))
    }
}

/// The top-level object: the issue's data, the two siblings, the rest
/// validated and dropped.
struct TopVisitor<'i> {
    issue: &'i str,
}

impl<'de> Visitor<'de> for TopVisitor<'_> {
    type Value = Fields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
        let names = [self.issue, VIEW_SIBLINGS[0], VIEW_SIBLINGS[1]];
        let mut fields = Fields {
            data: None,
            siblings: Default::default(),
        };
        while let Some(key) = map.next_key_seed(KeySeed(&names))? {
            match key {
                Some(0) => fields.data = map.next_value_seed(DataSeed)?,
                Some(i) => fields.siblings[i - 1] = Some(map.next_value_seed(KeptSeed)?),
                None => map.next_value::<Skip>().map(|_| ())?,
            }
        }
        Ok(fields)
    }
}

/// The value under the numeric key: its wanted fields when it is an object,
/// `None` (after validating it) when it is anything else.
struct DataSeed;

impl<'de> DeserializeSeed<'de> for DataSeed {
    type Value = Option<DataFields<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DataSeed {
    type Value = Option<DataFields<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut data: DataFields = Default::default();
        while let Some(key) = map.next_key_seed(KeySeed(&VIEW_FIELDS))? {
            match key {
                Some(i) => data[i] = Some(map.next_value_seed(KeptSeed)?),
                None => map.next_value::<Skip>().map(|_| ())?,
            }
        }
        Ok(Some(data))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        SkipVisitor.visit_seq(seq).map(|_| None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A wanted field's value, read as a `Value` would read it (the same
/// `deserialize_any` entry point, so the same checks), but with strings kept
/// borrowed.
struct KeptSeed;

impl<'de> DeserializeSeed<'de> for KeptSeed {
    type Value = Kept<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Kept<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeptSeed {
    type Value = Kept<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Kept<'de>, E> {
        Ok(Kept::Str(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Kept<'de>, E> {
        Ok(Kept::Str(Cow::Owned(s.to_string())))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Kept<'de>, E> {
        Ok(Kept::Str(Cow::Owned(s)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Kept<'de>, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(map)).map(Kept::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Kept<'de>, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(Kept::Other)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Kept<'de>, E> {
        Ok(Kept::Other(Value::Bool(b)))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Kept<'de>, E> {
        Ok(Kept::Other(Value::from(n)))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Kept<'de>, E> {
        Ok(Kept::Other(Value::from(n)))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Kept<'de>, E> {
        // As a `Value` does: a number that is not finite is null.
        Ok(Kept::Other(Value::from(n)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Kept<'de>, E> {
        Ok(Kept::Other(Value::Null))
    }
}

/// Any JSON value, checked as strictly as a `Value` would be, and dropped.
/// (`serde::de::IgnoredAny` is not enough: `serde_json` skips it by syntax
/// alone, accepting lone surrogates, out-of-range numbers, invalid UTF-8 and
/// unbounded nesting that a `Value` refuses.)
struct Skip;

impl<'de> de::Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        // Keys are read as strings (checked like a `Value`'s keys), then
        // dropped; `IgnoredAny` here would take the syntax-only route.
        while map.next_key_seed(KeySeed(&[]))?.is_some() {
            map.next_value::<Skip>()?;
        }
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
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
            prop_assert_eq!(
                normalized(&issue(), text.as_bytes()),
                oracle(&issue(), text.as_bytes()),
                "{}", text
            );
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
