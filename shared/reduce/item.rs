//! A line that may be shown, and the running tally of what was not.
//!
//! Each item carries the tally as it stood before its line, so what lies
//! between any two items (how many passing tests collapsed, how many error
//! lines not shown) is the difference of their tallies: the view can say
//! it for whichever items it ends up keeping, and nothing else needs to be
//! remembered about the lines that were not kept.

use std::rc::Rc;

use super::table::SignalKind;

/// What an item is to the view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemClass {
    /// Never dropped while the signals fit; `key` is its kind of message
    /// (the first of each is kept when they do not).
    Signal {
        kind: SignalKind,
        key: u64,
    },
    /// Context within a signal's `after` lines: kept before other context.
    After,
    Context,
}

#[derive(Debug)]
pub struct Item {
    /// The line's number in the input, from 0.
    pub seq: u64,
    /// The line without its `\n`, as it came (cut when it was longer than
    /// what is kept of a line; then `whole` is false).
    pub text: Box<[u8]>,
    pub whole: bool,
    /// Its length as the client counts it.
    pub units: usize,
    pub class: ItemClass,
    /// The tally before this line (see [`Tally`]).
    pub before: Rc<[u64]>,
}

impl Item {
    /// What showing it costs: the line and its newline.
    pub fn cost(&self) -> usize {
        self.units + 1
    }

    pub fn is_signal(&self) -> bool {
        matches!(self.class, ItemClass::Signal { .. })
    }

    /// The tally slot its own line adds to (a signal counts itself).
    pub fn own_slot(&self) -> Option<usize> {
        match self.class {
            ItemClass::Signal { kind, .. } => Some(kind.index()),
            _ => None,
        }
    }
}

/// Counts so far: one slot per signal kind (signal lines that became
/// items), then one per collapse label (lines collapsed). Context lines
/// are not counted: a gap's other lines are what its line numbers leave.
#[derive(Debug)]
pub struct Tally {
    counts: Vec<u64>,
    /// The last snapshot handed out, while the counts are unchanged: runs
    /// of context lines share one.
    snapshot: Option<Rc<[u64]>>,
}

/// Where the labels start in a tally.
pub const LABELS: usize = SignalKind::ALL.len();

impl Tally {
    pub fn new(labels: usize) -> Tally {
        Tally {
            counts: vec![0; LABELS + labels],
            snapshot: None,
        }
    }

    pub fn add(&mut self, slot: usize) {
        self.counts[slot] += 1;
        self.snapshot = None;
    }

    pub fn snapshot(&mut self) -> Rc<[u64]> {
        self.snapshot
            .get_or_insert_with(|| Rc::from(self.counts.as_slice()))
            .clone()
    }

    pub fn counts(&self) -> &[u64] {
        &self.counts
    }
}

/// Client characters of a line as the client will see it (invalid UTF-8
/// becomes U+FFFD, one each).
pub fn units(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(s) => crate::client_text::client_len(s),
        Err(_) => crate::client_text::client_len(&String::from_utf8_lossy(bytes)),
    }
}
