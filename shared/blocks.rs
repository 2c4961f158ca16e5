//! The protected-block grammar: one streaming scanner used by `jkz-truncate`,
//! `jkz-compress` and the digests.
//!
//! A protected block is a run of whole lines that must survive truncation and
//! compression verbatim. Four forms are recognized:
//!
//! 1. jkz signal comments: `<!-- jkz:NAME …` through the first `-->` (one or
//!    many lines; `<!--jkz:` works too). The block is every line the comment
//!    touches. `NAME` is matched against the kinds; anything else is a
//!    [`Kind::Signal`].
//! 2. Fenced blocks whose info string's first word is a kind name
//!    (```` ```verdict-json ````, `~~~decisions`, case-insensitive), through the
//!    closing fence (same character, at least as long).
//! 3. Tag blocks starting a line: `<compact-plan>` … `</compact-plan>` (any kind
//!    name, lower case, attributes allowed), through the line of the closing tag.
//! 4. Heading sections: a heading whose text is TL;DR, TLDR, Decisions,
//!    Accumulated Patterns, Compact Plan, Plan Digest or Verdict —
//!    case-insensitive, emphasis (`*`, `_`) and a trailing `:` ignored, and
//!    `NAME: more text` accepted too (`## Verdict: FAIL`) — through the line
//!    before the next heading of any level. The section's own text is the
//!    signal: a nested subsection (`### Details` under `## TL;DR`) ends it and
//!    is ordinary text unless its own heading names a kind.
//!
//! Headings are ATX headings (`## Title`) and setext headings: a line of
//! text directly followed by an underline, a line of three or more `=`
//! (level 1) or `-` (level 2) starting in the first column with nothing but
//! blanks after it. The text line must be ordinary text: not blank, not an
//! underline itself, and holding nothing the scanner recognizes (no heading,
//! fence, tag or jkz comment); a heading reported this way starts at the
//! text line.
//!
//! Inside a fence, a comment or a tag block nothing else is recognized (that is
//! content); ordinary fences are tracked so a `#` line in code is not a heading.
//! Fences and comments inside a heading section are reported as blocks of
//! their own.
//!
//! # Bounds
//!
//! Memory never depends on the input. Lines longer than [`MAX_LINE`] are
//! scanned as pieces of that size (a marker straddling a piece boundary of such
//! a line is not recognized). A fence, comment or tag block that is still open
//! once it has grown to [`BLOCK_BOUND`] bytes is ended at the end of that piece
//! (`closed == false`) and scanning resumes as normal text, so one unterminated
//! fence cannot hide a verdict printed later. Heading sections get the same
//! bound. No block is ever longer than `BLOCK_BOUND + MAX_LINE` bytes.

use std::sync::LazyLock;

use memchr::{memchr, memmem};

// Built once: constructing a searcher per line costs more than the search.
static COMMENT_OPEN: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"<!--"));
static COMMENT_CLOSE: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"-->"));
static TAG_CLOSE: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"</"));
/// What the fast path looks for besides `` ` ``, `~` and `#`, in one SIMD
/// (Teddy) pass: a comment's `<!`, a `<` after a line start or a blank (a
/// tag block may open), and a line starting with `-` or `=` (a setext
/// underline). Pattern 0 must stay `<!` (see [`next_lt_or_underline`]).
static LT_OR_UNDERLINE: LazyLock<aho_corasick::packed::Searcher> = LazyLock::new(|| {
    aho_corasick::packed::Searcher::new(["<!", "\n<", " <", "\t<", "\n-", "\n="])
        .expect("six two-byte patterns")
});

pub use crate::lines::MAX_LINE;

/// A block still open at this size is ended there (see the module docs).
pub const BLOCK_BOUND: u64 = 1024 * 1024;

/// What a protected block protects. Declared highest priority first, so the
/// derived `Ord` is the priority order (`VerdictJson < CompactPlan < …`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    VerdictJson,
    CompactPlan,
    PlanDigest,
    Decisions,
    Tldr,
    AccumulatedPatterns,
    /// Any other `<!-- jkz:NAME … -->` signal (`propose-issue`, `offload`, …).
    Signal,
}

impl Kind {
    /// Every kind, highest priority first.
    pub const ALL: [Kind; 7] = [
        Kind::VerdictJson,
        Kind::CompactPlan,
        Kind::PlanDigest,
        Kind::Decisions,
        Kind::Tldr,
        Kind::AccumulatedPatterns,
        Kind::Signal,
    ];

    /// The name used in fences, tags and comments (`verdict-json`, …).
    pub fn name(self) -> &'static str {
        match self {
            Kind::VerdictJson => "verdict-json",
            Kind::CompactPlan => "compact-plan",
            Kind::PlanDigest => "plan-digest",
            Kind::Decisions => "decisions",
            Kind::Tldr => "tldr",
            Kind::AccumulatedPatterns => "accumulated-patterns",
            Kind::Signal => "signal",
        }
    }

    /// The kind whose name is exactly `name` (ASCII case-insensitive), if any.
    /// `signal` is not a name: it is what unknown comment names become.
    pub fn from_name(name: &[u8]) -> Option<Kind> {
        Kind::ALL[..6]
            .iter()
            .copied()
            .find(|k| k.name().as_bytes().eq_ignore_ascii_case(name))
    }
}

/// How a block was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    Comment,
    Fence,
    Tag,
    Heading,
}

/// A protected block: the half-open byte range `start..end` of whole lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProtectedBlock {
    pub kind: Kind,
    pub form: Form,
    pub start: u64,
    pub end: u64,
    /// False when the block was ended by [`BLOCK_BOUND`] or by the end of the
    /// input before its closing fence, `-->` or tag. A heading section that
    /// runs to the end of the input is closed normally.
    pub closed: bool,
}

impl ProtectedBlock {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// What the scanner reports, in input order of the moment it is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A heading outside any fence, comment or tag block, protected or not
    /// (`kind` is set for the protected names). For a setext heading `start`
    /// is the start of its text line, the line before the underline.
    Heading {
        level: u8,
        start: u64,
        kind: Option<Kind>,
    },
    /// A block that has just ended. Nested blocks end before the blocks that
    /// hold them, so blocks arrive ordered by `end`, not by `start`. A block
    /// may end before the current batch: a setext heading ends the open
    /// section at its text line, the line before the underline.
    Block(ProtectedBlock),
}

#[derive(Clone, Copy, Debug)]
enum Raw {
    None,
    Fence {
        marker: u8,
        len: usize,
        kind: Option<Kind>,
        start: u64,
    },
    Comment {
        kind: Kind,
        start: u64,
    },
    Tag {
        kind: Kind,
        start: u64,
    },
}

#[derive(Clone, Copy, Debug)]
struct Section {
    kind: Kind,
    start: u64,
}

/// The line just scanned, when it could be a setext heading's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TextLine {
    start: u64,
    /// The kind its text names, if it becomes a heading.
    kind: Option<Kind>,
}

/// The streaming scanner. Feed it the input in batches with [`scan`]; each
/// batch must end at a line end (`\n`), at a [`MAX_LINE`] piece boundary of
/// the current line, or at the end of the input — [`crate::lines::LineReader`]
/// produces exactly such batches. Then call [`finish`].
///
/// [`scan`]: BlockScanner::scan
/// [`finish`]: BlockScanner::finish
#[derive(Clone, Debug)]
pub struct BlockScanner {
    max_line: usize,
    /// Absolute offset of the next byte to be scanned.
    pos: u64,
    /// Absolute offset of the first byte of the current line.
    line_start: u64,
    raw: Raw,
    /// The open protected heading section (sections end at any heading, so
    /// at most one is open).
    section: Option<Section>,
    /// The previous line, when a setext underline would make it a heading.
    text_line: Option<TextLine>,
    /// jkz comments opened so far (a line with one is no heading text).
    comments_seen: u64,
    /// Skip plain lines in bulk (off only in tests, as the oracle).
    fast_path: bool,
}

impl Default for BlockScanner {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockScanner {
    pub fn new() -> Self {
        Self::with_max_line(MAX_LINE)
    }

    /// A scanner that splits long lines every `max_line` bytes (tests use tiny
    /// values to reach the piece logic; production code uses [`MAX_LINE`]).
    pub fn with_max_line(max_line: usize) -> Self {
        assert!(max_line > 0);
        BlockScanner {
            max_line,
            pos: 0,
            line_start: 0,
            raw: Raw::None,
            section: None,
            text_line: None,
            comments_seen: 0,
            fast_path: true,
        }
    }

    /// An idle scanner resuming at absolute offset `pos` of a line that
    /// started at `line_start` (`line_start <= pos`), as if everything before
    /// had been scanned and left no fence, comment, tag block or protected
    /// section open. `jkz-compress` uses it to look ahead in one stretch of a
    /// document that it knows starts idle.
    pub fn resume_at(pos: u64, line_start: u64) -> Self {
        assert!(line_start <= pos);
        BlockScanner {
            pos,
            line_start,
            ..Self::new()
        }
    }

    /// Absolute offset of the next byte to be scanned.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Absolute offset of the first byte of the current line (the position
    /// itself between lines).
    pub fn line_start(&self) -> u64 {
        self.line_start
    }

    /// True when no fence (protected or not), comment, tag block or protected
    /// heading section is open: the next line is read as ordinary text, so a
    /// `<!-- jkz:… -->` line placed here is seen as a comment.
    pub fn is_idle(&self) -> bool {
        matches!(self.raw, Raw::None) && self.section.is_none()
    }

    /// The starts of the blocks open right now: a fence, comment or tag
    /// block, and a protected heading section. A streaming caller that
    /// needs a long block's first bytes copies them from here on, before
    /// they leave its window.
    pub fn open_starts(&self) -> (Option<u64>, Option<u64>) {
        let raw = match self.raw {
            Raw::None => None,
            Raw::Fence { kind: None, .. } => None,
            Raw::Fence { start, .. } | Raw::Comment { start, .. } | Raw::Tag { start, .. } => {
                Some(start)
            }
        };
        (raw, self.section.map(|s| s.start))
    }

    /// Scans one batch, appending what it finds to `events`.
    pub fn scan(&mut self, batch: &[u8], events: &mut Vec<Event>) {
        let mut i = 0;
        // Where the fast path's searches last found something (batch
        // indices), so a stretch is searched once, not once per stop.
        let mut found = Found::default();
        while i < batch.len() {
            let at_line_start = self.pos == self.line_start;
            if self.fast_path && at_line_start {
                let skipped = match self.raw {
                    Raw::None => self.skip_plain_lines(batch, i, &mut found),
                    Raw::Fence { marker, start, .. } => {
                        self.skip_fence_lines(batch, i, marker, start)
                    }
                    Raw::Comment { .. } | Raw::Tag { .. } => 0,
                };
                if skipped > 0 {
                    i += skipped;
                    continue;
                }
            }
            let done_in_line = (self.pos - self.line_start) as usize;
            let room = self.max_line - done_in_line % self.max_line;
            let window = &batch[i..batch.len().min(i + room)];
            let (piece, ends_line) = match memchr(b'\n', window) {
                Some(nl) => (&window[..=nl], true),
                None => (window, false),
            };
            // A piece that starts a line and is the line's first piece.
            let first = at_line_start;
            self.piece(piece, first, ends_line, events);
            self.pos += piece.len() as u64;
            if ends_line {
                self.line_start = self.pos;
            }
            self.enforce_bound(events);
            i += piece.len();
        }
    }

    /// The fast path: skips the whole lines at the start of `rest` in which
    /// nothing can open, exactly as [`piece`] would, without its per-line
    /// work. A line can open something only if it holds `<!--`, its first
    /// non-blank byte is `` ` ``, `~`, `#` or `<`, or its first byte is `=`
    /// or `-` (a setext underline); those are found with two SIMD searches
    /// over the whole stretch, so plain text costs no per-line work at all.
    /// The last skipped line is remembered as a possible setext heading
    /// text. It stops before a heading section could reach
    /// [`BLOCK_BOUND`], so bounds are still enforced at the same piece.
    /// Returns the number of bytes skipped (always whole lines).
    ///
    /// [`piece`]: BlockScanner::piece
    fn skip_plain_lines(&mut self, batch: &[u8], at: usize, found: &mut Found) -> usize {
        let span_end = at + self.skip_limit(None, batch.len() - at);
        let mut from = at;
        let stop = loop {
            let mark = match found.mark {
                Some(m) if m >= from => m,
                _ => {
                    let m = memchr::memchr3(b'`', b'~', b'#', &batch[from..])
                        .map_or(batch.len(), |n| from + n);
                    found.mark = Some(m);
                    m
                }
            };
            let other = match found.other {
                Some(m) if m >= from => m,
                _ => {
                    let m = next_lt_or_underline(batch, from, at);
                    found.other = Some(m);
                    m
                }
            };
            let p = mark.min(other);
            if p >= span_end {
                // Nothing can open here: skip every whole line.
                break memchr::memrchr(b'\n', &batch[at..span_end]).map_or(at, |nl| at + nl + 1);
            }
            let mut q = p;
            while q > at && matches!(batch[q - 1], b' ' | b'\t') {
                q -= 1;
            }
            if q == at || batch[q - 1] == b'\n' {
                break q; // a line whose first non-blank byte may open
            }
            if batch[p..].starts_with(b"<!--") {
                break memchr::memrchr(b'\n', &batch[at..p]).map_or(at, |nl| at + nl + 1);
            }
            from = p + 1;
        };
        let skipped = stop - at;
        if skipped > 0 {
            // The last skipped line matters only if the next line may be an
            // underline: one that starts with `=` or `-`, or one in the next
            // batch.
            let next = batch.get(stop).copied();
            self.text_line = None;
            if matches!(next, None | Some(b'=' | b'-')) {
                let last_start =
                    memchr::memrchr(b'\n', &batch[at..stop - 1]).map_or(at, |nl| at + nl + 1);
                // A line longer than a piece is scanned in pieces: no text line.
                let last = &batch[last_start..stop];
                if last.len() <= self.max_line {
                    self.text_line = text_line(last, self.pos + (last_start - at) as u64);
                }
            }
        }
        self.pos += skipped as u64;
        self.line_start = self.pos;
        skipped
    }

    /// How many of the `available` bytes from the current position lines
    /// may be skipped in without running the per-piece bound check: skipped
    /// lines must end before the bound of the open raw block (which started
    /// at `raw_start`) and of the outermost open section.
    fn skip_limit(&self, raw_start: Option<u64>, available: usize) -> usize {
        let oldest = match (raw_start, self.section) {
            (Some(r), Some(s)) => Some(r.min(s.start)),
            (r, s) => r.or(s.map(|s| s.start)),
        };
        match oldest {
            Some(start) => (start + BLOCK_BOUND)
                .saturating_sub(self.pos + 1)
                .min(available as u64) as usize,
            None => available,
        }
    }

    /// The fast path inside a fence that opened at `start` with `marker`:
    /// skips the whole lines at the start of `batch[at..]` that cannot close
    /// it, exactly as [`piece`] would. Only a line whose first non-blank
    /// byte is the fence's marker can close a fence, so one SIMD search for
    /// that byte covers the stretch; an unterminated fence (megabytes of
    /// text until its bound) then costs no per-line work. Returns the number
    /// of bytes skipped (always whole lines).
    ///
    /// [`piece`]: BlockScanner::piece
    fn skip_fence_lines(&mut self, batch: &[u8], at: usize, marker: u8, start: u64) -> usize {
        let span = &batch[at..at + self.skip_limit(Some(start), batch.len() - at)];
        let whole_lines_before =
            |p: usize| memchr::memrchr(b'\n', &span[..p]).map_or(0, |nl| nl + 1);
        let mut from = 0;
        let stop = loop {
            let Some(n) = memchr(marker, &span[from..]) else {
                break whole_lines_before(span.len());
            };
            let p = from + n;
            let mut q = p;
            while q > 0 && matches!(span[q - 1], b' ' | b'\t') {
                q -= 1;
            }
            if q == 0 || span[q - 1] == b'\n' {
                break q; // a line that may close the fence
            }
            // The marker is not first on its line: go on after the line.
            match memchr(b'\n', &span[p..]) {
                Some(nl) => from = p + nl + 1,
                None => break whole_lines_before(p),
            }
        };
        self.pos += stop as u64;
        self.line_start = self.pos;
        stop
    }

    /// Ends the input: every open block is reported.
    pub fn finish(&mut self, events: &mut Vec<Event>) {
        let end = self.pos;
        if let Some(block) = self.end_raw(end, false) {
            events.push(Event::Block(block));
        }
        if let Some(s) = self.section.take() {
            events.push(section_block(s, end, true));
        }
    }

    fn piece(&mut self, piece: &[u8], first: bool, ends_line: bool, events: &mut Vec<Event>) {
        // The previous line's candidacy is used (by an underline) or lost
        // here; this line's is known once it ends.
        let previous = self.text_line.take();
        let idle_line = first && ends_line && matches!(self.raw, Raw::None);
        let comments_before = self.comments_seen;
        let plain = self.piece_events(piece, first, previous, events);
        if plain && idle_line && self.comments_seen == comments_before {
            self.text_line = text_line(piece, self.pos);
        }
    }

    /// Scans one piece; true when the piece was ordinary text (it opened no
    /// fence, heading or tag block; comments are counted apart).
    fn piece_events(
        &mut self,
        piece: &[u8],
        first: bool,
        previous: Option<TextLine>,
        events: &mut Vec<Event>,
    ) -> bool {
        let start = self.pos;
        let end = start + piece.len() as u64;
        let mut from = 0;
        let mut plain = false;
        match self.raw {
            Raw::Fence { marker, len, .. } => {
                if first && is_closing_fence(piece, marker, len) {
                    let block = self.end_raw(end, true);
                    events.extend(block.map(Event::Block));
                }
                return false;
            }
            Raw::Comment { .. } => match COMMENT_CLOSE.find(piece) {
                Some(at) => {
                    let block = self.end_raw(end, true);
                    events.extend(block.map(Event::Block));
                    from = at + 3;
                }
                None => return false,
            },
            Raw::Tag { kind, .. } => match find_closing_tag(piece, kind) {
                Some(after) => {
                    let block = self.end_raw(end, true);
                    events.extend(block.map(Event::Block));
                    from = after;
                }
                None => return false,
            },
            Raw::None if first => {
                let line = trim_eol(piece);
                if let Some((marker, len, kind)) = fence_opening(line) {
                    self.raw = Raw::Fence {
                        marker,
                        len,
                        kind,
                        start,
                    };
                    return false;
                }
                if let Some((level, kind)) = heading(line) {
                    self.heading(level, start, kind, events);
                } else if let Some(level) = underline_level(line) {
                    if let Some(text) = previous {
                        self.heading(level, text.start, text.kind, events);
                    }
                } else if let Some((kind, after)) = tag_opening(line) {
                    self.raw = Raw::Tag { kind, start };
                    match find_closing_tag(&piece[after..], kind) {
                        Some(close) => {
                            let block = self.end_raw(end, true);
                            events.extend(block.map(Event::Block));
                            from = after + close;
                        }
                        None => return false,
                    }
                } else {
                    plain = true;
                }
            }
            Raw::None => {}
        }
        self.scan_comments(piece, from, end, events);
        plain
    }

    /// A heading at `start`: it ends the open section (a section's own text
    /// is the signal, whatever the level) and may open one.
    fn heading(&mut self, level: u8, start: u64, kind: Option<Kind>, events: &mut Vec<Event>) {
        if let Some(s) = self.section.take() {
            events.push(section_block(s, start, true));
        }
        events.push(Event::Heading { level, start, kind });
        if let Some(kind) = kind {
            self.section = Some(Section { kind, start });
        }
    }

    /// Finds `<!-- jkz:` openers in `piece[from..]` (normal text), opening or
    /// completing comment blocks. Blocks start at the start of the line.
    fn scan_comments(&mut self, piece: &[u8], mut from: usize, end: u64, events: &mut Vec<Event>) {
        while let Some(at) = COMMENT_OPEN.find(&piece[from..]) {
            let open = from + at;
            let Some((kind, body)) = comment_opening(&piece[open + 4..]) else {
                from = open + 4;
                continue;
            };
            let body = open + 4 + body;
            self.comments_seen += 1;
            self.raw = Raw::Comment {
                kind,
                start: self.line_start,
            };
            match COMMENT_CLOSE.find(&piece[body..]) {
                Some(close) => {
                    let block = self.end_raw(end, true);
                    events.extend(block.map(Event::Block));
                    from = body + close + 3;
                }
                None => return,
            }
        }
    }

    /// Leaves raw mode, returning the block it protected (if protected).
    fn end_raw(&mut self, end: u64, closed: bool) -> Option<ProtectedBlock> {
        let raw = std::mem::replace(&mut self.raw, Raw::None);
        let (kind, form, start) = match raw {
            Raw::None => return None,
            Raw::Fence { kind, start, .. } => (kind?, Form::Fence, start),
            Raw::Comment { kind, start } => (kind, Form::Comment, start),
            Raw::Tag { kind, start } => (kind, Form::Tag, start),
        };
        Some(ProtectedBlock {
            kind,
            form,
            start,
            end,
            closed,
        })
    }

    /// Ends whatever has grown to [`BLOCK_BOUND`] at the current position.
    fn enforce_bound(&mut self, events: &mut Vec<Event>) {
        let end = self.pos;
        let raw_start = match self.raw {
            Raw::None => None,
            Raw::Fence { start, .. } | Raw::Comment { start, .. } | Raw::Tag { start, .. } => {
                Some(start)
            }
        };
        if raw_start.is_some_and(|s| end - s >= BLOCK_BOUND) {
            let block = self.end_raw(end, false);
            events.extend(block.map(Event::Block));
        }
        if let Some(s) = self.section.filter(|s| end - s.start >= BLOCK_BOUND) {
            self.section = None;
            events.push(section_block(s, end, false));
        }
    }
}

/// The fast path's search results within one batch.
#[derive(Default)]
struct Found {
    /// Next `` ` ``, `~` or `#` at or after where it was searched from.
    mark: Option<usize>,
    /// Next `<!`, `<` after a line start or blank, or line start with `=`
    /// or `-` (see [`next_lt_or_underline`]).
    other: Option<usize>,
}

/// The first index `≥ from` in `batch` that may matter to the fast path
/// besides `` ` ``, `~` and `#`: a `<` that starts a comment (`<!`) or
/// follows a line start or a blank, or a `-` or `=` that starts a line
/// (`at` starts a line). Mid-line `<` after other bytes cannot open
/// anything and is not reported. `batch.len()` when there is none.
fn next_lt_or_underline(batch: &[u8], from: usize, at: usize) -> usize {
    if (from == at || batch[from - 1] == b'\n')
        && matches!(batch.get(from), Some(b'<' | b'=' | b'-'))
    {
        return from;
    }
    match LT_OR_UNDERLINE.find(&batch[from..]) {
        // "<!" points at its `<`; the others at their second byte.
        Some(m) if m.pattern().as_usize() == 0 => from + m.start(),
        Some(m) => from + m.start() + 1,
        None => batch.len(),
    }
}

/// A setext underline: three or more `=` (level 1) or `-` (level 2) from
/// the first column, then only blanks (`line` without its line end).
fn underline_level(line: &[u8]) -> Option<u8> {
    let marker = *line.first()?;
    let level = match marker {
        b'=' => 1,
        b'-' => 2,
        _ => return None,
    };
    let run = line.iter().take_while(|&&b| b == marker).count();
    (run >= 3 && line[run..].iter().all(|&b| b == b' ' || b == b'\t')).then_some(level)
}

/// The candidacy of a whole ordinary line (`line` with its `\n`, starting
/// at `start`) as a setext heading's text: not blank, not an underline.
fn text_line(line: &[u8], start: u64) -> Option<TextLine> {
    let text = trim_eol(line);
    if is_blank(text) || underline_level(text).is_some() {
        return None;
    }
    Some(TextLine {
        start,
        kind: heading_kind(text),
    })
}

fn section_block(s: Section, end: u64, closed: bool) -> Event {
    Event::Block(ProtectedBlock {
        kind: s.kind,
        form: Form::Heading,
        start: s.start,
        end,
        closed,
    })
}

/// Every protected block of an in-memory document, ordered by `start` (ties:
/// the enclosing block first).
pub fn find_blocks(doc: &[u8]) -> Vec<ProtectedBlock> {
    let mut scanner = BlockScanner::new();
    let mut events = Vec::new();
    scanner.scan(doc, &mut events);
    scanner.finish(&mut events);
    in_order(events)
}

/// The blocks among `events`, ordered by `start` (ties: the enclosing block
/// first), the order [`find_blocks`] returns.
pub fn in_order(events: impl IntoIterator<Item = Event>) -> Vec<ProtectedBlock> {
    let mut blocks: Vec<ProtectedBlock> = events
        .into_iter()
        .filter_map(|e| match e {
            Event::Block(b) => Some(b),
            Event::Heading { .. } => None,
        })
        .collect();
    blocks.sort_by_key(|b| (b.start, std::cmp::Reverse(b.end)));
    blocks
}

/// What a protected block holds without its delimiters: for a reader of
/// the block's text (the pattern miner), so that no reader parses the
/// grammar again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockContent<'a> {
    /// A comment's NAME (`pattern` in `<!-- jkz:pattern … -->`); empty for
    /// the other forms.
    pub name: &'a [u8],
    /// Where `body` starts in the document.
    pub start: u64,
    /// A comment's text between its name and `-->`; a fence's lines
    /// between the fences; a tag block's text between the tags; a heading
    /// section's lines after its heading (and a setext underline).
    pub body: &'a [u8],
}

/// The content of `block`, a block of `doc` (as [`find_blocks`] returns
/// it). A comment block holds one or more comments of its kind: a line may
/// carry several, so two comment blocks can share one range; each comment
/// that opens in the range and closes in it (or at the end of an unclosed
/// block) is returned, in order.
pub fn contents<'a>(doc: &'a [u8], block: &ProtectedBlock) -> Vec<BlockContent<'a>> {
    let start = block.start as usize;
    let end = (block.end as usize).min(doc.len());
    let Some(text) = doc.get(start..end) else {
        return Vec::new();
    };
    let content = |from: usize, to: usize, name: &'a [u8]| BlockContent {
        name,
        start: (start + from) as u64,
        body: &text[from..to.max(from)],
    };
    let first_line_end = memchr(b'\n', text).map_or(text.len(), |i| i + 1);
    let last_line_start =
        |to: usize| memchr::memrchr(b'\n', &text[..to.saturating_sub(1)]).map_or(0, |i| i + 1);
    match block.form {
        Form::Comment => {
            let mut out = Vec::new();
            let mut from = 0;
            while let Some(at) = COMMENT_OPEN.find(&text[from..]) {
                let open = from + at + 4;
                let Some((kind, name, body)) = comment_parts(&text[open..]) else {
                    from = open;
                    continue;
                };
                let body = open + body;
                let close = COMMENT_CLOSE.find(&text[body..]).map(|c| body + c);
                if kind == block.kind && (close.is_some() || !block.closed) {
                    let name = &text[open + name.start..open + name.end];
                    out.push(content(body, close.unwrap_or(text.len()), name));
                }
                from = close.map_or(text.len(), |c| c + 3);
            }
            out
        }
        Form::Fence => {
            let to = if block.closed && first_line_end < text.len() {
                last_line_start(text.len())
            } else {
                text.len()
            };
            vec![content(first_line_end, to, b"")]
        }
        Form::Tag => {
            let from =
                tag_opening(trim_eol(&text[..first_line_end])).map_or(first_line_end, |(_, i)| i);
            let to = find_closing_tag(&text[from..], block.kind)
                .map_or(text.len(), |i| from + i - block.kind.name().len() - 3);
            vec![content(from, to, b"")]
        }
        Form::Heading => {
            let mut from = first_line_end;
            // A setext heading: its text line, then the underline.
            if heading(trim_eol(&text[..first_line_end])).is_none() {
                from = memchr(b'\n', &text[from..]).map_or(text.len(), |i| from + i + 1);
            }
            vec![content(from, text.len(), b"")]
        }
    }
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn skip_blanks(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    &s[n..]
}

fn is_blank(s: &[u8]) -> bool {
    s.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

/// A fence opening line: blanks, three or more `` ` `` or `~`, an info string.
/// Indentation is not limited, so fences inside list items are found.
fn fence_opening(line: &[u8]) -> Option<(u8, usize, Option<Kind>)> {
    let rest = skip_blanks(line);
    let marker = *rest.first()?;
    if marker != b'`' && marker != b'~' {
        return None;
    }
    let len = rest.iter().take_while(|&&b| b == marker).count();
    if len < 3 {
        return None;
    }
    let info = &rest[len..];
    if marker == b'`' && memchr(b'`', info).is_some() {
        return None; // inline code such as ```x``` is not a fence
    }
    let info = skip_blanks(info);
    let word_len = info
        .iter()
        .take_while(|&&b| !matches!(b, b' ' | b'\t' | b'{' | b'\r'))
        .count();
    Some((marker, len, Kind::from_name(&info[..word_len])))
}

fn is_closing_fence(piece: &[u8], marker: u8, len: usize) -> bool {
    let rest = skip_blanks(piece);
    let run = rest.iter().take_while(|&&b| b == marker).count();
    run >= len && is_blank(&rest[run..])
}

/// An ATX heading: up to three spaces, one to six `#`, then a blank or the end.
/// Returns its level and, for a protected name, its kind.
fn heading(line: &[u8]) -> Option<(u8, Option<Kind>)> {
    let indent = line.iter().take_while(|&&b| b == b' ').count();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.iter().take_while(|&&b| b == b'#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let text = &rest[level..];
    if !text.is_empty() && text[0] != b' ' && text[0] != b'\t' {
        return None;
    }
    Some((level as u8, heading_kind(text)))
}

/// The protected kind named by a heading's text, if any.
fn heading_kind(text: &[u8]) -> Option<Kind> {
    const NAMES: [(&str, Kind); 7] = [
        ("tl;dr", Kind::Tldr),
        ("tldr", Kind::Tldr),
        ("decisions", Kind::Decisions),
        ("accumulated patterns", Kind::AccumulatedPatterns),
        ("compact plan", Kind::CompactPlan),
        ("plan digest", Kind::PlanDigest),
        ("verdict", Kind::VerdictJson),
    ];
    if text.len() > 256 {
        return None;
    }
    // Most headings in a log are not protected: a first letter that starts
    // no name settles it before any normalizing.
    let first = text
        .iter()
        .find(|&&b| !(b.is_ascii_whitespace() || b == b'*' || b == b'_'));
    if !first.is_some_and(|b| b"tdacpv".contains(&b.to_ascii_lowercase())) {
        return None;
    }
    // Normalized on the stack: every heading line of a log passes here.
    let mut buf = [0u8; 256];
    let mut len = 0;
    for &b in text.iter().filter(|&&b| b != b'*' && b != b'_') {
        buf[len] = b.to_ascii_lowercase();
        len += 1;
    }
    let mut norm = buf[..len].trim_ascii_end();
    // An optional closing sequence of `#`s, then blanks.
    let hashes = norm.iter().rev().take_while(|&&b| b == b'#').count();
    if hashes > 0 && (hashes == norm.len() || matches!(norm[norm.len() - hashes - 1], b' ' | b'\t'))
    {
        norm = &norm[..norm.len() - hashes];
    }
    let norm = norm.trim_ascii();
    NAMES.iter().find_map(|&(name, kind)| {
        let rest = norm.strip_prefix(name.as_bytes())?;
        (rest.is_empty() || rest[0] == b':').then_some(kind)
    })
}

/// A tag opening at the start of a line: blanks, `<name` then `>` or a blank.
/// Returns the kind and the index just past the opening tag's `>` (or past
/// the name when the tag's `>` is not on this line).
fn tag_opening(line: &[u8]) -> Option<(Kind, usize)> {
    let rest = skip_blanks(line);
    let indent = line.len() - rest.len();
    let body = rest.strip_prefix(b"<")?;
    let name_len = body
        .iter()
        .take_while(|&&b| b.is_ascii_lowercase() || b == b'-')
        .count();
    // Only lower-case letters are taken, so `<TLDR>` is not a tag block.
    let kind = Kind::from_name(&body[..name_len])?;
    let after_name = indent + 1 + name_len;
    match line.get(after_name) {
        Some(b'>') => Some((kind, after_name + 1)),
        Some(b' ' | b'\t') => Some((
            kind,
            memchr(b'>', &line[after_name..]).map_or(after_name, |gt| after_name + gt + 1),
        )),
        _ => None,
    }
}

/// The index just past `</name>` in `s`, if present.
fn find_closing_tag(s: &[u8], kind: Kind) -> Option<usize> {
    let name = kind.name().as_bytes();
    let mut from = 0;
    while let Some(at) = TAG_CLOSE.find(&s[from..]) {
        let tag = from + at + 2;
        if s[tag..].starts_with(name) && s.get(tag + name.len()) == Some(&b'>') {
            return Some(tag + name.len() + 1);
        }
        from = tag;
    }
    None
}

/// After `<!--`: optional blanks, `jkz:`, a name. Returns the kind and the
/// index (relative to `after`) where the comment body starts.
fn comment_opening(after: &[u8]) -> Option<(Kind, usize)> {
    comment_parts(after).map(|(kind, _, body)| (kind, body))
}

/// [`comment_opening`] with the name's range too (relative to `after`).
fn comment_parts(after: &[u8]) -> Option<(Kind, std::ops::Range<usize>, usize)> {
    let rest = skip_blanks(after);
    let body = rest.strip_prefix(b"jkz:")?;
    let name_len = body
        .iter()
        .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        .count();
    if name_len == 0 {
        return None;
    }
    let kind = Kind::from_name(&body[..name_len]).unwrap_or(Kind::Signal);
    let name_start = after.len() - body.len();
    Some((
        kind,
        name_start..name_start + name_len,
        name_start + name_len,
    ))
}

#[cfg(test)]
mod oracle;

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(doc: &str) -> Vec<(Kind, Form, String, bool)> {
        find_blocks(doc.as_bytes())
            .into_iter()
            .map(|b| {
                let text = doc[b.start as usize..b.end as usize].to_string();
                (b.kind, b.form, text, b.closed)
            })
            .collect()
    }

    #[test]
    fn comment_on_one_line() {
        let doc = "a\n<!-- jkz:verdict-json {\"verdict\":\"FAIL\"} -->\nb\n";
        assert_eq!(
            blocks(doc),
            vec![(
                Kind::VerdictJson,
                Form::Comment,
                "<!-- jkz:verdict-json {\"verdict\":\"FAIL\"} -->\n".into(),
                true
            )]
        );
    }

    #[test]
    fn comment_over_lines_and_mid_line() {
        let doc = "x\nsee <!--jkz:propose-issue: Title |\nmore\n--> tail\ny\n";
        assert_eq!(
            blocks(doc),
            vec![(
                Kind::Signal,
                Form::Comment,
                "see <!--jkz:propose-issue: Title |\nmore\n--> tail\n".into(),
                true
            )]
        );
    }

    #[test]
    fn ordinary_comment_is_not_protected() {
        assert!(blocks("<!-- note -->\n<!-- jkz: -->\n").is_empty());
    }

    #[test]
    fn fences() {
        let doc =
            "```verdict-json\n{\"v\":1}\n```\n~~~~ Decisions x\n~~~\n~~~~\n```rust\n## no\n```\n";
        let got = blocks(doc);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].2, "```verdict-json\n{\"v\":1}\n```\n");
        assert_eq!(got[1].0, Kind::Decisions);
        assert_eq!(got[1].2, "~~~~ Decisions x\n~~~\n~~~~\n");
    }

    #[test]
    fn heading_inside_fence_is_not_a_heading() {
        let doc = "```\n## TL;DR\n```\n";
        assert!(blocks(doc).is_empty());
    }

    #[test]
    fn tags() {
        let doc = "<compact-plan>\nstep 1\n</compact-plan> done\n  <tldr id=1>short</tldr>\n<TLDR>no</TLDR>\n";
        let got = blocks(doc);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].2, "<compact-plan>\nstep 1\n</compact-plan> done\n");
        assert_eq!(got[1].2, "  <tldr id=1>short</tldr>\n");
    }

    #[test]
    fn heading_sections_end_at_the_next_heading_of_any_level() {
        // A section's own text is the signal: a nested subsection ends it
        // and is a section of its own only when it names a kind.
        let doc = "# Report\n## **TL;DR:**\nok\n### Details\nlong\n### Decisions\n- a\n## Next\n#### Verdict: FAIL\nbad\n";
        let got = blocks(doc);
        let kinds: Vec<_> = got.iter().map(|b| (b.0, b.2.as_str())).collect();
        assert_eq!(
            kinds,
            vec![
                (Kind::Tldr, "## **TL;DR:**\nok\n"),
                (Kind::Decisions, "### Decisions\n- a\n"),
                (Kind::VerdictJson, "#### Verdict: FAIL\nbad\n"),
            ]
        );
    }

    #[test]
    fn setext_headings_are_headings() {
        let doc =
            "TL;DR\n=====\nship it\nRelease 2.0\n-----------\nnotes\nDecisions:\n---\n- keep\n";
        let got = blocks(doc);
        let kinds: Vec<_> = got.iter().map(|b| (b.0, b.2.as_str())).collect();
        assert_eq!(
            kinds,
            vec![
                (Kind::Tldr, "TL;DR\n=====\nship it\n"),
                (Kind::Decisions, "Decisions:\n---\n- keep\n"),
            ]
        );
        let mut scanner = BlockScanner::new();
        let mut events = Vec::new();
        scanner.scan(
            b"text\n===\n\n---\n  ---\n---\nx <!-- jkz:a -->\n---\n",
            &mut events,
        );
        let headings: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Event::Heading { level, start, .. } => Some((*level, *start)),
                Event::Block(_) => None,
            })
            .collect();
        // After a blank line an underline is no heading; an indented one is
        // text (and so heading text for the next underline); a line
        // holding a jkz comment is no heading text.
        assert_eq!(headings, vec![(1, 0), (2, 14)]);
    }

    #[test]
    fn setext_heading_ends_a_section_across_batches() {
        // The underline arrives in the next batch: the section ends before
        // the text line, which the previous batch held.
        let mut scanner = BlockScanner::new();
        let mut events = Vec::new();
        scanner.scan(b"## TL;DR\nok\nNext\n", &mut events);
        assert!(events.iter().all(|e| !matches!(e, Event::Block(_))));
        scanner.scan(b"====\nmore\n", &mut events);
        scanner.finish(&mut events);
        assert_eq!(
            in_order(events),
            vec![ProtectedBlock {
                kind: Kind::Tldr,
                form: Form::Heading,
                start: 0,
                end: 12,
                closed: true
            }]
        );
    }

    #[test]
    fn heading_text_rules() {
        assert_eq!(heading(b"## TLDR ##"), Some((2, Some(Kind::Tldr))));
        assert_eq!(
            heading(b"# _Accumulated Patterns_"),
            Some((1, Some(Kind::AccumulatedPatterns)))
        );
        assert_eq!(
            heading(b"### plan digest:"),
            Some((3, Some(Kind::PlanDigest)))
        );
        assert_eq!(heading(b"## Decisions made"), Some((2, None)));
        assert_eq!(heading(b"#Decisions"), None);
        assert_eq!(heading(b"    # Decisions"), None);
        assert_eq!(heading(b"####### Decisions"), None);
    }

    #[test]
    fn unterminated_fence_is_bounded_and_scanning_resumes() {
        let mut doc = String::from("```decisions\n");
        while doc.len() < BLOCK_BOUND as usize + 10 {
            doc.push_str("0123456789abcdef\n");
        }
        doc.push_str("<!-- jkz:verdict-json {} -->\n");
        let got = find_blocks(doc.as_bytes());
        assert_eq!(got.len(), 2);
        assert!(!got[0].closed);
        assert!(got[0].len() >= BLOCK_BOUND && got[0].len() < BLOCK_BOUND + 64);
        assert_eq!(got[1].kind, Kind::VerdictJson);
    }

    #[test]
    fn unterminated_at_end_of_input() {
        let got = blocks("<!-- jkz:tldr open\nstill\n");
        assert_eq!(
            got,
            vec![(
                Kind::Tldr,
                Form::Comment,
                "<!-- jkz:tldr open\nstill\n".into(),
                false
            )]
        );
    }

    #[test]
    fn crlf_lines() {
        let doc = "## Verdict\r\nPASS\r\n## Other\r\n```tldr\r\nx\r\n```\r\n";
        let got = blocks(doc);
        assert_eq!(got[0].2, "## Verdict\r\nPASS\r\n");
        assert_eq!(got[1].2, "```tldr\r\nx\r\n```\r\n");
    }

    #[test]
    fn batches_of_any_split_agree() {
        let doc = "# A\n## TL;DR\nx <!-- jkz:decisions a\nb --> <!-- jkz:z -->\n```plan-digest\n# no\n```\n<tldr>\n</tldr>\n";
        let whole = find_blocks(doc.as_bytes());
        // Batches may end only at line ends: split at every line end.
        let mut scanner = BlockScanner::new();
        let mut events = Vec::new();
        for line in doc.split_inclusive('\n') {
            scanner.scan(line.as_bytes(), &mut events);
        }
        scanner.finish(&mut events);
        assert_eq!(whole, in_order(events));
        assert_eq!(whole.len(), 5, "TL;DR section, two comments, fence, tag");
    }

    /// Scans `doc` in the given batches (each ending at a legal place).
    fn events_of(doc: &[u8], max_line: usize, fast: bool, cuts: &[usize]) -> Vec<Event> {
        let mut scanner = BlockScanner::with_max_line(max_line);
        scanner.fast_path = fast;
        let mut events = Vec::new();
        let mut from = 0;
        for &to in cuts.iter().chain([&doc.len()]) {
            if to > from {
                scanner.scan(&doc[from..to], &mut events);
                from = to;
            }
        }
        scanner.finish(&mut events);
        events
    }

    /// Legal batch ends: after each `\n`, at piece boundaries of long lines.
    fn legal_cuts(doc: &[u8], max_line: usize) -> Vec<usize> {
        let mut cuts = Vec::new();
        let mut line_start = 0;
        for (i, &b) in doc.iter().enumerate() {
            if b == b'\n' {
                cuts.push(i + 1);
                line_start = i + 1;
            } else if (i + 1 - line_start) % max_line == 0 {
                cuts.push(i + 1);
            }
        }
        cuts
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(600))]

        #[test]
        fn fast_path_matches_the_line_by_line_scan(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "plain text\n", "  indented\n", "\tx\n", "\n", "   \n", "no newline",
                "a long line that is longer than a piece\n", "x <!-- jkz:tldr a --> y\n",
                "<!-- jkz:decisions\n", "-->\n", "```verdict-json\n", "```\n", "~~~tldr\n",
                "~~~\n", "## TL;DR\n", "# Top\n", "### Decisions\n", "<compact-plan>\n",
                "</compact-plan>\n", "  ## not\n", "<b>\n", "`code`\n", "<!-- plain -->\n",
                "  ```\n", "x ``` y\n", "````\n", " ~~~ \n", "a ~ b\n", "``\n",
                "===\n", "---\n", "--- \n", " ---\n", "-- x\n", "- item\n", "TL;DR\n",
                "2025-03-01 -\n", "=x\n", "  <tldr>\n", "\t<decisions>x</decisions>\n",
                "a < b\n", " <!-- jkz:x -->\n", "<!x\n", "x<tldr>\n",
            ]), 0..50),
            max_line in 4usize..40,
            keep in proptest::collection::vec(proptest::bool::ANY, 0..64),
        ) {
            let doc = pieces.concat().into_bytes();
            let legal = legal_cuts(&doc, max_line);
            let cuts: Vec<usize> = legal
                .iter()
                .zip(keep.iter().cycle())
                .filter(|(_, k)| **k)
                .map(|(c, _)| *c)
                .collect();
            let slow = events_of(&doc, max_line, false, &[]);
            proptest::prop_assert_eq!(&events_of(&doc, max_line, true, &cuts), &slow);
            proptest::prop_assert_eq!(&events_of(&doc, max_line, true, &[]), &slow);
        }
    }

    #[test]
    fn fast_path_keeps_the_section_bound() {
        // Every alignment of the bound against the 19-byte lines.
        for pad in 0..19 {
            let mut doc = b"# Top\n## TL;DR\n".to_vec();
            doc.extend(std::iter::repeat_n(b'x', pad));
            doc.push(b'\n');
            while doc.len() < BLOCK_BOUND as usize + 300 {
                doc.extend_from_slice(b"plain line of text\n");
            }
            doc.extend_from_slice(b"## Next\n");
            assert_fast_path_cuts_like_the_slow_one(&doc, pad);
        }
    }

    /// `doc` holds a block cut at its bound: the fast path gives the slow
    /// path's events, and (once, at `pad` 0) also with short lines read
    /// in batches cut at legal places.
    fn assert_fast_path_cuts_like_the_slow_one(doc: &[u8], pad: usize) {
        let slow = events_of(doc, MAX_LINE, false, &[]);
        assert!(slow
            .iter()
            .any(|e| matches!(e, Event::Block(b) if !b.closed)));
        assert_eq!(events_of(doc, MAX_LINE, true, &[]), slow, "pad {pad}");
        if pad == 0 {
            let cuts: Vec<usize> = legal_cuts(doc, 16).into_iter().step_by(997).collect();
            let slow = events_of(doc, 16, false, &[]);
            assert_eq!(events_of(doc, 16, true, &cuts), slow);
        }
    }

    #[test]
    fn fast_path_keeps_the_fence_bound() {
        // An unterminated fence, alone and inside a protected section that
        // opened earlier (whose bound then comes first), at every alignment
        // of the bound against the 19-byte lines; a marker byte mid-line on
        // every line so the in-fence search stops often.
        for prefix in [&b""[..], b"## TL;DR\nsummary line\n"] {
            for pad in 0..19 {
                let mut doc = prefix.to_vec();
                doc.extend_from_slice(b"```tldr\n");
                doc.extend(std::iter::repeat_n(b'x', pad));
                doc.push(b'\n');
                while doc.len() < BLOCK_BOUND as usize + 300 {
                    doc.extend_from_slice(b"fenced ` text line\n");
                }
                doc.extend_from_slice(b"```\n## Next\n");
                assert_fast_path_cuts_like_the_slow_one(&doc, pad);
            }
        }
    }

    #[test]
    fn idle_only_outside_fences_and_sections() {
        let mut scanner = BlockScanner::new();
        let mut events = Vec::new();
        assert!(scanner.is_idle());
        scanner.scan(b"# A\n```rust\n", &mut events);
        assert!(!scanner.is_idle(), "inside an ordinary fence");
        scanner.scan(b"```\n", &mut events);
        assert!(scanner.is_idle());
        scanner.scan(b"## TL;DR\n", &mut events);
        assert!(!scanner.is_idle(), "inside a protected section");
    }

    #[test]
    fn resume_mid_line_reads_no_fence_opening() {
        // Resumed in the middle of a line: "```" there is not a line start.
        let mut scanner = BlockScanner::resume_at(MAX_LINE as u64, 0);
        let mut events = Vec::new();
        scanner.scan(b"```\n# H\n", &mut events);
        assert!(scanner.is_idle());
        assert_eq!(
            events,
            vec![Event::Heading {
                level: 1,
                start: MAX_LINE as u64 + 4,
                kind: None
            }]
        );
    }

    #[test]
    fn long_lines_are_scanned_in_pieces() {
        let mut scanner = BlockScanner::with_max_line(8);
        let mut events = Vec::new();
        // The opener sits wholly inside the second 8-byte piece; `-->` later.
        scanner.scan(b"12345678<!--jkz:", &mut events);
        scanner.scan(b"a x --> \n", &mut events);
        scanner.finish(&mut events);
        assert!(
            events.is_empty(),
            "name cut by a piece boundary: {events:?}"
        );
        let mut scanner = BlockScanner::with_max_line(16);
        scanner.scan(b"0123456789abcdef<!-- jkz:tldr x \n", &mut events);
        scanner.finish(&mut events);
        assert_eq!(events.len(), 1);
    }
}
