//! Reading what a source reported: the input's bound, the three sources'
//! shapes, and the errors that refuse an input before anything is stored.
//!
//! | source | input |
//! |---|---|
//! | `coderabbit` | the JSON GitHub returns for a pull request's review comments (`gh api repos/O/R/pulls/N/comments`, also `--paginate`'s arrays back to back): see [`super::coderabbit`] |
//! | `verdict` | a text holding a `verdict-json` block (or the block's JSON object itself) with a `findings`, `blockers` or `concerns` array: see [`super::reported`] |
//! | `jg` | a `review-result.json` (`blockers`, `concerns`, `nits`) or `test-result.json` (`failures`) object: see [`super::reported`] |

use std::io::Read;

use super::finding::Reported;

/// The largest input read: 16 MiB, ten times a review of a few thousand
/// comments. A larger one is refused, never read whole.
pub const MAX_INPUT: u64 = 16 * 1024 * 1024;

/// Who reported the findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Source {
    /// A pull request's review comments, as the GitHub API returns them.
    Coderabbit,
    /// A `verdict-json` block (a pipeline agent's verdict).
    Verdict,
    /// A `review-result.json` or `test-result.json`.
    Jg,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Coderabbit => "coderabbit",
            Source::Verdict => "verdict",
            Source::Jg => "jg",
        }
    }
}

/// What an input reported, ready to store.
#[derive(Debug, Default)]
pub struct Parsed {
    pub findings: Vec<Reported>,
    /// What was read but is not a finding (replies whose thread is not in
    /// the input, comments marked addressed), one line each.
    pub notes: Vec<String>,
    /// The role a jg input stands for when `--role` is not given:
    /// `review` or `test`, from its shape.
    pub default_role: Option<&'static str>,
}

/// Reads all of `input`, refusing more than [`MAX_INPUT`] bytes.
pub fn read_bounded(input: impl Read, name: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    input
        .take(MAX_INPUT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading {name}: {e}"))?;
    if bytes.len() as u64 > MAX_INPUT {
        return Err(format!(
            "{name} is larger than {} MiB ({MAX_INPUT} bytes), the most `jkz findings import` reads: import one review's comments, or split the input",
            MAX_INPUT / (1024 * 1024)
        ));
    }
    Ok(bytes)
}

/// Parses an input of `source`; an error names what is wrong and where.
pub fn parse(source: Source, bytes: &[u8]) -> Result<Parsed, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("the input is empty".into());
    }
    match source {
        Source::Coderabbit => super::coderabbit::parse(bytes),
        Source::Verdict => super::reported::parse_verdict(bytes),
        Source::Jg => super::reported::parse_jg(bytes),
    }
}

/// A JSON parse error as one line naming where it is.
pub fn json_error(e: &serde_json::Error) -> String {
    format!(
        "malformed JSON at line {} column {}: {e}",
        e.line(),
        e.column()
    )
}

/// What a JSON value is, for "expected X, got Y".
pub fn kind_of(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
