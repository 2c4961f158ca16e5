//! The built-in filter table as the build compiled it from `filters.toml`
//! (`build.rs`, with the parser of [`super::table`]): the same families and
//! rules, without parsing TOML on every call.

use std::path::PathBuf;

use super::table::{Example, Family, FilterTable, Is, Rule, SignalKind, Source};

include!(concat!(env!("OUT_DIR"), "/filters.rs"));

impl FilterTable {
    /// The built-in table.
    pub fn built_in() -> FilterTable {
        FilterTable {
            families: built_in_families(),
        }
    }
}

fn source(key: &str) -> Source {
    Source {
        file: None::<PathBuf>,
        key: key.to_string(),
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[allow(clippy::too_many_arguments)]
fn family(
    name: &str,
    description: &str,
    commands: &[&str],
    sniff: &[&str],
    include: &[&str],
    context: Option<usize>,
    whole: Option<bool>,
    templates: Option<bool>,
    key: &str,
    rules: Vec<Rule>,
) -> Family {
    Family {
        name: name.to_string(),
        description: description.to_string(),
        commands: strings(commands),
        sniff: strings(sniff),
        include: strings(include),
        context,
        whole,
        templates,
        rules,
        source: source(key),
    }
}

#[allow(clippy::too_many_arguments)]
fn rule(
    pattern: &str,
    is: Is,
    after: u32,
    next: Option<Is>,
    run: Option<Is>,
    through: Option<&str>,
    continued: Option<&str>,
    examples: Vec<(&str, Is)>,
    key: &str,
    needles: Option<&[&str]>,
) -> Rule {
    Rule {
        pattern: pattern.to_string(),
        is,
        after,
        next,
        run,
        through: through.map(str::to_string),
        continued: continued.map(str::to_string),
        examples: examples
            .into_iter()
            .map(|(line, is)| Example {
                line: line.to_string(),
                is,
            })
            .collect(),
        source: source(key),
        needles: needles.map(strings),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_table_is_filters_toml_with_needles() {
        let mut compiled = FilterTable::built_in();
        let needles = compiled
            .families
            .iter_mut()
            .flat_map(|f| &mut f.rules)
            .filter_map(|r| r.needles.take())
            .count();
        assert_eq!(compiled, FilterTable::parse_built_in().unwrap());
        assert!(compiled.families.len() >= 10);
        let rules = compiled
            .families
            .iter()
            .map(|f| f.rules.len())
            .sum::<usize>();
        assert!(
            needles * 10 >= rules * 7,
            "{needles} of {rules} rules have needles"
        );
    }

    /// A rule's needles never keep it from a line it matches: every line
    /// of the library's real outputs and of the corpus, and every example.
    #[test]
    fn a_line_a_rule_matches_holds_one_of_its_needles() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut texts: Vec<String> = Vec::new();
        for dir in [
            root.join("shared/reduce/testdata"),
            root.join("bench/fixtures"),
        ] {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let file = if path.is_dir() {
                    path.join("output.txt")
                } else {
                    path
                };
                texts.push(String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned());
            }
        }
        let mut buf = Vec::new();
        for family in FilterTable::built_in().families {
            for rule in family.rules {
                let Some(needles) = &rule.needles else {
                    continue;
                };
                let re = regex::bytes::Regex::new(&rule.pattern).unwrap();
                let examples = rule.examples.iter().map(|e| e.line.as_str());
                let lines = texts.iter().flat_map(|t| t.lines()).chain(examples);
                for line in lines {
                    let line = super::super::ansi::clean(line.as_bytes(), &mut buf);
                    if re.is_match(line) {
                        assert!(
                            needles
                                .iter()
                                .any(|n| memchr::memmem::find(line, n.as_bytes()).is_some()),
                            "{} {:?} matches {:?} without any of {needles:?}",
                            rule.source,
                            rule.pattern,
                            String::from_utf8_lossy(line)
                        );
                    }
                }
            }
        }
    }
}
