//! Command output reduced on every client path, end to end in the real
//! clients: what the model's next request carries of a build log and of a
//! failing `cargo test`, with jkz installed (`jkz install`) and without it.
//!
//! - Claude Code, started as pipelines start it (`--allowedTools Bash,Read`):
//!   `jkz-chat` wraps the Bash call, `jkz-truncate --for claude` prints the
//!   view; a successful build keeps every distinct warning in a quarter of
//!   the log, a failing test run keeps its failures, panics and summary and
//!   the status the client reports, and the model reads a range of the kept
//!   file with the client's own Read.
//! - Codex CLI and Gemini CLI: the shell call runs through `jkz-truncate
//!   --run`; the failing test run reaches the model with what matters, in
//!   far less than the client's own cut.
//!
//! Each test prints a small table (characters raw, with the client alone,
//! with jkz; needed lines kept).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use super::adapter::{ClaudeCode, CodexCli, CopilotCli, GeminiCli, OpenCode};
use super::stub_model::{Request, StubModel, Turn};
use super::{Project, RealClient};
use crate::util::git;

/// A failing `cargo test` of about `bytes` bytes: thousands of passing
/// tests, two failures with their panics, the summary last.
fn failing_cargo_test(bytes: usize) -> String {
    let mut out = String::from("   Compiling jkz-demo v0.1.0\n    Finished `test` profile\n     Running unittests src/lib.rs\n\nrunning 9000 tests\n");
    let mut i = 0;
    while out.len() < bytes / 2 {
        out.push_str(&format!("test module_{i:05}::case ... ok\n"));
        i += 1;
    }
    out.push_str("test parser::nested ... FAILED\n");
    while out.len() < bytes.saturating_sub(900) {
        out.push_str(&format!("test module_{i:05}::case ... ok\n"));
        i += 1;
    }
    out.push_str("test ledger::rounding ... FAILED\n\nfailures:\n\n---- parser::nested stdout ----\n\nthread 'parser::nested' panicked at src/parser.rs:88:9:\nassertion failed: depth < 64\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n---- ledger::rounding stdout ----\n\nthread 'ledger::rounding' panicked at src/ledger.rs:12:5:\nassertion `left == right` failed\n  left: 99\n right: 100\n\nfailures:\n    ledger::rounding\n    parser::nested\n\ntest result: FAILED. 8998 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.02s\n\nerror: test failed, to rerun pass `--lib`\n");
    out
}

/// What a developer needs of [`failing_cargo_test`]: every failing test
/// name, each panic line and its assertion, the summary.
const TEST_NEEDED: [&str; 7] = [
    "test parser::nested ... FAILED",
    "test ledger::rounding ... FAILED",
    "thread 'parser::nested' panicked at src/parser.rs:88:9:",
    "assertion failed: depth < 64",
    "thread 'ledger::rounding' panicked at src/ledger.rs:12:5:",
    "assertion `left == right` failed",
    "test result: FAILED. 8998 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.02s",
];

/// A passing test deep inside the failing run: the model reads it back from
/// the kept file.
const DEEP_LINE: &str = "test module_04321::case ... ok";

/// The distinct warnings of [`cargo_build_log`]: (headline, anchor, code
/// line, caret line, note).
const WARNINGS: [(&str, &str, &str, &str, &str); 6] = [
    (
        "warning: unused variable: `depth`",
        "src/parser.rs:88:13",
        "let depth = stack.len();",
        "^^^^^ help: if this is intentional, prefix it with an underscore: `_depth`",
        "= note: `#[warn(unused_variables)]` on by default",
    ),
    (
        "warning: unused import: `std::collections::HashMap`",
        "src/ledger.rs:3:5",
        "use std::collections::HashMap;",
        "^^^^^^^^^^^^^^^^^^^^^^^^^",
        "= note: `#[warn(unused_imports)]` on by default",
    ),
    (
        "warning: function `legacy_round` is never used",
        "src/ledger.rs:140:4",
        "fn legacy_round(cents: i64) -> i64 {",
        "   ^^^^^^^^^^^^",
        "= note: `#[warn(dead_code)]` on by default",
    ),
    (
        "warning: variable does not need to be mutable",
        "src/checkout.rs:57:9",
        "let mut total = 0;",
        "----^^^^^\n   |     |\n   |     help: remove this `mut`",
        "= note: `#[warn(unused_mut)]` on by default",
    ),
    (
        "warning: unreachable pattern",
        "src/tokens.rs:211:9",
        "_ => Token::Unknown,",
        "^ no value can reach this",
        "= note: `#[warn(unreachable_patterns)]` on by default",
    ),
    (
        "warning: use of deprecated function `chrono::NaiveDate::from_ymd`: use `from_ymd_opt()` instead",
        "src/dates.rs:19:22",
        "let start = NaiveDate::from_ymd(2024, 1, 1);",
        "^^^^^^^^",
        "= note: `#[warn(deprecated)]` on by default",
    ),
];

/// A successful `cargo build` of about 20 KB: hundreds of `Compiling`
/// lines, the six warnings of [`WARNINGS`] (two of them again at other
/// places), the count and `Finished`.
fn cargo_build_log() -> String {
    const CRATES: [&str; 40] = [
        "proc-macro2",
        "unicode-ident",
        "quote",
        "syn",
        "serde",
        "serde_derive",
        "serde_json",
        "libc",
        "cfg-if",
        "memchr",
        "itoa",
        "ryu",
        "once_cell",
        "log",
        "bitflags",
        "autocfg",
        "version_check",
        "smallvec",
        "scopeguard",
        "lock_api",
        "parking_lot_core",
        "parking_lot",
        "pin-project-lite",
        "bytes",
        "futures-core",
        "futures-sink",
        "futures-channel",
        "futures-util",
        "tokio-macros",
        "mio",
        "socket2",
        "tokio",
        "tracing-core",
        "tracing",
        "regex-syntax",
        "aho-corasick",
        "regex-automata",
        "regex",
        "chrono",
        "thiserror",
    ];
    let mut out = String::new();
    let mut i = 0;
    while out.len() < 17_500 {
        let name = CRATES[i % CRATES.len()];
        let round = i / CRATES.len();
        let name = if round == 0 {
            name.to_string()
        } else {
            format!("{name}-impl{round}")
        };
        out.push_str(&format!(
            "   Compiling {name} v{}.{}.{}\n",
            i % 3,
            (i * 7) % 40,
            (i * 13) % 25
        ));
        i += 1;
    }
    out.push_str("   Compiling demo v0.1.0 (/home/dev/demo)\n");
    let block = |(head, anchor, code, caret, note): (&str, &str, &str, &str, &str)| {
        let line: usize = anchor.split(':').nth(1).unwrap().parse().unwrap();
        let col: usize = anchor.split(':').nth(2).unwrap().parse().unwrap();
        let width = line.to_string().len();
        let pad = " ".repeat(width);
        format!(
            "{head}\n{pad}--> {anchor}\n{pad} |\n{line} |     {code}\n{pad} | {}{caret}\n{pad} |\n{pad} {note}\n\n",
            " ".repeat(col.saturating_sub(1))
        )
    };
    for w in WARNINGS {
        out.push_str(&block(w));
    }
    // The same warnings again, elsewhere: the repeats.
    let (h, _, c, k, n) = WARNINGS[0];
    out.push_str(&block((h, "src/checkout.rs:102:13", c, k, n)));
    let (h, _, c, k, n) = WARNINGS[3];
    out.push_str(&block((h, "src/parser.rs:230:9", c, k, n)));
    let (h, _, c, k, n) = WARNINGS[0];
    out.push_str(&block((h, "src/tokens.rs:64:13", c, k, n)));
    out.push_str("warning: `demo` (lib) generated 9 warnings (run `cargo fix --lib -p demo` to apply 5 suggestions)\n");
    out.push_str("    Finished `dev` profile [unoptimized + debuginfo] target(s) in 41.27s\n");
    out
}

/// A project script `name` that prints `output` and exits `code`.
fn script(dir: &Path, name: &str, output: &str, code: i32) {
    std::fs::write(dir.join(format!("{name}.out")), output).unwrap();
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("#!/bin/sh\ncat \"$(dirname \"$0\")/{name}.out\"\nexit {code}\n"),
    )
    .unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The lines of `needed` missing from `seen`.
fn missing<'a>(needed: &[&'a str], seen: &str) -> Vec<&'a str> {
    needed
        .iter()
        .copied()
        .filter(|n| !seen.contains(n))
        .collect()
}

/// The path the view names as the kept whole output.
fn kept_file(view: &str) -> Option<String> {
    let at = view.find("[jkz: full output: ")? + "[jkz: full output: ".len();
    let path = view[at..].split([' ', ']', '\n']).next()?;
    Some(path.to_string())
}

/// One row of a table: characters raw, with the client alone, with jkz,
/// needed lines kept each way.
fn table(what: &str, raw: usize, alone: &str, jkz: &str, needed: &[&str]) -> String {
    let kept = |s: &str| needed.len() - missing(needed, s).len();
    format!(
        "| {what} | {raw} | {} | {} | {}/{n} | {}/{n} |",
        alone.chars().count(),
        jkz.chars().count(),
        kept(alone),
        kept(jkz),
        n = needed.len()
    )
}

const HEADER: &str = "| output | chars raw | client alone | with jkz | needed kept, alone | needed kept, jkz |\n|---|---|---|---|---|---|";

// ---------------------------------------------------------------- Claude Code

/// The tool outputs of the longest conversation the model was sent, as
/// (text, `is_error`), in the order the calls were made.
fn outputs_seen(server: &StubModel) -> Vec<(String, bool)> {
    server
        .model_requests()
        .iter()
        .map(Request::tool_outputs)
        .max_by_key(Vec::len)
        .unwrap_or_default()
        .into_iter()
        .map(|o| (o.text, o.is_error))
        .collect()
}

/// What one Claude Code turn gave the model.
struct ClaudeSeen {
    /// The tool results, in the order the calls were made.
    results: Vec<(String, bool)>,
    project: Project<ClaudeCode>,
    report: String,
}

/// One `claude -p` turn in which the model runs `command` with Bash; when
/// `read_back` says which line of the kept file to read (1-based), it
/// then reads a range around it with Read from the file the view names.
fn claude_turn(
    jkz: bool,
    command: &'static str,
    setup: impl Fn(&Path),
    read_back: Option<usize>,
) -> ClaudeSeen {
    let server = StubModel::start(Arc::new(move |r: &Request| match r.tool_outputs().len() {
        0 => Turn::Call {
            name: "Bash".into(),
            input: json!({"command": command, "description": "Build and test"}),
        },
        1 if read_back.is_some() => {
            let view = r.tool_outputs().pop().map(|o| o.text).unwrap_or_default();
            match kept_file(&view) {
                Some(path) => Turn::Call {
                    name: "Read".into(),
                    input: json!({"file_path": path,
                                      "offset": read_back.unwrap() - 2, "limit": 5}),
                },
                None => Turn::Text("The view names no kept file.".into()),
            }
        }
        _ => Turn::Text("Done.".into()),
    }));
    let project = ClaudeCode::project(&server);
    if jkz {
        project.install_jkz();
        assert!(project.path().join("state").is_dir(), "jkz install opts in");
    }
    setup(project.path());
    let run = project.run("Build and test it.", &["--allowedTools", "Bash,Read"]);
    let report = run.report();
    let _ = run.session_id();
    let results = outputs_seen(&server);
    ClaudeSeen {
        results,
        project,
        report,
    }
}

#[test]
fn claude_a_build_log_reaches_the_model_in_a_quarter_with_every_warning() {
    let raw = cargo_build_log();
    assert!((18_000..24_000).contains(&raw.len()), "{}", raw.len());
    let setup = |dir: &Path| script(dir, "cargo-build", &cargo_build_log(), 0);
    let headlines: Vec<&str> = WARNINGS.iter().map(|w| w.0).collect();
    let alone = claude_turn(false, "./cargo-build 2>&1", setup, None);
    let jkz = claude_turn(true, "./cargo-build 2>&1", setup, None);
    let (alone_view, _) = &alone.results[0];
    let (view, is_error) = &jkz.results[0];
    eprintln!(
        "Claude Code, a successful cargo build with warnings:\n{HEADER}\n{}",
        table(
            "cargo build, 9 warnings, exit 0",
            raw.chars().count(),
            alone_view,
            view,
            &headlines
        )
    );
    eprintln!("with jkz, the model saw:\n{view}");
    assert!(!is_error, "{view}\n{}", jkz.report);
    assert!(
        view.chars().count() * 4 <= raw.chars().count(),
        "more than a quarter of {} characters: {}\n{view}",
        raw.chars().count(),
        view.chars().count()
    );
    let lost = missing(&headlines, view);
    assert!(lost.is_empty(), "warnings lost: {lost:?}\n{view}");
    // Every place a warning points at, the repeats' too.
    let anchors: Vec<&str> = raw
        .lines()
        .filter(|l| l.trim_start().starts_with("--> "))
        .collect();
    assert_eq!(anchors.len(), 9);
    let lost = missing(&anchors, view);
    assert!(lost.is_empty(), "anchors lost: {lost:?}\n{view}");
    // The client alone shows the log whole: the saving is jkz's.
    assert!(
        missing(&headlines, alone_view).is_empty(),
        "{alone_view:.2000}"
    );
    assert!(alone_view.chars().count() >= raw.chars().count() - 100);
    // Reduced by the wrap, which saw the command's own status.
    let ledger = std::fs::read_to_string(jkz.project.path().join("state/tool-output.jsonl"))
        .expect("the ledger");
    let wrap: Vec<Value> = ledger
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["via"] == "wrap")
        .collect();
    assert_eq!(wrap.len(), 1, "{ledger}");
    assert_eq!(wrap[0]["exit"], 0, "{ledger}");
    assert_eq!(wrap[0]["full"], raw.len(), "{ledger}");
}

#[test]
fn claude_a_failing_400k_cargo_test_keeps_its_failures_and_the_model_reads_the_kept_file() {
    let raw = failing_cargo_test(400_000);
    let deep = raw
        .lines()
        .position(|l| l == DEEP_LINE)
        .expect("the deep line")
        + 1;
    let setup = |dir: &Path| script(dir, "cargo-test", &failing_cargo_test(400_000), 101);
    let alone = claude_turn(false, "./cargo-test 2>&1", setup, None);
    let jkz = claude_turn(true, "./cargo-test 2>&1", setup, Some(deep));
    let (alone_view, alone_error) = &alone.results[0];
    let (view, is_error) = &jkz.results[0];
    eprintln!(
        "Claude Code, a failing cargo test (exit 101):\n{HEADER}\n{}",
        table(
            "cargo test, 2 failures, exit 101",
            raw.chars().count(),
            alone_view,
            view,
            &TEST_NEEDED
        )
    );
    eprintln!("with jkz, the model saw:\n{view}");
    assert!(*alone_error && *is_error, "{view:.3000}\n{}", jkz.report);
    assert!(view.starts_with("Exit code 101"), "{view:.300}");
    let lost = missing(&TEST_NEEDED, view);
    assert!(lost.is_empty(), "lost: {lost:?}\n{view}\n{}", jkz.report);
    // Within what the client shows of a failing command whole.
    assert!(view.chars().count() <= 11_024, "{}", view.chars().count());
    assert!(
        !missing(&TEST_NEEDED, alone_view).is_empty(),
        "the client alone kept everything: the test measures nothing\n{alone_view}"
    );

    // The model reads a range of the kept file with the client's Read.
    let path = kept_file(view).unwrap_or_else(|| panic!("no kept file named:\n{view}"));
    assert!(
        Path::new(&path).starts_with(jkz.project.path().join("state/context-offload"))
            || Path::new(&path).starts_with(
                jkz.project
                    .path()
                    .canonicalize()
                    .unwrap()
                    .join("state/context-offload")
            ),
        "{path}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), raw.as_bytes(), "{path}");
    let (read, read_error) = jkz
        .results
        .get(1)
        .unwrap_or_else(|| panic!("no Read result\n{}", jkz.report));
    assert!(!read_error, "{read}");
    assert!(
        read.contains(DEEP_LINE),
        "line {deep} of {path} not in the Read result:\n{read}"
    );

    // The ledger: one wrap line, the command's own status.
    let ledger = std::fs::read_to_string(jkz.project.path().join("state/tool-output.jsonl"))
        .expect("the ledger");
    let lines: Vec<Value> = ledger
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let wrap: Vec<&Value> = lines.iter().filter(|l| l["via"] == "wrap").collect();
    assert_eq!(wrap.len(), 1, "{ledger}");
    assert_eq!(wrap[0]["exit"], 101, "{ledger}");
    assert_eq!(wrap[0]["full"], raw.len(), "{ledger}");
}

/// A Rust file of `functions` functions, eight lines each (the fn line of
/// `step_i` is line 8i + 2).
fn rust_source(functions: usize) -> String {
    (0..functions)
        .map(|i| format!("/// Step {i}: mixes the input with its index, its triple and their difference.\npub fn step_{i:04}(x: u32) -> u32 {{\n    let y = x.wrapping_add({i}); // the input, offset by the step's own index\n    let z = y.wrapping_mul(3); // its triple, which may wrap around on purpose\n    let w = z.wrapping_sub(y); // the difference, twice the offset input\n    y ^ z ^ w // all three, mixed\n}}\n\n"))
        .collect()
}

const STEP_180: &str = "pub fn step_0180(x: u32) -> u32 {";
const STEP_180_RENAMED: &str = "pub fn step_0180_checked(x: u32) -> u32 {";

#[test]
fn claude_a_large_source_read_is_an_outline_and_the_agent_edits_a_line_it_lists() {
    let file: Arc<std::sync::OnceLock<String>> = Arc::new(std::sync::OnceLock::new());
    let at = Arc::clone(&file);
    let server = StubModel::start(Arc::new(move |r: &Request| {
        let path = at.get().cloned().unwrap_or_default();
        match r.tool_outputs().len() {
            0 => Turn::Call {
                name: "Read".into(),
                input: json!({"file_path": path}),
            },
            1 => Turn::Call {
                name: "Edit".into(),
                input: json!({"file_path": path, "old_string": STEP_180,
                              "new_string": STEP_180_RENAMED}),
            },
            _ => Turn::Text("Done.".into()),
        }
    }));
    let project = ClaudeCode::project(&server);
    project.install_jkz();
    let source = rust_source(240);
    let path = project.path().join("src/steps.rs");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &source).unwrap();
    file.set(path.canonicalize().unwrap().display().to_string())
        .unwrap();
    let run = project.run("Rename step 180.", &["--allowedTools", "Read,Edit"]);
    let results = outputs_seen(&server);
    let (read, read_error) = results
        .first()
        .unwrap_or_else(|| panic!("no Read result\n{}", run.report()));
    eprintln!(
        "Claude Code, a Read of a {}-character source file: the model saw {} characters",
        source.chars().count(),
        read.chars().count()
    );
    assert!(!read_error, "{read:.2000}");
    // The head, numbered by the client from 1; the outline past it, each
    // line after the client's own number and with the file's.
    assert!(read.starts_with("1\t/// Step 0:"), "{read:.300}");
    let fn_line = 8 * 180 + 2;
    assert!(
        read.contains(&format!("\tL{fn_line} | {STEP_180}")),
        "step 180 at line {fn_line} not listed:\n{read}"
    );
    assert!(
        read.chars().count() < source.chars().count() / 2,
        "{}",
        read.len()
    );

    // The agent edits the line the outline lists: the client allows it.
    let (edit, edit_error) = results
        .get(1)
        .unwrap_or_else(|| panic!("no Edit result\n{}", run.report()));
    assert!(!edit_error, "{edit}\n{}", run.report());
    let now = std::fs::read_to_string(&path).unwrap();
    assert!(
        now.contains(STEP_180_RENAMED) && !now.contains(STEP_180),
        "{edit}"
    );
}

// ------------------------------------------------------------------ Codex CLI

/// What Codex's next request carries of `./cargo-test 2>&1`, and the
/// kept file the view names (read before the project goes).
fn codex_seen(jkz: bool, raw: &str) -> (String, Option<Vec<u8>>, String) {
    let server = StubModel::start(Arc::new(|r: &Request| {
        if r.tool_outputs().is_empty() {
            Turn::Call {
                name: "exec_command".into(),
                input: json!({ "cmd": "./cargo-test 2>&1" }),
            }
        } else {
            Turn::Text("Done.".into())
        }
    }));
    let project = CodexCli::project(&server);
    project.without_auto_compaction();
    script(project.path(), "cargo-test", raw, 101);
    if jkz {
        project.install_jkz();
    }
    let run = project.run("Run the tests.", &[]);
    run.assert_ok();
    let last = server.model_requests().pop().expect("requests");
    let outputs = last.tool_outputs();
    assert_eq!(outputs.len(), 1, "{outputs:?}\n{}", run.report());
    let kept = kept_file(&outputs[0].text).and_then(|p| std::fs::read(p).ok());
    (outputs[0].text.clone(), kept, run.report())
}

#[test]
fn codex_a_failing_400k_cargo_test_reaches_the_model_reduced_with_its_failures() {
    let raw = failing_cargo_test(400_000);
    let (alone, _, _) = codex_seen(false, &raw);
    let (view, kept, report) = codex_seen(true, &raw);
    eprintln!(
        "Codex CLI, a failing cargo test (exit 101):\n{HEADER}\n{}",
        table(
            "cargo test, 2 failures, exit 101",
            raw.chars().count(),
            &alone,
            &view,
            &TEST_NEEDED
        )
    );
    eprintln!("with jkz, the model saw:\n{view}");
    let lost = missing(&TEST_NEEDED, &view);
    assert!(lost.is_empty(), "lost: {lost:?}\n{view}\n{report}");
    assert!(
        view.contains("Process exited with code 101"),
        "the status reaches the model: {view:.500}"
    );
    let path = kept_file(&view).unwrap_or_else(|| panic!("no kept file named:\n{view}"));
    assert_eq!(kept.as_deref(), Some(raw.as_bytes()), "{path}");
    assert!(
        view.chars().count() * 3 <= alone.chars().count(),
        "not far smaller than Codex's own cut ({} chars): {} chars",
        alone.chars().count(),
        view.chars().count()
    );
}

// ----------------------------------------------------------------- Gemini CLI

/// What Gemini CLI's next request carries of `./cargo-test 2>&1` (the
/// function response's strings), and the kept file the view names.
fn gemini_seen(jkz: bool, raw: &str) -> (String, Option<Vec<u8>>) {
    let server = StubModel::start(Arc::new(|r: &Request| {
        if r.tool_outputs().is_empty() {
            Turn::Call {
                name: "run_shell_command".into(),
                input: json!({"command": "./cargo-test 2>&1"}),
            }
        } else {
            Turn::Text("Done.".into())
        }
    }));
    let project = GeminiCli::project(&server);
    std::fs::create_dir(project.path().join(".git")).unwrap();
    script(project.path(), "cargo-test", raw, 101);
    if jkz {
        project.install_jkz();
    }
    let run = project.run("Run the tests.", &["--approval-mode", "yolo"]);
    run.json();
    // Gemini CLI streams its chat turns only.
    let last = server
        .requests()
        .into_iter()
        .rfind(Request::is_streamed)
        .expect("model turns");
    let responses = last.tool_outputs();
    assert_eq!(responses.len(), 1, "{responses:?}\n{}", run.report());
    let response = &serde_json::from_str::<Value>(&responses[0].text).unwrap()["response"];
    // The output as the model reads it: the JSON strings unescaped.
    let mut text = String::new();
    collect_strings(response, &mut text);
    let kept = kept_file(&text).and_then(|p| std::fs::read(p).ok());
    (text, kept)
}

fn collect_strings(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(a) => a.iter().for_each(|i| collect_strings(i, out)),
        Value::Object(o) => o.values().for_each(|i| collect_strings(i, out)),
        _ => {}
    }
}

#[test]
fn gemini_a_failing_400k_cargo_test_reaches_the_model_reduced_with_its_failures() {
    let raw = failing_cargo_test(400_000);
    let (alone, _) = gemini_seen(false, &raw);
    let (view, kept) = gemini_seen(true, &raw);
    eprintln!(
        "Gemini CLI, a failing cargo test (exit 101):\n{HEADER}\n{}",
        table(
            "cargo test, 2 failures, exit 101",
            raw.chars().count(),
            &alone,
            &view,
            &TEST_NEEDED
        )
    );
    eprintln!("with jkz, the model saw:\n{view}");
    let lost = missing(&TEST_NEEDED, &view);
    assert!(lost.is_empty(), "lost: {lost:?}\n{view}");
    assert!(
        view.contains("Exit Code: 101"),
        "the status reaches the model: {view:.500}"
    );
    let path = kept_file(&view).unwrap_or_else(|| panic!("no kept file named:\n{view}"));
    assert_eq!(kept.as_deref(), Some(raw.as_bytes()), "{path}");
    assert!(
        view.chars().count() * 3 <= alone.chars().count(),
        "not far smaller than Gemini's own cut ({} chars): {} chars",
        alone.chars().count(),
        view.chars().count()
    );
}

// ------------------------------------------------------- Copilot CLI, OpenCode

/// What the next Chat Completions request carries of `./cargo-test 2>&1`
/// run with the client's `bash` tool, and the kept file the view names.
fn chat_completions_seen<C: RealClient>(jkz: bool, raw: &str) -> (String, Option<Vec<u8>>) {
    let server = C::model(|r: &Request| {
        if r.tool_outputs().is_empty() {
            Turn::Call {
                name: "bash".into(),
                input: json!({"command": "./cargo-test 2>&1", "description": "run the tests"}),
            }
        } else {
            Turn::Text("Done.".into())
        }
    });
    let project = C::project(&server);
    git(
        project.path(),
        &["commit", "-q", "--allow-empty", "-m", "init"],
    );
    script(project.path(), "cargo-test", raw, 101);
    if jkz {
        project.install_jkz();
    }
    let run = project.run("Run the tests.", &[]);
    run.assert_ok();
    let last = C::turns(&server).pop().expect("model turns");
    let outputs = last.tool_outputs();
    assert_eq!(outputs.len(), 1, "{outputs:?}\n{}", run.report());
    let kept = kept_file(&outputs[0].text).and_then(|p| std::fs::read(p).ok());
    (outputs[0].text.clone(), kept)
}

/// A failing run's view under a Chat Completions client: every needed
/// line, the status, the whole output kept, far smaller than the
/// client's own cut.
fn assert_failing_run_reduced(
    client: &str,
    alone: &str,
    view: &str,
    kept: Option<Vec<u8>>,
    raw: &str,
    status: &str,
) {
    eprintln!(
        "{client}, a failing cargo test (exit 101):\n{HEADER}\n{}",
        table(
            "cargo test, 2 failures, exit 101",
            raw.chars().count(),
            alone,
            view,
            &TEST_NEEDED
        )
    );
    eprintln!("with jkz, the model saw:\n{view}");
    let lost = missing(&TEST_NEEDED, view);
    assert!(lost.is_empty(), "lost: {lost:?}\n{view}");
    assert!(
        view.contains(status),
        "the status reaches the model: {view:.800}"
    );
    let path = kept_file(view).unwrap_or_else(|| panic!("no kept file named:\n{view}"));
    assert_eq!(kept.as_deref(), Some(raw.as_bytes()), "{path}");
    assert!(
        view.chars().count() < alone.chars().count() || !missing(&TEST_NEEDED, alone).is_empty(),
        "neither smaller than nor more faithful than {client}'s own cut"
    );
}

#[test]
fn copilot_a_failing_400k_cargo_test_reaches_the_model_reduced_with_its_failures() {
    let raw = failing_cargo_test(400_000);
    let (alone, _) = chat_completions_seen::<CopilotCli>(false, &raw);
    let (view, kept) = chat_completions_seen::<CopilotCli>(true, &raw);
    assert_failing_run_reduced("Copilot CLI", &alone, &view, kept, &raw, "exit code 101");
}

#[test]
fn opencode_a_failing_400k_cargo_test_reaches_the_model_reduced_with_its_failures() {
    let raw = failing_cargo_test(400_000);
    let (alone, _) = chat_completions_seen::<OpenCode>(false, &raw);
    let (view, kept) = chat_completions_seen::<OpenCode>(true, &raw);
    assert_failing_run_reduced(
        "OpenCode",
        &alone,
        &view,
        kept,
        &raw,
        "[jkz: the command exited with status 101]",
    );
}
