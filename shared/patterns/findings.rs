//! Findings that recur across issues, as candidate patterns.
//!
//! A review finding seen in two or more different issues is something
//! agents keep getting wrong: it becomes a candidate pattern, with one
//! occurrence per issue (source `finding:<id>:<issue>`, no role).
//! [`mine_recurring`] takes the recurring findings as input; where they
//! come from is the findings history's business (`state/cr-history.db`,
//! `jkz findings`). Until that history is part of jkz, [`recurring`]
//! finds none.

use std::path::Path;

use super::store::{Memory, Result, Seen};

/// A finding and the issues it was seen in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecurringFinding {
    /// The finding's id in the findings history.
    pub id: String,
    pub text: String,
    /// Each issue it was seen in, with when (Unix milliseconds).
    pub seen: Vec<(u64, i64)>,
}

/// The recurring findings of the state directory `state`: none yet (the
/// findings history is pending; see the module docs).
pub fn recurring(_state: &Path) -> Vec<RecurringFinding> {
    Vec::new()
}

/// Adds each finding seen in two or more different issues as evidence;
/// returns how many findings qualified. Idempotent: a finding's issue is
/// counted once however often this runs.
pub fn mine_recurring(memory: &Memory, findings: &[RecurringFinding]) -> Result<usize> {
    let mut qualified = 0;
    for f in findings {
        let mut issues: Vec<u64> = f.seen.iter().map(|(n, _)| *n).collect();
        issues.sort_unstable();
        issues.dedup();
        if issues.len() < 2 {
            continue;
        }
        qualified += 1;
        let text = super::extract::one_line(&[f.text.as_bytes()]);
        for (issue, at) in &f.seen {
            let record = format!("finding:{}:{issue}", f.id);
            memory.add(
                &text,
                &Seen {
                    record: &record,
                    issue: Some(*issue),
                    role: None,
                    at: *at,
                },
                None,
            )?;
        }
    }
    Ok(qualified)
}
