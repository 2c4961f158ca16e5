//! Patterns learned from deliberations: mined from agents' answers, ranked,
//! injected into later prompts, and judged by what came of them.
//!
//! Agents repeat the same mistakes across issues; an "Accumulated
//! Patterns" section in a prompt is how a pipeline teaches them. The store
//! follows the evolving-playbook idea: itemized bullets with helpful and
//! harmful counters, changed by small deltas (one occurrence, one signal)
//! rather than rewrites, grown by mining and refined by de-duplication and
//! pruning; searchable with SQLite FTS5. Offline and deterministic: the
//! same records and feedback give the same ranking.
//!
//! The family:
//! - [`extract`]: the candidate patterns in a response (the block grammar's
//!   "Accumulated Patterns" blocks and `<!-- jkz:pattern … -->` signals);
//! - [`normalize`]: the de-duplication rule (words, key, similarity);
//! - [`store`]: `state/memory.db` and every transaction on it;
//! - [`log`]: `state/patterns-feedback.jsonl`, the append-only feedback log
//!   the database is rebuilt from, with the records;
//! - [`mine`]: records to evidence and feedback events; [`findings`]:
//!   recurring findings as evidence;
//! - [`score`], [`relevance`], [`inject`], [`section`]: ranking, and the
//!   section a prompt gets;
//! - [`reach`]: which issues' prompts a pattern may go into, and the
//!   provenance its bullet carries; [`quarantine`]: the rules that hold a
//!   text back until a person approves it; [`confine`]: outside text kept
//!   inside its bullet;
//! - [`cmd`]: `jkz patterns`; [`in_run`]: `jkz run --inject-patterns` and
//!   the mining of each new record; [`history`]: what the event log hears.

pub mod cmd;
pub mod confine;
pub mod extract;
pub mod findings;
pub mod history;
pub mod in_run;
pub mod inject;
pub mod log;
pub mod mine;
pub mod normalize;
pub mod quarantine;
pub mod reach;
pub mod relevance;
pub mod score;
pub mod section;
pub mod store;

use std::io::Write;

use crate::state_dir::StateDir;

pub use store::{Memory, MemoryError};

/// Opens `state/memory.db` up to date (built from the records and the log
/// when new or corrupt), saying on `warnings` (as `program`) what a build
/// or a rebuild did. An error when there is no state directory.
pub fn open(
    state: &StateDir,
    program: &str,
    warnings: &mut dyn Write,
) -> Result<Memory, MemoryError> {
    if !state.exists() {
        return Err(MemoryError::new(state.missing()));
    }
    let mut notes: Vec<u8> = Vec::new();
    let result = Memory::open(
        state.path(),
        crate::json_file::lock_wait(),
        &mut |m: &Memory| mine::build(m, &mut notes),
    );
    // A note may quote what a record said: shown, never obeyed.
    for line in String::from_utf8_lossy(&notes).lines() {
        let _ = writeln!(
            warnings,
            "{program}: warning: {}",
            crate::terminal_text::inert(line)
        );
    }
    let (memory, synced, rebuilt) = result?;
    if let Some(note) = rebuilt {
        let _ = writeln!(warnings, "{program}: {note}");
    }
    if synced.skipped > 0 {
        let _ = writeln!(
            warnings,
            "{program}: warning: {} line(s) of {} could not be read and were skipped",
            synced.skipped,
            crate::state_dir::layout::PATTERNS_FEEDBACK
        );
    }
    Ok(memory)
}
