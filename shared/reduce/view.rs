//! Choosing what the view shows within its budget, and writing it.
//!
//! The view is the chosen items in input order, one gap line wherever lines
//! were left out (saying what they were and their line numbers), then the
//! notes: warnings by kind, the signals that did not fit, where the whole
//! output is. Choosing an item costs its line plus the change it makes to
//! the gap lines around it (it may split one gap in two, or close one), so
//! the cost is exact and the view never exceeds the budget.
//!
//! What is chosen, in order, while it fits:
//! 1. every signal. When they do not all fit (or some were not held: see
//!    [`super::retain`]), a note says how many are not shown, and they are
//!    chosen by rank (a protected block's lines, errors, failures, panics,
//!    exit statuses, summaries, traceback frames, identifiers, warnings):
//!    the first of each kind, then the context after the chosen errors,
//!    failures and panics, then the others rank by rank from both ends
//!    towards the middle. A `file:line` anchor goes with the message before
//!    it;
//! 2. the context in the `after` lines of each chosen signal;
//! 3. other context: from the head up to its share, then from the tail,
//!    then from the head again.
//!
//! Context (2 and 3) stops at the family's `context` characters, when it
//! has one: in a test run or a build the context is mostly noise; in a diff
//! or a listing it is what was asked for.
//!
//! A gap of a few context lines between two shown lines is not marked where
//! it is; one note counts them all (a hash and its subject, with the author
//! and date between them, read better without a line saying so).

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::rc::Rc;

use super::classifier::REPEATED;
use super::item::{units, Item, ItemClass, LABELS};
use super::notes::{
    full_output_line, full_output_line_short, gap_line, overflow_line, quiet_gaps_line,
    GAP_LINE_MAX, QUIET_GAP,
};
use super::table::SignalKind;

/// What the view is built from.
#[derive(Debug)]
pub struct ViewInput<'a> {
    pub candidates: BTreeMap<u64, Rc<Item>>,
    /// The tally at the end of the input.
    pub final_counts: &'a [u64],
    pub total_lines: u64,
    /// Collapse labels, by tally slot (after the signal kinds).
    pub labels: &'a [String],
    pub budget: usize,
    /// The head's share of the context's room (the tail has the rest).
    pub head_share: f64,
    /// The most characters of context shown (`None`: what the budget leaves).
    pub context: Option<usize>,
    /// The warnings by kind, when they say something.
    pub warnings: Option<String>,
    pub full: Option<FullNote>,
}

/// The whole output, kept.
#[derive(Clone, Debug)]
pub struct FullNote {
    pub path: PathBuf,
    pub bytes: u64,
    pub lines: u64,
}

#[derive(Debug)]
pub struct View {
    pub text: Vec<u8>,
    pub units: usize,
    pub signals: u64,
    pub signals_shown: u64,
    /// Whether the signals did not all fit.
    pub overflow: bool,
}

/// The items chosen so far and what showing them (and the gap lines between
/// them) costs.
struct Choice<'v, 'a> {
    input: &'v ViewInput<'a>,
    chosen: BTreeMap<u64, Rc<Item>>,
    cost: usize,
    limit: usize,
    /// The context lines chosen, by their own cost, against the family's
    /// `context`.
    context: usize,
}

impl<'v, 'a> Choice<'v, 'a> {
    fn new(input: &'v ViewInput<'a>, limit: usize) -> Self {
        let cost = gap_cost(input, None, None);
        Choice {
            input,
            chosen: BTreeMap::new(),
            cost,
            limit,
            context: 0,
        }
    }

    /// Chooses `item` if it fits; true when it is (or already was) chosen.
    fn add(&mut self, item: &Rc<Item>) -> bool {
        if self.chosen.contains_key(&item.seq) {
            return true;
        }
        if !item.whole || item.cost() > self.limit {
            return false;
        }
        let context = if item.is_signal() { 0 } else { item.cost() };
        if self.context + context > self.input.context.unwrap_or(usize::MAX) {
            return false;
        }
        let prev = self.chosen.range(..item.seq).next_back().map(|(_, i)| &**i);
        let next = self.chosen.range(item.seq + 1..).next().map(|(_, i)| &**i);
        let added = item.cost()
            + gap_cost(self.input, prev, Some(item))
            + gap_cost(self.input, Some(item), next);
        let removed = gap_cost(self.input, prev, next);
        let cost = self.cost + added - removed;
        if cost > self.limit {
            return false;
        }
        self.cost = cost;
        self.context += context;
        self.chosen.insert(item.seq, Rc::clone(item));
        true
    }

    fn room(&self) -> usize {
        self.limit.saturating_sub(self.cost)
    }
}

/// What a gap line between `a` and `b` costs (`None`: the start or the end
/// of the input); 0 when no line lies between them.
fn gap_cost(input: &ViewInput, a: Option<&Item>, b: Option<&Item>) -> usize {
    gap_text(input, a, b).map_or(0, |t| units(t.as_bytes()) + 1)
}

fn gap_text(input: &ViewInput, a: Option<&Item>, b: Option<&Item>) -> Option<String> {
    match gap(input, a, b) {
        Gap::Marked(text) => Some(text),
        Gap::None | Gap::Quiet(..) => None,
    }
}

/// What lies between two shown lines.
enum Gap {
    None,
    /// A few context lines, counted in the closing note (or marked after
    /// all, when that is shorter): how many, and the line that marks them.
    Quiet(u64, String),
    Marked(String),
}

fn gap(input: &ViewInput, a: Option<&Item>, b: Option<&Item>) -> Gap {
    let first = a.map_or(0, |a| a.seq + 1);
    let end = b.map_or(input.total_lines, |b| b.seq);
    if first >= end {
        return Gap::None;
    }
    let to: &[u64] = b.map_or(input.final_counts, |b| &b.before);
    let from = |slot: usize| -> u64 {
        a.map_or(0, |a| {
            a.before[slot] + u64::from(a.own_slot() == Some(slot))
        })
    };
    let signals: Vec<(SignalKind, u64)> = SignalKind::ALL
        .iter()
        .map(|&k| (k, to[k.index()] - from(k.index())))
        .collect();
    let collapsed: Vec<(&str, u64)> = input
        .labels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.as_str(), to[LABELS + i] - from(LABELS + i)))
        .collect();
    // Lines equal to the one before them say nothing either (a second
    // blank line).
    let nothing_named = signals.iter().all(|(_, n)| *n == 0)
        && collapsed
            .iter()
            .all(|(label, n)| *n == 0 || *label == REPEATED);
    // Only between shown lines: the view's start and end are always marked.
    let text = gap_line(first, end, &signals, &collapsed);
    if nothing_named && end - first <= QUIET_GAP && a.is_some() && b.is_some() {
        return Gap::Quiet(end - first, text);
    }
    Gap::Marked(text)
}

/// Chooses and writes the view.
pub fn build(input: &ViewInput) -> View {
    let signals: Vec<&Rc<Item>> = input
        .candidates
        .values()
        .filter(|i| i.is_signal())
        .collect();
    let total_signals: u64 = input.final_counts[..LABELS].iter().sum();
    let all_held = signals.len() as u64 == total_signals;
    let full_line = input.full.as_ref().map(|f| {
        let long = full_output_line(&f.path, f.bytes, f.lines);
        let worst = units(long.as_bytes())
            + 1
            + GAP_LINE_MAX
            + 1
            + overflow_max(total_signals, input)
            + quiet_gaps_line(input.total_lines, input.total_lines).len()
            + 1;
        if worst <= input.budget {
            long
        } else {
            full_output_line_short(&f.path)
        }
    });
    let notes_cost = full_line.as_ref().map_or(0, |l| units(l.as_bytes()) + 1)
        + quiet_gaps_line(input.total_lines, input.total_lines).len()
        + 1;
    // The warnings by kind are what groups them when they do not all fit:
    // kept whenever the budget can spare their line.
    let warnings_cost = input
        .warnings
        .as_ref()
        .map_or(0, |w| units(w.as_bytes()) + 1);
    let reserve_warnings =
        notes_cost + warnings_cost + GAP_LINE_MAX + 1 + overflow_max(total_signals, input)
            <= input.budget;
    let notes_cost = notes_cost + if reserve_warnings { warnings_cost } else { 0 };
    let limit = input.budget.saturating_sub(notes_cost);

    let mut overflow = !all_held;
    let mut choice = Choice::new(input, limit);
    if all_held {
        overflow = !signals.iter().all(|s| choice.add(s));
    }
    if overflow {
        choice = Choice::new(
            input,
            limit.saturating_sub(overflow_max(total_signals, input)),
        );
        fill_signals(&mut choice, &signals);
    }

    // The context that belongs to the chosen signals.
    add_after(&mut choice, |_| true);

    // Other context: head, tail, head.
    let context: Vec<&Rc<Item>> = input
        .candidates
        .values()
        .filter(|i| !i.is_signal() && !choice.chosen.contains_key(&i.seq))
        .collect();
    let context_left = input
        .context
        .map_or(usize::MAX, |c| c.saturating_sub(choice.context));
    let head_room = (choice.room().min(context_left) as f64 * input.head_share) as usize;
    let start = choice.cost;
    let (mut lo, mut hi) = (0, context.len());
    while lo < hi && choice.cost.saturating_sub(start) < head_room && choice.add(context[lo]) {
        lo += 1;
    }
    while lo < hi && choice.add(context[hi - 1]) {
        hi -= 1;
    }
    while lo < hi && choice.add(context[lo]) {
        lo += 1;
    }

    let signals_shown = choice.chosen.values().filter(|i| i.is_signal()).count() as u64;
    let mut notes = Vec::new();
    if let Some(w) = &input.warnings {
        if reserve_warnings || units(w.as_bytes()) < choice.room() {
            notes.push(w.clone());
        }
    }
    if overflow {
        notes.push(overflow_line(
            total_signals - signals_shown,
            total_signals,
            input.budget,
            input.full.is_some(),
        ));
    }
    notes.extend(full_line);
    // The quiet gaps: one note, or their own lines when those are shorter
    // (a single blank line left out).
    let (quiet_lines, quiet_gaps, quiet_marked) = quiet(input, &choice.chosen);
    let note = quiet_gaps_line(quiet_lines, quiet_gaps);
    let mark_quiet = quiet_marked <= note.len() + 1;
    if quiet_gaps > 0 && !mark_quiet {
        notes.insert(0, note);
    }
    let text = render(input, &choice.chosen, &notes, mark_quiet);
    let units = units(&text);
    View {
        text,
        units,
        signals: total_signals,
        signals_shown,
        overflow,
    }
}

/// Which signals go first when not all of them fit: a protected block, then
/// what failed, then what it printed on its way out, then the rest.
fn rank(kind: SignalKind) -> u8 {
    match kind {
        SignalKind::Block => 0,
        SignalKind::Error => 1,
        SignalKind::Failure => 2,
        SignalKind::Panic => 3,
        SignalKind::Exit => 4,
        SignalKind::Summary => 5,
        SignalKind::Traceback => 6,
        SignalKind::Id => 7,
        SignalKind::Warning => 8,
        SignalKind::Anchor => 9,
    }
}

fn kind_and_key(item: &Item) -> (SignalKind, u64) {
    match item.class {
        ItemClass::Signal { kind, key } => (kind, key),
        _ => unreachable!("only signals are ranked"),
    }
}

/// A signal and the `file:line` anchors that follow it, shown together: an
/// anchor without its message says nothing.
struct Unit<'i> {
    lead: &'i Rc<Item>,
    anchors: Vec<&'i Rc<Item>>,
}

impl Unit<'_> {
    fn add(&self, choice: &mut Choice) -> bool {
        if !choice.add(self.lead) {
            return false;
        }
        for a in &self.anchors {
            if !choice.add(a) {
                break;
            }
        }
        true
    }
}

/// The signals do not all fit: the first of each kind, highest rank first;
/// then the context after the chosen errors, failures and panics; then the
/// others, rank by rank, from both ends towards the middle.
fn fill_signals(choice: &mut Choice, signals: &[&Rc<Item>]) {
    let mut units: Vec<Unit> = Vec::new();
    for s in signals {
        let is_anchor = kind_and_key(s).0 == SignalKind::Anchor;
        match units.last_mut() {
            Some(u) if is_anchor && kind_and_key(u.lead).0 != SignalKind::Anchor => {
                u.anchors.push(s)
            }
            _ => units.push(Unit {
                lead: s,
                anchors: Vec::new(),
            }),
        }
    }
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&i| (rank(kind_and_key(units[i].lead).0), units[i].lead.seq));
    let mut keys = HashSet::new();
    let mut rest: BTreeMap<u8, Vec<usize>> = BTreeMap::new();
    for i in order {
        let (kind, key) = kind_and_key(units[i].lead);
        if keys.insert(key) {
            units[i].add(choice);
        } else {
            rest.entry(rank(kind)).or_default().push(i);
        }
    }
    add_after(choice, |kind| rank(kind) <= rank(SignalKind::Panic));
    for list in rest.values() {
        let (mut lo, mut hi) = (0, list.len());
        let (mut lo_open, mut hi_open) = (true, true);
        while lo < hi && (lo_open || hi_open) {
            if hi_open {
                if units[list[hi - 1]].add(choice) {
                    hi -= 1;
                } else {
                    hi_open = false;
                }
            }
            if lo < hi && lo_open {
                if units[list[lo]].add(choice) {
                    lo += 1;
                } else {
                    lo_open = false;
                }
            }
        }
    }
}

/// Adds the `after` context of the chosen signals of the kinds `which`
/// picks, each signal's in order, while it fits.
fn add_after(choice: &mut Choice, which: impl Fn(SignalKind) -> bool) {
    let chosen: Vec<u64> = choice
        .chosen
        .values()
        .filter(|i| matches!(i.class, ItemClass::Signal { kind, .. } if which(kind)))
        .map(|i| i.seq)
        .collect();
    let candidates = &choice.input.candidates;
    for seq in chosen {
        for item in candidates.range(seq + 1..).map(|(_, i)| i) {
            match item.class {
                ItemClass::After => {
                    if !choice.add(item) {
                        break;
                    }
                }
                ItemClass::Signal { .. } => {}
                ItemClass::Context => break,
            }
        }
    }
}

/// The most the overflow note can cost for this input.
fn overflow_max(total: u64, input: &ViewInput) -> usize {
    overflow_line(total, total, input.budget, input.full.is_some()).len() + 1
}

/// The quiet gaps between the chosen items: (lines, gaps, what marking
/// each where it is would cost).
fn quiet(input: &ViewInput, chosen: &BTreeMap<u64, Rc<Item>>) -> (u64, u64, usize) {
    let items: Vec<&Item> = chosen.values().map(|i| &**i).collect();
    items.windows(2).fold((0, 0, 0), |(lines, gaps, cost), w| {
        match gap(input, Some(w[0]), Some(w[1])) {
            Gap::Quiet(n, text) => (lines + n, gaps + 1, cost + text.len() + 1),
            _ => (lines, gaps, cost),
        }
    })
}

fn render(
    input: &ViewInput,
    chosen: &BTreeMap<u64, Rc<Item>>,
    notes: &[String],
    mark_quiet: bool,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut prev: Option<&Item> = None;
    let gap_line = |out: &mut Vec<u8>, a: Option<&Item>, b: Option<&Item>| {
        let text = match gap(input, a, b) {
            Gap::Marked(text) => text,
            Gap::Quiet(_, text) if mark_quiet => text,
            Gap::Quiet(..) | Gap::None => return,
        };
        out.extend_from_slice(text.as_bytes());
        out.push(b'\n');
    };
    for item in chosen.values() {
        gap_line(&mut out, prev, Some(item));
        out.extend_from_slice(&item.text);
        out.push(b'\n');
        prev = Some(item);
    }
    gap_line(&mut out, prev, None);
    for note in notes {
        out.extend_from_slice(note.as_bytes());
        out.push(b'\n');
    }
    out
}
