//! The pipeline-state contract: `state/pipeline/<N>.json`, one file per issue.
//!
//! ```json
//! { "42": { "current_phase": "building", "pr_number": "42", "review_passed": "true", … },
//!   "lastActivity": "…", "heartbeat_pid": 47281 }
//! ```
//!
//! The issue's data sits under its number; `lastActivity` and `heartbeat_pid`
//! are siblings. Writers (bash pipeline scripts, `jkz state set`) store scalars
//! as strings; readers coerce through [`Normalized`], whose rules are the
//! contract's and live only here. Unknown fields are never dropped: every
//! write is a locked read-modify-write of the JSON object ([`set_field`]).
//!
//! Files in `state/pipeline/` that are not `<N>.json` (e.g.
//! `42-compact-plan.md`) are companions of issue N, never invalid pipeline
//! files; [`list`] skips them.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::json_file::{self, UpdateError};
use crate::state_dir::StateDir;

mod read;
pub mod scan;
mod view;

pub use read::{
    load_all, visit_in_order, FileContent, LoadedPipeline, MAX_PIPELINE_FILE, MAX_READ_THREADS,
};

/// The normalized view straight from a pipeline file's bytes, the way
/// `jkz-pre-compact` reads thousands of them (checked by [`scan`], only the
/// viewed fields kept); none when they are not one JSON object. Equal to
/// `PipelineDoc::parse(..).normalized()` whenever that parses (the unit
/// tests and the `pipeline_state` fuzz target hold it to that).
pub fn view_of_bytes(issue: &IssueNumber, bytes: &[u8]) -> Option<Normalized> {
    view::normalized(issue, bytes)
}

/// The subdirectory of the state directory holding pipeline files.
pub const PIPELINE_DIR: &str = "pipeline";

/// The largest approved-plan companion file read whole; a larger one is read
/// up to this bound (digests cut plans far shorter anyway).
pub const MAX_PLAN_BYTES: u64 = 256 * 1024;

/// Scalar fields of the contract: stored as strings (or absent, or null).
pub const STRING_FIELDS: &[&str] = &[
    "current_phase",
    "active_agent",
    "issue_type",
    "pr_number",
    "started_at",
    "last_updated",
    "plan_iterations",
    "review_fix_count",
    "qa_fix_count",
    "review_passed",
    "qa_passed",
    "failure_context",
];

/// Fields holding a count, stored as a string of digits.
pub const COUNT_FIELDS: &[&str] = &["plan_iterations", "review_fix_count", "qa_fix_count"];

/// Fields holding a boolean, stored as `"true"` or `"false"`.
pub const FLAG_FIELDS: &[&str] = &["review_passed", "qa_passed"];

/// An issue number: ASCII digits only (1 to 20 of them, no leading zero,
/// not 0), so that it can never become a path escape and each issue has
/// exactly one spelling: `7`, never `007`, names both its file and its key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct IssueNumber(String);

impl IssueNumber {
    /// Parses an issue number as a person or script writes it: digits,
    /// leading zeros dropped (`007` is issue 7). Issue 0 does not exist.
    pub fn parse(raw: &str) -> Result<IssueNumber, String> {
        let canonical = raw.trim_start_matches('0');
        let digits = !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit());
        if digits && canonical.is_empty() {
            return Err(format!(
                "invalid issue number {:?}: issue numbers start at 1",
                crate::pipeline::shorten(raw, 40)
            ));
        }
        if digits && IssueNumber::is_valid(canonical) {
            Ok(IssueNumber(canonical.to_string()))
        } else {
            Err(format!(
                "invalid issue number {:?}: expected 1 to 20 digits",
                crate::pipeline::shorten(raw, 40)
            ))
        }
    }

    /// The canonical spelling: 1 to 20 ASCII digits, the first not `0`.
    fn is_valid(raw: &str) -> bool {
        (1..=20).contains(&raw.len())
            && raw.bytes().all(|b| b.is_ascii_digit())
            && !raw.starts_with('0')
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The number's file name: `<N>.json`.
    pub fn file_name(&self) -> String {
        format!("{}.json", self.0)
    }

    /// Orders numerically (leading zeros aside), then by spelling.
    fn sort_key(&self) -> (usize, &str) {
        let trimmed = self.0.trim_start_matches('0');
        (trimmed.len(), trimmed)
    }
}

impl fmt::Display for IssueNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialOrd for IssueNumber {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for IssueNumber {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.sort_key()
            .cmp(&other.sort_key())
            .then_with(|| self.0.cmp(&other.0))
    }
}

/// The path of issue N's pipeline file.
pub fn pipeline_path(state: &StateDir, issue: &IssueNumber) -> PathBuf {
    state.join(PIPELINE_DIR).join(issue.file_name())
}

/// One parsed pipeline file: the whole JSON object as written.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineDoc {
    pub issue: IssueNumber,
    /// The file's top-level object, untouched (key order kept).
    pub object: Map<String, Value>,
}

/// A pipeline file that could not be read as a JSON object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PipelineDoc {
    /// Parses a file's bytes. Only "not JSON" and "not an object" are errors
    /// here; everything else is for [`validate`] to report and for
    /// [`Normalized`] to coerce.
    pub fn parse(issue: IssueNumber, bytes: &[u8]) -> Result<PipelineDoc, ParseError> {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(object)) => Ok(PipelineDoc { issue, object }),
            Ok(other) => Err(ParseError(format!(
                "expected a JSON object, found {}",
                type_name(&other)
            ))),
            Err(e) => Err(ParseError(format!("invalid JSON: {e}"))),
        }
    }

    /// The issue's data (the object under the numeric key), if it is one.
    pub fn data(&self) -> Option<&Map<String, Value>> {
        self.object
            .get(self.issue.as_str())
            .and_then(Value::as_object)
    }

    /// A field of the issue's data.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.data().and_then(|d| d.get(name))
    }

    /// A sibling of the numeric key (`lastActivity`, `heartbeat_pid`).
    pub fn sibling(&self, name: &str) -> Option<&Value> {
        self.object.get(name)
    }

    pub fn normalized(&self) -> Normalized {
        Normalized::of(self)
    }
}

/// The normalized view of a pipeline file: what every reader sees.
///
/// Invariants (the contract's coercion rules): `current_phase` is never empty
/// (default `"unknown"`); `active_agent` is `None` rather than empty;
/// `issue_type` defaults to `"feature"`; `pr_number` is an integer or `None`
/// when unparsable; `started_at` is passed through; `last_updated` prefers
/// `last_updated` and falls back to `lastActivity`; `verdict` is `PASS` when
/// both `review_passed` and `qa_passed` are true, `FAIL` when either is false,
/// else `None`. The decision-critical items follow, each `None`/empty when
/// absent or of the wrong shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Normalized {
    pub issue: IssueNumber,
    pub current_phase: String,
    pub active_agent: Option<String>,
    pub issue_type: String,
    pub pr_number: Option<u64>,
    pub started_at: Value,
    pub last_updated: Option<String>,
    pub verdict: Option<Verdict>,
    pub review_passed: Option<bool>,
    pub qa_passed: Option<bool>,
    pub plan_iterations: Option<u64>,
    pub review_fix_count: Option<u64>,
    pub qa_fix_count: Option<u64>,
    pub pending_decisions: Vec<String>,
    pub failure_context: Option<String>,
    pub approved_plan: Option<String>,
    pub sub_issues: Vec<Value>,
    pub heartbeat_pid: Option<u64>,
}

/// The combined verdict of review and QA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    #[serde(rename = "PASS")]
    Pass,
    #[serde(rename = "FAIL")]
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
        }
    }

    /// `PASS` when both passed, `FAIL` when either failed, else none.
    pub fn combine(review: Option<bool>, qa: Option<bool>) -> Option<Verdict> {
        match (review, qa) {
            (Some(false), _) | (_, Some(false)) => Some(Verdict::Fail),
            (Some(true), Some(true)) => Some(Verdict::Pass),
            _ => None,
        }
    }
}

impl Normalized {
    pub fn of(doc: &PipelineDoc) -> Normalized {
        Normalized::from_fields(
            &doc.issue,
            |name| doc.field(name).map(Field::from),
            |name| doc.sibling(name).map(Field::from),
        )
    }

    /// The view from a lookup of the issue's data fields and of the
    /// siblings of the numeric key: the contract's coercion rules, in one
    /// place for [`Normalized::of`] and for the direct route from a file's
    /// bytes ([`view_of_bytes`]). Every name read here is listed in `view::VIEW_FIELDS`
    /// or `view::VIEW_SIBLINGS`.
    fn from_fields<'a>(
        issue: &IssueNumber,
        f: impl Fn(&str) -> Option<Field<'a>>,
        sibling: impl Fn(&str) -> Option<Field<'a>>,
    ) -> Normalized {
        let text = |name: &str| f(name).and_then(coerce_text);
        let review_passed = f("review_passed").and_then(coerce_flag);
        let qa_passed = f("qa_passed").and_then(coerce_flag);
        let array = |name: &str| match f(name) {
            Some(Field::Other(Value::Array(items))) => Some(items),
            _ => None,
        };
        Normalized {
            issue: issue.clone(),
            current_phase: text("current_phase").unwrap_or_else(|| "unknown".into()),
            active_agent: text("active_agent"),
            issue_type: text("issue_type").unwrap_or_else(|| "feature".into()),
            pr_number: f("pr_number").and_then(coerce_count),
            started_at: f("started_at").map_or(Value::Null, Field::to_value),
            last_updated: text("last_updated")
                .or_else(|| sibling("lastActivity").and_then(coerce_text)),
            verdict: Verdict::combine(review_passed, qa_passed),
            review_passed,
            qa_passed,
            plan_iterations: f("plan_iterations").and_then(coerce_count),
            review_fix_count: f("review_fix_count").and_then(coerce_count),
            qa_fix_count: f("qa_fix_count").and_then(coerce_count),
            pending_decisions: array("pending_decisions")
                .map(|a| a.iter().map(Field::from).filter_map(coerce_text).collect())
                .unwrap_or_default(),
            failure_context: text("failure_context"),
            approved_plan: f("approved_plan").and_then(coerce_plan),
            sub_issues: array("sub_issues").cloned().unwrap_or_default(),
            heartbeat_pid: sibling("heartbeat_pid").and_then(coerce_count),
        }
    }

    /// Appends the view as JSON, exactly as `serde_json::to_writer` writes
    /// it (a test holds the two equal), but without serde's per-field
    /// machinery: `jkz-pre-compact` renders thousands of views, and this
    /// was most of the cost of their snapshot entries.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"issue\":");
        json_str(out, self.issue.as_str());
        out.extend_from_slice(b",\"current_phase\":");
        json_str(out, &self.current_phase);
        out.extend_from_slice(b",\"active_agent\":");
        json_opt_str(out, self.active_agent.as_deref());
        out.extend_from_slice(b",\"issue_type\":");
        json_str(out, &self.issue_type);
        out.extend_from_slice(b",\"pr_number\":");
        json_opt_u64(out, self.pr_number);
        out.extend_from_slice(b",\"started_at\":");
        json_value(out, &self.started_at);
        out.extend_from_slice(b",\"last_updated\":");
        json_opt_str(out, self.last_updated.as_deref());
        out.extend_from_slice(b",\"verdict\":");
        json_opt_str(out, self.verdict.map(Verdict::as_str));
        out.extend_from_slice(b",\"review_passed\":");
        json_opt_bool(out, self.review_passed);
        out.extend_from_slice(b",\"qa_passed\":");
        json_opt_bool(out, self.qa_passed);
        out.extend_from_slice(b",\"plan_iterations\":");
        json_opt_u64(out, self.plan_iterations);
        out.extend_from_slice(b",\"review_fix_count\":");
        json_opt_u64(out, self.review_fix_count);
        out.extend_from_slice(b",\"qa_fix_count\":");
        json_opt_u64(out, self.qa_fix_count);
        out.extend_from_slice(b",\"pending_decisions\":");
        json_array(out, &self.pending_decisions, |out, d| json_str(out, d));
        out.extend_from_slice(b",\"failure_context\":");
        json_opt_str(out, self.failure_context.as_deref());
        out.extend_from_slice(b",\"approved_plan\":");
        json_opt_str(out, self.approved_plan.as_deref());
        out.extend_from_slice(b",\"sub_issues\":");
        json_array(out, &self.sub_issues, json_value);
        out.extend_from_slice(b",\"heartbeat_pid\":");
        json_opt_u64(out, self.heartbeat_pid);
        out.push(b'}');
    }

    /// True while the pipeline still needs attention (not finished).
    pub fn is_active(&self) -> bool {
        // Compared in place: the hook asks this of every file it reads.
        const FINISHED: [&str; 7] = [
            "done",
            "complete",
            "completed",
            "closed",
            "merged",
            "cancelled",
            "abandoned",
        ];
        !FINISHED
            .iter()
            .any(|f| self.current_phase.eq_ignore_ascii_case(f))
    }
}

/// A JSON string: as it is, quoted, when nothing in it needs escaping (what
/// serde_json escapes: the quote, the backslash, control characters), else
/// written by serde_json.
fn json_str(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        json_value(out, s);
    }
}

fn json_array<T>(out: &mut Vec<u8>, items: &[T], item: impl Fn(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        item(out, x);
    }
    out.push(b']');
}

fn json_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => json_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

fn json_opt_u64(out: &mut Vec<u8>, n: Option<u64>) {
    use std::io::Write;
    match n {
        // Writing to a Vec cannot fail.
        Some(n) => drop(write!(out, "{n}")),
        None => out.extend_from_slice(b"null"),
    }
}

fn json_opt_bool(out: &mut Vec<u8>, b: Option<bool>) {
    out.extend_from_slice(match b {
        Some(true) => b"true",
        Some(false) => b"false",
        None => b"null",
    });
}

fn json_value(out: &mut Vec<u8>, v: &(impl Serialize + ?Sized)) {
    // Writing to a Vec cannot fail, nor can serializing a string or a Value.
    let _ = serde_json::to_writer(out, v);
}

/// A field's value as the coercions read it: a string, borrowed from
/// wherever it was read (a parsed document, or a file's bytes when no escape
/// had to be undone), or any other JSON value. The view straight from a
/// file's bytes keeps its strings this way and builds no `Value` for them.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Field<'a> {
    Str(&'a str),
    /// Never a string: those are always [`Field::Str`].
    Other(&'a Value),
}

impl<'a> From<&'a Value> for Field<'a> {
    fn from(v: &'a Value) -> Field<'a> {
        match v {
            Value::String(s) => Field::Str(s),
            other => Field::Other(other),
        }
    }
}

impl Field<'_> {
    fn to_value(self) -> Value {
        match self {
            Field::Str(s) => Value::from(s),
            Field::Other(v) => v.clone(),
        }
    }
}

/// A non-empty scalar as text: strings as they are (empty → none), numbers
/// and booleans spelled out; null, arrays and objects → none.
fn coerce_text(v: Field) -> Option<String> {
    match v {
        Field::Str("") => None,
        Field::Str(s) => Some(s.to_string()),
        Field::Other(Value::Number(n)) => Some(n.to_string()),
        Field::Other(Value::Bool(b)) => Some(b.to_string()),
        Field::Other(_) => None,
    }
}

/// `"true"`/`"false"` (or a JSON boolean); anything else → none.
fn coerce_flag(v: Field) -> Option<bool> {
    match v {
        Field::Str("true") => Some(true),
        Field::Str("false") => Some(false),
        Field::Other(Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

/// A non-negative integer from a string of digits (surrounding blanks
/// ignored) or a JSON integer; anything else → none.
fn coerce_count(v: Field) -> Option<u64> {
    match v {
        Field::Str(s) => {
            let s = s.trim();
            if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
                s.parse().ok()
            } else {
                None
            }
        }
        Field::Other(Value::Number(n)) => n.as_u64(),
        Field::Other(_) => None,
    }
}

/// An approved plan given inline: a string, or any JSON rendered compactly.
fn coerce_plan(v: Field) -> Option<String> {
    match v {
        Field::Other(Value::Null) => None,
        Field::Str(s) if s.trim().is_empty() => None,
        Field::Str(s) => Some(s.to_string()),
        Field::Other(other) => Some(other.to_string()),
    }
}

/// The `pr_number` cascade: an explicit argument > `JKZ_PR_NUMBER` > the
/// pipeline field > none. An unparsable level is skipped, not fatal.
pub fn resolve_pr_number(
    explicit: Option<&str>,
    env: Option<&str>,
    state: Option<&Normalized>,
) -> Option<u64> {
    let parse = |s: &str| coerce_count(Field::Str(s));
    explicit
        .and_then(parse)
        .or_else(|| env.and_then(parse))
        .or_else(|| state.and_then(|n| n.pr_number))
}

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
    match PipelineDoc::parse(issue.clone(), bytes) {
        Ok(doc) => validate_doc(file, &doc),
        Err(e) => vec![Problem {
            file: file.into(),
            field: String::new(),
            message: e.0,
        }],
    }
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
            format!("expected an object, found {}", type_name(other)),
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
        return coerce_count(value.into())
            .is_none()
            .then(|| expected("a PR number as a string of digits, e.g. \"42\"", value));
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

fn expected(what: &str, found: &Value) -> String {
    let shown = match found {
        Value::String(s) => format!("{:?}", shorten(s, 40)),
        Value::Array(_) | Value::Object(_) => type_name(found).to_string(),
        other => other.to_string(),
    };
    format!("expected {what}, found {shown}")
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// At most `max` characters of `s`, with `…` when cut.
pub fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}…", crate::cut::cut_str(s, cut, crate::cut::Keep::Head)),
    }
}

/// A pipeline file found in `state/pipeline/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineFile {
    pub issue: IssueNumber,
    pub path: PathBuf,
    /// The directory listing said it is a regular file (not a symbolic
    /// link, FIFO, device or directory), so reading it needs no `stat`.
    pub regular: bool,
}

/// The issue number of a pipeline file name (`<N>.json`, N canonical);
/// companions and everything else → none.
pub fn issue_of_file_name(name: &str) -> Option<IssueNumber> {
    let n = name.strip_suffix(".json")?;
    IssueNumber::is_valid(n).then(|| IssueNumber(n.to_string()))
}

/// Why a file name is not a pipeline file's, when it looks like one that
/// misspells its number (`007.json`, `0.json`): every reader ignores such a
/// file, so `jkz state validate` and `jkz doctor` say how to rename it.
pub fn misnamed(name: &str) -> Option<String> {
    let n = name.strip_suffix(".json")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) || IssueNumber::is_valid(n) {
        return None;
    }
    Some(match IssueNumber::parse(n) {
        Ok(issue) => format!(
            "file name: {name} spells issue {issue} with leading zeros, so no reader sees it; rename it to {issue}.json (its data under the key \"{issue}\")"
        ),
        Err(why) => format!("file name: {name}: {why}; no reader sees it"),
    })
}

/// The files of `dir` that [`misnamed`] describes, as (path, why), sorted.
pub fn misnamed_in(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            misnamed(&name).map(|why| (e.path(), why))
        })
        .collect();
    out.sort();
    out
}

/// Every pipeline file in `dir`, ordered by issue number. A missing
/// directory is an empty list.
pub fn list_in(dir: &Path) -> io::Result<Vec<PipelineFile>> {
    crate::state_dir::check_listed_dir(dir)?;
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(Vec::new())
        }
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        // The name's own allocation becomes the issue number's (a directory
        // can hold thousands of files; each allocation shows).
        let Ok(mut name) = entry.file_name().into_string() else {
            continue;
        };
        if !name
            .strip_suffix(".json")
            .is_some_and(IssueNumber::is_valid)
        {
            continue;
        }
        let mut path = PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
        path.push(dir);
        path.push(&name);
        name.truncate(name.len() - ".json".len());
        // The issue's value, for a sort that parses each name once. 20
        // digits fit in a u128.
        let value: u128 = name.parse().unwrap_or(u128::MAX);
        let file = PipelineFile {
            issue: IssueNumber(name),
            path,
            // From the entry's type in the listing: no extra call where the
            // filesystem reports it (ext4, xfs, btrfs, tmpfs all do).
            regular: entry.file_type().is_ok_and(|t| t.is_file()),
        };
        files.push((value, file));
    }
    // The order of `IssueNumber`: by value, then ("7" and "007") by spelling.
    files.sort_unstable_by(|(a, fa), (b, fb)| a.cmp(b).then_with(|| fa.issue.cmp(&fb.issue)));
    Ok(files.into_iter().map(|(_, file)| file).collect())
}

/// Every pipeline file of the state directory.
pub fn list(state: &StateDir) -> io::Result<Vec<PipelineFile>> {
    list_in(&state.join(PIPELINE_DIR))
}

/// An approved plan and where it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ApprovedPlan {
    /// The companion file name, or `approved_plan` for the field.
    pub source: String,
    pub text: String,
}

/// The approved plan of issue N: the companion `<N>-compact-plan.json`, else
/// `<N>-compact-plan.md` (read up to [`MAX_PLAN_BYTES`]), else the field
/// `approved_plan`.
pub fn approved_plan(
    pipeline_dir: &Path,
    issue: &IssueNumber,
    normalized: Option<&Normalized>,
) -> Option<ApprovedPlan> {
    for ext in ["json", "md"] {
        let name = format!("{issue}-compact-plan.{ext}");
        if let Some(text) = read_bounded_text(&pipeline_dir.join(&name), MAX_PLAN_BYTES) {
            if !text.trim().is_empty() {
                return Some(ApprovedPlan { source: name, text });
            }
        }
    }
    normalized
        .and_then(|n| n.approved_plan.clone())
        .map(|text| ApprovedPlan {
            source: "approved_plan".into(),
            text,
        })
}

/// A file's text (lossy UTF-8) up to `max` bytes; none when unreadable.
pub fn read_bounded_text(path: &Path, max: u64) -> Option<String> {
    let mut bytes = crate::state_dir::read_state_file(path, max).ok()?;
    bytes.truncate(max as usize);
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

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

/// What is wrong with a sibling's value, if anything (the rule
/// [`validate_doc`] applies to them).
fn sibling_problem(name: &str, value: &Value) -> Option<String> {
    match name {
        "lastActivity" => {
            (!matches!(value, Value::String(_) | Value::Null)).then(|| expected("a string", value))
        }
        "heartbeat_pid" => (coerce_count(value.into()).is_none() && !value.is_null())
            .then(|| expected("a process id (integer)", value)),
        _ => None,
    }
}

/// Sets one field of issue N to `value`, and `last_updated` (in the data)
/// and `lastActivity` (sibling) to `now`, under the file's lock and
/// atomically. A field of [`SIBLINGS`] is set where the contract puts it,
/// beside the data (`heartbeat_pid` as an integer, as the contract writes
/// it). Every other field, known or not, keeps its value and place.
/// Refused (file untouched) when the value breaks the contract for that
/// field, or when the file would still break it afterwards (fix those
/// fields first: set never leaves a file invalid).
pub fn set_field(
    path: &Path,
    issue: &IssueNumber,
    field: &str,
    value: Value,
    now: &str,
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
    json_file::update_object(path, |object| {
        let data = object
            .entry(issue.as_str())
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(data) = data else {
            return Err(SetError::Refused(format!(
                "{}: {issue}: expected an object, found {}; fix the file first (jkz state validate)",
                path.display(),
                type_name(data)
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
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn issue(n: &str) -> IssueNumber {
        IssueNumber::parse(n).unwrap()
    }

    fn view(data: Value) -> Normalized {
        view_with(data, json!({}))
    }

    #[test]
    fn finished_phases_in_any_case_are_not_active() {
        for phase in [
            "done",
            "Done",
            "MERGED",
            "Cancelled",
            "abandoned",
            "complete",
        ] {
            assert!(
                !view(json!({"current_phase": phase})).is_active(),
                "{phase}"
            );
        }
        for phase in ["building", "done ", "undone", "qa", "unknown"] {
            assert!(view(json!({"current_phase": phase})).is_active(), "{phase}");
        }
        assert!(view(json!({})).is_active(), "no phase: unknown");
    }

    fn view_with(data: Value, siblings: Value) -> Normalized {
        let mut object = siblings.as_object().unwrap().clone();
        object.insert("42".into(), data);
        PipelineDoc {
            issue: issue("42"),
            object,
        }
        .normalized()
    }

    #[test]
    fn issue_numbers_are_digits_only() {
        for ok in ["42", "12345678901234567890"] {
            assert_eq!(IssueNumber::parse(ok).unwrap().as_str(), ok);
        }
        // One spelling per issue: leading zeros go; issue 0 does not exist.
        assert_eq!(IssueNumber::parse("007").unwrap(), issue("7"));
        assert_eq!(IssueNumber::parse("0042").unwrap().file_name(), "42.json");
        for zero in ["0", "00", "000"] {
            assert!(
                IssueNumber::parse(zero).unwrap_err().contains("start at 1"),
                "{zero}"
            );
        }
        for bad in ["", "-1", "4 2", "../1", "1/..", "42.json", "x", "+1", "١٢"] {
            assert!(IssueNumber::parse(bad).is_err(), "{bad}");
        }
        assert!(IssueNumber::parse(&"9".repeat(21)).is_err());
    }

    #[test]
    fn issue_numbers_sort_numerically() {
        let mut v: Vec<_> = ["10", "9", "100", "09", "1"].map(issue).to_vec();
        v.sort();
        let shown: Vec<_> = v.iter().map(|i| i.as_str()).collect();
        assert_eq!(shown, ["1", "9", "9", "10", "100"]);
    }

    #[test]
    fn current_phase_defaults_to_unknown() {
        assert_eq!(view(json!({})).current_phase, "unknown");
        assert_eq!(view(json!({"current_phase": ""})).current_phase, "unknown");
        assert_eq!(
            view(json!({"current_phase": null})).current_phase,
            "unknown"
        );
        assert_eq!(
            view(json!({"current_phase": ["x"]})).current_phase,
            "unknown"
        );
        assert_eq!(
            view(json!({"current_phase": "building"})).current_phase,
            "building"
        );
        // The wrapper missing altogether: every default applies.
        let n = PipelineDoc::parse(issue("42"), b"{}").unwrap().normalized();
        assert_eq!(
            (n.current_phase.as_str(), n.issue_type.as_str()),
            ("unknown", "feature")
        );
    }

    #[test]
    fn empty_active_agent_is_null() {
        assert_eq!(view(json!({"active_agent": ""})).active_agent, None);
        assert_eq!(view(json!({})).active_agent, None);
        assert_eq!(
            view(json!({"active_agent": "builder"}))
                .active_agent
                .as_deref(),
            Some("builder")
        );
    }

    #[test]
    fn issue_type_defaults_to_feature() {
        assert_eq!(view(json!({})).issue_type, "feature");
        assert_eq!(view(json!({"issue_type": ""})).issue_type, "feature");
        assert_eq!(view(json!({"issue_type": "bug"})).issue_type, "bug");
    }

    #[test]
    fn pr_number_parses_or_is_null() {
        assert_eq!(view(json!({"pr_number": "42"})).pr_number, Some(42));
        assert_eq!(view(json!({"pr_number": 42})).pr_number, Some(42));
        assert_eq!(view(json!({"pr_number": " 7 "})).pr_number, Some(7));
        for bad in [
            json!("x42"),
            json!(""),
            json!("-1"),
            json!("4.2"),
            json!(-1),
            json!(4.5),
            json!(true),
            json!(null),
            json!("99999999999999999999999"),
        ] {
            assert_eq!(view(json!({ "pr_number": bad })).pr_number, None, "{bad}");
        }
    }

    #[test]
    fn started_at_passes_through() {
        assert_eq!(view(json!({"started_at": "t0"})).started_at, json!("t0"));
        assert_eq!(view(json!({"started_at": 5})).started_at, json!(5));
        assert_eq!(view(json!({})).started_at, Value::Null);
    }

    #[test]
    fn last_updated_falls_back_to_last_activity() {
        let sib = json!({"lastActivity": "t-act"});
        assert_eq!(
            view_with(json!({"last_updated": "t-upd"}), sib.clone())
                .last_updated
                .as_deref(),
            Some("t-upd")
        );
        assert_eq!(
            view_with(json!({}), sib.clone()).last_updated.as_deref(),
            Some("t-act")
        );
        assert_eq!(
            view_with(json!({"last_updated": ""}), sib)
                .last_updated
                .as_deref(),
            Some("t-act")
        );
        assert_eq!(view(json!({})).last_updated, None);
    }

    #[test]
    fn verdict_table() {
        let cases = [
            ("true", "true", Some(Verdict::Pass)),
            ("true", "false", Some(Verdict::Fail)),
            ("false", "true", Some(Verdict::Fail)),
            ("false", "false", Some(Verdict::Fail)),
            ("false", "", Some(Verdict::Fail)),
            ("true", "", None),
            ("", "", None),
            ("yes", "true", None),
        ];
        for (review, qa, want) in cases {
            let mut data = Map::new();
            if !review.is_empty() {
                data.insert("review_passed".into(), json!(review));
            }
            if !qa.is_empty() {
                data.insert("qa_passed".into(), json!(qa));
            }
            assert_eq!(view(Value::Object(data)).verdict, want, "{review} {qa}");
        }
        let n = view(json!({"review_passed": true, "qa_passed": true}));
        assert_eq!(n.verdict, Some(Verdict::Pass));
    }

    #[test]
    fn pr_number_cascade() {
        let n = view(json!({"pr_number": "3"}));
        assert_eq!(resolve_pr_number(Some("1"), Some("2"), Some(&n)), Some(1));
        assert_eq!(resolve_pr_number(None, Some("2"), Some(&n)), Some(2));
        assert_eq!(resolve_pr_number(None, None, Some(&n)), Some(3));
        assert_eq!(resolve_pr_number(Some("x"), Some(""), Some(&n)), Some(3));
        assert_eq!(resolve_pr_number(None, None, None), None);
    }

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
    fn companions_are_not_pipeline_files() {
        let tmp = tempfile::tempdir().unwrap();
        for name in [
            "42.json",
            "7.json",
            "42-compact-plan.json",
            "42-compact-plan.md",
            ".42.json.lock",
            ".42.json.abc.tmp",
            "notes.json",
            "100.json",
        ] {
            std::fs::write(tmp.path().join(name), "{}").unwrap();
        }
        let issues: Vec<_> = list_in(tmp.path())
            .unwrap()
            .into_iter()
            .map(|f| f.issue.0)
            .collect();
        assert_eq!(issues, ["7", "42", "100"]);
        assert_eq!(list_in(&tmp.path().join("missing")).unwrap(), []);
    }

    #[test]
    fn listing_orders_as_issue_numbers_do() {
        let tmp = tempfile::tempdir().unwrap();
        let names = [
            "99999999999999999999",
            "12345678901234567890",
            "007",
            "7",
            "0",
            "00",
            "70",
            "9",
            "0007",
            "18446744073709551616",
            "18446744073709551615",
            "1",
        ];
        for name in names {
            std::fs::write(tmp.path().join(format!("{name}.json")), "{}").unwrap();
        }
        let listed: Vec<_> = list_in(tmp.path())
            .unwrap()
            .into_iter()
            .map(|f| f.issue)
            .collect();
        // The oracle: `IssueNumber`'s own order.
        let mut want: Vec<_> = names
            .iter()
            .filter(|n| !n.starts_with('0'))
            .map(|n| issue(n))
            .collect();
        want.sort();
        assert_eq!(listed, want);
        assert_eq!(
            listed[..3]
                .iter()
                .map(IssueNumber::as_str)
                .collect::<Vec<_>>(),
            ["1", "7", "9"]
        );
        // The misspelled ones are no pipeline files; validate names them.
        let found: Vec<String> = misnamed_in(tmp.path())
            .into_iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(found, ["0.json", "00.json", "0007.json", "007.json"]);
        assert!(misnamed("007.json")
            .unwrap()
            .contains("rename it to 7.json"));
        assert_eq!(misnamed("7.json"), None);
        assert_eq!(misnamed("7-compact-plan.json"), None);
    }

    #[test]
    fn approved_plan_prefers_companion_files() {
        let tmp = tempfile::tempdir().unwrap();
        let n = view(json!({"approved_plan": "inline plan"}));
        let plan = approved_plan(tmp.path(), &issue("42"), Some(&n)).unwrap();
        assert_eq!(
            (plan.source.as_str(), plan.text.as_str()),
            ("approved_plan", "inline plan")
        );
        std::fs::write(tmp.path().join("42-compact-plan.md"), "md plan").unwrap();
        let plan = approved_plan(tmp.path(), &issue("42"), Some(&n)).unwrap();
        assert_eq!(plan.text, "md plan");
        std::fs::write(tmp.path().join("42-compact-plan.json"), "{\"p\":1}").unwrap();
        let plan = approved_plan(tmp.path(), &issue("42"), Some(&n)).unwrap();
        assert_eq!(plan.source, "42-compact-plan.json");
        assert_eq!(approved_plan(tmp.path(), &issue("7"), None), None);
    }

    #[test]
    fn set_keeps_unknown_fields_order_and_stamps_time() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("42.json");
        std::fs::write(
            &path,
            r#"{"zeta": 1, "42": {"x-custom": [1], "current_phase": "plan", "steps": {"b": 1, "a": 2}}, "heartbeat_pid": 9}"#,
        )
        .unwrap();
        set_field(&path, &issue("42"), "current_phase", json!("build"), "T1").unwrap();
        set_field(&path, &issue("42"), "sub_issues", json!([43]), "T2").unwrap();
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
            set_field(&path, &issue("42"), "qa_passed", json!("yes"), "T3"),
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

    /// The naive oracle of the coercion rules, written from the contract's
    /// table with nothing shared with the implementation.
    fn oracle_verdict(review: &Value, qa: &Value) -> Option<&'static str> {
        let is = |v: &Value, s: &str| v == &json!(s) || v == &json!(s == "true");
        if is(review, "false") || is(qa, "false") {
            Some("FAIL")
        } else if is(review, "true") && is(qa, "true") {
            Some("PASS")
        } else {
            None
        }
    }

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[0-9]{0,6}".prop_map(Value::from),
            prop_oneof![Just("true"), Just("false"), Just(""), Just("x")].prop_map(Value::from),
            ".{0,8}".prop_map(Value::from),
        ]
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
                "plan_iterations" => n.plan_iterations.is_some(),
                "review_fix_count" => n.review_fix_count.is_some(),
                "qa_fix_count" => n.qa_fix_count.is_some(),
                "pr_number" => n.pr_number.is_some(),
                "review_passed" => n.review_passed.is_some(),
                "qa_passed" => n.qa_passed.is_some(),
                "active_agent" => n.active_agent.is_some(),
                _ => n.failure_context.is_some(),
            };
            let unset = value.is_null() || value.as_str() == Some("");
            prop_assert_eq!(field_problem(field, &value).is_none(), unset || read, "{} = {}", field, value);
        }

        #[test]
        fn coercion_matches_oracle(
            phase in scalar(), agent in scalar(), kind in scalar(), pr in scalar(),
            review in scalar(), qa in scalar(), updated in scalar(), activity in scalar(),
        ) {
            let mut data = Map::new();
            for (k, v) in [("current_phase", &phase), ("active_agent", &agent),
                ("issue_type", &kind), ("pr_number", &pr), ("review_passed", &review),
                ("qa_passed", &qa), ("last_updated", &updated)] {
                data.insert(k.into(), v.clone());
            }
            let n = view_with(Value::Object(data), json!({"lastActivity": activity}));
            let text = |v: &Value| match v {
                Value::String(s) if !s.is_empty() => Some(s.clone()),
                Value::Number(x) => Some(x.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                _ => None,
            };
            prop_assert_eq!(n.current_phase, text(&phase).unwrap_or("unknown".into()));
            prop_assert_eq!(n.active_agent, text(&agent));
            prop_assert_eq!(n.issue_type, text(&kind).unwrap_or("feature".into()));
            // The rule: a string of digits, whitespace around it ignored
            // (a shell's `"$(cmd)"` may leave a newline or tab there).
            let pr_want = match &pr {
                Value::String(s) if !s.trim().is_empty() && s.trim().chars().all(|c| c.is_ascii_digit()) => s.trim().parse::<u64>().ok(),
                Value::Number(x) => x.as_u64(),
                _ => None,
            };
            prop_assert_eq!(n.pr_number, pr_want);
            prop_assert_eq!(n.last_updated, text(&updated).or(text(&activity)));
            prop_assert_eq!(n.verdict.map(Verdict::as_str), oracle_verdict(&review, &qa));
        }

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
            set_field(&path, &issue("5"), &field, json!(value), "T").unwrap();
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
