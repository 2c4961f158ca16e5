//! The compaction prompt jkz gives Codex CLI: Codex's `PreCompact` hook
//! cannot steer the summary, but `experimental_compact_prompt_file` in its
//! `config.toml` replaces the prompt Codex summarizes with. `jkz install
//! --client codex` points it at [`path`] in the repository's state
//! directory; the file holds jkz's handoff instructions followed by the
//! decision-critical items with their current values, and every
//! `jkz-pre-compact` run for Codex rewrites it.
//!
//! Codex reads the file when a session starts, not when it compacts
//! (measured on 0.169.0: a file rewritten by the PreCompact hook reached
//! the summarizing request of the next `codex` process, not of the running
//! one). Each agent run of a pipeline is its own process, so each starts
//! with the items as they were at the last compaction or install; the
//! SessionStart re-injection carries the live values after a compaction
//! either way.

use std::io;
use std::path::{Path, PathBuf};

use crate::state_dir::layout::CODEX_COMPACT_PROMPT;

/// What the summary must do, before jkz's items: Codex's own prompt is
/// replaced whole, so this says all a handoff summary needs.
pub const HANDOFF: &str = "\
You are compacting this conversation into a handoff summary for another \
model that will continue the work without seeing the conversation.

Write a concise, structured summary with:
- the task and the progress made so far, with the decisions taken and why;
- the constraints, preferences and context the work depends on;
- what remains to be done, as clear next steps;
- the data, names, paths and references needed to continue.

Drop what can be read again: verbose tool output, search results, file \
contents already committed, findings already resolved.
";

/// The prompt file of the state directory `state_root`.
pub fn path(state_root: &Path) -> PathBuf {
    state_root.join(CODEX_COMPACT_PROMPT)
}

/// The whole prompt: [`HANDOFF`], then `items` (the summarizer
/// instructions of [`crate::compaction::digest::summarizer_instructions`]).
pub fn text(items: &str) -> String {
    let items = items.trim_end();
    if items.is_empty() {
        return HANDOFF.to_string();
    }
    format!("{HANDOFF}\n{items}\n")
}

/// Writes the prompt with `items` to [`path`] atomically.
pub fn write(state_root: &Path, items: &str) -> io::Result<PathBuf> {
    let dest = path(state_root);
    crate::atomic::write_atomic(&dest, text(items).as_bytes())?;
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_is_the_handoff_then_the_items() {
        assert_eq!(text(""), HANDOFF);
        let t = text("## jkz: decision-critical pipeline state\n- plan\n\n");
        assert!(t.starts_with(HANDOFF));
        assert!(t.ends_with("- plan\n"));
        let dir = tempfile::tempdir().unwrap();
        let written = write(dir.path(), "x").unwrap();
        assert_eq!(std::fs::read_to_string(written).unwrap(), text("x"));
    }
}
