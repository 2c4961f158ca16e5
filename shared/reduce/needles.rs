//! The first of a family's rules a line matches, compiling a rule only
//! when a line holds one of its needles: strings one of which every line
//! the rule matches contains, read from the built-in patterns when the
//! table is compiled (`build.rs`). An output meets a tenth of a family's
//! rules or so; compiling all of them, even as one automaton, was most of a
//! `jkz reduce` call's time, and trying all of them on every line most of
//! the rest. A rule without needles (a project's own, or one that can match
//! without a literal) is compiled at once and tried on every line.

use std::cell::{Cell, OnceCell, RefCell};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex::bytes::Regex;

use super::classifier::build_one;

#[derive(Debug)]
pub struct NeedleMatcher {
    patterns: Vec<String>,
    compiled: Vec<OnceCell<Option<Regex>>>,
    /// The rules tried on every line, in order.
    always: Vec<usize>,
    /// Every rule's needles, and the rule each belongs to.
    needles: RefCell<Option<AhoCorasick>>,
    needle_list: Vec<String>,
    owner: Vec<usize>,
    candidates: RefCell<Vec<usize>>,
    /// Lines looked at: past [`LONG`], the needles are searched by a DFA,
    /// slower to build and faster to run.
    lines: Cell<u64>,
}

/// Lines after which a long output pays for a faster needle search.
const LONG: u64 = 5_000;

fn searcher(needles: &[&str], kind: AhoCorasickKind) -> AhoCorasick {
    AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .kind(Some(kind))
        .build(needles)
        .expect("a few hundred short needles build")
}

impl NeedleMatcher {
    /// `rules`: each rule's pattern and needles. A rule without needles is
    /// compiled here: the error is its index's and the `regex` crate's.
    pub fn new<'r>(
        rules: impl Iterator<Item = (&'r str, Option<&'r [String]>)>,
    ) -> Result<NeedleMatcher, (usize, regex::Error)> {
        let mut patterns = Vec::new();
        let mut always = Vec::new();
        let mut needles: Vec<&str> = Vec::new();
        let mut owner = Vec::new();
        let compiled: Vec<OnceCell<Option<Regex>>>;
        let mut eager = Vec::new();
        for (i, (pattern, rule_needles)) in rules.enumerate() {
            patterns.push(pattern.to_string());
            match rule_needles {
                Some(list) if !list.is_empty() => {
                    for n in list {
                        needles.push(n);
                        owner.push(i);
                    }
                    eager.push(None);
                }
                _ => {
                    always.push(i);
                    eager.push(Some(build_one(pattern).map_err(|e| (i, e))?));
                }
            }
        }
        compiled = eager
            .into_iter()
            .map(|re| match re {
                Some(re) => OnceCell::from(Some(re)),
                None => OnceCell::new(),
            })
            .collect();
        let search =
            (!needles.is_empty()).then(|| searcher(&needles, AhoCorasickKind::NoncontiguousNFA));
        Ok(NeedleMatcher {
            patterns,
            compiled,
            always,
            needles: RefCell::new(search),
            needle_list: needles.iter().map(|n| n.to_string()).collect(),
            owner,
            candidates: RefCell::new(Vec::new()),
            lines: Cell::new(0),
        })
    }

    /// The lowest index of a rule that matches `line`.
    pub fn first(&self, line: &[u8]) -> Option<usize> {
        let mut candidates = self.candidates.borrow_mut();
        candidates.clear();
        candidates.extend_from_slice(&self.always);
        let lines = self.lines.get() + 1;
        self.lines.set(lines);
        let mut needles = self.needles.borrow_mut();
        if lines == LONG && needles.is_some() {
            let list: Vec<&str> = self.needle_list.iter().map(String::as_str).collect();
            *needles = Some(searcher(&list, AhoCorasickKind::DFA));
        }
        if let Some(needles) = needles.as_ref() {
            candidates.extend(
                needles
                    .find_overlapping_iter(line)
                    .map(|m| self.owner[m.pattern().as_usize()]),
            );
        }
        candidates.sort_unstable();
        candidates.dedup();
        candidates.iter().copied().find(|&i| {
            self.compiled[i]
                .get_or_init(|| build_one(&self.patterns[i]).ok())
                .as_ref()
                .is_some_and(|re| re.is_match(line))
        })
    }

    /// How many rules are compiled so far (a measure of what a call paid).
    #[cfg(test)]
    pub fn compiled(&self) -> usize {
        self.compiled.iter().filter(|c| c.get().is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_is_compiled_when_a_line_holds_its_needles_and_the_first_match_wins() {
        let n = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        let (error, warn, test) = (n(&["error", "Error"]), n(&["warn"]), n(&["test "]));
        let rules: Vec<(&str, Option<&[String]>)> = vec![
            (r"^test .+ ok$", Some(&test)),
            (r"(?i)^\s*error:", Some(&error)),
            (r"^\d+ passed", None),
            (r"warn(ing)?:", Some(&warn)),
        ];
        let m = NeedleMatcher::new(rules.into_iter()).unwrap();
        assert_eq!(m.compiled(), 1, "only the rule without needles");
        assert_eq!(m.first(b"3 passed"), Some(2));
        assert_eq!(m.compiled(), 1);
        assert_eq!(m.first(b"  Error: boom, warn: x"), Some(1));
        assert_eq!(
            m.compiled(),
            2,
            "the error rule: the first match ends the search"
        );
        assert_eq!(m.first(b"warning: y"), Some(3));
        assert_eq!(m.first(b"test a ... ok"), Some(0));
        assert_eq!(m.first(b"test a ... FAILED"), None);
        assert_eq!(m.first(b"nothing"), None);
    }

    #[test]
    fn a_long_output_searches_its_needles_faster_and_finds_the_same() {
        let needles = vec!["error".to_string(), "Error".to_string()];
        let warn = vec!["warn".to_string()];
        let rules: Vec<(&str, Option<&[String]>)> = vec![
            (r"(?i)^\s*error:", Some(&needles)),
            (r"warn(ing)?:", Some(&warn)),
        ];
        let m = NeedleMatcher::new(rules.into_iter()).unwrap();
        let lines: [&[u8]; 4] = [b"error: a", b"x warn: y", b"Error: warn: z", b"plain"];
        let before: Vec<Option<usize>> = lines.iter().map(|l| m.first(l)).collect();
        for i in 0..LONG {
            m.first(lines[(i % 4) as usize]);
        }
        assert!(m.lines.get() > LONG);
        let after: Vec<Option<usize>> = lines.iter().map(|l| m.first(l)).collect();
        assert_eq!(before, after);
        assert_eq!(after, [Some(0), Some(1), Some(0), None]);
    }

    #[test]
    fn a_rule_without_needles_that_does_not_compile_is_named() {
        let rules: Vec<(&str, Option<&[String]>)> = vec![("ok", None), ("(open", None)];
        assert_eq!(NeedleMatcher::new(rules.into_iter()).unwrap_err().0, 1);
    }
}
