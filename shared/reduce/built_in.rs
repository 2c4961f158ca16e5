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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_table_is_filters_toml() {
        assert_eq!(
            FilterTable::built_in(),
            FilterTable::parse_built_in().unwrap()
        );
        assert!(FilterTable::built_in().families.len() >= 10);
    }
}
