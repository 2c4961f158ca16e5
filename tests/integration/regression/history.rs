//! Regression tests: the event log, its index, metrics and SLOs, and the
//! patterns' feedback log. Each test is named after what broke.

use std::time::Duration;

use serde_json::json;

use crate::util::Dir;

/// A project with a state directory, one issue set, and the event index
/// built (`jkz events`).
fn project_with_an_index() -> Dir {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    dir.cmd("jkz")
        .args(["state", "set", "1", "current_phase", "building"])
        .run()
        .success();
    dir.cmd("jkz").args(["events"]).run().success();
    assert!(dir.join("state/events/index.db").is_file());
    dir
}

fn session_start(dir: &Dir) -> crate::util::Run {
    let event = json!({
        "session_id": "sess-1",
        "transcript_path": dir.join("t.jsonl"),
        "cwd": dir.path(),
        "hook_event_name": "SessionStart",
        "source": "compact",
    });
    dir.cmd("jkz-session-start")
        .env("CLAUDE_PROJECT_DIR", dir.path())
        .stdin(event.to_string())
        // The bug made it 60 s; the hook's budget is 2 s.
        .deadline(Duration::from_secs(15))
        .run()
        .success()
}

#[test]
fn session_start_waited_a_minute_for_the_event_index_lock() {
    let dir = project_with_an_index();
    // A rebuild (or anything) holding the index's lock exclusively.
    let lock = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("state/events/.index.lock"))
        .unwrap();
    lock.lock().unwrap();
    dir.cmd("jkz")
        .args(["state", "set", "1", "current_phase", "review"])
        .run()
        .success();
    let run = session_start(&dir);
    assert!(
        run.stdout_str().contains("building") || run.stdout_str().contains("review"),
        "the state is still re-injected\n{}",
        run.report()
    );
    drop(lock);
}

#[test]
fn a_damaged_metrics_db_failed_every_read() {
    let dir = project_with_an_index();
    dir.cmd("jkz").args(["metrics"]).run().success();
    let db = dir.join("state/metrics.db");
    let mut bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() > 4096, "{} bytes", bytes.len());
    for b in &mut bytes[4096..] {
        *b = 0x5a;
    }
    // Its first page intact, so opening it sees nothing wrong.
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    std::fs::write(&db, &bytes).unwrap();
    // A window of two times: the report carries no wall clock, so two runs
    // a second apart print the same.
    let window = ["--since", "2026-01-01", "--until", "2999-01-01T00:00:00Z"];
    let run = dir
        .cmd("jkz")
        .args(["metrics", "--json"])
        .args(window)
        .run()
        .success();
    assert!(
        run.stderr_str().contains("deriving it anew"),
        "{}",
        run.report()
    );
    let again = dir
        .cmd("jkz")
        .args(["metrics", "--json"])
        .args(window)
        .run()
        .success();
    assert_eq!(again.stdout_str(), run.stdout_str());
    assert!(again.stderr_str().is_empty(), "{}", again.report());
}

#[test]
fn slo_check_said_violated_when_the_layout_was_unreadable() {
    // Exit 1 means an objective was violated: a CI gate would report a
    // breach for a repository it could not read.
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    dir.write(".git", "gitdir: /nonexistent/x\n");
    let run = dir.cmd("jkz").args(["slo", "check"]).run().expect_code(2);
    assert!(run.stderr_str().contains(".git"), "{}", run.report());
}
