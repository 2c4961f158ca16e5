//! `jkz-post-tool-use` through the real binary, on events shaped like the
//! ones Claude Code 2.1.197 sends (recorded from the client): Bash with and
//! without `persistedOutputPath`, Read, Grep, an MCP tool, a failing
//! command, bad input, a missing or unreadable persisted file, a 1 GB one.
//! Every run exits 0 and writes nothing outside `state/`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::{Dir, Run};

const VERDICT: &str =
    "<!-- jkz:verdict-json {\"verdict\":\"FAIL\",\"failed\":[\"parser::nested\"]} -->";
const SUMMARY: &str = "test result: FAILED. 1841 passed; 1 failed; 0 ignored";
const FAILURE: &str = "---- parser::nested stdout ----";

/// A test run of about `bytes` bytes: passing tests, a verdict block in
/// the middle, the failure and the summary in its last lines.
fn test_run(bytes: usize) -> String {
    let mut out = String::from("running 1842 tests\n");
    let mut i = 0;
    while out.len() < bytes / 2 {
        out.push_str(&format!("test module_{i:05}::case ... ok\n"));
        i += 1;
    }
    out.push_str(VERDICT);
    out.push('\n');
    while out.len() < bytes.saturating_sub(300) {
        out.push_str(&format!("test module_{i:05}::case ... ok\n"));
        i += 1;
    }
    out.push_str(&format!(
        "\nfailures:\n\n{FAILURE}\nassertion failed: depth < 64\n\n{SUMMARY}\n"
    ));
    out
}

const SESSION: &str = "87645ed3-8263-40cb-a27c-461ca6cb6892";

/// Where the client keeps this session's persisted outputs, beside its
/// transcript (`home/.claude/projects/p/<session>.jsonl`), as a path
/// relative to the test's directory.
fn tool_results(name: &str) -> String {
    format!("home/.claude/projects/p/{SESSION}/tool-results/{name}")
}

fn event(dir: &Dir, tool: &str, tool_input: Value, response: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "session_id": SESSION,
        "transcript_path": dir.join(format!("home/.claude/projects/p/{SESSION}.jsonl")),
        "cwd": dir.path(),
        "prompt_id": "b7b19d6f-3fdc-49bf-8574-8249b641a740",
        "permission_mode": "default",
        "effort": {"level": "high"},
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": response,
        "tool_use_id": "toolu_01",
        "duration_ms": 120
    }))
    .unwrap()
}

/// A Bash event: `stdout` inline, or persisted at `persisted` (the event's
/// `stdout` is then the first 30,000 characters, as the client sends it).
fn bash(dir: &Dir, command: &str, stdout: &str, persisted: Option<&Path>) -> Vec<u8> {
    let mut response = json!({"stdout": stdout, "stderr": "", "interrupted": false,
        "isImage": false, "noOutputExpected": false});
    if let Some(p) = persisted {
        let size = std::fs::metadata(p).map_or(0, |m| m.len());
        let cut: String = stdout.chars().take(30_000).collect();
        response["stdout"] = json!(cut);
        response["persistedOutputPath"] = json!(p);
        response["persistedOutputSize"] = json!(size);
    }
    event(
        dir,
        "Bash",
        json!({"command": command, "description": "run"}),
        response,
    )
}

/// A project that opted in (`state/` exists).
fn project() -> Dir {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    dir
}

fn hook(dir: &Dir, stdin: impl AsRef<[u8]>) -> Run {
    dir.cmd("jkz-post-tool-use")
        .env("CLAUDE_PROJECT_DIR", dir.path())
        .stdin(stdin)
        .run()
        .success()
}

/// The answer's `hookSpecificOutput`.
fn answer(run: &Run) -> Value {
    let v: Value = serde_json::from_slice(run.stdout())
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{}", run.report()));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    v["hookSpecificOutput"].clone()
}

fn files_outside_state(dir: &Dir) -> Vec<PathBuf> {
    dir.files()
        .into_iter()
        .filter(|p| !p.starts_with("state"))
        .collect()
}

fn ledger(dir: &Dir) -> Vec<Value> {
    std::fs::read_to_string(dir.join("state/tool-output.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The bytes a saved full output under `state/context-offload/` holds,
/// named by the marker in `text`.
fn saved_full_output(dir: &Dir, text: &str) -> Vec<u8> {
    let at = text
        .find("full output: ")
        .expect("a marker naming the full output")
        + 13;
    // `[jkz: full output: PATH (N bytes, M lines); …]`
    let path = text[at..].split([']', ' ']).next().unwrap();
    assert!(
        Path::new(path).starts_with(dir.join("state/context-offload")),
        "{path}"
    );
    std::fs::read(path).unwrap()
}

#[test]
fn a_persisted_400k_test_run_keeps_the_verdict_the_failure_and_the_summary() {
    let dir = project();
    let full = test_run(400_000);
    let persisted = dir.write(tool_results("bkyoaxi4p.txt"), &full);
    let before = files_outside_state(&dir);
    let run = hook(
        &dir,
        bash(&dir, "cargo test --locked 2>&1", &full, Some(&persisted)),
    );
    let a = answer(&run);
    let u = &a["updatedToolOutput"];
    let stdout = u["stdout"].as_str().unwrap();
    // The engine shows the signals and says what it collapsed: far less
    // than the client's own 2 KB preview, which holds none of them.
    assert!(stdout.len() <= 2_000, "{} bytes:\n{stdout}", stdout.len());
    for kept in [VERDICT, FAILURE, SUMMARY, "running 1842 tests"] {
        assert!(stdout.contains(kept), "{kept} missing:\n{stdout}");
    }
    assert!(stdout.contains("passing tests collapsed"), "{stdout}");
    assert_eq!(saved_full_output(&dir, stdout), full.as_bytes());
    // The client's fields pass through; the persisted ones are dropped.
    assert_eq!(u["interrupted"], false);
    assert_eq!(u["noOutputExpected"], false);
    assert!(u.get("persistedOutputPath").is_none());
    assert_eq!(
        files_outside_state(&dir),
        before,
        "nothing written outside state/"
    );
    let l = ledger(&dir);
    assert_eq!(l.len(), 1, "{l:?}");
    assert_eq!(l[0]["tool"], "Bash");
    assert_eq!(l[0]["via"], "post-tool-use");
    assert_eq!(l[0]["family"], "tests");
    assert_eq!(l[0]["exit"], 0);
    assert_eq!(l[0]["call"], "cargo test --locked 2>&1");
    assert_eq!(l[0]["full"], full.len());
    assert_eq!(l[0]["jkz"], stdout.len());
    // The client would have shown its 2 KB preview: about 2,250 bytes.
    let client = l[0]["client"].as_u64().unwrap();
    assert!((2_000..2_400).contains(&client), "{client}");
    assert!(l[0]["blocks"].as_u64().unwrap() >= 1, "{l:?}");

    // jkz stats sums it up against the client.
    let stats = dir
        .cmd("jkz")
        .args(["stats", "--json", "--state-dir"])
        .arg(dir.join("state"))
        .run()
        .success();
    let s: Value = serde_json::from_slice(stats.stdout()).unwrap();
    assert_eq!(s["total"]["calls"], 1);
    assert_eq!(s["tools"]["Bash"]["previewed"], 1);
    assert_eq!(
        s["total"]["saved_bytes"],
        client as i64 - stdout.len() as i64
    );
}

#[test]
fn bash_output_over_the_cap_but_inline_is_cut_from_the_event() {
    let dir = project();
    let full = test_run(26_000);
    let run = hook(&dir, bash(&dir, "npm test", &full, None));
    let stdout = answer(&run)["updatedToolOutput"]["stdout"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(stdout.len() <= 20_000);
    for kept in [VERDICT, SUMMARY] {
        assert!(stdout.contains(kept), "{kept} missing:\n{stdout}");
    }
    let l = ledger(&dir);
    // Inline, the client would have shown it whole.
    assert_eq!(l[0]["client"], full.len());
    assert_eq!(l[0]["full"], full.len());
}

#[test]
fn output_too_short_to_gain_from_is_left_alone() {
    let dir = project();
    let run = hook(&dir, bash(&dir, "cargo test", &test_run(900), None));
    assert!(run.stdout().is_empty(), "{}", run.report());
    assert!(run.stderr_str().is_empty(), "{}", run.report());
    assert_eq!(dir.files(), Vec::<PathBuf>::new());
    // Nor is one the raw output was asked for, however long.
    let raw = hook(
        &dir,
        bash(&dir, "JKZ_RAW=1 cargo test", &test_run(100_000), None),
    );
    assert!(raw.stdout().is_empty(), "{}", raw.report());
    // So is everything, with the guard off.
    let run = dir
        .cmd("jkz-post-tool-use")
        .env("JKZ_TOOL_OUTPUT_BYTES", "0")
        .stdin(bash(&dir, "cargo test", &test_run(100_000), None))
        .run()
        .success();
    assert!(run.stdout().is_empty(), "{}", run.report());
}

#[test]
fn the_cap_variable_sets_the_budget_and_a_bad_one_warns() {
    let dir = project();
    let input = bash(&dir, "make", &test_run(26_000), None);
    let run = dir
        .cmd("jkz-post-tool-use")
        .env("CLAUDE_PROJECT_DIR", dir.path())
        .env("JKZ_TOOL_OUTPUT_BYTES", "8000")
        .stdin(&input)
        .run()
        .success();
    let stdout = answer(&run)["updatedToolOutput"]["stdout"]
        .as_str()
        .unwrap()
        .len();
    assert!(stdout <= 8_000, "{stdout}");
    let run = dir
        .cmd("jkz-post-tool-use")
        .env("JKZ_TOOL_OUTPUT_BYTES", "lots")
        .stdin(&input)
        .run()
        .success();
    assert!(
        run.stderr_str().contains("JKZ_TOOL_OUTPUT_BYTES"),
        "{}",
        run.report()
    );
    assert!(
        answer(&run)["updatedToolOutput"]["stdout"]
            .as_str()
            .unwrap()
            .len()
            <= 20_000
    );
}

#[test]
fn read_keeps_the_head_only_so_line_numbers_stay_true() {
    let dir = project();
    let content: String = (1..=3000)
        .map(|i| format!("line {i} of the source\n"))
        .collect();
    let file = dir.write("src/big.rs", &content);
    let input = event(
        &dir,
        "Read",
        json!({"file_path": file}),
        json!({"type": "text", "file": {"filePath": file, "content": content,
            "numLines": 3000, "startLine": 1, "totalLines": 3000}}),
    );
    let a = answer(&hook(&dir, input));
    let f = &a["updatedToolOutput"]["file"];
    let text = f["content"].as_str().unwrap();
    assert!(text.len() <= 20_000);
    assert!(
        text.starts_with("line 1 of the source\nline 2 of"),
        "{text}"
    );
    assert!(!text.contains("line 3000 of"), "head only: {text}");
    assert!(text.trim_end().ends_with(']'), "the marker ends it: {text}");
    assert_eq!(f["filePath"], json!(file));
    assert_eq!(f["totalLines"], 3000);
    assert_eq!(f["numLines"], text.lines().count());
}

/// A Rust file of `functions` functions, seven lines each.
fn rust_source(functions: usize) -> String {
    (0..functions)
        .map(|i| format!("/// Step {i}.\npub fn step_{i:04}(x: u32) -> u32 {{\n    let y = x + {i};\n    let z = y * 3;\n    y ^ z\n}}\n\n"))
        .collect()
}

fn read_event(dir: &Dir, file: &str, content: &str, input: Value) -> Vec<u8> {
    let n = content.lines().count();
    let mut tool_input = json!({"file_path": file});
    for (k, v) in input.as_object().unwrap() {
        tool_input[k] = v.clone();
    }
    event(
        dir,
        "Read",
        tool_input,
        json!({"type": "text", "file": {"filePath": file, "content": content,
            "numLines": n, "startLine": 1, "totalLines": n}}),
    )
}

#[test]
fn a_large_source_read_becomes_its_head_and_an_outline_with_true_line_numbers() {
    let dir = project();
    let content = rust_source(600);
    let file = dir.write("src/steps.rs", &content);
    let file = file.display().to_string();
    let a = answer(&hook(&dir, read_event(&dir, &file, &content, json!({}))));
    let f = &a["updatedToolOutput"]["file"];
    let text = f["content"].as_str().unwrap();
    assert!(text.len() <= 20_000, "{}", text.len());
    assert!(
        text.starts_with("/// Step 0.\npub fn step_0000("),
        "{text:.200}"
    );
    assert_eq!(f["numLines"], text.lines().count());
    assert_eq!(f["startLine"], 1);
    let lines: Vec<&str> = content.lines().collect();
    let outline: Vec<(usize, &str)> = text
        .lines()
        .filter_map(|l| l.strip_prefix('L')?.split_once(" | "))
        .map(|(n, t)| (n.parse().unwrap(), t))
        .collect();
    assert!(outline.len() > 100, "{text}");
    for (n, t) in &outline {
        assert_eq!(lines[n - 1], *t, "line {n}");
    }
    assert!(
        outline
            .iter()
            .any(|(_, t)| t.starts_with("pub fn step_0599(")),
        "the last function is listed"
    );
    assert!(text.contains("the file's own line number"), "{text}");
    let ledger = std::fs::read_to_string(dir.join("state/tool-output.jsonl")).unwrap();
    assert!(ledger.contains("\"family\":\"outline\""), "{ledger}");

    // A range the agent asked for is not outlined.
    let a = answer(&hook(
        &dir,
        read_event(&dir, &file, &content, json!({"offset": 1, "limit": 4000})),
    ));
    let text = a["updatedToolOutput"]["file"]["content"].as_str().unwrap();
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("L") && l.contains(" | ")),
        "{text}"
    );
}

#[test]
fn grep_content_is_split_evenly() {
    let dir = project();
    let content: String = (0..1000)
        .map(|i| format!("src/m{i}.rs:12:fn handler_{i}() {{}}\n"))
        .collect();
    let input = event(
        &dir,
        "Grep",
        json!({"pattern": "fn handler", "output_mode": "content"}),
        json!({"mode": "content", "numFiles": 0, "filenames": [], "content": content,
            "numLines": 1000, "appliedLimit": 1000}),
    );
    let a = answer(&hook(&dir, input));
    let text = a["updatedToolOutput"]["content"].as_str().unwrap();
    assert!(
        text.contains("handler_0()") && text.contains("handler_999()"),
        "{text}"
    );
    assert_eq!(a["updatedToolOutput"]["mode"], "content");
}

#[test]
fn an_mcp_tool_gets_an_updated_mcp_output() {
    let dir = project();
    let full = test_run(400_000);
    let input = event(
        &dir,
        "mcp__ci__job_logs",
        json!({"job": 7}),
        json!([{"type": "text", "text": full}]),
    );
    let a = answer(&hook(&dir, input));
    assert!(a.get("updatedToolOutput").is_none());
    let blocks = a["updatedMCPToolOutput"].as_array().unwrap();
    assert_eq!(blocks.len(), 1);
    let text = blocks[0]["text"].as_str().unwrap();
    assert!(text.len() <= 20_000);
    assert!(text.contains(VERDICT) && text.contains(SUMMARY), "{text}");
    let l = ledger(&dir);
    assert_eq!(l[0]["tool"], "mcp__ci__job_logs");
    // Over 50,000 characters, the client would have shown its preview.
    assert!(l[0]["client"].as_u64().unwrap() < 2_500, "{l:?}");
}

#[test]
fn a_failing_command_and_bad_input_leave_the_output_alone() {
    let dir = project();
    let failure = serde_json::to_vec(&json!({
        "session_id": "s", "cwd": dir.path(), "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash", "tool_input": {"command": "cargo test"}, "tool_use_id": "t",
        "error": format!("Exit code 1\n{}", &test_run(30_000)[..10_040])
    }))
    .unwrap();
    let not_an_object = b"[1]".to_vec();
    let no_tool = br#"{"hook_event_name":"PostToolUse"}"#.to_vec();
    for input in [
        b"{not json".to_vec(),
        Vec::new(),
        b"\xff\xfe\x00garbage".to_vec(),
        not_an_object,
        no_tool,
        failure,
    ] {
        let run = hook(&dir, &input);
        assert!(run.stdout().is_empty(), "{}", run.report());
        let err = run.stderr_str();
        assert_eq!(
            err.lines().count(),
            1,
            "one line on stderr\n{}",
            run.report()
        );
        assert!(err.starts_with("jkz-post-tool-use: "), "{err}");
    }
    assert_eq!(dir.files(), Vec::<PathBuf>::new());
}

#[test]
fn a_missing_or_unreadable_persisted_file_leaves_the_output_alone() {
    let dir = project();
    let full = test_run(40_000);
    let fifo = dir.join(tool_results("fifo.txt"));
    std::fs::create_dir_all(dir.join(tool_results("dir.txt"))).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for path in [
        dir.join(tool_results("missing.txt")),
        dir.join(tool_results("dir.txt")),
        fifo,
    ] {
        let mut input: Value =
            serde_json::from_slice(&bash(&dir, "cargo test", &full, None)).unwrap();
        input["tool_response"]["persistedOutputPath"] = json!(path);
        let run = hook(&dir, serde_json::to_vec(&input).unwrap());
        assert!(run.stdout().is_empty(), "{}", run.report());
        let err = run.stderr_str();
        assert_eq!(err.lines().count(), 1, "{}", run.report());
        assert!(err.contains("persisted output"), "{err}");
    }
    assert!(ledger(&dir).is_empty());
}

#[test]
fn a_1_gb_persisted_output_is_streamed() {
    let dir = project();
    // Sparse: 1 GiB of NULs costs no disk, then a real ending.
    let path = dir.join(tool_results("huge.txt"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(1 << 30).unwrap();
    drop(file);
    let tail = format!("\n{VERDICT}\n{FAILURE}\n{SUMMARY}\n");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut f, tail.as_bytes()).unwrap();
    drop(f);
    let before = files_outside_state(&dir);
    // No state/: nothing is copied, the note names the client's file.
    std::fs::remove_dir(dir.join("state")).unwrap();
    let run = hook(&dir, bash(&dir, "go test ./...", "", Some(&path)));
    let a = answer(&run);
    let stdout = a["updatedToolOutput"]["stdout"].as_str().unwrap();
    assert!(stdout.len() <= 20_000);
    assert!(
        stdout.contains(VERDICT) && stdout.contains(SUMMARY),
        "{}",
        run.report()
    );
    assert!(
        stdout.contains(&format!("full output: {} (", path.display())),
        "{stdout}"
    );
    assert_eq!(files_outside_state(&dir), before);
    assert!(
        !dir.join("state").exists(),
        "state/ is never created uninvited"
    );
}
