//! A naive oracle for [`super::Words::of`]: the module's rule spelled out
//! step by step (characters into a vector, one step per pass), and property
//! tests holding the one-pass normalizer to it.

use proptest::prelude::*;

use super::{Words, FUNCTION_WORDS};

fn is_apostrophe(c: char) -> bool {
    c == '\'' || c == '\u{2019}'
}

/// The rule, one step at a time.
pub fn words(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    // 1. Separators become spaces; an apostrophe between two word
    //    characters disappears.
    let mut joined = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let between = i > 0
            && chars[i - 1].is_alphanumeric()
            && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
        if c.is_alphanumeric() {
            joined.push(c);
        } else if is_apostrophe(c) && between {
            continue;
        } else {
            joined.push(' ');
        }
    }
    // 2.–5.
    let mut out: Vec<String> = joined
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(|w| w.chars().flat_map(char::to_lowercase).collect::<String>())
        .filter(|w| !FUNCTION_WORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The suffix rules as a table of cases.
fn stem(word: &str) -> String {
    if !word.is_ascii() {
        return word.to_string();
    }
    let mut w = word.to_string();
    if let Some(base) = w.strip_suffix("ies").filter(|_| word.len() > 4) {
        w = format!("{base}y");
    } else if let Some(base) = w.strip_suffix("sses") {
        w = format!("{base}ss");
    } else if w.len() > 3 && w.ends_with('s') && !["ss", "us", "is"].iter().any(|s| w.ends_with(s))
    {
        w.pop();
    }
    let base = match (w.strip_suffix("ing"), w.strip_suffix("ed")) {
        (Some(b), _) => Some(b.to_string()),
        (None, Some(b)) if !b.ends_with('e') => Some(b.to_string()),
        _ => None,
    };
    if let Some(mut b) = base {
        if b.len() >= 3 && b.chars().any(|c| "aeiouy".contains(c)) {
            let last: Vec<char> = b.chars().rev().take(2).collect();
            if last.len() == 2 && last[0] == last[1] && !"aeiouylsz".contains(last[0]) {
                b.pop();
            }
            w = b;
        }
    }
    if w.len() >= 6 {
        if let Some(b) = w.strip_suffix("ly") {
            w = b.to_string();
        }
    }
    w
}

fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("Run".to_string()),
        Just("running".to_string()),
        Just("don't".to_string()),
        Just("’".to_string()),
        Just("'".to_string()),
        Just("''".to_string()),
        Just("the".to_string()),
        Just("THE".to_string()),
        Just("**".to_string()),
        Just("`cargo fmt`".to_string()),
        Just("İstanbul".to_string()),
        Just("ΣΑΣ".to_string()),
        Just("größe".to_string()),
        Just("ß".to_string()),
        Just("libraries".to_string()),
        Just("passes".to_string()),
        Just("fixed".to_string()),
        Just("x".to_string()),
        Just("12".to_string()),
        "[a-zA-Z]{1,9}",
        "[ -~]{0,6}",
        any::<char>().prop_map(String::from),
        "\\PC{0,4}",
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_normalizer_matches_the_oracle(s in text()) {
        prop_assert_eq!(Words::of(&s).words, words(&s));
    }

    #[test]
    fn the_key_does_not_depend_on_word_order_or_case(
        ws in proptest::collection::vec("[a-zA-Z]{1,8}", 1..8)
    ) {
        let forward = ws.join(" ");
        let backward: Vec<String> = ws.iter().rev().map(|w| w.to_uppercase()).collect();
        prop_assert_eq!(Words::of(&forward).key(), Words::of(&backward.join(", ")).key());
    }
}
