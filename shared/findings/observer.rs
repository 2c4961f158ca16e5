//! An issue's findings for the observer (`jkz ui`): how they stood at each
//! iteration imported, and how they stand now. Read-only: without a
//! history, the answer is empty.

use serde_json::{json, Value};

use super::status::Status;
use super::store::{FindingRow, Store, DB_FILE};
use crate::state_dir::StateDir;

/// The `findings` member of `GET /api/issues/N`:
/// `{"error", "iterations": [{"iteration", "counts", "findings"}], "now": [...]}`.
/// Each iteration lists its new, open and reintroduced findings and those
/// resolved in it (standing at the iteration before); `now` is every
/// finding as it stands (`jkz findings --json`).
pub fn issue_json(state: &StateDir, issue: &str) -> Value {
    let read = || -> Result<Value, super::StoreError> {
        let Some(store) = Store::open_read_only(&state.join(DB_FILE))? else {
            return Ok(json!({"error": null, "iterations": [], "now": []}));
        };
        let by_iteration = store.findings_by_iteration(issue)?;
        let mut iterations = Vec::new();
        let mut before: Vec<FindingRow> = Vec::new();
        for (k, rows) in by_iteration {
            let shown: Vec<&FindingRow> = rows
                .iter()
                .filter(|r| {
                    r.status.is_standing()
                        || (r.status == Status::Resolved
                            && before
                                .iter()
                                .any(|b| b.id == r.id && b.status.is_standing()))
                })
                .collect();
            let mut counts = serde_json::Map::new();
            for s in Status::ALL {
                let n = shown.iter().filter(|r| r.status == s).count();
                if n > 0 {
                    counts.insert(s.name().into(), json!(n));
                }
            }
            iterations.push(json!({
                "iteration": k,
                "counts": counts,
                "findings": shown.iter().map(|r| brief(r)).collect::<Vec<_>>(),
            }));
            before = rows;
        }
        let now: Vec<Value> = store
            .findings(issue, None)?
            .iter()
            .map(FindingRow::to_json)
            .collect();
        Ok(json!({"error": null, "iterations": iterations, "now": now}))
    };
    read().unwrap_or_else(|e| json!({"error": e.to_string(), "iterations": [], "now": []}))
}

fn brief(r: &FindingRow) -> Value {
    json!({
        "id": r.id,
        "status": r.status.name(),
        "severity": r.severity.map(|s| s.name()),
        "file": r.file,
        "line": r.line,
        "message": r.message,
        "sources": r.sources,
    })
}
