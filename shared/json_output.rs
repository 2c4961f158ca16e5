//! `--json`: one shape for what every command prints for scripts.
//!
//! - A command that prints a table (`state list`, `chats`, `lock list`,
//!   `jkz-session list`, …) prints one JSON array, one object per row.
//! - A command that prints a report (`doctor`, `gc`, `slo check`, `stats`,
//!   `metrics`) prints one JSON object.
//! - `jkz events --json` is the one stream: one object per line (the log's
//!   own lines), so `--follow` can go on printing.
//!
//! Keys are snake_case; times are RFC 3339 in UTC; a value that is not
//! known is `null`, never left out. The document is pretty-printed and
//! ends with a newline. Warnings go to stderr as ever, and the exit code is
//! the one the command has without `--json`. The page for users:
//! docs/json.md.

use std::io::{self, Write};

use serde::Serialize;

/// Writes `value` as the document of a `--json` command, and flushes.
pub fn write(out: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(io::Error::other)?;
    writeln!(out)?;
    out.flush()
}

/// One line of a report made of checks (`jkz doctor`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// `ok`, `fail` or `note` (a note informs and never fails).
    pub status: &'static str,
    pub text: String,
}

/// A report of checks: every check passed (`ok`), how many failed, each
/// line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Checks {
    pub ok: bool,
    pub failed: usize,
    pub checks: Vec<Check>,
}

/// The checks of a report printed one per line, each starting with its
/// tag (`ok`, `FAIL`, `note`) as `jkz doctor` prints them for people;
/// a closing count (`all checks passed`, `N check(s) failed`) is left out,
/// as the object carries it.
pub fn checks(text: &str) -> Checks {
    let mut checks = Vec::new();
    for line in text.lines() {
        let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
        let status = match tag {
            "ok" => "ok",
            "FAIL" => "fail",
            "note" => "note",
            _ if line == "all checks passed" || line.ends_with(" check(s) failed") => continue,
            _ if line.trim().is_empty() => continue,
            // A line without a tag continues the one before, if any.
            _ => match checks.last_mut() {
                Some(Check { text, .. }) => {
                    text.push('\n');
                    text.push_str(line);
                    continue;
                }
                None => "note",
            },
        };
        let text = if status == "note" && !matches!(tag, "note") {
            line.to_string()
        } else {
            rest.trim_start().to_string()
        };
        checks.push(Check { status, text });
    }
    let failed = checks.iter().filter(|c| c.status == "fail").count();
    Checks {
        ok: failed == 0,
        failed,
        checks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctor_lines_become_checks() {
        let c = checks(
            "ok   binaries on PATH (/b)\nFAIL state/ is not in .gitignore\nnote registry: local\n3 check(s) failed\n",
        );
        assert_eq!(c.failed, 1);
        assert!(!c.ok);
        assert_eq!(
            c.checks,
            [
                Check {
                    status: "ok",
                    text: "binaries on PATH (/b)".into()
                },
                Check {
                    status: "fail",
                    text: "state/ is not in .gitignore".into()
                },
                Check {
                    status: "note",
                    text: "registry: local".into()
                },
            ]
        );
        let all = checks("ok   one\nall checks passed\n");
        assert!(all.ok);
        assert_eq!(all.checks.len(), 1);
    }

    #[test]
    fn an_untagged_line_continues_the_check_before_it() {
        let c = checks("FAIL one\n  and its detail\nuntagged first?\n");
        assert_eq!(c.checks.len(), 1);
        assert_eq!(c.checks[0].text, "one\n  and its detail\nuntagged first?");
        let first = checks("plain\nok   two\n");
        assert_eq!(first.checks[0].status, "note");
        assert_eq!(first.checks[0].text, "plain");
    }

    #[test]
    fn the_document_ends_with_a_newline() {
        let mut out = Vec::new();
        write(&mut out, &serde_json::json!({"a": [1]})).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\n  \"a\": [\n    1\n  ]\n}\n"
        );
    }
}
