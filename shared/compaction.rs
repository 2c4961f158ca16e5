//! Compaction survival: what must outlive a client's compaction of the
//! conversation, and the two hooks that make it so.
//!
//! The decision-critical items are, per active pipeline: the approved plan,
//! the phase and iteration, the active verdicts, the pending human decisions,
//! the failure context of the current fix cycle; and, for the project, the
//! git state. [`Digest`] gathers them; [`digest::render`] writes them either
//! as instructions for the summarizer (the PreCompact answer, which a
//! client appends to the summarizing request as far as it lets a hook) or
//! as context to re-inject (the SessionStart answer, kept under 4,000
//! characters).
//!
//! - [`pre_compact`]: snapshot the event and the whole pipeline state to
//!   `state/pre-compact-<UTC ts>-<pid>.json`, nudge the session record, prune
//!   old snapshots, print the digest for the summarizer.
//! - [`post_compact`]: after the summary is made (a client's
//!   `PostCompact`, an arm of `jkz-session-start`), record which items it
//!   dropped ([`summary_check`]), for SessionStart to put back first.
//! - [`session_start`]: after `compact`, `resume` or `fork`, re-inject the live
//!   pipeline state, completed and compared by the newest snapshot of the
//!   session, else of the project ([`reconcile`]): what changed since the
//!   snapshot, and when branch or HEAD moved, are said first.
//!
//! Both put this chat's work first ([`focus`]): the issue it claimed, else
//! the one whose worktree or branch it runs in; the repository's other live
//! pipelines follow, within the same budget.

pub mod digest;
pub mod focus;
pub mod hooks;
pub mod live;
pub mod post_compact;
pub mod pre_compact;
pub mod reconcile;
pub mod session_start;
pub mod snapshot;
pub mod summary_check;

pub use digest::{Digest, PipelineDigest};
