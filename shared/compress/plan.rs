//! Pass one and the plan: where the sections and protected blocks are, which
//! stretches go to disk, and how much of each stays inline.
//!
//! # The model
//!
//! Sections come from the ATX headings the protected-block scanner reports
//! (so a `#` line in a fence is never a heading): a heading's section runs to
//! the next heading of the same or a higher level, and text before the first
//! heading is a section of its own. Inside a section, protected blocks (and
//! markers already in the input, which the scanner reports as signal blocks)
//! are *kept*: they are copied verbatim and cut the rest into *runs*. A run
//! over the threshold is offloaded: replaced by its head excerpt and a marker.
//!
//! Sections are planned deepest first: a subsection's runs are decided before
//! its parent's, and the parent then sees the subsection as it will be
//! written (excerpt, marker). A marker is a kept block like any other, so a
//! parent run never swallows a child's marker; what the parent can offload is
//! its own text plus the children's excerpts.
//!
//! # Why compressing twice changes nothing
//!
//! The second pass must see the same sections and the same runs, only with
//! the offloaded tails gone. Three rules make sure of it:
//! - an excerpt ends only where the scanner is idle (outside any fence), so
//!   the marker after it is read as a comment, never as fence content;
//! - a run that starts with a heading keeps that heading line (up to
//!   [`HEADING_KEEP`] bytes) in its excerpt, so section boundaries survive;
//! - an excerpt is at most half the threshold, so a run that is only an
//!   excerpt is never over the threshold again.
//!
//! A run starts where the scanner is idle: at a heading, after a kept block,
//! or at the start. One exception: a protected heading section cut off by
//! [`BLOCK_BOUND`](crate::blocks::BLOCK_BOUND) may leave an ordinary fence
//! open; the run after it is rescanned and, if it starts inside a fence, is
//! kept whole.

use std::collections::HashMap;
use std::io;

use memchr::memchr;

use super::marker_lines::{MarkerLine, MarkerLines};
use super::source::Source;
use crate::blocks::{BlockScanner, Event, Form, MAX_LINE};
use crate::cut::{ceil_char_boundary, floor_char_boundary};
use crate::lines::LineReader;

/// A heading line at the start of an offloaded run stays inline up to this
/// many bytes, so the section structure survives (and a cut heading keeps
/// its level and, being longer than 256 bytes, its non-protected reading).
pub const HEADING_KEEP: usize = 512;

/// How much of an offloaded run stays inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Excerpt {
    /// Whole lines within this many bytes.
    Bytes(u64),
    /// At most this many whole lines, within half the threshold.
    Lines(u64),
}

impl Excerpt {
    /// What `--excerpt BYTES` and `--excerpt-lines N` ask for under
    /// `threshold`: N lines when given, else BYTES, else the default
    /// ([`super::DEFAULT_EXCERPT`], or half the threshold if smaller).
    pub fn from_flags(bytes: Option<u64>, lines: Option<u64>, threshold: u64) -> Excerpt {
        match (bytes, lines) {
            (_, Some(n)) => Excerpt::Lines(n),
            (b, None) => Excerpt::Bytes(b.unwrap_or(super::DEFAULT_EXCERPT.min(threshold / 2))),
        }
    }

    /// The byte limit and line limit under `threshold`.
    fn limits(self, threshold: u64) -> (u64, u64) {
        match self {
            Excerpt::Bytes(b) => (b, u64::MAX),
            Excerpt::Lines(n) => (threshold / 2, n),
        }
    }
}

/// What pass one finds.
#[derive(Debug)]
pub struct Outline {
    pub len: u64,
    /// Every heading outside fences, comments and tag blocks, in order.
    headings: Vec<Heading>,
    /// The union of the protected blocks, sorted and disjoint.
    kept: Vec<Kept>,
    /// The lines that look like offload markers, found by the same scan.
    pub markers: Vec<MarkerLine>,
}

/// A heading's start and level packed in 8 bytes: memory is per heading,
/// and a large document can have millions.
#[derive(Clone, Copy, Debug)]
struct Heading(u64);

impl Heading {
    fn new(start: u64, level: u8) -> Heading {
        debug_assert!(start < 1 << 60 && (1..=6).contains(&level));
        Heading(start << 3 | u64::from(level))
    }

    fn start(self) -> u64 {
        self.0 >> 3
    }

    fn level(self) -> u8 {
        (self.0 & 7) as u8
    }
}

#[derive(Clone, Copy, Debug)]
struct Kept {
    start: u64,
    end: u64,
    /// The start of a protected heading section that was cut off by the
    /// block bound exactly at `end` (an ordinary fence may still be open).
    bounded_section: Option<u64>,
}

impl Outline {
    /// Total bytes of protected blocks (what no offload can shrink).
    pub fn kept_bytes(&self) -> u64 {
        self.kept.iter().map(|k| k.end - k.start).sum()
    }
}

/// Pass one: scans the whole input once with the shared scanner (finding
/// the lines that look like markers on the way).
pub fn outline(src: &Source) -> io::Result<Outline> {
    let mut reader = LineReader::new(src.reader());
    let mut scanner = BlockScanner::new();
    let mut events = Vec::new();
    let mut headings = Vec::new();
    let mut blocks = Vec::new();
    let mut take = |events: &mut Vec<Event>| {
        for event in events.drain(..) {
            match event {
                Event::Heading { level, start, .. } => headings.push(Heading::new(start, level)),
                Event::Block(b) => blocks.push(Kept {
                    start: b.start,
                    end: b.end,
                    bounded_section: (b.form == Form::Heading && !b.closed).then_some(b.start),
                }),
            }
        }
    };
    let mut markers = MarkerLines::default();
    let mut batch_start = 0u64;
    while let Some(batch) = reader.next_batch()? {
        scanner.scan(batch, &mut events);
        markers.take(src, &events, batch, batch_start)?;
        take(&mut events);
        batch_start += batch.len() as u64;
    }
    scanner.finish(&mut events);
    markers.take(src, &events, &[], batch_start)?;
    take(&mut events);
    blocks.sort_by_key(|b| b.start);
    let mut kept: Vec<Kept> = Vec::with_capacity(blocks.len());
    for b in blocks {
        match kept.last_mut() {
            Some(last) if b.start <= last.end => {
                if b.end > last.end {
                    last.end = b.end;
                    last.bounded_section = b.bounded_section;
                } else if b.end == last.end && b.bounded_section.is_some() {
                    last.bounded_section = b.bounded_section;
                }
            }
            _ => kept.push(b),
        }
    }
    Ok(Outline {
        len: src.len(),
        headings,
        kept,
        markers: markers.finish(src)?,
    })
}

/// A piece of a run's text: a stretch of the input, or the newline written
/// after an excerpt that ends inside a line (so the marker starts a line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Piece {
    Input { start: u64, end: u64 },
    Newline,
}

impl Piece {
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn len(self) -> u64 {
        match self {
            Piece::Input { start, end } => end - start,
            Piece::Newline => 1,
        }
    }
}

/// One thing written to the output, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// Run text, written as is.
    Text(Piece),
    /// A protected block (or an earlier marker), copied verbatim.
    Kept { start: u64, end: u64 },
    /// The marker of `Plan::offloads[i]`.
    Offload(usize),
}

/// A stretch that goes to disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offload {
    /// Its content, in order (excerpt included).
    pub pieces: Vec<Piece>,
    pub len: u64,
    /// How many of its first bytes stay inline before the marker.
    pub excerpt: u64,
}

#[derive(Debug)]
pub struct Plan {
    pub items: Vec<Item>,
    pub offloads: Vec<Offload>,
    /// The threshold the plan was made with.
    pub threshold: u64,
}

/// Plans the output for `threshold`.
pub fn plan(src: &Source, outline: &Outline, threshold: u64, excerpt: Excerpt) -> io::Result<Plan> {
    let mut planner = Planner {
        src,
        outline,
        threshold,
        excerpt,
        kept_at: 0,
        offloads: Vec::new(),
        idle_after_bound: HashMap::new(),
    };
    // Text before the first heading is a section of its own; then each
    // top-level heading's section, its subsections inside.
    let headings = &outline.headings;
    let first = headings.first().map_or(outline.len, |h| h.start());
    let mut items = Vec::new();
    if first > 0 {
        let mut preamble = Vec::new();
        planner.input(&mut preamble, 0, first);
        items.extend(planner.offload_runs(preamble)?);
    }
    let mut next = 0;
    while next < headings.len() {
        let (section, after) = planner.section(next)?;
        items.extend(section);
        next = after;
    }
    let offloads = planner.offloads;
    Ok(Plan {
        items,
        offloads,
        threshold,
    })
}

struct Planner<'a> {
    src: &'a Source,
    outline: &'a Outline,
    threshold: u64,
    excerpt: Excerpt,
    /// Index of the first kept block that may still overlap what comes next
    /// (sections are visited in document order).
    kept_at: usize,
    offloads: Vec<Offload>,
    /// Whether the scanner is idle after a bounded protected section.
    idle_after_bound: HashMap<u64, bool>,
}

impl Planner<'_> {
    /// The items of the section of heading `i`, its subsections planned
    /// first, and the index of the first heading after it. The section runs
    /// to the next heading of the same or a higher level; headings are in
    /// document order, so its subsections are the headings in between and
    /// no tree needs to be stored (recursion depth is at most six).
    fn section(&mut self, i: usize) -> io::Result<(Vec<Item>, usize)> {
        let headings = &self.outline.headings;
        let level = headings[i].level();
        let start_of = |j: usize| headings.get(j).map_or(self.outline.len, |h| h.start());
        let mut items = Vec::new();
        let mut at = headings[i].start();
        let mut next = i + 1;
        while next < headings.len() && headings[next].level() > level {
            self.input(&mut items, at, headings[next].start());
            let (child, after) = self.section(next)?;
            items.extend(child);
            at = start_of(after);
            next = after;
        }
        self.input(&mut items, at, start_of(next));
        Ok((self.offload_runs(items)?, next))
    }

    /// Appends `start..end` of the input, split into text and kept blocks.
    fn input(&mut self, items: &mut Vec<Item>, mut start: u64, end: u64) {
        let kept = &self.outline.kept;
        while start < end {
            while self.kept_at < kept.len() && kept[self.kept_at].end <= start {
                self.kept_at += 1;
            }
            match kept.get(self.kept_at) {
                Some(k) if k.start <= start => {
                    let stop = k.end.min(end);
                    items.push(Item::Kept { start, end: stop });
                    start = stop;
                }
                next => {
                    let stop = next.map_or(end, |k| k.start.min(end));
                    items.push(Item::Text(Piece::Input { start, end: stop }));
                    start = stop;
                }
            }
        }
    }

    /// Offloads every run of `items` over the threshold.
    fn offload_runs(&mut self, items: Vec<Item>) -> io::Result<Vec<Item>> {
        let mut out = Vec::with_capacity(items.len());
        let mut run = Vec::new();
        for item in items {
            match item {
                Item::Text(piece) => push_piece(&mut run, piece),
                other => {
                    self.finish_run(&mut run, &mut out)?;
                    out.push(other);
                }
            }
        }
        self.finish_run(&mut run, &mut out)?;
        Ok(out)
    }

    fn finish_run(&mut self, run: &mut Vec<Piece>, out: &mut Vec<Item>) -> io::Result<()> {
        let len: u64 = run.iter().map(|p| p.len()).sum();
        let Some(&Piece::Input { start, .. }) = run.first() else {
            out.extend(run.drain(..).map(Item::Text));
            return Ok(());
        };
        if len <= self.threshold || !self.starts_idle(start)? {
            out.extend(run.drain(..).map(Item::Text));
            return Ok(());
        }
        let (limit, max_lines) = self.excerpt.limits(self.threshold);
        let window = (limit as usize).max(HEADING_KEEP) + 1;
        let head = self.head(run, window)?;
        let mid_line = start > 0 && {
            let mut b = [0u8];
            self.src.read_exact_at(&mut b, start - 1)?;
            b[0] != b'\n'
        };
        let heading_first = self
            .outline
            .headings
            .binary_search_by_key(&start, |h| h.start())
            .is_ok();
        let Some(keep) = excerpt_len(&head, mid_line, heading_first, limit, max_lines) else {
            // A setext heading too long to keep inline: offloading the run
            // would turn its text into a plain line.
            out.extend(run.drain(..).map(Item::Text));
            return Ok(());
        };
        debug_assert!((keep as u64) < len);
        let mut left = keep as u64;
        for &piece in run.iter() {
            if left == 0 {
                break;
            }
            let piece = match piece {
                Piece::Input { start, end } if end - start > left => Piece::Input {
                    start,
                    end: start + left,
                },
                p => p,
            };
            left -= piece.len();
            out.push(Item::Text(piece));
        }
        if keep > 0 && head[keep - 1] != b'\n' {
            out.push(Item::Text(Piece::Newline));
        }
        out.push(Item::Offload(self.offloads.len()));
        self.offloads.push(Offload {
            pieces: std::mem::take(run),
            len,
            excerpt: keep as u64,
        });
        Ok(())
    }

    /// The first `n` bytes of a run's text.
    fn head(&self, run: &[Piece], n: usize) -> io::Result<Vec<u8>> {
        let mut head = Vec::with_capacity(n);
        for &piece in run {
            let room = n - head.len();
            if room == 0 {
                break;
            }
            match piece {
                Piece::Input { start, end } => {
                    let take = room.min((end - start) as usize);
                    let at = head.len();
                    head.resize(at + take, 0);
                    self.src.read_exact_at(&mut head[at..], start)?;
                }
                Piece::Newline => head.push(b'\n'),
            }
        }
        Ok(head)
    }

    /// False only for a run starting right after a protected heading section
    /// that the block bound cut off while an ordinary fence was open in it.
    fn starts_idle(&mut self, start: u64) -> io::Result<bool> {
        let kept = &self.outline.kept;
        let i = kept.partition_point(|k| k.end < start);
        let Some(from) = kept
            .get(i)
            .filter(|k| k.end == start)
            .and_then(|k| k.bounded_section)
        else {
            return Ok(true);
        };
        if let Some(&idle) = self.idle_after_bound.get(&start) {
            return Ok(idle);
        }
        let mut bytes = vec![0; (start - from) as usize];
        self.src.read_exact_at(&mut bytes, from)?;
        let mut scanner = BlockScanner::resume_at(from, from);
        scanner.scan(&bytes, &mut Vec::new());
        let idle = scanner.is_idle();
        self.idle_after_bound.insert(start, idle);
        Ok(idle)
    }
}

/// Appends a piece, joining it to the previous one when they touch.
fn push_piece(run: &mut Vec<Piece>, piece: Piece) {
    if let (Some(Piece::Input { end, .. }), Piece::Input { start, end: to }) =
        (run.last_mut(), piece)
    {
        if *end == start {
            *end = to;
            return;
        }
    }
    run.push(piece);
}

/// How many bytes of a run stay inline, given its first bytes `head` (at
/// least `max(limit, HEADING_KEEP) + 1` of them, or the whole run).
///
/// The excerpt is the longest run of whole lines within `limit` bytes and
/// `max_lines` lines after which the scanner is idle. When even the first
/// line is longer than `limit`, it is cut at a UTF-8 boundary (the marker
/// then goes on the next line). A run starting with a heading keeps that
/// line (a setext heading both its lines: without its underline the text
/// would be a plain line, and the next compression would see another
/// section); a run starting inside a line keeps at least one character, so
/// the newline written before its marker is always recognizable.
///
/// `None` when the run must stay whole: it starts with a setext heading
/// whose two lines are longer than [`HEADING_KEEP`].
pub fn excerpt_len(
    head: &[u8],
    mid_line: bool,
    heading_first: bool,
    limit: u64,
    max_lines: u64,
) -> Option<usize> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX).min(head.len());
    let mut scanner = if mid_line {
        // Resumed at a piece boundary inside a line: not a line start.
        BlockScanner::resume_at(MAX_LINE as u64, 0)
    } else {
        BlockScanner::new()
    };
    let mut events = Vec::new();
    let (mut best, mut at, mut lines) = (0, 0, 0);
    while lines < max_lines {
        let Some(nl) = memchr(b'\n', &head[at..limit]) else {
            break;
        };
        let end = at + nl + 1;
        scanner.scan(&head[at..end], &mut events);
        (at, lines) = (end, lines + 1);
        if scanner.is_idle() {
            best = at;
        }
    }
    if at == 0 && max_lines > 0 {
        // A single line longer than the excerpt: cut it inside.
        let cut = floor_char_boundary(head, limit);
        if cut > 0 {
            let mut probe = scanner.clone();
            let mut line = head[..cut].to_vec();
            line.push(b'\n');
            probe.scan(&line, &mut events);
            if probe.is_idle() {
                best = cut;
            }
        }
    }
    let mut least = 0;
    if heading_first {
        least = heading_len(head)?;
    }
    if mid_line {
        least = least.max(ceil_char_boundary(head, 1));
    }
    Some(best.max(least))
}

/// How much of a run that starts with a heading stays inline: its line (an
/// ATX heading cut at [`HEADING_KEEP`] keeps its level, and being longer
/// than 256 bytes, its non-protected reading), or for a setext heading its
/// text line and underline, whole, or `None` when they are longer than
/// [`HEADING_KEEP`].
fn heading_len(head: &[u8]) -> Option<usize> {
    let keep = HEADING_KEEP.min(head.len());
    let first = memchr(b'\n', &head[..keep]).map(|nl| nl + 1);
    if is_atx(head) {
        return Some(first.unwrap_or_else(|| floor_char_boundary(head, keep)));
    }
    // The scanner reported a setext heading: its underline is the next line.
    let first = first?;
    let second = first + memchr(b'\n', &head[first..keep])? + 1;
    is_underline(&head[first..second]).then_some(second)
}

/// Whether a line is an ATX heading's: up to three spaces, one to six `#`,
/// then a blank or the line's end.
fn is_atx(line: &[u8]) -> bool {
    let indent = line.iter().take(4).take_while(|&&b| b == b' ').count();
    let line = &line[indent.min(3)..];
    let hashes = line.iter().take_while(|&&b| b == b'#').count();
    indent <= 3
        && (1..=6).contains(&hashes)
        && matches!(line.get(hashes), None | Some(b' ' | b'\t' | b'\r' | b'\n'))
}

/// A setext underline line (with or without its line end): three or more
/// `=` or `-` from the first column, then only blanks.
fn is_underline(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Some(&mark) = line.first().filter(|&&b| b == b'=' || b == b'-') else {
        return false;
    };
    let run = line.iter().take_while(|&&b| b == mark).count();
    run >= 3 && line[run..].iter().all(|&b| b == b' ' || b == b'\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_takes_whole_lines_within_the_limit() {
        let head = b"a\nbb\nccc\ndddd\n";
        assert_eq!(excerpt_len(head, false, false, 9, u64::MAX), Some(9));
        assert_eq!(excerpt_len(head, false, false, 8, u64::MAX), Some(5));
        assert_eq!(excerpt_len(head, false, false, 100, 2), Some(5));
        assert_eq!(excerpt_len(head, false, false, 100, 0), Some(0));
    }

    #[test]
    fn excerpt_never_ends_inside_a_fence() {
        let head = b"intro\n```\ncode\n```\nafter\n~~~~\nopen\n";
        // Line ends inside the fences are skipped.
        assert_eq!(excerpt_len(head, false, false, 15, u64::MAX), Some(6));
        assert_eq!(excerpt_len(head, false, false, 25, u64::MAX), Some(25));
        assert_eq!(excerpt_len(head, false, false, 35, u64::MAX), Some(25));
    }

    #[test]
    fn long_first_line_is_cut_on_a_char_boundary() {
        let head = "ééééé\nrest\n".as_bytes(); // é is two bytes
        assert_eq!(excerpt_len(head, false, false, 5, u64::MAX), Some(4));
        // A fence opening cut inside stays out: the marker would be in it.
        assert_eq!(
            excerpt_len(b"```aaaaaaaa\n", false, false, 5, u64::MAX),
            Some(0)
        );
    }

    #[test]
    fn heading_line_is_kept_and_mid_line_runs_keep_a_char() {
        let head = b"## Title\nbody\n";
        assert_eq!(excerpt_len(head, false, true, 0, u64::MAX), Some(9));
        let long = format!("# {}\n", "x".repeat(1000));
        assert_eq!(
            excerpt_len(long.as_bytes(), false, true, 0, u64::MAX),
            Some(HEADING_KEEP)
        );
        assert_eq!(
            excerpt_len("éa\n".as_bytes(), true, false, 0, u64::MAX),
            Some(2)
        );
    }

    #[test]
    fn a_setext_heading_keeps_its_underline_or_stays_whole() {
        let head = b"Title\n=====\nbody\n";
        assert_eq!(excerpt_len(head, false, true, 0, u64::MAX), Some(12));
        assert_eq!(
            excerpt_len(b"#tag\n---\nbody\n", false, true, 0, u64::MAX),
            Some(9)
        );
        // An ATX heading followed by a rule keeps its own line only.
        assert_eq!(
            excerpt_len(b"## A\n---\nbody\n", false, true, 0, u64::MAX),
            Some(5)
        );
        let long = format!("{}\n---\nbody\n", "x".repeat(600));
        assert_eq!(excerpt_len(long.as_bytes(), false, true, 0, u64::MAX), None);
    }
}
