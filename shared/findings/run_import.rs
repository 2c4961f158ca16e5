//! What `jkz run` imports: the findings of the verdict it records.
//!
//! When a run names its issue and iteration (`--issue N --iteration K`) and
//! the verdict it records (the last `verdict-json` block of the answer with
//! a `verdict`, [`crate::deliberation::verdict`]) carries a `findings`,
//! `blockers` or `concerns` array, those findings are imported as source
//! `verdict`, role `--role` — as `jkz findings import --source verdict`
//! would. An answer is never held up by it: a verdict whose findings are
//! refused, or a history that cannot be written, is one warning on stderr,
//! and the run's exit code stays CMD's.

use serde_json::{Map, Value};

use super::reported;
use super::store::{Import, Store, DB_FILE};
use crate::deliberation::Context;
use crate::state_dir::StateDir;

/// Imports the findings of `verdict` for the run's issue and iteration.
pub fn import_verdict(
    state: &StateDir,
    context: &Context,
    verdict: Option<&Map<String, Value>>,
    program: &str,
) {
    let (Some(issue), Some(iteration), Some(verdict)) = (context.issue, context.iteration, verdict)
    else {
        return;
    };
    if !reported::has_findings(verdict) {
        return;
    }
    let warn = |why: &str| {
        eprintln!("{program}: warning: the verdict's findings were not imported: {why}");
    };
    let Ok(iteration) = u32::try_from(iteration) else {
        return warn(&format!("iteration {iteration} is too large"));
    };
    let parsed = match reported::verdict_findings(verdict) {
        Ok(parsed) => parsed,
        Err(why) => return warn(&why),
    };
    let root = match state.ensure() {
        Ok(Some(root)) => root.to_path_buf(),
        // No state directory: the deliberation record already said so.
        Ok(None) => return,
        Err(e) => return warn(&format!("{}: {e}", state.path().display())),
    };
    let issue = issue.to_string();
    let done = Store::open(&root.join(DB_FILE)).and_then(|mut store| {
        store.import(&Import {
            issue: &issue,
            iteration,
            source: "verdict",
            role: context.role.as_deref().unwrap_or_default(),
            input: "jkz run",
            findings: &parsed.findings,
            now: crate::clock::now(),
        })
    });
    if let Err(e) = done {
        warn(&e.to_string());
    }
}
