//! Which protected blocks get into the output, and the bounded pool of
//! candidates kept while the input streams by.
//!
//! # The rule
//!
//! Blocks are placed in the budget first, in precedence order: kind priority
//! ([`Kind`]'s order, `verdict-json` highest), then, within a kind, the last
//! occurrence first (later start; for equal starts the longer block). A
//! block's cost is its bytes not already covered by chosen blocks plus one
//! marker line (the gap it may open); a block that is already covered costs
//! nothing. A block that does not fit is skipped and the next one is tried,
//! so a smaller, lower-priority block may still get in. One more marker is
//! reserved up front for the head/tail gap.
//!
//! # Bounded memory
//!
//! Blocks arrive while the input streams, and their bytes must be copied out
//! before they leave the window. The [`Pool`] keeps the candidates: only
//! blocks no longer than the cap are taken, and whenever the pool holds more
//! than `prune_at` bytes it is cut down to what [`select`] would choose from
//! it right now (with the smallest possible marker). `prune_at` is what
//! survived the last cut plus twice the cap, so pruning is amortized (each
//! cut follows two caps of new blocks) and the pool stays within about three
//! caps (a little more when chosen blocks nest: each is stored whole). The final choice is [`select`] over the pool at the end of the
//! input. A block pruned early is gone for good even if a later, higher block
//! would have pushed out the one that beat it: the rule is "the greedy choice
//! over the pool", and the pool is defined by this pruning schedule.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use crate::blocks::Kind;

/// Where a block lies: its kind and half-open absolute byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub kind: Kind,
    pub start: u64,
    pub end: u64,
}

/// The result of [`select`].
#[derive(Debug, PartialEq, Eq)]
pub struct Selection {
    /// One flag per input span: chosen or not.
    pub chosen: Vec<bool>,
    /// Budget used: chosen bytes (each counted once), one marker per chosen
    /// block that added bytes, and the reserved head/tail marker.
    pub used: u64,
}

/// Chooses blocks for a budget of `cap` bytes with markers of `marker`
/// bytes (see the module docs for the rule).
pub fn select(spans: &[Span], cap: u64, marker: u64) -> Selection {
    let overlaps = overlapping(spans);
    let mut chosen = vec![false; spans.len()];
    let mut covered = Coverage::default();
    let mut used = marker;
    for i in precedence(spans) {
        let s = spans[i];
        // Only a block that overlaps another needs the interval arithmetic:
        // in a log most blocks overlap nothing.
        let new = if overlaps[i] {
            covered.uncovered(s.start, s.end)
        } else {
            s.end - s.start
        };
        if new == 0 {
            chosen[i] = true;
        } else if used + new + marker <= cap {
            chosen[i] = true;
            used += new + marker;
            if overlaps[i] {
                covered.insert(s.start, s.end);
            }
        }
    }
    Selection { chosen, used }
}

/// Indices of `spans` in precedence order: kind, then later start first,
/// then longer first. The pool calls this on every prune, so it is built
/// to be cheap on the pool's order (arrival order, which is by end): one
/// bucket per kind, each reversed, is then already (nearly) sorted, and the
/// adaptive stable sort only checks it. The keys are unique for distinct
/// spans, so the result does not depend on the input order.
fn precedence(spans: &[Span]) -> Vec<usize> {
    let mut order: Vec<usize> = Vec::with_capacity(spans.len());
    for kind in Kind::ALL {
        order.extend((0..spans.len()).rev().filter(|&i| spans[i].kind == kind));
    }
    order.sort_by_key(|&i| {
        let s = spans[i];
        (s.kind, Reverse(s.start), Reverse(s.end))
    });
    order
}

/// For each span, whether it shares a byte with another span. With the
/// spans ordered by end, span `i` overlaps an earlier one exactly when the
/// previous end is past its start, and a later one exactly when the
/// smallest later start is before its end.
fn overlapping(spans: &[Span]) -> Vec<bool> {
    let mut by_end: Vec<usize> = (0..spans.len()).collect();
    if !by_end.is_sorted_by_key(|&i| spans[i].end) {
        by_end.sort_by_key(|&i| spans[i].end);
    }
    let mut overlaps = vec![false; spans.len()];
    let mut min_later_start = u64::MAX;
    for (k, &i) in by_end.iter().enumerate().rev() {
        let s = spans[i];
        let earlier = k > 0 && spans[by_end[k - 1]].end > s.start;
        overlaps[i] = earlier || min_later_start < s.end;
        min_later_start = min_later_start.min(s.start);
    }
    overlaps
}

/// Disjoint covered ranges, start → end.
#[derive(Default)]
struct Coverage(BTreeMap<u64, u64>);

impl Coverage {
    fn uncovered(&self, start: u64, end: u64) -> u64 {
        let mut covered = 0;
        for (&s, &e) in self.0.range(..end).rev() {
            if e <= start {
                break;
            }
            covered += e.min(end) - s.max(start);
        }
        (end - start) - covered
    }

    fn insert(&mut self, mut start: u64, mut end: u64) {
        // Merge with every range that overlaps or touches, last one first.
        while let Some((&s, &e)) = self.0.range(..=end).next_back() {
            if e < start {
                break;
            }
            self.0.remove(&s);
            start = start.min(s);
            end = end.max(e);
        }
        self.0.insert(start, end);
    }
}

/// A block kept for the output: where it lies, and its bytes.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub span: Span,
    /// Newlines in the input before `span.start` (for the markers' counts).
    pub newlines_before: u64,
    pub bytes: Vec<u8>,
}

/// The candidates kept while streaming (see the module docs).
#[derive(Debug)]
pub struct Pool {
    cap: u64,
    marker: u64,
    candidates: Vec<Candidate>,
    bytes: u64,
    prune_at: u64,
}

impl Pool {
    /// A pool for output cap `cap`, pruning with markers of `marker` bytes.
    pub fn new(cap: u64, marker: u64) -> Pool {
        Pool {
            cap,
            marker,
            candidates: Vec::new(),
            bytes: 0,
            prune_at: 2 * cap,
        }
    }

    /// True when a block this long could ever be placed.
    pub fn wants(&self, len: u64) -> bool {
        len <= self.cap
    }

    pub fn add(&mut self, candidate: Candidate) {
        debug_assert!(self.wants(candidate.span.end - candidate.span.start));
        self.bytes += candidate.bytes.len() as u64;
        self.candidates.push(candidate);
        if self.bytes > self.prune_at {
            self.prune();
        }
    }

    fn prune(&mut self) {
        let spans: Vec<Span> = self.candidates.iter().map(|c| c.span).collect();
        let keep = select(&spans, self.cap, self.marker).chosen;
        let mut flags = keep.into_iter();
        self.candidates.retain(|_| flags.next().unwrap_or(false));
        self.bytes = self.candidates.iter().map(|c| c.bytes.len() as u64).sum();
        self.prune_at = self.bytes + 2 * self.cap;
    }

    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    /// Bytes held (for memory accounting in tests).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(kind: Kind, start: u64, end: u64) -> Span {
        Span { kind, start, end }
    }

    #[test]
    fn priority_then_last_occurrence_then_smaller_ones_fill() {
        let spans = [
            span(Kind::Tldr, 0, 30),         // older tldr
            span(Kind::VerdictJson, 40, 60), // highest priority
            span(Kind::Tldr, 100, 130),      // newest tldr: wins its kind
            span(Kind::Signal, 200, 205),    // small, lowest priority
        ];
        // marker 5: base 5; verdict 20+5; tldr@100 30+5 = 65; tldr@0 would
        // need 35 more (100 > 80); the signal needs 10 (75 ≤ 80).
        let sel = select(&spans, 80, 5);
        assert_eq!(sel.chosen, vec![false, true, true, true]);
        assert_eq!(sel.used, 75);
    }

    #[test]
    fn nested_and_overlapping_bytes_are_counted_once() {
        let spans = [
            span(Kind::Decisions, 10, 50),
            span(Kind::VerdictJson, 20, 30), // inside the decisions section
            span(Kind::Signal, 45, 60),      // overlaps its last 5 bytes
        ];
        let sel = select(&spans, 1000, 1);
        assert_eq!(sel.chosen, vec![true, true, true]);
        // 1 + (10 + 1) + (30 + 1) + (10 + 1): union 10..60 is 50 bytes.
        assert_eq!(sel.used, 1 + 50 + 3);
    }

    proptest::proptest! {
        #[test]
        fn overlap_flags_match_pairwise_checks(
            raw in proptest::collection::vec((0u64..60, 1u64..20), 0..30),
        ) {
            let spans: Vec<Span> = raw
                .iter()
                .map(|&(start, len)| span(Kind::Tldr, start, start + len))
                .collect();
            let naive: Vec<bool> = (0..spans.len())
                .map(|i| {
                    (0..spans.len()).any(|j| {
                        j != i && spans[j].start < spans[i].end && spans[i].start < spans[j].end
                    })
                })
                .collect();
            proptest::prop_assert_eq!(overlapping(&spans), naive);
        }
    }

    #[test]
    fn coverage_merges() {
        let mut c = Coverage::default();
        c.insert(10, 20);
        c.insert(30, 40);
        assert_eq!(c.uncovered(0, 50), 30);
        c.insert(15, 35);
        assert_eq!(c.0.len(), 1);
        assert_eq!(c.uncovered(0, 50), 20);
        c.insert(40, 45);
        assert_eq!(c.uncovered(0, 50), 15);
    }
}
