//! Laying out a truncated output: head, placed blocks, tail, and one marker
//! per gap (see the budget in [`super`]'s docs).

use std::io::{self, Write};

use super::marker::{cut_marker_extra, cut_marker_line, marker_bound, marker_line};
use super::select::{select, Candidate, Markers, Placement};
use crate::blocks::Kind;
use crate::cut;

/// Counts `\n` bytes; every byte of the input passes here once. memchr's
/// counter (runtime-detected AVX2) measured about three times faster on
/// dense log lines than a portable loop of byte compares and adds written
/// to auto-vectorize (the baseline x86-64 target gets SSE2 only).
pub(super) fn count_newlines(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64
}

/// What the assembly sees of an input longer than the cap.
pub(super) struct Input<'a> {
    pub(super) total: u64,
    pub(super) newlines: u64,
    /// The input's first bytes (at least `cap + 3` of them).
    pub(super) head: &'a [u8],
    /// The input's last bytes (at least `cap + 3` of them, or all).
    pub(super) tail: &'a [u8],
    pub(super) blocks: &'a [Candidate],
}

/// Writes the truncated output (see the module docs).
pub(super) fn assemble(
    input: &Input,
    cap: u64,
    head_share: f64,
    path: Option<&str>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let marker = marker_bound(input.total, path);
    if marker > cap {
        let h = cut::head_cut(input.head, cap as usize);
        return out.write_all(&input.head[..h]);
    }
    let markers = Markers {
        gap: marker,
        cut: cut_marker_extra(input.total, path),
    };
    let blocks: Vec<_> = input.blocks.iter().map(|c| c.block()).collect();
    let selection = select(&blocks, cap, markers);
    let (head_budget, tail_budget) = split(cap - selection.used, head_share);
    let h = cut::head_cut(input.head, head_budget as usize);
    let tail_from = cut::tail_cut(input.tail, tail_budget as usize);
    let tail_base = input.total - input.tail.len() as u64;

    let mut pieces: Vec<Piece> = Vec::new();
    pieces.push(Piece {
        start: 0,
        bytes: &input.head[..h],
        newlines_before: 0,
        cut: None,
    });
    for (c, placed) in input.blocks.iter().zip(selection.placed) {
        let (bytes, cut) = match placed {
            Placement::Skipped => continue,
            // A block held only in part is placed whole only when other
            // placed blocks cover it: they write its bytes.
            Placement::Whole if (c.head().len() as u64) < c.span.len() => continue,
            Placement::Whole => (c.head(), None),
            Placement::Head(n) => {
                let end_newlines = c.newlines_before + c.newlines;
                (
                    &c.head()[..n as usize],
                    Some((c.span.kind, c.span.end, end_newlines)),
                )
            }
        };
        pieces.push(Piece {
            start: c.span.start,
            bytes,
            newlines_before: c.newlines_before,
            cut,
        });
    }
    let tail = &input.tail[tail_from..];
    pieces.push(Piece {
        start: tail_base + tail_from as u64,
        bytes: tail,
        newlines_before: input.newlines - count_newlines(tail),
        cut: None,
    });
    pieces.sort_by_key(|p| (p.start, std::cmp::Reverse(p.bytes.len())));

    let mut gap = Gap {
        at: 0, // everything before `at` is written or omitted
        newlines: 0,
        last: None,
        cut: None,
        path,
    };
    for piece in pieces {
        let end = piece.start + piece.bytes.len() as u64;
        if end <= gap.at {
            continue;
        }
        if piece.start > gap.at {
            gap.write(piece.start, piece.newlines_before, out)?;
        }
        let from = gap.at.saturating_sub(piece.start) as usize;
        let fresh = &piece.bytes[from..];
        if let Some(&b) = fresh.last() {
            out.write_all(fresh)?;
            gap.last = Some(b);
        }
        if piece.cut.is_some() {
            gap.cut = piece.cut;
        }
        gap.at = end;
        gap.newlines = piece.newlines_before + count_newlines(piece.bytes);
    }
    if gap.at < input.total {
        gap.write(input.total, input.newlines, out)?;
    }
    Ok(())
}

/// A stretch of the input that is written: the head, a placed block (or
/// its head: `cut` is then its kind, end, and newlines before its end), the
/// tail.
struct Piece<'a> {
    start: u64,
    bytes: &'a [u8],
    newlines_before: u64,
    cut: Option<(Kind, u64, u64)>,
}

/// Where the output stands while the pieces are written.
struct Gap<'a> {
    at: u64,
    /// Newlines before `at`.
    newlines: u64,
    /// The last byte written.
    last: Option<u8>,
    /// The last block written only in part (its head): kind, end, newlines
    /// before its end. Every gap that starts inside it names it.
    cut: Option<(Kind, u64, u64)>,
    path: Option<&'a str>,
}

impl Gap<'_> {
    /// Writes the marker of the gap from `at` to `to` (`newlines` before
    /// `to`), naming the cut block it starts in, if any.
    fn write(&mut self, to: u64, newlines: u64, out: &mut dyn Write) -> io::Result<()> {
        let bytes = to - self.at;
        let lines = newlines - self.newlines;
        let line = match self.cut {
            Some((kind, end, end_newlines)) if end > self.at => {
                let in_block = if to <= end {
                    (bytes, lines)
                } else {
                    (end - self.at, end_newlines - self.newlines)
                };
                cut_marker_line(kind, in_block, (bytes, lines), self.path, self.last)
            }
            _ => marker_line(bytes, lines, self.path, self.last),
        };
        out.write_all(line.as_bytes())?;
        self.last = Some(b'\n');
        Ok(())
    }
}

/// Splits what is left for head and tail by the head share.
pub(super) fn split(rest: u64, head_share: f64) -> (u64, u64) {
    let head = ((rest as f64) * head_share.clamp(0.0, 1.0)).floor() as u64;
    let head = head.min(rest);
    (head, rest - head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_count_matches_a_naive_count() {
        let mut bytes = Vec::new();
        for i in 0..40_000usize {
            bytes.push(if i % 7 == 0 || i % 11 == 3 {
                b'\n'
            } else {
                b'a'
            });
        }
        // A long run of newlines only.
        bytes.extend(std::iter::repeat_n(b'\n', 64 * 255 * 2 + 5));
        for (from, to) in [
            (0, 0),
            (0, bytes.len()),
            (3, 16_325),
            (1, 40_000),
            (40_000, bytes.len()),
        ] {
            let part = &bytes[from..to];
            let naive = part.iter().filter(|&&b| b == b'\n').count() as u64;
            assert_eq!(count_newlines(part), naive, "{from}..{to}");
        }
    }

    #[test]
    fn split_by_share() {
        assert_eq!(split(100, 0.25), (25, 75));
        assert_eq!(split(101, 1.0), (101, 0));
        assert_eq!(split(7, 0.0), (0, 7));
    }
}
