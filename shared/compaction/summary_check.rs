//! Which decision-critical items a compaction summary dropped.
//!
//! A client's `PostCompact` event carries the summary the compaction
//! produced ([`crate::client::EventKind::PostCompact`]). [`dropped`] holds
//! it against the items the
//! PreCompact hook asked the summarizer to keep (the snapshot's [`Digest`])
//! and returns those the summary lost, so the next `SessionStart` (source
//! `compact`) can put them back first.
//!
//! An item counts as **kept** when its decisive content appears in the
//! summary; anything less counts as dropped. The rule leans to "dropped":
//! re-injecting an item the summary did keep costs a few lines, trusting a
//! summary that lost it costs the decision. Texts are compared normalized
//! (lower case, `*` and backticks removed, runs of white space as one space).
//!
//! | item | decisive content (kept when …) |
//! |---|---|
//! | approved plan | its identity: the first line of at least [`MIN_IDENTITY`] characters (list and heading marks removed), up to [`FRAGMENT`] characters cut at a word, appears |
//! | phase | in the issue's part of the summary, a line holds the word `phase` and the phase name as whole words (a phase `unknown` is not checked) |
//! | verdicts | in the issue's part, the overall verdict word (`PASS`/`FAIL`) appears as a whole word and its opposite does not (no overall verdict yet: not checked) |
//! | each pending decision | its first [`FRAGMENT`] characters, cut at a word, appear |
//! | failure context | its last line (the error), up to [`FRAGMENT`] characters cut at a word, appears; a last line shorter than [`MIN_IDENTITY`] brings the line before it along |
//! | git state | a line holds the word `branch` and the branch name as a whole word (detached or unknown: not checked) |
//! | each standing review finding | its message's first [`FRAGMENT`] characters, cut at a word, appear |
//!
//! The issue's part of the summary: the lines from one that names the issue
//! (`#42`, `issue 42`, `issue #42`; not `#420`, not `&#42;`) up to the next
//! line that names another of the digest's issues, a heading, or a numbered
//! top-level section (`2. Key Technical Concepts:`). A summary that never
//! names the issue keeps none of its phase and verdicts.

use serde::{Deserialize, Serialize};

#[cfg(test)]
use super::digest::PipelineDigest;
use super::digest::{head_tail, phase_text, verdicts_text, Digest};
use crate::findings::compaction::FindingLine;

/// The most characters of an item's text compared (a fragment of it).
pub const FRAGMENT: usize = 80;

/// The fewest characters of a line that identifies a plan or a failure.
pub const MIN_IDENTITY: usize = 16;

/// The most client characters of one dropped item's recorded text.
pub const MAX_ITEM_TEXT: usize = 1_200;

/// The kind of a decision-critical item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    ApprovedPlan,
    Phase,
    Verdicts,
    PendingDecision,
    FailureContext,
    Git,
    Finding,
}

impl ItemKind {
    /// The item's name as the re-injection says it.
    pub fn label(self) -> &'static str {
        match self {
            ItemKind::ApprovedPlan => "approved plan",
            ItemKind::Phase => "phase and iteration",
            ItemKind::Verdicts => "active verdicts",
            ItemKind::PendingDecision => "pending human decision",
            ItemKind::FailureContext => "failure context (current fix cycle)",
            ItemKind::Git => "git state",
            ItemKind::Finding => "review finding still to fix",
        }
    }
}

/// One item the summary dropped, with its text as the snapshot had it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedItem {
    /// The issue it belongs to (none for the git state).
    pub issue: Option<String>,
    pub kind: ItemKind,
    /// The item, as the re-injection shows it (within [`MAX_ITEM_TEXT`]).
    pub text: String,
}

/// What [`dropped`] found: the items checked and those the summary lost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Check {
    /// How many items had decisive content to look for.
    pub checked: usize,
    pub dropped: Vec<DroppedItem>,
}

/// The items of `digest` that `summary` dropped (see the module's table).
pub fn dropped(digest: &Digest, summary: &str) -> Check {
    let summary = Summary::new(summary, digest);
    let mut check = Check::default();
    let mut look = |kept: Option<bool>, issue: Option<&str>, kind, text: String| {
        if let Some(kept) = kept {
            check.checked += 1;
            if !kept {
                check.dropped.push(DroppedItem {
                    issue: issue.map(str::to_string),
                    kind,
                    text: recorded_text(&text),
                });
            }
        }
    };
    for p in &digest.pipelines {
        let issue = Some(p.issue.as_str());
        if let Some(plan) = &p.approved_plan {
            let kept = identity(&plan.text, false).map(|id| summary.contains(&id));
            look(
                kept,
                issue,
                ItemKind::ApprovedPlan,
                format!("({}) {}", plan.source, plan.text.trim()),
            );
        }
        let phase = normalize(&p.phase);
        let kept = (!phase.is_empty() && phase != "unknown")
            .then(|| summary.issue_line_has(&p.issue, &["phase"], &phase));
        look(kept, issue, ItemKind::Phase, phase_text(p));
        let kept = p.verdict.as_deref().and_then(|v| {
            let (word, opposite) = match v {
                "PASS" => ("pass", "fail"),
                "FAIL" => ("fail", "pass"),
                _ => return None,
            };
            Some(
                summary.issue_part_has_word(&p.issue, word)
                    && !summary.issue_part_has_word(&p.issue, opposite),
            )
        });
        look(kept, issue, ItemKind::Verdicts, verdicts_text(p));
        for d in &p.pending_decisions {
            let kept = fragment(&normalize(d)).map(|f| summary.contains(&f));
            look(kept, issue, ItemKind::PendingDecision, d.to_string());
        }
        if let Some(f) = &p.failure_context {
            let kept = identity(f, true).map(|id| summary.contains(&id));
            look(kept, issue, ItemKind::FailureContext, f.trim().to_string());
        }
        if let Some(found) = digest.findings.iter().find(|f| f.issue == p.issue) {
            for l in &found.standing {
                let kept = fragment(&normalize(&l.message)).map(|f| summary.contains(&f));
                look(kept, issue, ItemKind::Finding, finding_text(l));
            }
        }
    }
    if let Some(branch) = digest.git.branch.as_deref().filter(|b| !b.is_empty()) {
        let kept = summary.any_line_has(&["branch"], &normalize(branch));
        look(
            Some(kept),
            None,
            ItemKind::Git,
            format!(
                "branch {branch}, HEAD {}",
                digest.git.short_head().unwrap_or("?")
            ),
        );
    }
    check
}

/// An item's text as a [`DroppedItem`] records it: trimmed, within
/// [`MAX_ITEM_TEXT`] (head and tail).
pub fn recorded_text(text: &str) -> String {
    head_tail(text.trim(), MAX_ITEM_TEXT, "see the pipeline file")
}

fn finding_text(l: &FindingLine) -> String {
    let place = match l.line {
        Some(n) => format!("{}:{n}", l.file),
        None => l.file.clone(),
    };
    let severity = l.severity.as_deref().unwrap_or("unrated");
    format!(
        "[{severity}, {}] {place} — {} (#{})",
        l.status, l.message, l.id
    )
}

/// Lower case, `*` and backticks removed, white space runs as one space.
pub fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '*' | '`'))
        .flat_map(char::to_lowercase)
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// At most [`FRAGMENT`] characters of normalized `s`, cut after a whole
/// word when cut at all; none when `s` is empty.
fn fragment(s: &str) -> Option<String> {
    if s.is_empty() {
        return None;
    }
    let Some((at, _)) = s.char_indices().nth(FRAGMENT) else {
        return Some(s.to_string());
    };
    let head = &s[..at];
    let head = match head.rfind(' ') {
        Some(space) if space > 0 => &head[..space],
        _ => head,
    };
    Some(head.to_string())
}

/// The identifying fragment of a multi-line text: of a plan (`last` false)
/// its first line of at least [`MIN_IDENTITY`] characters, list and heading
/// marks removed (else the whole text); of a failure (`last` true) its last
/// line, with the one before it when the last is shorter than that.
fn identity(text: &str, last: bool) -> Option<String> {
    let lines: Vec<String> = text
        .lines()
        .map(|l| normalize(l.trim_start_matches(|c: char| "#->+ \t".contains(c))))
        .filter(|l| !l.is_empty())
        .collect();
    let line = if last {
        let n = lines.len();
        match lines.last() {
            Some(l) if l.chars().count() < MIN_IDENTITY && n > 1 => {
                format!("{} {l}", lines[n - 2])
            }
            Some(l) => l.clone(),
            None => return None,
        }
    } else {
        lines
            .iter()
            .find(|l| l.chars().count() >= MIN_IDENTITY)
            .cloned()
            .unwrap_or_else(|| lines.join(" "))
    };
    if last {
        // The end of the error matters most: keep its last words.
        let count = line.chars().count();
        if count > FRAGMENT {
            let (at, _) = line.char_indices().nth(count - FRAGMENT)?;
            let tail = &line[at..];
            let tail = tail.split_once(' ').map_or(tail, |(_, rest)| rest);
            return Some(tail.to_string());
        }
        return Some(line);
    }
    fragment(&line)
}

/// A summary, normalized, with each line's issue attribution.
struct Summary {
    whole: String,
    /// Normalized lines, each with the digest issues whose part it is in.
    lines: Vec<(String, Vec<String>)>,
}

impl Summary {
    fn new(text: &str, digest: &Digest) -> Summary {
        let issues: Vec<&str> = digest.pipelines.iter().map(|p| p.issue.as_str()).collect();
        let mut current: Vec<String> = Vec::new();
        let lines = text
            .lines()
            .map(|raw| {
                let line = normalize(raw);
                let named: Vec<String> = issues
                    .iter()
                    .filter(|i| names_issue(&line, i))
                    .map(|i| i.to_string())
                    .collect();
                if !named.is_empty() {
                    current = named;
                } else if starts_section(raw) {
                    current.clear();
                }
                (line, current.clone())
            })
            .collect();
        Summary {
            whole: normalize(text),
            lines,
        }
    }

    fn contains(&self, fragment: &str) -> bool {
        self.whole.contains(fragment)
    }

    fn issue_lines<'a>(&'a self, issue: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.lines
            .iter()
            .filter(move |(_, part)| part.iter().any(|i| i == issue))
            .map(|(l, _)| l.as_str())
    }

    fn issue_line_has(&self, issue: &str, keywords: &[&str], value: &str) -> bool {
        self.issue_lines(issue)
            .any(|l| keywords.iter().all(|k| has_word(l, k)) && has_word(l, value))
    }

    fn issue_part_has_word(&self, issue: &str, word: &str) -> bool {
        self.issue_lines(issue).any(|l| has_word(l, word))
    }

    fn any_line_has(&self, keywords: &[&str], value: &str) -> bool {
        self.lines
            .iter()
            .any(|(l, _)| keywords.iter().all(|k| has_word(l, k)) && has_word(l, value))
    }
}

/// A heading or a numbered top-level section starts a new part.
fn starts_section(raw: &str) -> bool {
    let heading = raw.starts_with('#') && {
        let marks = raw.bytes().take_while(|b| *b == b'#').count();
        raw[marks..].starts_with(' ')
    };
    let digits = raw.bytes().take_while(u8::is_ascii_digit).count();
    heading || (digits > 0 && raw[digits..].starts_with(". "))
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `needle` in `hay` with no word character just before or after it.
fn has_word(hay: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    hay.match_indices(needle).any(|(at, _)| {
        let before = hay[..at].chars().next_back();
        let after = hay[at + needle.len()..].chars().next();
        let starts = needle.chars().next().is_some_and(is_word_char);
        let ends = needle.chars().next_back().is_some_and(is_word_char);
        let glued_before = starts && before.is_some_and(is_word_char);
        let glued_after = ends && after.is_some_and(is_word_char);
        !glued_before && !glued_after
    })
}

/// True when a normalized line names `issue`: `#42` (not `#420`, not the
/// character reference `&#42;`), `issue 42`, `issue #42`.
fn names_issue(line: &str, issue: &str) -> bool {
    let hash = format!("#{issue}");
    let by_hash = line.match_indices(&hash).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + hash.len()..].chars().next();
        before != Some('&') && !after.is_some_and(|c| c.is_ascii_digit())
    });
    by_hash || has_word(line, &format!("issue {issue}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::compaction::IssueFindings;
    use crate::git::GitState;
    use crate::pipeline::ApprovedPlan;

    const PLAN: &str =
        "# Plan\nMigrate the checkout totals to integer cents\n1. add a cents column\n";
    const DECISION: &str = "Ship behind a flag, or wait for the migration?";
    const FAILURE: &str =
        "running 12 tests\n...\ntest_checkout_total: expected 10.00, got 9.99\nFAILED";

    fn pipeline(issue: &str, verdict: &str) -> PipelineDigest {
        PipelineDigest {
            issue: issue.into(),
            issue_type: "feature".into(),
            phase: "fixing".into(),
            active_agent: Some("builder".into()),
            cycles: crate::pipeline::Cycles {
                review_passed: Some(true),
                qa_passed: Some(verdict == "PASS"),
                ..Default::default()
            },
            verdict: Some(verdict.into()),
            pending_decisions: vec![DECISION.into()],
            failure_context: Some(FAILURE.into()),
            approved_plan: Some(ApprovedPlan {
                source: format!("{issue}-compact-plan.md"),
                text: PLAN.into(),
            }),
            ..PipelineDigest::default()
        }
    }

    fn digest(pipelines: Vec<PipelineDigest>) -> Digest {
        Digest {
            pipelines,
            git: GitState {
                branch: Some("quince-topic".into()),
                head: Some("0123456789abcdef".into()),
                ..GitState::default()
            },
            ..Digest::default()
        }
    }

    fn kinds(check: &Check) -> Vec<(Option<&str>, ItemKind)> {
        check
            .dropped
            .iter()
            .map(|d| (d.issue.as_deref(), d.kind))
            .collect()
    }

    #[test]
    fn a_summary_that_carries_every_item_drops_none() {
        let summary = "<summary>\n1. Primary Request: pipeline work.\n\
            2. Pipeline state:\n### Issue #42\n- **Phase**: fixing (builder)\n\
            - Verdict: review passed, QA failed; overall **FAIL**\n\
            - Plan: Migrate the checkout totals to integer cents\n\
            - Pending: ship behind a flag, or wait for the migration?\n\
            - Failure: `test_checkout_total: expected 10.00, got 9.99` FAILED\n\
            - On branch quince-topic\n</summary>";
        let check = dropped(&digest(vec![pipeline("42", "FAIL")]), summary);
        assert_eq!(kinds(&check), vec![]);
        assert_eq!(check.checked, 6);
    }

    #[test]
    fn a_summary_that_carries_nothing_drops_every_item() {
        let check = dropped(
            &digest(vec![pipeline("42", "FAIL")]),
            "<summary>We chatted about fruit.</summary>",
        );
        let k = |kind| (Some("42"), kind);
        assert_eq!(
            kinds(&check),
            vec![
                k(ItemKind::ApprovedPlan),
                k(ItemKind::Phase),
                k(ItemKind::Verdicts),
                k(ItemKind::PendingDecision),
                k(ItemKind::FailureContext),
                (None, ItemKind::Git),
            ]
        );
        assert!(check.dropped[0].text.contains("42-compact-plan.md"));
        assert_eq!(
            check.dropped[2].text,
            "review passed, QA failed; overall FAIL"
        );
        assert!(check.dropped[1]
            .text
            .starts_with("fixing, active agent builder"));
    }

    #[test]
    fn the_verdict_of_another_issue_is_not_this_ones() {
        // #42 FAILs; the summary only says #7 FAILs and #42 is in review.
        let d = digest(vec![pipeline("42", "FAIL"), pipeline("7", "FAIL")]);
        let summary = "Issue #42 is being fixed; phase: fixing.\n\
            Issue #7: verdict FAIL, phase fixing.";
        let check = dropped(&d, summary);
        let verdicts: Vec<_> = check
            .dropped
            .iter()
            .filter(|i| i.kind == ItemKind::Verdicts)
            .map(|i| i.issue.as_deref())
            .collect();
        assert_eq!(verdicts, [Some("42")]);
        assert!(!kinds(&check).contains(&(Some("42"), ItemKind::Phase)));
        assert!(!kinds(&check).contains(&(Some("7"), ItemKind::Phase)));
    }

    #[test]
    fn false_positive_traps_count_as_dropped() {
        let d = digest(vec![pipeline("42", "FAIL")]);
        for (trap, kind) in [
            // A longer number, a character reference: not issue 42.
            (
                "Issue #420: phase fixing, verdict FAIL.",
                ItemKind::Verdicts,
            ),
            ("&#42; phase fixing, verdict FAIL.", ItemKind::Phase),
            // Both verdict words: which one is #42's is unknown.
            ("#42: PASS on review, FAIL overall?", ItemKind::Verdicts),
            // "failed" is not the verdict word FAIL.
            ("#42: the QA run failed.", ItemKind::Verdicts),
            // The phase word without "phase", or "prefixing" for "fixing".
            ("#42 was fixing things.", ItemKind::Phase),
            ("#42 phase: prefixing", ItemKind::Phase),
            // The issue's part ends at the next section.
            (
                "#42 discussed.\n3. Phase: fixing, verdict FAIL",
                ItemKind::Verdicts,
            ),
            // Only the plan's heading, not its identity.
            ("#42 Plan: see the file.", ItemKind::ApprovedPlan),
            // A decision half quoted.
            (
                "#42 pending: ship behind a flag.",
                ItemKind::PendingDecision,
            ),
            // The start of the failure log, not its error.
            ("#42 failure: running 12 tests", ItemKind::FailureContext),
            // The branch name as a plain word, not as the branch.
            ("We ate a quince-topic pie.", ItemKind::Git),
        ] {
            let check = dropped(&d, trap);
            assert!(
                check.dropped.iter().any(|i| i.kind == kind),
                "{trap:?} should not keep {kind:?}"
            );
        }
    }

    #[test]
    fn a_heading_names_the_issue_for_the_lines_below_it() {
        let d = digest(vec![pipeline("42", "PASS")]);
        let summary = "## Issue 42\n\n- phase: FIXING\n- overall: pass\n";
        let check = dropped(&d, summary);
        assert!(!kinds(&check).contains(&(Some("42"), ItemKind::Phase)));
        assert!(!kinds(&check).contains(&(Some("42"), ItemKind::Verdicts)));
    }

    #[test]
    fn long_errors_are_matched_by_their_end() {
        let mut p = pipeline("42", "FAIL");
        let long = format!("{} the final assertion failed here", "x ".repeat(100));
        p.failure_context = Some(format!("log\n{long}"));
        let d = digest(vec![p]);
        let end = &long[long.len() - 90..];
        assert!(!kinds(&dropped(&d, end)).contains(&(Some("42"), ItemKind::FailureContext)));
        let start = &long[..60];
        assert!(kinds(&dropped(&d, start)).contains(&(Some("42"), ItemKind::FailureContext)));
    }

    #[test]
    fn standing_findings_are_checked_one_by_one() {
        let mut d = digest(vec![pipeline("42", "FAIL")]);
        let finding = |id, message: &str| FindingLine {
            id,
            status: "open".into(),
            severity: Some("high".into()),
            file: "src/a.rs".into(),
            line: Some(3),
            message: message.into(),
        };
        d.findings = vec![IssueFindings {
            issue: "42".into(),
            standing: vec![
                finding(1, "SQL built from user input"),
                finding(2, "Missing bound on retries"),
            ],
            standing_count: 2,
            ..IssueFindings::default()
        }];
        let check = dropped(&d, "Still open: SQL built from user input.");
        let findings: Vec<_> = check
            .dropped
            .iter()
            .filter(|i| i.kind == ItemKind::Finding)
            .map(|i| i.text.as_str())
            .collect();
        assert_eq!(
            findings,
            ["[high, open] src/a.rs:3 — Missing bound on retries (#2)"]
        );
    }

    #[test]
    fn items_without_decisive_content_are_not_checked() {
        let p = PipelineDigest {
            issue: "9".into(),
            phase: "unknown".into(),
            ..PipelineDigest::default()
        };
        let check = dropped(
            &Digest {
                pipelines: vec![p],
                ..Digest::default()
            },
            "",
        );
        assert_eq!(check, Check::default());
    }

    #[test]
    fn recorded_texts_are_bounded() {
        let mut p = pipeline("42", "FAIL");
        p.failure_context = Some("é".repeat(50_000));
        let check = dropped(&digest(vec![p]), "");
        let failure = check
            .dropped
            .iter()
            .find(|i| i.kind == ItemKind::FailureContext)
            .unwrap();
        // The text within the bound, and the cut's note besides.
        assert!(crate::client_text::client_len(&failure.text) <= MAX_ITEM_TEXT + 100);
    }
}
