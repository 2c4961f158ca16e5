//! One family's rules compiled for one call: its own rules, those of the
//! families it includes, then the `common` family's, as one [`Matcher`].
//! Only the family the call needs is compiled, so a call pays for its few
//! dozen patterns, not the whole table.

use regex::bytes::Regex;
#[cfg(test)]
use regex::bytes::RegexSetBuilder;

use super::needles::NeedleMatcher;

use super::table::{FilterTable, Is, Rule, Source, TableError, COMMON, DEFAULT_CONTEXT};

/// The most memory one compiled set may take: far above what the table's
/// patterns need, low enough that a pathological user pattern is refused
/// with a message instead of slowing every call.
pub(super) const SIZE_LIMIT: usize = 16 << 20;

/// Labels every family has: lines equal to an earlier one, and runs of
/// lines that differ only in their numbers and ids.
pub const REPEATED: &str = "repeated lines";
pub const SIMILAR: &str = "similar lines";

/// A rule as the classifier applies it.
#[derive(Clone, Debug)]
pub struct CompiledRule {
    pub is: Is,
    /// For a collapse: its label's index in [`Classifier::labels`].
    pub label: Option<usize>,
    pub after: u32,
    pub next: Option<Is>,
    pub run: Option<Is>,
    /// The line that ends the region this rule's line starts.
    pub through: Option<Regex>,
    /// The lines that continue this rule's line.
    pub continued: Option<Regex>,
    /// Strings one of which every line it matches holds (see
    /// [`super::needles`]).
    pub needles: Option<Vec<String>>,
    pub pattern: String,
    /// The family it was written in, and where.
    pub family: String,
    pub source: Source,
}

/// A family, compiled.
#[derive(Debug)]
pub struct Classifier {
    pub family: String,
    set: NeedleMatcher,
    pub rules: Vec<CompiledRule>,
    /// Collapse labels: [`REPEATED`], [`SIMILAR`], then the rules' own in
    /// the order they first appear.
    pub labels: Vec<String>,
    /// The family's `context`: the most characters of context a view keeps.
    pub context: usize,
    /// The family's `whole`: its output is left whole when the client
    /// would show it whole.
    pub whole: bool,
    /// The family's `templates`: similar signals collapse.
    pub templates: bool,
}

impl Classifier {
    /// Compiles `family` of `table` (its includes and `common` after it).
    pub fn new(table: &FilterTable, family: &str) -> Result<Classifier, TableError> {
        let mut order: Vec<&str> = Vec::new();
        collect(table, family, &mut order)?;
        if !order.contains(&COMMON) && table.family(COMMON).is_some() {
            order.push(COMMON);
        }
        let mut labels = vec![REPEATED.to_string(), SIMILAR.to_string()];
        let mut rules = Vec::new();
        for name in order {
            let f = table.family(name).expect("collected names exist");
            for rule in &f.rules {
                rules.push(compile_rule(rule, name, &mut labels)?);
            }
        }
        let set = NeedleMatcher::new(
            rules
                .iter()
                .map(|r| (r.pattern.as_str(), r.needles.as_deref())),
        )
        .map_err(|(i, e)| blame(&rules[i..=i], e))?;
        Ok(Classifier {
            family: family.to_string(),
            set,
            rules,
            labels,
            context: table
                .family(family)
                .and_then(|f| f.context)
                .unwrap_or(DEFAULT_CONTEXT),
            whole: table.family(family).and_then(|f| f.whole).unwrap_or(false),
            templates: table
                .family(family)
                .and_then(|f| f.templates)
                .unwrap_or(false),
        })
    }

    /// The first rule that matches `line` (no line end), by index.
    pub fn rule_for(&self, line: &[u8]) -> Option<usize> {
        self.set.first(line)
    }

    /// What the family makes of `line` on its own (no rule before it asked
    /// for the next line): what an example is checked against.
    pub fn classify_alone(&self, line: &str) -> (Is, Option<usize>) {
        match self.rule_for(line.as_bytes()) {
            Some(i) => (self.rules[i].is.clone(), Some(i)),
            None => (Is::Context, None),
        }
    }
}

fn compile_rule(
    rule: &Rule,
    family: &str,
    labels: &mut Vec<String>,
) -> Result<CompiledRule, TableError> {
    let mut slot = |is: &Is| match is {
        Is::Collapse(l) => Some(match labels.iter().position(|x| x == l) {
            Some(i) => i,
            None => {
                labels.push(l.clone());
                labels.len() - 1
            }
        }),
        _ => None,
    };
    let label = slot(&rule.is);
    for also in [&rule.next, &rule.run].into_iter().flatten() {
        slot(also);
    }
    let region = |pattern: &Option<String>, key: &str| match pattern {
        Some(p) => build_one(p).map(Some).map_err(|e| TableError {
            file: rule.source.file.clone(),
            key: format!("{}.{key}", rule.source.key),
            why: one_line(p, &e),
        }),
        None => Ok(None),
    };
    let through = region(&rule.through, "through")?;
    let continued = region(&rule.continued, "continued")?;
    Ok(CompiledRule {
        is: rule.is.clone(),
        label,
        after: rule.after,
        next: rule.next.clone(),
        run: rule.run.clone(),
        through,
        continued,
        needles: rule.needles.clone(),
        pattern: rule.pattern.clone(),
        family: family.to_string(),
        source: rule.source.clone(),
    })
}

/// The family and those it includes, depth first, each once.
fn collect<'t>(
    table: &'t FilterTable,
    name: &str,
    order: &mut Vec<&'t str>,
) -> Result<(), TableError> {
    let Some(family) = table.family(name) else {
        return Err(TableError {
            file: None,
            key: "filters".into(),
            why: format!("no family named {name:?}"),
        });
    };
    if order.contains(&family.name.as_str()) {
        return Ok(());
    }
    order.push(&family.name);
    for (j, inc) in family.include.iter().enumerate() {
        if table.family(inc).is_none() {
            return Err(TableError {
                file: family.source.file.clone(),
                key: format!("{}.include[{j}]", family.source.key),
                why: format!("no family named {inc:?}"),
            });
        }
        collect(table, inc, order)?;
    }
    Ok(())
}

/// The set failed to build: find the pattern at fault and name its key.
fn blame(rules: &[CompiledRule], e: regex::Error) -> TableError {
    for rule in rules {
        if let Err(why) = check_pattern(&rule.pattern) {
            return TableError {
                file: rule.source.file.clone(),
                key: format!("{}.match", rule.source.key),
                why,
            };
        }
    }
    TableError {
        file: None,
        key: "filters".into(),
        why: format!("the rules together are too large to compile: {e}"),
    }
}

/// A pattern in ASCII mode (`\\w`, `\\d`, `\\s`, `\\b` and case folding
/// ASCII only) when it can be: compiling Unicode classes costs several times
/// more, and output is matched for its ASCII structure. A pattern with a
/// non-ASCII character inside a class (`[━█]`) stays in Unicode mode, where
/// such a class means what it says.
pub fn ascii(pattern: &str) -> std::borrow::Cow<'_, str> {
    let mut in_class = false;
    let mut escaped = false;
    for c in pattern.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '[' => in_class = true,
            ']' => in_class = false,
            _ if in_class && !c.is_ascii() => return pattern.into(),
            _ => {}
        }
    }
    format!("(?-u){pattern}").into()
}

/// One pattern, in ASCII mode when it can be ([`ascii`]).
pub(super) fn build_one(pattern: &str) -> Result<Regex, regex::Error> {
    let build = |p: &str| {
        regex::bytes::RegexBuilder::new(p)
            .size_limit(SIZE_LIMIT)
            .build()
    };
    build(&ascii(pattern)).or_else(|_| build(pattern))
}

/// Whether one pattern compiles (within the size limit), in one line.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    build_one(pattern)
        .map(|_| ())
        .map_err(|e| one_line(pattern, &e))
}

fn one_line(pattern: &str, e: &regex::Error) -> String {
    let e = e.to_string();
    let last = e.lines().last().unwrap_or_default().trim().to_string();
    format!("not a valid regular expression {pattern:?}: {last}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reduce::table::{parse_families, SignalKind, GENERIC};

    #[test]
    fn a_family_tries_its_own_rules_then_its_includes_then_common() {
        let table = FilterTable::built_in();
        let c = Classifier::new(&table, "tests").unwrap();
        let families: Vec<&str> = c.rules.iter().map(|r| r.family.as_str()).collect();
        let first = |name| families.iter().position(|f| *f == name).unwrap();
        assert!(first("tests") < first("builds") && first("builds") < first(COMMON));
        assert_eq!(
            c.classify_alone("test a::b ... ok").0,
            Is::Collapse("passing tests".into())
        );
        assert_eq!(
            c.classify_alone("error[E0308]: mismatched types").0,
            Is::Signal(SignalKind::Error)
        );
        assert_eq!(c.classify_alone("just some words").0, Is::Context);
        let g = Classifier::new(&table, GENERIC).unwrap();
        assert_eq!(
            g.classify_alone("thread 'main' panicked at src/main.rs:2:5:")
                .0,
            Is::Signal(SignalKind::Panic),
            "generic tries common's precise rules before the keywords catch-all"
        );
        assert_eq!(
            g.classify_alone("upload failed: connection reset").0,
            Is::Signal(SignalKind::Error)
        );
        assert_eq!(c.labels[..2], [REPEATED, SIMILAR]);
    }

    #[test]
    fn patterns_are_ascii_unless_a_class_holds_more() {
        assert_eq!(ascii(r"^\s*error\b"), r"(?-u)^\s*error\b");
        assert_eq!(ascii("^\\s*(PASS|✓) "), "(?-u)^\\s*(PASS|✓) ");
        assert_eq!(ascii("^[━█ ]{8}"), "^[━█ ]{8}");
        assert_eq!(
            ascii(r"^\[━ \]"),
            "(?-u)^\\[━ \\]",
            "escaped brackets are no class"
        );
        let set = RegexSetBuilder::new([ascii("^(PASS|✓) "), ascii(r"^\w+ é$")])
            .build()
            .unwrap();
        assert!(set.is_match("✓ parses".as_bytes()));
        assert!(set.is_match("abc é".as_bytes()));
        assert!(!set.is_match("ébc é".as_bytes()), "ASCII \\w");
    }

    #[test]
    fn a_bad_pattern_is_named_by_its_key() {
        let doc =
            "[[filters]]\nname = \"x\"\n[[filters.rules]]\nmatch = \"^(open\"\nis = \"context\"";
        let user = parse_families(
            &doc.parse().unwrap(),
            Some(std::path::Path::new("jkz.toml")),
        )
        .unwrap();
        let table = FilterTable::built_in().with_user(user);
        let e = Classifier::new(&table, "x").unwrap_err();
        assert_eq!(e.key, "filters[0].rules[0].match", "{e}");
        assert!(
            e.to_string().contains("not a valid regular expression"),
            "{e}"
        );
    }
}
