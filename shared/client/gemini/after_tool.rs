//! Gemini CLI's `AfterTool` for `run_shell_command`: the protected blocks
//! its own cut would drop, put where the cut keeps them.
//!
//! Gemini CLI cuts a shell command's output longer than 40,000 characters
//! (`tools.truncateToolOutputThreshold`, default 40,000) to its first 20%
//! and last 80% (8,000 and 32,000 characters), the whole saved to a file.
//! An `AfterTool` hook cannot replace the output (a deny marks the call
//! failed), but its `hookSpecificOutput.additionalContext` is appended to
//! the output *before* that cut (read in the 0.61.0 bundle, confirmed by
//! `client::gemini`'s test): so it lands in the tail the cut keeps.
//!
//! So when the output (with what jkz adds) would be cut, the hook appends
//! the protected blocks (verdicts, plans, decisions, TL;DRs, other `jkz:`
//! signals; `crate::blocks`) that lie in the dropped middle, newest of
//! each kind first in kind priority, within [`CONTEXT_BUDGET`] characters
//! (a block larger than its share is cut to its head). The client shows
//! them with `<` and `>` escaped as `&lt;` and `&gt;`. Everything else of
//! the output is Gemini CLI's cut, unchanged. Nothing to add: no output.

use serde_json::{json, Value};

use crate::blocks::{find_blocks, ProtectedBlock};
use crate::client_text::{client_len, head_units};
use crate::hook::Warnings;
use crate::hook_input::HookInput;

/// Gemini CLI's default cut: outputs longer than this many characters.
pub const CLIENT_THRESHOLD: usize = 40_000;

/// The share of [`CLIENT_THRESHOLD`] the client's cut keeps from the head.
pub const CLIENT_HEAD: usize = CLIENT_THRESHOLD / 5;

/// The most characters jkz appends: the client's tail keeps the rest of
/// its 32,000 for the output's own end.
pub const CONTEXT_BUDGET: usize = 12_000;

/// The answer to one `AfterTool` event, if the output needs one.
pub fn run(event: &HookInput, warnings: &mut Warnings) -> Option<String> {
    if event.text("tool_name") != Some("run_shell_command") {
        return None;
    }
    let content = match event.raw.get("tool_response").map(|r| r.get("llmContent")) {
        Some(Some(Value::String(text))) => text,
        // Not text (an error, parts): the client does not cut it either.
        Some(Some(_)) => return None,
        _ => {
            warnings.warn("AfterTool event without tool_response.llmContent: ignored");
            return None;
        }
    };
    let context = rescued(content)?;
    Some(
        json!({
            "hookSpecificOutput": {
                "hookEventName": "AfterTool",
                "additionalContext": context,
            }
        })
        .to_string(),
    )
}

/// The text to append to `output` so that the client's cut keeps its
/// protected blocks; none when the cut would drop none.
pub fn rescued(output: &str) -> Option<String> {
    let len = client_len(output);
    // The client appends "\n\n<hook_context>…</hook_context>" (33 characters
    // and the context) and then cuts: with the most jkz may add, is there a
    // cut at all?
    if len + CONTEXT_BUDGET + 64 <= CLIENT_THRESHOLD {
        return None;
    }
    // Kept of the output itself, at worst: its first CLIENT_HEAD
    // characters, and the last (tail − everything appended).
    let tail_keeps = CLIENT_THRESHOLD - CLIENT_HEAD - CONTEXT_BUDGET - 64;
    let head_end = byte_at_units(output, CLIENT_HEAD);
    let tail_start = byte_at_units(output, len.saturating_sub(tail_keeps));
    let dropped: Vec<ProtectedBlock> = find_blocks(output.as_bytes())
        .into_iter()
        .filter(|b| !(b.end as usize <= head_end || b.start as usize >= tail_start))
        .collect();
    if dropped.is_empty() {
        return None;
    }
    // Newest of each kind first, kinds in priority order (the truncation
    // contract's order).
    let mut chosen: Vec<&ProtectedBlock> = Vec::new();
    let mut by_priority = dropped.iter().collect::<Vec<_>>();
    by_priority.sort_by_key(|b| (b.kind, std::cmp::Reverse(b.start)));
    for b in by_priority {
        let nested = chosen.iter().any(|c| c.start <= b.start && b.end <= c.end);
        if !nested {
            chosen.push(b);
        }
    }
    let header = format!(
        "jkz: protected blocks from the middle of this output, which Gemini CLI's cut \
(its first {CLIENT_HEAD} and last {} characters) drops; the full output is in the file the \
client names above.",
        CLIENT_THRESHOLD - CLIENT_HEAD
    );
    let mut out = header;
    let mut left = CONTEXT_BUDGET.saturating_sub(client_len(&out));
    for b in chosen {
        let text = &output[b.start as usize..(b.end as usize).min(output.len())];
        let text = text.trim_end();
        if left < 200 {
            break;
        }
        let piece = head_units(text, left - 100);
        out.push_str("\n\n");
        out.push_str(piece);
        if piece.len() < text.len() {
            out.push_str("\n[… block cut here by jkz]");
        }
        left = CONTEXT_BUDGET.saturating_sub(client_len(&out));
    }
    Some(out)
}

/// The byte offset in `s` after its first `units` client characters.
fn byte_at_units(s: &str, units: usize) -> usize {
    head_units(s, units).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filler(n: usize) -> String {
        "build step ok, nothing to see here\n".repeat(n)
    }

    #[test]
    fn rescues_only_the_blocks_the_cut_drops() {
        let verdict = "<!-- jkz:verdict-json {\"verdict\":\"FAIL\",\"blocking\":\"GUAVA\"} -->\n";
        let early = "## TL;DR\nHEAD-TLDR stays in the head\n\n## Build log\n";
        let output = format!(
            "{early}{}{verdict}{}## Decisions\nTAIL-DECISION\n",
            filler(3000),
            filler(3000)
        );
        let text = rescued(&output).expect("a block in the middle");
        assert!(text.contains("GUAVA"), "{text}");
        assert!(
            !text.contains("HEAD-TLDR"),
            "kept by the head anyway: {text}"
        );
        assert!(
            !text.contains("TAIL-DECISION"),
            "kept by the tail anyway: {text}"
        );
        assert!(client_len(&text) <= CONTEXT_BUDGET);
    }

    #[test]
    fn says_nothing_when_nothing_is_cut_or_lost() {
        assert_eq!(rescued("short\n"), None);
        assert_eq!(rescued(&filler(5000)), None, "cut, but no block lost");
    }

    #[test]
    fn a_huge_block_is_cut_to_its_head_within_the_budget() {
        let plan = format!("```compact-plan\nPLAN-START\n{}```\n", filler(2000));
        let output = format!("{}{plan}{}", filler(2000), filler(3000));
        let text = rescued(&output).unwrap();
        assert!(text.contains("PLAN-START") && text.contains("block cut here"));
        assert!(client_len(&text) <= CONTEXT_BUDGET);
    }
}
