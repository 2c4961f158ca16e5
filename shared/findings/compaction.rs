//! What the compaction hooks say of findings.
//!
//! Open findings are decision-critical ("what is still wrong"); resolved
//! ones are what the summarizer may drop. For each pipeline the digest
//! details, `jkz-pre-compact` lists the issue's new, open and reintroduced
//! findings — most severe first, as many as its budget holds — and names
//! the resolved ones as safe to drop; `jkz-session-start` re-injects the
//! standing ones (the resolved are counted only). Both read the history
//! read-only: a hook never creates it, and a history that cannot be read
//! costs one line on stderr, never the hook's answer.

use serde::{Deserialize, Serialize};

use super::finding::bounded;
use super::status::Status;
use super::store::{FindingRow, Store, DB_FILE};
use crate::outside_text;
use crate::state_dir::StateDir;

/// The most client characters a finding's place (path and line) shows.
const PLACE_CHARS: usize = 160;

/// The most standing findings a digest keeps per issue.
pub const MAX_STANDING: usize = 20;
/// The most resolved findings a digest names per issue.
pub const MAX_RESOLVED: usize = 20;
/// The most bytes of one finding's message a digest keeps.
pub const MAX_MESSAGE: usize = 400;

/// The statuses that must survive a compaction.
pub const STANDING: [Status; 3] = [Status::Reintroduced, Status::New, Status::Open];

/// Who the digest is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audience {
    /// PreCompact's instructions: standing findings, and the resolved named
    /// as safe to drop.
    Summarizer,
    /// SessionStart's re-injection: standing findings only.
    Reinjection,
}

/// One finding as a digest shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingLine {
    pub id: i64,
    pub status: String,
    pub severity: Option<String>,
    pub file: String,
    pub line: Option<u32>,
    pub message: String,
}

impl FindingLine {
    fn of(r: &FindingRow) -> FindingLine {
        FindingLine {
            id: r.id,
            status: r.status.name().to_string(),
            severity: r.severity.map(|s| s.name().to_string()),
            file: r.file.clone(),
            line: r.line,
            message: bounded(&one_line(&r.message), MAX_MESSAGE),
        }
    }

    fn place(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l}", self.file),
            None => self.file.clone(),
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The findings of one issue a digest carries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueFindings {
    pub issue: String,
    pub latest_iteration: Option<u32>,
    /// New, open and reintroduced findings, most severe first.
    pub standing: Vec<FindingLine>,
    pub standing_count: usize,
    /// Resolved findings, most recently seen first (none for SessionStart).
    pub resolved: Vec<FindingLine>,
    pub resolved_count: usize,
}

/// How long a hook waits for a writer of the history: a part of its
/// two-second budget.
const HOOK_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// The findings of `issues`, read ahead (`jkz-pre-compact` reads them
/// while git runs, for the issues its digest will most likely detail).
pub fn read(
    state: &StateDir,
    issues: &[String],
    audience: Audience,
) -> Result<Vec<IssueFindings>, String> {
    if issues.is_empty() {
        return Ok(Vec::new());
    }
    let read = || -> Result<Vec<IssueFindings>, super::StoreError> {
        let Some(store) = Store::open_read_only_within(&state.join(DB_FILE), HOOK_WAIT)? else {
            return Ok(Vec::new());
        };
        store.reading(|store| {
            let mut all = Vec::new();
            for issue in issues {
                all.extend(issue_findings(store, issue, audience)?);
            }
            Ok(all)
        })
    };
    read().map_err(|e| e.to_string())
}

/// What was [`read`] ahead: the issues asked for, and their findings.
pub type ReadAhead = (Vec<String>, Result<Vec<IssueFindings>, String>);

/// The findings of the issues `wanted` (a digest's detailed pipelines), in
/// that order: those read `ahead` (an issue without a history has no entry:
/// covered all the same), and the rest read now.
pub fn complete(
    state: &StateDir,
    wanted: &[String],
    ahead: Option<ReadAhead>,
    audience: Audience,
) -> Result<Vec<IssueFindings>, String> {
    let (covered, mut found) = match ahead {
        Some((covered, found)) => (covered, found?),
        None => (Vec::new(), Vec::new()),
    };
    let missing: Vec<String> = wanted
        .iter()
        .filter(|i| !covered.contains(i))
        .cloned()
        .collect();
    found.extend(read(state, &missing, audience)?);
    found.retain(|f| wanted.contains(&f.issue));
    found.sort_by_key(|f| wanted.iter().position(|i| *i == f.issue));
    Ok(found)
}

fn issue_findings(
    store: &Store,
    issue: &str,
    audience: Audience,
) -> Result<Option<IssueFindings>, super::StoreError> {
    let (counts, iterations) = store.summary(issue)?;
    if iterations.is_empty() {
        return Ok(None);
    }
    let count = |wanted: &[Status]| -> usize {
        counts
            .iter()
            .filter(|(s, _)| wanted.contains(s))
            .map(|(_, n)| n)
            .sum()
    };
    let standing = store.most_severe(issue, &STANDING, MAX_STANDING)?;
    let resolved = match audience {
        Audience::Summarizer => store.most_severe(issue, &[Status::Resolved], MAX_RESOLVED)?,
        Audience::Reinjection => Vec::new(),
    };
    Ok(Some(IssueFindings {
        issue: issue.to_string(),
        latest_iteration: iterations.last().copied(),
        standing: standing.iter().map(FindingLine::of).collect(),
        standing_count: count(&STANDING),
        resolved: resolved.iter().map(FindingLine::of).collect(),
        resolved_count: count(&[Status::Resolved]),
    }))
}

/// The findings of one issue as lines of a digest's pipeline section:
/// at most `items` findings of each list, each message cut to `chars`
/// characters.
pub fn render(f: &IssueFindings, items: usize, chars: usize) -> String {
    // A finding is a reviewer's words, its path the repository's: both are
    // quoted data, one line each, never jkz's structure.
    let cut = |s: &str, max: usize| outside_text::inline(s, max, "see the finding");
    let place = |l: &FindingLine| outside_text::inline(&l.place(), PLACE_CHARS, "see the finding");
    let mut out = String::new();
    let it = f
        .latest_iteration
        .map(|k| format!("iteration {k}"))
        .unwrap_or_default();
    let whole = format!("`jkz findings --issue {}`", f.issue);
    if f.standing_count == 0 {
        out.push_str(&format!("- Review findings ({it}): none standing\n"));
    } else {
        out.push_str(&format!(
            "- Review findings still to fix, as reviewers reported them ({it}; {} standing, most severe first; all: {whole}):\n",
            f.standing_count
        ));
        for (i, l) in f.standing.iter().take(items).enumerate() {
            let severity = cut(l.severity.as_deref().unwrap_or("unrated"), PLACE_CHARS);
            out.push_str(&format!(
                "    {}. [{severity}, {}] {} — {} (#{})\n",
                i + 1,
                cut(&l.status, PLACE_CHARS),
                place(l),
                cut(&l.message, chars),
                l.id
            ));
        }
        let more = f.standing_count.saturating_sub(items.min(f.standing.len()));
        if more > 0 {
            out.push_str(&format!("    (+{more} more: {whole})\n"));
        }
    }
    if f.resolved_count > 0 && !f.resolved.is_empty() {
        let named: Vec<String> = f
            .resolved
            .iter()
            .take(items)
            .map(|l| {
                format!(
                    "#{} {} ({})",
                    l.id,
                    place(l),
                    cut(&l.message, chars.min(60))
                )
            })
            .collect();
        let more = f.resolved_count.saturating_sub(named.len());
        let more = if more > 0 {
            format!(", +{more} more")
        } else {
            String::new()
        };
        out.push_str(&format!(
            "- Resolved review findings, safe to drop ({}): {}{more}\n",
            f.resolved_count,
            named.join("; ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::store::Import;
    use crate::findings::Reported;

    /// What was read ahead is used for the issues it covered; an issue the
    /// digest details that was not read ahead is read then; one read ahead
    /// that the digest does not detail is dropped.
    #[test]
    fn read_ahead_is_completed_and_trimmed_to_the_digest() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::resolve(Some(dir.path()), None);
        let mut store = Store::open(&dir.path().join(DB_FILE)).unwrap();
        for issue in ["1", "2", "3"] {
            let f = Reported {
                file: "a.rs".into(),
                message: format!("finding of {issue}"),
                ..Reported::default()
            };
            store
                .import(&Import {
                    issue,
                    iteration: 1,
                    source: "verdict",
                    role: "",
                    input: "-",
                    findings: &[f],
                    now: 0,
                })
                .unwrap();
        }
        let ahead = read(&state, &["3".into(), "1".into()], Audience::Reinjection);
        let found = complete(
            &state,
            &["1".into(), "2".into()],
            Some((vec!["3".into(), "1".into()], ahead)),
            Audience::Reinjection,
        )
        .unwrap();
        let issues: Vec<&str> = found.iter().map(|f| f.issue.as_str()).collect();
        assert_eq!(issues, ["1", "2"]);
        assert_eq!(found[1].standing[0].message, "finding of 2");
    }
}
