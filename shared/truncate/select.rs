//! Which protected blocks get into the output, and how much of each; and
//! the bounded pool of candidates kept while the input streams by.
//!
//! # The rule
//!
//! The blocks share a *block budget*: the cap minus a guaranteed minimum for
//! head and tail together ([`head_tail_min`], a quarter of the cap), so the
//! tail's last lines survive however many blocks there are. One marker line
//! for the head/tail gap is reserved in it up front. A block's cost is its
//! bytes not already covered by placed blocks plus one marker line (the gap
//! it may open); a block cut to its head also pays for the longer marker of
//! the gap after its head, which says how much of the block is omitted.
//! Every gap that starts inside a cut block names it, so the gap after a
//! block placed whole inside a cut block's omitted part has the longer
//! marker too: of the two blocks, the one placed later pays for it — the
//! whole block when it ends inside a block considered before it and not
//! placed whole, else the cut block, once for each block placed whole
//! before it that ends inside it and has not paid.
//! Blocks are placed in three rounds:
//!
//! 1. The newest block of each kind (last start; for equal starts the longer
//!    one), highest kind first, whole when it fits in what is left *less
//!    what is promised* to the higher ones that did not fit whole: each of
//!    those is promised its first line (its bytes, the marker of the gap
//!    before it and the longer marker after a cut head), when that fits in
//!    what is left less the promises before it.
//! 2. The newest blocks that did not fit whole, highest kind first, each cut
//!    to its head within an equal share of what is left: `left / n` for the
//!    `n` such blocks not yet placed (what one leaves unused goes to the
//!    next), but never less than its promise, and never eating into the
//!    promises of the blocks after it.
//! 3. Every other block in precedence order (kind, then the last occurrence
//!    first), whole when it fits in what is left, else cut to its head.
//!
//! A head is the longest run of the block's whole first lines that fits; a
//! block gets nothing only when even its first line does not fit. So a
//! newest block larger than its budget keeps its head whatever lies beside
//! it, wherever it lies in the input and whatever the head/tail split (the
//! split is made after the choice): a lower kind's block never takes the
//! budget of a higher one's first line, and an equal share never falls short
//! of it. A block already covered by placed blocks costs nothing.
//!
//! # Bounded memory
//!
//! Blocks arrive while the input streams, and their first bytes must be
//! copied out before they leave the window. The [`Pool`] keeps the
//! candidates: of each block at most its first [`block_budget`] bytes (no
//! more can ever be placed), shared between candidates that start at the
//! same byte (the blocks of one long line nest: one copy serves them all),
//! and one candidate per span and kind (a line with thousands of comments
//! is one block per kind). Whenever the pool holds more than `prune_at`
//! bytes (the candidates' heads summed) it is cut down to what [`select`] would place from it right now
//! (with the shortest markers), a block placed as a head keeping only that
//! head. `prune_at` is what survived plus twice the cap, so pruning is
//! amortized and the pool stays within about three caps. The final choice
//! is [`select`] over the pool at the end of the input: the rule is "the
//! choice over the pool", and the pool is defined by this pruning schedule.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::blocks::Kind;

/// Where a block lies: its kind and half-open absolute byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub kind: Kind,
    pub start: u64,
    pub end: u64,
}

impl Span {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// The minimum head and tail keep together: a quarter of the cap.
pub fn head_tail_min(cap: u64) -> u64 {
    cap / 4
}

/// What blocks and their markers may use: the cap minus [`head_tail_min`].
pub fn block_budget(cap: u64) -> u64 {
    cap - head_tail_min(cap)
}

/// Marker lengths the choice is made with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Markers {
    /// A gap's marker line.
    pub gap: u64,
    /// How much longer the marker of a gap that starts inside a block cut
    /// to its head can be (it says how much of the block is omitted).
    pub cut: u64,
}

/// What a block gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    Skipped,
    Whole,
    /// Its first `n` bytes (whole lines, fewer than the block has).
    Head(u64),
}

/// A block as [`select`] sees it: its span and its first bytes (all of
/// them, or fewer: then it can only be cut).
#[derive(Clone, Copy, Debug)]
pub struct Block<'a> {
    pub span: Span,
    pub head: &'a [u8],
}

impl Block<'_> {
    fn whole(&self) -> bool {
        self.head.len() as u64 == self.span.len()
    }
}

/// The result of [`select`].
#[derive(Debug, PartialEq, Eq)]
pub struct Selection {
    /// One placement per input block.
    pub placed: Vec<Placement>,
    /// Budget used: placed bytes (each counted once), the markers charged,
    /// and the reserved head/tail marker. At most [`block_budget`], unless
    /// that is smaller than one marker (then nothing is placed and this is
    /// the one marker).
    pub used: u64,
}

/// Places blocks for output cap `cap` (see the module docs for the rule).
pub fn select(blocks: &[Block], cap: u64, markers: Markers) -> Selection {
    let spans: Vec<Span> = blocks.iter().map(|b| b.span).collect();
    let overlaps = overlapping(&spans);
    let mut placer = Placer {
        blocks,
        overlaps,
        covered: Coverage::default(),
        placed: vec![Placement::Skipped; blocks.len()],
        not_whole: Coverage::default(),
        unpaid_ends: BTreeMap::new(),
        used: markers.gap,
        limit: block_budget(cap),
        markers,
    };
    if placer.used > placer.limit {
        return Selection {
            placed: placer.placed,
            used: placer.used,
        };
    }
    let order = precedence(&spans);
    // The newest of each kind: the first of its kind in precedence order.
    let mut newest: Vec<usize> = Vec::new();
    for &i in &order {
        if newest
            .last()
            .is_none_or(|&j| spans[j].kind != spans[i].kind)
        {
            newest.push(i);
        }
    }
    // Round 1: whole, within what is left less the first lines promised to
    // the higher newest blocks that did not fit.
    let mut promised = 0;
    let mut deferred: Vec<(usize, u64)> = Vec::new();
    for &i in &newest {
        if placer.whole(i, promised) {
            continue;
        }
        placer.not_whole(i);
        let promise = placer
            .first_line_cost(i)
            .filter(|&c| c <= placer.left() - promised)
            .unwrap_or(0);
        promised += promise;
        deferred.push((i, promise));
    }
    // Round 2: heads, an equal share each, at least the promise, and never
    // what is promised to the blocks after.
    for n in 0..deferred.len() {
        let (i, promise) = deferred[n];
        promised -= promise;
        let share = placer.left() / (deferred.len() - n) as u64;
        placer.head(i, share.max(promise).min(placer.left() - promised));
    }
    let mut is_newest = vec![false; blocks.len()];
    newest.iter().for_each(|&i| is_newest[i] = true);
    for &i in order.iter().filter(|&&i| !is_newest[i]) {
        if !placer.whole(i, 0) {
            placer.not_whole(i);
            let left = placer.left();
            placer.head(i, left);
        }
    }
    Selection {
        placed: placer.placed,
        used: placer.used,
    }
}

struct Placer<'a, 'b> {
    blocks: &'a [Block<'b>],
    overlaps: Vec<bool>,
    covered: Coverage,
    placed: Vec<Placement>,
    /// The insides of the (overlapping) blocks considered and not placed
    /// whole: `start + 1..end` of each, so a block placed whole later that
    /// ends in here pays the longer marker of the gap after it.
    not_whole: Coverage,
    /// How many (overlapping) blocks placed whole end at each byte without
    /// having paid the longer marker: a cut block they end inside pays it.
    unpaid_ends: BTreeMap<u64, u64>,
    used: u64,
    limit: u64,
    markers: Markers,
}

impl Placer<'_, '_> {
    fn left(&self) -> u64 {
        self.limit - self.used
    }

    /// Bytes of `start..end` not covered yet.
    fn uncovered(&self, i: usize, start: u64, end: u64) -> u64 {
        // Only a block that overlaps another needs the interval arithmetic:
        // in a log most blocks overlap nothing.
        if self.overlaps[i] {
            self.covered.uncovered(start, end)
        } else {
            end - start
        }
    }

    fn cover(&mut self, i: usize, start: u64, end: u64) {
        if self.overlaps[i] {
            self.covered.insert(start, end);
        }
    }

    /// Places block `i` whole if it fits in what is left less `reserved`;
    /// false otherwise.
    fn whole(&mut self, i: usize, reserved: u64) -> bool {
        let b = self.blocks[i];
        let new = self.uncovered(i, b.span.start, b.span.end);
        if new == 0 {
            self.placed[i] = Placement::Whole;
            return true;
        }
        // The gap after it names a cut block it ends inside (see the
        // module docs): paid here when that block was considered first.
        let inside_cut =
            self.overlaps[i] && self.not_whole.uncovered(b.span.end, b.span.end + 1) == 0;
        let cost = new + self.markers.gap + if inside_cut { self.markers.cut } else { 0 };
        if !b.whole() || cost > self.left() - reserved {
            return false;
        }
        self.placed[i] = Placement::Whole;
        self.used += cost;
        self.cover(i, b.span.start, b.span.end);
        if self.overlaps[i] && !inside_cut {
            *self.unpaid_ends.entry(b.span.end).or_default() += 1;
        }
        true
    }

    /// Notes that block `i` was considered and not placed whole: it may be
    /// cut, and a block placed whole later that ends inside it pays for the
    /// longer marker of the gap after it.
    fn not_whole(&mut self, i: usize) {
        let s = self.blocks[i].span;
        if self.overlaps[i] && s.len() > 1 {
            self.not_whole.insert(s.start + 1, s.end);
        }
    }

    /// Blocks placed whole that end inside block `i` and have not paid the
    /// longer marker of the gap after them: `i` cut to its head pays it.
    fn unpaid_inside(&self, i: usize) -> u64 {
        let s = self.blocks[i].span;
        if !self.overlaps[i] || s.len() < 2 {
            return 0;
        }
        self.unpaid_ends
            .range(s.start + 1..s.end)
            .map(|(_, n)| n)
            .sum()
    }

    /// The markers block `i` cut to its head pays: the gap's, and the
    /// longer one after its head and after each unpaid block inside it.
    fn cut_markers(&self, i: usize) -> u64 {
        self.markers.gap + self.markers.cut * (1 + self.unpaid_inside(i))
    }

    /// What block `i` cut to its first line can cost at most (its bytes as
    /// if none were covered, and its markers); `None` when it has no head
    /// (its first line is all of it, or longer than what is held).
    fn first_line_cost(&self, i: usize) -> Option<u64> {
        let b = self.blocks[i];
        let max = (b.head.len() as u64).min(b.span.len() - 1) as usize;
        let nl = memchr::memchr(b'\n', &b.head[..max])?;
        Some(nl as u64 + 1 + self.cut_markers(i))
    }

    /// Places the longest head of block `i` (whole first lines, fewer than
    /// all) whose cost fits in `allowance`, if its first line does.
    fn head(&mut self, i: usize, allowance: u64) {
        let b = self.blocks[i];
        let markers = self.cut_markers(i);
        let Some(room) = allowance.checked_sub(markers) else {
            return;
        };
        let start = b.span.start;
        // The last position p with uncovered(start, start + p) <= room:
        // uncovered grows by 0 or 1 per byte, so a binary search finds it.
        let max = (b.head.len() as u64).min(b.span.len() - 1);
        let (mut lo, mut hi) = (0u64, max);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.uncovered(i, start, start + mid) <= room {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let Some(nl) = memchr::memrchr(b'\n', &b.head[..lo as usize]) else {
            return; // not even the first line fits
        };
        let n = nl as u64 + 1;
        self.placed[i] = Placement::Head(n);
        self.used += self.uncovered(i, start, start + n) + markers;
        self.cover(i, start, start + n);
        // The blocks inside it are paid for now.
        if self.overlaps[i] {
            let paid: Vec<u64> = self
                .unpaid_ends
                .range(start + 1..b.span.end)
                .map(|(&end, _)| end)
                .collect();
            for end in paid {
                self.unpaid_ends.remove(&end);
            }
        }
    }
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

/// A block kept for the output: where it lies, its line counts, and its
/// first bytes.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub span: Span,
    /// Newlines in the input before `span.start` (for the markers' counts).
    pub newlines_before: u64,
    /// Newlines inside the block.
    pub newlines: u64,
    /// The block's first bytes are `head[..stored]` (the buffer may be
    /// longer: it is shared with a longer block starting at the same byte).
    head: Rc<Vec<u8>>,
    stored: usize,
}

impl Candidate {
    /// A candidate holding the first bytes `head` of its block (at most
    /// [`block_budget`] of them are kept).
    pub fn new(span: Span, newlines_before: u64, newlines: u64, head: Vec<u8>) -> Candidate {
        let stored = head.len();
        Candidate::shared(span, newlines_before, newlines, Rc::new(head), stored)
    }

    /// A candidate whose first bytes are `head[..stored]` of a buffer it
    /// shares (with the capture that collected them).
    pub fn shared(
        span: Span,
        newlines_before: u64,
        newlines: u64,
        head: Rc<Vec<u8>>,
        stored: usize,
    ) -> Candidate {
        assert!(stored <= head.len());
        Candidate {
            span,
            newlines_before,
            newlines,
            head,
            stored,
        }
    }

    /// The block's first bytes held (all of it when it is short enough).
    pub fn head(&self) -> &[u8] {
        &self.head[..self.stored]
    }

    pub fn block(&self) -> Block<'_> {
        Block {
            span: self.span,
            head: self.head(),
        }
    }
}

/// The candidates kept while streaming (see the module docs).
#[derive(Debug)]
pub struct Pool {
    cap: u64,
    markers: Markers,
    candidates: Vec<Candidate>,
    /// Bytes of block heads held, counted per candidate: shared buffers
    /// count once per candidate, and a buffer is at most twice what its
    /// candidates use, so memory is at most twice this.
    bytes: u64,
    prune_at: u64,
    /// Buffers of pruned candidates, for the next long block's head: large
    /// buffers freed and allocated again cost a page fault per page.
    spare: Vec<Vec<u8>>,
}

/// Buffers kept for reuse, at most.
const SPARE: usize = 2;

impl Pool {
    /// A pool for output cap `cap`, pruning with markers `markers`.
    pub fn new(cap: u64, markers: Markers) -> Pool {
        Pool {
            cap,
            markers,
            candidates: Vec::new(),
            bytes: 0,
            prune_at: cap.saturating_mul(2),
            spare: Vec::new(),
        }
    }

    /// An empty buffer, reused when one is spare.
    pub fn buffer(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_default()
    }

    /// How many of a block's first bytes are worth keeping.
    pub fn keep(&self) -> u64 {
        block_budget(self.cap)
    }

    /// True when a block with this span and kind is held already (the
    /// blocks of one line with many comments are all the same block).
    pub fn holds(&self, span: Span) -> bool {
        self.same_start().any(|c| c.span == span)
    }

    /// The newest candidates that start where the last one does.
    fn same_start(&self) -> impl Iterator<Item = &Candidate> {
        let start = self.candidates.last().map(|c| c.span.start);
        self.candidates
            .iter()
            .rev()
            .take_while(move |c| Some(c.span.start) == start)
    }

    pub fn add(&mut self, mut candidate: Candidate) {
        // Share one buffer with the candidates starting at the same byte:
        // they are prefixes of each other.
        let start = candidate.span.start;
        let run = self
            .candidates
            .iter()
            .rev()
            .take_while(|c| c.span.start == start)
            .count();
        let from = self.candidates.len() - run;
        match self.candidates[from..]
            .iter()
            .map(|c| &c.head)
            .max_by_key(|h| h.len())
        {
            Some(longest) if longest.len() >= candidate.stored => {
                candidate.head = Rc::clone(longest);
            }
            _ => {
                for c in &mut self.candidates[from..] {
                    c.head = Rc::clone(&candidate.head);
                }
            }
        }
        // Counted per candidate: never less than the buffers really held.
        self.bytes += candidate.stored as u64;
        self.candidates.push(candidate);
        if self.bytes > self.prune_at {
            self.prune();
        }
    }

    fn prune(&mut self) {
        let blocks: Vec<Block> = self.candidates.iter().map(|c| c.block()).collect();
        let placed = select(&blocks, self.cap, self.markers).placed;
        let mut kept = Vec::with_capacity(self.candidates.len());
        for (mut c, p) in std::mem::take(&mut self.candidates).into_iter().zip(placed) {
            match p {
                Placement::Skipped => {
                    self.recycle(c.head);
                    continue;
                }
                Placement::Whole => {}
                Placement::Head(n) => {
                    // Only this head can ever be placed again. Its buffer
                    // is replaced when more than half of it would idle
                    // (so what is held is at most twice what is counted).
                    c.stored = n as usize;
                    if c.head.len() > 2 * c.stored {
                        let head = Rc::new(c.head[..c.stored].to_vec());
                        self.recycle(std::mem::replace(&mut c.head, head));
                    }
                }
            }
            kept.push(c);
        }
        self.candidates = kept;
        self.bytes = self.candidates.iter().map(|c| c.stored as u64).sum();
        self.prune_at = self.bytes.saturating_add(self.cap.saturating_mul(2));
    }

    /// Keeps a large buffer no candidate uses any more for reuse.
    fn recycle(&mut self, head: Rc<Vec<u8>>) {
        if let Ok(mut buffer) = Rc::try_unwrap(head) {
            if self.spare.len() < SPARE && buffer.capacity() >= 64 * 1024 {
                buffer.clear();
                self.spare.push(buffer);
            }
        }
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

    /// Blocks over `doc` (each span's bytes, whole).
    fn blocks<'a>(doc: &'a [u8], spans: &[Span]) -> Vec<Block<'a>> {
        spans
            .iter()
            .map(|&s| Block {
                span: s,
                head: &doc[s.start as usize..s.end as usize],
            })
            .collect()
    }

    const M5: Markers = Markers { gap: 5, cut: 7 };

    #[test]
    fn priority_then_last_occurrence_then_smaller_ones_fill() {
        let doc = [b'x'; 300];
        let spans = [
            span(Kind::Tldr, 0, 30),         // older tldr
            span(Kind::VerdictJson, 40, 60), // highest priority
            span(Kind::Tldr, 100, 130),      // newest tldr: wins its kind
            span(Kind::Signal, 200, 205),    // small, lowest priority
        ];
        // cap 108: block budget 81; marker 5: base 5; verdict 20+5; tldr@100
        // 30+5 = 65; the signal 5+5 = 75; tldr@0 (one line, no head) is out.
        let sel = select(&blocks(&doc, &spans), 108, M5);
        use Placement::*;
        assert_eq!(sel.placed, vec![Skipped, Whole, Whole, Whole]);
        assert_eq!(sel.used, 75);
    }

    #[test]
    fn nested_and_overlapping_bytes_are_counted_once() {
        let doc = [b'x'; 100];
        let spans = [
            span(Kind::Decisions, 10, 50),
            span(Kind::VerdictJson, 20, 30), // inside the decisions section
            span(Kind::Signal, 45, 60),      // overlaps its last 5 bytes
        ];
        let sel = select(&blocks(&doc, &spans), 1000, Markers { gap: 1, cut: 1 });
        assert_eq!(sel.placed, vec![Placement::Whole; 3]);
        // 1 + (10 + 1) + (30 + 1) + (10 + 1): union 10..60 is 50 bytes.
        assert_eq!(sel.used, 1 + 50 + 3);
    }

    #[test]
    fn an_oversized_block_keeps_its_head_and_the_head_tail_minimum_holds() {
        // A 10-line block of 10-byte lines, larger than the block budget.
        let doc = b"line 0001\n".repeat(10);
        let spans = [span(Kind::Tldr, 0, 100)];
        // cap 80: budget 60; 5 reserved; head room 60 - 5 - 5 - 7 = 43:
        // four whole lines.
        let sel = select(&blocks(&doc, &spans), 80, M5);
        assert_eq!(sel.placed, vec![Placement::Head(40)]);
        assert_eq!(sel.used, 5 + 40 + 5 + 7);
        assert!(sel.used <= block_budget(80));
        // cap 30: budget 23, head room 23 - 5 - 5 - 7 = 6: not even the
        // first line fits, so nothing.
        let sel = select(&blocks(&doc, &spans), 30, M5);
        assert_eq!(sel.placed, vec![Placement::Skipped]);
    }

    #[test]
    fn newest_blocks_that_do_not_fit_share_what_is_left() {
        let doc = b"abcdefghi\n".repeat(40);
        let spans = [
            span(Kind::VerdictJson, 0, 200), // newest verdict, too big
            span(Kind::Tldr, 200, 400),      // newest tldr, too big
        ];
        // cap 200: budget 150; 5 reserved; 145 left, 72 each: room 60 → 6
        // lines for the verdict (used 5 + 72 = 77), then 73 → 6 lines.
        let sel = select(&blocks(&doc, &spans), 200, M5);
        assert_eq!(sel.placed, vec![Placement::Head(60), Placement::Head(60)]);
    }

    #[test]
    fn a_lower_kind_never_takes_a_higher_ones_first_line() {
        let doc = b"abcdefghi\n".repeat(43);
        let spans = [
            span(Kind::VerdictJson, 0, 300), // newest verdict, too big
            span(Kind::Tldr, 300, 430),      // would fit whole: 135 of 145
        ];
        // cap 200: budget 150; 5 reserved; 145 left. The verdict's first
        // line costs 10 + 5 + 7 = 22, promised: the summary (135) no longer
        // fits whole in 145 - 22. Both are cut, 72 each: 6 lines apiece.
        let sel = select(&blocks(&doc, &spans), 200, M5);
        assert_eq!(sel.placed, vec![Placement::Head(60), Placement::Head(60)]);
        // With room for both promises and the summary whole, nothing changes.
        let sel = select(&blocks(&doc, &spans), 260, M5);
        assert_eq!(sel.placed[1], Placement::Whole);
        assert!(matches!(sel.placed[0], Placement::Head(n) if n >= 10));
    }

    #[test]
    fn a_block_placed_whole_inside_a_cut_block_pays_for_the_marker_after_it() {
        // The gap after the inner block starts inside the cut block, so its
        // marker is the longer one naming the cut block: whichever of the
        // two is placed later pays for it.
        let doc = b"abcdefghi\n".repeat(30);
        use Placement::*;
        // The verdict first (whole, 10 + 5), then the summary cut: cap 200,
        // budget 150, 5 reserved; 130 left, less the summary's markers 5 +
        // 7 after its head + 7 after the verdict: room 111, eleven lines.
        let spans = [span(Kind::Tldr, 0, 300), span(Kind::VerdictJson, 250, 260)];
        let sel = select(&blocks(&doc, &spans), 200, M5);
        assert_eq!(sel.placed, vec![Head(110), Whole]);
        assert_eq!(sel.used, 5 + (10 + 5) + (110 + 5 + 7 + 7));
        // The verdict cut first (promised 10 + 5 + 7), then the signal
        // inside it, whole: 10 + 5 + 7. The verdict's head has 123 left:
        // room 111 again.
        let spans = [
            span(Kind::VerdictJson, 0, 300),
            span(Kind::Signal, 250, 260),
        ];
        let sel = select(&blocks(&doc, &spans), 200, M5);
        assert_eq!(sel.placed, vec![Head(110), Whole]);
        assert_eq!(sel.used, 5 + (10 + 5 + 7) + (110 + 5 + 7));
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
