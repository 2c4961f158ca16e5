//! `jkz-truncate`: cap a stream to a byte budget, keeping its head and tail
//! and every protected block that fits.
//!
//! The output is the head, then each chosen protected block not already in
//! the head or tail (input order), then the tail; every gap between them is
//! one marker line (see [`marker_line`]). Input no longer than the cap comes
//! out byte for byte; longer input comes out at most cap bytes long, always.
//!
//! # Budget
//!
//! Let `M` be the longest marker this input could need (the input length
//! written into both counts, plus the full-output path). Protected blocks are
//! placed first ([`select`]) in three quarters of the cap, each with a
//! marker's worth of room (a longer one for a block cut to its head: the
//! marker after its head names the block) and one marker reserved for the
//! head/tail gap; head and tail keep at least the last quarter. What remains
//! is split between head and tail by the head share, and both are cut on
//! line boundaries when that is cheap, on character boundaries otherwise
//! ([`crate::cut`]). Every gap lies next to a placed block or between head
//! and tail, so the markers always fit in what was reserved. A budget used
//! by a block that also lies in the head or tail is not handed back: the
//! output may then be shorter than the cap.
//!
//! A cap smaller than `M` cannot hold even one marker: the output is then
//! the head alone, cut to the cap, with no marker (the full output is still
//! saved when a state directory is available).
//!
//! # Streaming
//!
//! The input is read straight into the chunks of a [`HeadTailBuffer`],
//! handed out from there in line batches and scanned for blocks by the one
//! grammar ([`BlockScanner`]) while still in the cache. Held in memory: the
//! first `cap + 8` bytes, the last `cap + 320 KiB + 8` bytes (enough to copy
//! out the head of a block that ends in the latest batch and started in it
//! or on the line before), the heads of up to three open blocks whose start
//! is about to leave that window (an open fence, comment or tag block, an
//! open section, a line longer than a batch: three quarters of a cap each),
//! and the candidate blocks ([`select::Pool`], a few caps at most). All
//! cap arithmetic saturates: a cap larger than the input passes it through.
//! Nothing is written to the
//! output until the end of the input, because only then is it known
//! whether the input fits. Chunks leaving the window (which happens only
//! once the input is longer than the cap) go to the full output's writer
//! thread ([`full_output`]), and the rest of them at the end.

pub use crate::thousands::thousands;

pub mod command;
pub mod full_output;
pub mod head_tail;
pub mod record;
pub mod roles;
pub mod select;

#[cfg(test)]
mod prop_tests;

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::rc::Rc;

use crate::blocks::{BlockScanner, Event, Kind};
use crate::cut;
use crate::exit::Failure;
use crate::lines;

use self::full_output::{FullOutput, Keep, Keeper, Kept};
use self::head_tail::{Chunk, HeadTailBuffer, CHUNK};
use self::select::{select, Candidate, Markers, Placement, Pool, Span};

/// The byte budget chosen by `--mode` when neither `--max-bytes` nor
/// `JKZ_MAX_OUTPUT_BYTES` is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// The main model's window: 300 KiB.
    #[default]
    Primary,
    /// A smaller fallback model: 100 KiB.
    Fallback,
    /// A sub-agent's reply: 80 KiB.
    Agent,
}

impl Mode {
    /// The name `--mode` takes.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Primary => "primary",
            Mode::Fallback => "fallback",
            Mode::Agent => "agent",
        }
    }

    pub fn cap(self) -> u64 {
        match self {
            Mode::Primary => 307_200,
            Mode::Fallback => 102_400,
            Mode::Agent => 81_920,
        }
    }

    /// Whose window the mode's cap is sized for.
    fn purpose(self) -> &'static str {
        match self {
            Mode::Primary => "the main model's window",
            Mode::Fallback => "a smaller fallback model",
            Mode::Agent => "a sub-agent's reply",
        }
    }

    /// Every mode, in `--help`'s order.
    pub const ALL: [Mode; 3] = [Mode::Primary, Mode::Fallback, Mode::Agent];

    /// The modes' caps as help text says them:
    /// `primary 307,200 bytes, fallback 102,400, agent 81,920`.
    pub fn caps_text() -> String {
        Mode::ALL
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let unit = if i == 0 { " bytes" } else { "" };
                format!("{} {}{unit}", m.name(), thousands(m.cap()))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `--mode`'s values; each one's help is its cap (`300 KiB: …`).
impl clap::ValueEnum for Mode {
    fn value_variants<'a>() -> &'a [Self] {
        &Mode::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = format!("{} KiB: {}", self.cap() / 1024, self.purpose());
        Some(clap::builder::PossibleValue::new(self.name()).help(help))
    }
}

/// The environment variable that sets the cap when `--max-bytes` is absent.
pub const CAP_VARIABLE: &str = "JKZ_MAX_OUTPUT_BYTES";

/// The cap: the flag, else [`CAP_VARIABLE`] (its value `env`), else the
/// mode's. A pipe filter fails open: an empty value counts as unset, and an
/// invalid one gives `Err` with the mode's cap and a one-line warning naming
/// the variable, never a lost output.
pub fn resolve_cap(
    flag: Option<u64>,
    env: Option<&std::ffi::OsStr>,
    mode: Mode,
) -> Result<u64, (u64, String)> {
    if let Some(cap) = flag {
        return Ok(cap);
    }
    let default_words = format!(
        "the {} mode's cap of {} bytes",
        mode.name(),
        thousands(mode.cap())
    );
    crate::byte_cap::byte_cap(CAP_VARIABLE, env, mode.cap(), &default_words)
}

/// The cap [`resolve_cap`] picks from the flag and the process environment;
/// an invalid [`CAP_VARIABLE`] is one warning on `stderr`.
pub fn cap_from_env(flag: Option<u64>, mode: Mode, program: &str, stderr: &mut dyn Write) -> u64 {
    let env = std::env::var_os(CAP_VARIABLE);
    match resolve_cap(flag, env.as_deref(), mode) {
        Ok(cap) => cap,
        Err((cap, warning)) => {
            warn(stderr, program, &warning);
            cap
        }
    }
}

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
struct Tuning {
    /// Tail chunk size, and so the largest read and batch (at least
    /// `max_line`).
    chunk: usize,
    /// Long lines are scanned in pieces of this size.
    max_line: usize,
    /// The most bytes a kept copy holds ([`full_output::KEEP_LIMIT`]).
    keep_limit: u64,
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
fn truncate_with(
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

/// The pipe size asked for when the input is a pipe: 1 MiB, the most an
/// unprivileged process may set by default (`/proc/sys/fs/pipe-max-size`).
pub const PIPE_SIZE: usize = 1 << 20;

/// Grows the pipe `fd` reads from to [`PIPE_SIZE`], when it is a pipe and
/// the system allows it (otherwise nothing changes). With the default 64
/// KiB, writer and reader take turns every 64 KiB: on 2 cores, `cat 512
/// MiB | jkz-truncate` measured 0.48 s wall and 0.47 s CPU with it, 0.22 s
/// and 0.34 s with 1 MiB.
pub fn grow_pipe(fd: impl std::os::fd::AsFd) {
    let _ = rustix::pipe::fcntl_setpipe_size(fd, PIPE_SIZE);
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

/// One warning line on `warnings` (stderr): `PROGRAM: warning: …`, PROGRAM
/// being the program that is running (`jkz-truncate`, `jkz run`, …).
pub fn warn(warnings: &mut dyn Write, program: &str, message: &dyn std::fmt::Display) {
    // Nothing sensible is left to do if stderr itself fails.
    let _ = writeln!(warnings, "{program}: warning: {message}");
}

/// Counts `\n` bytes; every byte of the input passes here once. memchr's
/// counter (runtime-detected AVX2) measured about three times faster on
/// dense log lines than a portable loop of byte compares and adds written
/// to auto-vectorize (the baseline x86-64 target gets SSE2 only).
fn count_newlines(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64
}

/// What the assembly sees of an input longer than the cap.
struct Input<'a> {
    total: u64,
    newlines: u64,
    /// The input's first bytes (at least `cap + 3` of them).
    head: &'a [u8],
    /// The input's last bytes (at least `cap + 3` of them, or all).
    tail: &'a [u8],
    blocks: &'a [Candidate],
}

/// Writes the truncated output (see the module docs).
fn assemble(
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
fn split(rest: u64, head_share: f64) -> (u64, u64) {
    let head = ((rest as f64) * head_share.clamp(0.0, 1.0)).floor() as u64;
    let head = head.min(rest);
    (head, rest - head)
}

/// One gap's marker line. It starts with a newline when the output so far
/// does not end with one, so the marker is always a line of its own.
pub fn marker_line(bytes: u64, lines: u64, path: Option<&str>, last: Option<u8>) -> String {
    let lead = if last.is_some_and(|b| b != b'\n') {
        "\n"
    } else {
        ""
    };
    let noun = if lines == 1 { "line" } else { "lines" };
    let saved = path.map_or(String::new(), |p| format!("; full output: {p}"));
    format!(
        "{lead}[jkz-truncate: {} bytes ({} {noun}) omitted{saved}]\n",
        thousands(bytes),
        thousands(lines)
    )
}

/// A gap's marker line when the gap starts inside a block cut to its head:
/// how much of the block it omits (`in_block`: bytes, lines) and, when the
/// gap (`in_all`) runs past the block's end, how much after it.
pub fn cut_marker_line(
    kind: Kind,
    in_block: (u64, u64),
    in_all: (u64, u64),
    path: Option<&str>,
    last: Option<u8>,
) -> String {
    let lead = if last.is_some_and(|b| b != b'\n') {
        "\n"
    } else {
        ""
    };
    let counts = |(bytes, lines): (u64, u64)| {
        let noun = if lines == 1 { "line" } else { "lines" };
        format!("{} bytes ({} {noun})", thousands(bytes), thousands(lines))
    };
    let after = (in_all.0 - in_block.0, in_all.1 - in_block.1);
    let after = if after.0 == 0 {
        String::new()
    } else {
        format!(", and {} after it", counts(after))
    };
    let saved = path.map_or(String::new(), |p| format!("; full output: {p}"));
    format!(
        "{lead}[jkz-truncate: {} block cut: {} of it omitted{after}{saved}]\n",
        kind.name(),
        counts(in_block)
    )
}

/// How much longer than [`marker_bound`] a cut block's marker can be.
fn cut_marker_extra(total: u64, path: Option<&str>) -> u64 {
    let longest = Kind::ALL
        .into_iter()
        .max_by_key(|k| k.name().len())
        .expect("kinds");
    let most = (total, total);
    let all = (2 * total, 2 * total);
    let cut = cut_marker_line(longest, most, all, path, Some(b'x')).len() as u64;
    cut.saturating_sub(marker_bound(total, path))
}

/// The longest marker an input of `total` bytes can need.
fn marker_bound(total: u64, path: Option<&str>) -> u64 {
    marker_line(total, total, path, Some(b'x')).len() as u64
}

/// The shortest markers there are; the pool prunes with them because the
/// final marker lengths are known only at the end of the input.
fn marker_floor() -> Markers {
    let shortest = Kind::ALL
        .into_iter()
        .min_by_key(|k| k.name().len())
        .expect("kinds");
    let gap = marker_line(0, 0, None, None);
    let cut = cut_marker_line(shortest, (0, 0), (0, 0), None, None);
    Markers {
        gap: gap.len() as u64,
        cut: (cut.len() - gap.len()) as u64,
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
    fn a_pipe_grows_and_anything_else_is_left_alone() {
        let (read, _write) = rustix::pipe::pipe().unwrap();
        let before = rustix::pipe::fcntl_getpipe_size(&read).unwrap();
        grow_pipe(&read);
        let after = rustix::pipe::fcntl_getpipe_size(&read).unwrap();
        let max: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(PIPE_SIZE);
        assert!(
            after == PIPE_SIZE || (after == before && max < PIPE_SIZE),
            "{before} -> {after} (max {max})"
        );
        let file = tempfile::tempfile().unwrap();
        grow_pipe(&file); // not a pipe: nothing happens, nothing fails
    }

    #[test]
    fn markers() {
        assert_eq!(
            marker_line(1_234_567, 20_311, Some("state/context-offload/x.txt"), None),
            "[jkz-truncate: 1,234,567 bytes (20,311 lines) omitted; full output: state/context-offload/x.txt]\n"
        );
        assert_eq!(
            marker_line(5, 1, None, Some(b'a')),
            "\n[jkz-truncate: 5 bytes (1 line) omitted]\n"
        );
    }

    #[test]
    fn the_cap_variable_fails_open() {
        use std::ffi::OsStr;
        let env = |v: &str| resolve_cap(None, Some(OsStr::new(v)), Mode::Agent);
        assert_eq!(
            resolve_cap(Some(5), Some(OsStr::new("x")), Mode::Agent),
            Ok(5)
        );
        assert_eq!(resolve_cap(None, None, Mode::Fallback), Ok(102_400));
        assert_eq!(env(""), Ok(81_920), "empty is unset");
        assert_eq!(env(" 1000 "), Ok(1000));
        assert_eq!(env("0"), Ok(0));
        for bad in ["abc", "-1", "1e6", "18446744073709551616", "12 kb"] {
            let (cap, warning) = env(bad).unwrap_err();
            assert_eq!(cap, 81_920, "{bad}");
            assert!(
                warning.starts_with("JKZ_MAX_OUTPUT_BYTES=") && warning.contains("81,920"),
                "{warning}"
            );
            assert!(!warning.contains('\n'), "{warning}");
        }
    }

    #[test]
    fn split_by_share() {
        assert_eq!(split(100, 0.25), (25, 75));
        assert_eq!(split(101, 1.0), (101, 0));
        assert_eq!(split(7, 0.0), (0, 7));
    }
}
