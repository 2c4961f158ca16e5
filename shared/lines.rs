//! Reading a stream in batches that end where a line (or a long line's piece)
//! ends, as [`crate::blocks::BlockScanner`] requires.
//!
//! Where a batch ends depends on how `read` split the input, but it always
//! ends at a place the scanner accepts, so a streaming tool gives the same
//! answer whether its input arrives in 1-byte or 1-MiB reads.

use std::io::{self, ErrorKind, Read};

/// Lines longer than this are handed out (and scanned by
/// [`crate::blocks::BlockScanner`]) in pieces of this many bytes.
pub const MAX_LINE: usize = 64 * 1024;

/// Default buffer size: large batches keep per-batch costs negligible.
pub const DEFAULT_CAPACITY: usize = 256 * 1024;

/// A reader that hands out batches of whole lines. A line longer than
/// `max_line` is handed out in pieces of `max_line` bytes, counted from the
/// start of the line. Memory: one buffer of `capacity` bytes.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// `buf[start..end]` holds bytes read but not yet handed out.
    start: usize,
    end: usize,
    cut: BatchCut,
    eof: bool,
}

impl<R: Read> LineReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_capacity(inner, DEFAULT_CAPACITY, MAX_LINE)
    }

    /// `capacity` must be at least `max_line` so a piece always fits.
    pub fn with_capacity(inner: R, capacity: usize, max_line: usize) -> Self {
        assert!(max_line > 0 && capacity >= max_line);
        LineReader {
            inner,
            buf: vec![0; capacity],
            start: 0,
            end: 0,
            cut: BatchCut::new(max_line),
            eof: false,
        }
    }

    /// The next batch: one or more whole lines or pieces, or `None` at the end
    /// of the input. The batch ends at a `\n`, at a piece boundary of the
    /// current line, or at the end of the input.
    pub fn next_batch(&mut self) -> io::Result<Option<&[u8]>> {
        loop {
            if let Some(n) = self.cut.next(&self.buf[self.start..self.end], self.eof) {
                return Ok(Some(self.take(n)));
            }
            if self.eof {
                return Ok(None);
            }
            self.fill()?;
        }
    }

    fn take(&mut self, n: usize) -> &[u8] {
        let batch = &self.buf[self.start..self.start + n];
        self.start += n;
        batch
    }

    /// Reads more input once, first moving unread bytes to the front. The
    /// buffer always has room: unread bytes hold no newline and are shorter
    /// than a piece, and the capacity is at least a piece.
    fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            return Ok(());
        }
    }
}

/// The rule for where a batch may end, for readers that manage their own
/// buffers ([`LineReader`], the truncator's chunked window): at the last
/// `\n` of what is pending, else at the current line's next piece boundary
/// once that many bytes are pending, else (at the end of the input) at the
/// end.
#[derive(Clone, Debug)]
pub struct BatchCut {
    /// Bytes of the current line already handed out in earlier batches.
    line_done: usize,
    max_line: usize,
}

impl BatchCut {
    pub fn new(max_line: usize) -> BatchCut {
        assert!(max_line > 0);
        BatchCut {
            line_done: 0,
            max_line,
        }
    }

    /// The length of the next batch at the start of `pending` (bytes read
    /// but not yet handed out), which the caller must then hand out; `None`
    /// when more input is needed first, or, at the end of the input (`eof`),
    /// when nothing is left. Without a newline, fewer than `max_line` bytes
    /// are ever pending while more input is needed.
    pub fn next(&mut self, pending: &[u8], eof: bool) -> Option<usize> {
        // Room left in the current line's current piece.
        let room = self.max_line - self.line_done % self.max_line;
        if let Some(last_nl) = memchr::memrchr(b'\n', pending) {
            // Bytes after the last newline start a fresh line.
            self.line_done = 0;
            return Some(last_nl + 1);
        }
        let n = if pending.len() >= room {
            room
        } else if eof && !pending.is_empty() {
            pending.len()
        } else {
            return None;
        };
        self.line_done += n;
        Some(n)
    }
}

/// What the unit tests of the streaming code share.
#[cfg(test)]
pub(crate) mod test_io {
    use std::io::{self, Read};

    /// Reads in chunks of at most `n` bytes, to reach every buffer edge.
    pub(crate) struct Trickle<'a>(pub &'a [u8], pub usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_io::Trickle;

    fn batches(input: &[u8], chunk: usize, cap: usize, max_line: usize) -> Vec<Vec<u8>> {
        let mut r = LineReader::with_capacity(Trickle(input, chunk), cap, max_line);
        let mut out = Vec::new();
        while let Some(b) = r.next_batch().unwrap() {
            out.push(b.to_vec());
        }
        out
    }

    /// Where the batches may end: every `\n`, every piece boundary, the end.
    fn legal_ends(input: &[u8], max_line: usize) -> Vec<usize> {
        let mut ends = Vec::new();
        let mut line_start = 0;
        for (i, &b) in input.iter().enumerate() {
            if (i + 1 - line_start) % max_line == 0 && b != b'\n' {
                ends.push(i + 1);
            }
            if b == b'\n' {
                ends.push(i + 1);
                line_start = i + 1;
            }
        }
        ends.push(input.len());
        ends
    }

    #[test]
    fn batches_concatenate_to_the_input_and_end_legally() {
        let input = b"ab\ncdefghijklmnop\n\nqrstuvwxyz0123456789 tail without newline";
        for chunk in 1..12 {
            for max_line in 1..9 {
                for cap in [max_line, max_line + 1, 2 * max_line + 3, 64] {
                    let got = batches(input, chunk, cap, max_line);
                    assert_eq!(got.concat(), input.to_vec());
                    let legal = legal_ends(input, max_line);
                    let mut at = 0;
                    for b in &got {
                        assert!(!b.is_empty());
                        at += b.len();
                        assert!(
                            legal.contains(&at),
                            "chunk {chunk} cap {cap} max {max_line}: end {at}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn empty_input_has_no_batches() {
        assert!(batches(b"", 1, 4, 4).is_empty());
    }
}
