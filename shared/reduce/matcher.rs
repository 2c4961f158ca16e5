//! Which of a list of patterns match a line, lowest first: the sniffer's
//! question (the classifier's is [`super::needles`]'s). A `RegexSet` answers it, but builds for
//! it what a set that also finds where a match is needs: a reverse
//! automaton, capture engines, a literal prefilter; for the 50 to 100 rules
//! of a family that was most of a `jkz reduce` call's time. Here the
//! patterns become one forward lazy DFA, without captures; a `RegexSet` is
//! built only if the lazy DFA cannot answer (a Unicode word boundary before
//! a non-ASCII byte, a cache that keeps filling up).

use std::cell::{OnceCell, RefCell};

use regex::bytes::{RegexSet, RegexSetBuilder};
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::nfa::thompson::{self, WhichCaptures};
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind, PatternSet};

use super::classifier::{ascii, SIZE_LIMIT};

#[derive(Debug)]
pub struct Matcher {
    /// The patterns as compiled (ASCII mode where they can be).
    patterns: Vec<String>,
    lazy: Option<Lazy>,
    set: OnceCell<Option<RegexSet>>,
}

#[derive(Debug)]
struct Lazy {
    dfa: DFA,
    cache: RefCell<Cache>,
    found: RefCell<PatternSet>,
}

impl Matcher {
    /// The patterns, each in ASCII mode when it can be; an error names what
    /// does not compile (the `regex` crate's message).
    pub fn new<'p>(
        patterns: impl Iterator<Item = &'p str> + Clone,
    ) -> Result<Matcher, regex::Error> {
        let ascii: Vec<String> = patterns.clone().map(|p| ascii(p).into_owned()).collect();
        let written: Vec<String> = patterns.map(str::to_string).collect();
        for patterns in [&ascii, &written] {
            if let Some(lazy) = Lazy::new(patterns) {
                return Ok(Matcher {
                    patterns: patterns.clone(),
                    lazy: Some(lazy),
                    set: OnceCell::new(),
                });
            }
            if let Ok(set) = set_of(patterns) {
                return Ok(Matcher {
                    patterns: patterns.clone(),
                    lazy: None,
                    set: OnceCell::from(Some(set)),
                });
            }
        }
        // Neither form compiles: the error of the patterns as written.
        Err(set_of(&written).expect_err("the patterns as written did not compile"))
    }

    /// The lowest index of a pattern that matches `line`.
    #[cfg(test)]
    fn first(&self, line: &[u8]) -> Option<usize> {
        let mut first = None;
        self.each(line, |i| {
            first = Some(i);
            false
        });
        first
    }

    /// Calls `f` with the index of each pattern that matches `line`, lowest
    /// first, while it returns true.
    pub fn each(&self, line: &[u8], mut f: impl FnMut(usize) -> bool) {
        if let Some(lazy) = &self.lazy {
            let mut found = lazy.found.borrow_mut();
            found.clear();
            let mut cache = lazy.cache.borrow_mut();
            if lazy
                .dfa
                .try_which_overlapping_matches(&mut cache, &Input::new(line), &mut found)
                .is_ok()
            {
                for p in found.iter() {
                    if !f(p.as_usize()) {
                        return;
                    }
                }
                return;
            }
        }
        let set = self.set.get_or_init(|| set_of(&self.patterns).ok());
        if let Some(set) = set {
            for i in set.matches(line).iter() {
                if !f(i) {
                    return;
                }
            }
        }
    }
}

impl Lazy {
    fn new(patterns: &[String]) -> Option<Lazy> {
        let nfa = thompson::Compiler::new()
            .syntax(syntax::Config::new().utf8(false))
            .configure(
                thompson::Config::new()
                    .utf8(false)
                    .which_captures(WhichCaptures::None)
                    .nfa_size_limit(Some(SIZE_LIMIT)),
            )
            .build_many(patterns)
            .ok()?;
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .match_kind(MatchKind::All)
                    .unicode_word_boundary(true),
            )
            .build_from_nfa(nfa)
            .ok()?;
        Some(Lazy {
            cache: RefCell::new(dfa.create_cache()),
            found: RefCell::new(PatternSet::new(dfa.pattern_len())),
            dfa,
        })
    }
}

fn set_of<S: AsRef<str>>(patterns: &[S]) -> Result<RegexSet, regex::Error> {
    RegexSetBuilder::new(patterns.iter().map(AsRef::as_ref))
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(SIZE_LIMIT)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(patterns: &[&str]) -> Matcher {
        Matcher::new(patterns.iter().copied()).unwrap()
    }

    #[test]
    fn the_lowest_matching_pattern_whichever_engine() {
        let m = matcher(&[r"^error\b", r"\bwarn", r"^\s*(PASS|✓) ", "^[━█ ]{3}"]);
        assert!(m.lazy.is_some());
        assert_eq!(m.first(b"error: x warn"), Some(0));
        assert_eq!(m.first(b"a warning"), Some(1));
        assert_eq!(m.first("  ✓ parses".as_bytes()), Some(2));
        assert_eq!(m.first("━━█ 10%".as_bytes()), Some(3));
        assert_eq!(m.first(b"nothing"), None);
        let mut all = Vec::new();
        m.each(b"error: warn", |i| {
            all.push(i);
            true
        });
        assert_eq!(all, [0, 1]);
        // A Unicode word boundary next to a non-ASCII byte: the lazy DFA
        // gives up and the set answers.
        let u = matcher(&[r"^[é]x\b", r"\bnope"]);
        assert_eq!(u.first("éxé".as_bytes()), None);
        assert_eq!(u.first("éx y".as_bytes()), Some(0));
        assert_eq!(u.first("ééé".as_bytes()), None);
        assert_eq!(u.first(b"a nope"), Some(1));
    }

    #[test]
    fn a_bad_pattern_is_the_regex_crates_error() {
        assert!(Matcher::new(["(open"].into_iter()).is_err());
    }
}
