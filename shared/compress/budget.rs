//! `--budget`: which thresholds are tried, and how long each output is.
//!
//! The output's size is not monotone in the threshold. A lower threshold
//! offloads a section's subsections one by one (an excerpt and a marker
//! each) where a higher one offloaded the whole section behind one excerpt,
//! so lowering the threshold can make the output larger. The search
//! therefore measures every candidate exactly and keeps the best, never the
//! last one tried:
//!
//! - the thresholds of [`ladder`] are tried in order, `--threshold` first,
//!   and the first output that fits the budget is the answer;
//! - when none fits, the smallest output is made (ties go to the earlier
//!   threshold, so `--threshold`'s own output wins a tie) and the search
//!   starts again on it: a section offloaded whole at one threshold leaves
//!   the rest to be offloaded at a lower one. It stops at an output that
//!   fits, or when no candidate is smaller than the output so far.
//!
//! So with a budget the output is never larger than without one (the first
//! round's smallest is at most `--threshold`'s output; later rounds only
//! shrink it), and compressing the result again changes nothing: its
//! `--threshold` output is itself (it offloads nothing), which either fits
//! or is the smallest candidate, since the search stopped there.

use std::collections::HashMap;
use std::io;

use super::marker::{count_lines, Marker};
use super::plan::{Item, Piece, Plan};
use super::source::Source;

/// The thresholds tried, in order: `threshold`, then each an eighth lower
/// than the one before, ending with `floor` (`floor <= threshold`).
/// Twelve steps from the default 16 KiB to its floor of 4 KiB.
pub fn ladder(threshold: u64, floor: u64) -> Vec<u64> {
    let mut steps = vec![threshold];
    let mut t = threshold;
    while t > floor {
        t = (t - (t / 8).max(1)).max(floor);
        steps.push(t);
    }
    steps
}

/// Line counts of offloaded stretches already measured, by their pieces:
/// successive candidates offload mostly the same stretches.
#[derive(Default)]
pub struct LineCounts(HashMap<Vec<Piece>, u64>);

/// The exact length of the output `plan` writes for `src`, marker lines
/// included (`path_len` is the length of a marker's `path=` value).
pub fn exact_len(
    src: &Source,
    plan: &Plan,
    path_len: usize,
    counts: &mut LineCounts,
    buf: &mut [u8],
) -> io::Result<u64> {
    let mut len = 0;
    for item in &plan.items {
        len += match *item {
            Item::Text(piece) => piece.len(),
            Item::Kept { start, end } => end - start,
            Item::Offload(i) => {
                let offload = &plan.offloads[i];
                let lines = match counts.0.get(&offload.pieces) {
                    Some(&lines) => lines,
                    None => {
                        let lines = count_piece_lines(src, &offload.pieces, offload.len, buf)?;
                        counts.0.insert(offload.pieces.clone(), lines);
                        lines
                    }
                };
                Marker::len_for(offload.len, lines, offload.excerpt, path_len)
            }
        };
    }
    Ok(len)
}

fn count_piece_lines(src: &Source, pieces: &[Piece], len: u64, buf: &mut [u8]) -> io::Result<u64> {
    let (mut newlines, mut last) = (0u64, None);
    for &piece in pieces {
        match piece {
            Piece::Input { start, end } => src.for_each_chunk(start, end, buf, |chunk| {
                newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
                last = chunk.last().copied().or(last);
                Ok(())
            })?,
            Piece::Newline => (newlines, last) = (newlines + 1, Some(b'\n')),
        }
    }
    Ok(count_lines(newlines, len, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_steps_down_by_an_eighth_to_the_floor() {
        assert_eq!(ladder(4096, 4096), [4096]);
        let steps = ladder(16384, 4096);
        assert_eq!(steps.first(), Some(&16384));
        assert_eq!(steps.last(), Some(&4096));
        assert_eq!(steps.len(), 12, "{steps:?}");
        for pair in steps.windows(2) {
            assert!(pair[1] < pair[0] && pair[1] >= pair[0] - pair[0] / 8);
        }
        assert_eq!(ladder(1025, 1024), [1025, 1024]);
    }
}
