//! A shell output that a client cuts itself and lets a hook only append
//! to ([`crate::client::OutputControl::Append`]): the protected blocks its
//! cut would drop, put where the cut keeps them.
//!
//! Such a client (docs/clients.md says which) cuts an output longer than
//! its threshold to a head and a tail, the whole saved to a file, and
//! appends a hook's context to the output *before* that cut: so what jkz
//! appends lands in the tail the cut keeps.
//!
//! So when the output (with what jkz adds) would be cut, the hook appends
//! the protected blocks (verdicts, plans, decisions, TL;DRs, other `jkz:`
//! signals; `crate::blocks`) that lie in the dropped middle, newest of
//! each kind first in kind priority, then the signal lines of the
//! reduction engine's rules (errors, failing tests, panics, tracebacks,
//! summaries, warnings; `crate::reduce`) that lie there, each after its
//! line number, the first and the last when not all fit — within
//! [`CONTEXT_BUDGET`] characters (a block larger than its share is cut to
//! its head). Everything else of the output is the client's cut,
//! unchanged. Nothing to add: no output. (A shell call jkz wraps before it
//! runs reaches this hook reduced already, under the cut.)

use crate::blocks::{find_blocks, ProtectedBlock};
use crate::client::{Answer, Body, Tool, ToolUse};
use crate::client_text::{client_len, head_units};
use crate::reduce::ClientCut;

/// The most characters jkz appends: the client's tail keeps the rest of
/// its share for the output's own end.
pub const CONTEXT_BUDGET: usize = 12_000;

/// The answer to one shell call's output that a client (`client`, its
/// name as its users know it) will cut as `cut` says and lets jkz only
/// append to: what the cut would drop, if anything.
pub fn answer(used: &ToolUse, cut: ClientCut, client: &str) -> Answer {
    let Tool::Shell { command, .. } = &used.tool else {
        return Answer::Nothing;
    };
    let Some(output) = &used.output else {
        return Answer::Nothing;
    };
    let Body::Inline(content) = &output.body else {
        return Answer::Nothing;
    };
    match rescued(content, Some(command.as_str()), cut, client) {
        Some(context) => Answer::AddContext(context),
        None => Answer::Nothing,
    }
}

/// The text to append to `output` (what `command` printed) so that the
/// client's cut keeps its protected blocks and signal lines; none when the
/// cut would drop none.
pub fn rescued(
    output: &str,
    command: Option<&str>,
    cut: ClientCut,
    client: &str,
) -> Option<String> {
    let threshold = cut.whole;
    let head = cut.head;
    let len = client_len(output);
    // The client appends "\n\n<hook_context>…</hook_context>" (33 characters
    // and the context) and then cuts: with the most jkz may add, is there a
    // cut at all?
    if len + CONTEXT_BUDGET + 64 <= threshold {
        return None;
    }
    // Kept of the output itself, at worst: its first `head` characters,
    // and the last (tail − everything appended).
    let tail_keeps = threshold - head - CONTEXT_BUDGET - 64;
    let head_end = byte_at_units(output, head);
    let tail_start = byte_at_units(output, len.saturating_sub(tail_keeps));
    let dropped: Vec<ProtectedBlock> = find_blocks(output.as_bytes())
        .into_iter()
        .filter(|b| !(b.end as usize <= head_end || b.start as usize >= tail_start))
        .collect();
    let signals = signal_lines(output, command, head_end, tail_start, &dropped);
    if dropped.is_empty() && signals.is_empty() {
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
        "jkz: protected blocks and signal lines from the middle of this output, which {client}'s \
cut (its first {head} and last {} characters) drops; the full output is in the \
file the client names above.",
        threshold - head
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
    append_signals(&mut out, &signals);
    Some(out)
}

/// The signal lines of the output's dropped middle (bytes `head_end` to
/// `tail_start`) outside the blocks already rescued, as `L<n>: text`, by
/// the built-in rules of the command's family (or the family the output's
/// first lines look like).
fn signal_lines(
    output: &str,
    command: Option<&str>,
    head_end: usize,
    tail_start: usize,
    blocks: &[ProtectedBlock],
) -> Vec<String> {
    use crate::reduce::table::{FilterTable, Is, GENERIC};
    let table = FilterTable::built_in();
    let family = command
        .and_then(|c| crate::reduce::command::family_for_command(&table, c))
        .or_else(|| {
            let first: Vec<&[u8]> = output
                .lines()
                .take(crate::reduce::sniff::SNIFF_LINES)
                .map(str::as_bytes)
                .collect();
            crate::reduce::sniff::sniff(&table, &first)
        })
        .map_or(GENERIC.to_string(), |f| f.name.clone());
    let Ok(classifier) = crate::reduce::classifier::Classifier::new(&table, &family) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut at = 0;
    for (i, line) in output.split_inclusive('\n').enumerate() {
        let (start, end) = (at, at + line.len());
        at = end;
        if start < head_end || end > tail_start {
            continue;
        }
        if blocks
            .iter()
            .any(|b| (b.start as usize) < end && start < b.end as usize)
        {
            continue;
        }
        let text = line.trim_end();
        if let (Is::Signal(_), _) = classifier.classify_alone(text) {
            out.push(format!("L{}: {}", i + 1, head_units(text, 400)));
        }
    }
    out
}

/// Appends `lines` within what is left of [`CONTEXT_BUDGET`]: the first
/// ones and the last ones, and how many between are not listed.
fn append_signals(out: &mut String, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let note_room = 120;
    let room = CONTEXT_BUDGET.saturating_sub(client_len(out) + 2);
    if room < note_room + 200 {
        return;
    }
    let cost = |l: &String| client_len(l) + 1;
    let (mut lo, mut hi, mut used) = (
        0,
        lines.len(),
        client_len("\n\nSignal lines (line number: text):"),
    );
    while lo < hi {
        let from_front = lo <= 2 * (lines.len() - hi);
        let l = if from_front {
            &lines[lo]
        } else {
            &lines[hi - 1]
        };
        let reserve = if hi - lo > 1 { note_room } else { 0 };
        if used + cost(l) + reserve > room {
            break;
        }
        used += cost(l);
        if from_front {
            lo += 1;
        } else {
            hi -= 1;
        }
    }
    out.push_str("\n\nSignal lines (line number: text):");
    for l in &lines[..lo] {
        out.push('\n');
        out.push_str(l);
    }
    if lo < hi {
        out.push_str(&format!(
            "\n[jkz: {} more signal lines not listed here]",
            hi - lo
        ));
    }
    for l in &lines[hi..] {
        out.push('\n');
        out.push_str(l);
    }
}

/// The byte offset in `s` after its first `units` client characters.
fn byte_at_units(s: &str, units: usize) -> usize {
    head_units(s, units).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cut of 40,000 characters, its first fifth and last four fifths.
    fn rescued(output: &str, command: Option<&str>) -> Option<String> {
        let cut = ClientCut {
            whole: 40_000,
            read: usize::MAX,
            head: 8_000,
            tail: 32_000,
        };
        super::rescued(output, command, cut, "the client")
    }

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
        let text = rescued(&output, None).expect("a block in the middle");
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
        assert_eq!(rescued("short\n", None), None);
        assert_eq!(
            rescued(&filler(5000), None),
            None,
            "cut, but no block or signal lost"
        );
    }

    #[test]
    fn the_failures_in_the_dropped_middle_are_listed_with_their_line_numbers() {
        let mut output = String::from("running 9000 tests\n");
        for i in 0..1500 {
            output.push_str(&format!("test module_{i:05}::case ... ok\n"));
        }
        output.push_str("test parser::nested ... FAILED\n");
        let failed_at = output.lines().count();
        for i in 1500..3000 {
            output.push_str(&format!("test module_{i:05}::case ... ok\n"));
        }
        let text = rescued(&output, Some("cargo test")).expect("a failure in the middle");
        assert!(
            text.contains(&format!("L{failed_at}: test parser::nested ... FAILED")),
            "{text}"
        );
        assert!(
            !text.contains("... ok"),
            "passing tests are not signals: {text}"
        );
        assert!(client_len(&text) <= CONTEXT_BUDGET);
    }

    #[test]
    fn more_signal_lines_than_fit_keep_the_first_and_last_and_count_the_rest() {
        let mut output = String::from("building\n");
        output.push_str(&filler(300));
        for i in 0..2000 {
            output.push_str(&format!("error[E0308]: mismatched types number {i}\n"));
        }
        output.push_str(&filler(1000));
        let text = rescued(&output, Some("cargo build")).unwrap();
        assert!(text.contains("more signal lines not listed here"), "{text}");
        assert!(client_len(&text) <= CONTEXT_BUDGET, "{}", client_len(&text));
    }

    #[test]
    fn a_huge_block_is_cut_to_its_head_within_the_budget() {
        let plan = format!("```compact-plan\nPLAN-START\n{}```\n", filler(2000));
        let output = format!("{}{plan}{}", filler(2000), filler(3000));
        let text = rescued(&output, None).unwrap();
        assert!(text.contains("PLAN-START") && text.contains("block cut here"));
        assert!(client_len(&text) <= CONTEXT_BUDGET);
    }
}
