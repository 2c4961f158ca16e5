//! The de-duplication rule: when two phrasings are one pattern.
//!
//! A pattern's text becomes its **words** ([`Words::of`]):
//!
//! 1. A word is a maximal run of letters and digits (Unicode
//!    `char::is_alphanumeric`); an apostrophe (`'` or `’`) between two of
//!    them joins them (`don't` → `dont`). Everything else — markup
//!    (`*`, `_`, `` ` ``, `#`, `[`, `]`), punctuation, blanks — separates
//!    words, so case, punctuation and markup never matter.
//! 2. Each character is lower-cased on its own (`char::to_lowercase`).
//! 3. Function words ([`FUNCTION_WORDS`]: articles, pronouns,
//!    prepositions, "always", "please", …) are dropped; negations
//!    ([`NEGATIONS`]) are kept.
//! 4. ASCII words are stemmed by a few suffix rules ([`stem`]: `-ies`,
//!    `-sses`, `-s`, `-ing`, `-ed`, `-ly`), so `committing` and `commit`
//!    are one word.
//! 5. The words are sorted and each is kept once, so word order never
//!    matters.
//!
//! Two texts with the same words (the same **key**, the words joined by
//! spaces) are the same pattern. Two texts whose word sets have a Jaccard
//! similarity (shared words over all words: the similarity of their
//! one-word shingles) of at least [`SIMILAR`] are the same pattern too,
//! unless one is negated and the other is not ("never X" is not "X").

/// Two word sets at least this similar (Jaccard) are one pattern.
pub const SIMILAR: f64 = 0.7;

/// Words that carry no rule of their own, dropped before comparing.
pub const FUNCTION_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "always", "an", "and", "are", "as", "at", "be", "been",
    "but", "by", "can", "could", "do", "does", "for", "from", "has", "have", "i", "if", "in",
    "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "please", "so", "that", "the",
    "their", "them", "then", "there", "these", "this", "those", "to", "we", "with", "you", "your",
];

/// Words that turn a rule around: kept, and a negated text never merges
/// with one that is not.
pub const NEGATIONS: &[&str] = &[
    "arent", "avoid", "cannot", "cant", "didnt", "doesnt", "dont", "isnt", "never", "no", "nor",
    "not", "shouldnt", "wasnt", "without", "wont", "mustnt",
];

/// A text's words, sorted, each once (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Words {
    pub words: Vec<String>,
}

impl Words {
    /// The words of `text`.
    pub fn of(text: &str) -> Words {
        let mut words = Vec::new();
        let mut word = String::new();
        // An apostrophe seen after a word character: it joins only when a
        // word character follows.
        let mut apostrophe = false;
        let end_word = |word: &mut String, words: &mut Vec<String>| {
            if !word.is_empty() {
                if let Some(w) = keep(word) {
                    words.push(w);
                }
                word.clear();
            }
        };
        for c in text.chars() {
            if c.is_ascii_alphanumeric() {
                apostrophe = false;
                word.push(c.to_ascii_lowercase());
            } else if c.is_alphanumeric() {
                apostrophe = false;
                word.extend(c.to_lowercase());
            } else if (c == '\'' || c == '\u{2019}') && !word.is_empty() && !apostrophe {
                apostrophe = true;
            } else {
                apostrophe = false;
                end_word(&mut word, &mut words);
            }
            // A second apostrophe, or one at a word's end, separates: the
            // next character decides (handled above); a trailing one is
            // dropped with the word's end.
        }
        end_word(&mut word, &mut words);
        words.sort_unstable();
        words.dedup();
        Words { words }
    }

    /// The words joined by single spaces: equal keys, one pattern.
    pub fn key(&self) -> String {
        self.words.join(" ")
    }

    /// Parses a key back into words.
    pub fn from_key(key: &str) -> Words {
        Words {
            words: key
                .split(' ')
                .filter(|w| !w.is_empty())
                .map(String::from)
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether the text says "not": one of [`NEGATIONS`] is among its words.
    pub fn negated(&self) -> bool {
        self.words.iter().any(|w| NEGATIONS.contains(&w.as_str()))
    }

    /// How many words the two share (both sorted).
    pub fn shared(&self, other: &Words) -> usize {
        let (mut i, mut j, mut n) = (0, 0, 0);
        while i < self.words.len() && j < other.words.len() {
            match self.words[i].cmp(&other.words[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    n += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        n
    }

    /// Jaccard similarity: shared words over all words (0 for two empty sets).
    pub fn similarity(&self, other: &Words) -> f64 {
        let shared = self.shared(other);
        let union = self.len() + other.len() - shared;
        if union == 0 {
            0.0
        } else {
            shared as f64 / union as f64
        }
    }

    /// Whether the two are one pattern: the same key, or similar enough
    /// and both negated or neither.
    pub fn same_pattern(&self, other: &Words) -> bool {
        self.negated() == other.negated() && self.similarity(other) >= SIMILAR
    }

    /// The fewest words a set similar to this one shares with it: any set
    /// with a Jaccard similarity of [`SIMILAR`] or more shares at least
    /// `ceil(SIMILAR × len)` words, so probing the first
    /// `len − that + 1` words of this set (in any order) finds every such
    /// set (prefix filtering).
    pub fn probe_count(&self) -> usize {
        let need = (SIMILAR * self.len() as f64).ceil() as usize;
        self.len() - need.min(self.len()) + 1
    }
}

/// A word as it enters the set: stemmed, or `None` for a function word.
fn keep(word: &str) -> Option<String> {
    if FUNCTION_WORDS.contains(&word) {
        return None;
    }
    Some(stem(word))
}

/// Strips a few English suffixes from an ASCII word (anything else is
/// returned as it is). In order: `-ies` → `-y` (longer than four letters);
/// `-sses` → `-ss`; a final `s` (not `ss`, `us`, `is`; longer than three
/// letters); then `-ing`, or `-ed` not after `e`, when at least three
/// letters with a vowel remain, undoubling a final double consonant other
/// than `l`, `s`, `z` (`running` → `run`); then `-ly` when at least four
/// letters remain.
pub fn stem(word: &str) -> String {
    if !word.is_ascii() {
        return word.to_string();
    }
    let mut w = word.to_string();
    if w.len() > 4 && w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.ends_with("sses") {
        w.truncate(w.len() - 2);
    } else if w.len() > 3
        && w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
    {
        w.truncate(w.len() - 1);
    }
    let has_vowel = |s: &str| s.bytes().any(|b| b"aeiouy".contains(&b));
    let cut = if w.ends_with("ing") {
        Some(w.len() - 3)
    } else if w.ends_with("ed") && !w.ends_with("eed") {
        Some(w.len() - 2)
    } else {
        None
    };
    if let Some(at) = cut {
        if at >= 3 && has_vowel(&w[..at]) {
            w.truncate(at);
            let b = w.as_bytes();
            let n = b.len();
            if n >= 2 && b[n - 1] == b[n - 2] && !b"aeiouylsz".contains(&b[n - 1]) {
                w.truncate(n - 1);
            }
        }
    }
    if w.len() >= 6 && w.ends_with("ly") {
        w.truncate(w.len() - 2);
    }
    w
}

#[cfg(test)]
mod oracle;

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> String {
        Words::of(s).key()
    }

    #[test]
    fn case_punctuation_markup_and_order_do_not_matter() {
        let k = key("Run `cargo fmt` before committing.");
        assert_eq!(k, "before cargo commit fmt run");
        assert_eq!(key("**before committing, always run cargo FMT!**"), k);
        assert_eq!(key("- [ ] _Run_ cargo-fmt before you commit"), k);
    }

    #[test]
    fn apostrophes_join_inside_a_word_only() {
        assert_eq!(key("Don't skip"), "dont skip");
        assert_eq!(key("don’t"), "dont");
        assert_eq!(key("'quoted' words''"), "quot word");
        assert_eq!(key("rock'n'roll"), "rocknroll");
    }

    #[test]
    fn stems() {
        for (w, s) in [
            ("committing", "commit"),
            ("running", "run"),
            ("tests", "test"),
            ("passes", "pass"),
            ("libraries", "library"),
            ("fixed", "fix"),
            ("need", "need"),
            ("speed", "speed"),
            ("status", "status"),
            ("analysis", "analysis"),
            ("carefully", "careful"),
            ("sing", "sing"),
            ("falling", "fall"),
            ("größe", "größe"),
        ] {
            assert_eq!(stem(w), s, "{w}");
        }
    }

    #[test]
    fn similar_phrasings_merge_and_different_rules_do_not() {
        let a = Words::of("Run cargo fmt before committing");
        assert!(a.same_pattern(&Words::of("Run cargo fmt before committing code")));
        assert!(!a.same_pattern(&Words::of("Run cargo clippy before committing")));
        assert!(!a.same_pattern(&Words::of("Never run cargo fmt before committing")));
        assert!(!Words::default().same_pattern(&Words::default()));
    }

    #[test]
    fn probing_finds_every_similar_set() {
        // The bound behind prefix filtering, checked on every size.
        for n in 1..40 {
            let a = Words {
                words: (0..n).map(|i| format!("w{i:03}")).collect(),
            };
            let probes = a.probe_count();
            assert!(probes >= 1 && probes <= n, "{n}: {probes}");
            // The largest set sharing none of the probed words shares
            // n - probes words: never similar enough.
            let b = Words {
                words: a.words[probes..].to_vec(),
            };
            assert!(a.similarity(&b) < SIMILAR, "{n}");
        }
    }
}
