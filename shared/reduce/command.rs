//! Which family a shell command belongs to, from its words.
//!
//! A command line is split into segments at `&&`, `||`, `;`, `|`, `&` and
//! newlines. In each segment, what only launches the real program is
//! skipped: environment assignments (`RUST_LOG=debug`), `sudo` (and its
//! options), `time`, `env`, `nice`, `nohup`, `exec`, `command`, `timeout N`,
//! `npx`/`pnpx`/`bunx`, `pnpm exec`, `uv run`, `poetry run`, `pipenv run`,
//! `bundle exec`; `python -m X` counts as `X`; a path counts by its last part
//! (`./gradlew`, `/usr/bin/make`); options (`-q`, `--release`, `+nightly`)
//! and redirections (`2>&1`) are not words. A family's pattern matches a
//! segment when its words are the segment's first words (`cargo test`
//! matches `cargo test --lib x`; `npm run test` matches `npm run
//! test:unit`). The family that matches any segment and comes first in the
//! table wins, so `cargo build && cargo test` is a test run and
//! `cat log | grep x` a search.

use super::table::{Family, FilterTable};

/// The family of `command`, if a pattern names it.
pub fn family_for_command<'t>(table: &'t FilterTable, command: &str) -> Option<&'t Family> {
    let segments: Vec<Vec<String>> = segments(command).map(words).collect();
    table.families.iter().find(|family| {
        family.commands.iter().any(|pattern| {
            let pattern: Vec<&str> = pattern.split_whitespace().collect();
            segments.iter().any(|words| matches(&pattern, words))
        })
    })
}

fn matches(pattern: &[&str], words: &[String]) -> bool {
    let pattern_words = pattern.iter().map(|p| p.rsplit('/').next().unwrap_or(p));
    pattern.len() <= words.len()
        && pattern_words
            .zip(words)
            .all(|(p, w)| w == p || w.strip_prefix(p).is_some_and(|rest| rest.starts_with(':')))
}

fn segments(command: &str) -> impl Iterator<Item = &str> {
    command
        .split(['\n', ';', '|', '&'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// Programs that only run the next word, and how many of their own
/// arguments (besides options) come before it.
const LAUNCHERS: &[(&str, usize)] = &[
    ("sudo", 0),
    ("doas", 0),
    ("time", 0),
    ("env", 0),
    ("nice", 0),
    ("nohup", 0),
    ("exec", 0),
    ("command", 0),
    ("builtin", 0),
    ("stdbuf", 0),
    ("unbuffer", 0),
    ("xvfb-run", 0),
    ("timeout", 1),
    ("npx", 0),
    ("pnpx", 0),
    ("bunx", 0),
];

/// Two-word launchers: `pnpm exec jest` is `jest`.
const LAUNCHER_PAIRS: &[(&str, &str)] = &[
    ("pnpm", "exec"),
    ("pnpm", "dlx"),
    ("yarn", "exec"),
    ("yarn", "dlx"),
    ("npm", "exec"),
    ("uv", "run"),
    ("poetry", "run"),
    ("pipenv", "run"),
    ("bundle", "exec"),
    ("hatch", "run"),
    ("pdm", "run"),
];

/// Options of a launcher that take a value (`sudo -u root`, `nice -n 5`).
const VALUED_OPTIONS: &[&str] = &[
    "-u",
    "-g",
    "-n",
    "-C",
    "-c",
    "-p",
    "-s",
    "-k",
    "--user",
    "--package",
];

/// The words of one segment that name what runs (see the module docs).
pub fn words(segment: &str) -> Vec<String> {
    let tokens: Vec<&str> = segment
        .split_whitespace()
        .map(|t| t.trim_matches(['"', '\'', '(', ')', '{', '}']))
        .filter(|t| !t.is_empty() && !is_redirection(t))
        .collect();
    let mut i = 0;
    // What launches the program.
    loop {
        while i < tokens.len() && is_assignment(tokens[i]) {
            i += 1;
        }
        let Some(&first) = tokens.get(i) else {
            return Vec::new();
        };
        let name = base(first);
        if let Some(&(_, args)) = LAUNCHERS.iter().find(|(l, _)| *l == name) {
            i += 1;
            i = skip_options(&tokens, i);
            i += args;
            continue;
        }
        if let Some(next) = tokens.get(i + 1) {
            if LAUNCHER_PAIRS.iter().any(|&(a, b)| a == name && b == *next) {
                i = skip_options(&tokens, i + 2);
                continue;
            }
        }
        break;
    }
    let mut words = Vec::new();
    let first = base(tokens[i]);
    if first.starts_with("python") && tokens.get(i + 1) == Some(&"-m") {
        // `python -m pytest` runs pytest.
        if let Some(module) = tokens.get(i + 2) {
            words.push((*module).to_string());
            i += 3;
        }
    } else {
        words.push(first.to_string());
        i += 1;
    }
    while i < tokens.len() && words.len() < 4 {
        let t = tokens[i];
        i += 1;
        if t.starts_with('-') {
            if [
                "-C",
                "-c",
                "-f",
                "--git-dir",
                "--work-tree",
                "--manifest-path",
                "-p",
                "--prefix",
            ]
            .contains(&t)
            {
                i += 1;
            }
            continue;
        }
        if t.starts_with('+') {
            continue; // cargo +nightly
        }
        words.push(t.to_string());
    }
    words
}

/// Skips a launcher's options (and the value of those that take one).
fn skip_options(tokens: &[&str], mut i: usize) -> usize {
    while let Some(t) = tokens.get(i) {
        if is_assignment(t) {
            i += 1;
        } else if t.starts_with('-') && *t != "--" {
            i += if VALUED_OPTIONS.contains(t) { 2 } else { 1 };
        } else if *t == "--" {
            i += 1;
            break;
        } else {
            break;
        }
    }
    i
}

/// A word's last path component: `./gradlew` → `gradlew`.
fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_assignment(token: &str) -> bool {
    token.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

fn is_redirection(token: &str) -> bool {
    let t = token.trim_start_matches(|c: char| c.is_ascii_digit());
    t.starts_with('>') || t.starts_with('<')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn family(command: &str) -> Option<String> {
        family_for_command(&FilterTable::built_in(), command).map(|f| f.name.clone())
    }

    #[test]
    fn launchers_paths_and_options_are_skipped() {
        assert_eq!(
            words("RUST_LOG=debug cargo +nightly test --lib -q x"),
            ["cargo", "test", "x"]
        );
        assert_eq!(
            words("sudo -u root -E apt-get install -y jq"),
            ["apt-get", "install", "jq"]
        );
        assert_eq!(words("time npx --yes jest --ci"), ["jest"]);
        assert_eq!(words("./gradlew build"), ["gradlew", "build"]);
        assert_eq!(words("/usr/bin/make -C src all"), ["make", "all"]);
        assert_eq!(words("python3 -m pytest -x tests/"), ["pytest", "tests/"]);
        assert_eq!(words("uv run pytest"), ["pytest"]);
        assert_eq!(words("git -C ../repo log -n 5"), ["git", "log", "5"]);
        assert_eq!(words("timeout 60 go test ./..."), ["go", "test", "./..."]);
        assert_eq!(words("cargo test 2>&1"), ["cargo", "test"]);
        assert_eq!(words("FOO=1 BAR=2"), Vec::<String>::new());
    }

    #[test]
    fn the_first_family_in_the_table_that_matches_any_segment_wins() {
        assert_eq!(family("cargo test").as_deref(), Some("tests"));
        assert_eq!(family("cargo build --release").as_deref(), Some("builds"));
        assert_eq!(
            family("cd x && cargo build && cargo test 2>&1 | tail -50").as_deref(),
            Some("tests")
        );
        assert_eq!(family("npm run test:unit").as_deref(), Some("tests"));
        assert_eq!(family("npm install").as_deref(), Some("installs"));
        assert_eq!(
            family("pip install -r requirements.txt").as_deref(),
            Some("installs")
        );
        assert_eq!(
            family("python -m pip install x").as_deref(),
            Some("installs")
        );
        assert_eq!(family("git log -n 200").as_deref(), Some("git-log"));
        assert_eq!(family("git diff HEAD~1").as_deref(), Some("git-diff"));
        assert_eq!(family("git merge main").as_deref(), Some("git"));
        assert_eq!(
            family("cat build.log | grep -n error").as_deref(),
            Some("listings")
        );
        assert_eq!(family("kubectl logs pod/x").as_deref(), Some("logs"));
        assert_eq!(family("./run-everything.sh"), None);
        assert_eq!(family("cargo testing"), None, "words match whole");
        assert_eq!(family("makefile-gen"), None);
    }
}
