//! What a response teaches: the candidate patterns in an answer's text.
//!
//! Two sources, both found by the one block grammar ([`crate::blocks`]):
//!
//! - the items of an "Accumulated Patterns" block, in any of its forms (a
//!   `## Accumulated Patterns` section, an ```` ```accumulated-patterns ````
//!   fence, an `<accumulated-patterns>` tag block, an
//!   `<!-- jkz:accumulated-patterns … -->` comment): each list item (`-`,
//!   `*`, `+`, `1.`, `1)`, a checkbox dropped) with its continuation lines
//!   is one pattern; a block without list items gives one pattern per
//!   paragraph. Blocks nested in a section (a comment, a fence) are not its
//!   items.
//! - `<!-- jkz:pattern TEXT -->` signals: TEXT is one pattern.
//!
//! An item that starts with an id tag (`[P12] …`) is an injected pattern
//! echoed back, not a new observation: it is skipped, and so is the
//! section's own frame line ([`super::section::FRAME`]). Whitespace runs
//! become one space. A text longer than [`MAX_TEXT`] bytes is cut (at a
//! character boundary) and ends with a marker saying how long it was; at
//! most [`MAX_CANDIDATES`] are taken from one response.

use crate::blocks::{contents, find_blocks, Form, Kind, ProtectedBlock};

/// The longest pattern text kept, in bytes, before the cap's marker.
pub const MAX_TEXT: usize = 1000;

/// The most candidates taken from one response.
pub const MAX_CANDIDATES: usize = 256;

/// The signal name of a single pattern: `<!-- jkz:pattern TEXT -->`.
pub const SIGNAL: &[u8] = b"pattern";

/// Whether `text` may hold a candidate: a cheap look before the block scan
/// (`atterns` covers every spelling of the section's name, `jkz:pattern`
/// the signal).
pub fn may_hold_patterns(text: &[u8]) -> bool {
    memchr::memmem::find(text, b"atterns").is_some()
        || memchr::memmem::find(text, b"ATTERNS").is_some()
        || memchr::memmem::find(text, b"jkz:pattern").is_some()
}

/// The candidate patterns of `text`, in order, each text once.
pub fn candidates(text: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let push = |t: String, out: &mut Vec<String>| {
        if out.len() < MAX_CANDIDATES
            && !t.is_empty()
            && !is_echo(&t)
            && t != super::section::FRAME
            && !out.contains(&t)
        {
            out.push(t);
        }
    };
    let mut blocks = find_blocks(text);
    blocks.dedup_by_key(|b| (b.kind, b.form, b.start, b.end));
    for block in &blocks {
        match (block.kind, block.form) {
            (Kind::AccumulatedPatterns, _) => {
                let nested: Vec<&ProtectedBlock> = blocks
                    .iter()
                    .filter(|b| *b != block && b.start >= block.start && b.end <= block.end)
                    .collect();
                for c in contents(text, block) {
                    for item in items(c.body, c.start, &nested) {
                        push(item, &mut out);
                    }
                }
            }
            (Kind::Signal, Form::Comment) => {
                for c in contents(text, block) {
                    if c.name.eq_ignore_ascii_case(SIGNAL) {
                        push(one_line(&[c.body]), &mut out);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// `[P12] …`: an id tag as `jkz patterns inject` writes it.
fn is_echo(text: &str) -> bool {
    text.strip_prefix("[P")
        .and_then(|rest| rest.split_once(']'))
        .is_some_and(|(digits, _)| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// A list item's marker at the start of `line` (after blanks): the rest of
/// the line after it.
fn item_start(line: &[u8]) -> Option<&[u8]> {
    let rest = line.trim_ascii_start();
    let after = match rest.first()? {
        b'-' | b'*' | b'+' => &rest[1..],
        b'0'..=b'9' => {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 9 {
                return None;
            }
            match rest.get(digits) {
                Some(b'.' | b')') => &rest[digits + 1..],
                _ => return None,
            }
        }
        _ => return None,
    };
    if !after.is_empty() && !matches!(after[0], b' ' | b'\t') {
        return None;
    }
    let after = after.trim_ascii_start();
    // A checkbox.
    let after = [&b"[ ]"[..], b"[x]", b"[X]"]
        .iter()
        .find_map(|c| after.strip_prefix(*c))
        .unwrap_or(after);
    Some(after)
}

/// The items of a block's body (starting at `offset` in the document),
/// skipping the lines of `nested` blocks.
fn items(body: &[u8], offset: u64, nested: &[&ProtectedBlock]) -> Vec<String> {
    let mut lines: Vec<&[u8]> = Vec::new();
    let mut at = 0usize;
    while at < body.len() {
        let end = memchr::memchr(b'\n', &body[at..]).map_or(body.len(), |i| at + i + 1);
        let abs = offset + at as u64;
        if !nested.iter().any(|b| b.start <= abs && abs < b.end) {
            lines.push(&body[at..end]);
        } else {
            // A nested block ends the item or paragraph before it.
            lines.push(b"");
        }
        at = end;
    }
    let listed = lines.iter().any(|l| item_start(l).is_some());
    let mut out = Vec::new();
    let mut current: Vec<&[u8]> = Vec::new();
    let flush = |current: &mut Vec<&[u8]>, out: &mut Vec<String>| {
        if !current.is_empty() {
            out.push(one_line(current));
            current.clear();
        }
    };
    for line in lines {
        let blank = line.iter().all(u8::is_ascii_whitespace);
        if blank {
            flush(&mut current, &mut out);
            continue;
        }
        match item_start(line) {
            Some(rest) if listed => {
                flush(&mut current, &mut out);
                current.push(rest);
            }
            // A continuation line, or a line of a paragraph.
            _ if !listed || !current.is_empty() => current.push(line),
            // Text before the first item: not a pattern.
            _ => {}
        }
        if out.len() >= MAX_CANDIDATES {
            break;
        }
    }
    flush(&mut current, &mut out);
    out
}

/// The pieces as one line: whitespace runs become one space, the ends
/// trimmed, cut to [`MAX_TEXT`] bytes with a marker when longer.
pub fn one_line(pieces: &[&[u8]]) -> String {
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    let mut out = String::new();
    let mut space = false;
    let mut capped = false;
    'pieces: for piece in pieces {
        for c in String::from_utf8_lossy(piece).chars() {
            if c.is_whitespace() {
                space = !out.is_empty();
                continue;
            }
            if out.len() + usize::from(space) + c.len_utf8() > MAX_TEXT {
                capped = true;
                break 'pieces;
            }
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
        space = !out.is_empty();
    }
    if capped {
        out.push_str(&format!(
            " … [capped: {} bytes]",
            crate::thousands::thousands(total as u64)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cands(s: &str) -> Vec<String> {
        candidates(s.as_bytes())
    }

    #[test]
    fn items_of_every_form() {
        let doc = "# Review\n\
## Accumulated Patterns\n\
Some intro.\n\
- Run cargo fmt before committing\n\
- [x] Check the *exit codes*\n  of every binary\n\
1. Never weaken a test\n\
<!-- jkz:pattern Keep hooks fast -->\n\
## Next\n\
- not a pattern\n\
```accumulated-patterns\n\
* fenced one\n\
```\n\
<accumulated-patterns>\n+ tagged one\n</accumulated-patterns>\n\
<!-- jkz:accumulated-patterns\n- commented one\n-->\n\
Accumulated patterns\n\
--------------------\n\
A paragraph pattern\nover two lines.\n\nAnother paragraph.\n";
        assert_eq!(
            cands(doc),
            [
                "Run cargo fmt before committing",
                "Check the *exit codes* of every binary",
                "Never weaken a test",
                "Keep hooks fast",
                "fenced one",
                "tagged one",
                "commented one",
                "A paragraph pattern over two lines.",
                "Another paragraph.",
            ]
        );
    }

    #[test]
    fn echoes_and_other_signals_are_skipped() {
        let doc = "## Accumulated Patterns\n\n- [P12] injected earlier\n- new one\n\
<!-- jkz:propose-issue x --> <!-- jkz:pattern  two   words -->\n";
        assert_eq!(cands(doc), ["new one", "two words"]);
        assert!(!may_hold_patterns(b"nothing here"));
        assert!(may_hold_patterns(b"## ACCUMULATED PATTERNS"));
    }

    #[test]
    fn a_huge_item_is_capped_with_a_marker() {
        let doc = format!("<!-- jkz:pattern {} -->\n", "word ".repeat(200_000));
        let got = cands(&doc);
        assert_eq!(got.len(), 1);
        assert!(got[0].len() <= MAX_TEXT + 40, "{}", got[0].len());
        assert!(
            got[0].ends_with(" … [capped: 1,000,002 bytes]"),
            "{}",
            &got[0][900..]
        );
    }
}
