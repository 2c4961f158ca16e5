//! Lines of a segment, read through a fixed buffer with a bound on any one
//! line: a huge line (or a segment of garbage with no newline) costs its
//! length in reading, never in memory.

use std::io::{self, Read};

/// One item of a segment.
#[derive(Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// A whole line, without its newline.
    Line(&'a [u8]),
    /// A line longer than the bound, skipped; its length without newline.
    TooLong(u64),
    /// Bytes after the last newline: a line being written, or torn by a
    /// crash. Not consumed: [`LineReader::consumed`] stops before it.
    Partial(u64),
}

/// Reads newline-terminated lines from `R`.
pub struct LineReader<R> {
    inner: R,
    chunk: Vec<u8>,
    pos: usize,
    len: usize,
    line: Vec<u8>,
    max_line: usize,
    /// Bytes read from `inner` that were handed out in whole lines.
    consumed: u64,
    done: bool,
}

impl<R: Read> LineReader<R> {
    /// A reader with a `capacity`-byte buffer (at least 1) whose lines are
    /// at most `max_line` bytes.
    pub fn new(inner: R, capacity: usize, max_line: usize) -> LineReader<R> {
        LineReader {
            inner,
            chunk: vec![0; capacity.max(1)],
            pos: 0,
            len: 0,
            line: Vec::new(),
            max_line,
            consumed: 0,
            done: false,
        }
    }

    /// Offset just past the last whole line (or skipped long line) handed out.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// The next item; `None` at the end.
    pub fn next_item(&mut self) -> io::Result<Option<Item<'_>>> {
        if self.done {
            return Ok(None);
        }
        self.line.clear();
        let mut length: u64 = 0;
        loop {
            if self.pos == self.len {
                self.len = loop {
                    match self.inner.read(&mut self.chunk) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    }
                };
                self.pos = 0;
                if self.len == 0 {
                    self.done = true;
                    return Ok((length > 0).then_some(Item::Partial(length)));
                }
            }
            let avail = &self.chunk[self.pos..self.len];
            let (take, newline) = match memchr::memchr(b'\n', avail) {
                Some(i) => (i, true),
                None => (avail.len(), false),
            };
            if length + take as u64 <= self.max_line as u64 {
                self.line.extend_from_slice(&avail[..take]);
            } else {
                // Past the bound: what was kept is dropped, the rest skipped.
                self.line = Vec::new();
            }
            length += take as u64;
            self.pos += take + usize::from(newline);
            if newline {
                self.consumed += length + 1;
                return Ok(Some(if length > self.max_line as u64 {
                    Item::TooLong(length)
                } else {
                    Item::Line(&self.line)
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Lines (a long one as its length), the partial tail, bytes consumed.
    type Read = (Vec<Result<Vec<u8>, u64>>, Option<u64>, u64);

    /// The oracle: split on newlines, whole lines only, the rest partial.
    fn naive(bytes: &[u8], max: usize) -> Read {
        let mut items = Vec::new();
        let mut rest = bytes;
        let mut consumed = 0;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            items.push(if i > max {
                Err(i as u64)
            } else {
                Ok(rest[..i].to_vec())
            });
            consumed += i as u64 + 1;
            rest = &rest[i + 1..];
        }
        let partial = (!rest.is_empty()).then_some(rest.len() as u64);
        (items, partial, consumed)
    }

    fn read_all(bytes: &[u8], cap: usize, max: usize) -> Read {
        let mut r = LineReader::new(bytes, cap, max);
        let mut items = Vec::new();
        let mut partial = None;
        while let Some(item) = r.next_item().unwrap() {
            match item {
                Item::Line(l) => items.push(Ok(l.to_vec())),
                Item::TooLong(n) => items.push(Err(n)),
                Item::Partial(n) => partial = Some(n),
            }
        }
        (items, partial, r.consumed())
    }

    #[test]
    fn edges() {
        assert_eq!(read_all(b"", 1, 4), (vec![], None, 0));
        assert_eq!(read_all(b"\n", 1, 4), (vec![Ok(vec![])], None, 1));
        assert_eq!(
            read_all(b"ab\nabcdef\nxy", 2, 4),
            (vec![Ok(b"ab".to_vec()), Err(6)], Some(2), 10)
        );
    }

    proptest! {
        #[test]
        fn matches_the_naive_split(
            bytes in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'a'), any::<u8>()], 0..300),
            cap in 1usize..20,
            max in 0usize..40,
        ) {
            prop_assert_eq!(read_all(&bytes, cap, max), naive(&bytes, max));
        }
    }
}
