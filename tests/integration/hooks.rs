//! The compaction hooks through the real binaries: they always exit 0, write
//! nothing outside `state/`, and never create `state/` uninvited.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::util::{self, git, Dir, Run};

fn event(dir: &Dir, session: &str, extra: Value) -> Vec<u8> {
    let mut e = json!({
        "session_id": session,
        "transcript_path": dir.join("t.jsonl"),
        "cwd": dir.path(),
        "hook_event_name": "PreCompact",
        "trigger": "manual",
        "custom_instructions": "keep the plan",
        "future_field": {"nested": [1, 2]}
    });
    for (k, v) in extra.as_object().unwrap() {
        e[k] = v.clone();
    }
    serde_json::to_vec(&e).unwrap()
}

fn pipeline(dir: &Dir, n: u32, phase: &str) {
    let issue = json!({
        "current_phase": phase, "active_agent": "builder", "pr_number": n.to_string(),
        "plan_iterations": "1", "review_passed": "true", "qa_passed": "false",
        "pending_decisions": [format!("decide {n}")], "failure_context": format!("failure {n}"),
        "last_updated": format!("2025-01-01T00:00:{:02}.000Z", n % 60),
    });
    let top = json!({ "lastActivity": "2025-01-01T00:00:00.000Z", "heartbeat_pid": 1 });
    util::write_pipeline(&dir.join("state"), n, &util::pipeline_doc(n, issue, top));
}

/// Files outside `state/`.
fn outside_state(dir: &Dir) -> Vec<PathBuf> {
    dir.files()
        .into_iter()
        .filter(|p| !p.starts_with("state"))
        .collect()
}

fn snapshots(dir: &Dir) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("state"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|n| n.starts_with("pre-compact-"))
        .collect();
    v.sort();
    v
}

fn pre_compact(dir: &Dir, stdin: impl AsRef<[u8]>) -> Run {
    dir.cmd("jkz-pre-compact").stdin(stdin).run()
}

/// Runs the hook on hostile input; asserts exit 0, one-line stderr and
/// nothing written outside `state/`.
fn survives(dir: &Dir, stdin: impl AsRef<[u8]>) -> Run {
    let before = outside_state(dir);
    let run = pre_compact(dir, stdin).success();
    assert_eq!(outside_state(dir), before, "{}", run.report());
    assert!(run.stderr_str().lines().count() <= 1, "{}", run.report());
    run
}

#[test]
fn pre_compact_snapshots_the_event_and_pipeline_state() {
    let dir = Dir::new();
    pipeline(&dir, 42, "building");
    dir.write(
        "state/pipeline/42-compact-plan.md",
        "THE PLAN: do it in cents",
    );
    let run = pre_compact(&dir, event(&dir, "sess-1", json!({}))).success();
    assert_eq!(run.stderr_str(), "");
    let out = run.stdout_str();
    for want in [
        "THE PLAN: do it in cents",
        "Phase and iteration: building, active agent builder; plan iteration 1",
        "Active verdicts: review passed, QA failed; overall FAIL",
        "1. decide 42",
        "failure 42",
        "Git state: unknown (not a git repository)",
    ] {
        assert!(out.contains(want), "missing {want:?}\n{}", run.report());
    }
    let names = snapshots(&dir);
    assert_eq!(names.len(), 1);
    assert!(
        out.contains(&names[0]),
        "the summarizer is told where the snapshot is"
    );
    let snap: Value = serde_json::from_slice(&dir.read(format!("state/{}", names[0]))).unwrap();
    assert_eq!(snap["event"]["future_field"], json!({"nested": [1, 2]}));
    assert_eq!(snap["event"]["custom_instructions"], "keep the plan");
    assert_eq!(snap["session_id"], "sess-1");
    assert_eq!(
        snap["pipelines"][0]["raw"]["42"]["current_phase"],
        "building"
    );
    assert_eq!(snap["pipelines"][0]["normalized"]["verdict"], "FAIL");
    assert_eq!(
        snap["digest"]["pipelines"][0]["approved_plan"]["text"],
        "THE PLAN: do it in cents"
    );
    let record: Value =
        serde_json::from_slice(&dir.read("state/session-snapshots/sess-1.json")).unwrap();
    assert_eq!(record["compaction_count"], 1);
    assert_eq!(record["last_compaction_trigger"], "manual");
    assert_eq!(record["last_pre_compact_snapshot"], names[0].as_str());
    // A second compaction counts, and keeps fields others wrote.
    let mut r = record.clone();
    r["decisions"] = json!(["saved by /jkz:save"]);
    dir.write("state/session-snapshots/sess-1.json", r.to_string());
    pre_compact(&dir, event(&dir, "sess-1", json!({"trigger": "auto"}))).success();
    let record: Value =
        serde_json::from_slice(&dir.read("state/session-snapshots/sess-1.json")).unwrap();
    assert_eq!(record["compaction_count"], 2);
    assert_eq!(record["last_compaction_trigger"], "auto");
    assert_eq!(record["decisions"][0], "saved by /jkz:save");
}

#[test]
fn pre_compact_survives_bad_input() {
    let dir = Dir::new();
    pipeline(&dir, 1, "building");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("invalid JSON", b"{\"session_id\": ".to_vec()),
        (
            "binary garbage",
            (0..4096u32).map(|i| (i * 7919 % 256) as u8).collect(),
        ),
        ("not an object", b"[1,2,3]".to_vec()),
        ("50 MB", {
            let mut v = b"{\"session_id\":\"x\",\"pad\":\"".to_vec();
            v.resize(50 * 1024 * 1024, b'a');
            v
        }),
    ];
    for (name, input) in cases {
        // Run from the project directory: the implicit ./state exists.
        // Input that is not the event: one reason, nothing printed (the
        // summarizer is left alone), no snapshot taken.
        let run = survives(&dir, &input);
        assert_eq!(
            run.stderr_str().lines().count(),
            1,
            "{name}: one reason on stderr\n{}",
            run.report()
        );
        assert_eq!(run.stdout_str(), "", "{name}\n{}", run.report());
        let snapshots = dir
            .files()
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("pre-compact-"))
            .count();
        assert_eq!(snapshots, 0, "{name}\n{}", run.report());
    }
}

#[test]
fn hostile_session_id_is_never_a_path() {
    let dir = Dir::new();
    pipeline(&dir, 1, "building");
    for id in ["../../etc", "a/b", "..", "x\u{0}y", &"s".repeat(200)] {
        let run = survives(&dir, event(&dir, id, json!({})));
        assert!(
            run.stderr_str().contains("invalid session id"),
            "{}",
            run.report()
        );
        let run = dir
            .cmd("jkz-session-start")
            .stdin(event(
                &dir,
                id,
                json!({"hook_event_name": "SessionStart", "source": "compact"}),
            ))
            .run()
            .success();
        assert!(
            run.stderr_str().contains("invalid session id"),
            "{}",
            run.report()
        );
    }
    // Only snapshots and no session record were written.
    let files: Vec<_> = dir
        .files()
        .into_iter()
        .filter(|p| p.starts_with("state/session-snapshots"))
        .collect();
    assert_eq!(files, Vec::<PathBuf>::new());
}

#[test]
fn no_state_directory_means_nothing_written() {
    let dir = Dir::new();
    let run = pre_compact(&dir, event(&dir, "s", json!({}))).success();
    assert!(
        run.stdout_str().contains("No active pipeline"),
        "{}",
        run.report()
    );
    assert_eq!(dir.files(), Vec::<PathBuf>::new());
    assert!(!dir.join("state").exists());
    let run = dir
        .cmd("jkz-session-start")
        .stdin(event(
            &dir,
            "s",
            json!({"hook_event_name": "SessionStart", "source": "compact"}),
        ))
        .run()
        .success();
    assert!(
        run.stdout_str().contains("No active pipeline"),
        "{}",
        run.report()
    );
    assert!(!dir.join("state").exists());
}

#[test]
fn unwritable_state_directory_is_reported_not_fatal() {
    // A state root that cannot be created (its parent is a file) …
    let dir = Dir::new();
    dir.write("afile", "x");
    let run = dir
        .cmd("jkz-pre-compact")
        .env("JKZ_STATE_DIR", dir.join("afile/state"))
        .stdin(event(&dir, "s", json!({})))
        .run()
        .success();
    assert_eq!(run.stderr_str().lines().count(), 1, "{}", run.report());
    assert!(
        run.stdout_str().contains("jkz: decision-critical"),
        "{}",
        run.report()
    );
    assert_eq!(outside_state(&dir), [PathBuf::from("afile")]);

    // … and a read-only one (root ignores modes; then the write succeeds,
    // and either way the hook exits 0 with nothing outside state/).
    let dir = Dir::new();
    pipeline(&dir, 1, "building");
    std::fs::set_permissions(dir.join("state"), std::fs::Permissions::from_mode(0o500)).unwrap();
    let run = survives(&dir, event(&dir, "s", json!({})));
    assert!(run.stdout_str().contains("decide 1"), "{}", run.report());
    std::fs::set_permissions(dir.join("state"), std::fs::Permissions::from_mode(0o700)).unwrap();
}

#[test]
fn ten_thousand_pipeline_files() {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("state/pipeline")).unwrap();
    for n in 1..=10_000u32 {
        let phase = if n % 2 == 0 { "done" } else { "building" };
        std::fs::write(
            dir.join(format!("state/pipeline/{n}.json")),
            format!(r#"{{"{n}": {{"current_phase": "{phase}", "last_updated": "2025-01-01T00:00:00.{:03}Z"}}}}"#, n % 1000),
        )
        .unwrap();
    }
    let run = survives(&dir, event(&dir, "big", json!({})));
    assert_eq!(run.stderr_str(), "");
    let out = run.stdout_str();
    assert!(
        out.contains("Other active pipelines (4997)"),
        "{}",
        run.report()
    );
    assert!(out.chars().count() < 10_000);
    let snap: Value =
        serde_json::from_slice(&dir.read(format!("state/{}", snapshots(&dir)[0]))).unwrap();
    assert_eq!(snap["pipelines"].as_array().unwrap().len(), 10_000);
}

#[test]
fn old_snapshots_are_pruned_but_the_newest_twenty_kept() {
    let dir = Dir::new();
    pipeline(&dir, 1, "building");
    let old = chrono::Utc::now() - chrono::Duration::days(30);
    for i in 0..25 {
        let t = old + chrono::Duration::minutes(i);
        let path = dir.write(
            format!(
                "state/pre-compact-{}-1.json",
                t.format("%Y%m%dT%H%M%S%.3fZ")
            ),
            "{}",
        );
        // Retention reads a snapshot's age from its modification time.
        crate::util::set_file_time(&path, t.into());
    }
    let before = snapshots(&dir);
    pre_compact(&dir, event(&dir, "s", json!({}))).success();
    let after = snapshots(&dir);
    assert_eq!(after.len(), 20);
    // The oracle: everything before plus the new one, newest 20 by name.
    let new: Vec<_> = after.iter().filter(|n| !before.contains(n)).collect();
    assert_eq!(new.len(), 1);
    let mut want = before.clone();
    want.push(new[0].clone());
    want.sort();
    assert_eq!(after, want[want.len() - 20..]);
}

fn session_start(dir: &Dir, session: &str, source: &str) -> Run {
    dir.cmd("jkz-session-start")
        .stdin(event(
            dir,
            session,
            json!({"hook_event_name": "SessionStart", "source": source}),
        ))
        .run()
        .success()
}

fn context(run: &Run) -> String {
    let v: Value =
        serde_json::from_str(&run.stdout_str()).unwrap_or_else(|e| panic!("{e}\n{}", run.report()));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let text = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.encode_utf16().count() < 4000, "{}", text.len());
    text
}

#[test]
fn session_start_answers_compact_and_resume_only() {
    let dir = Dir::new();
    pipeline(&dir, 3, "building");
    for source in ["startup", "clear", "other"] {
        let run = session_start(&dir, "s", source);
        assert_eq!(run.stdout_str(), "", "{source}");
    }
    for source in ["compact", "resume"] {
        let text = context(&session_start(&dir, "s", source));
        assert!(
            text.contains("live pipeline state; no pre-compact snapshot"),
            "{text}"
        );
        assert!(text.contains("decide 3"), "{text}");
    }
    for bad in [&b""[..], b"{", b"\xff\x00"] {
        let run = dir.cmd("jkz-session-start").stdin(bad).run().success();
        assert_eq!(run.stdout_str(), "");
        assert_eq!(run.stderr_str().lines().count(), 1, "{}", run.report());
    }
}

#[test]
fn session_start_prefers_the_sessions_snapshot_then_the_projects() {
    let dir = Dir::new();
    pipeline(&dir, 3, "building");
    pre_compact(&dir, event(&dir, "mine", json!({}))).success();
    std::thread::sleep(std::time::Duration::from_millis(5));
    // The live state moves on: its values are re-injected, the snapshot
    // is what they are compared with.
    pipeline(&dir, 3, "reviewing");
    let text = context(&session_start(&dir, "mine", "compact"));
    assert!(text.contains("this session's snapshot"), "{text}");
    assert!(text.contains("restored after compaction"), "{text}");
    assert!(text.contains("Phase and iteration: reviewing"), "{text}");
    assert!(text.contains("#3: phase building → reviewing"), "{text}");
    let text = context(&session_start(&dir, "someone-else", "resume"));
    assert!(text.contains("the project's newest snapshot"), "{text}");
    assert!(text.contains("restored on resume"), "{text}");
}

#[test]
fn session_start_says_when_head_moved() {
    let dir = Dir::new();
    let git = |args: &[&str]| git(dir.path(), args);
    git(&["init", "-q", "-b", "one"]);
    dir.write(".gitignore", "state/\n");
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "a"]);
    pipeline(&dir, 3, "building");
    let run = pre_compact(&dir, event(&dir, "s", json!({}))).success();
    assert!(
        run.stdout_str().contains("Git state: branch one, HEAD"),
        "{}",
        run.report()
    );
    git(&["checkout", "-q", "-b", "two"]);
    git(&["commit", "-q", "--allow-empty", "-m", "b"]);
    let text = context(&session_start(&dir, "s", "compact"));
    assert!(
        text.contains("the branch changed since the snapshot: one → two"),
        "{text}"
    );
    assert!(text.contains("HEAD moved since the snapshot"), "{text}");
    assert!(text.contains("Git state: branch two"), "{text}");
}

#[test]
fn session_start_context_stays_under_4000_characters() {
    let dir = Dir::new();
    for n in 1..=5 {
        pipeline(&dir, n, "building");
        dir.write(
            format!("state/pipeline/{n}-compact-plan.md"),
            "plan line é😀\n".repeat(2000),
        );
    }
    let text = context(&session_start(&dir, "s", "compact"));
    assert!(text.contains("Approved plan (5-compact-plan.md)"), "{text}");
    assert!(text.contains("Other active pipelines (2)"), "{text}");
}

/// The hooks used to ignore `--help`: they read stdin and ran, printing a
/// digest instead of their usage.
#[test]
fn every_binary_answers_help_and_writes_nothing() {
    let dir = Dir::new();
    for name in jkz::setup::BINARIES {
        let run = dir.cmd(name).arg("--help").run().success();
        assert!(run.stdout_str().contains("Usage:"), "{}", run.report());
        let run = dir.cmd(name).arg("--version").run().success();
        assert!(run.stdout_str().starts_with(name), "{}", run.report());
    }
    assert!(dir.files().is_empty(), "{:?}", dir.files());
}

#[test]
fn a_hook_with_unknown_arguments_still_runs_and_exits_0() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    let input = json!({"session_id": "s", "cwd": dir.path(), "hook_event_name": "PreCompact", "trigger": "manual"});
    let run = dir
        .cmd("jkz-pre-compact")
        .arg("--bogus")
        .stdin(input.to_string())
        .run()
        .success();
    assert!(
        run.stderr_str().contains("arguments ignored"),
        "{}",
        run.report()
    );
    assert!(
        run.stdout_str().contains("decision-critical"),
        "{}",
        run.report()
    );
}

fn state_set(dir: &Dir, args: &[&str]) {
    dir.cmd("jkz")
        .env("JKZ_STATE_DIR", dir.join("state"))
        .args(["state", "set"])
        .args(args)
        .run()
        .success();
}

/// Compacted while issue 42 was building with a FAIL verdict and two
/// pending decisions; the pipeline then moved on (reviewing, both checks
/// passed, decisions taken) and was committed. SessionStart used to
/// re-inject the snapshot's values as truth, for this session and others.
#[test]
fn session_start_reinjects_the_live_state_not_a_stale_snapshot() {
    let dir = Dir::new();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    dir.write(".gitignore", "state/\n");
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-q", "-m", "a"]);
    dir.write(
        "state/pipeline/42.json",
        json!({"42": {
            "current_phase": "building", "active_agent": "builder",
            "review_passed": "false", "qa_passed": "false",
            "pending_decisions": ["OLD-DECISION-A: flag or wait?", "OLD-DECISION-B: which db?"],
            "failure_context": "OLD-FAILURE: test_total failed",
        }})
        .to_string(),
    );
    let run = pre_compact(&dir, event(&dir, "abc", json!({}))).success();
    assert!(
        run.stdout_str().contains("overall FAIL"),
        "{}",
        run.report()
    );
    std::thread::sleep(std::time::Duration::from_millis(20));
    state_set(&dir, &["42", "current_phase", "reviewing"]);
    state_set(&dir, &["42", "review_passed", "true"]);
    state_set(&dir, &["42", "qa_passed", "true"]);
    state_set(&dir, &["--json", "42", "pending_decisions", "[]"]);
    crate::util::git(
        dir.path(),
        &["commit", "-q", "--allow-empty", "-m", "reviewed"],
    );

    for (session, whose) in [
        ("abc", "this session's snapshot"),
        ("someone-else", "the project's newest snapshot"),
    ] {
        let text = context(&session_start(&dir, session, "resume"));
        for want in [
            "Phase and iteration: reviewing",
            "Active verdicts: review passed, QA passed; overall PASS",
            "Pending human decisions: none",
            whose,
            "taken ",
            "Changed since the snapshot",
            "#42: phase building → reviewing",
            "overall FAIL) → (review passed, QA passed; overall PASS)",
            "pending decisions 2 → none",
            "HEAD moved since the snapshot",
        ] {
            assert!(
                text.contains(want),
                "{session}: missing {want:?} in\n{text}"
            );
        }
        for stale in [
            "Phase and iteration: building",
            "OLD-DECISION",
            "overall FAIL\n",
        ] {
            assert!(
                !text.contains(stale),
                "{session}: stale {stale:?} in\n{text}"
            );
        }
    }
    // The compaction path: same rule, and nothing changed is said so.
    pre_compact(&dir, event(&dir, "abc", json!({}))).success();
    let text = context(&session_start(&dir, "abc", "compact"));
    assert!(text.contains("restored after compaction"), "{text}");
    assert!(
        text.contains("Nothing in the pipeline state changed since the snapshot"),
        "{text}"
    );
    assert!(text.contains("overall PASS"), "{text}");
}

/// A snapshot supplies what the live state no longer has.
#[test]
fn session_start_takes_a_removed_pipeline_from_the_snapshot() {
    let dir = Dir::new();
    pipeline(&dir, 42, "building");
    pipeline(&dir, 7, "fixing");
    pre_compact(&dir, event(&dir, "abc", json!({}))).success();
    std::fs::remove_file(dir.join("state/pipeline/42.json")).unwrap();
    pipeline(&dir, 7, "done");
    let text = context(&session_start(&dir, "abc", "resume"));
    for want in [
        "#42: its pipeline file is gone; shown as the snapshot recorded it",
        "### Issue #42",
        "decide 42",
        "#7: phase fixing → done (finished: no longer active)",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    assert!(!text.contains("### Issue #7"), "{text}");
}

/// A failure log ends with the error: the digests kept its first ~440
/// characters and lost the cause.
#[test]
fn failure_context_keeps_its_end() {
    let dir = Dir::new();
    let log = format!(
        "FIRST-LINE of the run\n{}THE-REAL-CAUSE: assertion failed at checkout.rs:42",
        "running test … ok\n".repeat(400)
    );
    dir.write(
        "state/pipeline/42.json",
        json!({"42": {"current_phase": "fixing", "failure_context": log}}).to_string(),
    );
    let run = pre_compact(&dir, event(&dir, "abc", json!({}))).success();
    let text = context(&session_start(&dir, "abc", "compact"));
    for out in [run.stdout_str(), text] {
        for want in [
            "FIRST-LINE",
            "THE-REAL-CAUSE: assertion failed at checkout.rs:42",
            "characters cut here; full text: `jkz state get 42 failure_context`",
        ] {
            assert!(out.contains(want), "missing {want:?} in\n{out}");
        }
    }
    // jkz-session load: the pipeline status of the saved record.
    let saved = dir
        .cmd("jkz-session")
        .env("JKZ_STATE_DIR", dir.join("state"))
        .args(["--session", "abc", "save"])
        .stdin("## Next steps\n- fix it\n")
        .run()
        .success();
    let loaded = dir
        .cmd("jkz-session")
        .env("JKZ_STATE_DIR", dir.join("state"))
        .args(["--session", "abc", "load"])
        .run()
        .success();
    let md = loaded.stdout_str();
    assert!(
        md.contains("THE-REAL-CAUSE"),
        "{}\n{}",
        saved.report(),
        loaded.report()
    );
    assert!(md.contains("FIRST-LINE"), "{}", loaded.report());
}

/// Claude Code sets `CLAUDE_PROJECT_DIR` for every hook in every project:
/// with it, `jkz-pre-compact` (and every other writer) created `state/` in
/// repositories that never opted in.
#[test]
fn the_project_dir_never_creates_state() {
    let dir = Dir::new();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    let with_project = |name: &str| dir.cmd(name).env("CLAUDE_PROJECT_DIR", dir.path());
    let run = with_project("jkz-pre-compact")
        .stdin(event(&dir, "abc", json!({})))
        .run()
        .success();
    assert!(
        run.stdout_str()
            .contains("jkz: decision-critical pipeline state"),
        "the read-only part still runs\n{}",
        run.report()
    );
    with_project("jkz-session-start")
        .stdin(event(
            &dir,
            "abc",
            json!({"hook_event_name": "SessionStart", "source": "compact"}),
        ))
        .run()
        .success();
    let run = with_project("jkz-session")
        .args(["--session", "abc", "save"])
        .stdin("## Next steps\n- x\n")
        .run()
        .expect_code(1);
    assert!(run.stderr_str().contains("jkz install"), "{}", run.report());
    dir.write("big.log", "line\n".repeat(100_000));
    let run = with_project("jkz-truncate")
        .args(["--max-bytes", "1000", "big.log"])
        .run()
        .success();
    assert!(run.stdout().len() <= 1000, "{}", run.report());
    with_project("jkz-compress")
        .arg("--threshold")
        .arg("1024")
        .stdin(format!("# A\n{}", "text\n".repeat(2000)))
        .run()
        .expect_code(3);
    with_project("jkz")
        .args(["state", "set", "42", "current_phase", "building"])
        .run()
        .expect_code(4);
    assert!(!dir.join("state").exists(), "{:?}", dir.files());
    let outside_git: Vec<_> = dir
        .files()
        .into_iter()
        .filter(|p| !p.starts_with(".git"))
        .collect();
    assert_eq!(outside_git, [PathBuf::from("big.log")]);

    // Opted in (the directory exists): the hook writes there.
    std::fs::create_dir(dir.join("state")).unwrap();
    with_project("jkz-pre-compact")
        .stdin(event(&dir, "abc", json!({})))
        .run()
        .success();
    assert_eq!(snapshots(&dir).len(), 1);
    // Named explicitly, a state directory is created.
    let named = dir.join("elsewhere/state");
    dir.cmd("jkz-pre-compact")
        .env("JKZ_STATE_DIR", &named)
        .stdin(event(&dir, "abc", json!({})))
        .run()
        .success();
    assert!(named.join("session-snapshots/abc.json").exists());
}

/// A `git.head` of `"a€€€€€"`: cutting it to 12 bytes split a character,
/// and `jkz-session-start` panicked (the hook then printed nothing).
#[test]
fn a_multibyte_git_head_in_a_snapshot_is_still_reinjected() {
    let dir = Dir::new();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["commit", "-q", "--allow-empty", "-m", "a"]);
    pipeline(&dir, 42, "building");
    pre_compact(&dir, event(&dir, "abc", json!({}))).success();
    let name = &snapshots(&dir)[0];
    let mut snap: Value = serde_json::from_slice(&dir.read(format!("state/{name}"))).unwrap();
    snap["digest"]["git"]["head"] = json!("a€€€€€");
    dir.write(format!("state/{name}"), snap.to_string());
    let run = session_start(&dir, "abc", "compact");
    assert_eq!(run.stderr_str(), "", "{}", run.report());
    let text = context(&run);
    assert!(
        text.contains("HEAD moved since the snapshot: a€€€ →"),
        "{text}"
    );
    assert!(text.contains("decide 42"), "{text}");
}

/// 40 pipeline files of 10 MB made an 830 MB snapshot, which
/// SessionStart then ignored as "no pre-compact snapshot found".
#[test]
fn forty_pipeline_files_of_ten_megabytes_make_a_small_snapshot() {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("state/pipeline")).unwrap();
    let filler = "x".repeat(10 * 1024 * 1024);
    for n in 1..=40 {
        let file = json!({n.to_string(): {
            "current_phase": "building",
            "failure_context": format!("START-{n} {filler} END-{n}"),
            "last_updated": format!("2025-01-01T00:00:{n:02}.000Z"),
        }});
        std::fs::write(
            dir.join(format!("state/pipeline/{n}.json")),
            file.to_string(),
        )
        .unwrap();
    }
    let run = survives(&dir, event(&dir, "abc", json!({})));
    assert_eq!(run.stderr_str(), "", "{}", run.report());
    assert!(run.stdout_str().contains("END-40"), "{}", run.report());
    let name = &snapshots(&dir)[0];
    let size = std::fs::metadata(dir.join(format!("state/{name}")))
        .unwrap()
        .len();
    assert!(size < 4 * 1024 * 1024, "snapshot of {size} bytes");
    let snap: Value = serde_json::from_slice(&dir.read(format!("state/{name}"))).unwrap();
    let entries = snap["pipelines"].as_array().unwrap();
    assert_eq!(entries.len(), 40);
    assert!(entries[0]["raw_omitted"]["bytes"].as_u64().unwrap() > 10 * 1024 * 1024);
    assert_eq!(entries[0]["normalized"]["current_phase"], "building");
    // The files stay as they were.
    let len = std::fs::metadata(dir.join("state/pipeline/1.json"))
        .unwrap()
        .len();
    assert!(len > 10 * 1024 * 1024);
    let text = context(&session_start(&dir, "abc", "compact"));
    assert!(text.contains("this session's snapshot"), "{text}");
    assert!(text.contains("END-40"), "{text}");
}

/// A snapshot over the read limit (written by an older jkz) is named with
/// the reason, not reported as "no pre-compact snapshot found".
#[test]
fn a_too_large_snapshot_is_named_not_reported_missing() {
    let dir = Dir::new();
    pipeline(&dir, 42, "building");
    pre_compact(&dir, event(&dir, "abc", json!({}))).success();
    let name = &snapshots(&dir)[0];
    // Sparse: 300 MB on paper, nothing on disk.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join(format!("state/{name}")))
        .unwrap();
    file.set_len(300 * 1024 * 1024).unwrap();
    let run = session_start(&dir, "abc", "compact");
    let text = context(&run);
    let want = format!("this session's snapshot {name} cannot be used: 314572800 bytes, over the");
    assert!(text.contains(&want), "{text}");
    assert!(!text.contains("no pre-compact snapshot found"), "{text}");
    assert!(run.stderr_str().contains(&want), "{}", run.report());
    assert!(text.contains("decide 42"), "{text}");
}
