//! Sorting lines, one at a time and in order, into items the view may show
//! and counts of what it will not: each line, without its colour codes
//! ([`super::ansi`]), is classified (a protected block's line is a signal
//! whatever the rules say; a line in a rule's `through` region is what the
//! region's first line is), then
//!
//! - a collapse line is counted under its label;
//! - a context line equal to the one before it, or a signal equal to an
//!   earlier signal, is counted as a repeated line (the first copy is an
//!   item); so is a warning whose message (without the location in front)
//!   came before (its `file:line` anchors stay, as every anchor does): each
//!   distinct warning is shown once, where it first came, and counted by
//!   kind;
//! - in a family with `templates` (logs), a signal of the shape of an
//!   earlier one that names no new quoted string or path is counted as a
//!   similar line;
//! - in a run of context lines of one shape (they differ only in numbers
//!   and ids), the first and the last are items and those between are
//!   counted as similar lines;
//! - everything else becomes an item: a signal, context within a signal's
//!   `after` lines, or context.

use std::collections::{HashMap, HashSet};

use super::ansi::clean;
use super::classifier::{Classifier, REPEATED, SIMILAR};
use super::item::{units, Item, ItemClass, Tally, LABELS};
use super::retain::Retained;
use super::shape::{digest, identifiers, kind_text, shape_into, without_location};
use super::table::{Is, SignalKind, MAX_THROUGH};

/// How many distinct signal lines are remembered to count repeats (past
/// it a repeat is shown again): bounded memory.
const SEEN_SIGNALS: usize = 1 << 16;
/// How many kinds of warnings are counted by kind (past it, as "other").
const WARNING_KINDS: usize = 64;

/// The lines a rule's `through` or `continued` claims: its rule, and how
/// many more lines it may hold.
#[derive(Clone, Copy, Debug)]
struct Region {
    rule: usize,
    left: u32,
}

/// A line of a run of similar lines, held until the run goes on (it is
/// then counted) or ends (it is then an item: the run's last line).
#[derive(Debug)]
struct Held {
    seq: u64,
    text: Vec<u8>,
    whole: bool,
    class: ItemClass,
}

#[derive(Debug)]
pub struct LineSorter {
    pub classifier: Classifier,
    pub tally: Tally,
    seq: u64,
    /// What the next non-blank line is (a rule's `next`).
    next: Option<Is>,
    /// Lines left in the last signal's `after`.
    after_left: u32,
    /// The rule that matched the line before (a rule's `run`).
    last_rule: Option<usize>,
    /// The region a `through` or `continued` rule opened.
    region: Option<Region>,
    /// Signal shapes seen (a family with `templates`), and the quoted
    /// strings and paths each has named.
    templates: HashMap<u64, HashSet<u64>>,
    template_names: usize,
    /// The line without its colour codes, when it had some.
    clean: Vec<u8>,
    prev: Vec<u8>,
    has_prev: bool,
    /// The shape of the last context item, when it had numbers or ids.
    run_shape: Option<Vec<u8>>,
    shape: Vec<u8>,
    held: Option<Held>,
    seen_signals: HashSet<u64>,
    /// Warning lines by kind (kind text → count), and the rest.
    pub warning_kinds: HashMap<String, u64>,
    pub warnings_other: u64,
}

impl LineSorter {
    pub fn new(classifier: Classifier) -> LineSorter {
        LineSorter {
            tally: Tally::new(classifier.labels.len()),
            classifier,
            seq: 0,
            next: None,
            after_left: 0,
            last_rule: None,
            region: None,
            templates: HashMap::new(),
            template_names: 0,
            clean: Vec::new(),
            prev: Vec::new(),
            has_prev: false,
            run_shape: None,
            shape: Vec::new(),
            held: None,
            seen_signals: HashSet::new(),
            warning_kinds: HashMap::new(),
            warnings_other: 0,
        }
    }

    /// Lines sorted so far.
    pub fn lines(&self) -> u64 {
        self.seq
    }

    /// What a line (without colour codes and line end) is, before
    /// grouping: a block's line, a line of an open `through` region, the
    /// rule's verdict (its `run` when the line before matched it too), or
    /// what an earlier rule's `next` says; and the rule.
    pub fn classify(&mut self, line: &[u8], in_block: bool) -> (Is, Option<usize>) {
        if in_block {
            self.last_rule = None;
            return (Is::Signal(SignalKind::Block), None);
        }
        if let Some(region) = self.region.take() {
            let rule = &self.classifier.rules[region.rule];
            let claimed = match (&rule.through, &rule.continued) {
                (Some(end), _) => Some(!end.is_match(line)),
                (None, Some(c)) => c.is_match(line).then_some(true),
                (None, None) => None,
            };
            if let Some(more) = claimed {
                let is = rule.is.clone();
                if more && region.left > 1 {
                    self.region = Some(Region {
                        left: region.left - 1,
                        ..region
                    });
                }
                self.last_rule = None;
                self.next = None;
                return (is, None);
            }
        }
        let rules = &self.classifier.rules;
        let matched = self.classifier.rule_for(line);
        let (mut is, rule) = match matched {
            Some(r) => match &rules[r].run {
                Some(run) if self.last_rule == Some(r) => (run.clone(), None),
                _ => (rules[r].is.clone(), Some(r)),
            },
            None => (Is::Context, None),
        };
        self.last_rule = matched;
        if !line.iter().all(u8::is_ascii_whitespace) {
            if let Some(next) = self.next.take() {
                if !matches!(is, Is::Signal(_)) {
                    is = next;
                }
            }
        }
        if let Some(r) = rule {
            if let Some(next) = &rules[r].next {
                self.next = Some(next.clone());
            }
            if rules[r].through.is_some() || rules[r].continued.is_some() {
                self.region = Some(Region {
                    rule: r,
                    left: MAX_THROUGH,
                });
            }
        }
        (is, rule)
    }

    /// Takes the next line (no `\n`; `whole` false when only its start is
    /// given), and whether it lies in a protected block.
    pub fn push(&mut self, raw: &[u8], whole: bool, in_block: bool, out: &mut Retained) {
        let mut buf = std::mem::take(&mut self.clean);
        let text = clean(raw, &mut buf);
        self.push_clean(text, whole, in_block, out);
        self.clean = buf;
    }

    fn push_clean(&mut self, text: &[u8], whole: bool, in_block: bool, out: &mut Retained) {
        let seq = self.seq;
        self.seq += 1;
        let bare = text;
        let (is, rule) = self.classify(bare, in_block);
        let after = rule.map_or(0, |r| self.classifier.rules[r].after);
        let in_after = self.after_left > 0;
        self.after_left = self.after_left.saturating_sub(1);
        match is {
            Is::Collapse(label) => {
                self.flush_held(out);
                self.run_shape = None;
                let slot = self
                    .classifier
                    .labels
                    .iter()
                    .position(|l| *l == label)
                    .expect("a rule's label is in the classifier's list");
                self.tally.add(LABELS + slot);
            }
            Is::Signal(kind) => {
                self.flush_held(out);
                self.run_shape = None;
                if kind == SignalKind::Warning {
                    // Counted by kind, repeats too: the summary's counts.
                    let k = kind_text(bare);
                    self.count_warning(&k);
                }
                // A warning is the same warning wherever it is: its message
                // without the location in front.
                // A line cut short is never the repeat of a whole one.
                let h = if kind == SignalKind::Warning {
                    digest(without_location(bare))
                } else {
                    digest(text)
                } ^ u64::from(!whole);
                // Only an earlier signal counts: a context line with the
                // same text may not be shown.
                let repeated = self.seen_signals.contains(&h);
                // A template is a message a rule names, not a line of a
                // region or a block (a deadlock's per-process lines).
                let similar = !repeated
                    && self.classifier.templates
                    && rule.is_some()
                    && self.is_similar(bare);
                if similar {
                    self.tally
                        .add(LABELS + label_slot(&self.classifier, SIMILAR));
                } else if repeated {
                    // A repeated warning's own `file:line` anchors stay:
                    // they say where this one is.
                    self.tally
                        .add(LABELS + label_slot(&self.classifier, REPEATED));
                } else {
                    // Only a signal shown has context worth its room.
                    self.after_left = self.after_left.max(after);
                    if self.seen_signals.len() < SEEN_SIGNALS {
                        self.seen_signals.insert(h);
                    }
                    let key = match kind {
                        // One kind each: a log's hashes and a block's lines
                        // are all alike.
                        SignalKind::Id | SignalKind::Block => {
                            digest(&[kind.index() as u8, rule.unwrap_or(0) as u8])
                        }
                        _ => {
                            let k = kind_text(bare);
                            digest(&[&[kind.index() as u8][..], k.as_bytes()].concat())
                        }
                    };
                    self.emit(seq, text, whole, ItemClass::Signal { kind, key }, out);
                    self.tally.add(kind.index());
                }
            }
            Is::Context => {
                let class = if in_after {
                    ItemClass::After
                } else {
                    ItemClass::Context
                };
                let numbered = shape_into(bare, &mut self.shape);
                if numbered && self.run_shape.as_deref() == Some(&self.shape[..]) {
                    if self.held.take().is_some() {
                        self.tally
                            .add(LABELS + label_slot(&self.classifier, SIMILAR));
                    }
                    self.held = Some(Held {
                        seq,
                        text: text.to_vec(),
                        whole,
                        class,
                    });
                } else {
                    self.flush_held(out);
                    if !numbered && self.has_prev && self.prev == text {
                        self.tally
                            .add(LABELS + label_slot(&self.classifier, REPEATED));
                        self.run_shape = None;
                    } else {
                        self.emit(seq, text, whole, class, out);
                        self.run_shape = numbered.then(|| self.shape.clone());
                    }
                }
            }
        }
        self.prev.clear();
        self.prev.extend_from_slice(text);
        self.has_prev = true;
    }

    /// The input ended: the held line of a run is its last.
    pub fn finish(&mut self, out: &mut Retained) {
        self.flush_held(out);
    }

    fn flush_held(&mut self, out: &mut Retained) {
        if let Some(h) = self.held.take() {
            self.emit(h.seq, &h.text, h.whole, h.class, out);
        }
    }

    fn emit(&mut self, seq: u64, text: &[u8], whole: bool, class: ItemClass, out: &mut Retained) {
        out.push(Item {
            seq,
            text: text.into(),
            whole,
            units: units(text),
            class,
            before: self.tally.snapshot(),
        });
    }

    /// Whether a signal has the shape of an earlier one and names no
    /// quoted string or path it did not (a log's thousandth "connect()
    /// failed" for a request already shown); remembers it when not.
    fn is_similar(&mut self, line: &[u8]) -> bool {
        shape_into(line, &mut self.shape);
        let shape = digest(&self.shape);
        let names = identifiers(line);
        let known = self.templates.get(&shape);
        if known.is_some_and(|k| names.iter().all(|n| k.contains(n))) {
            return true;
        }
        if self.template_names + names.len() <= SEEN_SIGNALS {
            self.template_names += names.len();
            self.templates.entry(shape).or_default().extend(names);
        }
        false
    }

    fn count_warning(&mut self, kind: &str) {
        if let Some(n) = self.warning_kinds.get_mut(kind) {
            *n += 1;
        } else if self.warning_kinds.len() < WARNING_KINDS {
            self.warning_kinds.insert(kind.to_string(), 1);
        } else {
            self.warnings_other += 1;
        }
    }
}

fn label_slot(classifier: &Classifier, label: &str) -> usize {
    classifier
        .labels
        .iter()
        .position(|l| l == label)
        .expect("every classifier has the repeated and similar labels")
}
