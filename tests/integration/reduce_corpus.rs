//! The corpus gate: every real command output in `bench/fixtures/` through
//! the real `jkz reduce`, with its command and exit code, judged as
//! `bench/savings.py` judges it (a signal line counts when it is a whole
//! line of what the model sees, colour codes and a final CR removed on both
//! sides; the client's own rule applied to jkz's output as to the raw one):
//!
//! - every signal line is in the view when the signal lines fit the budget
//!   with room for the view's own lines (`MIN_BUDGET`), else the view says
//!   how many are not shown (or is the output, whole);
//! - never fewer signal lines than the client alone would show;
//! - the kept file is the raw output, byte for byte (or, left whole, the
//!   output is printed unchanged and nothing is kept).
//!
//! A few fixtures' signal lines answer a question no rule can know (the
//! function under suspicion in a `git blame`, the interpreters in `ls -la
//! /usr/bin`): they are listed in `EXPECTED_MISSES` with why, must still
//! keep what the client keeps, and must still miss some (a fixture that
//! passes leaves the list).

use std::path::{Path, PathBuf};

use regex::Regex;

use crate::util::Dir;

/// `jkz reduce`'s budgets (its defaults) and the room its own lines take.
const BUDGET: usize = 20_000;
const FAILURE_BUDGET: usize = 10_000;
const OWN_LINES: usize = 1_000;

/// The client's rule for a Bash result (bench/savings.py).
const INLINE_CHARS: usize = 30_000;
const PREVIEW_BYTES: usize = 2_000;
const FAIL_READ_CHARS: usize = 30_000;
const FAIL_WHOLE_CHARS: usize = 11_024;
const FAIL_END_CHARS: usize = 5_000;

/// Fixtures whose signal lines are not all kept, and why; each must still
/// keep at least what the client keeps, and must still miss some (a
/// fixture that keeps them all leaves the list).
const EXPECTED_MISSES: &[(&str, &str)] = &[
    // The signal lines answer a question asked of the output, which no
    // rule can know.
    (
        "git-blame-express",
        "question: the res.redirect function, in the middle of a 1,050-line blame",
    ),
    (
        "listing-ls-la-usr-bin",
        "question: which interpreters and toolchains are installed, among 1,800 entries",
    ),
    (
        "listing-grep-rn-deprecated",
        "question: the deprecations in @types/react, among 1,100 matches in node_modules",
    ),
    (
        "listing-ls-R-express",
        "question: the res.redirect test file, one name among 13,000",
    ),
    // More signal lines than the budget holds, by the engine's count: the
    // overflow rule applies (the client's own lines first, a note of the
    // rest) although the fixture's own list would fit.
    (
        "test-vitest-zustand",
        "overflow: vitest names each of 28 failures twice (its per-file list and its FAIL block); 114 signal lines, over 10,000 characters",
    ),
];

struct Fixture {
    name: String,
    command: String,
    exit_code: i32,
    raw: Vec<u8>,
    signals: Vec<String>,
}

fn fixtures() -> Vec<Fixture> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/fixtures");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.iter().map(|d| fixture(d)).collect()
}

fn fixture(dir: &Path) -> Fixture {
    let read = |name: &str| {
        std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{}/{name}: {e}", dir.display()))
    };
    let meta: toml::Table = String::from_utf8(read("fixture.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let signals = String::from_utf8(read("signals.txt")).unwrap();
    Fixture {
        name: dir.file_name().unwrap().to_string_lossy().into_owned(),
        command: meta["command"].as_str().unwrap().to_string(),
        exit_code: meta["exit_code"].as_integer().unwrap() as i32,
        raw: read("output.txt"),
        signals: signals
            .strip_suffix('\n')
            .unwrap_or(&signals)
            .split('\n')
            .map(str::to_string)
            .collect(),
    }
}

/// What the client puts in the window for a Bash result: its text, and
/// the lines (by index) it shows cut. A failing command's: `Exit code N`
/// and the first 30,000 characters, trailing white space trimmed; over
/// 11,024 characters in all, the first and last 5,000 around a marker
/// (measured on 2.1.332, docs/clients.md).
fn client_view(text: &str, exit_code: i32) -> (String, Vec<usize>) {
    if exit_code != 0 {
        let read: String = text.chars().take(FAIL_READ_CHARS).collect();
        let read_cut = read.len() < text.len() && !read.ends_with('\n');
        let whole: Vec<char> = format!("Exit code {exit_code}\n{}", read.trim_end())
            .chars()
            .collect();
        let newlines = |s: &[char]| s.iter().filter(|&&c| c == '\n').count();
        if whole.len() <= FAIL_WHOLE_CHARS {
            let cut = if read_cut {
                vec![newlines(&whole)]
            } else {
                vec![]
            };
            return (whole.into_iter().collect(), cut);
        }
        let head = &whole[..FAIL_END_CHARS];
        let tail = &whole[whole.len() - FAIL_END_CHARS..];
        let view = format!(
            "{}\n\n... [{} characters truncated] ...\n\n{}",
            head.iter().collect::<String>(),
            whole.len() - 2 * FAIL_END_CHARS,
            tail.iter().collect::<String>()
        );
        let mut cut = Vec::new();
        if head.last() != Some(&'\n') {
            cut.push(newlines(head));
        }
        if whole[whole.len() - FAIL_END_CHARS - 1] != '\n' {
            cut.push(newlines(head) + 4);
        }
        if read_cut {
            cut.push(view.matches('\n').count());
        }
        return (view, cut);
    }
    if text.chars().count() <= INLINE_CHARS {
        return (text.to_string(), vec![]);
    }
    let first = &text.as_bytes()[..PREVIEW_BYTES.min(text.len())];
    match first.iter().rposition(|&b| b == b'\n') {
        Some(nl) => (String::from_utf8_lossy(&first[..nl]).into_owned(), vec![]),
        None => {
            let preview = String::from_utf8_lossy(first).into_owned();
            let last = preview.matches('\n').count();
            (preview, vec![last])
        }
    }
}

/// How many of `signals` are whole lines of a view.
fn kept(signals: &[String], (view, cut): &(String, Vec<usize>), ansi: &Regex) -> usize {
    let norm = |l: &str| ansi.replace_all(l, "").trim_end_matches('\r').to_string();
    let lines: std::collections::HashSet<String> = view
        .split('\n')
        .enumerate()
        .filter(|(i, _)| !cut.contains(i))
        .map(|(_, l)| norm(l))
        .collect();
    signals.iter().filter(|s| lines.contains(&norm(s))).count()
}

#[test]
fn every_fixture_keeps_its_signal_lines_never_fewer_than_the_client_and_the_whole_output() {
    let ansi = Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").unwrap();
    let fixtures = fixtures();
    assert!(fixtures.len() >= 40, "{} fixtures", fixtures.len());
    let mut problems = Vec::new();
    for f in &fixtures {
        let dir = Dir::new();
        std::fs::create_dir(dir.join("state")).unwrap();
        let run = dir
            .cmd("jkz")
            .args(["--state-dir", "state", "reduce", "--command", &f.command])
            .args(["--exit-code", &f.exit_code.to_string()])
            .stdin(&f.raw)
            .run()
            .success();
        let raw = String::from_utf8(f.raw.clone()).unwrap();
        let out = run.stdout_str();
        let client = kept(&f.signals, &client_view(&raw, f.exit_code), &ansi);
        let jkz = kept(&f.signals, &client_view(&out, f.exit_code), &ansi);
        let mut problem = |what: String| problems.push(format!("{}: {what}", f.name));

        // The whole output, kept or printed.
        let kept_files: Vec<PathBuf> = match std::fs::read_dir(dir.join("state/context-offload")) {
            Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        };
        match kept_files.as_slice() {
            [] if run.stdout() == f.raw => {}
            [file] if std::fs::read(file).unwrap() == f.raw => {
                if !out.contains(&file.file_name().unwrap().to_string_lossy().into_owned()) {
                    problem("the view does not name its kept file".into());
                }
            }
            files => problem(format!("kept {files:?}, none the raw output")),
        }

        // Never fewer signal lines than the client alone.
        let noted = out
            .lines()
            .any(|l| l.starts_with("[jkz: ") && l.contains(" signal lines not shown "));
        if jkz < client {
            problem(format!(
                "{jkz} signal lines kept, the client alone keeps {client}"
            ));
        }

        // Every signal line when they fit, else the overflow note.
        let budget = if f.exit_code == 0 {
            BUDGET
        } else {
            FAILURE_BUDGET
        };
        let signal_chars: usize = f
            .signals
            .iter()
            .map(|s| ansi.replace_all(s, "").encode_utf16().count() + 1)
            .sum();
        let all = jkz == f.signals.len();
        let expected = EXPECTED_MISSES.iter().find(|(name, _)| *name == f.name);
        match (expected, signal_chars + OWN_LINES <= budget) {
            (Some((_, why)), _) if all => problem(format!(
                "keeps every signal line now: take it off EXPECTED_MISSES ({why})"
            )),
            (Some(_), _) => {}
            (None, true) if !all => problem(format!(
                "{jkz} of {} signal lines kept ({signal_chars} characters fit {budget})",
                f.signals.len()
            )),
            (None, false) if !all && !noted => problem(format!(
                "{jkz} of {} signal lines kept and no note says how many are not shown",
                f.signals.len()
            )),
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
