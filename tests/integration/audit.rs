//! `jkz run`, deliberation records, `jkz deliberations`, and what `jkz gc`
//! keeps of them: real child processes, real exit codes and signals.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::util::{self, bin, Dir};

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The records in `state/deliberations/`, parsed, oldest first.
fn records(dir: &Dir) -> Vec<(PathBuf, Value)> {
    let d = dir.join("state/deliberations");
    let mut out: Vec<(PathBuf, Value)> = std::fs::read_dir(&d)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.ends_with(".json") && !name.starts_with('.')
        })
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            let v = serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("{} is not whole JSON: {e}", p.display()));
            (p, v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// `jkz run` with the state directory in `dir`.
fn run(dir: &Dir) -> crate::util::Cmd {
    dir.cmd("jkz").arg("--state-dir").arg(dir.join("state"))
}

#[test]
fn exit_codes_and_signals_propagate_and_stderr_passes_through() {
    let dir = Dir::new();
    for (script, code) in [
        ("echo fine", 0),
        ("echo out; echo oops >&2; exit 3", 3),
        ("exit 42", 42),
        ("kill -TERM $$", 128 + 15),
        ("kill -KILL $$", 128 + 9),
    ] {
        let r = run(&dir)
            .args(["run", "--role", "judge", "--", "sh", "-c", script])
            .run()
            .expect_code(code);
        if code == 3 {
            assert_eq!(r.stdout(), b"out\n");
            assert_eq!(r.stderr_str(), "oops\n", "{}", r.report());
        }
    }
    run(&dir)
        .args(["run", "--", "/nonexistent/wrapper"])
        .run()
        .expect_code(127);
    let recs = records(&dir);
    let codes: Vec<_> = recs.iter().map(|(_, r)| r["exit_code"].clone()).collect();
    assert_eq!(codes, [0, 3, 42, 143, 137, 127].map(Value::from));
    let statuses: Vec<_> = recs.iter().map(|(_, r)| r["status"].clone()).collect();
    assert_eq!(
        statuses,
        ["ok", "failed", "failed", "failed", "failed", "failed"].map(Value::from)
    );
    assert_eq!(recs[1].1["response"], "out\n");
    assert_eq!(recs[1].1["command"][0], "sh");
    assert!(recs[1].1["duration_ms"].is_u64());
    assert_eq!(recs[1].1["tokens"], Value::Null, "never invented");
}

#[test]
fn the_output_is_what_jkz_truncate_prints_and_usage_comes_from_the_wrapper() {
    let dir = Dir::new();
    let mut text = String::new();
    for i in 0..3000 {
        text.push_str(&format!("line {i} of the review\n"));
        if i == 1500 {
            text.push_str("<!-- jkz:verdict-json {\"verdict\":\"FAIL\",\"blocking\":2} -->\n");
        }
    }
    let file = dir.write("answer.txt", &text);
    let script = format!(
        "cat '{}'; printf '{{\"input_tokens\": 120, \"output_tokens\": 34}}' > \"$JKZ_USAGE_FILE\"",
        file.display()
    );
    let wrapped = run(&dir)
        .args([
            "run",
            "--max-bytes",
            "4000",
            "--role",
            "judge",
            "--issue",
            "5",
        ])
        .args(["--", "sh", "-c", &script])
        .run()
        .success();
    // jkz-truncate keeping the same answer prints the same, byte for byte.
    let direct = dir
        .cmd("jkz-truncate")
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["--max-bytes", "4000", "--role", "judge", "--record"])
        .arg(&file)
        .run()
        .success();
    assert_eq!(wrapped.stdout_str(), direct.stdout_str());
    let recs = records(&dir);
    let r = &recs
        .iter()
        .find(|(_, r)| !r["command"].is_null())
        .unwrap()
        .1;
    // Each marker names the answer's file.
    let named = format!(
        "; full output: {}]",
        dir.join("state")
            .join(r["response_file"].as_str().unwrap())
            .display()
    );
    let out = wrapped.stdout_str();
    assert_eq!(out.matches(&named).count(), 2, "{}", wrapped.report());
    assert_eq!(r["verdict"], "FAIL");
    assert_eq!(r["tokens"]["output_tokens"], 34);
    assert_eq!(r["response_bytes"], text.len());
    assert_eq!(r["response_sha256"], hex(&Sha256::digest(text.as_bytes())));
    // Over the inline bound: a content-addressed file, byte for byte.
    let path = dir.join("state").join(r["response_file"].as_str().unwrap());
    assert_eq!(std::fs::read(path).unwrap(), text.as_bytes());
}

#[test]
fn a_500_mb_answer_streams_in_bounded_memory_and_its_file_matches() {
    let dir = Dir::new();
    const LINE: &[u8] = b"a line of a very long answer, 0123456789\n";
    const SIZE: usize = 500_000_000;
    let verdict = b"<!-- jkz:verdict-json {\"verdict\":\"PASS\"} -->\n";
    // The wrapper prints the answer, then notes jkz's peak memory so far.
    let script = "yes 'a line of a very long answer, 0123456789' | head -c 500000000; \
                  echo '<!-- jkz:verdict-json {\"verdict\":\"PASS\"} -->'; \
                  grep VmHWM /proc/$PPID/status > hwm.txt || true";
    let r = run(&dir)
        .args(["run", "--role", "judge", "--", "sh", "-c", script])
        .run()
        .success();
    assert!(r.stdout().len() <= 307_200, "{}", r.report());
    assert!(r.stdout().ends_with(verdict));
    let mut expected = Sha256::new();
    let block: Vec<u8> = LINE.repeat(1 << 14);
    let mut left = SIZE;
    while left > 0 {
        let n = left.min(block.len());
        expected.update(&block[..n]);
        left -= n;
    }
    expected.update(verdict);
    let expected = hex(&expected.finalize());
    let recs = records(&dir);
    let rec = &recs[0].1;
    assert_eq!(rec["response_bytes"], SIZE + verdict.len());
    assert_eq!(rec["response_sha256"], expected);
    assert_eq!(rec["verdict"], "PASS");
    let name = rec["response_file"].as_str().unwrap();
    assert_eq!(name, format!("context-offload/{expected}.txt"));
    let mut file = std::fs::File::open(dir.join("state").join(name)).unwrap();
    let mut actual = Sha256::new();
    std::io::copy(&mut file, &mut actual).unwrap();
    assert_eq!(hex(&actual.finalize()), expected, "the file, byte for byte");
    if let Ok(hwm) = std::fs::read_to_string(dir.join("hwm.txt")) {
        let kb: u64 = hwm
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(kb < 64 * 1024, "peak memory {kb} kB for a 500 MB answer");
    }
}

#[test]
fn show_iteration_2_returns_iteration_2s_answer() {
    let dir = Dir::new();
    let big: String = (0..9000).map(|i| format!("finding {i}\n")).collect();
    for (role, iteration, answer) in [
        ("judge", "1", "iteration one: FAIL\n".to_string()),
        ("judge", "2", big.clone()),
        ("builder", "2", "the builder's second try\n".to_string()),
        ("judge", "3", "iteration three: PASS\n".to_string()),
    ] {
        let file = dir.write(format!("{role}-{iteration}.txt"), &answer);
        run(&dir)
            .args(["run", "--issue", "9", "--phase", "review", "--role", role])
            .args(["--iteration", iteration, "--", "cat"])
            .arg(&file)
            .run()
            .success();
    }
    let shown = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["deliberations", "show", "--issue", "9", "--role", "judge"])
        .args(["--iteration", "2"])
        .run()
        .success();
    assert!(shown.stdout() == big.as_bytes(), "{}", shown.report());
    let one = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["deliberations", "show", "--issue", "9", "--iteration", "1"])
        .run()
        .success();
    assert_eq!(one.stdout_str(), "iteration one: FAIL\n");
    let list = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["deliberations", "list", "--role", "judge"])
        .run()
        .success();
    let rows: Vec<String> = list.stdout_str().lines().map(String::from).collect();
    assert_eq!(rows.len(), 4, "{}", list.report());
    let size = big.len().to_string();
    let (high, low) = size.split_at(size.len() - 3);
    assert!(
        rows[2].contains(&format!("{high},{low}")),
        "{}",
        list.report()
    );
    assert!(
        rows[2].contains(" 2 "),
        "iteration 2 second: {}",
        list.report()
    );
    dir.cmd("jkz")
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["deliberations", "show", "--issue", "9", "--iteration", "7"])
        .run()
        .expect_code(3);
    // A response altered on disk is refused, not printed.
    let recs = records(&dir);
    let file = recs[1].1["response_file"].as_str().unwrap();
    std::fs::write(dir.join("state").join(file), "forged\n").unwrap();
    let refused = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["deliberations", "show", "--issue", "9", "--role", "judge"])
        .args(["--iteration", "2"])
        .run()
        .expect_code(1);
    assert!(refused.stdout().is_empty());
}

/// A tiny deterministic generator for the kill moments.
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn sigkill_at_random_moments_leaves_record_and_response_whole_or_absent() {
    let dir = Dir::new();
    let state = dir.join("state");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut killed = 0;
    for _ in 0..14 {
        let mut child = Command::new(bin("jkz"))
            .current_dir(dir.path())
            .env_remove("JKZ_STATE_DIR")
            .arg("--state-dir")
            .arg(&state)
            .args(["run", "--role", "judge", "--issue", "3", "--", "sh", "-c"])
            .arg("yes 'an answer line' | head -c 3000000")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(next(&mut seed) % 60_000));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            killed += 1;
        }
        child.wait().unwrap();
    }
    // Every record is whole, and so is each response it names.
    for (path, r) in records(&dir) {
        let sha = r["response_sha256"].as_str().unwrap();
        match r["response_file"].as_str() {
            Some(file) => {
                let bytes = std::fs::read(state.join(file))
                    .unwrap_or_else(|e| panic!("{} names {file}: {e}", path.display()));
                assert_eq!(hex(&Sha256::digest(&bytes)), sha);
                assert_eq!(bytes.len() as u64, r["response_bytes"].as_u64().unwrap());
            }
            None => assert_eq!(
                hex(&Sha256::digest(r["response"].as_str().unwrap().as_bytes())),
                sha
            ),
        }
    }
    // Every response file under its final name is whole.
    for e in std::fs::read_dir(state.join("context-offload"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(sha) = name.strip_suffix(".txt").filter(|_| !name.starts_with('.')) {
            assert_eq!(hex(&Sha256::digest(std::fs::read(e.path()).unwrap())), sha);
        }
    }
    eprintln!("killed {killed} of 14 runs");
    // The index still lists exactly the records there are.
    let list = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(&state)
        .args(["deliberations", "list", "--json"])
        .run()
        .success();
    let listed: Vec<Value> = serde_json::from_slice(list.stdout()).unwrap();
    assert_eq!(listed.len(), records(&dir).len());
}

#[test]
fn gc_keeps_deliberations_and_held_locks_and_removes_expired_locks() {
    let dir = Dir::new();
    let state = dir.join("state");
    let big = "x".repeat(100_000);
    let file = dir.write("big.txt", &big);
    run(&dir)
        .args(["run", "--", "cat"])
        .arg(&file)
        .run()
        .success();
    let recs = records(&dir);
    let response = state.join(recs[0].1["response_file"].as_str().unwrap());
    // A month old, the record too: still the audit trail.
    util::age(&response, util::DAY * 30);
    util::age(&recs[0].0, util::DAY * 30);
    let stray = state.join("context-offload/old-section.md");
    std::fs::write(&stray, "offloaded long ago").unwrap();
    util::age(&stray, util::DAY * 30);
    let jkz = |args: &[&str]| {
        dir.cmd("jkz")
            .arg("--state-dir")
            .arg(&state)
            .args(args.iter().copied())
    };
    jkz(&["lock", "acquire", "pipeline", "1", "--owner", "held"])
        .run()
        .success();
    jkz(&[
        "lock", "acquire", "pipeline", "2", "--owner", "stale", "--ttl", "0",
    ])
    .run()
    .success();
    let gc = jkz(&["gc"]).run().success();
    assert!(response.exists(), "{}", gc.report());
    assert!(recs[0].0.exists());
    assert!(!stray.exists(), "{}", gc.report());
    assert!(state.join("locks/pipeline-1.json").exists());
    assert!(
        !state.join("locks/pipeline-2.json").exists(),
        "{}",
        gc.report()
    );
}

/// The record flags of `jkz run`, for a judge's second review of issue 5.
const CONTEXT: [&str; 16] = [
    "--role",
    "judge",
    "--issue",
    "5",
    "--phase",
    "review",
    "--pr",
    "7",
    "--iteration",
    "2",
    "--model",
    "gpt-x",
    "--endpoint",
    "https://api.example",
    "--service",
    "codex",
];

#[test]
fn jkz_truncate_record_writes_the_record_of_jkz_run_for_a_pipe() {
    let dir = Dir::new();
    let mut text = String::new();
    for i in 0..4000 {
        text.push_str(&format!("finding {i} of the second review\n"));
        if i == 2000 {
            text.push_str("```verdict-json\n{\"verdict\": \"FAIL\"}\n```\n");
        }
    }
    let file = dir.write("answer.txt", &text);
    let wrapped = run(&dir)
        .args(["run", "--mode", "fallback"])
        .args(CONTEXT)
        .args(["--", "cat"])
        .arg(&file)
        .run()
        .success();
    let piped = dir
        .cmd("jkz-truncate")
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["--record", "--mode", "fallback"])
        .args(CONTEXT)
        .stdin(&text)
        .run()
        .success();
    assert!(piped.stderr_str().is_empty(), "{}", piped.report());
    // The same answer, the same output, the same one file the markers name.
    assert!(
        piped.stdout() == wrapped.stdout(),
        "{}\n{}",
        piped.report(),
        wrapped.report()
    );
    assert!(piped.stdout().len() <= 102_400);
    let recs = records(&dir);
    assert_eq!(recs.len(), 2);
    let (run_rec, pipe_rec) = if recs[0].1["command"].is_null() {
        (&recs[1].1, &recs[0].1)
    } else {
        (&recs[0].1, &recs[1].1)
    };
    let name = pipe_rec["response_file"].as_str().unwrap();
    let sha = hex(&Sha256::digest(text.as_bytes()));
    assert_eq!(name, format!("context-offload/{sha}.txt"));
    assert_eq!(
        std::fs::read(dir.join("state").join(name)).unwrap(),
        text.as_bytes()
    );
    let named = format!("; full output: {}]", dir.join("state").join(name).display());
    assert!(piped.stdout_str().contains(&named), "{}", piped.report());
    assert_eq!(
        std::fs::read_dir(dir.join("state/context-offload"))
            .unwrap()
            .count(),
        1,
        "one file for both, no other copy"
    );
    for (field, want) in [
        ("role", Value::from("judge")),
        ("status", "ok".into()),
        ("issue", 5.into()),
        ("pr", 7.into()),
        ("phase", "review".into()),
        ("iteration", 2.into()),
        ("model", "gpt-x".into()),
        ("endpoint", "https://api.example".into()),
        ("service", "codex".into()),
        ("mode", "fallback".into()),
        ("verdict", "FAIL".into()),
        ("response_bytes", text.len().into()),
        ("response_sha256", sha.clone().into()),
        ("response", Value::Null),
        ("tokens", Value::Null),
    ] {
        assert_eq!(pipe_rec[field], want, "{field}: {pipe_rec}");
        assert_eq!(run_rec[field], want, "{field}: {run_rec}");
    }
    for field in ["command", "exit_code", "duration_ms"] {
        assert_eq!(pipe_rec[field], Value::Null, "{field}: a pipe knows none");
        assert!(!run_rec[field].is_null(), "{field}");
    }
    // Listed and shown like any record.
    let shown = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(dir.join("state"))
        .arg("deliberations")
        .arg("show")
        .arg(recs[0].0.file_stem().unwrap())
        .run()
        .success();
    assert!(shown.stdout() == text.as_bytes());
}

#[test]
fn jkz_truncate_record_keeps_short_answers_inline_and_empty_ones_fail() {
    let dir = Dir::new();
    let record = |input: &str, cap: &str| {
        dir.cmd("jkz-truncate")
            .arg("--state-dir")
            .arg(dir.join("state"))
            .args(["--record", "--role", "qa", "--max-bytes", cap])
            .stdin(input)
            .run()
            .success()
    };
    let r = record("PASS: all 12 checks\n", "1000");
    assert_eq!(r.stdout_str(), "PASS: all 12 checks\n");
    let r = record("", "1000");
    assert!(r.stdout().is_empty());
    // Cap 0 passes the answer through and still keeps it.
    let long = "x".repeat(70_000) + "\n";
    let r = record(&long, "0");
    assert!(r.stdout() == long.as_bytes());
    // A truncated short answer is kept as the file its markers name.
    let cut: String = (0..100).map(|i| format!("line {i}\n")).collect();
    let r = record(&cut, "300");
    assert!(r.stdout().len() <= 300);
    let recs = records(&dir);
    assert_eq!(recs.len(), 4);
    let by_bytes = |n: usize| {
        recs.iter()
            .map(|(_, r)| r)
            .find(|r| r["response_bytes"] == n)
            .unwrap_or_else(|| panic!("no record of {n} bytes"))
    };
    let short = by_bytes(20);
    assert_eq!(short["response"], "PASS: all 12 checks\n");
    assert_eq!(short["response_file"], Value::Null);
    assert_eq!(short["status"], "ok");
    assert_eq!(short["mode"], "primary");
    assert_eq!(by_bytes(0)["status"], "failed", "an empty answer");
    let kept = by_bytes(long.len());
    let path = dir
        .join("state")
        .join(kept["response_file"].as_str().unwrap());
    assert!(std::fs::read(path).unwrap() == long.as_bytes());
    let truncated = by_bytes(cut.len());
    let path = dir
        .join("state")
        .join(truncated["response_file"].as_str().unwrap());
    assert_eq!(std::fs::read(&path).unwrap(), cut.as_bytes());
    assert!(r
        .stdout_str()
        .contains(&format!("; full output: {}]", path.display())));
}

#[test]
fn jkz_truncate_record_flags_need_record_and_no_state_dir_still_prints() {
    let dir = Dir::new();
    for args in [
        &["--issue", "5"][..],
        &["--service", "codex"],
        &["--record", "--no-full-output"],
    ] {
        let r = dir
            .cmd("jkz-truncate")
            .args(args)
            .stdin("answer\n")
            .run()
            .expect_code(2);
        assert!(r.stdout().is_empty(), "{}", r.report());
    }
    // No state directory: the answer is printed, one warning, no files.
    let r = dir
        .cmd("jkz-truncate")
        .args(["--record", "--issue", "5", "--max-bytes", "10"])
        .stdin("a long answer that is cut\n")
        .run()
        .success();
    assert!(r.stdout_str().starts_with("a long"), "{}", r.report());
    assert_eq!(r.stderr_str().lines().count(), 1, "{}", r.report());
    assert!(r.stderr_str().contains("no deliberation record is kept"));
    assert!(!dir.join("state").exists());
}

#[test]
fn gc_keeps_a_month_old_response_when_the_deliberation_index_cannot_be_read() {
    let dir = Dir::new();
    let state = dir.join("state");
    let file = dir.write("big.txt", "z".repeat(100_000));
    run(&dir)
        .args(["run", "--", "cat"])
        .arg(&file)
        .run()
        .success();
    let recs = records(&dir);
    let response = state.join(recs[0].1["response_file"].as_str().unwrap());
    util::age(&response, util::DAY * 30);
    util::age(&recs[0].0, util::DAY * 30);
    // An index that cannot be read: a directory in its place.
    let index = state.join("deliberations/index.jsonl");
    let _ = std::fs::remove_file(&index);
    std::fs::create_dir(&index).unwrap();
    let gc = run(&dir).arg("gc").run().success();
    assert!(response.exists(), "{}", gc.report());
}

#[test]
fn gc_keeps_the_temp_file_of_a_response_still_streaming_after_a_long_silence() {
    let dir = Dir::new();
    let state = dir.join("state");
    // A model that writes 3 MB, then is silent (here 3 s; in the field, for
    // longer than gc's 10 minutes), then ends its answer.
    let mut model = Command::new(bin("jkz"))
        .current_dir(dir.path())
        .arg("--state-dir")
        .arg(&state)
        .args(["run", "--max-bytes", "1000", "--", "sh", "-c"])
        .arg("head -c 3000000 /dev/zero | tr '\\0' x; touch silent; sleep 3; echo end")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let offload = state.join("context-offload");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let temp = loop {
        let temp = std::fs::read_dir(&offload)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(".tmp"));
        if let (Some(temp), true) = (temp, dir.join("silent").exists()) {
            break temp;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no temp file appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    util::age(&temp, util::DAY * 1);
    let gc = run(&dir).arg("gc").run().success();
    assert!(
        temp.exists(),
        "gc removed a live writer's file\n{}",
        gc.report()
    );
    assert!(model.wait().unwrap().success());
    let recs = records(&dir);
    let response = std::fs::read(state.join(recs[0].1["response_file"].as_str().unwrap()))
        .expect("the response file");
    assert_eq!(response.len(), 3_000_004);
    // Its writer gone, a temp file of that age goes.
    let left = dir.write(
        "state/context-offload/.left.txt.abc123.tmp",
        "killed writer",
    );
    util::age(&left, util::DAY * 1);
    run(&dir).arg("gc").run().success();
    assert!(!left.exists());
}

#[test]
fn an_answer_that_could_be_neither_kept_nor_printed_is_not_judged_empty() {
    let dir = Dir::new();
    let state = dir.join("state");
    // The response cannot be kept (a file where context-offload/ goes) and
    // jkz's stdout is a pipe nobody reads.
    dir.write("state/context-offload", "not a directory");
    for _ in 0..3 {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let status = Command::new(bin("jkz"))
            .current_dir(dir.path())
            .arg("--state-dir")
            .arg(&state)
            .args(["run", "--service", "codex", "--", "echo", "an answer"])
            .stdout(writer)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(0));
    }
    // Three successes: no failure counted (the circuit file need not exist).
    let circuit = std::fs::read(state.join("circuit/codex.json")).unwrap_or(b"{}".to_vec());
    let circuit: Value = serde_json::from_slice(&circuit).unwrap();
    assert_eq!(
        circuit["consecutive_failures"].as_u64().unwrap_or(0),
        0,
        "{circuit}"
    );
    assert_eq!(records(&dir).len(), 3);
    for (path, record) in records(&dir) {
        assert_eq!(record["status"], "ok", "{}", path.display());
    }
}

/// `jkz deliberations show` prints an answer byte for byte into a pipe,
/// and to a terminal (`script` runs it on a pseudo-terminal) with its lines
/// and tabs kept and every control character shown, never obeyed: an
/// agent's answer may hold an escape sequence. The same for an answer kept
/// inline in its record and for one streamed from its response file (with
/// bytes that are not UTF-8); the list shows the records' fields escaped.
#[test]
fn an_answer_holding_escape_sequences_is_exact_in_a_pipe_and_shown_escaped_on_a_terminal() {
    let dir = Dir::new();
    let small = b"PASS \x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\nsecond\tline\n".to_vec();
    let mut big = vec![b'a'; 70_000];
    big.extend_from_slice(b"\n\x1b]0;retitled\x07 \xff\xfe caf\xc3\xa9 \xe2\x80\xae\n");
    for (iteration, answer) in [("1", &small), ("2", &big)] {
        let file = dir.write(format!("answer-{iteration}.txt"), answer);
        run(&dir)
            .args([
                "run",
                "--issue",
                "9",
                "--role",
                "judge",
                "--iteration",
                iteration,
            ])
            .args(["--phase", "review\x1b[2J", "--", "cat"])
            .arg(&file)
            .run()
            .success();
    }
    let show = |iteration: &str| {
        [
            "deliberations",
            "show",
            "--issue",
            "9",
            "--iteration",
            iteration,
        ]
        .map(String::from)
    };
    for (iteration, answer) in [("1", &small), ("2", &big)] {
        let piped = run(&dir).args(show(iteration)).run().success();
        assert!(piped.stdout() == answer.as_slice(), "{}", piped.report());
        let command = format!(
            "'{}' --state-dir '{}' {}",
            bin("jkz").display(),
            dir.join("state").display(),
            show(iteration).join(" ")
        );
        let on_tty = util::scrubbed("script", dir.path())
            .args(["-qec", &command, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .expect("script(1) runs");
        assert!(on_tty.status.success(), "{on_tty:?}");
        // The terminal turns each line break into CR LF.
        let shown = String::from_utf8(on_tty.stdout)
            .unwrap()
            .replace("\r\n", "\n");
        let want = if iteration == "1" {
            "PASS \\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2J\nsecond\tline\n".to_string()
        } else {
            format!(
                "{}\n\\x1b]0;retitled\\x07 \\xff\\xfe café \\u{{202e}}\n",
                "a".repeat(70_000)
            )
        };
        assert!(
            shown == want,
            "{:?}",
            &shown[shown.len().saturating_sub(200)..]
        );
    }
    let list = run(&dir).args(["deliberations", "list"]).run().success();
    assert!(
        !list.stdout().contains(&0x1b) && list.stdout_str().contains("review\\x1b[2J"),
        "{}",
        list.report()
    );
}
