//! `jkz filters test|list`: check every rule's examples (the built-in
//! table's and the project's), or show the families and their rules.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | `test`: every example came out as it says; `list`: printed |
//! | 1 | `test`: an example did not (each is named); writing stdout failed |
//! | 2 | usage, or a filters file that cannot be used (its key is named) |

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::exit::{Failure, EXIT_FAILED, EXIT_USAGE};
use crate::state_dir::StateDir;

use super::classifier::Classifier;
use super::cmd::config_file;
use super::table::{FilterTable, Is};
use super::user_filters::table_with;

/// `jkz filters`.
#[derive(Args, Debug)]
pub struct FiltersArgs {
    #[command(subcommand)]
    pub command: FiltersCommand,
}

#[derive(Subcommand, Debug)]
pub enum FiltersCommand {
    /// Classify every rule's examples (built-in and jkz.toml's) with their
    /// family's rules; name each that comes out otherwise.
    ///
    /// Exit codes: 0 all pass, 1 one failed, 2 the file cannot be used.
    Test(FileArg),
    /// Show the families (what picks each: commands, sniff patterns) and
    /// their rules, in the order they are tried.
    List(FileArg),
}

#[derive(Args, Debug)]
pub struct FileArg {
    /// The jkz.toml whose [[filters]] join the built-in ones (default: the
    /// project's, beside the state directory).
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
}

/// Runs `jkz filters`.
pub fn run(args: &FiltersArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let (FiltersCommand::Test(f) | FiltersCommand::List(f)) = &args.command;
    let file = f.file.clone().unwrap_or_else(|| config_file(state));
    let table = table_with(&file).map_err(|e| Failure::new(EXIT_USAGE, e.to_string()))?;
    let written = |e| Failure::io(EXIT_FAILED, "writing stdout", e);
    let code = match &args.command {
        FiltersCommand::Test(_) => test(&table, out).map_err(written)?,
        FiltersCommand::List(_) => {
            list(&table, out).map_err(written)?;
            0
        }
    };
    out.flush().map_err(written)?;
    Ok(code)
}

/// One example that came out otherwise.
#[derive(Debug, PartialEq, Eq)]
pub struct Failed {
    pub family: String,
    pub rule: String,
    pub line: String,
    pub expected: Is,
    pub got: Is,
    /// The rule that decided it, if one did.
    pub by: Option<String>,
}

/// Checks every example of `table`: (examples checked, the ones that failed).
pub fn check(table: &FilterTable) -> Result<(usize, Vec<Failed>), super::table::TableError> {
    let mut checked = 0;
    let mut failed = Vec::new();
    for family in &table.families {
        if family.rules.iter().all(|r| r.examples.is_empty()) {
            continue;
        }
        let classifier = Classifier::new(table, &family.name)?;
        for rule in &family.rules {
            for ex in &rule.examples {
                checked += 1;
                let (got, by) = classifier.classify_alone(&ex.line);
                if got != ex.is {
                    failed.push(Failed {
                        family: family.name.clone(),
                        rule: rule.source.to_string(),
                        line: ex.line.clone(),
                        expected: ex.is.clone(),
                        got,
                        by: by.map(|i| {
                            let r = &classifier.rules[i];
                            format!("{} ({:?})", r.source, r.pattern)
                        }),
                    });
                }
            }
        }
    }
    Ok((checked, failed))
}

fn test(table: &FilterTable, out: &mut dyn Write) -> std::io::Result<u8> {
    let (checked, failed) = match check(table) {
        Ok(r) => r,
        Err(e) => {
            writeln!(out, "FAIL {e}")?;
            return Ok(EXIT_FAILED);
        }
    };
    for f in &failed {
        writeln!(
            out,
            "FAIL {} (family {}): {:?} is {}, expected {}{}",
            f.rule,
            f.family,
            f.line,
            f.got,
            f.expected,
            f.by.as_ref()
                .map(|b| format!(" (decided by {b})"))
                .unwrap_or_else(|| " (no rule matches it)".into()),
        )?;
    }
    let families = table.families.len();
    if failed.is_empty() {
        writeln!(out, "ok: {checked} examples in {families} families")?;
        Ok(0)
    } else {
        writeln!(out, "{} of {checked} examples failed", failed.len())?;
        Ok(EXIT_FAILED)
    }
}

fn list(table: &FilterTable, out: &mut dyn Write) -> std::io::Result<()> {
    for family in &table.families {
        writeln!(out, "{} — {}", family.name, family.description)?;
        let origin = match &family.source.file {
            Some(f) => format!("{} ({})", family.source.key, f.display()),
            None => "built in".into(),
        };
        writeln!(out, "  from: {origin}")?;
        if !family.commands.is_empty() {
            writeln!(out, "  commands: {}", family.commands.join(", "))?;
        }
        if !family.sniff.is_empty() {
            writeln!(out, "  sniff: {}", family.sniff.join("  "))?;
        }
        if !family.include.is_empty() {
            writeln!(out, "  then the rules of: {}", family.include.join(", "))?;
        }
        if let Some(context) = family.context {
            writeln!(out, "  context: at most {context} characters")?;
        }
        if family.whole == Some(true) {
            writeln!(
                out,
                "  whole: left as it is when the client would show it whole"
            )?;
        }
        if family.templates == Some(true) {
            writeln!(
                out,
                "  templates: similar signal lines collapse into the first of their shape"
            )?;
        }
        for rule in &family.rules {
            let mut extra = String::new();
            if rule.after > 0 {
                extra.push_str(&format!(" after={}", rule.after));
            }
            if let Some(next) = &rule.next {
                extra.push_str(&format!(" next={next}"));
            }
            if let Some(run) = &rule.run {
                extra.push_str(&format!(" run={run}"));
            }
            if let Some(through) = &rule.through {
                extra.push_str(&format!(" through={through}"));
            }
            if let Some(continued) = &rule.continued {
                extra.push_str(&format!(" continued={continued}"));
            }
            writeln!(out, "  {:<34} {}{extra}", rule.is.to_string(), rule.pattern)?;
        }
        writeln!(out)?;
    }
    writeln!(
        out,
        "A line takes the first rule that matches: its family's, then those of the families it includes, then common's."
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reduce::table::parse_families;

    #[test]
    fn every_built_in_example_comes_out_as_it_says() {
        let (checked, failed) = check(&FilterTable::built_in()).unwrap();
        assert!(checked > 150, "{checked}");
        assert!(failed.is_empty(), "{failed:#?}");
    }

    #[test]
    fn a_failing_example_is_named_with_the_rule_that_took_it() {
        let doc = "[[filters]]\nname = \"tests\"\n[[filters.rules]]\nmatch = \"^deploy\"\nis = \"signal:summary\"\n\
                   examples = [{ line = \"test a ... ok\", is = \"signal:summary\" }]";
        let user = parse_families(
            &doc.parse().unwrap(),
            Some(std::path::Path::new("jkz.toml")),
        )
        .unwrap();
        let table = FilterTable::built_in().with_user(user);
        let (_, failed) = check(&table).unwrap();
        assert_eq!(failed.len(), 1, "{failed:#?}");
        let f = &failed[0];
        assert_eq!(f.rule, "jkz.toml: filters[0].rules[0]");
        assert_eq!(f.got, Is::Collapse("passing tests".into()));
        assert!(
            f.by.as_deref().unwrap().contains("built-in filters["),
            "{:?}",
            f.by
        );
        let mut out = Vec::new();
        assert_eq!(test(&table, &mut out).unwrap(), EXIT_FAILED);
        let out = String::from_utf8(out).unwrap();
        assert!(out.starts_with("FAIL jkz.toml: filters[0].rules[0] (family tests): \"test a ... ok\" is collapse:passing tests, expected signal:summary"), "{out}");
    }
}
