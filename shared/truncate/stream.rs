//! The streaming engine: reads the input once, keeps its head, its tail and
//! the candidate blocks, spools the rest to the full output, and writes the
//! output at the end (see [`super`]'s docs).

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::rc::Rc;

use super::assemble::{assemble, count_newlines, Input};
use super::full_output::{self, FullOutput, Keep, Keeper, Kept};
use super::head_tail::{Chunk, HeadTailBuffer, CHUNK};
use super::marker::marker_floor;
use super::select::{Candidate, Pool, Span};
use super::warning::warn;
use crate::blocks::{BlockScanner, Event};
use crate::exit::Failure;
use crate::lines;

/// How a run truncates.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Output cap in bytes; 0 disables truncation.
    pub cap: u64,
    /// The head's share (0.0..=1.0) of what blocks and markers leave.
    pub head_share: f64,
    /// Where and how the full input is kept, if anywhere: only when
    /// truncating (`jkz-truncate`), or always, as a response whose file the
    /// markers name (`jkz run`, `--record`). See [`full_output`].
    pub full_output: Option<Keep>,
    /// The running program, named in the engine's warnings.
    pub program: &'static str,
}

/// What a run did.
#[derive(Debug, PartialEq, Eq)]
pub struct Summary {
    pub input_bytes: u64,
    pub output_bytes: u64,
    pub truncated: bool,
    /// The saved full input, when one was saved.
    pub full_output: Option<PathBuf>,
}

/// Exit code for a read or write failure (usage errors are 2, from clap).
pub const EXIT_IO: u8 = 1;

/// Bytes of the first part of the stream kept beyond the cap: a head cut
/// reads up to 3 bytes past its position.
const HEAD_LOOKAHEAD: usize = 8;

/// Truncates `input` into `output` (flushed before returning). `source`
/// names the input in error messages; warnings (a full output that could not
/// be saved) go to `warnings`.
pub fn truncate(
    input: impl Read,
    output: impl Write,
    settings: &Settings,
    source: &str,
    warnings: &mut dyn Write,
) -> Result<Summary, Failure> {
    truncate_keeping(input, output, settings, source, warnings).0
}

/// What became of a response kept with [`Keep::Response`]: where it is, or
/// why it could not be kept (one line).
pub type KeptResponse = Result<Kept, String>;

/// [`truncate`], also giving back the response kept with
/// [`Keep::Response`] (`None` with any other setting, or when the input
/// could not be read to its end). The response is kept before any output
/// is written, so it is there when writing the output fails.
pub fn truncate_keeping(
    input: impl Read,
    output: impl Write,
    settings: &Settings,
    source: &str,
    warnings: &mut dyn Write,
) -> (Result<Summary, Failure>, Option<KeptResponse>) {
    let mut kept = None;
    let summary = truncate_with(
        input,
        output,
        settings,
        source,
        warnings,
        Tuning::default(),
        &mut kept,
    );
    (summary, kept)
}

/// Buffer sizes; tests shrink them to reach every edge with small inputs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tuning {
    /// Tail chunk size, and so the largest read and batch (at least
    /// `max_line`).
    pub(super) chunk: usize,
    /// Long lines are scanned in pieces of this size.
    pub(super) max_line: usize,
    /// The most bytes a kept copy holds ([`full_output::KEEP_LIMIT`]).
    pub(super) keep_limit: u64,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            chunk: CHUNK,
            max_line: crate::blocks::MAX_LINE,
            keep_limit: full_output::KEEP_LIMIT,
        }
    }
}

/// [`truncate_keeping`] with given buffer sizes.
pub(super) fn truncate_with(
    mut input: impl Read,
    mut output: impl Write,
    settings: &Settings,
    source: &str,
    warnings: &mut dyn Write,
    tuning: Tuning,
    kept: &mut Option<KeptResponse>,
) -> Result<Summary, Failure> {
    let reading = |e| Failure::io(EXIT_IO, format_args!("reading {source}"), e);
    let writing = |e| Failure::io(EXIT_IO, "writing stdout", e);
    if settings.cap == 0 {
        let keep = settings.full_output.as_ref();
        let n = pass_through(input, &mut output, keep, tuning.keep_limit, kept).map_err(
            |e| match e {
                Copy::Read(e) => reading(e),
                Copy::Write(e) => writing(e),
            },
        )?;
        output.flush().map_err(writing)?;
        return Ok(Summary {
            input_bytes: n,
            output_bytes: n,
            truncated: false,
            full_output: None,
        });
    }
    let mut run = Streaming::new(settings, tuning);
    loop {
        match run.buffer.next_batch(&mut input) {
            Ok(Some(_)) => run.batch(settings, warnings),
            Ok(None) => break,
            Err(e) => {
                // The input stopped early (its reader went away, a read
                // failed): what was read is kept, marked incomplete, and
                // nothing is printed.
                run.buffer.end_input();
                while let Ok(Some(_)) = run.buffer.next_batch(&mut io::empty()) {
                    run.batch(settings, warnings);
                }
                run.abandon(settings, warnings, kept, &e.to_string());
                return Err(reading(e));
            }
        }
    }
    run.finish(output, settings, warnings, kept)
        .map_err(writing)
}

enum Copy {
    Read(io::Error),
    Write(io::Error),
}

/// Cap 0: copy through in big slices, as it arrives; a response
/// ([`Keep::Response`]) is kept on the way (a failure to keep it never
/// stops the copy), marked incomplete when the copy stops early.
fn pass_through(
    mut input: impl Read,
    output: &mut impl Write,
    keep: Option<&Keep>,
    keep_limit: u64,
    kept: &mut Option<KeptResponse>,
) -> Result<u64, Copy> {
    let mut keeper = match keep {
        Some(Keep::Response {
            offload,
            inline_max,
        }) => Some(Ok(Keeper::new(offload.clone(), *inline_max, keep_limit))),
        _ => None,
    };
    let mut finish = |keeper: Option<io::Result<Keeper>>, stopped: Option<&str>| {
        *kept = keeper.map(|k| {
            k.and_then(|k| k.finish(true, stopped))
                .map_err(|e| format!("cannot keep the response: {e}"))
        });
    };
    let mut buf = vec![0u8; lines::DEFAULT_CAPACITY];
    let mut total = 0u64;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                finish(keeper, Some(&e.to_string()));
                return Err(Copy::Read(e));
            }
        };
        if let Some(Ok(k)) = &mut keeper {
            if let Err(e) = k.push(&buf[..n]) {
                keeper = Some(Err(e));
            }
        }
        if let Err(e) = output.write_all(&buf[..n]) {
            finish(keeper, Some(&format!("writing stdout failed: {e}")));
            return Err(Copy::Write(e));
        }
        total += n as u64;
    }
    finish(keeper, None);
    Ok(total)
}

/// The state of one truncating run while the input streams.
struct Streaming {
    cap: u64,
    scanner: BlockScanner,
    events: Vec<Event>,
    buffer: HeadTailBuffer,
    pool: Pool,
    /// The blocks still open at the end of the last batch (and the current
    /// line, when it is longer than a batch), with their first bytes once
    /// their start is about to leave the window, so a block longer than the
    /// window still has its head.
    captures: Vec<Capture>,
    /// Newlines seen so far.
    newlines: u64,
    /// The window's chunk size and how much it keeps (see [`Streaming::new`]).
    chunk: u64,
    tail_keep: u64,
    /// Started once the input is known to exceed the cap.
    full: Option<FullOutput>,
    full_tried: bool,
    /// Why a response's full output could not be started.
    full_failed: Option<String>,
    /// The most bytes a kept copy holds.
    keep_limit: u64,
}

/// The first bytes of an open block (at most [`Pool::keep`] of them).
#[derive(Debug)]
struct Capture {
    start: u64,
    newlines_before: u64,
    /// Copied out of the window only when its start is about to leave it
    /// (most blocks end before that), then shared with the block's
    /// candidate (no second copy).
    bytes: Option<Rc<Vec<u8>>>,
}

impl Streaming {
    fn new(settings: &Settings, tuning: Tuning) -> Streaming {
        let cap = settings.cap;
        let cap_bytes = usize::try_from(cap).unwrap_or(usize::MAX);
        let head_keep = cap_bytes.saturating_add(HEAD_LOOKAHEAD);
        // A block's first bytes are copied out of the window when it ends in
        // the latest batch, or (when it is still open) at the end of the
        // batch it started in. It starts in that batch or on the line just
        // before (a setext heading's text), so `batch + max_line` bytes of
        // window are enough; the final tail cut needs `cap + 8`.
        let tail_keep = cap_bytes
            .saturating_add(tuning.chunk)
            .saturating_add(tuning.max_line)
            .saturating_add(HEAD_LOOKAHEAD);
        Streaming {
            cap,
            scanner: BlockScanner::with_max_line(tuning.max_line),
            events: Vec::new(),
            buffer: HeadTailBuffer::new(head_keep, tail_keep, tuning.chunk, tuning.max_line),
            pool: Pool::new(cap, marker_floor()),
            captures: Vec::new(),
            newlines: 0,
            chunk: tuning.chunk as u64,
            tail_keep: tail_keep as u64,
            full: None,
            full_tried: false,
            full_failed: None,
            keep_limit: tuning.keep_limit,
        }
    }

    /// Scans the batch just handed out by the buffer.
    fn batch(&mut self, settings: &Settings, warnings: &mut dyn Write) {
        let batch = self.buffer.batch();
        self.scanner.scan(batch, &mut self.events);
        self.take_blocks();
        while let Some(chunk) = self.buffer.take_evicted() {
            // Eviction means the input is longer than the cap.
            self.spool(chunk, settings, warnings);
        }
    }

    /// Copies the blocks that ended in the last batch into the pool and
    /// updates the captures of the blocks still open.
    fn take_blocks(&mut self) {
        let batch = self.buffer.batch();
        let batch_start = self.buffer.len() - batch.len() as u64;
        let pos = self.buffer.len();
        let keep = self.pool.keep();
        let newlines_before = self.newlines;
        // Newlines are counted once per batch: blocks arrive ordered by
        // end, so a cursor walks forward through the batch.
        let mut cursor = (0usize, newlines_before);
        for event in self.events.drain(..) {
            let Event::Block(b) = event else {
                continue;
            };
            let newlines_end = if b.end >= batch_start {
                let to = (b.end - batch_start) as usize;
                if to >= cursor.0 {
                    cursor.1 += count_newlines(&batch[cursor.0..to]);
                } else {
                    cursor.1 -= count_newlines(&batch[to..cursor.0]);
                }
                cursor.0 = to;
                cursor.1
            } else {
                // A section ended by a setext heading whose text line is
                // in the previous batch.
                newlines_before - self.buffer.count_newlines(b.end, batch_start)
            };
            let span = Span {
                kind: b.kind,
                start: b.start,
                end: b.end,
            };
            if self.pool.holds(span) {
                continue;
            }
            let stored = span.len().min(keep) as usize;
            let captured = self
                .captures
                .iter()
                .find(|c| c.start == b.start)
                .and_then(|c| Some((c.newlines_before, c.bytes.as_ref()?)));
            let candidate = match captured {
                Some((before, bytes)) => {
                    // Shared when the capture holds exactly the block's
                    // head (a long block), so no buffer outweighs its use.
                    let head = if bytes.len() == stored {
                        Rc::clone(bytes)
                    } else {
                        Rc::new(bytes[..stored].to_vec())
                    };
                    Candidate::shared(span, before, newlines_end - before, head, stored)
                }
                None => {
                    let mut head = Vec::with_capacity(stored);
                    self.buffer
                        .copy_range(b.start, b.start + stored as u64, &mut head);
                    let newlines = self.buffer.count_newlines(b.start, b.end);
                    Candidate::new(span, newlines_end - newlines, newlines, head)
                }
            };
            self.pool.add(candidate);
        }
        self.newlines = cursor.1 + count_newlines(&batch[cursor.0..]);
        // Captures: the open raw block, the open section, the current line
        // when the batch ended inside it (its comments' blocks start there).
        let (raw, section) = self.scanner.open_starts();
        let line = Some(self.scanner.line_start()).filter(|&l| l < pos);
        let wanted = [raw, section, line];
        self.captures.retain(|c| wanted.contains(&Some(c.start)));
        for start in wanted.into_iter().flatten() {
            if self.captures.iter().any(|c| c.start == start) {
                continue;
            }
            // Counted from the nearer end of what is held.
            let newlines_before = if start >= batch_start {
                let at = (start - batch_start) as usize;
                if at <= batch.len() / 2 {
                    newlines_before + count_newlines(&batch[..at])
                } else {
                    self.newlines - count_newlines(&batch[at..])
                }
            } else {
                newlines_before - self.buffer.count_newlines(start, batch_start)
            };
            self.captures.push(Capture {
                start,
                newlines_before,
                bytes: None,
            });
        }
        // A capture's bytes are copied only once its start could leave the
        // window with the next batch; by then the whole head is here.
        let at_risk = pos
            .saturating_add(self.chunk)
            .saturating_sub(self.tail_keep);
        for c in &mut self.captures {
            if c.bytes.is_none() && c.start < at_risk {
                let end = pos.min(c.start.saturating_add(keep));
                let mut bytes = self.pool.buffer();
                bytes.reserve_exact((end - c.start) as usize);
                self.buffer.copy_range(c.start, end, &mut bytes);
                c.bytes = Some(Rc::new(bytes));
            }
        }
    }

    /// Hands a chunk that left the window (or, at the end, is no longer
    /// needed) to the full output, starting it on the first call; recycles
    /// the chunks the writer is done with.
    fn spool(&mut self, chunk: Chunk, settings: &Settings, warnings: &mut dyn Write) {
        if !self.full_tried {
            self.full_tried = true;
            if let Some(keep) = &settings.full_output {
                match FullOutput::start(keep, self.keep_limit) {
                    Ok(full) => self.full = full,
                    // A response's keeper reports it with the response.
                    Err(e) if matches!(keep, Keep::Response { .. }) => self.full_failed = Some(e),
                    Err(e) => warn(warnings, settings.program, &e),
                }
            }
        }
        let Some(full) = &mut self.full else {
            self.buffer.recycle(chunk);
            return;
        };
        if let Some(back) = full.write(chunk) {
            self.buffer.recycle(back);
        }
        while let Some(done) = full.written() {
            self.buffer.recycle(done);
        }
    }

    /// The input stopped early (`stopped` says why): keeps what was read,
    /// marked incomplete, as [`Streaming::finish`] would have kept it.
    fn abandon(
        mut self,
        settings: &Settings,
        warnings: &mut dyn Write,
        kept: &mut Option<KeptResponse>,
        stopped: &str,
    ) {
        if self.buffer.len() <= self.cap {
            self.keep_in_memory(settings, kept, Some(stopped));
        } else {
            self.keep_spooled(settings, warnings, kept, Some(stopped));
        }
    }

    /// The input fits the cap, so all of it is in memory: a response is
    /// kept from there (a full output is kept only when truncating).
    fn keep_in_memory(
        &self,
        settings: &Settings,
        kept: &mut Option<KeptResponse>,
        stopped: Option<&str>,
    ) {
        if let Some(Keep::Response {
            offload,
            inline_max,
        }) = &settings.full_output
        {
            let mut keeper = Keeper::new(offload.clone(), *inline_max, self.keep_limit);
            *kept = Some(
                keeper
                    .push(self.buffer.head())
                    .and_then(|()| keeper.finish(true, stopped))
                    .map_err(|e| format!("cannot keep the response: {e}")),
            );
        }
    }

    /// Hands the chunks still held to the full output and puts it in
    /// place: its path, when there is one.
    fn keep_spooled(
        &mut self,
        settings: &Settings,
        warnings: &mut dyn Write,
        kept: &mut Option<KeptResponse>,
        stopped: Option<&str>,
    ) -> Option<PathBuf> {
        let rest: Vec<Chunk> = self.buffer.drain_chunks().collect();
        for chunk in rest {
            self.spool(chunk, settings, warnings);
        }
        match self.full.take().map(|full| full.commit(stopped)) {
            None => {
                *kept = self.full_failed.take().map(Err);
                None
            }
            Some(Ok((path, response))) => {
                *kept = response.map(Ok);
                Some(path)
            }
            Some(Err(why)) => {
                match &settings.full_output {
                    Some(Keep::Response { .. }) => *kept = Some(Err(why)),
                    _ => warn(
                        warnings,
                        settings.program,
                        &format_args!("{why}; the truncated output is still printed"),
                    ),
                }
                None
            }
        }
    }

    fn finish(
        mut self,
        mut output: impl Write,
        settings: &Settings,
        warnings: &mut dyn Write,
        kept: &mut Option<KeptResponse>,
    ) -> io::Result<Summary> {
        self.scanner.finish(&mut self.events);
        self.buffer.end_batch();
        self.take_blocks();
        let total = self.buffer.len();
        let newlines = self.newlines;
        if total <= self.cap {
            self.keep_in_memory(settings, kept, None);
            output.write_all(self.buffer.head())?;
            output.flush()?;
            return Ok(Summary {
                input_bytes: total,
                output_bytes: total,
                truncated: false,
                full_output: None,
            });
        }
        // A tail cut reads at most cap + 3 bytes.
        let tail_from = total
            .saturating_sub(self.cap.saturating_add(HEAD_LOOKAHEAD as u64))
            .max(self.buffer.tail_start());
        let mut tail_window = Vec::with_capacity((total - tail_from) as usize);
        self.buffer.copy_range(tail_from, total, &mut tail_window);
        // The window's bytes are all copied out: the rest of the input goes
        // to the full output, which must be in place before a marker names it.
        let saved = self.keep_spooled(settings, warnings, kept, None);
        let path = saved.as_ref().map(|p| p.display().to_string());
        let input = Input {
            total,
            newlines,
            head: self.buffer.head(),
            tail: &tail_window,
            blocks: self.pool.candidates(),
        };
        let mut counter = Counter(&mut output, 0);
        assemble(
            &input,
            self.cap,
            settings.head_share,
            path.as_deref(),
            &mut counter,
        )?;
        let written = counter.1;
        output.flush()?;
        Ok(Summary {
            input_bytes: total,
            output_bytes: written,
            truncated: true,
            full_output: saved,
        })
    }
}

/// Counts what passes through to a writer.
struct Counter<W>(W, u64);

impl<W: Write> Write for Counter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.0.write(buf)?;
        self.1 += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}
