//! The issue number, its pipeline file and the listing of `state/pipeline/`.
//!
//! An issue number names both a file (`<N>.json`) and the key of its data,
//! so it has exactly one spelling; everything in the directory that is not
//! such a file is a companion (or, misspelled, reported by [`misnamed`]).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::state_dir::layout::PIPELINE_DIR;
use crate::state_dir::StateDir;

/// An issue number: ASCII digits only (1 to 20 of them, no leading zero,
/// not 0), so that it can never become a path escape and each issue has
/// exactly one spelling: `7`, never `007`, names both its file and its key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct IssueNumber(String);

impl IssueNumber {
    /// Parses an issue number as a person or script writes it: digits,
    /// leading zeros dropped (`007` is issue 7). Issue 0 does not exist.
    pub fn parse(raw: &str) -> Result<IssueNumber, String> {
        let canonical = raw.trim_start_matches('0');
        let digits = !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit());
        if digits && canonical.is_empty() {
            return Err(format!(
                "invalid issue number {:?}: issue numbers start at 1",
                crate::pipeline::shorten(raw, 40)
            ));
        }
        if digits && IssueNumber::is_valid(canonical) {
            Ok(IssueNumber(canonical.to_string()))
        } else {
            Err(format!(
                "invalid issue number {:?}: expected 1 to 20 digits",
                crate::pipeline::shorten(raw, 40)
            ))
        }
    }

    /// The canonical spelling: 1 to 20 ASCII digits, the first not `0`.
    fn is_valid(raw: &str) -> bool {
        (1..=20).contains(&raw.len())
            && raw.bytes().all(|b| b.is_ascii_digit())
            && !raw.starts_with('0')
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The number's file name: `<N>.json`.
    pub fn file_name(&self) -> String {
        format!("{}.json", self.0)
    }

    /// Orders numerically (leading zeros aside), then by spelling.
    fn sort_key(&self) -> (usize, &str) {
        let trimmed = self.0.trim_start_matches('0');
        (trimmed.len(), trimmed)
    }
}

impl fmt::Display for IssueNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialOrd for IssueNumber {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for IssueNumber {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.sort_key()
            .cmp(&other.sort_key())
            .then_with(|| self.0.cmp(&other.0))
    }
}

/// The path of issue N's pipeline file.
pub fn pipeline_path(state: &StateDir, issue: &IssueNumber) -> PathBuf {
    state.join(PIPELINE_DIR).join(issue.file_name())
}

/// A pipeline file found in `state/pipeline/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineFile {
    pub issue: IssueNumber,
    pub path: PathBuf,
    /// The directory listing said it is a regular file (not a symbolic
    /// link, FIFO, device or directory), so reading it needs no `stat`.
    pub regular: bool,
}

/// The issue number of a pipeline file name (`<N>.json`, N canonical);
/// companions and everything else → none.
pub fn issue_of_file_name(name: &str) -> Option<IssueNumber> {
    let n = name.strip_suffix(".json")?;
    IssueNumber::is_valid(n).then(|| IssueNumber(n.to_string()))
}

/// Why a file name is not a pipeline file's, when it looks like one that
/// misspells its number (`007.json`, `0.json`): every reader ignores such a
/// file, so `jkz state validate` and `jkz doctor` say how to rename it.
pub fn misnamed(name: &str) -> Option<String> {
    let n = name.strip_suffix(".json")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) || IssueNumber::is_valid(n) {
        return None;
    }
    Some(match IssueNumber::parse(n) {
        Ok(issue) => format!(
            "file name: {name} spells issue {issue} with leading zeros, so no reader sees it; rename it to {issue}.json (its data under the key \"{issue}\")"
        ),
        Err(why) => format!("file name: {name}: {why}; no reader sees it"),
    })
}

/// The files of `dir` that [`misnamed`] describes, as (path, why), sorted.
pub fn misnamed_in(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            misnamed(&name).map(|why| (e.path(), why))
        })
        .collect();
    out.sort();
    out
}

/// Every pipeline file in `dir`, ordered by issue number. A missing
/// directory is an empty list.
pub fn list_in(dir: &Path) -> io::Result<Vec<PipelineFile>> {
    crate::state_dir::check_listed_dir(dir)?;
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(Vec::new())
        }
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        // The name's own allocation becomes the issue number's (a directory
        // can hold thousands of files; each allocation shows).
        let Ok(mut name) = entry.file_name().into_string() else {
            continue;
        };
        if !name
            .strip_suffix(".json")
            .is_some_and(IssueNumber::is_valid)
        {
            continue;
        }
        let mut path = PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
        path.push(dir);
        path.push(&name);
        name.truncate(name.len() - ".json".len());
        // The issue's value, for a sort that parses each name once. 20
        // digits fit in a u128.
        let value: u128 = name.parse().unwrap_or(u128::MAX);
        let file = PipelineFile {
            issue: IssueNumber(name),
            path,
            // From the entry's type in the listing: no extra call where the
            // filesystem reports it (ext4, xfs, btrfs, tmpfs all do).
            regular: entry.file_type().is_ok_and(|t| t.is_file()),
        };
        files.push((value, file));
    }
    // The order of `IssueNumber`: by value, then ("7" and "007") by spelling.
    files.sort_unstable_by(|(a, fa), (b, fb)| a.cmp(b).then_with(|| fa.issue.cmp(&fb.issue)));
    Ok(files.into_iter().map(|(_, file)| file).collect())
}

/// Every pipeline file of the state directory.
pub fn list(state: &StateDir) -> io::Result<Vec<PipelineFile>> {
    list_in(&state.join(PIPELINE_DIR))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::testing::*;

    #[test]
    fn issue_numbers_are_digits_only() {
        for ok in ["42", "12345678901234567890"] {
            assert_eq!(IssueNumber::parse(ok).unwrap().as_str(), ok);
        }
        // One spelling per issue: leading zeros go; issue 0 does not exist.
        assert_eq!(IssueNumber::parse("007").unwrap(), issue("7"));
        assert_eq!(IssueNumber::parse("0042").unwrap().file_name(), "42.json");
        for zero in ["0", "00", "000"] {
            assert!(
                IssueNumber::parse(zero).unwrap_err().contains("start at 1"),
                "{zero}"
            );
        }
        for bad in ["", "-1", "4 2", "../1", "1/..", "42.json", "x", "+1", "١٢"] {
            assert!(IssueNumber::parse(bad).is_err(), "{bad}");
        }
        assert!(IssueNumber::parse(&"9".repeat(21)).is_err());
    }

    #[test]
    fn issue_numbers_sort_numerically() {
        let mut v: Vec<_> = ["10", "9", "100", "09", "1"].map(issue).to_vec();
        v.sort();
        let shown: Vec<_> = v.iter().map(|i| i.as_str()).collect();
        assert_eq!(shown, ["1", "9", "9", "10", "100"]);
    }

    #[test]
    fn companions_are_not_pipeline_files() {
        let tmp = tempfile::tempdir().unwrap();
        for name in [
            "42.json",
            "7.json",
            "42-compact-plan.json",
            "42-compact-plan.md",
            ".42.json.lock",
            ".42.json.abc.tmp",
            "notes.json",
            "100.json",
        ] {
            std::fs::write(tmp.path().join(name), "{}").unwrap();
        }
        let issues: Vec<_> = list_in(tmp.path())
            .unwrap()
            .into_iter()
            .map(|f| f.issue.0)
            .collect();
        assert_eq!(issues, ["7", "42", "100"]);
        assert_eq!(list_in(&tmp.path().join("missing")).unwrap(), []);
    }

    #[test]
    fn listing_orders_as_issue_numbers_do() {
        let tmp = tempfile::tempdir().unwrap();
        let names = [
            "99999999999999999999",
            "12345678901234567890",
            "007",
            "7",
            "0",
            "00",
            "70",
            "9",
            "0007",
            "18446744073709551616",
            "18446744073709551615",
            "1",
        ];
        for name in names {
            std::fs::write(tmp.path().join(format!("{name}.json")), "{}").unwrap();
        }
        let listed: Vec<_> = list_in(tmp.path())
            .unwrap()
            .into_iter()
            .map(|f| f.issue)
            .collect();
        // The oracle: `IssueNumber`'s own order.
        let mut want: Vec<_> = names
            .iter()
            .filter(|n| !n.starts_with('0'))
            .map(|n| issue(n))
            .collect();
        want.sort();
        assert_eq!(listed, want);
        assert_eq!(
            listed[..3]
                .iter()
                .map(IssueNumber::as_str)
                .collect::<Vec<_>>(),
            ["1", "7", "9"]
        );
        // The misspelled ones are no pipeline files; validate names them.
        let found: Vec<String> = misnamed_in(tmp.path())
            .into_iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(found, ["0.json", "00.json", "0007.json", "007.json"]);
        assert!(misnamed("007.json")
            .unwrap()
            .contains("rename it to 7.json"));
        assert_eq!(misnamed("7.json"), None);
        assert_eq!(misnamed("7-compact-plan.json"), None);
    }
}
