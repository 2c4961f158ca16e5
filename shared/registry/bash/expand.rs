//! Words as the shell hands them to a program, in the shell's order: brace
//! expansion (`{a,b}`, `{1..3}`), then tilde, variables (those assigned
//! earlier on the same command line first, then the hook's environment,
//! which is the client's), command substitution (what a literal `$(…)`
//! prints), field splitting of what was unquoted, and the mark of an
//! unquoted `*`, `?` or `[` (a pattern; never expanded against the disk).
//!
//! What cannot be known (a variable set nowhere the hook sees, `$1`, the
//! output of a program) stays as written and marks the word: where its
//! first unknown part starts, so the directory it lies in can still be
//! told.

use std::collections::HashMap;
use std::path::PathBuf;

use super::lex::{Atom, RawWord};
use super::output::Stream;
use super::Kept;

/// At most this many words from one word's brace expansion or one
/// variable's fields: `{a,b}{a,b}…` cannot make the hook work without end.
pub const MAX_FIELDS: usize = 256;

/// A word after expansion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    /// Where in `text` the first part that could not be expanded starts
    /// (`$UNSET`, `$(…)` of a program): the text holds it as written.
    pub unknown_at: Option<usize>,
    /// Unquoted `*`, `?` or `[`, or paths `find` matched: a pattern.
    pub glob: bool,
    /// What a pattern from `find` leaves out (`-prune`, `-not -path`).
    pub kept: Vec<Kept>,
    /// For `<(…)`: what reading the word's file gives.
    pub feeds: Option<Stream>,
}

impl Word {
    pub fn literal(text: impl Into<String>) -> Word {
        Word {
            text: text.into(),
            ..Word::default()
        }
    }

    pub fn unknown(&self) -> bool {
        self.unknown_at.is_some()
    }
}

/// What a variable holds, as far as the hook knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Text(String),
    /// The values a loop variable takes (`for f in a b`), or `$@`: each is
    /// a word, a pattern when it was one (`for f in state/*`).
    Fields(Vec<Word>),
    /// Set, but to something the hook cannot know (`read x`, `x=$(date)`).
    Unknown,
    /// `unset x`: empty.
    Unset,
}

/// Where a command line stands: its directory and the variables assigned
/// on it so far.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// `None` once a `cd` went somewhere unknown.
    pub cwd: Option<PathBuf>,
    pub vars: HashMap<String, Value>,
}

impl Scope {
    pub fn at(cwd: Option<PathBuf>) -> Scope {
        Scope {
            cwd,
            vars: HashMap::new(),
        }
    }

    /// A script's `$0`, `$1`, … (`sh -c SCRIPT NAME ARG…`), and `$@`, `$*`,
    /// `$#` from them; the enclosing script's are gone.
    pub fn positional(&mut self, params: &[Word]) {
        self.vars.retain(|k, _| {
            !(k.chars().all(|c| c.is_ascii_digit()) || matches!(k.as_str(), "@" | "*" | "#"))
        });
        let known = |w: &Word| {
            if w.unknown() {
                Value::Unknown
            } else {
                Value::Text(w.text.clone())
            }
        };
        for (k, w) in params.iter().enumerate() {
            self.vars.insert(k.to_string(), known(w));
        }
        let args = params.get(1..).unwrap_or_default();
        let all_known = !args.iter().any(Word::unknown);
        let (at, star) = if all_known {
            let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
            (Value::Fields(args.to_vec()), Value::Text(texts.join(" ")))
        } else {
            (Value::Unknown, Value::Unknown)
        };
        self.vars.insert("@".into(), at);
        self.vars.insert("*".into(), star);
        self.vars
            .insert("#".into(), Value::Text(args.len().to_string()));
    }

    /// The value of `name`: assigned on this command line, else the
    /// environment's (the hook runs in the client's, as the shell tool's
    /// commands do). `PWD` is where the command stands.
    pub fn lookup(&self, name: &str) -> Value {
        if let Some(v) = self.vars.get(name) {
            return v.clone();
        }
        let simple = !name.is_empty()
            && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !simple {
            // `$1`, `$@`, `$?`: the script's, not known here.
            return Value::Unknown;
        }
        if name == "PWD" {
            return match &self.cwd {
                Some(cwd) => Value::Text(cwd.display().to_string()),
                None => Value::Unknown,
            };
        }
        match std::env::var(name) {
            Ok(v) => Value::Text(v),
            Err(_) => Value::Unknown,
        }
    }
}

/// A piece of a field being built: its text and whether quoting protects
/// it from splitting and globbing.
#[derive(Default)]
struct Field {
    text: String,
    unknown_at: Option<usize>,
    glob: bool,
    /// Something quoted or literal was part of it: it stays even if empty.
    solid: bool,
    feeds: Option<Stream>,
}

impl Field {
    fn unknown(&mut self, shown: &str) {
        self.unknown_at.get_or_insert(self.text.len());
        self.text.push_str(shown);
        self.solid = true;
    }

    fn word(self) -> Word {
        Word {
            text: self.text,
            unknown_at: self.unknown_at,
            glob: self.glob,
            kept: Vec::new(),
            feeds: self.feeds,
        }
    }
}

/// The words `raw` expands to. `run` evaluates a command substitution's
/// body (its writes are read as the script's own) and says what it prints.
pub fn expand(raw: &RawWord, scope: &Scope, run: &mut dyn FnMut(&str) -> Stream) -> Vec<Word> {
    let mut words = Vec::new();
    let (alternatives, capped) = braces(&raw.atoms);
    for atoms in alternatives.iter().take(MAX_FIELDS) {
        fields(atoms, scope, run, true, &mut words);
    }
    if capped {
        // The rest is more than the hook reads: a word it cannot know.
        let mut rest = Field::default();
        rest.unknown("{…}");
        words.push(rest.word());
    }
    words
}

/// `raw` as one word, without brace expansion or field splitting: an
/// assignment's value, a here-string, a heredoc delimiter.
pub fn expand_one(raw: &RawWord, scope: &Scope, run: &mut dyn FnMut(&str) -> Stream) -> Word {
    let mut words = Vec::new();
    fields(&raw.atoms, scope, run, false, &mut words);
    let mut all = words.into_iter();
    let mut first = all.next().unwrap_or_default();
    for w in all {
        if first.unknown_at.is_none() {
            first.unknown_at = w.unknown_at.map(|at| at + first.text.len() + 1);
        }
        first.text.push(' ');
        first.text.push_str(&w.text);
    }
    first
}

/// Appends the fields of one brace alternative to `out`; `split`: field
/// splitting of unquoted expansions.
fn fields(
    atoms: &[Atom],
    scope: &Scope,
    run: &mut dyn FnMut(&str) -> Stream,
    split: bool,
    out: &mut Vec<Word>,
) {
    let mut field = Field::default();
    let mut made = 0usize;
    let mut push = |field: Field, out: &mut Vec<Word>| {
        if made < MAX_FIELDS {
            made += 1;
            out.push(field.word());
        }
    };
    for atom in atoms {
        match atom {
            Atom::Char { c, quoted } => {
                if !quoted && matches!(c, '*' | '?' | '[') {
                    field.glob = true;
                }
                field.text.push(*c);
                field.solid = true;
            }
            Atom::Tilde(user) => match (user.as_deref(), std::env::var("HOME")) {
                (None, Ok(home)) if !home.is_empty() => {
                    field.text.push_str(&home);
                    field.solid = true;
                }
                // `~+`: where the command stands.
                (Some("+"), _) if scope.cwd.is_some() => {
                    let cwd = scope.cwd.as_deref().unwrap_or(std::path::Path::new("/"));
                    field.text.push_str(&cwd.display().to_string());
                    field.solid = true;
                }
                (None, _) => field.unknown("~"),
                (Some(user), _) => field.unknown(&format!("~{user}")),
            },
            Atom::Param {
                name,
                quoted,
                default,
                odd,
            } => {
                let shown = format!("${{{name}}}");
                if *odd {
                    field.unknown(&shown);
                    continue;
                }
                let mut value = scope.lookup(name);
                if let Some(d) = default {
                    let empty = matches!(&value, Value::Text(t) if t.is_empty())
                        || matches!(value, Value::Unset);
                    let unset = matches!(value, Value::Unset)
                        || (matches!(value, Value::Unknown) && !scope.vars.contains_key(name));
                    if unset || (d.colon && empty) {
                        value = if d.word.contains(['$', '`', '\\', '\'', '"']) {
                            Value::Unknown
                        } else {
                            Value::Text(d.word.clone())
                        };
                    }
                }
                match value {
                    Value::Text(text) => {
                        insert(&mut field, &text, *quoted || !split, out, &mut push)
                    }
                    Value::Fields(values) => {
                        let n = values.len();
                        for (k, v) in values.into_iter().enumerate() {
                            field.text.push_str(&v.text);
                            field.glob |= v.glob;
                            field.solid = true;
                            if k + 1 < n {
                                push(std::mem::take(&mut field), out);
                            }
                        }
                    }
                    Value::Unset => {}
                    Value::Unknown => field.unknown(&shown),
                }
            }
            Atom::Command { body, quoted } => match run(body) {
                Stream::Text(text) => {
                    let text = text.trim_end_matches('\n');
                    insert(&mut field, text, *quoted || !split, out, &mut push);
                }
                Stream::Paths(paths) if !*quoted && split && field.text.is_empty() => {
                    let n = paths.len();
                    for (k, p) in paths.into_iter().enumerate() {
                        if k + 1 < n {
                            push(
                                Field {
                                    text: p.text,
                                    glob: true,
                                    solid: true,
                                    ..Field::default()
                                },
                                out,
                            );
                        } else {
                            field.text = p.text;
                            field.glob = true;
                            field.solid = true;
                        }
                    }
                }
                Stream::Empty => {}
                _ => field.unknown("$(…)"),
            },
            Atom::Process { body, input } => {
                let printed = run(body);
                field.text.push_str("/dev/fd/63");
                field.solid = true;
                if *input && atoms.len() == 1 {
                    field.feeds = Some(printed);
                }
            }
            Atom::Arithmetic => field.unknown("$((…))"),
        }
    }
    if field.solid || !field.text.is_empty() {
        push(field, out);
    }
}

/// Inserts an expansion's `text` into the field being built; unquoted, it
/// is split at blanks into fields of its own.
fn insert(
    field: &mut Field,
    text: &str,
    quoted: bool,
    out: &mut Vec<Word>,
    push: &mut dyn FnMut(Field, &mut Vec<Word>),
) {
    if quoted {
        field.text.push_str(text);
        field.solid = true;
        return;
    }
    if text.contains(['*', '?', '[']) {
        field.glob = true;
    }
    let mut parts = text.split([' ', '\t', '\n']).peekable();
    let starts_blank = text.starts_with([' ', '\t', '\n']);
    if starts_blank && (field.solid || !field.text.is_empty()) {
        push(std::mem::take(field), out);
    }
    while let Some(part) = parts.next() {
        if part.is_empty() {
            continue;
        }
        field.text.push_str(part);
        field.solid = true;
        let more = parts.clone().any(|p| !p.is_empty());
        let ends_blank = text.ends_with([' ', '\t', '\n']);
        if more || ends_blank {
            push(std::mem::take(field), out);
        }
    }
}

/// Brace expansion of `atoms`: `pre{a,b}post` is `prea`, `preb`…, nested
/// and repeated braces too, `{1..3}` and `{a..c}` sequences; at most
/// [`MAX_FIELDS`] alternatives, and `true` when there were more.
pub fn braces(atoms: &[Atom]) -> (Vec<Vec<Atom>>, bool) {
    let mut done = Vec::new();
    let mut todo = vec![atoms.to_vec()];
    while let Some(atoms) = todo.pop() {
        if done.len() + todo.len() >= MAX_FIELDS {
            return (done, true);
        }
        match first_brace(&atoms) {
            None => done.push(atoms),
            Some((open, close, alternatives)) => {
                for alt in alternatives.into_iter().rev() {
                    let mut next = atoms[..open].to_vec();
                    next.extend(alt);
                    next.extend_from_slice(&atoms[close + 1..]);
                    todo.push(next);
                }
            }
        }
    }
    (done, false)
}

fn unquoted(a: &Atom, want: char) -> bool {
    matches!(a, Atom::Char { c, quoted: false } if *c == want)
}

/// The first unquoted `{…}` holding a top-level `,` or a `..` sequence:
/// its bounds and alternatives.
fn first_brace(atoms: &[Atom]) -> Option<(usize, usize, Vec<Vec<Atom>>)> {
    for open in 0..atoms.len() {
        if !unquoted(&atoms[open], '{') {
            continue;
        }
        let mut depth = 0;
        let mut commas = Vec::new();
        for (k, a) in atoms.iter().enumerate().skip(open + 1) {
            if unquoted(a, '{') {
                depth += 1;
            } else if unquoted(a, '}') {
                if depth == 0 {
                    if !commas.is_empty() {
                        let mut alts = Vec::new();
                        let mut from = open + 1;
                        for &c in commas.iter().chain(std::iter::once(&k)) {
                            alts.push(atoms[from..c].to_vec());
                            from = c + 1;
                        }
                        return Some((open, k, alts));
                    }
                    if let Some(seq) = sequence(&atoms[open + 1..k]) {
                        return Some((open, k, seq));
                    }
                    break;
                }
                depth -= 1;
            } else if depth == 0 && unquoted(a, ',') {
                commas.push(k);
            }
        }
    }
    None
}

/// `1..3`, `5..1..2`, `a..e`: the sequence's atoms, or `None`.
fn sequence(inner: &[Atom]) -> Option<Vec<Vec<Atom>>> {
    let text: String = inner
        .iter()
        .map(|a| match a {
            Atom::Char { c, quoted: false } => Some(*c),
            _ => None,
        })
        .collect::<Option<String>>()?;
    let parts: Vec<&str> = text.split("..").collect();
    let (from, to, step) = match parts.as_slice() {
        [a, b] => (*a, *b, 1i64),
        [a, b, s] => (*a, *b, s.parse::<i64>().ok()?.abs().max(1)),
        _ => return None,
    };
    let chars =
        |s: &str| -> Vec<Atom> { s.chars().map(|c| Atom::Char { c, quoted: true }).collect() };
    if let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) {
        let width = if from.starts_with('0') || to.starts_with('0') {
            from.len().max(to.len())
        } else {
            0
        };
        let count = (a - b).unsigned_abs() / step.unsigned_abs() + 1;
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        let dir = if b >= a { step } else { -step };
        return Some(
            (0..count.min(MAX_FIELDS + 1))
                .map(|k| chars(&format!("{:0width$}", a + dir * k as i64)))
                .collect(),
        );
    }
    let (mut a, mut b) = (from.chars(), to.chars());
    let (Some(a), None, Some(b), None) = (a.next(), a.next(), b.next(), b.next()) else {
        return None;
    };
    if !a.is_ascii_alphabetic() || !b.is_ascii_alphabetic() {
        return None;
    }
    let range: Vec<char> = if a <= b {
        (a..=b).collect()
    } else {
        (b..=a).rev().collect()
    };
    Some(
        range
            .into_iter()
            .step_by(usize::try_from(step).unwrap_or(1))
            .map(|c| chars(&c.to_string()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::lex::{lex, Token};
    use super::*;
    use proptest::prelude::*;

    fn words_of(script: &str, scope: &Scope) -> Vec<String> {
        let mut out = Vec::new();
        for t in lex(script).unwrap() {
            if let Token::Word(w) = t {
                let mut run = |_: &str| Stream::Unknown("x".into());
                out.extend(expand(&w, scope, &mut run).into_iter().map(|w| w.text));
            }
        }
        out
    }

    #[test]
    fn variables_split_and_quoting() {
        let mut scope = Scope::at(Some("/p".into()));
        scope.vars.insert("f".into(), Value::Text("a b".into()));
        scope.vars.insert(
            "g".into(),
            Value::Fields(vec![Word::literal("x"), Word::literal("y")]),
        );
        assert_eq!(
            words_of(
                "$f \"$f\" pre$f.post ${f} $g ${nope_x9:-d} \"$PWD\"",
                &scope
            ),
            ["a", "b", "a b", "prea", "b.post", "a", "b", "x", "y", "d", "/p"]
        );
        let mut run = |_: &str| Stream::Unknown("x".into());
        let Token::Word(w) = &lex("x/$nope_y7/z").unwrap()[0] else {
            panic!()
        };
        let word = &expand(w, &scope, &mut run)[0];
        assert_eq!(word.text, "x/${nope_y7}/z");
        assert_eq!(word.unknown_at, Some(2));
    }

    #[test]
    fn braces_expand_in_order() {
        let scope = Scope::default();
        assert_eq!(
            words_of("a{b,c{d,e}}f {1..3} {c..a} x{,y} '{a,b}' {a}", &scope),
            ["abf", "acdf", "acef", "1", "2", "3", "c", "b", "a", "x", "xy", "{a,b}", "{a}"]
        );
        assert_eq!(words_of("{08..10}", &scope), ["08", "09", "10"]);
        // A bomb is cut, and says so.
        let bomb = "{a,b}".repeat(20);
        let got = words_of(&bomb, &scope);
        assert!(got.len() <= MAX_FIELDS + 2, "{}", got.len());
        assert_eq!(got.last().map(String::as_str), Some("{…}"));
    }

    /// The naive oracle of brace expansion: the product of the lists.
    fn naive(lists: &[Vec<String>]) -> Vec<String> {
        let mut acc = vec![String::new()];
        for list in lists {
            acc = acc
                .iter()
                .flat_map(|a| list.iter().map(move |b| format!("{a}{b}")))
                .collect();
        }
        acc
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// `p{a,b}q{c,d}…` expands to the product of its lists, in order.
        #[test]
        fn brace_expansion_is_the_product_of_its_lists(
            lists in proptest::collection::vec(
                proptest::collection::vec("[a-z0-9._/]{0,3}", 1..4), 1..4)
        ) {
            let mut script = String::new();
            let mut oracle_lists = Vec::new();
            for (k, list) in lists.iter().enumerate() {
                script.push_str(&format!("p{k}"));
                oracle_lists.push(vec![format!("p{k}")]);
                if list.len() > 1 {
                    script.push_str(&format!("{{{}}}", list.join(",")));
                    oracle_lists.push(list.clone());
                } else {
                    script.push_str(&list[0]);
                    oracle_lists.push(list.clone());
                }
            }
            let want: Vec<String> = naive(&oracle_lists)
                .into_iter()
                .filter(|w| !w.is_empty())
                .collect();
            prop_assert_eq!(words_of(&script, &Scope::default()), want);
        }

        /// Unquoted, a value splits at blanks as `split_whitespace` does;
        /// quoted, it is one word.
        #[test]
        fn field_splitting_matches_split_whitespace(value in "[a-z \t\n]{0,12}") {
            let mut scope = Scope::default();
            scope.vars.insert("v".into(), Value::Text(value.clone()));
            let want: Vec<String> = value.split_whitespace().map(String::from).collect();
            prop_assert_eq!(words_of("$v", &scope), want);
            prop_assert_eq!(words_of("\"$v\"", &scope), vec![value.clone()]);
        }
    }
}
