//! The first and the last bytes of a stream, in bounded memory.

use std::collections::VecDeque;

/// Size of one tail chunk: large enough that per-chunk costs vanish, small
/// enough that the slack above `tail_keep` is negligible.
pub const CHUNK: usize = 64 * 1024;

/// Keeps the first `head_keep` bytes of a stream and (at least) the last
/// `tail_keep` bytes. The tail is a deque of fixed, reusable chunks: when the
/// oldest chunk is no longer needed to hold `tail_keep` bytes it is evicted
/// and recycled, so memory is `head_keep + tail_keep + 2 chunks` whatever
/// the stream's length.
#[derive(Debug)]
pub struct HeadTailBuffer {
    head: Vec<u8>,
    head_keep: usize,
    /// Chunks in stream order; every chunk but the last is full.
    tail: VecDeque<Vec<u8>>,
    tail_keep: usize,
    /// Bytes held in `tail`.
    tail_len: usize,
    /// Absolute offset of the first byte held in `tail`.
    tail_base: u64,
    /// One evicted chunk kept for reuse.
    spare: Option<Vec<u8>>,
    chunk: usize,
}

impl HeadTailBuffer {
    pub fn new(head_keep: usize, tail_keep: usize, chunk: usize) -> HeadTailBuffer {
        assert!(chunk > 0);
        HeadTailBuffer {
            head: Vec::new(),
            head_keep,
            tail: VecDeque::new(),
            tail_keep,
            tail_len: 0,
            tail_base: 0,
            spare: Some(Vec::with_capacity(chunk)),
            chunk,
        }
    }

    /// Total bytes pushed so far.
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

    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < self.head_keep {
            let n = bytes.len().min(self.head_keep - self.head.len());
            self.head.extend_from_slice(&bytes[..n]);
        }
        while !bytes.is_empty() {
            let room = match self.tail.back() {
                Some(last) if last.len() < self.chunk => self.chunk - last.len(),
                _ => {
                    let chunk = self
                        .spare
                        .take()
                        .unwrap_or_else(|| Vec::with_capacity(self.chunk));
                    self.tail.push_back(chunk);
                    continue;
                }
            };
            let n = room.min(bytes.len());
            self.tail
                .back_mut()
                .expect("a chunk with room")
                .extend_from_slice(&bytes[..n]);
            self.tail_len += n;
            bytes = &bytes[n..];
            self.evict();
        }
    }

    fn evict(&mut self) {
        while let Some(front) = self.tail.front() {
            if self.tail_len - front.len() < self.tail_keep || self.tail.len() == 1 {
                break;
            }
            let mut chunk = self.tail.pop_front().expect("checked");
            self.tail_len -= chunk.len();
            self.tail_base += chunk.len() as u64;
            chunk.clear();
            self.spare = Some(chunk);
        }
    }

    /// Appends the bytes `start..end` (absolute offsets, still held in the
    /// tail) to `out`.
    pub fn copy_range(&self, start: u64, end: u64, out: &mut Vec<u8>) {
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
            if skip >= chunk.len() {
                skip -= chunk.len();
                continue;
            }
            let n = (chunk.len() - skip).min(want);
            out.extend_from_slice(&chunk[skip..skip + n]);
            want -= n;
            skip = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_head_and_enough_tail_with_tiny_chunks() {
        let input: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        for chunk in [1, 2, 3, 7, 64] {
            for push in [1, 5, 13, 400] {
                let mut buf = HeadTailBuffer::new(10, 33, chunk);
                for piece in input.chunks(push) {
                    buf.push(piece);
                    let len = buf.len();
                    assert!(len - buf.tail_start() >= 33.min(len));
                    assert!(len - buf.tail_start() <= 33 + chunk as u64);
                }
                assert_eq!(buf.head(), &input[..10]);
                let mut out = Vec::new();
                buf.copy_range(1000 - 33, 1000, &mut out);
                assert_eq!(out, &input[1000 - 33..]);
                out.clear();
                buf.copy_range(980, 990, &mut out);
                assert_eq!(out, &input[980..990]);
            }
        }
    }
}
