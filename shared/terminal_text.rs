//! Stored text on its way to a terminal: every printer of text jkz did not
//! write itself (a pipeline value, a finding, a pattern, an event, a lock's
//! owner, an agent's answer) puts it through [`inert`] (one line, a table
//! cell) or [`inert_lines`] (a document), so that nothing it holds can act
//! on the terminal: an escape sequence could write the clipboard (OSC 52),
//! clear the screen, retitle the window or hide what follows; a carriage
//! return or a newline could forge a row; a bidi override could make text
//! read in another order than it runs.
//!
//! The escapes, each starting with a backslash (so a literal backslash is
//! doubled, and every escape reads back to exactly one character):
//!
//! | character | shown as |
//! |---|---|
//! | `\` | `\\` |
//! | line feed, tab, carriage return | `\n`, `\t`, `\r` |
//! | other C0 controls (U+0000–U+001F), DEL (U+007F) | `\x00` … `\x1f`, `\x7f` |
//! | C1 controls (U+0080–U+009F) | `\u{80}` … `\u{9f}` |
//! | bidi embeddings and overrides (U+202A–U+202E), isolates (U+2066–U+2069) | `\u{202a}` … |
//! | a byte that is not UTF-8 (only in [`InertWriter`]'s input) | `\x80` … `\xff` |
//!
//! Text without any of these passes unchanged (and unallocated). `--json`
//! output never comes here: JSON has escapes of its own.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

/// `text` as one line: every control character escaped, line breaks and
/// tabs too (a table cell must stay one cell).
pub fn inert(text: &str) -> Cow<'_, str> {
    escaped(text, |_| false)
}

/// `text` as a document: its line breaks and tabs kept, everything else as
/// [`inert`] shows it.
pub fn inert_lines(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t')
}

/// Whether `c` must not reach a terminal as itself.
fn acts(c: char) -> bool {
    matches!(c,
        '\\' | '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escaped(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let Some(first) = text.find(|c| acts(c) && !keep(c)) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first]);
    push_escaped(&text[first..], &keep, &mut out);
    Cow::Owned(out)
}

fn push_escaped(text: &str, keep: &impl Fn(char) -> bool, out: &mut String) {
    for c in text.chars() {
        if !acts(c) || keep(c) {
            out.push(c);
            continue;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{0}'..='\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            _ => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
}

/// A writer that shows the bytes written through it as [`inert_lines`]
/// does (a byte that is not UTF-8 as `\xHH`), for a document too large to
/// hold, streamed to a terminal. Call [`InertWriter::finish`] at the end:
/// a character cut at the last write is held until then.
pub struct InertWriter<W: Write> {
    inner: W,
    /// The start of a character the last write cut (at most 3 bytes).
    pending: Vec<u8>,
}

impl<W: Write> InertWriter<W> {
    pub fn new(inner: W) -> InertWriter<W> {
        InertWriter {
            inner,
            pending: Vec::new(),
        }
    }

    /// Writes what is still held (a cut character, escaped byte by byte)
    /// and flushes; returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        let mut out = String::new();
        for b in std::mem::take(&mut self.pending) {
            let _ = write!(out, "\\x{b:02x}");
        }
        self.inner.write_all(out.as_bytes())?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for InertWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let joined;
        let mut rest: &[u8] = if self.pending.is_empty() {
            buf
        } else {
            joined = [std::mem::take(&mut self.pending).as_slice(), buf].concat();
            &joined
        };
        let mut out = String::with_capacity(rest.len() + 8);
        let keep = |c| c == '\n' || c == '\t';
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    push_escaped(text, &keep, &mut out);
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    push_escaped(
                        std::str::from_utf8(good).expect("valid up to here"),
                        &keep,
                        &mut out,
                    );
                    match e.error_len() {
                        Some(n) => {
                            for b in &bad[..n] {
                                let _ = write!(out, "\\x{b:02x}");
                            }
                            rest = &bad[n..];
                        }
                        // A character cut at the end of this write.
                        None => {
                            self.pending = bad.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        self.inner.write_all(out.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The escape of one character, spelled out case by case.
    fn naive_char(c: char, out: &mut String) {
        let code = c as u32;
        if c == '\\' {
            out.push_str("\\\\");
        } else if c == '\n' {
            out.push_str("\\n");
        } else if c == '\t' {
            out.push_str("\\t");
        } else if c == '\r' {
            out.push_str("\\r");
        } else if code < 0x20 || code == 0x7f {
            out.push_str(&format!("\\x{code:02x}"));
        } else if (0x80..=0x9f).contains(&code)
            || (0x202a..=0x202e).contains(&code)
            || (0x2066..=0x2069).contains(&code)
        {
            out.push_str(&format!("\\u{{{code:x}}}"));
        } else {
            out.push(c);
        }
    }

    fn naive(text: &str) -> String {
        let mut out = String::new();
        for c in text.chars() {
            naive_char(c, &mut out);
        }
        out
    }

    fn naive_lines(text: &str) -> String {
        text.split('\n')
            .map(|line| line.split('\t').map(naive).collect::<Vec<_>>().join("\t"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Bytes as [`InertWriter`] must show them: each byte that does not
    /// start a character the bytes after it complete, escaped alone.
    fn naive_bytes(bytes: &[u8]) -> String {
        let mut out = String::new();
        let mut i = 0;
        while i < bytes.len() {
            let decoded = (1..=4)
                .filter(|k| i + k <= bytes.len())
                .find_map(|k| std::str::from_utf8(&bytes[i..i + k]).ok().map(|s| (s, k)));
            match decoded {
                Some((s, k)) => {
                    out.push_str(&naive_lines(s));
                    i += k;
                }
                None => {
                    out.push_str(&format!("\\x{:02x}", bytes[i]));
                    i += 1;
                }
            }
        }
        out
    }

    /// Reads an escaped text back: every backslash starts exactly one escape.
    fn unescape(text: &str) -> String {
        let mut out = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next().expect("an escape after a backslash") {
                '\\' => out.push('\\'),
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'x' => {
                    let hex: String = chars.by_ref().take(2).collect();
                    out.push(char::from(u8::from_str_radix(&hex, 16).unwrap()));
                }
                'u' => {
                    assert_eq!(chars.next(), Some('{'));
                    let hex: String = chars.by_ref().take_while(|&c| c != '}').collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap());
                }
                other => panic!("not an escape: \\{other}"),
            }
        }
        out
    }

    fn acts_on_a_terminal(c: char) -> bool {
        let code = c as u32;
        code < 0x20
            || (0x7f..=0x9f).contains(&code)
            || (0x202a..=0x202e).contains(&code)
            || (0x2066..=0x2069).contains(&code)
    }

    /// Strings rich in what must be escaped, and in what must not.
    fn text() -> impl Strategy<Value = String> {
        let interesting = prop_oneof![
            (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap()),
            Just('\u{7f}'),
            (0x80u32..0xa0).prop_map(|c| char::from_u32(c).unwrap()),
            (0x2028u32..0x2070).prop_map(|c| char::from_u32(c).unwrap()),
            Just('\\'),
            Just('x'),
            Just('u'),
            Just('{'),
            Just('é'),
            Just('→'),
        ];
        prop_oneof![
            prop::collection::vec(interesting, 0..40).prop_map(|v| v.into_iter().collect()),
            any::<String>(),
        ]
    }

    proptest! {
        #[test]
        fn inert_is_the_naive_escape_and_reads_back(s in text()) {
            let shown = inert(&s);
            let want = naive(&s);
            prop_assert_eq!(shown.as_ref(), want.as_str());
            prop_assert!(!shown.chars().any(acts_on_a_terminal), "{:?}", shown);
            prop_assert!(!shown.bytes().any(|b| b < 0x20 || b == 0x7f));
            prop_assert_eq!(unescape(&shown), s);
        }

        #[test]
        fn text_without_controls_or_backslashes_is_shown_as_it_is(s in any::<String>()) {
            let plain: String = s.chars().filter(|&c| c != '\\' && !acts_on_a_terminal(c)).collect();
            let (one, lines) = (inert(&plain), inert_lines(&plain));
            prop_assert!(matches!(one, Cow::Borrowed(_)));
            prop_assert!(matches!(lines, Cow::Borrowed(_)));
            prop_assert_eq!(one.as_ref(), plain.as_str());
            prop_assert_eq!(lines.as_ref(), plain.as_str());
        }

        #[test]
        fn inert_lines_keeps_only_line_breaks_and_tabs(s in text()) {
            let shown = inert_lines(&s);
            let want = naive_lines(&s);
            prop_assert_eq!(shown.as_ref(), want.as_str());
            prop_assert!(
                !shown.chars().any(|c| acts_on_a_terminal(c) && c != '\n' && c != '\t'),
                "{:?}", shown
            );
            prop_assert_eq!(unescape(&shown), s);
        }

        #[test]
        fn the_writer_shows_any_bytes_in_any_pieces_as_the_naive_escape(
            bytes in prop::collection::vec(any::<u8>(), 0..64),
            text in text(),
            cuts in prop::collection::vec(0usize..80, 0..6),
        ) {
            let mut all = bytes;
            all.extend_from_slice(text.as_bytes());
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(all.len())).collect();
            cuts.sort_unstable();
            let mut w = InertWriter::new(Vec::new());
            let mut at = 0;
            for cut in cuts.into_iter().chain([all.len()]) {
                w.write_all(&all[at..cut]).unwrap();
                at = cut;
            }
            let shown = String::from_utf8(w.finish().unwrap()).unwrap();
            let want = naive_bytes(&all);
            prop_assert_eq!(&shown, &want);
            prop_assert!(!shown.chars().any(|c| acts_on_a_terminal(c) && c != '\n' && c != '\t'));
        }
    }

    #[test]
    fn the_osc_52_clipboard_write_is_shown_not_sent() {
        let s = "x\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}\u{1b}[2J";
        assert_eq!(inert(s), "x\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2J");
        assert_eq!(
            inert("a\\b\nc\td\u{202e}e\u{9b}"),
            "a\\\\b\\nc\\td\\u{202e}e\\u{9b}"
        );
        assert_eq!(inert_lines("one\n\ttwo\r\n"), "one\n\ttwo\\r\n");
    }

    #[test]
    fn a_character_cut_between_writes_is_whole_and_a_cut_at_the_end_is_escaped() {
        let mut w = InertWriter::new(Vec::new());
        let arrow = "→".as_bytes();
        w.write_all(&arrow[..1]).unwrap();
        w.write_all(&arrow[1..]).unwrap();
        w.write_all(&arrow[..2]).unwrap();
        assert_eq!(w.finish().unwrap(), "→\\xe2\\x86".as_bytes());
    }
}
