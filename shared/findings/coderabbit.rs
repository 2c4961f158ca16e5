//! The `coderabbit` source: a pull request's review comments as the GitHub
//! API returns them (`gh api repos/O/R/pulls/N/comments`; with
//! `--paginate`, its arrays back to back are read as one).
//!
//! Each comment is an object with `id`, `path`, `line` (null once the code
//! moved; then `original_line`), `start_line` for a range, `body`,
//! `user.login` and, for a reply, `in_reply_to_id`. A comment without a
//! `path` or a `body` refuses the input.
//!
//! - A reply folds into its thread (kept with the finding for display,
//!   never a finding of its own); a reply whose thread is not in the input
//!   is noted and skipped.
//! - A comment CodeRabbit marked as addressed (`✅ Addressed in commit …`)
//!   is not a sighting: the reviewer says it is resolved.
//! - The bot's boilerplate is not part of the finding: the severity badge
//!   line (`_⚠️ Potential issue_ | _🟠 Major_`) gives the severity;
//!   `<details>` blocks (suggested fixes, committable suggestions, prompts
//!   for AI agents, tool output) and HTML comments are removed; the
//!   suggestion inside them (a ```` ```suggestion ```` fence, else a
//!   ```` ```diff ````) is kept for display. The finding's message is the
//!   first paragraph left (its bold title, usually); the rest is its
//!   detail.

use std::collections::HashMap;

use serde_json::Value;

use super::finding::{bounded, Reported, Severity, MAX_MESSAGE, MAX_REPLIES, MAX_TEXT};
use super::identity::normalize_path;
use super::parsed::{json_error, line_of, Parsed};
use crate::json_type::json_type;

/// Parses the comments export.
pub fn parse(bytes: &[u8]) -> Result<Parsed, String> {
    let mut comments = Vec::new();
    for value in serde_json::Deserializer::from_slice(bytes).into_iter::<Value>() {
        match value.map_err(|e| json_error(&e))? {
            Value::Array(items) => comments.extend(items),
            Value::Object(o) if o.contains_key("message") => {
                return Err(format!(
                    "the input is GitHub's error answer ({:?}), not review comments",
                    o["message"].as_str().unwrap_or_default()
                ))
            }
            other => {
                return Err(format!(
                    "expected the JSON array GitHub returns for a pull request's review comments (gh api repos/OWNER/REPO/pulls/N/comments), got {}",
                    json_type(&other)
                ))
            }
        }
    }
    let mut parsed = Parsed::default();
    // Thread roots by comment id, and the replies to fold in after.
    let mut roots: HashMap<u64, usize> = HashMap::new();
    // Thread starts that are not findings (addressed, or boilerplate only):
    // their replies go with them.
    let mut skipped: std::collections::HashSet<u64> = Default::default();
    let mut reply_to: HashMap<u64, u64> = HashMap::new();
    let mut replies: Vec<(usize, u64, String)> = Vec::new();
    let mut addressed = 0;
    let mut empty = 0;
    for (i, c) in comments.iter().enumerate() {
        let Value::Object(c) = c else {
            return Err(format!(
                "comments[{i}] is {}, expected a review comment object",
                json_type(c)
            ));
        };
        let id = c.get("id").and_then(Value::as_u64);
        let at = match id {
            Some(id) => format!("comments[{i}] (id {id})"),
            None => format!("comments[{i}]"),
        };
        let path = c
            .get("path")
            .and_then(Value::as_str)
            .and_then(normalize_path)
            .ok_or_else(|| {
                format!("{at} has no path: a review comment is about a file (is this a pull request's review comments?)")
            })?;
        let body = c
            .get("body")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{at} has no body"))?;
        let author = c
            .get("user")
            .and_then(|u| u.get("login"))
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(parent) = c.get("in_reply_to_id").and_then(Value::as_u64) {
            if let Some(id) = id {
                reply_to.insert(id, parent);
            }
            let who = author.as_deref().unwrap_or("someone");
            let text = clean(body).text_for_reply();
            replies.push((i, parent, format!("{who}: {}", bounded(&text, MAX_TEXT))));
            continue;
        }
        let cleaned = clean(body);
        if cleaned.addressed {
            addressed += 1;
            skipped.extend(id);
            continue;
        }
        let Some(message) = cleaned.message else {
            empty += 1;
            skipped.extend(id);
            continue;
        };
        if let Some(id) = id {
            roots.insert(id, parsed.findings.len());
        }
        parsed.findings.push(Reported {
            file: path,
            line: line_of(c.get("start_line"))
                .or_else(|| line_of(c.get("line")))
                .or_else(|| line_of(c.get("original_start_line")))
                .or_else(|| line_of(c.get("original_line"))),
            message: bounded(&message, MAX_MESSAGE),
            detail: cleaned.detail.map(|d| bounded(&d, MAX_TEXT)),
            severity: cleaned.severity,
            suggestion: cleaned.suggestion.map(|s| bounded(&s, MAX_TEXT)),
            author,
            reference: id.map(|id| id.to_string()),
            replies: Vec::new(),
        });
    }
    let mut orphans = 0;
    for (_, parent, text) in replies {
        // Follow a reply to a reply up to its thread's first comment.
        let mut root = parent;
        for _ in 0..64 {
            match reply_to.get(&root) {
                Some(&up) => root = up,
                None => break,
            }
        }
        match roots.get(&root) {
            Some(&k) if parsed.findings[k].replies.len() < MAX_REPLIES => {
                parsed.findings[k].replies.push(text)
            }
            Some(_) => {}
            None if skipped.contains(&root) => {}
            None => orphans += 1,
        }
    }
    if addressed > 0 {
        parsed.notes.push(format!(
            "{addressed} comment{} marked addressed by the reviewer: not sightings (they resolve)",
            plural(addressed)
        ));
    }
    if empty > 0 {
        parsed.notes.push(format!(
            "{empty} comment{} with no text besides CodeRabbit's boilerplate skipped",
            plural(empty)
        ));
    }
    if orphans > 0 {
        parsed.notes.push(format!(
            "{orphans} repl{} whose thread is not in the input skipped",
            if orphans == 1 { "y" } else { "ies" }
        ));
    }
    Ok(parsed)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A comment's body without the boilerplate.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cleaned {
    pub message: Option<String>,
    pub detail: Option<String>,
    pub severity: Option<Severity>,
    pub suggestion: Option<String>,
    pub addressed: bool,
}

impl Cleaned {
    fn text_for_reply(&self) -> String {
        match (&self.message, &self.detail) {
            (Some(m), Some(d)) => format!("{m} {d}"),
            (Some(m), None) => m.clone(),
            _ => String::new(),
        }
    }
}

/// Separates what the reviewer said from CodeRabbit's boilerplate.
pub fn clean(body: &str) -> Cleaned {
    let addressed = body.contains("<!-- <review_comment_addressed> -->")
        || body
            .lines()
            .any(|l| l.trim_start().starts_with("✅ Addressed in commit"));
    let text = body.replace("\r\n", "\n");
    let text = without_html_comments(&text);
    let (text, mut suggestions) = without_details(&text);
    let (text, outside) = without_suggestion_fences(&text);
    suggestions.extend(outside);
    let mut severity: Option<Severity> = None;
    let mut kept: Vec<&str> = Vec::new();
    let mut leading = true;
    for line in text.lines() {
        if leading {
            if line.trim().is_empty() {
                continue;
            }
            if let Some(s) = badge_severity(line) {
                severity = match (severity, s) {
                    (None, s) => s,
                    // An explicit level (🟠 Major) beats the category's.
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, None) => a,
                };
                continue;
            }
            leading = false;
        }
        kept.push(line);
    }
    let rest = kept.join("\n");
    let rest = rest.trim();
    let (head, detail) = match rest.split_once("\n\n") {
        Some((h, d)) => (h, Some(d.trim().to_string()).filter(|d| !d.is_empty())),
        None => (rest, None),
    };
    let head = head.split_whitespace().collect::<Vec<_>>().join(" ");
    let head = strip_bold(&head);
    // The committable suggestion is the one to show; else the first diff.
    suggestions.sort_by_key(|(info, _)| if info == "suggestion" { 0 } else { 1 });
    Cleaned {
        message: (!head.is_empty()).then_some(head),
        detail,
        severity,
        suggestion: suggestions.into_iter().next().map(|(_, s)| s),
        addressed,
    }
}

/// `**Title.**` → `Title.` (a headline in bold, CodeRabbit's habit).
fn strip_bold(s: &str) -> String {
    let t = s.trim();
    match t.strip_prefix("**").and_then(|r| r.strip_suffix("**")) {
        Some(inner) if !inner.contains("**") => inner.trim().to_string(),
        _ => t.to_string(),
    }
}

/// The severity a badge line names: `Some(None)` for a badge line with no
/// severity jkz knows, `None` for a line that is not a badge line. A badge
/// line is one or more italic labels (`_…_` or `*…*`, not bold) of a few
/// words, each with an emoji or a severity word, separated by `|`.
fn badge_severity(line: &str) -> Option<Option<Severity>> {
    let mut found: Option<Severity> = None;
    for part in line.split('|') {
        let p = part.trim();
        if p.starts_with("**") || p.starts_with("__") {
            return None;
        }
        let inner = ["_", "*"].iter().find_map(|m| {
            p.strip_prefix(m)
                .and_then(|r| r.strip_suffix(m))
                .filter(|r| !r.is_empty())
        })?;
        let severity = Severity::parse(inner);
        let emoji = inner.chars().any(|c| !c.is_ascii() && !c.is_alphanumeric());
        if inner.split_whitespace().count() > 4 || !(emoji || severity.is_some()) {
            return None;
        }
        if let Some(s) = severity {
            found = Some(found.map_or(s, |f| f.min(s)));
        }
    }
    Some(found)
}

/// `text` without `<!-- … -->` comments (an unclosed one runs to the end).
fn without_html_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("<!--") {
        out.push_str(&rest[..open]);
        match rest[open..].find("-->") {
            Some(close) => rest = &rest[open + close + 3..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}

/// `text` without its `<details>` blocks (nested ones inside them), and the
/// suggestions found in the removed blocks: (fence info, content).
fn without_details(text: &str) -> (String, Vec<(String, String)>) {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut suggestions = Vec::new();
    let mut from = 0;
    while let Some(rel) = lower[from..].find("<details") {
        let start = from + rel;
        out.push_str(&text[from..start]);
        // Find the matching close, counting nested opens.
        let mut depth = 0usize;
        let mut at = start;
        let mut end = text.len();
        loop {
            let next_open = lower[at..].find("<details").map(|i| at + i);
            let next_close = lower[at..].find("</details>").map(|i| at + i);
            match (next_open, next_close) {
                (Some(o), Some(c)) if o < c => {
                    depth += 1;
                    at = o + "<details".len();
                }
                (_, Some(c)) => {
                    depth -= 1;
                    at = c + "</details>".len();
                    if depth == 0 {
                        end = at;
                        break;
                    }
                }
                (_, None) => break,
            }
        }
        let block = &text[start..end];
        let summary = summary_of(block).to_lowercase();
        if ["suggest", "fix", "diff", "change"]
            .iter()
            .any(|w| summary.contains(w))
        {
            suggestions.extend(
                fences(block)
                    .into_iter()
                    .filter(|(info, _)| info == "suggestion" || info == "diff"),
            );
        }
        from = end;
    }
    out.push_str(&text[from..]);
    (out, suggestions)
}

/// The text of a `<details>` block's first `<summary>`.
fn summary_of(block: &str) -> &str {
    let lower = block.to_ascii_lowercase();
    let Some(open) = lower.find("<summary>") else {
        return "";
    };
    let from = open + "<summary>".len();
    let to = lower[from..]
        .find("</summary>")
        .map_or(block.len(), |i| from + i);
    &block[from..to]
}

/// `text` without its ```` ```suggestion ```` fences, and their contents.
fn without_suggestion_fences(text: &str) -> (String, Vec<(String, String)>) {
    let mut out = String::with_capacity(text.len());
    let mut found = Vec::new();
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        match fence_open(line) {
            Some((marker, info)) if info == "suggestion" => {
                let mut content = String::new();
                for inner in lines.by_ref() {
                    if is_fence_close(inner, &marker) {
                        break;
                    }
                    content.push_str(inner);
                }
                found.push((info, content));
            }
            _ => out.push_str(line),
        }
    }
    (out, found)
}

/// Every fenced block in `text`: (info's first word, lowercased; content).
fn fences(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        if let Some((marker, info)) = fence_open(line) {
            let mut content = String::new();
            for inner in lines.by_ref() {
                if is_fence_close(inner, &marker) {
                    break;
                }
                content.push_str(inner);
            }
            found.push((info, content));
        }
    }
    found
}

/// A fence's opening line: its marker (the run of ``` ` ``` or `~`) and
/// its info string's first word, lowercased.
fn fence_open(line: &str) -> Option<(String, String)> {
    let t = line.trim_start();
    if line.len() - t.len() > 3 {
        return None;
    }
    let c = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = t.chars().take_while(|x| *x == c).count();
    if n < 3 {
        return None;
    }
    let info = t[n..]
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_lowercase();
    Some((t[..n].to_string(), info))
}

fn is_fence_close(line: &str, marker: &str) -> bool {
    let t = line.trim();
    let c = marker.chars().next().unwrap_or('`');
    t.len() >= marker.len() && t.chars().all(|x| x == c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "_⚠️ Potential issue_ | _🟠 Major_\n\n**Round after converting to cents, not before.**\n\n`amount` is rounded to whole units on line 88, so `0.5` cents are lost.\n\n<details>\n<summary>🐛 Proposed fix</summary>\n\n```diff\n-let cents = (amount.round() * 100.0) as i64;\n+let cents = (amount * 100.0).round() as i64;\n```\n</details>\n\n<!-- suggestion_start -->\n\n<details>\n<summary>📝 Committable suggestion</summary>\n\n> ‼️ **IMPORTANT**\n> Carefully review the code before committing.\n\n```suggestion\n    let cents = (amount * 100.0).round() as i64;\n```\n\n</details>\n\n<!-- suggestion_end -->\n\n<details>\n<summary>🤖 Prompt for AI Agents</summary>\n\n```\nIn src/pay.rs around line 88, round after converting.\n```\n\n</details>\n\n<!-- fingerprinting:phantom:medusa:falcon -->\n\n<!-- This is an auto-generated comment by CodeRabbit -->";

    #[test]
    fn boilerplate_is_removed_and_the_suggestion_kept() {
        let c = clean(BODY);
        assert_eq!(
            c.message.as_deref(),
            Some("Round after converting to cents, not before.")
        );
        assert_eq!(c.severity, Some(Severity::Major));
        assert_eq!(
            c.suggestion.as_deref(),
            Some("    let cents = (amount * 100.0).round() as i64;\n")
        );
        let detail = c.detail.unwrap();
        assert!(detail.starts_with("`amount` is rounded"), "{detail}");
        assert!(
            !detail.contains("Prompt for AI") && !detail.contains("<!--"),
            "{detail}"
        );
        assert!(!c.addressed);
    }

    #[test]
    fn badges_and_addressed_marks() {
        assert_eq!(badge_severity("_🧹 Nitpick_"), Some(Some(Severity::Nit)));
        assert_eq!(
            badge_severity("_🛠️ Refactor suggestion_ | _🔴 Critical_"),
            Some(Some(Severity::Critical))
        );
        assert_eq!(badge_severity("**Fix this.**"), None);
        assert_eq!(
            badge_severity("_💡 Verification agent_"),
            Some(Some(Severity::Minor))
        );
        assert_eq!(badge_severity("_see below_"), None);
        assert_eq!(badge_severity("Plain text"), None);
        let c = clean("_⚠️ Potential issue_\n\n**X.**\n\n✅ Addressed in commit abc1234");
        assert!(c.addressed);
    }
}
