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
//!    the first of each kind (up to a third of the room), then the context
//!    after the chosen errors, failures and panics, then the first signals
//!    in order (up to two thirds of what is left: what the client itself
//!    would have shown of a failing command is its head), then the last
//!    ones, then the first ones again. A `file:line` anchor goes with the
//!    message before it;
//! 2. the context in the `after` lines of each chosen signal;
//! 3. other context: from the head up to its share, then from the tail,
//!    then from the head again.
//!
//! Context (2 and 3) is a small extra, never what fills the budget: it
//! stops at the family's `context` characters (a default of
//! [`super::table::DEFAULT_CONTEXT`]). The budget is a ceiling for the
//! signals.
//!
//! A gap of a few context lines between two shown lines is not marked where
//! it is; one note counts them all (a hash and its subject, with the author
//! and date between them, read better without a line saying so).

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::rc::Rc;

use super::item::{units, Item, ItemClass, LABELS};
use super::notes::{
    full_output_line, full_output_line_short, gap_line, overflow_line, quiet_gaps_line, quiet_rest,
    GAP_LINE_MAX,
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
    /// The head's share of the context, and as much is kept for the tail
    /// (the lines after the signals have the rest).
    pub head_share: f64,
    /// The most characters of context shown.
    pub context: usize,
    /// The lines (by number) the client itself would show of the output
    /// (none: it shows it whole): when the signals do not fit, those among
    /// them come first, so the view never shows fewer.
    pub client_shown: &'a [std::ops::Range<u64>],
    /// Whether what the client shows of the output fits the budget: then
    /// its signal lines all come first; else (a client that shows more than
    /// jkz's budget) they take at most half the room, and the first of
    /// each kind elsewhere still gets in.
    pub client_fits: bool,
    /// The share of the budget the signals may take when they do not all
    /// fit.
    pub overflow_share: f64,
    /// Gaps of at most this many lines, none a signal, are counted in one
    /// note instead of marked where they are ([`super::notes::QUIET_GAP`]; when the
    /// signals do not fit with their gaps marked, any such gap is).
    pub quiet_gap: u64,
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
    pub reader: super::Reader,
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
    /// `context`, and how much of it the current step may fill.
    context: usize,
    context_limit: usize,
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
            context_limit: input.context,
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
        if self.context + context > self.context_limit.min(self.input.context) {
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
    /// A few lines, none of them a signal, counted in the closing note (or
    /// marked after all, when that is shorter): how many, the lines
    /// collapsed by label, and the line that marks them.
    Quiet(u64, Vec<u64>),
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
    let between = |slot: usize| to[slot] - from(slot);
    // Only between shown lines, and never over a signal not shown: the
    // view's start and end, and every signal left out, are marked where
    // they are.
    let no_signal = (0..LABELS).all(|slot| between(slot) == 0);
    if no_signal && end - first <= input.quiet_gap && a.is_some() && b.is_some() {
        let by_label = (0..input.labels.len())
            .map(|i| between(LABELS + i))
            .collect();
        return Gap::Quiet(end - first, by_label);
    }
    Gap::Marked(marked(input, first, end, between))
}

/// The line that marks the gap of lines `first..end`, given how many of
/// each tally slot lie in it.
fn marked(input: &ViewInput, first: u64, end: u64, between: impl Fn(usize) -> u64) -> String {
    let signals: Vec<(SignalKind, u64)> = SignalKind::ALL
        .iter()
        .map(|&k| (k, between(k.index())))
        .collect();
    let collapsed: Vec<(&str, u64)> = input
        .labels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.as_str(), between(LABELS + i)))
        .collect();
    gap_line(first, end, &signals, &collapsed)
}

/// The line that would mark a quiet gap where it is.
fn quiet_text(input: &ViewInput, a: &Item, b: &Item, by_label: &[u64]) -> String {
    let first = a.seq + 1;
    marked(input, first, b.seq, |slot| {
        slot.checked_sub(LABELS).map_or(0, |i| by_label[i])
    })
}

/// Chooses and writes the view. When the signals do not fit with every
/// long gap between them marked where it is, they may fit with the gaps
/// counted in one note: line numbers are worth less than signals.
pub fn build(input: &ViewInput) -> View {
    let view = build_once(input);
    if !view.overflow || input.quiet_gap == u64::MAX {
        return view;
    }
    let quieter = ViewInput {
        candidates: input.candidates.clone(),
        warnings: input.warnings.clone(),
        full: input.full.clone(),
        quiet_gap: u64::MAX,
        ..*input
    };
    let all = build_once(&quieter);
    if all.overflow {
        view
    } else {
        all
    }
}

fn build_once(input: &ViewInput) -> View {
    let signals: Vec<&Rc<Item>> = input
        .candidates
        .values()
        .filter(|i| i.is_signal())
        .collect();
    let total_signals: u64 = input.final_counts[..LABELS].iter().sum();
    let all_held = signals.len() as u64 == total_signals;
    let full_line = input.full.as_ref().map(|f| {
        let long = full_output_line(&f.path, f.bytes, f.lines, f.reader);
        let worst = units(long.as_bytes())
            + 1
            + GAP_LINE_MAX
            + 1
            + overflow_max(total_signals, input)
            + quiet_note_max(input)
            + 1;
        if worst <= input.budget {
            long
        } else {
            full_output_line_short(&f.path)
        }
    });
    let notes_cost =
        full_line.as_ref().map_or(0, |l| units(l.as_bytes()) + 1) + quiet_note_max(input) + 1;
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
        let room = limit.saturating_sub(overflow_max(total_signals, input));
        let share = (input.budget as f64 * input.overflow_share) as usize;
        choice = Choice::new(input, room);
        fill_signals(&mut choice, &signals, share);
    }

    // When the signals fit: the output's first lines (up to `head_share`
    // of the context), the lines after the signals (leaving as much for
    // the end), its last lines, and its first again. When they do not, the
    // room is theirs.
    if !overflow {
        let cap = input.context;
        let ends = (cap as f64 * input.head_share) as usize;
        choice.context_limit = ends;
        add_head(&mut choice);
        choice.context_limit = cap.saturating_sub(ends);
        add_after(&mut choice, |_| true);
        choice.context_limit = cap;
        add_tail(&mut choice);
        add_head(&mut choice);
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
    let (quiet_lines, quiet_gaps, quiet_labels, quiet_marked) = quiet(input, &choice.chosen);
    let named: Vec<(&str, u64)> = input
        .labels
        .iter()
        .map(String::as_str)
        .zip(quiet_labels)
        .collect();
    let note = quiet_gaps_line(quiet_lines, quiet_gaps, &named);
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

/// The signals do not all fit. First those the client itself would have
/// shown (its head), so the view never shows fewer; then, up to `share`
/// characters in all, the first of each kind, highest rank first (up to a
/// third of the room); the context after the chosen errors, failures and
/// panics; the first signals in order (up to two thirds of what is left),
/// the last ones, and the first ones again.
fn fill_signals(choice: &mut Choice, signals: &[&Rc<Item>], share: usize) {
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
    let shown = choice.input.client_shown;
    let client_end = if choice.input.client_fits {
        choice.limit
    } else {
        choice.cost
            + share
                .max(choice.cost)
                .min(choice.limit)
                .saturating_sub(choice.cost)
                / 2
    };
    for u in &units {
        if shown.iter().any(|r| r.contains(&u.lead.seq))
            && (choice.cost >= client_end || !u.add(choice))
        {
            break;
        }
    }
    let mut lo = 0;
    while lo < units.len() && choice.chosen.contains_key(&units[lo].lead.seq) {
        lo += 1;
    }
    let share_end = share.max(choice.cost).min(choice.limit);
    let room = |choice: &Choice| share_end.saturating_sub(choice.cost);
    let mut order: Vec<usize> = (lo..units.len()).collect();
    order.sort_by_key(|&i| (rank(kind_and_key(units[i].lead).0), units[i].lead.seq));
    let firsts_end = choice.cost + room(choice) / 3;
    let mut keys: HashSet<u64> = units
        .iter()
        .filter(|u| choice.chosen.contains_key(&u.lead.seq))
        .map(|u| kind_and_key(u.lead).1)
        .collect();
    for i in order {
        let (_, key) = kind_and_key(units[i].lead);
        if keys.insert(key) && choice.cost < firsts_end {
            units[i].add(choice);
        }
    }
    add_after(choice, |kind| rank(kind) <= rank(SignalKind::Panic));
    let head_end = choice.cost + room(choice) * 2 / 3;
    while lo < units.len() && choice.cost < head_end && units[lo].add(choice) {
        lo += 1;
    }
    let mut hi = units.len();
    while hi > lo && choice.cost < share_end && units[hi - 1].add(choice) {
        hi -= 1;
    }
    while lo < hi && choice.cost < share_end && units[lo].add(choice) {
        lo += 1;
    }
}

/// Adds the `after` context of the chosen signals of the kinds `which`
/// picks, by rank then in order, each signal's lines in order, while it
/// fits.
fn add_after(choice: &mut Choice, which: impl Fn(SignalKind) -> bool) {
    // An error's lines first: what follows a failure says more than what
    // follows a summary.
    let mut chosen: Vec<(u8, u64)> = choice
        .chosen
        .values()
        .filter_map(|i| match i.class {
            ItemClass::Signal { kind, .. } if which(kind) => Some((rank(kind), i.seq)),
            _ => None,
        })
        .collect();
    chosen.sort_unstable();
    let chosen: Vec<u64> = chosen.into_iter().map(|(_, seq)| seq).collect();
    let candidates = &choice.input.candidates;
    for seq in chosen {
        for item in candidates.range(seq + 1..).map(|(_, i)| i) {
            match item.class {
                ItemClass::After => {
                    if !choice.add(item) {
                        break;
                    }
                }
                // Past a signal the view does not show, the lines after
                // it are its own, not ours.
                ItemClass::Signal { .. } if choice.chosen.contains_key(&item.seq) => {}
                ItemClass::Signal { .. } | ItemClass::Context => break,
            }
        }
    }
}

/// The most the overflow note can cost for this input.
fn overflow_max(total: u64, input: &ViewInput) -> usize {
    overflow_line(total, total, input.budget, input.full.is_some()).len() + 1
}

/// The quiet gaps between the chosen items: (lines, gaps, lines collapsed
/// by label, what marking each where it is would cost).
fn quiet(input: &ViewInput, chosen: &BTreeMap<u64, Rc<Item>>) -> (u64, u64, Vec<u64>, usize) {
    let items: Vec<&Item> = chosen.values().map(|i| &**i).collect();
    let mut by_label = vec![0; input.labels.len()];
    let (mut lines, mut gaps, mut cost) = (0, 0, 0);
    for w in items.windows(2) {
        if let Gap::Quiet(n, labels) = gap(input, Some(w[0]), Some(w[1])) {
            lines += n;
            gaps += 1;
            cost += units(quiet_text(input, w[0], w[1], &labels).as_bytes()) + 1;
            for (total, n) in by_label.iter_mut().zip(labels) {
                *total += n;
            }
        }
    }
    (lines, gaps, by_label, cost)
}

/// The longest the quiet gaps' note can be for this input: every count at
/// its widest, the longest labels named.
fn quiet_note_max(input: &ViewInput) -> usize {
    let mut labels: Vec<&str> = input.labels.iter().map(String::as_str).collect();
    labels.sort_by_key(|l| std::cmp::Reverse(l.len()));
    let widest: Vec<(&str, u64)> = labels.into_iter().map(|l| (l, input.total_lines)).collect();
    // The counts named there leave no other lines; a real note may have
    // them too.
    units(quiet_gaps_line(input.total_lines, input.total_lines, &widest).as_bytes())
        + units(quiet_rest(input.total_lines).as_bytes())
}

/// Context lines not chosen yet, in order.
fn unchosen_context<'v>(choice: &Choice<'v, '_>) -> Vec<&'v Rc<Item>> {
    choice
        .input
        .candidates
        .values()
        .filter(|i| !i.is_signal() && !choice.chosen.contains_key(&i.seq))
        .collect()
}

/// Context from the output's first lines, while it fits.
fn add_head(choice: &mut Choice) {
    for item in unchosen_context(choice) {
        if !choice.add(item) {
            break;
        }
    }
}

/// Context from the output's last lines, while it fits.
fn add_tail(choice: &mut Choice) {
    for item in unchosen_context(choice).into_iter().rev() {
        if !choice.add(item) {
            break;
        }
    }
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
            Gap::Quiet(_, labels) if mark_quiet => quiet_text(
                input,
                a.expect("between two items"),
                b.expect("between two items"),
                &labels,
            ),
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
