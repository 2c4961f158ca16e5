//! Relevance to an issue: the issue's context as an FTS5 query, and each
//! pattern's match against it.
//!
//! The context of issue N is what its pipeline state says it is about: the
//! `failure_context` of the current fix cycle, its `title` (a field a
//! pipeline may keep, passed through like any other), and its approved
//! plan (the companion `N-compact-plan.json` or `.md`, else the field
//! `approved_plan`), read from `state/pipeline/`. Its words (letters and
//! digits, three or more, function words left out, each once, at most
//! [`MAX_TERMS`], in that order of sources) become one FTS5 `OR` query;
//! FTS5's porter stemmer matches `failing` with `failed`. A pattern's
//! relevance is its bm25 over the best match's: 1 for the best, towards 0
//! for weaker matches, 0 for none.

use std::collections::HashMap;
use std::path::Path;

use super::normalize::FUNCTION_WORDS;
use super::store::{Memory, Result};
use crate::pipeline::{approved_plan, IssueNumber, PipelineDoc, MAX_PIPELINE_FILE};
use crate::state_dir::layout::PIPELINE_DIR;

/// The most words of the context put in the query.
pub const MAX_TERMS: usize = 48;

/// The largest plan read for its words.
const MAX_PLAN: u64 = 256 * 1024;

/// What issue `n` is about, as text (empty when its pipeline file says
/// nothing or cannot be read).
pub fn issue_context(state: &Path, n: u64) -> String {
    let Ok(issue) = IssueNumber::parse(&n.to_string()) else {
        return String::new();
    };
    let dir = state.join(PIPELINE_DIR);
    let doc = crate::state_dir::read_state_file(&dir.join(issue.file_name()), MAX_PIPELINE_FILE)
        .ok()
        .and_then(|bytes| PipelineDoc::parse(issue.clone(), &bytes).ok());
    let normalized = doc.as_ref().map(PipelineDoc::normalized);
    let mut parts: Vec<String> = Vec::new();
    if let Some(f) = normalized.as_ref().and_then(|n| n.failure_context.clone()) {
        parts.push(f);
    }
    if let Some(doc) = &doc {
        for field in ["title", "issue_title"] {
            if let Some(t) = doc.field(field).and_then(|v| v.as_str()) {
                parts.push(t.to_string());
            }
        }
    }
    if let Some(plan) = approved_plan(&dir, &issue, normalized.as_ref()) {
        let mut text = plan.text;
        if text.len() as u64 > MAX_PLAN {
            let mut end = MAX_PLAN as usize;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        parts.push(text);
    }
    parts.join("\n")
}

/// The FTS5 query of a context: its words, quoted, joined by `OR`; none
/// when it has no words.
pub fn query(context: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in context.split(|c: char| !c.is_alphanumeric()) {
        if terms.len() >= MAX_TERMS {
            break;
        }
        let w: String = word.chars().flat_map(char::to_lowercase).collect();
        if w.chars().count() < 3 || FUNCTION_WORDS.contains(&w.as_str()) || terms.contains(&w) {
            continue;
        }
        terms.push(w);
    }
    (!terms.is_empty()).then(|| {
        terms
            .iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(" OR ")
    })
}

/// Each matching pattern's relevance to `context` (see the module docs).
pub fn relevance(memory: &Memory, context: &str) -> Result<HashMap<i64, f64>> {
    let Some(q) = query(context) else {
        return Ok(HashMap::new());
    };
    let matches = memory.matches(&q)?;
    // bm25 is negative, lower is better.
    let best = matches.values().copied().fold(0.0f64, f64::min);
    Ok(matches
        .into_iter()
        .map(|(id, bm25)| (id, if best < 0.0 { bm25 / best } else { 0.0 }))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_quotes_distinct_words() {
        assert_eq!(
            query("The exit-code of jkz; the EXIT code!").as_deref(),
            Some("\"exit\" OR \"code\" OR \"jkz\"")
        );
        assert_eq!(query("a, to, of"), None);
    }
}
