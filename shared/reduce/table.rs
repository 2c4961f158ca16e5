//! The filter table: which families of commands there are, how each is
//! recognized, and the rules that classify its lines. Rules are data: the
//! built-in table is `filters.toml` beside this file, and a project adds or
//! overrides families in its `jkz.toml` with the same schema (see
//! [`super::user_filters`]).
//!
//! A family whose name is new is tried before the built-in ones; one whose
//! name is taken merges with it: its rules come before the built-in rules,
//! its commands and sniff patterns before theirs, and its `include` and
//! `description`, when given, replace theirs.

use std::fmt;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

/// The built-in table.
pub const BUILT_IN: &str = include_str!("filters.toml");

/// The family whose rules end every family's.
pub const COMMON: &str = "common";
/// The family used when neither the command nor the output names one.
pub const GENERIC: &str = "generic";

/// The longest `after` a rule may ask for: a compiler's snippet, a few
/// frames, not a page.
pub const MAX_AFTER: u32 = 50;

/// The most lines a `through` region holds after its first: a conflict
/// region, a stack, not a file. Past it the region ends.
pub const MAX_THROUGH: u32 = 400;

/// The most characters of context a family's view keeps when it says
/// nothing (`context`): a few lines after its signals, a short head and
/// tail.
pub const DEFAULT_CONTEXT: usize = 600;

/// What a signal line is. The order is the order of the counts in a gap
/// line (`3 error lines, 1 warning line not shown`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SignalKind {
    Error,
    Failure,
    Panic,
    Warning,
    Traceback,
    Anchor,
    Exit,
    Summary,
    Id,
    /// A line of a protected block (the grammar of [`crate::blocks`]);
    /// never named by a rule.
    Block,
}

impl SignalKind {
    pub const ALL: [SignalKind; 10] = [
        SignalKind::Error,
        SignalKind::Failure,
        SignalKind::Panic,
        SignalKind::Warning,
        SignalKind::Traceback,
        SignalKind::Anchor,
        SignalKind::Exit,
        SignalKind::Summary,
        SignalKind::Id,
        SignalKind::Block,
    ];

    /// Its name after `signal:` in a rule.
    pub fn name(self) -> &'static str {
        match self {
            SignalKind::Error => "error",
            SignalKind::Failure => "failure",
            SignalKind::Panic => "panic",
            SignalKind::Warning => "warning",
            SignalKind::Traceback => "traceback",
            SignalKind::Anchor => "anchor",
            SignalKind::Exit => "exit",
            SignalKind::Summary => "summary",
            SignalKind::Id => "id",
            SignalKind::Block => "block",
        }
    }

    /// What its lines are called in a gap line, plural.
    pub fn lines(self) -> &'static str {
        match self {
            SignalKind::Error => "error lines",
            SignalKind::Failure => "failure lines",
            SignalKind::Panic => "assertion or panic lines",
            SignalKind::Warning => "warning lines",
            SignalKind::Traceback => "traceback lines",
            SignalKind::Anchor => "location lines",
            SignalKind::Exit => "exit status lines",
            SignalKind::Summary => "summary lines",
            SignalKind::Id => "identifier lines",
            SignalKind::Block => "protected-block lines",
        }
    }

    fn from_rule_name(name: &str) -> Option<SignalKind> {
        SignalKind::ALL
            .into_iter()
            .filter(|k| *k != SignalKind::Block)
            .find(|k| k.name() == name)
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// What a rule makes of a line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Is {
    /// Never dropped.
    Signal(SignalKind),
    /// Counted, not shown; the label is plural ("passing tests").
    Collapse(String),
    /// Shown as the budget allows.
    Context,
}

impl Is {
    /// `signal:KIND`, `collapse:LABEL` or `context`.
    pub fn parse(text: &str) -> Result<Is, String> {
        let kinds = || {
            SignalKind::ALL[..9]
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if text == "context" {
            return Ok(Is::Context);
        }
        if let Some(kind) = text.strip_prefix("signal:") {
            return SignalKind::from_rule_name(kind)
                .map(Is::Signal)
                .ok_or_else(|| {
                    format!("unknown signal kind {kind:?}: expected one of {}", kinds())
                });
        }
        if let Some(label) = text.strip_prefix("collapse:") {
            let ok = !label.is_empty()
                && label.len() <= 40
                && label == label.trim()
                && label.chars().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, ' ' | '-')
                });
            return if ok {
                Ok(Is::Collapse(label.to_string()))
            } else {
                Err(format!(
                    "collapse label {label:?}: expected 1 to 40 lower-case letters, digits, spaces or hyphens, plural (\"download lines\")"
                ))
            };
        }
        Err(format!(
            "{text:?}: expected signal:KIND ({}), collapse:LABEL or context",
            kinds()
        ))
    }
}

impl fmt::Display for Is {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Is::Signal(k) => write!(f, "signal:{}", k.name()),
            Is::Collapse(label) => write!(f, "collapse:{label}"),
            Is::Context => f.write_str("context"),
        }
    }
}

/// Where a family or rule was written: the file (`None`: built in) and its
/// key in it (`filters[2].rules[0]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub file: Option<PathBuf>,
    pub key: String,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}: {}", file.display(), self.key),
            None => write!(f, "built-in {}", self.key),
        }
    }
}

/// A line and what its family must make of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Example {
    pub line: String,
    pub is: Is,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// A regular expression (the `regex` crate's syntax), matched against
    /// each line without its line end.
    pub pattern: String,
    pub is: Is,
    /// For a signal: how many lines after it are its context.
    pub after: u32,
    /// What the next non-blank line is, unless a rule makes it a signal.
    pub next: Option<Is>,
    /// What a line this rule matches is when the line before it matched
    /// this rule too (the first `E` line of a pytest failure is its
    /// assertion; the diff below it is context).
    pub run: Option<Is>,
    /// A regular expression: the lines after this one, up to and including
    /// the first that matches it (at most [`MAX_THROUGH`]), are what this
    /// line is, whatever other rules say (a conflict region).
    pub through: Option<String>,
    /// A regular expression: the lines right after this one that match
    /// it (at most [`MAX_THROUGH`]) are what this line is (a message's
    /// continuation lines, indented by a tab).
    pub continued: Option<String>,
    pub examples: Vec<Example>,
    pub source: Source,
    /// Strings one of which every line the rule matches contains, read
    /// from the pattern when the built-in table is compiled (`None`: not
    /// known, as for a project's rules): the rule is compiled and tried only
    /// on lines that hold one.
    pub needles: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Family {
    pub name: String,
    pub description: String,
    /// The words a command starts with (`cargo test`, `pytest`).
    pub commands: Vec<String>,
    /// Regular expressions: lines that say an output is of this family.
    pub sniff: Vec<String>,
    /// Families whose rules follow this one's.
    pub include: Vec<String>,
    /// The most client characters of context (lines that are neither
    /// signals nor collapsed) its view keeps; `None`: [`DEFAULT_CONTEXT`].
    pub context: Option<usize>,
    /// Its output is what was asked for (a listing, a diff): left whole
    /// whenever the client would show it whole, reduced only past that
    /// (`None`: not said, false).
    pub whole: Option<bool>,
    /// Its signal lines are messages of a few templates (a log): a signal
    /// of the shape of an earlier one (numbers and ids blanked) that names
    /// no new quoted string or path collapses into it as a similar line.
    pub templates: Option<bool>,
    pub rules: Vec<Rule>,
    pub source: Source,
}

/// Every family, in the order commands are matched against them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterTable {
    pub families: Vec<Family>,
}

/// A table that cannot be used: where, which key, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableError {
    pub file: Option<PathBuf>,
    pub key: String,
    pub why: String,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}: ", file.display())?,
            None => f.write_str("built-in filters: ")?,
        }
        if !self.key.is_empty() {
            write!(f, "{}: ", self.key)?;
        }
        f.write_str(&self.why)
    }
}

impl std::error::Error for TableError {}

impl FilterTable {
    /// The built-in table, parsed from `filters.toml` (the build compiles
    /// it once: `super::built_in`).
    pub fn parse_built_in() -> Result<FilterTable, TableError> {
        let table: Table = BUILT_IN.parse().map_err(|e| TableError {
            file: None,
            key: String::new(),
            why: format!("not TOML: {e}"),
        })?;
        Ok(FilterTable {
            families: parse_families(&table, None)?,
        })
    }

    pub fn family(&self, name: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.name == name)
    }

    /// This table with a project's families merged in (see the module docs).
    pub fn with_user(mut self, user: Vec<Family>) -> FilterTable {
        let mut added = Vec::new();
        for family in user {
            match self.families.iter_mut().find(|f| f.name == family.name) {
                Some(ours) => {
                    let mut rules = family.rules;
                    rules.append(&mut ours.rules);
                    ours.rules = rules;
                    let mut commands = family.commands;
                    commands.append(&mut ours.commands);
                    ours.commands = commands;
                    let mut sniff = family.sniff;
                    sniff.append(&mut ours.sniff);
                    ours.sniff = sniff;
                    if !family.include.is_empty() {
                        ours.include = family.include;
                    }
                    if !family.description.is_empty() {
                        ours.description = family.description;
                    }
                    if family.context.is_some() {
                        ours.context = family.context;
                    }
                    if family.whole.is_some() {
                        ours.whole = family.whole;
                    }
                    if family.templates.is_some() {
                        ours.templates = family.templates;
                    }
                    ours.source = family.source;
                }
                None => added.push(family),
            }
        }
        added.append(&mut self.families);
        self.families = added;
        self
    }
}

/// The `[[filters]]` of a parsed TOML document (`file`: where it was read;
/// `None` for the built-in table). Other top-level keys are not looked at:
/// `jkz.toml` holds other settings too.
pub fn parse_families(doc: &Table, file: Option<&Path>) -> Result<Vec<Family>, TableError> {
    let error = |key: String, why: String| TableError {
        file: file.map(Path::to_path_buf),
        key,
        why,
    };
    let Some(filters) = doc.get("filters") else {
        return Ok(Vec::new());
    };
    let Value::Array(filters) = filters else {
        return Err(error(
            "filters".into(),
            format!(
                "expected an array of tables ([[filters]]), found {}",
                filters.type_str()
            ),
        ));
    };
    let mut families: Vec<Family> = Vec::new();
    for (i, value) in filters.iter().enumerate() {
        let key = format!("filters[{i}]");
        let family = parse_family(value, &key, file).map_err(|(k, why)| error(k, why))?;
        if families.iter().any(|f| f.name == family.name) {
            return Err(error(
                format!("{key}.name"),
                format!("family {:?} is declared twice", family.name),
            ));
        }
        families.push(family);
    }
    let names: Vec<&str> = families.iter().map(|f| f.name.as_str()).collect();
    for family in &families {
        for (j, inc) in family.include.iter().enumerate() {
            // A project may include a built-in family: checked once merged.
            if file.is_none() && !names.contains(&inc.as_str()) {
                return Err(error(
                    format!("{}.include[{j}]", family.source.key),
                    format!("no family named {inc:?}"),
                ));
            }
        }
    }
    Ok(families)
}

type KeyError = (String, String);

fn parse_family(value: &Value, key: &str, file: Option<&Path>) -> Result<Family, KeyError> {
    let Value::Table(t) = value else {
        return Err((
            key.to_string(),
            format!("expected a table, found {}", value.type_str()),
        ));
    };
    let mut family = Family {
        name: String::new(),
        description: String::new(),
        commands: Vec::new(),
        sniff: Vec::new(),
        include: Vec::new(),
        context: None,
        whole: None,
        templates: None,
        rules: Vec::new(),
        source: Source {
            file: file.map(Path::to_path_buf),
            key: key.to_string(),
        },
    };
    for (k, v) in t {
        let name = format!("{key}.{k}");
        match k.as_str() {
            "name" => family.name = string(v, &name)?.to_string(),
            "description" => family.description = string(v, &name)?.to_string(),
            "commands" => family.commands = strings(v, &name)?,
            "sniff" => family.sniff = strings(v, &name)?,
            "include" => family.include = strings(v, &name)?,
            "context" => match v {
                Value::Integer(n) if *n >= 0 => family.context = Some(*n as usize),
                other => {
                    return Err((
                        name,
                        format!(
                            "expected a number of characters (0 or more), found {}",
                            other.type_str()
                        ),
                    ))
                }
            },
            "whole" => family.whole = Some(boolean(v, &name)?),
            "templates" => family.templates = Some(boolean(v, &name)?),
            "rules" => {
                let Value::Array(rules) = v else {
                    return Err((
                        name,
                        format!(
                            "expected an array of tables ([[filters.rules]]), found {}",
                            v.type_str()
                        ),
                    ));
                };
                for (j, rule) in rules.iter().enumerate() {
                    family
                        .rules
                        .push(parse_rule(rule, &format!("{name}[{j}]"), file)?);
                }
            }
            _ => {
                return Err((
                    name,
                    "unknown key: expected name, description, commands, sniff, include, context, whole, templates or rules"
                        .into(),
                ))
            }
        }
    }
    let valid_name = !family.name.is_empty()
        && family
            .name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid_name {
        return Err((
            format!("{key}.name"),
            format!(
                "{:?}: expected a name of lower-case letters, digits and hyphens (\"my-tool\")",
                family.name
            ),
        ));
    }
    for (j, words) in family.commands.iter().enumerate() {
        if words.split_whitespace().next().is_none() {
            return Err((
                format!("{key}.commands[{j}]"),
                "expected the words a command starts with (\"cargo test\"), found nothing".into(),
            ));
        }
    }
    Ok(family)
}

fn parse_rule(value: &Value, key: &str, file: Option<&Path>) -> Result<Rule, KeyError> {
    let Value::Table(t) = value else {
        return Err((
            key.to_string(),
            format!("expected a table, found {}", value.type_str()),
        ));
    };
    let mut pattern = None;
    let mut is = None;
    let mut rule_after = 0;
    let mut next = None;
    let mut run = None;
    let mut through = None;
    let mut continued = None;
    let mut examples = Vec::new();
    for (k, v) in t {
        let name = format!("{key}.{k}");
        match k.as_str() {
            "match" => pattern = Some(string(v, &name)?.to_string()),
            "is" => is = Some(Is::parse(string(v, &name)?).map_err(|why| (name, why))?),
            "after" => rule_after = after(v, &name)?,
            "next" => next = Some(Is::parse(string(v, &name)?).map_err(|why| (name, why))?),
            "run" => run = Some(Is::parse(string(v, &name)?).map_err(|why| (name, why))?),
            "through" => through = Some(string(v, &name)?.to_string()),
            "continued" => continued = Some(string(v, &name)?.to_string()),
            "examples" => {
                let Value::Array(list) = v else {
                    return Err((
                        name,
                        format!(
                            "expected an array of {{ line = \"…\", is = \"…\" }}, found {}",
                            v.type_str()
                        ),
                    ));
                };
                for (j, ex) in list.iter().enumerate() {
                    examples.push(parse_example(ex, &format!("{name}[{j}]"))?);
                }
            }
            _ => return Err((
                name,
                "unknown key: expected match, is, after, next, run, through, continued or examples"
                    .into(),
            )),
        }
    }
    let pattern = pattern.ok_or_else(|| {
        (
            format!("{key}.match"),
            "missing: every rule needs a regular expression to match".into(),
        )
    })?;
    let is = is.ok_or_else(|| {
        (
            format!("{key}.is"),
            "missing: expected signal:KIND, collapse:LABEL or context".into(),
        )
    })?;
    Ok(Rule {
        pattern,
        is,
        after: rule_after,
        next,
        run,
        through,
        continued,
        examples,
        source: Source {
            file: file.map(Path::to_path_buf),
            key: key.to_string(),
        },
        needles: None,
    })
}

fn parse_example(value: &Value, key: &str) -> Result<Example, KeyError> {
    let Value::Table(t) = value else {
        return Err((
            key.to_string(),
            format!(
                "expected {{ line = \"…\", is = \"…\" }}, found {}",
                value.type_str()
            ),
        ));
    };
    let mut line = None;
    let mut is = None;
    for (k, v) in t {
        let name = format!("{key}.{k}");
        match k.as_str() {
            "line" => line = Some(string(v, &name)?.to_string()),
            "is" => is = Some(Is::parse(string(v, &name)?).map_err(|why| (name, why))?),
            _ => return Err((name, "unknown key: expected line or is".into())),
        }
    }
    match (line, is) {
        (Some(line), Some(is)) if !line.contains('\n') => Ok(Example { line, is }),
        (Some(_), Some(_)) => Err((
            format!("{key}.line"),
            "an example is one line: no newline".into(),
        )),
        (None, _) => Err((format!("{key}.line"), "missing".into())),
        (_, None) => Err((format!("{key}.is"), "missing".into())),
    }
}

fn string<'a>(value: &'a Value, name: &str) -> Result<&'a str, KeyError> {
    value.as_str().ok_or_else(|| {
        (
            name.to_string(),
            format!("expected a string, found {}", value.type_str()),
        )
    })
}

fn boolean(value: &Value, name: &str) -> Result<bool, KeyError> {
    value.as_bool().ok_or_else(|| {
        (
            name.to_string(),
            format!("expected true or false, found {}", value.type_str()),
        )
    })
}

fn strings(value: &Value, name: &str) -> Result<Vec<String>, KeyError> {
    let Value::Array(list) = value else {
        return Err((
            name.to_string(),
            format!("expected an array of strings, found {}", value.type_str()),
        ));
    };
    list.iter()
        .enumerate()
        .map(|(i, v)| string(v, &format!("{name}[{i}]")).map(str::to_string))
        .collect()
}

fn after(value: &Value, name: &str) -> Result<u32, KeyError> {
    match value {
        Value::Integer(n) if (0..=i64::from(MAX_AFTER)).contains(n) => Ok(*n as u32),
        other => {
            let found = match other {
                Value::Integer(n) => n.to_string(),
                v => v.type_str().to_string(),
            };
            Err((
                name.to_string(),
                format!("expected a number of lines from 0 to {MAX_AFTER}, found {found}"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Vec<Family>, TableError> {
        parse_families(&text.parse::<Table>().unwrap(), Some(Path::new("jkz.toml")))
    }

    #[test]
    fn the_built_in_table_parses_with_its_fallbacks() {
        let table = FilterTable::built_in();
        for name in [
            COMMON, GENERIC, "tests", "builds", "installs", "git", "git-diff", "git-log",
            "listings", "logs",
        ] {
            assert!(table.family(name).is_some(), "{name}");
        }
        assert!(table
            .families
            .iter()
            .all(|f| !f.rules.is_empty() || !f.include.is_empty()));
        assert!(table
            .families
            .iter()
            .flat_map(|f| &f.rules)
            .all(|r| !r.examples.is_empty()));
    }

    #[test]
    fn is_parses_its_three_forms_and_names_what_is_wrong() {
        assert_eq!(Is::parse("signal:error"), Ok(Is::Signal(SignalKind::Error)));
        assert_eq!(
            Is::parse("collapse:passing tests"),
            Ok(Is::Collapse("passing tests".into()))
        );
        assert_eq!(Is::parse("context"), Ok(Is::Context));
        for bad in [
            "signal:block",
            "signal:oops",
            "collapse:",
            "collapse:Lines",
            "kept",
        ] {
            assert!(Is::parse(bad).is_err(), "{bad}");
        }
        for is in ["signal:id", "collapse:download lines", "context"] {
            assert_eq!(Is::parse(is).unwrap().to_string(), is);
        }
    }

    #[test]
    fn each_bad_key_is_named() {
        for (text, key) in [
            ("filters = 3", "filters"),
            ("[[filters]]\nname = \"x\"\ncomands = []", "filters[0].comands"),
            ("[[filters]]\nname = \"X y\"", "filters[0].name"),
            ("[[filters]]\ndescription = \"no name\"", "filters[0].name"),
            (
                "[[filters]]\nname = \"x\"\n[[filters.rules]]\nmach = \"a\"\nis = \"context\"",
                "filters[0].rules[0].mach",
            ),
            (
                "[[filters]]\nname = \"x\"\n[[filters.rules]]\nis = \"context\"",
                "filters[0].rules[0].match",
            ),
            (
                "[[filters]]\nname = \"x\"\n[[filters.rules]]\nmatch = \"a\"\nis = \"signal:nope\"",
                "filters[0].rules[0].is",
            ),
            (
                "[[filters]]\nname = \"x\"\n[[filters.rules]]\nmatch = \"a\"\nis = \"context\"\nafter = 99",
                "filters[0].rules[0].after",
            ),
            (
                "[[filters]]\nname = \"x\"\n[[filters.rules]]\nmatch = \"a\"\nis = \"context\"\nexamples = [{ line = \"a\", si = \"context\" }]",
                "filters[0].rules[0].examples[0].si",
            ),
            ("[[filters]]\nname = \"x\"\n[[filters]]\nname = \"x\"", "filters[1].name"),
            ("[[filters]]\nname = \"x\"\ncommands = [\"  \"]", "filters[0].commands[0]"),
        ] {
            let e = parsed(text).unwrap_err();
            assert_eq!(e.key, key, "{text}: {e}");
            assert!(e.to_string().starts_with("jkz.toml: "), "{e}");
        }
        assert_eq!(parsed("[slo]\nwindow = \"7d\"").unwrap(), vec![]);
    }

    #[test]
    fn a_project_family_merges_with_a_built_in_one_or_comes_first() {
        let user = parsed(
            "[[filters]]\nname = \"tests\"\ncommands = [\"bazel test\"]\n[[filters.rules]]\nmatch = \"^MINE\"\nis = \"signal:error\"\n\
             [[filters]]\nname = \"deploy\"\ncommands = [\"./deploy.sh\"]\n[[filters.rules]]\nmatch = \"^step\"\nis = \"collapse:steps\"",
        )
        .unwrap();
        let built_in = FilterTable::built_in();
        let table = built_in.clone().with_user(user);
        assert_eq!(table.families[0].name, "deploy");
        let tests = table.family("tests").unwrap();
        assert_eq!(tests.rules[0].pattern, "^MINE");
        assert_eq!(
            tests.rules.len(),
            built_in.family("tests").unwrap().rules.len() + 1
        );
        assert_eq!(tests.commands[0], "bazel test");
        assert_eq!(tests.include, ["builds"], "kept when not given");
        assert_eq!(table.families.len(), built_in.families.len() + 1);
    }
}
