//! The pipeline-state contract: `state/pipeline/<N>.json`, one file per issue.
//!
//! ```json
//! { "42": { "current_phase": "building", "pr_number": "42", "review_passed": "true", … },
//!   "lastActivity": "…", "heartbeat_pid": 47281 }
//! ```
//!
//! The issue's data sits under its number; `lastActivity` and `heartbeat_pid`
//! are siblings. Writers (bash pipeline scripts, `jkz state set`) store scalars
//! as strings; readers coerce through [`Normalized`], whose rules are the
//! contract's and live only here. Unknown fields are never dropped: every
//! write is a locked read-modify-write of the JSON object ([`set_field`]).
//!
//! Files in `state/pipeline/` that are not `<N>.json` (e.g.
//! `42-compact-plan.md`) are companions of issue N, never invalid pipeline
//! files; [`list`] skips them.
//!
//! The family: [`issue`] (the issue number, its file, the listing),
//! [`fields`] (the contract's field names, once), [`normalized`] (the document, the coercions, the view's JSON writer),
//! [`validate`], [`plan`] (the approved plan), [`set`] (the read-modify-write
//! of `jkz state set`), and the hot path of `jkz-pre-compact`: [`read`],
//! [`scan`], [`view`].

mod fields;
mod issue;
mod normalized;
mod plan;
mod read;
pub mod scan;
mod set;
#[cfg(test)]
mod testing;
mod validate;
mod view;

pub use fields::{COUNT_FIELDS, FLAG_FIELDS, STRING_FIELDS};
pub use issue::{
    issue_of_file_name, list, list_in, misnamed, misnamed_in, pipeline_path, IssueNumber,
    PipelineFile,
};
pub(crate) use normalized::{coerce_count, Field};
pub use normalized::{resolve_pr_number, Cycles, Normalized, ParseError, PipelineDoc, Verdict};
pub use plan::{approved_plan, read_bounded_text, ApprovedPlan};
pub use read::{
    load_all, visit_in_order, FileContent, LoadedPipeline, MAX_PIPELINE_FILE, MAX_READ_THREADS,
};
pub use set::{now_timestamp, set_field, SetError, SIBLINGS};
pub use validate::{
    check, field_problem, field_warning, shorten, validate, validate_doc, Checked, Problem,
};

/// The normalized view straight from a pipeline file's bytes, the way
/// `jkz-pre-compact` reads thousands of them (checked by [`scan`], only the
/// viewed fields kept); none when they are not one JSON object. Equal to
/// `PipelineDoc::parse(..).normalized()` whenever that parses (the unit
/// tests and the `pipeline_state` fuzz target hold it to that).
pub fn view_of_bytes(issue: &IssueNumber, bytes: &[u8]) -> Option<Normalized> {
    view::normalized(issue, bytes)
}

/// The largest approved-plan companion file read whole; a larger one is read
/// up to this bound (digests cut plans far shorter anyway).
pub const MAX_PLAN_BYTES: u64 = 256 * 1024;
