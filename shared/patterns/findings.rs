//! Findings that recur across issues, as candidate patterns.
//!
//! A review finding seen in two or more different issues is something
//! agents keep getting wrong: it becomes a candidate pattern, with one
//! occurrence per issue (source `finding:<id>:<issue>`, where the id is
//! the first 12 hex digits of the sha256 of the finding's identity; no
//! role). [`recurring`] reads them from the findings history
//! (`state/cr-history.db`, [`crate::findings`]: the same normalized message
//! in two issues, not dismissed), read-only; [`mine_recurring`] adds them.
//! `jkz patterns mine` (and a build) does both; the history changes with
//! imports, so a finding's new issues count at the next mine.

use std::path::Path;

use super::store::{Added, Memory, Result, Seen};

/// A finding and the issues it was seen in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecurringFinding {
    /// The finding's id in the findings history.
    pub id: String,
    pub text: String,
    /// Each issue it was seen in, with when (Unix milliseconds).
    pub seen: Vec<(u64, i64)>,
}

/// The recurring findings of the state directory `state` (none when it has
/// no findings history); an unreadable history is an error to report.
pub fn recurring(state: &Path) -> std::result::Result<Vec<RecurringFinding>, String> {
    use sha2::Digest;
    let path = state.join(crate::state_dir::layout::FINDINGS_DB);
    let Some(store) = crate::findings::Store::open_read_only(&path).map_err(|e| e.to_string())?
    else {
        return Ok(Vec::new());
    };
    let rows = store
        .reading(|s| s.recurring())
        .map_err(|e| e.to_string())?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let digest = sha2::Sha256::digest(r.identity.as_bytes());
            RecurringFinding {
                id: digest[..6].iter().map(|b| format!("{b:02x}")).collect(),
                text: r.message,
                seen: r
                    .seen
                    .into_iter()
                    .filter_map(|(issue, at)| Some((issue.parse().ok()?, at.saturating_mul(1000))))
                    .collect(),
            }
        })
        .collect())
}

/// Adds each finding seen in two or more different issues as evidence;
/// returns the new patterns and the new occurrences of known ones.
/// Idempotent: a finding's issue is counted once however often this runs.
pub fn mine_recurring(memory: &Memory, findings: &[RecurringFinding]) -> Result<(usize, usize)> {
    let (mut new, mut merged) = (0, 0);
    for f in findings {
        let mut issues: Vec<u64> = f.seen.iter().map(|(n, _)| *n).collect();
        issues.sort_unstable();
        issues.dedup();
        if issues.len() < 2 {
            continue;
        }
        let text = super::extract::one_line(&[f.text.as_bytes()]);
        for (issue, at) in &f.seen {
            let record = format!("finding:{}:{issue}", f.id);
            let added = memory.add(
                &text,
                &Seen {
                    record: &record,
                    issue: Some(*issue),
                    role: None,
                    at: *at,
                },
                None,
            )?;
            match added {
                Added::New => new += 1,
                Added::Merged => merged += 1,
                Added::Nothing => {}
            }
        }
    }
    Ok((new, merged))
}
