//! `jkz-post-tool-use` on the real client: the model (our server) asks for a
//! Bash command that prints a test run; the next request shows what the
//! model was given, with jkz registered and without it.
//!
//! `measure_what_the_next_request_carries` (ignored by default; run it with
//! `cargo test --test integration measure_what -- --ignored --nocapture`)
//! prints the README's table: Bash outputs of 10 KB to 50 MB, a failing
//! command and a Read, each with hooks off and with jkz.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::adapter::ClaudeCode;
use super::stub_model::{Request, StubModel, Turn};
use super::{Project, RealClient};
use crate::util::bin;

const VERDICT: &str =
    "<!-- jkz:verdict-json {\"verdict\":\"FAIL\",\"failed\":[\"ledger::rounding\"]} -->";
const FAILURE: &str = "---- ledger::rounding stdout ----";
const SUMMARY: &str = "test result: FAILED. 9841 passed; 1 failed; 0 ignored";
const HEAD: &str = "running 9842 tests";

/// A test run of `bytes` bytes: its first line, a verdict block in the
/// middle, the failure and the summary in its last lines.
fn test_run(bytes: usize) -> String {
    let mut out = format!("{HEAD}\n");
    let line = |i: usize| format!("test module_{i:07}::case ... ok\n");
    let mut i = 0;
    while out.len() < bytes / 2 {
        out.push_str(&line(i));
        i += 1;
    }
    out.push_str(VERDICT);
    out.push('\n');
    let end = format!("\nfailures:\n\n{FAILURE}\nassertion failed: cents == 100\n\n{SUMMARY}\n");
    while out.len() + end.len() < bytes {
        out.push_str(&line(i));
        i += 1;
    }
    out.push_str(&end);
    out
}

/// True when the request's last message carries a tool result.
fn answers_a_tool_call(r: &Request) -> bool {
    tool_result(r).is_some()
}

/// The text of the tool result in the request's last message, and whether
/// it is marked as an error.
fn tool_result(r: &Request) -> Option<(String, bool)> {
    let last = r.body["messages"].as_array()?.last()?;
    let block = last["content"]
        .as_array()?
        .iter()
        .find(|b| b["type"] == "tool_result")?;
    let text = match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    Some((text, block["is_error"] == true))
}

/// How a run is set up.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Hooks {
    Off,
    Jkz,
}

/// What the model was given after one tool call.
struct Seen {
    result: String,
    is_error: bool,
    /// The whole next request, as text (system reminders included).
    request: String,
    report: String,
}

/// Runs one turn in which the model calls `tool` with `input` in a project
/// prepared by `setup`, and returns what the next request carries.
fn one_call(
    hooks: Hooks,
    tool: &str,
    input: impl Fn(&Project<ClaudeCode>) -> Value,
    setup: impl Fn(&Project<ClaudeCode>),
) -> Seen {
    let reply = Arc::new(Mutex::new(Turn::Text("Done.".into())));
    let responder = {
        let reply = Arc::clone(&reply);
        Arc::new(move |r: &Request| {
            if answers_a_tool_call(r) {
                Turn::Text("Done.".into())
            } else {
                reply.lock().unwrap().clone()
            }
        })
    };
    let server = StubModel::start(responder);
    let project = ClaudeCode::project(&server);
    *reply.lock().unwrap() = Turn::Call {
        name: tool.into(),
        input: input(&project),
    };
    std::fs::create_dir(project.path().join("state")).unwrap();
    if hooks == Hooks::Jkz {
        let command = bin("jkz-post-tool-use").display().to_string();
        project.register_hooks(json!({"PostToolUse": [{"matcher": "Bash|Read|Grep|mcp__.*",
            "hooks": [{"type": "command", "command": command, "timeout": 60}]}]}));
    }
    setup(&project);
    let run = project.run("Run the tests.", &["--allowedTools", tool]);
    let report = run.report();
    let _ = run.session_id();
    let requests = server.model_requests();
    let next = requests
        .iter()
        .find(|r| answers_a_tool_call(r))
        .unwrap_or_else(|| panic!("no request carries a tool result\n{report}"));
    let (result, is_error) = tool_result(next).unwrap();
    Seen {
        result,
        is_error,
        request: next.all_text(),
        report,
    }
}

/// A project whose `./pytest` prints `test_run(bytes)` and exits `code`:
/// the role table sees a test runner.
fn pytest(bytes: usize, code: i32) -> impl Fn(&Project<ClaudeCode>) {
    move |project: &Project<ClaudeCode>| {
        project.write("run.txt", test_run(bytes));
        let script = project.write("pytest", format!("#!/bin/sh\ncat run.txt\nexit {code}\n"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn bash(command: &'static str) -> impl Fn(&Project<ClaudeCode>) -> Value {
    move |_| json!({"command": command, "description": "Run the tests"})
}

#[test]
fn a_400k_test_run_reaches_the_model_with_its_verdict_failure_and_summary() {
    let jkz = one_call(Hooks::Jkz, "Bash", bash("./pytest"), pytest(400_000, 0));
    let r = &jkz.result;
    assert!(!jkz.is_error, "{}", jkz.report);
    for kept in [HEAD, VERDICT, FAILURE, SUMMARY, "[jkz: full output: "] {
        assert!(
            r.contains(kept),
            "{kept} missing from:\n{r}\n{}",
            jkz.report
        );
    }
    assert!(!r.contains("<persisted-output>"), "{r}");
    assert!(r.len() <= 20_000, "{} bytes", r.len());
    assert!(
        r.contains("/state/context-offload/full-"),
        "the marker names the saved full output:\n{r}"
    );

    // Without jkz, the same run: the client's 2 KB preview of the head.
    let off = one_call(Hooks::Off, "Bash", bash("./pytest"), pytest(400_000, 0));
    let r = &off.result;
    assert!(r.starts_with("<persisted-output>"), "{r}");
    assert!(r.contains(HEAD), "{r}");
    for lost in [VERDICT, FAILURE, SUMMARY] {
        assert!(!r.contains(lost), "{lost} unexpectedly in:\n{r}");
    }
    assert!((2_000..2_600).contains(&r.len()), "{} characters", r.len());
}

#[test]
#[ignore = "a measurement, run by bench/next_request.sh: prints the table of docs/tool-output-guard.md (about a minute)"]
fn measure_what_the_next_request_carries() {
    let mut rows = Vec::new();
    let row = |what: &str, hooks: Hooks, seen: &Seen| {
        let has = |s: &str| if seen.result.contains(s) { "yes" } else { "no" };
        format!(
            "| {what} | {} | {} | {} | {} | {} | {} | {} |",
            if hooks == Hooks::Jkz { "jkz" } else { "off" },
            seen.result.chars().count(),
            if seen.result.starts_with("<persisted-output>") {
                "persisted, preview"
            } else {
                "inline"
            },
            has(HEAD),
            has(VERDICT),
            has(SUMMARY),
            if seen.is_error { "yes" } else { "no" },
        )
    };
    for bytes in [10_000, 29_000, 31_000, 400_000, 50_000_000] {
        for hooks in [Hooks::Off, Hooks::Jkz] {
            let seen = one_call(hooks, "Bash", bash("./pytest"), pytest(bytes, 0));
            rows.push(row(&format!("Bash, {bytes} B"), hooks, &seen));
        }
    }
    for hooks in [Hooks::Off, Hooks::Jkz] {
        let seen = one_call(hooks, "Bash", bash("./pytest"), pytest(400_000, 1));
        rows.push(row("Bash, 400000 B, exit 1", hooks, &seen));
    }
    for hooks in [Hooks::Off, Hooks::Jkz] {
        let seen = one_call(
            hooks,
            "Read",
            |p: &Project<ClaudeCode>| json!({"file_path": p.path().join("run.txt")}),
            pytest(190_000, 0),
        );
        rows.push(row("Read, 190000 B", hooks, &seen));
    }
    println!(
        "| output | hooks | tool result (chars) | shown | head | verdict | summary | is_error |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
}
