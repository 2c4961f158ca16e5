//! The command a ledger line is about, as `jkz stats --by command` groups
//! it: the program, and for a program that has subcommands its first
//! subcommand — `cargo test`, `git log`, `npm install` — so that a hundred
//! different `git log -n …` calls add up to one row, and `git log` stays
//! apart from `git diff`.
//!
//! `call` is a shell command line (or, for a tool that is not a shell, the
//! tool's name). It is read as a person skims it, not parsed as a shell
//! would: the first simple command that does something (not `cd`, not
//! `export`), past variable assignments and wrappers (`sudo`, `env`,
//! `time`, `timeout 60`), its program's base name (`/usr/bin/git` is
//! `git`), then the subcommand, skipping flags and the values of the few
//! flags known to take one (`git -C dir log` is `git log`).

/// Programs whose first non-flag word is a subcommand, with their global
/// flags that take the next word as a value.
const SUBCOMMANDS: &[(&str, &[&str])] = &[
    ("apt", &["-o", "-c", "-t"]),
    ("apt-get", &["-o", "-c", "-t"]),
    ("brew", &[]),
    ("bun", &["--cwd"]),
    ("cargo", &["--config", "-Z", "-C", "--color"]),
    (
        "docker",
        &[
            "--context",
            "-c",
            "-H",
            "--host",
            "--config",
            "-l",
            "--log-level",
        ],
    ),
    ("docker-compose", &["-f", "--file", "-p", "--project-name"]),
    ("dotnet", &[]),
    ("gh", &["-R", "--repo"]),
    (
        "git",
        &["-C", "-c", "--git-dir", "--work-tree", "--namespace"],
    ),
    ("go", &["-C"]),
    ("gradle", &[]),
    ("helm", &["-n", "--namespace", "--kube-context"]),
    (
        "kubectl",
        &[
            "-n",
            "--namespace",
            "--context",
            "--kubeconfig",
            "--cluster",
            "-l",
            "--selector",
        ],
    ),
    ("mvn", &["-f", "--file", "-P", "-pl"]),
    ("npm", &["--prefix", "-w", "--workspace"]),
    ("npx", &["-p", "--package"]),
    ("pip", &[]),
    ("pip3", &[]),
    ("pnpm", &["-C", "--dir", "-F", "--filter"]),
    ("poetry", &["-C", "--directory"]),
    ("uv", &["--directory", "--project", "-p", "--python"]),
    ("yarn", &["--cwd"]),
];

/// Words before a command that only change how it runs; the value is how
/// many words after it belong to the wrapper (besides its flags).
const WRAPPERS: &[(&str, usize)] = &[
    ("builtin", 0),
    ("command", 0),
    ("env", 0),
    ("exec", 0),
    ("nice", 0),
    ("nohup", 0),
    ("stdbuf", 0),
    ("sudo", 0),
    ("time", 0),
    ("timeout", 1),
];

/// Commands that only prepare the next one in a chain (`cd dir && make`).
const PREPARING: &[&str] = &["cd", "pushd", "export", "set", "source", ".", "unset"];

/// The longest key kept: a program name is short; anything longer is not one.
const MAX_KEY: usize = 60;

/// The command key of `call`; `-` when it names no command.
pub fn key(call: &str) -> String {
    let chain: Vec<&str> = call
        .split(['&', '|', ';', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let mut first = None;
    for part in &chain {
        if let Some(words) = simple_command(part) {
            let program = words[0];
            if first.is_none() {
                first = Some(words.clone());
            }
            if !PREPARING.contains(&program) {
                return render(&words);
            }
        }
    }
    match first {
        Some(words) => render(&words),
        None => "-".into(),
    }
}

/// The words of one simple command from its program on, past assignments
/// and wrappers; the program as its base name. `None` when nothing is left.
fn simple_command(part: &str) -> Option<Vec<&str>> {
    let mut words = part
        .split_whitespace()
        .map(|w| {
            w.trim_start_matches(['(', '{'])
                .trim_end_matches([')', '}'])
        })
        .filter(|w| !w.is_empty())
        .peekable();
    loop {
        let w = *words.peek()?;
        if is_assignment(w) {
            words.next();
            continue;
        }
        match WRAPPERS.iter().find(|(name, _)| *name == base_name(w)) {
            Some(&(_, values)) => {
                words.next();
                while words.peek().is_some_and(|w| w.starts_with('-')) {
                    words.next();
                }
                for _ in 0..values {
                    words.next();
                }
            }
            None => break,
        }
    }
    let program = base_name(words.next()?);
    if program.is_empty() || !program.chars().all(is_word_char) {
        return None;
    }
    let mut out = vec![program];
    out.extend(words);
    Some(out)
}

/// `program` alone, or `program subcommand` for a program that has them
/// (`python -m pytest` names its module).
fn render(words: &[&str]) -> String {
    let program = words[0];
    let rest = &words[1..];
    let sub = if let Some((_, valued)) = SUBCOMMANDS.iter().find(|(p, _)| *p == program) {
        subcommand(rest, valued).map(|s| format!("{program} {s}"))
    } else if program.starts_with("python") {
        match rest {
            ["-m", module, ..] if module.chars().all(is_word_char) => {
                Some(format!("{program} -m {module}"))
            }
            _ => None,
        }
    } else {
        None
    };
    let mut key = sub.unwrap_or_else(|| program.to_string());
    if let Some((i, _)) = key.char_indices().nth(MAX_KEY) {
        key.truncate(i);
    }
    key
}

/// The first word that is not a flag nor a flag's value; `None` when the
/// first such word does not look like a subcommand (a redirection, a path).
fn subcommand<'a>(rest: &[&'a str], valued: &[&str]) -> Option<&'a str> {
    let mut words = rest.iter();
    while let Some(&w) = words.next() {
        if w.starts_with('+') {
            continue; // a toolchain: `cargo +nightly test`
        }
        if w.starts_with('-') {
            if valued.contains(&w) {
                words.next();
            }
            continue;
        }
        return w.chars().all(is_word_char).then_some(w);
    }
    None
}

fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
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
            ("pnpm -F api build", "pnpm build"),
            ("kubectl -n prod logs pod/web-1", "kubectl logs"),
            ("docker compose up", "docker compose"),
            ("uv run pytest -x", "uv run"),
            ("go test ./...", "go test"),
            ("pip install -r requirements.txt", "pip install"),
            ("python3 -m pytest tests/", "python3 -m pytest"),
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
        for call in ["", "   ", "X=1", "&& ||", "\"quoted prog\" arg"] {
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
            proptest::prop_assert!(k.split(' ').count() <= 3, "{:?}", k);
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
            let (program, valued) = SUBCOMMANDS[at];
            proptest::prop_assume!(flags.iter().all(|f| !valued.contains(&f.as_str())));
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
