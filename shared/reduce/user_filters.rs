//! A project's own filters: the `[[filters]]` of its `jkz.toml`, with the
//! built-in table's schema (see [`super::table`]). They are checked whole
//! when read — every key known, every pattern compiles, every family an
//! `include` names exists — so a typo is an error naming its key, never a
//! rule that silently matches nothing.

use std::path::Path;

use super::classifier::check_pattern;
use super::table::{parse_families, FilterTable, TableError};

/// The built-in table with the filters of `file` (a `jkz.toml`) merged in;
/// the built-in table alone when the file does not exist.
pub fn table_with(file: &Path) -> Result<FilterTable, TableError> {
    let doc = crate::jkz_toml::read(file).map_err(|e| TableError {
        file: Some(e.file),
        key: e.key.unwrap_or_default(),
        why: e.why,
    })?;
    let built_in = FilterTable::built_in();
    let Some(doc) = doc else {
        return Ok(built_in);
    };
    let user = parse_families(&doc, Some(file))?;
    for family in &user {
        let at = |key: String, why: String| TableError {
            file: Some(file.to_path_buf()),
            key,
            why,
        };
        for (j, p) in family.sniff.iter().enumerate() {
            check_pattern(p).map_err(|why| at(format!("{}.sniff[{j}]", family.source.key), why))?;
        }
        for rule in &family.rules {
            check_pattern(&rule.pattern)
                .map_err(|why| at(format!("{}.match", rule.source.key), why))?;
        }
    }
    let table = built_in.with_user(user);
    for family in &table.families {
        for (j, inc) in family.include.iter().enumerate() {
            if table.family(inc).is_none() {
                return Err(TableError {
                    file: family.source.file.clone(),
                    key: format!("{}.include[{j}]", family.source.key),
                    why: format!("no family named {inc:?}"),
                });
            }
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(text: &str) -> (tempfile::TempDir, Result<FilterTable, TableError>) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("jkz.toml");
        std::fs::write(&file, text).unwrap();
        let table = table_with(&file);
        (dir, table)
    }

    #[test]
    fn no_file_is_the_built_in_table() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            table_with(&dir.path().join("jkz.toml")).unwrap(),
            FilterTable::built_in()
        );
    }

    #[test]
    fn a_project_filter_is_checked_whole_and_its_errors_name_the_key() {
        let (_d, t) = with(
            "[slo]\nwindow = \"7d\"\n[[filters]]\nname = \"deploy\"\ncommands = [\"./deploy.sh\"]\n\
             [[filters.rules]]\nmatch = \"^step \\\\d+\"\nis = \"collapse:deploy steps\"\n\
             examples = [{ line = \"step 3\", is = \"collapse:deploy steps\" }]\n",
        );
        assert_eq!(t.unwrap().families[0].name, "deploy");
        for (text, key) in [
            (
                "[[filters]]\nname = \"x\"\nsniff = [\"(\"]",
                "filters[0].sniff[0]",
            ),
            (
                "[[filters]]\nname = \"x\"\n[[filters.rules]]\nmatch = \"[a\"\nis = \"context\"",
                "filters[0].rules[0].match",
            ),
            (
                "[[filters]]\nname = \"x\"\ninclude = [\"nope\"]",
                "filters[0].include[0]",
            ),
            (
                "[[filters]]\nname = \"x\"\nunknown = 1",
                "filters[0].unknown",
            ),
        ] {
            let (_d, t) = with(text);
            let e = t.unwrap_err();
            assert_eq!(e.key, key, "{text}: {e}");
        }
        let (_d, t) = with("not = [toml");
        assert!(t.unwrap_err().to_string().contains("not valid TOML"));
    }
}
