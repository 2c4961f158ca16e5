//! Which lines of a document look like offload markers: the one rule both
//! `--restore` (which expands them) and compress (which refuses an input
//! holding one restore would refuse) go by.
//!
//! A line looks like a marker when the protected-block scanner reads it as
//! a jkz comment whose first bytes [look like a marker](looks_like_marker)
//! (start with `<!-- jkz:offload`). A marker is one whole line; a comment
//! over several lines (or one left open at the end) that starts like one is
//! a marker that does not parse. A marker quoted in a code block is content.
//!
//! [`MarkerLines`] is fed the scanner's events batch by batch, so a pass
//! that already scans the document (compress's outline) finds them without
//! reading it again. Line numbers, for messages, are counted at the end and
//! only when a line was found.

use std::io;

use super::marker::{looks_like_marker, Marker, PREFIX};
use super::source::{Source, COPY_BUFFER};
use crate::blocks::{BlockScanner, Event, Form};
use crate::lines::LineReader;

/// A line that looks like a marker: where it is (`start..end`, its 1-based
/// number) and the marker it is, or why it is not one.
#[derive(Debug)]
pub struct MarkerLine {
    pub start: u64,
    pub end: u64,
    pub line: u64,
    pub parsed: Result<Marker, String>,
}

/// Collects the lines that look like markers from a scan's events.
#[derive(Debug, Default)]
pub struct MarkerLines {
    found: Vec<MarkerLine>,
}

impl MarkerLines {
    /// Looks at the comment blocks among `events`, which the scanner
    /// reported for `batch` (the input from `batch_start`; empty after
    /// [`BlockScanner::finish`]). A block that does not lie wholly in the
    /// batch is read from `src`.
    pub fn take(
        &mut self,
        src: &Source,
        events: &[Event],
        batch: &[u8],
        batch_start: u64,
    ) -> io::Result<()> {
        let batch_end = batch_start + batch.len() as u64;
        for event in events {
            let Event::Block(b) = event else { continue };
            if b.form != Form::Comment || self.found.last().is_some_and(|f| f.start == b.start) {
                continue;
            }
            let in_batch = b.start >= batch_start && b.end <= batch_end;
            let mut first = [0u8; PREFIX.len()];
            let n = first.len().min((b.end - b.start) as usize);
            if in_batch {
                let at = (b.start - batch_start) as usize;
                first[..n].copy_from_slice(&batch[at..at + n]);
            } else {
                src.read_exact_at(&mut first[..n], b.start)?;
            }
            if !looks_like_marker(&first[..n]) {
                continue;
            }
            let parsed = if !in_batch || !b.closed {
                Err("a marker is one whole line, closed by ` -->`".to_string())
            } else {
                let text = &batch[(b.start - batch_start) as usize..(b.end - batch_start) as usize];
                match memchr::memchr(b'\n', text) {
                    Some(nl) if nl + 1 != text.len() => {
                        Err("a marker is one whole line, closed by ` -->` on it".to_string())
                    }
                    _ => Marker::parse_or_why(text),
                }
            };
            self.found.push(MarkerLine {
                start: b.start,
                end: b.end,
                line: 0,
                parsed,
            });
        }
        Ok(())
    }

    /// The lines found, in order, numbered. Reads `src` up to the last of
    /// them to count lines; not at all when there are none.
    pub fn finish(mut self, src: &Source) -> io::Result<Vec<MarkerLine>> {
        let found = &mut self.found;
        found.sort_by_key(|f| f.start);
        let Some(last) = found.last().map(|f| f.start) else {
            return Ok(Vec::new());
        };
        let (mut at, mut lines, mut next) = (0u64, 1u64, 0usize);
        let mut buf = vec![0; COPY_BUFFER.min(last as usize).max(1)];
        src.for_each_chunk(0, last, &mut buf, |chunk| {
            let mut from = 0;
            while let Some(f) = found
                .get_mut(next)
                .filter(|f| f.start < at + chunk.len() as u64)
            {
                let to = (f.start - at) as usize;
                lines += memchr::memchr_iter(b'\n', &chunk[from..to]).count() as u64;
                f.line = lines;
                (from, next) = (to, next + 1);
            }
            lines += memchr::memchr_iter(b'\n', &chunk[from..]).count() as u64;
            at += chunk.len() as u64;
            Ok(())
        })?;
        for f in &mut found[next..] {
            f.line = lines;
        }
        Ok(self.found)
    }
}

/// Every line in `src` that looks like a marker, outside code, in order.
pub fn find_markers(src: &Source) -> io::Result<Vec<MarkerLine>> {
    let mut reader = LineReader::new(src.reader());
    let mut scanner = BlockScanner::new();
    let mut events = Vec::new();
    let mut found = MarkerLines::default();
    let mut batch_start = 0u64;
    while let Some(batch) = reader.next_batch()? {
        scanner.scan(batch, &mut events);
        found.take(src, &events, batch, batch_start)?;
        events.clear();
        batch_start += batch.len() as u64;
    }
    // A comment still open at the end (or ended by the scanner's bound).
    scanner.finish(&mut events);
    found.take(src, &events, &[], batch_start)?;
    found.finish(src)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(doc: &str) -> Vec<(u64, bool)> {
        let src = Source::spool(doc.as_bytes()).unwrap();
        find_markers(&src)
            .unwrap()
            .iter()
            .map(|f| (f.line, f.parsed.is_ok()))
            .collect()
    }

    #[test]
    fn finds_lookalikes_outside_code_with_their_line_numbers() {
        let good = Marker {
            sha256: "ab".repeat(32),
            bytes: 10,
            lines: 1,
            excerpt: 0,
            path: "/x.md".into(),
        }
        .line();
        let doc = format!(
            "# A\ntext\n{good}```\n{good}```\n<!-- jkz:offload<!-- jkz:verdict-json {{}} -->\n\
             <!-- jkz:offload sha256=\nstill open"
        );
        assert_eq!(lines_of(&doc), vec![(3, true), (7, false), (8, false)]);
        assert_eq!(lines_of("# A\n<!-- jkz:tldr -->\n"), vec![]);
    }

    #[test]
    fn line_numbers_hold_across_copy_chunks() {
        let filler = "x\n".repeat(COPY_BUFFER);
        let doc = format!("{filler}<!-- jkz:offload -->\n{filler}<!-- jkz:offload -->\n");
        let n = COPY_BUFFER as u64;
        assert_eq!(lines_of(&doc), vec![(n + 1, false), (2 * n + 2, false)]);
    }
}
