//! The reducer's reading side: the input streams through fixed chunks
//! ([`HeadTailBuffer`], as `jkz-truncate` reads), each batch is scanned for
//! protected blocks by the one grammar ([`BlockScanner`]) and split into
//! lines, and each line goes to the [`LineSorter`] once it is known whether
//! a protected block holds it.
//!
//! # When a line's block is known
//!
//! A block is reported when it ends, and a setext heading's section starts
//! one line back (at its text line, before the underline). So a line is
//! handed on only once the line after it is complete and scanned: it lies in
//! a block if a block reported so far covers it, or if a block still open
//! started at or before it.
//!
//! # Memory
//!
//! The first lines are held until the family is known (when the command
//! does not name it: [`super::sniff`], at most [`SNIFF_LINES`] lines and
//! [`SNIFF_BYTES`]). Of a line, at most `max_line` bytes are kept. The
//! input itself is held only while it might come out unchanged (until it
//! is three times the [`hold_units`] long: then the view saves enough
//! whatever it shows); after that, chunks that leave the window go to the
//! full output's writer thread. What the view may show is held by
//! [`Retained`], a few budgets' worth. None of it grows with the input.

use std::io::{self, Read, Write};
use std::path::Path;

use memchr::memchr;

use crate::blocks::{BlockScanner, Event};
use crate::truncate::full_output::{FullOutput, Keep, WholeOutput, KEEP_LIMIT};
use crate::truncate::head_tail::{HeadTailBuffer, CHUNK};

use super::classifier::Classifier;
use super::command::family_for_command;
use super::item::{units, LABELS};
use super::notes::{warnings_line, QUIET_GAP};
use super::retain::Retained;
use super::sniff::{sniff, SNIFF_BYTES, SNIFF_LINES};
use super::sort::LineSorter;
use super::table::{FilterTable, GENERIC};
use super::view::{build, FullNote, ViewInput};
use super::{Context, Reduced, Stats, MIN_BUDGET};

/// Buffer sizes; tests make them tiny to reach every edge.
#[derive(Clone, Copy, Debug)]
pub struct Tuning {
    pub chunk: usize,
    pub max_line: usize,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            chunk: CHUNK,
            max_line: crate::lines::MAX_LINE,
        }
    }
}

/// Client characters past which an input is reduced whatever the view
/// shows: the view is at most `budget`, so it saves at least a fifth and at
/// least 1,000 characters.
pub fn hold_units(budget: usize) -> usize {
    (budget + budget / 4).max(budget + 1000)
}

/// A complete line waiting to be handed on.
#[derive(Debug, Default)]
struct Line {
    start: u64,
    end: u64,
    text: Vec<u8>,
    whole: bool,
}

/// Splits batches into lines, finds their blocks, and hands them on.
struct Splitter {
    scanner: BlockScanner,
    events: Vec<Event>,
    /// Blocks reported that may still cover a line not yet handed on.
    ranges: Vec<(u64, u64)>,
    max_keep: usize,
    /// The line being read: its start, its first bytes, its length so far.
    cur: Vec<u8>,
    cur_start: u64,
    cur_len: u64,
    pending: Option<Line>,
    /// A spare buffer for the next line's text.
    spare: Vec<u8>,
    /// The lines the client itself would show.
    client: ClientLines,
}

/// Which whole lines of an output a client that cuts it would show (by
/// bytes: a character is at least one), as ranges of line numbers: those
/// in its head, and those in the tail of what it reads. Bounded memory: the
/// lines that may still lie in the tail are kept, nothing more.
#[derive(Debug, Default)]
struct ClientLines {
    head: u64,
    read: u64,
    tail: u64,
    head_lines: u64,
    /// Line number, start and end of the lines that may lie in the tail.
    recent: std::collections::VecDeque<(u64, u64, u64)>,
    seq: u64,
}

impl ClientLines {
    fn new(cut: Option<super::ClientCut>) -> ClientLines {
        match cut {
            Some(c) => ClientLines {
                head: c.head as u64,
                read: c.read as u64,
                tail: c.tail as u64,
                ..ClientLines::default()
            },
            None => ClientLines::default(),
        }
    }

    fn line(&mut self, start: u64, end: u64) {
        let seq = self.seq;
        self.seq += 1;
        if end <= self.head {
            self.head_lines += 1;
        }
        if self.tail == 0 || end > self.read {
            return;
        }
        self.recent.push_back((seq, start, end));
        // The tail ends at or after this line: what starts before its
        // start can no longer be in it.
        let from = end.saturating_sub(self.tail);
        while self.recent.front().is_some_and(|&(_, s, _)| s < from) {
            self.recent.pop_front();
        }
    }

    /// The ranges of line numbers shown, once the output ended at `total`
    /// bytes.
    fn shown(&self, total: u64) -> Vec<std::ops::Range<u64>> {
        let mut out = Vec::with_capacity(2);
        out.push(0..self.head_lines);
        let end = total.min(self.read);
        let from = end.saturating_sub(self.tail);
        let mut tail = self
            .recent
            .iter()
            .filter(|&&(_, s, e)| s >= from && e <= end)
            .map(|&(seq, _, _)| seq);
        if let Some(first) = tail.next() {
            let last = tail.next_back().unwrap_or(first);
            out.push(first..last + 1);
        }
        out
    }
}

/// A line held for sniffing: its text, whether whole, whether in a block.
type Held = (Vec<u8>, bool, bool);

/// Where lines go: held for sniffing, then sorted.
struct Sink<'t> {
    table: &'t FilterTable,
    /// Lines held until the family is known, and their bytes.
    sniffing: Option<(Vec<Held>, usize)>,
    sorter: Option<LineSorter>,
    family: String,
    retained: Retained,
    warnings: Vec<String>,
}

impl Splitter {
    fn new(max_line: usize, client: ClientLines) -> Splitter {
        Splitter {
            client,
            scanner: BlockScanner::with_max_line(max_line),
            events: Vec::new(),
            ranges: Vec::new(),
            max_keep: max_line,
            cur: Vec::new(),
            cur_start: 0,
            cur_len: 0,
            pending: None,
            spare: Vec::new(),
        }
    }

    fn batch(&mut self, batch: &[u8], start: u64, sink: &mut Sink) {
        self.scanner.scan(batch, &mut self.events);
        self.take_events();
        let open = self.scanner.open_starts();
        let mut at = 0;
        while at < batch.len() {
            match memchr(b'\n', &batch[at..]) {
                Some(n) => {
                    self.extend(&batch[at..at + n]);
                    at += n + 1;
                    self.complete(start + at as u64, open, sink);
                }
                None => {
                    self.extend(&batch[at..]);
                    at = batch.len();
                }
            }
        }
    }

    fn take_events(&mut self) {
        for e in self.events.drain(..) {
            if let Event::Block(b) = e {
                self.ranges.push((b.start, b.end));
            }
        }
    }

    fn extend(&mut self, bytes: &[u8]) {
        let room = self.max_keep.saturating_sub(self.cur.len());
        self.cur.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.cur_len += bytes.len() as u64;
    }

    /// The current line ended at `end`: the line before it can be handed on.
    fn complete(&mut self, end: u64, open: (Option<u64>, Option<u64>), sink: &mut Sink) {
        let mut text = std::mem::take(&mut self.spare);
        text.clear();
        std::mem::swap(&mut text, &mut self.cur);
        let line = Line {
            start: self.cur_start,
            end,
            whole: self.cur_len as usize <= self.max_keep,
            text,
        };
        self.cur_start = end;
        self.cur_len = 0;
        if let Some(p) = self.pending.replace(line) {
            self.hand_on(p, open, sink);
        }
        let first = self.pending.as_ref().map_or(end, |p| p.start);
        self.ranges.retain(|r| r.1 > first);
    }

    fn hand_on(&mut self, line: Line, open: (Option<u64>, Option<u64>), sink: &mut Sink) {
        let in_block = self
            .ranges
            .iter()
            .any(|&(s, e)| s < line.end && line.start < e)
            || open.0.is_some_and(|s| s <= line.start)
            || open.1.is_some_and(|s| s <= line.start);
        self.client.line(line.start, line.end);
        sink.line(&line.text, line.whole, in_block);
        self.spare = line.text;
    }

    /// The input ended at `total`.
    fn finish(&mut self, total: u64, sink: &mut Sink) {
        self.scanner.finish(&mut self.events);
        self.take_events();
        if self.cur_len > 0 {
            self.complete(total, (None, None), sink);
        }
        if let Some(p) = self.pending.take() {
            self.hand_on(p, (None, None), sink);
        }
    }
}

impl<'t> Sink<'t> {
    fn new(table: &'t FilterTable, family: Option<&str>, budget: usize) -> Sink<'t> {
        let mut sink = Sink {
            table,
            sniffing: Some((Vec::new(), 0)),
            sorter: None,
            family: GENERIC.to_string(),
            retained: Retained::new(budget),
            warnings: Vec::new(),
        };
        if let Some(family) = family {
            sink.start(family);
        }
        sink
    }

    /// The family is known: compile it and sort what was held.
    fn start(&mut self, family: &str) {
        let classifier = Classifier::new(self.table, family).or_else(|e| {
            // A project's bad rule must not cost the output: the built-in
            // table has the family too (or its generic fallback).
            self.warnings
                .push(format!("{e}; the built-in rules are used"));
            let built_in = FilterTable::built_in();
            let name = if built_in.family(family).is_some() {
                family
            } else {
                GENERIC
            };
            Classifier::new(&built_in, name)
        });
        let classifier = classifier.expect("the built-in table compiles");
        self.family = classifier.family.clone();
        let mut sorter = LineSorter::new(classifier);
        if let Some((held, _)) = self.sniffing.take() {
            for (text, whole, in_block) in held {
                sorter.push(&text, whole, in_block, &mut self.retained);
            }
        }
        self.sorter = Some(sorter);
    }

    fn line(&mut self, text: &[u8], whole: bool, in_block: bool) {
        if let Some(sorter) = &mut self.sorter {
            sorter.push(text, whole, in_block, &mut self.retained);
            return;
        }
        let (held, bytes) = self.sniffing.as_mut().expect("sniffing until sorting");
        held.push((text.to_vec(), whole, in_block));
        *bytes += text.len();
        if held.len() >= SNIFF_LINES || *bytes >= SNIFF_BYTES {
            self.sniff_now();
        }
    }

    fn sniff_now(&mut self) {
        let family = {
            let (held, _) = self.sniffing.as_ref().expect("sniffing");
            let lines: Vec<&[u8]> = held.iter().map(|(t, _, _)| t.as_slice()).collect();
            sniff(self.table, &lines).map_or(GENERIC.to_string(), |f| f.name.clone())
        };
        self.start(&family);
    }

    fn finish(&mut self) -> &mut LineSorter {
        if self.sorter.is_none() {
            self.sniff_now();
        }
        let sorter = self.sorter.as_mut().expect("started");
        sorter.finish(&mut self.retained);
        sorter
    }
}

/// Reduces `input` (see [`super::reduce`]).
pub fn reduce_with(
    input: &mut dyn Read,
    ctx: &Context,
    table: &FilterTable,
    warn: &mut dyn Write,
    tuning: Tuning,
) -> io::Result<Reduced> {
    let budget = ctx.budget_chars.max(MIN_BUDGET);
    let hold = hold_units(budget);
    // An output the client would show whole may come back whole: held
    // until it is past the client's cap (at most 4 bytes a character).
    let hold_bytes = (hold * 3).max(ctx.client.map_or(0, |c| c.whole).saturating_mul(4));
    let family = ctx
        .command
        .and_then(|c| family_for_command(table, c))
        .map(|f| f.name.clone());
    let mut buffer = HeadTailBuffer::new(hold_bytes, hold_bytes, tuning.chunk, tuning.max_line);
    // What the client would show of the output without jkz, when it is
    // not shown whole (a failing command's head and tail, a persisted
    // output's preview): the view keeps at least the signals in it.
    let mut splitter = Splitter::new(tuning.max_line, ClientLines::new(ctx.client));
    let mut sink = Sink::new(table, family.as_deref(), budget);
    let mut full: Option<FullOutput> = None;
    let mut full_tried = false;
    let mut input_units = 0u64;
    // Already kept by whoever wrote the input: no copy.
    let keep = match ctx.kept_at {
        Some(_) => None,
        None => ctx.keep.map(|dir| Keep::WhenTruncated(dir.clone())),
    };
    let mut start_full = |full: &mut Option<FullOutput>, warn: &mut dyn Write| {
        if let (false, Some(keep)) = (std::mem::replace(&mut full_tried, true), &keep) {
            match FullOutput::start(keep, KEEP_LIMIT) {
                Ok(f) => *full = f,
                Err(e) => crate::truncate::warn(warn, "jkz reduce", &e),
            }
        }
    };
    let mut input = input;
    while buffer.next_batch(&mut input)?.is_some() {
        let batch = buffer.batch();
        input_units += crate::client_text::client_len_bytes(batch) as u64;
        let start = buffer.len() - batch.len() as u64;
        splitter.batch(batch, start, &mut sink);
        while let Some(chunk) = buffer.take_evicted() {
            // Only past `hold_bytes`: the output is reduced for sure.
            start_full(&mut full, warn);
            match &mut full {
                Some(f) => {
                    // A chunk comes straight back when the writer failed.
                    if let Some(back) = f.write(chunk) {
                        buffer.recycle(back);
                    }
                    while let Some(done) = f.written() {
                        buffer.recycle(done);
                    }
                }
                None => buffer.recycle(chunk),
            }
        }
    }
    let total = buffer.len();
    splitter.finish(total, &mut sink);
    for w in sink.warnings.drain(..) {
        crate::truncate::warn(warn, "jkz reduce", &w);
    }
    let sorter = sink.finish();
    let lines = sorter.lines();
    let in_memory = total <= hold_bytes as u64;
    if in_memory {
        // Exact: the client counts invalid UTF-8 as U+FFFD.
        input_units = units(buffer.head()) as u64;
    }
    // An input held whole is written at once when it is kept; a longer
    // one's writer is already running. Kept by whoever wrote it: no copy.
    let mut whole: Option<WholeOutput> = None;
    if in_memory {
        if let (None, Some(dir)) = (ctx.kept_at, ctx.keep) {
            match WholeOutput::plan(dir) {
                Ok(planned) => whole = planned,
                Err(e) => crate::truncate::warn(warn, "jkz reduce", &e),
            }
        }
    } else {
        start_full(&mut full, warn);
    }
    let provisional = match ctx.kept_at {
        Some(path) => Some(FullNote {
            path: absolute(path),
            bytes: total,
            lines,
            reader: ctx.reader,
        }),
        None => full
            .as_ref()
            .map(|f| f.path())
            .or(whole.as_ref().map(|w| w.path()))
            .map(|path| FullNote {
                path: absolute(path),
                bytes: total.min(KEEP_LIMIT),
                lines,
                reader: ctx.reader,
            }),
    };
    let warnings = warnings_line(&sorter.warning_kinds, sorter.warnings_other);
    let counts = sorter.tally.counts().to_vec();
    let labels = sorter.classifier.labels.clone();
    let context = sorter.classifier.context;
    let whole_family = sorter.classifier.whole;
    let family = sink.family.clone();
    let candidates = sink.retained.candidates();
    let failing = ctx.exit_code.is_some_and(|c| c != 0);
    // A failing command's end says more than its start.
    let head_share = if failing { 0.2 } else { 0.3 };
    // Past the budget, a failing command's view is all the model sees of
    // it: its signals take the whole budget. Another's is a sample of what
    // the client would have persisted, with where the rest is: half.
    let overflow_share = if failing { 1.0 } else { 0.5 };
    let client_shown = splitter.client.shown(total);
    // A tenth over: the client's own marker and line ends.
    let client_fits = ctx
        .client
        .is_none_or(|c| c.head.saturating_add(c.tail) <= budget + budget / 10);
    let view_of = |full: Option<FullNote>| {
        build(&ViewInput {
            candidates: candidates.clone(),
            final_counts: &counts,
            total_lines: lines,
            labels: &labels,
            budget,
            head_share,
            context,
            client_shown: &client_shown,
            client_fits,
            overflow_share,
            quiet_gap: QUIET_GAP,
            warnings: warnings.clone(),
            full,
        })
    };
    let mut view = view_of(provisional.clone());
    let saving = input_units.saturating_sub(view.units as u64);
    let client_whole = in_memory && ctx.client.is_some_and(|c| input_units <= c.whole as u64);
    let keep_whole = client_whole && (whole_family || view.overflow);
    // Left as it is, an output the client would cut loses its end: then
    // any saving is worth it.
    let client_cuts = ctx.client.is_some_and(|c| input_units > c.whole as u64);
    let worth_it =
        !keep_whole && (!in_memory || client_cuts || (saving >= 1000 && saving * 5 >= input_units));
    let collapsed: Vec<(String, u64)> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.clone(), counts[LABELS + i]))
        .filter(|(_, n)| *n > 0)
        .collect();
    let mut stats = Stats {
        input_bytes: total,
        input_lines: lines,
        input_chars: input_units,
        view_chars: view.units as u64,
        reduced: worth_it,
        unchanged: None,
        signal_lines: view.signals,
        signal_lines_shown: view.signals_shown,
        overflow: view.overflow,
        collapsed,
        full_output: None,
    };
    if !worth_it {
        if let Some(f) = full.take() {
            f.discard();
        }
        stats.view_chars = input_units;
        stats.signal_lines_shown = stats.signal_lines;
        stats.overflow = false;
        stats.unchanged = Some(if keep_whole && whole_family {
            format!("the client shows its {input_units} characters whole, and they are what was asked for")
        } else if keep_whole {
            format!("the client shows its {input_units} characters whole, and its signal lines do not fit the budget")
        } else {
            format!(
                "reducing would save {} of {} characters: under a fifth or under 1,000",
                saving, input_units
            )
        });
        return Ok(Reduced {
            view: buffer.head().to_vec(),
            family,
            stats,
        });
    }
    if let Some(w) = whole.take() {
        match w.write(buffer.head()) {
            Ok(path) => stats.full_output = Some(absolute(&path)),
            Err(why) => {
                crate::truncate::warn(warn, "jkz reduce", &why);
                view = view_of(None);
            }
        }
    } else if let Some(mut f) = full.take() {
        let rest: Vec<_> = buffer.drain_chunks().collect();
        for chunk in rest {
            // One coming back means the writer failed: commit says why.
            let _ = f.write(chunk);
        }
        match f.commit(None) {
            Ok((path, _)) => {
                let path = absolute(&path);
                if provisional.as_ref().map(|p| &p.path) != Some(&path) {
                    view = view_of(Some(FullNote {
                        path: path.clone(),
                        bytes: total.min(KEEP_LIMIT),
                        lines,
                        reader: ctx.reader,
                    }));
                }
                stats.full_output = Some(path);
            }
            Err(why) => {
                crate::truncate::warn(warn, "jkz reduce", &why);
                view = view_of(None);
            }
        }
    } else if let Some(path) = ctx.kept_at {
        stats.full_output = Some(absolute(path));
    } else if provisional.is_some() {
        view = view_of(None);
    }
    stats.view_chars = view.units as u64;
    stats.signal_lines_shown = view.signals_shown;
    stats.overflow = view.overflow;
    Ok(Reduced {
        view: view.text,
        family,
        stats,
    })
}

fn absolute(path: &Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The naive oracle: every line's span, then those inside the head or
    /// inside the tail of what is read.
    fn naive(lengths: &[u64], cut: super::super::ClientCut) -> Vec<u64> {
        let mut spans = Vec::new();
        let mut at = 0;
        for &len in lengths {
            spans.push((at, at + len + 1));
            at += len + 1;
        }
        let end = at.min(cut.read as u64);
        let from = end.saturating_sub(cut.tail as u64);
        spans
            .iter()
            .enumerate()
            .filter(|(_, &(s, e))| e <= cut.head as u64 || (cut.tail > 0 && s >= from && e <= end))
            .map(|(i, _)| i as u64)
            .collect()
    }

    proptest! {
        #[test]
        fn the_client_lines_are_those_the_client_shows(
            lengths in proptest::collection::vec(0u64..60, 0..200),
            head in 0usize..400,
            read in 0usize..8000,
            tail in 0usize..400,
        ) {
            let cut = super::super::ClientCut { whole: 0, read, head, tail };
            let mut lines = ClientLines::new(Some(cut));
            let mut at = 0;
            for &len in &lengths {
                lines.line(at, at + len + 1);
                at += len + 1;
            }
            let shown: Vec<u64> = lines
                .shown(at)
                .iter()
                .flat_map(|r| r.clone())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            prop_assert_eq!(shown, naive(&lengths, cut));
        }
    }

    #[test]
    fn a_failing_commands_view_in_claude_code_is_as_measured() {
        // docs/clients.md, "What a failing command shows".
        for (chars, shown) in [
            (9_000, 9_012),
            (11_012, 11_024),
            (11_013, 10_039),
            (12_000, 10_039),
            (30_000, 10_040),
            (31_000, 10_040),
            (400_000, 10_040),
        ] {
            assert_eq!(
                crate::client::claude::shown::failure_shown(chars, Some(1)),
                shown,
                "{chars}"
            );
        }
    }
}
