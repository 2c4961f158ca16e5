//! The first and the last bytes of a stream, in bounded memory, read
//! straight into the chunks that keep them.
//!
//! The input is read into the newest tail chunk and handed out from there
//! in batches that end where the block scanner accepts them
//! ([`BatchCut`]): every byte is copied once by the kernel into its final
//! place and scanned while it is still in the cache, never copied again in
//! user space (except the first `head_keep` bytes, and the few bytes of an
//! unfinished line carried into a fresh chunk).

use std::collections::VecDeque;
use std::io::{self, ErrorKind, Read};

use crate::lines::BatchCut;

/// Size of one chunk, and so the largest read and the largest batch: large
/// enough that per-read and per-chunk costs vanish, small enough that a
/// batch is still in the cache when it is scanned.
pub const CHUNK: usize = 256 * 1024;

/// A fixed buffer of the tail: allocated (zeroed) once, then recycled.
#[derive(Debug)]
pub struct Chunk {
    buf: Box<[u8]>,
    /// `buf[..len]` has been handed out: it is part of the stream so far.
    len: usize,
    /// `buf[len..filled]` has been read but not handed out yet (only ever
    /// in the newest chunk).
    filled: usize,
}

impl Chunk {
    fn new(size: usize) -> Chunk {
        Chunk {
            buf: vec![0; size].into_boxed_slice(),
            len: 0,
            filled: 0,
        }
    }

    /// The stream bytes this chunk holds.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// A chunk holding `bytes`, for tests of what chunks are handed to.
    #[cfg(test)]
    pub fn of(bytes: &[u8]) -> Chunk {
        let mut chunk = Chunk::new(bytes.len());
        chunk.buf.copy_from_slice(bytes);
        chunk.len = bytes.len();
        chunk.filled = bytes.len();
        chunk
    }
}

/// Keeps the first `head_keep` bytes of a stream and (at least) the last
/// `tail_keep` bytes handed out. The tail is a deque of fixed chunks: when
/// the oldest chunk is no longer needed to hold `tail_keep` bytes it is
/// evicted ([`take_evicted`]); the caller recycles it ([`recycle`]) once it
/// is done with it. Memory is `head_keep + tail_keep + 2 chunks`, plus the
/// evicted chunks the caller holds, whatever the stream's length.
///
/// [`take_evicted`]: HeadTailBuffer::take_evicted
/// [`recycle`]: HeadTailBuffer::recycle
#[derive(Debug)]
pub struct HeadTailBuffer {
    head: Vec<u8>,
    head_keep: usize,
    /// Chunks in stream order; never empty. Only the newest one has bytes
    /// not handed out yet.
    tail: VecDeque<Chunk>,
    tail_keep: usize,
    /// Bytes handed out and held in `tail`.
    tail_len: usize,
    /// Absolute offset of the first byte held in `tail`.
    tail_base: u64,
    /// Evicted chunks not yet taken by the caller, oldest first.
    evicted: VecDeque<Chunk>,
    /// Chunks ready for reuse.
    spare: Vec<Chunk>,
    chunk: usize,
    cut: BatchCut,
    /// Length of the last batch handed out (it ends the newest chunk).
    batch: usize,
    eof: bool,
}

impl HeadTailBuffer {
    /// `chunk` must be at least `max_line`, so that an unfinished piece of
    /// a line always fits in a fresh chunk with room to spare.
    pub fn new(head_keep: usize, tail_keep: usize, chunk: usize, max_line: usize) -> Self {
        assert!(max_line > 0 && chunk >= max_line);
        HeadTailBuffer {
            head: Vec::new(),
            head_keep,
            tail: VecDeque::from([Chunk::new(chunk)]),
            tail_keep,
            tail_len: 0,
            tail_base: 0,
            evicted: VecDeque::new(),
            spare: Vec::new(),
            chunk,
            cut: BatchCut::new(max_line),
            batch: 0,
            eof: false,
        }
    }

    /// Total bytes handed out so far.
    pub fn len(&self) -> u64 {
        self.tail_base + self.tail_len as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first bytes of the stream (at most `head_keep`).
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// Absolute offset of the oldest byte still held in the tail.
    pub fn tail_start(&self) -> u64 {
        self.tail_base
    }

    /// Reads from `input` until the next batch can be handed out (see
    /// [`BatchCut`]) and hands it out: afterwards it is [`batch`] and the
    /// last bytes of the stream so far. Returns its length, or `None` at
    /// the end of the input.
    ///
    /// [`batch`]: HeadTailBuffer::batch
    pub fn next_batch(&mut self, input: &mut impl Read) -> io::Result<Option<usize>> {
        loop {
            let newest = self.tail.back_mut().expect("never empty");
            if let Some(n) = self
                .cut
                .next(&newest.buf[newest.len..newest.filled], self.eof)
            {
                let batch = &newest.buf[newest.len..newest.len + n];
                if self.head.len() < self.head_keep {
                    let h = n.min(self.head_keep - self.head.len());
                    self.head.extend_from_slice(&batch[..h]);
                }
                newest.len += n;
                self.tail_len += n;
                self.batch = n;
                self.evict();
                return Ok(Some(n));
            }
            if self.eof {
                self.batch = 0;
                return Ok(None);
            }
            if newest.filled == newest.buf.len() {
                self.carry_into_fresh_chunk();
            }
            let newest = self.tail.back_mut().expect("never empty");
            match input.read(&mut newest.buf[newest.filled..]) {
                Ok(0) => self.eof = true,
                Ok(n) => newest.filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Ends the input here: what was read is handed out by the next calls
    /// of [`next_batch`](HeadTailBuffer::next_batch), which then reads no
    /// more (a reading that stopped early keeps what it read).
    pub fn end_input(&mut self) {
        self.eof = true;
    }

    /// The newest chunk is full but its last bytes (part of a line, shorter
    /// than a piece) are not handed out: they move to a fresh chunk.
    fn carry_into_fresh_chunk(&mut self) {
        let mut fresh = self.spare.pop().unwrap_or_else(|| Chunk::new(self.chunk));
        let newest = self.tail.back_mut().expect("never empty");
        let pending = &newest.buf[newest.len..newest.filled];
        fresh.buf[..pending.len()].copy_from_slice(pending);
        fresh.len = 0;
        fresh.filled = pending.len();
        newest.filled = newest.len;
        self.tail.push_back(fresh);
    }

    /// Marks the last batch as taken care of: [`batch`] is empty until the
    /// next one (at the end of the input, when the scanner's last blocks
    /// are taken).
    ///
    /// [`batch`]: HeadTailBuffer::batch
    pub fn end_batch(&mut self) {
        self.batch = 0;
    }

    /// The last batch handed out.
    pub fn batch(&self) -> &[u8] {
        let newest = self.tail.back().expect("never empty");
        &newest.buf[newest.len - self.batch..newest.len]
    }

    fn evict(&mut self) {
        while self.tail.len() > 1 {
            let front = self.tail.front().expect("checked");
            if self.tail_len - front.len < self.tail_keep {
                break;
            }
            let chunk = self.tail.pop_front().expect("checked");
            self.tail_len -= chunk.len;
            self.tail_base += chunk.len as u64;
            self.evicted.push_back(chunk);
        }
    }

    /// The oldest evicted chunk not taken yet. Evicted chunks come in
    /// stream order and follow each other without gaps, starting at offset
    /// 0; one exists only once the stream is longer than `tail_keep`.
    pub fn take_evicted(&mut self) -> Option<Chunk> {
        self.evicted.pop_front()
    }

    /// Gives back a chunk for reuse.
    pub fn recycle(&mut self, mut chunk: Chunk) {
        if chunk.buf.len() == self.chunk {
            chunk.len = 0;
            chunk.filled = 0;
            self.spare.push(chunk);
        }
    }

    /// Every chunk still held (evicted or not), in stream order: at the end
    /// of the input, the rest of the stream after what was evicted and
    /// taken. The head and what was copied out stay.
    pub fn drain_chunks(&mut self) -> impl Iterator<Item = Chunk> + '_ {
        self.tail_base = self.len();
        self.tail_len = 0;
        self.batch = 0;
        self.evicted.drain(..).chain(self.tail.drain(..))
    }

    /// Appends the bytes `start..end` (absolute offsets, still held in the
    /// tail) to `out`.
    pub fn copy_range(&self, start: u64, end: u64, out: &mut Vec<u8>) {
        self.for_each_slice(start, end, |s| out.extend_from_slice(s));
    }

    /// Newlines among the bytes `start..end` (still held in the tail).
    pub fn count_newlines(&self, start: u64, end: u64) -> u64 {
        let mut n = 0;
        self.for_each_slice(start, end, |s| {
            n += memchr::memchr_iter(b'\n', s).count() as u64;
        });
        n
    }

    /// Calls `f` on the bytes `start..end` (still held), chunk by chunk.
    fn for_each_slice(&self, start: u64, end: u64, mut f: impl FnMut(&[u8])) {
        assert!(
            start >= self.tail_base && start <= end && end <= self.len(),
            "range {start}..{end} not held (tail holds {}..{})",
            self.tail_base,
            self.len()
        );
        let mut skip = (start - self.tail_base) as usize;
        let mut want = (end - start) as usize;
        for chunk in &self.tail {
            if want == 0 {
                break;
            }
            let bytes = chunk.bytes();
            if skip >= bytes.len() {
                skip -= bytes.len();
                continue;
            }
            let n = (bytes.len() - skip).min(want);
            f(&bytes[skip..skip + n]);
            want -= n;
            skip = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::lines::test_io::Trickle;

    #[test]
    fn keeps_head_and_enough_tail_with_tiny_chunks() {
        // Lines of every length 0..=20, some longer than a piece.
        let mut input = Vec::new();
        for i in 0..200usize {
            input.extend((0..i % 21).map(|j| b'a' + ((i + j) % 26) as u8));
            input.push(b'\n');
        }
        input.extend_from_slice(b"no newline at the end");
        let n = input.len() as u64;
        for max_line in [1, 3, 8] {
            for chunk in [max_line, max_line + 1, 2 * max_line + 3, 64] {
                for read in [1, 5, 13, 400] {
                    let mut buf = HeadTailBuffer::new(10, 33, chunk, max_line);
                    let mut reader = Trickle(&input, read);
                    let mut seen = Vec::new();
                    let mut evicted = Vec::new();
                    while let Some(len) = buf.next_batch(&mut reader).unwrap() {
                        assert_eq!(buf.batch().len(), len);
                        assert!(len > 0);
                        seen.extend_from_slice(buf.batch());
                        let at = buf.len();
                        assert_eq!(at, seen.len() as u64);
                        assert!(at - buf.tail_start() >= 33.min(at));
                        assert!(at - buf.tail_start() <= 33 + chunk as u64);
                        while let Some(c) = buf.take_evicted() {
                            evicted.extend_from_slice(c.bytes());
                            buf.recycle(c);
                        }
                        assert_eq!(evicted.len() as u64, buf.tail_start());
                    }
                    assert_eq!(seen, input, "max_line {max_line} chunk {chunk} read {read}");
                    assert_eq!(buf.head(), &input[..10]);
                    let mut out = Vec::new();
                    buf.copy_range(n - 33, n, &mut out);
                    assert_eq!(out, &input[input.len() - 33..]);
                    out.clear();
                    buf.copy_range(n - 20, n - 10, &mut out);
                    assert_eq!(out, &input[input.len() - 20..input.len() - 10]);
                    for c in buf.drain_chunks() {
                        evicted.extend_from_slice(c.bytes());
                    }
                    assert_eq!(evicted, input, "evicted + drained is the stream");
                }
            }
        }
    }
}
