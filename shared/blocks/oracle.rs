//! Property tests: the streaming scanner against a naive oracle.
//!
//! The oracle holds the whole document, splits it into lines and classifies
//! each with regular expressions: slow and obvious, written from the grammar
//! in the module docs rather than from the scanner's code.

use std::io::Read;

use proptest::prelude::*;
use regex::bytes::Regex;

use super::*;
use crate::lines::LineReader;

struct Oracle {
    fence: Regex,
    heading: Regex,
    tag: Regex,
    comment: Regex,
    underline: Regex,
}

#[derive(Clone, Copy)]
enum Open {
    Fence(u8, usize, Option<Kind>, u64),
    Comment(Kind, u64),
    Tag(Kind, u64),
}

impl Oracle {
    fn new() -> Oracle {
        Oracle {
            fence: Regex::new(r"^[ \t]*(`{3,}|~{3,})(.*?)\r?\n?$").unwrap(),
            heading: Regex::new(r"^ {0,3}(#{1,6})(?:[ \t](.*?))?\r?\n?$").unwrap(),
            tag: Regex::new(
                r"^[ \t]*<(verdict-json|compact-plan|plan-digest|decisions|tldr|accumulated-patterns)(>|[ \t])",
            )
            .unwrap(),
            comment: Regex::new(r"<!--[ \t]*jkz:([A-Za-z0-9_.-]+)").unwrap(),
            underline: Regex::new(r"^(={3,}|-{3,})[ \t]*\r?\n?$").unwrap(),
        }
    }

    /// Blocks of a document whose lines are all shorter than `MAX_LINE` and
    /// whose blocks are all shorter than `BLOCK_BOUND`.
    fn blocks(&self, doc: &[u8]) -> Vec<ProtectedBlock> {
        let mut out = Vec::new();
        let mut open: Option<Open> = None;
        // The open protected section; it ends at the next heading of any
        // level, setext or ATX.
        let mut section: Option<(Kind, u64)> = None;
        // The previous line, if it was ordinary text (a setext heading's
        // text when an underline follows): its start and named kind.
        let mut text: Option<(u64, Option<Kind>)> = None;
        let mut at = 0u64;
        for line in doc.split_inclusive(|&b| b == b'\n') {
            let start = at;
            let end = at + line.len() as u64;
            at = end;
            let mut rest_from = 0;
            let previous = text.take();
            let mut plain = false;
            let mut heading_at =
                |hstart: u64, kind: Option<Kind>, out: &mut Vec<ProtectedBlock>| {
                    if let Some((k, s)) = section.take() {
                        out.push(block(k, Form::Heading, s, hstart, true));
                    }
                    if let Some(kind) = kind {
                        section = Some((kind, hstart));
                    }
                };
            match open {
                Some(Open::Fence(marker, len, kind, fstart)) => {
                    let body = String::from_utf8_lossy(line);
                    let body =
                        body.trim_matches(|c| c == ' ' || c == '\t' || c == '\r' || c == '\n');
                    let run = body.bytes().take_while(|&b| b == marker).count();
                    if run >= len && run == body.len() {
                        if let Some(kind) = kind {
                            out.push(block(kind, Form::Fence, fstart, end, true));
                        }
                        open = None;
                    }
                    continue;
                }
                Some(Open::Comment(kind, cstart)) => match find(line, b"-->") {
                    Some(i) => {
                        out.push(block(kind, Form::Comment, cstart, end, true));
                        open = None;
                        rest_from = i + 3;
                    }
                    None => continue,
                },
                Some(Open::Tag(kind, tstart)) => {
                    let close = format!("</{}>", kind.name());
                    match find(line, close.as_bytes()) {
                        Some(i) => {
                            out.push(block(kind, Form::Tag, tstart, end, true));
                            open = None;
                            rest_from = i + close.len();
                        }
                        None => continue,
                    }
                }
                None => {
                    if let Some(c) = self.fence.captures(line) {
                        let run = &c[1];
                        let info = &c[2];
                        if !(run[0] == b'`' && info.contains(&b'`')) {
                            let word = String::from_utf8_lossy(info);
                            let word = word.trim_start_matches([' ', '\t']);
                            let word: String = word
                                .chars()
                                .take_while(|&ch| {
                                    ch != ' ' && ch != '\t' && ch != '{' && ch != '\r'
                                })
                                .collect();
                            let kind = Kind::ALL[..6]
                                .iter()
                                .copied()
                                .find(|k| k.name().eq_ignore_ascii_case(&word));
                            open = Some(Open::Fence(run[0], run.len(), kind, start));
                            continue;
                        }
                    }
                    if let Some(c) = self.heading.captures(line) {
                        let text = c.get(2).map(|m| m.as_bytes()).unwrap_or(b"");
                        heading_at(start, oracle_heading_kind(text), &mut out);
                    } else if self.underline.is_match(line) {
                        if let Some((tstart, kind)) = previous {
                            heading_at(tstart, kind, &mut out);
                        }
                    } else if let Some(c) = self.tag.captures(line) {
                        let kind = Kind::from_name(&c[1]).unwrap();
                        let gt = c.get(0).unwrap().end();
                        let after = if &c[2] == b">" {
                            gt
                        } else {
                            find(&line[gt..], b">").map_or(gt - 1, |i| gt + i + 1)
                        };
                        let close = format!("</{}>", kind.name());
                        match find(&line[after..], close.as_bytes()) {
                            Some(i) => {
                                out.push(block(kind, Form::Tag, start, end, true));
                                rest_from = after + i + close.len();
                            }
                            None => {
                                open = Some(Open::Tag(kind, start));
                                continue;
                            }
                        }
                    } else {
                        plain = true;
                    }
                }
            }
            if plain && !self.comment.is_match(line) {
                let body = String::from_utf8_lossy(line);
                let body = body.trim_end_matches(['\n', '\r']);
                if !body.trim_matches([' ', '\t']).is_empty() {
                    text = Some((start, oracle_heading_kind(body.as_bytes())));
                }
            }
            // Comments in the rest of the line, one after another.
            let mut from = rest_from;
            while let Some(c) = self.comment.captures(&line[from..]) {
                let m = c.get(0).unwrap();
                let kind = Kind::from_name(&c[1]).unwrap_or(Kind::Signal);
                let body = from + m.end();
                match find(&line[body..], b"-->") {
                    Some(i) => {
                        out.push(block(kind, Form::Comment, start, end, true));
                        from = body + i + 3;
                    }
                    None => {
                        open = Some(Open::Comment(kind, start));
                        break;
                    }
                }
            }
        }
        match open {
            Some(Open::Fence(_, _, Some(kind), s)) => {
                out.push(block(kind, Form::Fence, s, at, false))
            }
            Some(Open::Comment(kind, s)) => out.push(block(kind, Form::Comment, s, at, false)),
            Some(Open::Tag(kind, s)) => out.push(block(kind, Form::Tag, s, at, false)),
            _ => {}
        }
        if let Some((kind, s)) = section {
            out.push(block(kind, Form::Heading, s, at, true));
        }
        out.sort_by_key(|b| (b.start, std::cmp::Reverse(b.end)));
        out
    }
}

fn oracle_heading_kind(text: &[u8]) -> Option<Kind> {
    let text = String::from_utf8_lossy(text)
        .to_lowercase()
        .replace(['*', '_'], "");
    let mut text = text.trim_end().to_string();
    // A closing run of `#`s preceded by a blank (or alone) is not text.
    let stripped = text.trim_end_matches('#');
    if stripped.len() < text.len() && (stripped.is_empty() || stripped.ends_with([' ', '\t'])) {
        text = stripped.to_string();
    }
    let text = text.trim();
    let names = [
        ("tl;dr", Kind::Tldr),
        ("tldr", Kind::Tldr),
        ("decisions", Kind::Decisions),
        ("accumulated patterns", Kind::AccumulatedPatterns),
        ("compact plan", Kind::CompactPlan),
        ("plan digest", Kind::PlanDigest),
        ("verdict", Kind::VerdictJson),
    ];
    names
        .iter()
        .find(|(name, _)| text == *name || text.starts_with(&format!("{name}:")))
        .map(|&(_, kind)| kind)
}

fn block(kind: Kind, form: Form, start: u64, end: u64, closed: bool) -> ProtectedBlock {
    ProtectedBlock {
        kind,
        form,
        start,
        end,
        closed,
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Lines that exercise every rule, joined at random with `\n` or `\r\n`.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z é€<>!#`~*_:-]{0,30}",
        1 => Just("plain text with ünïcödé and 😀".to_string()),
        2 => (1..8usize, prop::sample::select(vec!["TL;DR", "tldr:", "**Decisions**", "Verdict: FAIL", "Plan Digest ##", "Accumulated Patterns", "Compact plan", "Notes", "Decisions made"]))
            .prop_map(|(n, t)| format!("{} {t}", "#".repeat(n))),
        2 => (prop::sample::select(vec!["```", "````", "~~~", "  ```", "```"]), prop::sample::select(vec!["", "verdict-json", "Decisions", "rust", "tldr x", "`bad"]))
            .prop_map(|(f, i)| format!("{f}{i}")),
        2 => prop::sample::select(vec!["```", "~~~", "````", "~~~~ "]).prop_map(String::from),
        2 => prop::sample::select(vec!["<compact-plan>", "<tldr id=1>", "</compact-plan>", "</tldr>", "x </decisions>", "<decisions>short</decisions> tail", "<Tldr>", "<tldrx>"]).prop_map(String::from),
        2 => prop::sample::select(vec!["===", "---", "-----  ", " ---", "==", "--- x", "=-=", "- item", "TL;DR", "Decisions:", "Release notes"]).prop_map(String::from),
        2 => prop::sample::select(vec!["<!-- jkz:verdict-json {\"v\":1} -->", "a <!--jkz:propose-issue: T | x", "-->", "end --> <!-- jkz:tldr", "<!-- note -->", "<!-- jkz: -->", "<!-- jkz:x --><!-- jkz:decisions y -->"]).prop_map(String::from),
    ]
}

fn doc() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec((line(), any::<bool>()), 0..40),
        any::<bool>(),
    )
        .prop_map(|(lines, final_newline)| {
            let mut doc = String::new();
            let n = lines.len();
            for (i, (l, crlf)) in lines.into_iter().enumerate() {
                doc.push_str(&l);
                if i + 1 < n || final_newline {
                    doc.push_str(if crlf { "\r\n" } else { "\n" });
                }
            }
            doc.into_bytes()
        })
}

/// Returns at most the next `sizes[i]` bytes on the i-th read.
struct Chunked<'a> {
    data: &'a [u8],
    sizes: Vec<usize>,
    i: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let size = self.sizes[self.i % self.sizes.len()];
        self.i += 1;
        let n = self.data.len().min(size).min(out.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn scanner_agrees_with_the_oracle(doc in doc()) {
        static ORACLE: std::sync::OnceLock<Oracle> = std::sync::OnceLock::new();
        let oracle = ORACLE.get_or_init(Oracle::new).blocks(&doc);
        prop_assert_eq!(find_blocks(&doc), oracle);
    }

    #[test]
    fn any_read_sizes_give_the_same_blocks(doc in doc(), sizes in prop::collection::vec(1..20usize, 1..8)) {
        let mut reader = LineReader::with_capacity(Chunked { data: &doc, sizes, i: 0 }, 64, 16);
        let mut scanner = BlockScanner::with_max_line(16);
        let mut events = Vec::new();
        while let Some(batch) = reader.next_batch().unwrap() {
            scanner.scan(batch, &mut events);
        }
        scanner.finish(&mut events);
        let mut whole = BlockScanner::with_max_line(16);
        let mut expected = Vec::new();
        whole.scan(&doc, &mut expected);
        whole.finish(&mut expected);
        prop_assert_eq!(in_order(events), in_order(expected));
    }

    #[test]
    fn blocks_are_whole_lines_within_the_input(doc in doc()) {
        for b in find_blocks(&doc) {
            prop_assert!(b.start < b.end && b.end as usize <= doc.len());
            prop_assert!(b.start == 0 || doc[b.start as usize - 1] == b'\n');
            prop_assert!(b.end as usize == doc.len() || doc[b.end as usize - 1] == b'\n');
        }
    }
}
