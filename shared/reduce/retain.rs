//! What is held of a stream's items while it runs, in memory bounded by the
//! budget whatever the input's size: every item the view could still choose.
//!
//! - the head: the first items, up to a budget of them;
//! - after that, for signals: the first of each kind (pinned, up to a
//!   budget) and the latest ones (a deque of a budget, oldest evicted);
//! - the latest `after` context (half a budget);
//! - the tail: the latest items of any class (a budget).
//!
//! The view never shows more than a budget, so a signal evicted here could
//! only have been shown if the signals that came after it were not: when
//! the signals all fit, all are held (the head holds the first budget's
//! worth, the deque the rest). An item may be held in several places; it is
//! stored once ([`Rc`]).

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::rc::Rc;

use super::item::{Item, ItemClass};

#[derive(Debug)]
pub struct Retained {
    budget: usize,
    head: Vec<Rc<Item>>,
    head_cost: usize,
    head_full: bool,
    firsts: Vec<Rc<Item>>,
    firsts_cost: usize,
    /// Kinds whose first signal is held (in the head or `firsts`).
    first_keys: HashSet<u64>,
    recent: Deque,
    after: Deque,
    tail: Deque,
}

/// Items, oldest first, holding at most `limit` of cost.
#[derive(Debug)]
struct Deque {
    items: VecDeque<Rc<Item>>,
    cost: usize,
    limit: usize,
}

impl Deque {
    fn new(limit: usize) -> Deque {
        Deque {
            items: VecDeque::new(),
            cost: 0,
            limit,
        }
    }

    fn push(&mut self, item: &Rc<Item>) {
        self.cost += item.cost();
        self.items.push_back(Rc::clone(item));
        while self.cost > self.limit {
            let old = self.items.pop_front().expect("cost > 0 means an item");
            self.cost -= old.cost();
        }
    }
}

impl Retained {
    pub fn new(budget: usize) -> Retained {
        Retained {
            budget,
            head: Vec::new(),
            head_cost: 0,
            head_full: false,
            firsts: Vec::new(),
            firsts_cost: 0,
            first_keys: HashSet::new(),
            recent: Deque::new(budget),
            after: Deque::new(budget / 2),
            tail: Deque::new(budget),
        }
    }

    pub fn push(&mut self, item: Item) {
        let key = match item.class {
            ItemClass::Signal { key, .. } => Some(key),
            _ => None,
        };
        if !self.head_full {
            if self.head_cost + item.cost() <= self.budget {
                self.head_cost += item.cost();
                if let Some(key) = key {
                    self.first_keys.insert(key);
                }
                self.head.push(Rc::new(item));
                return;
            }
            self.head_full = true;
        }
        let item = Rc::new(item);
        self.tail.push(&item);
        match item.class {
            ItemClass::Signal { key, .. } => {
                let pin = !self.first_keys.contains(&key)
                    && self.firsts_cost + item.cost() <= self.budget;
                if pin {
                    self.first_keys.insert(key);
                    self.firsts_cost += item.cost();
                    self.firsts.push(item);
                } else {
                    self.recent.push(&item);
                }
            }
            ItemClass::After => self.after.push(&item),
            ItemClass::Context => {}
        }
    }

    /// Every item held, once each, by line number.
    pub fn candidates(&self) -> BTreeMap<u64, Rc<Item>> {
        let mut all = BTreeMap::new();
        let zones = self
            .head
            .iter()
            .chain(&self.firsts)
            .chain(&self.recent.items)
            .chain(&self.after.items)
            .chain(&self.tail.items);
        for item in zones {
            all.entry(item.seq).or_insert_with(|| Rc::clone(item));
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reduce::table::SignalKind;

    fn item(seq: u64, len: usize, class: ItemClass) -> Item {
        Item {
            seq,
            text: vec![b'x'; len].into(),
            whole: true,
            units: len,
            class,
            before: Rc::from(&[][..]),
        }
    }

    fn signal(key: u64) -> ItemClass {
        ItemClass::Signal {
            kind: SignalKind::Error,
            key,
        }
    }

    #[test]
    fn signals_that_fit_a_budget_are_all_held_whatever_the_context_around_them() {
        let mut r = Retained::new(100);
        let mut signals = Vec::new();
        for seq in 0..10_000u64 {
            let class = if seq % 1000 == 7 {
                signal(seq % 3)
            } else {
                ItemClass::Context
            };
            if matches!(class, ItemClass::Signal { .. }) {
                signals.push(seq);
            }
            r.push(item(seq, 9, class));
        }
        let held = r.candidates();
        for s in signals {
            assert!(held.contains_key(&s), "signal {s}");
        }
        assert!(held.len() < 60, "bounded: {}", held.len());
        assert!(held.contains_key(&9_999), "the tail");
        assert!(held.contains_key(&0), "the head");
    }

    #[test]
    fn past_the_budget_the_first_of_each_kind_and_the_latest_signals_are_held() {
        let mut r = Retained::new(100);
        for seq in 0..1000u64 {
            let key = if seq == 500 { 99 } else { 1 };
            r.push(item(seq, 9, signal(key)));
        }
        let held = r.candidates();
        assert!(held.contains_key(&500), "first of its kind");
        assert!(held.contains_key(&999) && held.contains_key(&0));
        assert!(!held.contains_key(&300));
    }
}
