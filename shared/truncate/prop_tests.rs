//! The streaming truncator against a naive in-memory oracle.
//!
//! The oracle holds the whole input, takes the blocks from one scan of it,
//! chooses with a byte-mask greedy (no interval arithmetic), cuts with
//! [`crate::cut`] on the whole input, and assembles by walking a coverage
//! mask. The streaming side reads through a reader that returns random chunk
//! sizes down to 1 byte, with tiny line pieces and tail chunks (and so batches) so
//! the window's eviction and the pool's pruning are reached by small inputs.

use std::cmp::Reverse;
use std::io::{self, Read};

use proptest::prelude::*;

use super::marker::*;
use super::select::*;
use super::stream::{truncate_with, Tuning};
use super::*;
use crate::blocks::{BlockScanner, Event, Kind};
use crate::cut;
use crate::state_dir::StateDir;

const MAX_LINE: usize = 16;

/// A pool entry: a block and how many of its first bytes are held.
#[derive(Clone, Copy, Debug)]
struct Held {
    span: Span,
    stored: u64,
}

/// The placement rule over a byte mask, spelled out round by round:
/// (placements, used).
fn naive_select(
    pool: &[Held],
    input: &[u8],
    cap: u64,
    gap: u64,
    cut: u64,
) -> (Vec<Placement>, u64) {
    let limit = cap - cap / 4;
    let mut placed = vec![Placement::Skipped; pool.len()];
    if gap > limit {
        return (placed, gap);
    }
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.sort_by_key(|&i| {
        let s = pool[i].span;
        (s.kind, Reverse(s.start), Reverse(s.end))
    });
    let mut newest: Vec<usize> = Vec::new();
    for kind in Kind::ALL {
        newest.extend(order.iter().copied().find(|&i| pool[i].span.kind == kind));
    }
    let mut mask = vec![false; input.len()];
    let mut used = gap;
    // Blocks considered and not placed whole (they may be cut), and blocks
    // placed whole that have not paid the longer marker of the gap after
    // them: every gap starting inside a cut block names it, so that gap's
    // marker is paid by whichever of the two is placed later.
    let mut not_whole = vec![false; pool.len()];
    let mut unpaid = vec![false; pool.len()];
    let inside = |outer: Span, at: u64| outer.start < at && at < outer.end;
    let new_in = |mask: &[bool], from: u64, to: u64| {
        mask[from as usize..to as usize]
            .iter()
            .filter(|&&m| !m)
            .count() as u64
    };
    // Whole, if it fits beside `reserved` (a covered block is free); it
    // pays the longer marker too when it ends inside a block considered
    // before it and not placed whole.
    let whole = |i: usize,
                 reserved: u64,
                 not_whole: &[bool],
                 unpaid: &mut Vec<bool>,
                 mask: &mut Vec<bool>,
                 used: &mut u64,
                 placed: &mut Vec<Placement>| {
        let h = pool[i];
        let new = new_in(mask, h.span.start, h.span.end);
        let in_cut = (0..pool.len()).any(|j| not_whole[j] && inside(pool[j].span, h.span.end));
        let cost = new + gap + if in_cut { cut } else { 0 };
        let fits = h.stored == h.span.end - h.span.start && *used + cost + reserved <= limit;
        if new == 0 || fits {
            placed[i] = Placement::Whole;
            if new > 0 {
                *used += cost;
                unpaid[i] = !in_cut;
            }
            mask[h.span.start as usize..h.span.end as usize].fill(true);
            return true;
        }
        false
    };
    // The blocks placed whole that end inside block `i` and have not paid:
    // `i` cut to its head pays the longer marker after each.
    let unpaid_inside = |i: usize, unpaid: &[bool]| -> Vec<usize> {
        (0..pool.len())
            .filter(|&j| unpaid[j] && inside(pool[i].span, pool[j].span.end))
            .collect()
    };
    // The longest run of whole first lines (not all of the block, within
    // what is held) whose cost fits the allowance.
    let head = |i: usize,
                allowance: u64,
                unpaid: &mut Vec<bool>,
                mask: &mut Vec<bool>,
                used: &mut u64,
                placed: &mut Vec<Placement>| {
        let h = pool[i];
        let inner = unpaid_inside(i, unpaid);
        let cut = cut * (1 + inner.len() as u64);
        let len = h.span.end - h.span.start;
        let max = h.stored.min(len - 1);
        let bytes = &input[h.span.start as usize..(h.span.start + max) as usize];
        for k in (1..=max).rev() {
            if bytes[k as usize - 1] != b'\n' {
                continue;
            }
            let cost = new_in(mask, h.span.start, h.span.start + k) + gap + cut;
            if cost <= allowance {
                placed[i] = Placement::Head(k);
                *used += cost;
                mask[h.span.start as usize..(h.span.start + k) as usize].fill(true);
                inner.iter().for_each(|&j| unpaid[j] = false);
                return;
            }
        }
    };
    // A block's first line, cut: its bytes (none counted as covered) and
    // both markers; none when the block has no head within what is held.
    let first_line = |i: usize, unpaid: &[bool]| {
        let h = pool[i];
        let cut = cut * (1 + unpaid_inside(i, unpaid).len() as u64);
        let max = h.stored.min(h.span.end - h.span.start - 1) as usize;
        let bytes = &input[h.span.start as usize..h.span.start as usize + max];
        bytes
            .iter()
            .position(|&b| b == b'\n')
            .map(|nl| nl as u64 + 1 + gap + cut)
    };
    // Round 1: whole beside the promises to the higher ones not placed.
    let mut deferred: Vec<(usize, u64)> = Vec::new();
    for &i in &newest {
        let promised: u64 = deferred.iter().map(|d| d.1).sum();
        if whole(
            i,
            promised,
            &not_whole,
            &mut unpaid,
            &mut mask,
            &mut used,
            &mut placed,
        ) {
            continue;
        }
        not_whole[i] = true;
        let promise = match first_line(i, &unpaid) {
            Some(c) if used + promised + c <= limit => c,
            _ => 0,
        };
        deferred.push((i, promise));
    }
    // Round 2: an equal share, at least the promise, leaving the later ones'.
    for n in 0..deferred.len() {
        let (i, promise) = deferred[n];
        let later: u64 = deferred[n + 1..].iter().map(|d| d.1).sum();
        let left = limit - used;
        let share = left / (deferred.len() - n) as u64;
        let allowance = share.max(promise).min(left - later);
        head(i, allowance, &mut unpaid, &mut mask, &mut used, &mut placed);
    }
    for &i in order.iter().filter(|i| !newest.contains(i)) {
        if !whole(
            i,
            0,
            &not_whole,
            &mut unpaid,
            &mut mask,
            &mut used,
            &mut placed,
        ) {
            not_whole[i] = true;
            head(
                i,
                limit - used,
                &mut unpaid,
                &mut mask,
                &mut used,
                &mut placed,
            );
        }
    }
    (placed, used)
}

/// Blocks in the order the scanner reports them.
fn arrivals(input: &[u8]) -> Vec<Span> {
    let mut scanner = BlockScanner::with_max_line(MAX_LINE);
    let mut events = Vec::new();
    scanner.scan(input, &mut events);
    scanner.finish(&mut events);
    events
        .into_iter()
        .filter_map(|e| match e {
            Event::Block(b) => Some(Span {
                kind: b.kind,
                start: b.start,
                end: b.end,
            }),
            Event::Heading { .. } => None,
        })
        .collect()
}

/// The pool's rule, spelled out: hold each block's first bytes up to the
/// block budget, skipping a block the newest candidates starting at the
/// same byte already hold; when the held bytes pass the threshold, keep
/// only what the rule would place, a block placed as a head holding only
/// that head.
fn naive_pool(input: &[u8], cap: u64) -> Vec<Held> {
    let floor = marker_floor();
    let mut pool: Vec<Held> = Vec::new();
    let mut bytes = 0;
    let mut prune_at = 2 * cap;
    for span in arrivals(input) {
        let last_start = pool.last().map(|h| h.span.start);
        let held = pool
            .iter()
            .rev()
            .take_while(|h| Some(h.span.start) == last_start)
            .any(|h| h.span == span);
        if held {
            continue;
        }
        let stored = (span.end - span.start).min(cap - cap / 4);
        pool.push(Held { span, stored });
        bytes += stored;
        if bytes > prune_at {
            let (placed, _) = naive_select(&pool, input, cap, floor.gap, floor.cut);
            pool = pool
                .into_iter()
                .zip(placed)
                .filter_map(|(h, p)| match p {
                    Placement::Skipped => None,
                    Placement::Whole => Some(h),
                    Placement::Head(n) => Some(Held { stored: n, ..h }),
                })
                .collect();
            bytes = pool.iter().map(|h| h.stored).sum();
            prune_at = bytes + 2 * cap;
        }
    }
    pool
}

struct Oracle {
    output: Vec<u8>,
    /// Chosen blocks' bytes.
    chosen: Vec<Vec<u8>>,
    /// Head and tail byte counts, when truncated with markers.
    cuts: Option<(usize, usize)>,
}

fn oracle(input: &[u8], cap: u64, share: f64) -> Oracle {
    let n = input.len();
    if cap == 0 || n as u64 <= cap {
        return Oracle {
            output: input.to_vec(),
            chosen: Vec::new(),
            cuts: None,
        };
    }
    let marker = marker_line(n as u64, n as u64, None, Some(b'x')).len() as u64;
    if marker > cap {
        return Oracle {
            output: input[..cut::head_cut(input, cap as usize)].to_vec(),
            chosen: Vec::new(),
            cuts: None,
        };
    }
    let cut_marker = cut_marker_line(
        Kind::AccumulatedPatterns,
        (n as u64, n as u64),
        (2 * n as u64, 2 * n as u64),
        None,
        Some(b'x'),
    )
    .len() as u64
        - marker;
    let pool = naive_pool(input, cap);
    let (placed, used) = naive_select(&pool, input, cap, marker, cut_marker);
    prop_assert_le(used, (cap - cap / 4).max(marker));
    let rest = cap - used;
    let head_budget = ((rest as f64 * share).floor() as u64).min(rest);
    let tail_budget = rest - head_budget;
    let h = cut::head_cut(input, head_budget as usize);
    let t = cut::tail_cut(input, tail_budget as usize);
    // Every written stretch: (start, end, for a block cut to its head its
    // kind and end).
    let mut stretches = vec![(0, h, None)];
    let mut chosen_bytes = Vec::new();
    for (held, p) in pool.iter().zip(&placed) {
        let (start, end) = (held.span.start as usize, held.span.end as usize);
        match *p {
            Placement::Skipped => {}
            // Held in part, placed only because it is covered: nothing to write.
            Placement::Whole if held.stored < held.span.end - held.span.start => {}
            Placement::Whole => {
                stretches.push((start, end, None));
                chosen_bytes.push(input[start..end].to_vec());
            }
            Placement::Head(k) => {
                let k = k as usize;
                stretches.push((start, start + k, Some((held.span.kind, end))));
                chosen_bytes.push(input[start..start + k].to_vec());
            }
        }
    }
    stretches.push((t, n, None));
    stretches.sort_by_key(|&(s, e, _)| (s, Reverse(e - s)));
    // The cut stretches that add bytes to what the stretches before them
    // (by start, longer first) wrote: a gap starting inside the block of
    // the last such one before it says how much of that block it omits.
    let mut keep = vec![false; n];
    let mut fresh_cuts: Vec<(usize, Kind, usize)> = Vec::new();
    let mut written_to = 0;
    for &(s, e, cut) in &stretches {
        keep[s..e].fill(true);
        if e > written_to {
            if let Some((kind, end)) = cut {
                fresh_cuts.push((s, kind, end));
            }
            written_to = e;
        }
    }
    let newlines =
        |from: usize, to: usize| input[from..to].iter().filter(|&&b| b == b'\n').count() as u64;
    let mut output = Vec::new();
    let mut i = 0;
    while i < n {
        let j = (i..n).find(|&j| keep[j] != keep[i]).unwrap_or(n);
        if keep[i] {
            output.extend_from_slice(&input[i..j]);
        } else {
            let all = ((j - i) as u64, newlines(i, j));
            let cut = fresh_cuts
                .iter()
                .rev()
                .find(|c| c.0 <= i)
                .filter(|c| c.2 > i);
            let line = match cut {
                Some(&(_, kind, end)) => {
                    let in_block = ((end.min(j) - i) as u64, newlines(i, end.min(j)));
                    cut_marker_line(kind, in_block, all, None, output.last().copied())
                }
                None => marker_line(all.0, all.1, None, output.last().copied()),
            };
            output.extend_from_slice(line.as_bytes());
        }
        i = j;
    }
    Oracle {
        output,
        chosen: chosen_bytes,
        cuts: Some((h, n - t)),
    }
}

fn prop_assert_le(a: u64, b: u64) {
    assert!(a <= b, "{a} > {b}");
}

/// A reader returning the given chunk sizes in turn (sizes ≥ 1).
struct Chunked<'a> {
    data: &'a [u8],
    sizes: Vec<usize>,
    next: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let want = self.sizes[self.next % self.sizes.len()];
        self.next += 1;
        let n = want.min(out.len()).min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn streaming(input: &[u8], cap: u64, share: f64, sizes: Vec<usize>, tuning: Tuning) -> Vec<u8> {
    let settings = Settings {
        cap,
        head_share: share,
        full_output: None,
        program: "jkz-truncate",
    };
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let reader = Chunked {
        data: input,
        sizes,
        next: 0,
    };
    truncate_with(
        reader,
        &mut out,
        &settings,
        "test",
        &mut warnings,
        tuning,
        &mut None,
    )
    .unwrap();
    assert!(warnings.is_empty());
    out
}

fn piece() -> impl Strategy<Value = &'static [u8]> {
    prop::sample::select(vec![
        &b"plain log line\n"[..],
        b"x\r\n",
        "caf\u{e9} \u{20ac}\u{1d11e}\n".as_bytes(),
        "\u{1d11e}\u{1d11e}\u{1d11e}".as_bytes(),
        b"\xff\xfe\x80 bad\n",
        b"a long line without a break that runs past a piece boundary\n",
        b"no newline at all",
        b"\n",
        b"```verdict-json\n",
        b"{\"verdict\":\"FAIL\"}\n",
        b"```\n",
        b"~~~decisions\n",
        b"~~~\n",
        b"<!-- jkz:tldr started\n",
        b"-->\n",
        b"<!-- jkz:verdict-json {\"v\":1} -->\n",
        b"<!-- jkz:propose-issue: Title | body -->\n",
        b"<compact-plan>\n",
        b"</compact-plan>\n",
        b"<tldr>short</tldr>\n",
        b"## TL;DR\n",
        b"# Heading\n",
        b"### Decisions\r\n",
        b"## Verdict: PASS\n",
        b"Decisions\n",
        b"---\n",
        b"===\n",
    ])
}

/// A block of `lines` lines of assorted lengths in one of the forms,
/// closed or not: often larger than the cap, or than the budget left.
fn big_block() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec![
            ("```compact-plan\n", "```\n"),
            ("<tldr>\n", "</tldr>\n"),
            ("<!-- jkz:decisions\n", "-->\n"),
            ("## TL;DR\n", "## Next\n"),
            ("Verdict\n=======\n", "Other\n-----\n"),
        ]),
        prop::collection::vec(0usize..40, 1..30),
        any::<bool>(),
    )
        .prop_map(|((open, close), lens, closed)| {
            let mut b = open.as_bytes().to_vec();
            for (i, n) in lens.into_iter().enumerate() {
                b.extend((0..n).map(|j| b"abcdefgh \xe2\x82\xac"[(i + j) % 11]));
                b.push(b'\n');
            }
            if closed {
                b.extend_from_slice(close.as_bytes());
            }
            b
        })
}

/// Many blocks of one kind, or one line dense with comments (every
/// comment on a line is a block spanning the line).
fn many_of_one_kind() -> impl Strategy<Value = Vec<u8>> {
    (1usize..60, any::<bool>()).prop_map(|(n, one_line)| {
        if one_line {
            let mut b = b"<!-- jkz:x -->".repeat(n);
            b.push(b'\n');
            b
        } else {
            (0..n)
                .flat_map(|i| format!("<!-- jkz:verdict-json {{\"n\":{i}}} -->\n").into_bytes())
                .collect()
        }
    })
}

fn document() -> impl Strategy<Value = Vec<u8>> {
    let part = prop_oneof![
        12 => piece().prop_map(|p| p.to_vec()),
        1 => big_block(),
        1 => many_of_one_kind(),
    ];
    prop::collection::vec(part, 0..60).prop_map(|v| v.concat())
}

fn tuning() -> impl Strategy<Value = Tuning> {
    (MAX_LINE..4 * MAX_LINE).prop_map(|chunk| Tuning {
        chunk,
        max_line: MAX_LINE,
        ..Tuning::default()
    })
}

/// Every head share there is: each role's, the default, the extremes, and
/// any other.
fn share() -> impl Strategy<Value = f64> {
    let mut table: Vec<f64> = roles::ROLES.iter().map(|r| r.head_share).collect();
    table.extend([roles::DEFAULT_HEAD_SHARE, 0.0, 1.0]);
    prop_oneof![3 => prop::sample::select(table), 1 => 0.0f64..=1.0]
}

/// Plain lines of about `bytes` bytes.
fn filler(bytes: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while (out.len() as u64) < bytes {
        out.extend_from_slice(format!("log {i:03} plain\n").as_bytes());
        i += 1;
    }
    out
}

/// A cap and a document around it: a large block (a fraction of the cap
/// to a few caps) at any position against the head and the tail (before
/// the head's end, across it, in the middle, across the tail's start,
/// inside the tail), alone or beside a large block of another kind placed
/// before or after it, or beside a few small ones.
fn document_around_a_cap() -> impl Strategy<Value = (u64, Vec<u8>)> {
    (60u64..900).prop_flat_map(|cap| {
        let fraction = |f: &'static [f64]| prop::sample::select(f.to_vec());
        (
            Just(cap),
            fraction(&[0.0, 0.05, 0.2, 0.4, 0.6, 1.0, 1.5, 3.0]),
            fraction(&[0.3, 0.7, 1.0, 1.3, 2.0, 4.0]),
            fraction(&[0.0, 0.05, 0.15, 0.3, 0.5, 0.8, 1.2, 2.5]),
            prop::sample::select(vec![
                ("```verdict-json\n", "```\n"),
                ("~~~decisions\n", "~~~\n"),
                ("<tldr>\n", "</tldr>\n"),
                ("<!-- jkz:compact-plan\n", "-->\n"),
                ("## TL;DR\n", "## Next\n"),
            ]),
            prop::collection::vec(0usize..30, 1..12),
            any::<bool>(),
            0usize..4,
            prop::collection::vec(piece(), 0..4),
        )
            .prop_map(
                |(cap, before, size, after, (open, close), lens, closed, sibling, small)| {
                    let mut block = open.as_bytes().to_vec();
                    let target = (size * cap as f64) as usize;
                    let mut i = 0;
                    while block.len() < target {
                        let n = lens[i % lens.len()];
                        block.extend((0..n).map(|j| b"abcdefgh \xe2\x82\xac"[(i + j) % 11]));
                        block.push(b'\n');
                        i += 1;
                    }
                    if closed {
                        block.extend_from_slice(close.as_bytes());
                    }
                    // A large block of a higher and of a lower kind than
                    // most, to contend for the budget.
                    let other = |kind: &str| {
                        let mut b = format!("<{kind}>\n").into_bytes();
                        b.extend(filler(cap * 2 / 3));
                        b.extend_from_slice(format!("</{kind}>\n").as_bytes());
                        b
                    };
                    let mut doc = filler((before * cap as f64) as u64);
                    match sibling {
                        1 => doc.extend(other("accumulated-patterns")),
                        2 => doc.extend(other("verdict-json")),
                        _ => {}
                    }
                    doc.extend(small.concat());
                    doc.extend(block);
                    if sibling == 3 {
                        doc.extend(other("plan-digest"));
                    }
                    doc.extend(filler((after * cap as f64) as u64));
                    (cap, doc)
                },
            )
    })
}

/// Streams `input` and checks the output against the oracle and the
/// contract's invariants.
fn check_against_the_oracle(
    input: &[u8],
    cap: u64,
    share: f64,
    sizes: Vec<usize>,
    tuning: Tuning,
) -> Result<(), TestCaseError> {
    let got = streaming(input, cap, share, sizes, tuning);
    let want = oracle(input, cap, share);
    prop_assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&want.output)
    );
    prop_assert_eq!(&got, &want.output);

    if cap == 0 || input.len() as u64 <= cap {
        prop_assert_eq!(&got[..], input);
        return Ok(());
    }
    prop_assert!(got.len() as u64 <= cap, "{} > cap {}", got.len(), cap);
    prop_assert!(input.starts_with(&got[..got.len().min(want.cuts.map_or(got.len(), |c| c.0))]));
    let Some((h, t)) = want.cuts else {
        prop_assert!(input.starts_with(&got));
        return Ok(());
    };
    // Head is a prefix, tail a suffix of the input.
    prop_assert_eq!(&got[..h], &input[..h]);
    prop_assert_eq!(&got[got.len() - t..], &input[input.len() - t..]);
    // Every chosen block appears verbatim.
    for block in &want.chosen {
        prop_assert!(memchr::memmem::find(&got, block).is_some());
    }
    // The block that comes first of all (highest kind, last occurrence)
    // appears whenever it fits beside two markers in the block budget; when
    // it does not, its head does, whenever its first line fits beside the
    // markers a cut head needs: never dropped while its first line fits,
    // whatever the split, wherever it lies, whatever lies beside it.
    let n = input.len() as u64;
    let marker = marker_bound(n, None);
    let cut_extra = cut_marker_line(
        Kind::AccumulatedPatterns,
        (n, n),
        (2 * n, 2 * n),
        None,
        Some(b'x'),
    )
    .len() as u64
        - marker;
    let spans = arrivals(input);
    if let Some(top) = spans
        .iter()
        .min_by_key(|s| (s.kind, Reverse(s.start), Reverse(s.end)))
    {
        let bytes = &input[top.start as usize..top.end as usize];
        if top.end - top.start + 2 * marker <= select::block_budget(cap) {
            prop_assert!(
                memchr::memmem::find(&got, bytes).is_some(),
                "top block missing"
            );
        }
        let first = memchr::memchr(b'\n', bytes)
            .filter(|&nl| nl + 1 < bytes.len())
            .map(|nl| &bytes[..=nl]);
        if let Some(first) = first {
            if first.len() as u64 + 2 * marker + cut_extra <= select::block_budget(cap) {
                prop_assert!(
                    memchr::memmem::find(&got, first).is_some(),
                    "the top block's first line is missing: {:?}",
                    String::from_utf8_lossy(first)
                );
            }
        }
    }
    // Head and tail keep their minimum however many blocks there are:
    // a quarter of the cap, less what cutting on a line (at most a
    // quarter of each budget) or a character boundary gives up.
    // (When one marker is more than the block budget, it takes its share.)
    let min = select::head_tail_min(cap);
    if marker <= select::block_budget(cap) {
        prop_assert!(
            (h + t) as u64 + 6 >= min - min / 4,
            "head {h} + tail {t} < {min}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn streaming_matches_the_oracle(
        input in document(),
        cap in 0u64..500,
        share in share(),
        sizes in prop::collection::vec(1usize..24, 1..8),
        tuning in tuning(),
    ) {
        check_against_the_oracle(&input, cap, share, sizes, tuning)?;
    }

    /// A large block at every position against head and tail, with every
    /// role's split: the contract holds, and the oracle agrees.
    #[test]
    fn a_large_block_anywhere_keeps_its_head_on_every_split(
        (cap, input) in document_around_a_cap(),
        share in share(),
        sizes in prop::collection::vec(1usize..64, 1..8),
        tuning in tuning(),
    ) {
        check_against_the_oracle(&input, cap, share, sizes, tuning)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The full output is the input, byte for byte, whatever the chunk size
    /// and read sizes (chunks reach the writer as they leave the window and
    /// at the end), and nothing at all when the input fits.
    #[test]
    fn full_output_is_the_whole_input(
        input in prop::collection::vec(piece(), 0..120).prop_map(|v| v.concat()),
        cap in 1u64..300,
        sizes in prop::collection::vec(1usize..40, 1..8),
        tuning in tuning(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            cap,
            head_share: 0.5,
            full_output: Some(full_output::Keep::WhenTruncated(StateDir::at(dir.path().join("state")))),
            program: "jkz-truncate",
        };
        let reader = Chunked { data: &input, sizes, next: 0 };
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        let summary = truncate_with(reader, &mut out, &settings, "test", &mut warnings, tuning, &mut None)
            .unwrap();
        prop_assert!(warnings.is_empty(), "{}", String::from_utf8_lossy(&warnings));
        let offload = dir.path().join("state").join(crate::state_dir::layout::OFFLOAD_DIR);
        if input.len() as u64 <= cap {
            prop_assert_eq!(summary.full_output, None);
            prop_assert!(!offload.exists());
            return Ok(());
        }
        let saved = summary.full_output.expect("saved");
        prop_assert_eq!(std::fs::read(&saved).unwrap(), input);
        prop_assert_eq!(std::fs::read_dir(&offload).unwrap().count(), 1, "no temp file left");
    }
}

proptest! {
    /// A response (`jkz run`, `--record`) is kept whole whatever the cap
    /// (0 included): inline when it fits and is short text, else in
    /// `<sha256>.txt`, the file every marker names, with no other file left.
    #[test]
    fn a_response_is_kept_whole_and_the_markers_name_its_file(
        input in prop::collection::vec(piece(), 0..120).prop_map(|v| v.concat()),
        cap in prop_oneof![Just(0u64), 1u64..300],
        inline_max in 0usize..200,
        sizes in prop::collection::vec(1usize..40, 1..8),
        tuning in tuning(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            cap,
            head_share: 0.5,
            full_output: Some(full_output::Keep::Response {
                offload: dir.path().to_path_buf(),
                inline_max,
            }),
            program: "jkz-truncate",
        };
        let reader = Chunked { data: &input, sizes, next: 0 };
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        let mut kept = None;
        let summary = truncate_with(reader, &mut out, &settings, "test", &mut warnings, tuning, &mut kept)
            .unwrap();
        prop_assert!(warnings.is_empty(), "{}", String::from_utf8_lossy(&warnings));
        let kept = kept.expect("kept").unwrap();
        prop_assert_eq!(kept.bytes, input.len() as u64);
        prop_assert_eq!(&kept.sha256, &crate::deliberation::response::sha256_hex(&input));
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.path()).collect();
        let truncated = cap > 0 && input.len() as u64 > cap;
        prop_assert_eq!(summary.truncated, truncated);
        let inline_ok = !truncated && input.len() <= inline_max && std::str::from_utf8(&input).is_ok();
        if inline_ok {
            prop_assert_eq!(kept.inline.as_deref().map(str::as_bytes), Some(&input[..]));
            prop_assert!(files.is_empty());
        } else {
            let file = kept.file.clone().expect("a file");
            prop_assert_eq!(&files, &vec![file.clone()], "one file, no temp file left");
            prop_assert_eq!(std::fs::read(&file).unwrap(), input.clone());
            prop_assert_eq!(file.file_name().unwrap().to_string_lossy(), format!("{}.txt", kept.sha256));
        }
        if truncated {
            prop_assert_eq!(summary.full_output, kept.file.clone());
            let text = String::from_utf8_lossy(&out);
            let named = format!("; full output: {}]", kept.file.unwrap().display());
            if text.contains("[jkz-truncate:") {
                for line in text.lines().filter(|l| l.starts_with("[jkz-truncate:")) {
                    prop_assert!(line.ends_with(&named), "{}", line);
                }
            }
        }
    }
}

#[test]
fn several_blocks_over_budget_keep_priority_and_the_newest() {
    let mut doc = Vec::new();
    doc.extend_from_slice(b"<!-- jkz:tldr old summary -->\n");
    doc.extend(std::iter::repeat_n(b'.', 300));
    doc.extend_from_slice(b"\n<!-- jkz:verdict-json {\"verdict\":\"FAIL\"} -->\n");
    doc.extend(std::iter::repeat_n(b'.', 300));
    doc.extend_from_slice(b"\n<!-- jkz:tldr new summary -->\n");
    doc.extend(std::iter::repeat_n(b'.', 300));
    doc.push(b'\n');
    // 320: the verdict, the newest summary and their markers fit in the
    // block budget (three quarters of the cap); the old summary does not.
    // Head share 0: the old summary opens the input, and the head keeps a
    // guaranteed share now.
    let out = streaming(&doc, 320, 0.0, vec![7], Tuning::default());
    let text = String::from_utf8_lossy(&out);
    assert!(out.len() <= 320, "{text}");
    assert!(text.contains("verdict\":\"FAIL"), "{text}");
    assert!(text.contains("new summary"), "{text}");
    assert!(!text.contains("old summary"), "{text}");
}

/// A verdict placed whole inside a section cut to its head: the gap after
/// the verdict starts inside the section, so its marker is the longer one
/// that names the section, which the budget did not pay for (the output
/// ran past the cap: 393 bytes for 363 here, 420 for 419 in the seed kept
/// in `proptest-regressions/truncate/prop_tests.txt`).
#[test]
fn streaming_output_ran_one_byte_past_the_cap() {
    let mut doc = b"x\n".repeat(5);
    doc.extend_from_slice(b"## Accumulated patterns\n");
    doc.extend(std::iter::repeat_n(b'\n', 10));
    let verdict = b"<!-- jkz:verdict-json {\"v\":1} -->\n";
    doc.extend_from_slice(verdict);
    doc.extend(std::iter::repeat_n(b'\n', 100));
    doc.extend_from_slice(b"# Next\n");
    doc.extend(std::iter::repeat_n(b'\n', 400));
    for cap in [363, 364, 419] {
        let out = streaming(&doc, cap, 0.0, vec![64], Tuning::default());
        let text = String::from_utf8_lossy(&out);
        assert!(
            out.len() as u64 <= cap,
            "{} > cap {cap}: {text:?}",
            out.len()
        );
        assert!(memchr::memmem::find(&out, verdict).is_some(), "{text:?}");
    }
}
