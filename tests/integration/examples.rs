//! Every example in README.md and docs/*.md runs as written.
//!
//! An example is a fenced block whose info string is `sh` (also `bash`,
//! `shell`): a script, run whole; or `console`: a session, each `$ ` line a
//! command, the lines after it up to the next `$ ` the output it prints
//! (checked; a command with no line after it is only run). A session's
//! command that ends in a comment `# exit N` (or `# exits N`) is expected to
//! exit N, so a page can show a refusal as the reader will meet it. A synopsis
//! (`jkz stats [--by …]`), an output shown alone and a diagram go in a
//! `text` block, which is never run; a bare fence that starts with `$ ` is
//! a session that forgot its label, and fails the test.
//!
//! Each page gets a sandbox of its own: a temp directory with `HOME` in it,
//! a git repository with `jkz install` done and committed and a linked
//! worktree for issue 42, the built binaries on `PATH`, and what the page
//! assumes happened before its first example. Every placeholder the examples
//! use (a model wrapper such as `run-judge`, a file such as `plan.md`, `gh`'s
//! answer, `$ISSUE`, `$1`) is defined once, in `examples/fixtures.sh`. The
//! page's examples then run in order, as a reader following the page would
//! run them, each in a bash process of its own (`set -e -o pipefail`, stdin
//! empty, a deadline), which must exit 0 (or the N it states); a stated output must match what
//! the command printed, line for line, with wall-clock fields masked on
//! both sides (`2025-03-01 12:00:00`, `2025-03-01T12:00:00.123Z`, and a
//! record id `20250301T120000.123Z-42-judge-4711` whole) and trailing
//! blanks ignored. The few that cannot run here are listed in [`NOT_RUN`],
//! each with the reason.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use regex::Regex;

use crate::util::{bin, scrubbed, Dir};

/// An example, or one line of one, that the suite does not run.
struct NotRun {
    /// The page, as `README.md` or `docs/setup.md`.
    page: &'static str,
    /// How the line starts: the first line of a block skips the block; any
    /// other line of a block skips that line only (it becomes a no-op).
    line: &'static str,
    why: &'static str,
}

/// Every example that is not run, and why. An entry that no longer names
/// an example fails the test, so the list cannot outlive what it excuses.
const NOT_RUN: &[NotRun] = &[
    NotRun {
        page: "README.md",
        line: "./install.sh ",
        why: "builds jkz in release mode (minutes) and runs the whole suite, this test included",
    },
    NotRun {
        page: "docs/setup.md",
        line: "./install.sh ",
        why: "builds jkz in release mode (minutes) and runs the whole suite, this test included",
    },
    NotRun {
        page: "docs/setup.md",
        line: "claude plugin marketplace add ",
        why: "needs the real Claude Code client (the plugin's tests: tests/integration/client/)",
    },
    NotRun {
        page: "docs/worktrees.md",
        line: "docker run -d --name jkz-registry ",
        why: "starts a PostgreSQL container (Docker, the network) and connects to the host db.example (team mode's tests: tests/integration/team.rs)",
    },
    NotRun {
        page: "docs/worktrees.md",
        line: "$ jkz registry migrate",
        why: "the answer of the team registry at db.example after a person renamed a column (tests/integration/regression/stores.rs)",
    },
    NotRun {
        page: "docs/registry.md",
        line: "$ jkz chats",
        why: "chats of two machines sharing a team registry: a PostgreSQL server and a second host",
    },
    NotRun {
        page: "docs/savings.md",
        line: "$ jkz stats --by family",
        why: "the ledger of five tool calls of a real chat (the ledger's tests: tests/integration/stats.rs)",
    },
    NotRun {
        page: "README.md",
        line: "jkz ui --open ",
        why: "serves until stopped and opens a browser (tests/integration/ui.rs, ui_browser.rs)",
    },
];

/// How long one example (or one command of a session) may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// Pages that run at once: each is a sequence of short processes.
const WORKERS: usize = 4;

fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    checkout().join("tests/integration/examples/fixtures.sh")
}

/// README.md and every page in docs/, as paths relative to the checkout.
fn pages() -> Vec<String> {
    let mut docs: Vec<String> = std::fs::read_dir(checkout().join("docs"))
        .expect("read docs/")
        .map(|entry| entry.expect("a docs/ entry").file_name())
        .filter_map(|name| name.to_str().map(str::to_string))
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    let mut pages = vec!["README.md".to_string()];
    pages.extend(docs);
    pages
}

/// A fenced block: its info string, the line its opening fence is on
/// (1-based), and its lines with their numbers.
struct Fence {
    info: String,
    line: usize,
    body: Vec<(usize, String)>,
}

/// Every fenced block of a page (``` or ~~~, indented as in a list too).
fn fences(text: &str) -> Vec<Fence> {
    let lines: Vec<&str> = text.lines().collect();
    let mut fences = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        let fence_char = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'));
        let run = fence_char.map_or(0, |c| trimmed.len() - trimmed.trim_start_matches(c).len());
        let info = &trimmed[run..];
        // CommonMark: a backtick fence's info string holds no backtick, so
        // a line that starts with inline code (```` ```x ```` …) opens none.
        let Some(c) = fence_char.filter(|&c| run >= 3 && !(c == '`' && info.contains('`'))) else {
            i += 1;
            continue;
        };
        let closes = |l: &str| {
            let l = l.trim();
            l.len() >= run && l.chars().all(|x| x == c)
        };
        let open = i;
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() && !closes(lines[i]) {
            let l = lines[i];
            let strip = indent.min(l.len() - l.trim_start().len());
            body.push((i + 1, l[strip..].to_string()));
            i += 1;
        }
        i += 1;
        fences.push(Fence {
            info: info.trim().to_string(),
            line: open + 1,
            body,
        });
    }
    fences
}

/// One thing to run: a script, or one command of a session, with the
/// output the docs state for it.
struct Step {
    /// Where it is: the opening fence of a script, the `$ ` line of a
    /// session's command.
    line: usize,
    script: String,
    stated: Option<Stated>,
    /// The exit status it must end with: 0 unless a session's command
    /// states another (`# exit N`).
    exit: i32,
}

struct Stated {
    line: usize,
    lines: Vec<String>,
}

/// An example: a block of a page.
struct Example {
    line: usize,
    first_line: String,
    steps: Vec<Step>,
}

fn is_script(info: &str) -> bool {
    matches!(info, "sh" | "bash" | "shell")
}

/// The examples of one page, in order.
fn examples(page: &str, text: &str) -> Vec<Example> {
    let mut examples = Vec::new();
    for fence in fences(text) {
        let first_line = fence
            .body
            .first()
            .map(|(_, l)| l.clone())
            .unwrap_or_default();
        let steps = if is_script(&fence.info) {
            vec![Step {
                line: fence.line,
                script: fence.body.iter().map(|(_, l)| format!("{l}\n")).collect(),
                stated: None,
                exit: 0,
            }]
        } else if fence.info == "console" {
            session_steps(page, &fence.body)
        } else {
            continue;
        };
        examples.push(Example {
            line: fence.line,
            first_line,
            steps,
        });
    }
    examples
}

/// A console session's commands, each with the lines it prints (none
/// shown: not checked).
fn session_steps(page: &str, body: &[(usize, String)]) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    for (n, line) in body {
        if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step {
                line: *n,
                script: format!("{command}\n"),
                stated: None,
                exit: stated_exit(command),
            });
        } else if let Some(step) = steps.last_mut() {
            step.stated
                .get_or_insert_with(|| Stated {
                    line: *n,
                    lines: Vec::new(),
                })
                .lines
                .push(line.clone());
        } else {
            panic!("{page}:{n}: a console block's output before any `$ ` command");
        }
    }
    steps
}

/// The exit status a session's command states in a trailing comment
/// (`$ jkz claim 43 --worktree /tmp   # exit 2`), else 0.
fn stated_exit(command: &str) -> i32 {
    static EXIT: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    EXIT.get_or_init(|| Regex::new(r"(?:^|\s)#\s*exits?\s+(\d+)\b[^#]*$").unwrap())
        .captures(command)
        .and_then(|c| c[1].parse().ok())
        .unwrap_or(0)
}

/// What a process did.
struct Outcome {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    timed_out: bool,
}

/// The environment every process of a page's sandbox gets.
fn sandbox_env(cmd: &mut Command, root: &Path, page: &str) {
    for (key, _) in std::env::vars_os() {
        let key_str = key.to_string_lossy();
        // Git's variables would point the sandbox at another repository;
        // bash would source BASH_ENV; XDG_CONFIG_HOME holds a git config.
        if key_str.starts_with("GIT_")
            || key_str.starts_with("XDG_")
            || matches!(&*key_str, "BASH_ENV" | "ENV" | "CDPATH")
        {
            cmd.env_remove(&key);
        }
    }
    let bins = bin("jkz")
        .parent()
        .expect("the binaries' directory")
        .to_path_buf();
    cmd.env("HOME", root.join("home"))
        .env(
            "PATH",
            format!(
                "{}:{}:/usr/local/bin:/usr/bin:/bin",
                root.join("bin").display(),
                bins.display()
            ),
        )
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("TZ", "UTC")
        .env("EXAMPLES_ROOT", root)
        .env("EXAMPLES_PAGE", page)
        .env("EXAMPLES_CHECKOUT", checkout())
        .env("EXAMPLES_FIXTURES", fixtures());
}

/// Runs `script` with bash in the sandbox at `root`, in a process group of
/// its own that is ended when the script is (a command it left behind
/// would hold the output pipes open) or at the deadline.
fn run_in_sandbox(root: &Path, page: &str, script: &str) -> Outcome {
    let mut cmd = scrubbed("bash", root);
    cmd.args(["--noprofile", "--norc", "-c", script]);
    sandbox_env(&mut cmd, root, page);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bash");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let start = Instant::now();
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait().expect("wait for bash") {
            break (Some(status), false);
        }
        if start.elapsed() > DEADLINE {
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    crate::util::signal_group(child.id(), rustix::process::Signal::KILL);
    let status = status.or_else(|| child.wait().ok());
    Outcome {
        code: status.and_then(|s| s.code()),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
        timed_out,
    }
}

/// Wall-clock fields, masked on both sides before a stated output is
/// compared: a record id (its time and pid) whole, then timestamps.
fn masked(line: &str) -> String {
    static MASKS: std::sync::OnceLock<[Regex; 2]> = std::sync::OnceLock::new();
    let [id, time] = MASKS.get_or_init(|| {
        [
            Regex::new(r"\b\d{8}T\d{6}(\.\d+)?Z(-[A-Za-z0-9._-]+)?").unwrap(),
            Regex::new(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z?").unwrap(),
        ]
    });
    let line = id.replace_all(line.trim_end(), "<id>");
    time.replace_all(&line, "<time>").into_owned()
}

fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(40);
    let shown = lines[from..].join("\n");
    if from > 0 {
        format!("… ({} lines before)\n{shown}", from)
    } else {
        shown
    }
}

/// The tally of the whole run.
#[derive(Default)]
struct Tally {
    found: usize,
    passed: usize,
    not_run: usize,
    lines_not_run: usize,
    failures: Vec<String>,
}

/// Which entries of [`NOT_RUN`] were used.
type Used = Mutex<Vec<bool>>;

/// Runs a page's examples in a sandbox of its own.
fn run_page(page: &str, tally: &Mutex<Tally>, used: &Used) {
    let text = std::fs::read_to_string(checkout().join(page)).expect("read a page");
    let examples = examples(page, &text);
    if examples.is_empty() {
        return;
    }
    let dir = Dir::new();
    let root = dir.path();
    let made = run_in_sandbox(root, page, r#". "$EXAMPLES_FIXTURES" && make_sandbox"#);
    if made.code != Some(0) {
        let mut t = tally.lock().unwrap();
        t.found += examples.len();
        t.failures.push(format!(
            "{page}: the sandbox of its examples could not be made (exit {:?})\nstdout:\n{}\nstderr:\n{}",
            made.code,
            tail(&made.stdout),
            tail(&made.stderr)
        ));
        return;
    }
    std::fs::create_dir_all(root.join("examples")).expect("make examples/");
    for example in examples {
        let not_run = |line: &str| {
            NOT_RUN
                .iter()
                .position(|n| n.page == page && line.starts_with(n.line))
        };
        if let Some(k) = not_run(&example.first_line) {
            used.lock().unwrap()[k] = true;
            let mut t = tally.lock().unwrap();
            t.found += 1;
            t.not_run += 1;
            continue;
        }
        let mut failure = None;
        for step in &example.steps {
            let script: String = step
                .script
                .lines()
                .map(|line| match not_run(line) {
                    Some(k) => {
                        used.lock().unwrap()[k] = true;
                        tally.lock().unwrap().lines_not_run += 1;
                        format!("true # not run: {}\n", NOT_RUN[k].why)
                    }
                    None => format!("{line}\n"),
                })
                .collect();
            let file =
                root.join("examples")
                    .join(format!("{}:{}.sh", page.replace('/', "_"), step.line));
            std::fs::write(&file, &script).expect("write an example");
            let run = run_in_sandbox(
                root,
                page,
                &format!(
                    r#". "$EXAMPLES_FIXTURES" && enter_sandbox && set -e -o pipefail && . '{}'"#,
                    file.display()
                ),
            );
            failure = check(page, step, &script, &run);
            if failure.is_some() {
                break;
            }
        }
        let mut t = tally.lock().unwrap();
        t.found += 1;
        match failure {
            Some(f) => t.failures.push(f),
            None => t.passed += 1,
        }
    }
}

/// What is wrong with a step's run, if anything.
fn check(page: &str, step: &Step, script: &str, run: &Outcome) -> Option<String> {
    let shown = |why: String| {
        format!(
            "{page}:{}: {why}\n--- the example\n{script}--- stdout\n{}\n--- stderr\n{}",
            step.line,
            tail(&run.stdout),
            tail(&run.stderr)
        )
    };
    if run.timed_out {
        return Some(shown(format!(
            "did not finish within {} s",
            DEADLINE.as_secs()
        )));
    }
    if run.code != Some(step.exit) {
        return Some(shown(format!(
            "exit status {:?}, expected {}",
            run.code, step.exit
        )));
    }
    let stated = step.stated.as_ref()?;
    let printed: Vec<String> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(masked)
        .collect();
    let expected: Vec<String> = stated.lines.iter().map(|l| masked(l)).collect();
    (printed != expected).then(|| {
        shown(format!(
            "the output stated at {page}:{} no longer matches (wall-clock fields masked)\n--- stated\n{}\n--- printed\n{}",
            stated.line,
            expected.join("\n"),
            printed.join("\n")
        ))
    })
}

#[test]
fn every_example_in_the_readme_and_docs_runs_as_written() {
    let pages = pages();
    let tally = Mutex::new(Tally::default());
    let used: Used = Mutex::new(vec![false; NOT_RUN.len()]);
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(page) = pages.get(k) else { break };
                run_page(page, &tally, &used);
            });
        }
    });
    let tally = tally.into_inner().unwrap();
    let stale: Vec<String> = NOT_RUN
        .iter()
        .zip(used.into_inner().unwrap())
        .filter(|(_, used)| !used)
        .map(|(n, _)| format!("{}: {:?}", n.page, n.line))
        .collect();
    eprintln!(
        "examples: {} found, {} ran and passed, {} not run (listed), {} failed; {} line(s) of run examples left out (listed)",
        tally.found,
        tally.passed,
        tally.not_run,
        tally.failures.len(),
        tally.lines_not_run
    );
    assert!(
        tally.failures.is_empty(),
        "{} example(s) failed:\n\n{}",
        tally.failures.len(),
        tally.failures.join("\n\n")
    );
    assert!(
        stale.is_empty(),
        "entries of NOT_RUN that name no example (remove them):\n{}",
        stale.join("\n")
    );
    assert!(
        tally.passed >= 10,
        "only {} examples ran: is the block scan broken?",
        tally.passed
    );
}

#[test]
fn the_example_scan_reads_scripts_and_sessions_and_nothing_else() {
    let page = "intro\n\n```sh\necho one\n```\n\n```text\none\n```\n\n   ```console\n   $ echo two\n   two\n   $ true\n   ```\n\n```` ```sh ```` is inline code\n\n````toml\n```sh\nx = 1\n````\n";
    let found = examples("p.md", page);
    assert_eq!(found.len(), 2, "the sh and the console block, nothing else");
    assert_eq!((found[0].line, found[0].steps.len()), (3, 1));
    assert_eq!(found[0].steps[0].script, "echo one\n");
    assert!(
        found[0].steps[0].stated.is_none(),
        "a text block is never output to check"
    );
    assert_eq!(found[1].line, 11);
    let steps = &found[1].steps;
    assert_eq!(steps.len(), 2);
    assert_eq!(
        (steps[0].line, steps[0].script.as_str()),
        (12, "echo two\n")
    );
    let stated = steps[0].stated.as_ref().expect("a stated output");
    assert_eq!(
        (stated.line, &stated.lines[..]),
        (13, &["two".to_string()][..])
    );
    assert!(
        steps[1].stated.is_none(),
        "a command with no output shown is not checked"
    );
    assert_eq!((steps[0].exit, steps[1].exit), (0, 0));
}

#[test]
fn a_session_command_states_the_exit_status_it_ends_with() {
    assert_eq!(stated_exit("jkz claim 43 --worktree /tmp   # exit 2"), 2);
    assert_eq!(stated_exit("jkz events  # exits 4: no state directory"), 4);
    assert_eq!(stated_exit("jkz events"), 0);
    assert_eq!(stated_exit("echo '#exit 3' # the whole answer"), 0);
    assert_eq!(stated_exit("grep -c exit 3 file"), 0);
}

#[test]
fn wall_clock_fields_are_masked_and_nothing_else() {
    assert_eq!(
        masked("2025-03-01 12:00:00  42  FAIL  18,204  20250301T120000.123Z-42-judge-4711  "),
        "<time>  42  FAIL  18,204  <id>"
    );
    assert_eq!(masked("at 2026-11-28T06:13:13.512Z."), "at <time>.");
    assert_eq!(
        masked("issue 42, iteration 3: 1-3"),
        "issue 42, iteration 3: 1-3"
    );
}

/// A fence without an info string that starts with `$ ` is a session the
/// test would not run: it must say what it is.
#[test]
fn no_session_hides_in_an_unlabeled_fence() {
    let mut unlabeled = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(checkout().join(&page)).expect("read a page");
        for fence in fences(&text) {
            let starts_a_session = fence.body.first().is_some_and(|(_, l)| l.starts_with("$ "));
            if fence.info.is_empty() && starts_a_session {
                unlabeled.push(format!("{page}:{}", fence.line));
            }
        }
    }
    assert!(
        unlabeled.is_empty(),
        "label these ```console (run, and its output checked) or ```text (shown only): {}",
        unlabeled.join(", ")
    );
}
