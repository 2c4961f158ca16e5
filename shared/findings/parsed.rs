//! What the parsers of the three sources share: the [`Parsed`] result they
//! return, and the pieces of JSON reading they phrase errors and lines with.

use serde_json::Value;

use super::finding::Reported;

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

/// A JSON parse error as one line naming where it is.
pub fn json_error(e: &serde_json::Error) -> String {
    format!(
        "malformed JSON at line {} column {}: {e}",
        e.line(),
        e.column()
    )
}

/// A line number from a number or a string (`"42"`, `"42-48"`: the first).
pub fn line_of(v: Option<&Value>) -> Option<u32> {
    match v? {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => {
            let digits: String = s
                .trim()
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            digits.parse().ok()
        }
        _ => None,
    }
}
