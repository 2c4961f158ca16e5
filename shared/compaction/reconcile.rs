//! A snapshot against the live pipeline state: what SessionStart re-injects.
//!
//! A snapshot records the pipeline state at one moment; the pipeline goes on
//! (a review passes, a decision is taken, the phase moves) while the chat is
//! compacted or closed. Re-injecting the snapshot as it stands would tell the
//! agent stale values as truth. The rule:
//!
//! - A pipeline whose file is there and readable is re-injected with its
//!   **live** values. A file not changed since the snapshot holds what the
//!   snapshot recorded, so the live values are never older than the
//!   snapshot's; a file changed since holds newer ones.
//! - The snapshot supplies what the live state no longer has: a pipeline
//!   whose file was removed (or cannot be read now) is re-injected as the
//!   snapshot recorded it, and said to be so.
//! - Every difference between the snapshot and the live values is listed,
//!   per issue and per item (phase, agent, iteration, verdicts, decisions,
//!   failure context, plan), so the agent knows what moved since the summary
//!   it is reading was made.

use super::digest::{Digest, PipelineDigest, MAX_DETAILED};
use crate::outside_text::short;

/// What is known now of a pipeline the snapshot detailed.
#[derive(Debug)]
pub enum LiveFile {
    /// The pipeline file is gone.
    Gone,
    /// It is there but cannot be read or is not a pipeline file (why).
    Unreadable(String),
    /// Its live digest, and whether the pipeline is still active.
    Read(Box<PipelineDigest>, bool),
}

/// What SessionStart re-injects, and what changed since the snapshot.
#[derive(Debug, PartialEq)]
pub struct Reconciled {
    pub digest: Digest,
    /// One line per issue whose items differ from the snapshot's.
    pub changes: Vec<String>,
}

/// The live digest, completed by the snapshot: `lookup` tells what is known
/// now of an issue the snapshot detailed but the live digest does not.
pub fn reconcile(
    snapshot: &Digest,
    live: Digest,
    mut lookup: impl FnMut(&str) -> LiveFile,
) -> Reconciled {
    let mut changes = Vec::new();
    let mut carried = Vec::new();
    for then in &snapshot.pipelines {
        let issue = then.issue.as_str();
        if let Some(now) = live.pipelines.iter().find(|p| p.issue == issue) {
            changes.extend(changed_items(then, now, true));
            continue;
        }
        match lookup(issue) {
            LiveFile::Read(now, active) => changes.extend(changed_items(then, &now, active)),
            LiveFile::Gone => {
                changes.push(format!(
                    "#{}: its pipeline file is gone; shown as the snapshot recorded it",
                    short(issue)
                ));
                carried.push(then.clone());
            }
            LiveFile::Unreadable(why) => {
                changes.push(format!(
                    "#{}: its pipeline file cannot be read now ({}); shown as the snapshot recorded it",
                    short(issue),
                    short(&why)
                ));
                carried.push(then.clone());
            }
        }
    }
    for now in &live.pipelines {
        let known = snapshot.pipelines.iter().any(|p| p.issue == now.issue)
            || snapshot.other_active.contains(&now.issue);
        if !known {
            changes.push(format!(
                "#{}: not in the snapshot (started or resumed since)",
                short(&now.issue)
            ));
        }
    }
    let mut digest = live;
    // The snapshot's pipelines complete the live ones, within the detailed
    // count; any over it are named.
    for p in carried {
        if digest.pipelines.len() < MAX_DETAILED {
            digest.pipelines.push(p);
        } else {
            digest.other_active.push(p.issue);
            digest.other_active_count += 1;
        }
    }
    Reconciled { digest, changes }
}

/// The items of one pipeline that differ between the snapshot (`then`) and
/// now, as one line; none when nothing differs.
fn changed_items(then: &PipelineDigest, now: &PipelineDigest, active: bool) -> Option<String> {
    let mut items = Vec::new();
    if then.phase != now.phase {
        let finished = if active {
            ""
        } else {
            " (finished: no longer active)"
        };
        items.push(format!(
            "phase {} → {}{finished}",
            short(&then.phase),
            short(&now.phase)
        ));
    }
    if then.active_agent != now.active_agent {
        items.push(format!(
            "active agent {} → {}",
            or_none(then.active_agent.as_deref()),
            or_none(now.active_agent.as_deref())
        ));
    }
    if then.pr_number != now.pr_number {
        let pr = |n: Option<u64>| n.map_or("none".into(), |n| format!("#{n}"));
        items.push(format!("PR {} → {}", pr(then.pr_number), pr(now.pr_number)));
    }
    for (name, a, b) in [
        (
            "plan iteration",
            then.cycles.plan_iterations,
            now.cycles.plan_iterations,
        ),
        (
            "review fix cycle",
            then.cycles.review_fix_count,
            now.cycles.review_fix_count,
        ),
        (
            "QA fix cycle",
            then.cycles.qa_fix_count,
            now.cycles.qa_fix_count,
        ),
    ] {
        if a != b {
            let n = |v: Option<u64>| v.map_or("-".into(), |v| v.to_string());
            items.push(format!("{name} {} → {}", n(a), n(b)));
        }
    }
    if (
        then.cycles.review_passed,
        then.cycles.qa_passed,
        &then.verdict,
    ) != (now.cycles.review_passed, now.cycles.qa_passed, &now.verdict)
    {
        items.push(format!("verdicts {} → {}", verdicts(then), verdicts(now)));
    }
    if then.pending_decisions != now.pending_decisions {
        let n = |p: &PipelineDigest| match p.pending_decisions.len() {
            0 => "none".to_string(),
            n => n.to_string(),
        };
        items.push(format!("pending decisions {} → {}", n(then), n(now)));
    }
    if let Some(what) = changed_text(&then.failure_context, &now.failure_context) {
        items.push(format!("failure context {what}"));
    }
    let plan = |p: &PipelineDigest| p.approved_plan.as_ref().map(|p| p.text.clone());
    if let Some(what) = changed_text(&plan(then), &plan(now)) {
        items.push(format!("approved plan {what}"));
    }
    (!items.is_empty()).then(|| format!("#{}: {}", short(&now.issue), items.join("; ")))
}

fn or_none(s: Option<&str>) -> String {
    s.map_or("none".into(), short)
}

fn verdicts(p: &PipelineDigest) -> String {
    let outcome = |v: Option<bool>| match v {
        Some(true) => "passed",
        Some(false) => "failed",
        None => "not run",
    };
    format!(
        "(review {}, QA {}; overall {})",
        outcome(p.cycles.review_passed),
        outcome(p.cycles.qa_passed),
        p.verdict.as_deref().map_or("none".into(), short)
    )
}

fn changed_text(then: &Option<String>, now: &Option<String>) -> Option<&'static str> {
    match (then, now) {
        (a, b) if a == b => None,
        (None, Some(_)) => Some("recorded since"),
        (Some(_), None) => Some("cleared"),
        _ => Some("changed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Cycles;

    fn pipeline(issue: &str, phase: &str) -> PipelineDigest {
        PipelineDigest {
            issue: issue.into(),
            issue_type: "feature".into(),
            phase: phase.into(),
            cycles: Cycles {
                review_passed: Some(false),
                qa_passed: Some(false),
                ..Cycles::default()
            },
            verdict: Some("FAIL".into()),
            pending_decisions: vec!["a?".into(), "b?".into()],
            failure_context: Some("boom".into()),
            ..PipelineDigest::default()
        }
    }

    fn digest(pipelines: Vec<PipelineDigest>) -> Digest {
        Digest {
            pipelines,
            ..Digest::default()
        }
    }

    #[test]
    fn live_values_win_and_each_change_is_named() {
        let then = digest(vec![pipeline("42", "building")]);
        let mut moved = pipeline("42", "reviewing");
        moved.cycles.review_passed = Some(true);
        moved.cycles.qa_passed = Some(true);
        moved.verdict = Some("PASS".into());
        moved.pending_decisions.clear();
        moved.failure_context = None;
        let r = reconcile(&then, digest(vec![moved.clone()]), |_| unreachable!());
        assert_eq!(r.digest.pipelines, [moved]);
        assert_eq!(
            r.changes,
            ["#42: phase building → reviewing; verdicts (review failed, QA failed; overall FAIL) → (review passed, QA passed; overall PASS); pending decisions 2 → none; failure context cleared"]
        );
        // Nothing moved: nothing said.
        let r = reconcile(&then, then.clone(), |_| unreachable!());
        assert_eq!((r.digest, r.changes), (then, vec![]));
    }

    #[test]
    fn the_snapshot_supplies_a_pipeline_whose_file_is_gone() {
        let then = digest(vec![pipeline("42", "building"), pipeline("7", "fixing")]);
        let live = digest(vec![]);
        let mut asked = Vec::new();
        let r = reconcile(&then, live, |issue| {
            asked.push(issue.to_string());
            match issue {
                "42" => LiveFile::Gone,
                _ => LiveFile::Read(Box::new(pipeline("7", "done")), false),
            }
        });
        assert_eq!(asked, ["42", "7"]);
        assert_eq!(r.digest.pipelines, [pipeline("42", "building")]);
        assert_eq!(
            r.changes,
            [
                "#42: its pipeline file is gone; shown as the snapshot recorded it",
                "#7: phase fixing → done (finished: no longer active)",
            ]
        );
    }

    #[test]
    fn carried_pipelines_past_the_detailed_count_are_named() {
        let then = digest(vec![pipeline("1", "a"), pipeline("2", "a")]);
        let live = digest(vec![pipeline("3", "a"), pipeline("4", "a")]);
        let r = reconcile(&then, live, |_| LiveFile::Unreadable("x".into()));
        let issues: Vec<_> = r
            .digest
            .pipelines
            .iter()
            .map(|p| p.issue.as_str())
            .collect();
        assert_eq!(issues, ["3", "4", "1"]);
        assert_eq!(r.digest.other_active, ["2"]);
        assert_eq!(r.digest.other_active_count, 1);
        assert_eq!(r.changes.len(), 4, "{:?}", r.changes);
    }
}
