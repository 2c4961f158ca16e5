//! The command a ledger line is about, as `jkz stats --by command` groups
//! it: the program, and for a program that has subcommands its first
//! subcommand — `cargo test`, `git log`, `npm install` — so that a hundred
//! different `git log -n …` calls add up to one row, and `git log` stays
//! apart from `git diff`.
//!
//! `call` is a shell command line (or, for a tool that is not a shell, the
//! tool's name). Its words are read as the reduction engine reads them to
//! find a command's family ([`crate::reduce::command::words`]: launchers
//! such as `sudo`, `env`, `timeout 60`, `npx`, `uv run` skipped, a path by
//! its last part, options dropped), so the two groupings agree; of a chain
//! (`cd web && npm test | tail`), the first step that does more than
//! prepare the next (`cd`, `export`) names it.

use crate::reduce::command::words;

/// Programs whose first word after the options is a subcommand.
const SUBCOMMANDS: &[&str] = &[
    "apt",
    "apt-get",
    "brew",
    "bun",
    "cargo",
    "docker",
    "docker-compose",
    "dotnet",
    "gh",
    "git",
    "go",
    "gradle",
    "gradlew",
    "helm",
    "kubectl",
    "mvn",
    "npm",
    "pip",
    "pip3",
    "pnpm",
    "poetry",
    "uv",
    "yarn",
];

/// Commands that only prepare the next one in a chain (`cd dir && make`).
const PREPARING: &[&str] = &[
    "cd", "pushd", "popd", "export", "set", "source", ".", "unset",
];

/// The longest key kept: a program name is short; anything longer is not one.
const MAX_KEY: usize = 60;

/// The command key of `call`; `-` when it names no command.
pub fn key(call: &str) -> String {
    let mut first = None;
    for segment in call.split(['\n', ';', '|', '&']) {
        let words = words(segment);
        match words.first() {
            Some(program) if is_word(program) => {
                if !PREPARING.contains(&program.as_str()) {
                    return render(&words);
                }
                first.get_or_insert(words);
            }
            _ => {}
        }
    }
    first.map_or_else(|| "-".to_string(), |words| render(&words))
}

/// `program`, or `program subcommand` for a program that has them.
fn render(words: &[String]) -> String {
    let program = words[0].as_str();
    let mut key = match words.get(1) {
        Some(sub) if SUBCOMMANDS.contains(&program) && is_word(sub) => format!("{program} {sub}"),
        _ => program.to_string(),
    };
    if let Some((i, _)) = key.char_indices().nth(MAX_KEY) {
        key.truncate(i);
    }
    key
}

/// A program's or a subcommand's name, not a path, a glob or a quoted string.
fn is_word(word: &str) -> bool {
    !word.is_empty() && word.chars().all(is_word_char)
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '+')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_with_subcommands_keep_the_first_one() {
        for (call, want) in [
            ("cargo test --locked 2>&1", "cargo test"),
            ("cargo +nightly clippy --all-targets", "cargo clippy"),
            ("git log -n 200 --oneline", "git log"),
            ("git -C ../other diff HEAD~1", "git diff"),
            ("git --no-pager show abc123", "git show"),
            ("npm install", "npm install"),
            ("npm --prefix web test", "npm test"),
            ("pnpm build --filter api", "pnpm build"),
            ("kubectl logs -f pod/web-1", "kubectl logs"),
            ("docker compose up", "docker compose"),
            ("go test ./...", "go test"),
            ("pip install -r requirements.txt", "pip install"),
            ("./gradlew build", "gradlew build"),
        ] {
            assert_eq!(key(call), want, "{call}");
        }
    }

    #[test]
    fn other_programs_are_their_base_name() {
        for (call, want) in [
            ("ls -la", "ls"),
            ("/usr/bin/rg -n TODO src", "rg"),
            ("./pytest -q", "pytest"),
            ("make -j8 all", "make"),
            ("pytest", "pytest"),
            ("python script.py", "python"),
            // What a launcher runs, as the engine reads it.
            ("uv run pytest -x", "pytest"),
            ("python3 -m pytest tests/", "pytest"),
            ("npx vitest run", "vitest"),
            ("Read", "Read"),
            ("mcp__ci__get_job_logs", "mcp__ci__get_job_logs"),
        ] {
            assert_eq!(key(call), want, "{call}");
        }
    }

    #[test]
    fn assignments_wrappers_and_preparing_steps_are_skipped() {
        for (call, want) in [
            ("RUST_LOG=debug CI=1 cargo test", "cargo test"),
            ("cd web && npm test 2>&1 | tail -50", "npm test"),
            ("sudo -E apt-get install -y chromium", "apt-get install"),
            ("timeout 600 cargo nextest run", "cargo nextest"),
            ("time env FOO=1 make", "make"),
            ("(cd sub; git status)", "git status"),
            ("export X=1; cd /tmp", "export"),
        ] {
            assert_eq!(key(call), want, "{call}");
        }
    }

    #[test]
    fn no_command_is_a_dash() {
        for call in ["", "   ", "X=1", "&& ||", "*.rs", "~/bin/"] {
            assert_eq!(key(call), "-", "{call:?}");
        }
    }

    #[test]
    fn a_subcommand_that_is_no_word_is_left_out() {
        assert_eq!(key("cargo 2>&1"), "cargo");
        assert_eq!(key("git"), "git");
        assert_eq!(key("git -C"), "git");
    }

    proptest::proptest! {
        /// Any text: a bounded key of words, or `-`; never a panic.
        #[test]
        fn any_call_has_a_bounded_key_of_words(call in "\\PC{0,120}") {
            let k = key(&call);
            proptest::prop_assert!(k.chars().count() <= MAX_KEY);
            proptest::prop_assert!(k == "-" || k.split(' ').all(|w| !w.is_empty() && w.chars().all(is_word_char)), "{:?}", k);
            proptest::prop_assert!(k.split(' ').count() <= 2, "{:?}", k);
        }

        /// A program with subcommands, its global flags, then a subcommand:
        /// the key is the two, whatever follows.
        #[test]
        fn the_subcommand_is_the_first_word_past_the_flags(
            at in 0..SUBCOMMANDS.len(),
            flags in proptest::collection::vec("--[a-z]{1,8}", 0..3),
            sub in "[a-z][a-z0-9-]{0,10}",
            rest in "[ -~]{0,40}",
        ) {
            let program = SUBCOMMANDS[at];
            // `uv run x` runs x; and the options the engine reads as taking a value.
            proptest::prop_assume!(!["run", "exec", "dlx"].contains(&sub.as_str()));
            proptest::prop_assume!(flags.iter().all(|f| !["--git-dir", "--work-tree", "--manifest-path", "--prefix"].contains(&f.as_str())));
            let call = format!("{program} {} {sub} {rest}", flags.join(" "));
            proptest::prop_assert_eq!(key(&call), format!("{program} {sub}"));
        }
    }

    #[test]
    fn a_key_is_bounded() {
        let long = format!("{} run", "x".repeat(500));
        assert_eq!(key(&long).chars().count(), MAX_KEY);
    }
}
