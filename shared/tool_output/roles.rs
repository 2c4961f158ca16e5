//! Which end of a tool's output matters: the head share inferred from the
//! call.
//!
//! A test run or a build scrolls past thousands of lines and says what
//! happened at the end (the failing assertion, the summary, the last
//! error); a file read or `git show` leads with what was asked for; a search
//! has no order of importance. The head share is the head's fraction of what
//! the protected blocks and markers leave (the truncation engine's split).
//!
//! A rule is a share and a pattern of words. A Bash command is split into
//! segments at `&&`, `||`, `;`, `|` and newlines; a pattern matches a
//! segment when its words appear in it one after another (a word that holds
//! a `/` is compared by its last component, so `./gradlew test` matches
//! `gradlew test` and `/usr/bin/make` matches `make`). Any other tool is
//! matched by its name as a one-word command (`Read`, `mcp__ci__logs`).
//! Rules are tried in order, the user's first: the first rule that matches
//! any segment decides; no match is an even split.
//!
//! The user's rules live in the project's [`TOOL_ROLES_FILE`], one per
//! line: `SHARE WORDS…` (`0.2 bazel test`), `#` starts a comment. They are
//! read at every call, so a change needs no rebuild. A line that does not
//! parse is skipped with a warning naming it.

use std::path::Path;

use crate::jkz_toml::TOOL_ROLES_FILE;

/// The share when no rule matches.
pub const DEFAULT_HEAD_SHARE: f64 = 0.5;

/// Test runners and builds: the result is at the end.
const TAIL: f64 = 0.2;
/// Reads: what was asked for comes first.
const HEAD: f64 = 0.8;
/// A file read through the Read tool: the head only, so every line the model
/// sees keeps its true line number (the marker says how many follow).
const HEAD_ONLY: f64 = 1.0;
/// Searches: matches are equally important wherever they are.
const EVEN: f64 = 0.5;

/// One built-in rule: words, share, why.
pub struct BuiltIn {
    pub words: &'static str,
    pub head_share: f64,
    pub why: &'static str,
}

const TESTS: &str = "a test run ends with the failures and the summary";
const BUILDS: &str = "a build ends with the last errors and the result";
const READS: &str = "a read leads with what was asked for";
const SEARCH: &str = "matches are equally important wherever they are";

/// The built-in table, in the order it is tried. Searches come before reads
/// so `cat log | grep error` counts as the search it is.
#[rustfmt::skip]
pub const BUILT_IN: &[BuiltIn] = &[
    BuiltIn { words: "cargo test", head_share: TAIL, why: TESTS },
    BuiltIn { words: "cargo nextest", head_share: TAIL, why: TESTS },
    BuiltIn { words: "pytest", head_share: TAIL, why: TESTS },
    BuiltIn { words: "unittest", head_share: TAIL, why: TESTS },
    BuiltIn { words: "tox", head_share: TAIL, why: TESTS },
    BuiltIn { words: "npm test", head_share: TAIL, why: TESTS },
    BuiltIn { words: "npm run test", head_share: TAIL, why: TESTS },
    BuiltIn { words: "yarn test", head_share: TAIL, why: TESTS },
    BuiltIn { words: "pnpm test", head_share: TAIL, why: TESTS },
    BuiltIn { words: "jest", head_share: TAIL, why: TESTS },
    BuiltIn { words: "vitest", head_share: TAIL, why: TESTS },
    BuiltIn { words: "go test", head_share: TAIL, why: TESTS },
    BuiltIn { words: "mvn", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "gradle", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "gradlew", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "bazel", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "ctest", head_share: TAIL, why: TESTS },
    BuiltIn { words: "cargo build", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "cargo check", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "cargo clippy", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "go build", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "go vet", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "npm run build", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "tsc", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "make", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "cmake", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "ninja", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "docker build", head_share: TAIL, why: BUILDS },
    BuiltIn { words: "grep", head_share: EVEN, why: SEARCH },
    BuiltIn { words: "rg", head_share: EVEN, why: SEARCH },
    BuiltIn { words: "ag", head_share: EVEN, why: SEARCH },
    BuiltIn { words: "git grep", head_share: EVEN, why: SEARCH },
    BuiltIn { words: "find", head_share: EVEN, why: SEARCH },
    BuiltIn { words: "Grep", head_share: EVEN, why: SEARCH },
    BuiltIn { words: "Glob", head_share: EVEN, why: SEARCH },
    BuiltIn { words: "cat", head_share: HEAD, why: READS },
    BuiltIn { words: "head", head_share: HEAD, why: READS },
    BuiltIn { words: "less", head_share: HEAD, why: READS },
    BuiltIn { words: "sed", head_share: HEAD, why: READS },
    BuiltIn { words: "git show", head_share: HEAD, why: READS },
    BuiltIn { words: "git diff", head_share: HEAD, why: READS },
    BuiltIn { words: "git log", head_share: HEAD, why: "the newest commits come first" },
    BuiltIn { words: "curl", head_share: HEAD, why: READS },
    BuiltIn {
        words: "Read",
        head_share: HEAD_ONLY,
        why: "the head only: every line shown keeps its line number",
    },
    BuiltIn { words: "tail", head_share: TAIL, why: "asked for the end" },
];

/// A parsed rule: the words of its pattern and its share.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub words: Vec<String>,
    pub head_share: f64,
}

impl Rule {
    fn new(words: &str, head_share: f64) -> Rule {
        Rule {
            words: words.split_whitespace().map(str::to_string).collect(),
            head_share,
        }
    }

    fn matches(&self, segment: &[&str]) -> bool {
        let n = self.words.len();
        n > 0
            && segment
                .windows(n)
                .any(|w| w.iter().zip(&self.words).all(|(a, b)| a == b))
    }
}

/// Parses the user's rule file; bad lines are reported in `warnings` (one
/// line each) and skipped.
pub fn parse_rules(text: &str, warnings: &mut Vec<String>) -> Vec<Rule> {
    let mut rules = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let (share, words) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        match share.parse::<f64>() {
            Ok(s) if (0.0..=1.0).contains(&s) && !words.trim().is_empty() => {
                rules.push(Rule::new(words, s))
            }
            _ => warnings.push(format!(
                "{TOOL_ROLES_FILE}:{}: expected `SHARE WORDS…` with SHARE from 0.0 to 1.0, found {line:?}; line skipped",
                i + 1
            )),
        }
    }
    rules
}

/// The user's rules of the project at `project` (none when the file is
/// absent; unreadable or bad lines are reported in `warnings`).
pub fn user_rules(project: &Path, warnings: &mut Vec<String>) -> Vec<Rule> {
    let path = project.join(TOOL_ROLES_FILE);
    match crate::state_dir::read_user_file(&path) {
        Ok(bytes) => parse_rules(&String::from_utf8_lossy(&bytes), warnings),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            warnings.push(format!("{}: {e}; built-in rules only", path.display()));
            Vec::new()
        }
    }
}

/// The built-in table as rules.
pub fn built_in() -> Vec<Rule> {
    BUILT_IN
        .iter()
        .map(|b| Rule::new(b.words, b.head_share))
        .collect()
}

/// The words of each segment of a command (see the module docs).
pub fn segments(command: &str) -> Vec<Vec<&str>> {
    let mut out = Vec::new();
    for line in command.split('\n') {
        for part in line.split(['|', ';', '&']) {
            let words: Vec<&str> = part
                .split_whitespace()
                .map(|w| w.trim_matches(|c| c == '(' || c == ')' || c == '"' || c == '\''))
                .map(|w| w.rsplit('/').next().unwrap_or(w))
                .filter(|w| !w.is_empty())
                .collect();
            if !words.is_empty() {
                out.push(words);
            }
        }
    }
    out
}

/// The head share for a call: `command` is the Bash command, or the tool's
/// name for any other tool. `rules` are tried in order.
pub fn head_share(command: &str, rules: &[Rule]) -> f64 {
    let segments = segments(command);
    rules
        .iter()
        .find(|r| segments.iter().any(|s| r.matches(s)))
        .map_or(DEFAULT_HEAD_SHARE, |r| r.head_share)
}

/// The built-in table as text, for `--help`.
pub fn table() -> String {
    crate::truncate::roles::share_table(
        BUILT_IN.iter().map(|b| (b.words, b.head_share, b.why)),
        DEFAULT_HEAD_SHARE,
        14,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(command: &str) -> f64 {
        head_share(command, &built_in())
    }

    #[test]
    fn test_runners_and_builds_keep_the_tail() {
        for c in [
            "cargo test --locked",
            "cd crate && cargo test 2>&1",
            "RUST_LOG=debug cargo build --release",
            "python -m pytest -x tests/",
            "uv run pytest",
            "npm test",
            "go test ./...",
            "/usr/bin/make -j4 all",
            "./gradlew test",
            "(cd x; make)",
        ] {
            assert_eq!(share(c), TAIL, "{c}");
        }
    }

    #[test]
    fn reads_keep_the_head_and_searches_split_evenly() {
        assert_eq!(share("cat src/main.rs"), HEAD);
        assert_eq!(share("git show HEAD~1"), HEAD);
        assert_eq!(share("head -n 500 log.txt"), HEAD);
        assert_eq!(share("rg -n TODO"), EVEN);
        assert_eq!(share("cat big.log | grep ERROR"), EVEN);
        assert_eq!(share("Read"), HEAD_ONLY);
        assert_eq!(share("Grep"), EVEN);
        assert_eq!(share("mcp__github__get_job_logs"), DEFAULT_HEAD_SHARE);
        assert_eq!(share("echo hello"), DEFAULT_HEAD_SHARE);
        assert_eq!(share(""), DEFAULT_HEAD_SHARE);
        // Words, not substrings: `makefile` is not `make`, `category` not `cat`.
        assert_eq!(share("ls makefile category"), DEFAULT_HEAD_SHARE);
    }

    #[test]
    fn user_rules_come_first() {
        let mut warnings = Vec::new();
        let user = parse_rules(
            "# mine\n0.1 cargo test\n\n0.9 mcp__ci__logs  # CI logs lead\nbad line\n1.5 x\n0.3\n",
            &mut warnings,
        );
        assert_eq!(
            user,
            vec![
                Rule::new("cargo test", 0.1),
                Rule::new("mcp__ci__logs", 0.9)
            ]
        );
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains(":5:"), "{warnings:?}");
        let rules: Vec<Rule> = user.into_iter().chain(built_in()).collect();
        assert_eq!(head_share("cargo test -q", &rules), 0.1);
        assert_eq!(head_share("mcp__ci__logs", &rules), 0.9);
        assert_eq!(head_share("cargo build", &rules), TAIL);
    }

    #[test]
    fn built_in_shares_are_valid() {
        for b in BUILT_IN {
            assert!((0.0..=1.0).contains(&b.head_share), "{}", b.words);
            assert!(!b.why.is_empty());
        }
        assert!(table().contains("cargo test"));
    }
}
