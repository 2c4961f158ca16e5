//! The identity rule: when two reported findings are the same finding.
//!
//! A finding is the same across iterations and sources when its **file**
//! and its **normalized message** are equal. Reviewers repeat themselves
//! loosely — CodeRabbit rewrites a sentence's case and punctuation, a line
//! moves when code is added above it, a code span names the variable of the
//! day — so the message is normalized before it is compared:
//!
//! 1. every character is lowercased (`char::to_lowercase`);
//! 2. a **code span** — a run of N backticks through the next run of
//!    exactly N backticks — becomes one code token, whatever it holds
//!    (a run with no closing run is punctuation);
//! 3. the text is split into **words** (runs of alphanumeric characters),
//!    **marks** (any other character that is not whitespace, one each) and
//!    whitespace;
//! 4. **line references** are removed: the word `line`, `lines` or `ln`
//!    followed by a number (digits only, whitespace allowed between), with
//!    an optional range (`-`, `–`, `—` or the word `to`, then a number);
//!    a word `l` + digits (`L42`, also `#L42`), with an optional range
//!    written right after it (`-` then `l` + digits or digits);
//!    a `:` written right after a word or mark (no whitespace) and right
//!    before a number, as in `src/a.rs:42:7` (each `:N` goes);
//! 5. marks are dropped; what remains is the words and code tokens (shown
//!    as `` ` ``), joined by single spaces.
//!
//! So `Avoid \`unwrap()\` on line 42!` and `avoid \`expect("x")\` (L57)`
//! are one finding, while `use a constant for 10` and `... for 12` stay
//! two. Numbers other than line references count.
//!
//! The file is compared as given after [`normalize_path`]: `./` prefixes
//! and backslashes do not count, case does.
//!
//! The line number is never part of the identity: a finding whose code moved
//! (line drift) is the same finding, shown at its newest line.
//!
//! Near-misses (messages close but not equal, or equal in another file)
//! are what `jkz findings --explain` shows: [`similarity`].

/// The token a code span becomes, in the normalized text.
pub const CODE_TOKEN: &str = "`";

/// A private stand-in for a code span while normalizing: not alphanumeric,
/// not whitespace, and removed from the input first.
const CODE: char = '\u{1}';

/// The normalized form of a message (see the module doc).
pub fn normalize_message(message: &str) -> String {
    let text = lower_with_code_spans(message);
    let tokens = tokenize(&text);
    let keep = without_line_references(&tokens);
    let mut out = String::with_capacity(text.len());
    for (token, keep) in tokens.iter().zip(keep) {
        if !keep {
            continue;
        }
        let word = match token.kind {
            Kind::Word => token.text,
            Kind::Code => CODE_TOKEN,
            Kind::Mark => continue,
        };
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// A file path as findings compare it: trimmed, backslashes as slashes,
/// repeated slashes as one, leading `./` dropped. `None` when nothing is
/// left.
pub fn normalize_path(path: &str) -> Option<String> {
    let mut p = path.trim().replace('\\', "/");
    while p.contains("//") {
        p = p.replace("//", "/");
    }
    let mut rest = p.as_str();
    while let Some(r) = rest.strip_prefix("./") {
        rest = r;
    }
    (!rest.is_empty() && rest != ".").then(|| rest.to_string())
}

/// How close two normalized messages are: the share of their distinct
/// words they have in common (0 to 1; code tokens not counted).
pub fn similarity(a: &str, b: &str) -> f64 {
    use std::collections::HashSet;
    let words = |s: &'_ str| -> HashSet<String> {
        s.split(' ')
            .filter(|w| !w.is_empty() && *w != CODE_TOKEN)
            .map(str::to_string)
            .collect()
    };
    let (a, b) = (words(a), words(b));
    let union = a.union(&b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

/// Steps 1 and 2: lowercased, each code span replaced by [`CODE`] between
/// spaces. Backtick runs are found once, and each is matched with the next
/// run of the same length through a per-length cursor, so a message full
/// of unmatched runs stays linear.
fn lower_with_code_spans(message: &str) -> String {
    // Runs of backticks: (byte start, byte end, length).
    let bytes = message.as_bytes();
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while let Some(at) = memchr::memchr(b'`', &bytes[i..]) {
        let start = i + at;
        let mut end = start;
        while end < bytes.len() && bytes[end] == b'`' {
            end += 1;
        }
        runs.push((start, end));
        i = end;
    }
    // For each run, the index of the next run of the same length.
    let mut next_same = vec![usize::MAX; runs.len()];
    let mut last_of_len: std::collections::HashMap<usize, usize> = Default::default();
    for (k, &(s, e)) in runs.iter().enumerate().rev() {
        if let Some(&n) = last_of_len.get(&(e - s)) {
            next_same[k] = n;
        }
        last_of_len.insert(e - s, k);
    }
    let mut out = String::with_capacity(message.len() + 8);
    let mut from = 0;
    let mut k = 0;
    let push_lower = |out: &mut String, s: &str| {
        for c in s.chars() {
            if c == CODE {
                out.push(' ');
            } else {
                out.extend(c.to_lowercase());
            }
        }
    };
    while k < runs.len() {
        let (s, _) = runs[k];
        let close = next_same[k];
        if close == usize::MAX {
            k += 1;
            continue;
        }
        push_lower(&mut out, &message[from..s]);
        out.push(' ');
        out.push(CODE);
        out.push(' ');
        from = runs[close].1;
        k = close + 1;
    }
    push_lower(&mut out, &message[from..]);
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Word,
    Mark,
    Code,
}

/// A word, mark or code token, and whether whitespace came right before it.
#[derive(Clone, Copy, Debug)]
struct Token<'a> {
    kind: Kind,
    text: &'a str,
    spaced: bool,
}

fn tokenize(text: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut spaced = false;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_whitespace() {
            spaced = true;
            continue;
        }
        let (kind, end) = if c == CODE {
            (Kind::Code, at + c.len_utf8())
        } else if c.is_alphanumeric() {
            let mut end = at + c.len_utf8();
            while let Some(&(i, d)) = chars.peek() {
                if !d.is_alphanumeric() {
                    break;
                }
                end = i + d.len_utf8();
                chars.next();
            }
            (Kind::Word, end)
        } else {
            (Kind::Mark, at + c.len_utf8())
        };
        tokens.push(Token {
            kind,
            text: &text[at..end],
            spaced,
        });
        spaced = false;
    }
    tokens
}

fn is_number(t: &Token<'_>) -> bool {
    t.kind == Kind::Word && t.text.bytes().all(|b| b.is_ascii_digit())
}

/// `l` followed by at least one digit, nothing else.
fn is_l_number(t: &Token<'_>) -> bool {
    t.kind == Kind::Word
        && t.text.len() > 1
        && t.text.starts_with('l')
        && t.text[1..].bytes().all(|b| b.is_ascii_digit())
}

fn is_dash(t: &Token<'_>) -> bool {
    t.kind == Kind::Mark && matches!(t.text, "-" | "–" | "—")
}

/// Step 4: which tokens survive (false for a line reference's tokens).
fn without_line_references(tokens: &[Token<'_>]) -> Vec<bool> {
    let mut keep = vec![true; tokens.len()];
    let at = |i: usize| tokens.get(i);
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        // `line 42`, `lines 10-12`, `ln 7 to 9`
        if t.kind == Kind::Word
            && matches!(t.text, "line" | "lines" | "ln")
            && at(i + 1).is_some_and(is_number)
        {
            let mut end = i + 2;
            if let (Some(sep), Some(n)) = (at(end), at(end + 1)) {
                let range = is_dash(sep) || (sep.kind == Kind::Word && sep.text == "to");
                if range && is_number(n) {
                    end += 2;
                }
            }
            keep[i..end].fill(false);
            i = end;
            continue;
        }
        // `l42`, `l10-l12`, `l10-12`
        if is_l_number(t) {
            let mut end = i + 1;
            if let (Some(sep), Some(n)) = (at(end), at(end + 1)) {
                if is_dash(sep) && !sep.spaced && !n.spaced && (is_number(n) || is_l_number(n)) {
                    end += 2;
                }
            }
            keep[i..end].fill(false);
            i = end;
            continue;
        }
        // `path:42`, `path:42:7`
        if t.kind == Kind::Mark
            && t.text == ":"
            && i > 0
            && !t.spaced
            && at(i + 1).is_some_and(|n| is_number(n) && !n.spaced)
        {
            keep[i] = false;
            keep[i + 1] = false;
            i += 2;
            continue;
        }
        i += 1;
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The naive oracle: the module doc's steps, one at a time, on a vector
    /// of characters, by index, with no cleverness.
    fn oracle(message: &str) -> String {
        // 1. lowercase (and the stand-in removed from the input).
        let mut chars: Vec<char> = Vec::new();
        for c in message.chars() {
            if c == CODE {
                chars.push(' ');
            } else {
                chars.extend(c.to_lowercase());
            }
        }
        // 2. code spans, left to right.
        let run_len = |cs: &[char], i: usize| cs[i..].iter().take_while(|&&c| c == '`').count();
        let mut out: Vec<char> = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] != '`' {
                out.push(chars[i]);
                i += 1;
                continue;
            }
            let n = run_len(&chars, i);
            let mut j = i + n;
            let mut close = None;
            while j < chars.len() {
                if chars[j] == '`' {
                    let m = run_len(&chars, j);
                    if m == n {
                        close = Some(j + m);
                        break;
                    }
                    j += m;
                } else {
                    j += 1;
                }
            }
            match close {
                Some(end) => {
                    out.extend([' ', CODE, ' ']);
                    i = end;
                }
                None => {
                    out.extend(std::iter::repeat_n('`', n));
                    i += n;
                }
            }
        }
        // 3. tokens: (kind, text, whitespace before)
        let mut toks: Vec<(char, String, bool)> = Vec::new();
        let mut spaced = false;
        let mut i = 0;
        while i < out.len() {
            let c = out[i];
            if c.is_whitespace() {
                spaced = true;
                i += 1;
            } else if c == CODE {
                toks.push(('c', CODE_TOKEN.into(), spaced));
                spaced = false;
                i += 1;
            } else if c.is_alphanumeric() {
                let mut w = String::new();
                while i < out.len() && out[i].is_alphanumeric() {
                    w.push(out[i]);
                    i += 1;
                }
                toks.push(('w', w, spaced));
                spaced = false;
            } else {
                toks.push(('m', c.to_string(), spaced));
                spaced = false;
                i += 1;
            }
        }
        // 4. line references
        let num = |t: &(char, String, bool)| {
            t.0 == 'w' && !t.1.is_empty() && t.1.chars().all(|c| c.is_ascii_digit())
        };
        let lnum = |t: &(char, String, bool)| {
            t.0 == 'w'
                && t.1.chars().count() >= 2
                && t.1.starts_with('l')
                && t.1.chars().skip(1).all(|c| c.is_ascii_digit())
        };
        let dash = |t: &(char, String, bool)| t.0 == 'm' && ["-", "–", "—"].contains(&t.1.as_str());
        let mut dropped = vec![false; toks.len()];
        let mut i = 0;
        while i < toks.len() {
            let t = &toks[i];
            if t.0 == 'w'
                && (t.1 == "line" || t.1 == "lines" || t.1 == "ln")
                && i + 1 < toks.len()
                && num(&toks[i + 1])
            {
                dropped[i] = true;
                dropped[i + 1] = true;
                let mut next = i + 2;
                if i + 3 < toks.len()
                    && (dash(&toks[i + 2]) || (toks[i + 2].0 == 'w' && toks[i + 2].1 == "to"))
                    && num(&toks[i + 3])
                {
                    dropped[i + 2] = true;
                    dropped[i + 3] = true;
                    next = i + 4;
                }
                i = next;
            } else if lnum(t) {
                dropped[i] = true;
                let mut next = i + 1;
                if i + 2 < toks.len()
                    && dash(&toks[i + 1])
                    && !toks[i + 1].2
                    && !toks[i + 2].2
                    && (num(&toks[i + 2]) || lnum(&toks[i + 2]))
                {
                    dropped[i + 1] = true;
                    dropped[i + 2] = true;
                    next = i + 3;
                }
                i = next;
            } else if t.0 == 'm'
                && t.1 == ":"
                && i > 0
                && !t.2
                && i + 1 < toks.len()
                && num(&toks[i + 1])
                && !toks[i + 1].2
            {
                dropped[i] = true;
                dropped[i + 1] = true;
                i += 2;
            } else {
                i += 1;
            }
        }
        // 5. words and code tokens, single spaces.
        toks.iter()
            .zip(dropped)
            .filter(|(t, d)| !d && t.0 != 'm')
            .map(|(t, _)| t.1.clone())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn examples() {
        let n = normalize_message;
        assert_eq!(n("Avoid `unwrap()` on line 42!"), "avoid ` on");
        assert_eq!(n("avoid `expect(\"x\")` on (L57)"), "avoid ` on");
        assert_eq!(n("Use a constant for 10"), "use a constant for 10");
        assert_ne!(n("use a constant for 10"), n("use a constant for 12"));
        assert_eq!(n("see src/a.rs:42:7, lines 3–9"), "see src a rs");
        assert_eq!(n("L10-L12 and #L4 and l10n"), "and and l10n");
        assert_eq!(n("```rust\nfn x() {}\n``` here"), "` here");
        assert_eq!(n("a ` b"), "a b");
        assert_eq!(
            n("**Fix the Off-by-one** error."),
            "fix the off by one error"
        );
        assert_eq!(n(""), "");
    }

    #[test]
    fn paths() {
        assert_eq!(normalize_path(" ./src\\a.rs ").as_deref(), Some("src/a.rs"));
        assert_eq!(normalize_path("src//a.rs").as_deref(), Some("src/a.rs"));
        assert_eq!(normalize_path("././x").as_deref(), Some("x"));
        assert_eq!(normalize_path("  "), None);
        assert_eq!(normalize_path("./"), None);
    }

    #[test]
    fn similarity_is_shared_words() {
        assert_eq!(similarity("a b c", "a b c"), 1.0);
        assert_eq!(similarity("a b", "c d"), 0.0);
        assert_eq!(similarity("a b c d", "a b c e"), 0.6);
    }

    fn text() -> impl Strategy<Value = String> {
        let atoms = prop_oneof![
            Just("line 4".to_string()),
            Just("lines 1-2".to_string()),
            Just("ln 3 to 5".to_string()),
            Just("LINE 7–9".to_string()),
            Just("L10-L12".to_string()),
            Just("l3-4".to_string()),
            Just("#L8".to_string()),
            Just("L5 -6".to_string()),
            Just("l5- 6".to_string()),
            Just(":12".to_string()),
            Just("a.rs:42:7".to_string()),
            Just("`x`".to_string()),
            Just("``y`z``".to_string()),
            Just("`".to_string()),
            Just("``".to_string()),
            Just("line".to_string()),
            Just("Lines".to_string()),
            Just("ln".to_string()),
            Just("to".to_string()),
            Just("L".to_string()),
            Just("#".to_string()),
            Just(":".to_string()),
            Just("-".to_string()),
            Just("–".to_string()),
            Just(" ".to_string()),
            Just("\n".to_string()),
            Just("\u{1}".to_string()),
            Just("İ".to_string()),
            Just("é".to_string()),
            Just("😀".to_string()),
            Just("_".to_string()),
            "[0-9]{1,3}",
            "[a-zA-Z]{1,4}",
            "\\PC",
        ];
        proptest::collection::vec(atoms, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn normalizer_agrees_with_the_naive_oracle(s in text()) {
            prop_assert_eq!(normalize_message(&s), oracle(&s));
        }

        /// What the identity ignores, it ignores: case, extra whitespace and
        /// punctuation between words, line references, code-span contents.
        #[test]
        fn ignored_differences_keep_the_identity(
            words in proptest::collection::vec("[a-z]{1,6}", 1..8),
            line in 1u32..100_000,
            code_a in "[a-z(){}.\"]{1,10}",
            code_b in "[a-z(){}.\"]{1,10}",
            punct in "[,;!?()*]{0,2}",
        ) {
            let plain = words.join(" ");
            let base = normalize_message(&format!("{plain} `{code_a}` at line 1"));
            let varied = format!(
                "{}{punct}   `{code_b}`\n at LINE {line}{punct}",
                plain.to_uppercase().replace(' ', "  ")
            );
            prop_assert_eq!(normalize_message(&varied), base);
        }
    }
}
