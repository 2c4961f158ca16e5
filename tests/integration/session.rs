//! `jkz-session save | load | list`: snapshots across sessions, identity,
//! concurrency, hostile ids.

use serde_json::{json, Value};

use crate::util::{self, Dir, Run};

const NOTES_A: &str = "## Completed work\n- parser done, 12 tests green\n\n## Decisions\n- store snapshots as JSON, keyed by session id\n\n## Gotchas\n- the lock file is a sibling, never the data file\n\n## Next steps\n- wire the loader\n";

fn save(dir: &Dir, session: &str, notes: &str) -> Run {
    dir.cmd("jkz-session")
        .env("JKZ_STATE_DIR", dir.join("state"))
        .env("CLAUDE_CODE_SESSION_ID", session)
        .arg("save")
        .stdin(notes)
        .run()
}

fn load(dir: &Dir, session: &str) -> Run {
    dir.cmd("jkz-session")
        .env("JKZ_STATE_DIR", dir.join("state"))
        .env("CLAUDE_CODE_SESSION_ID", session)
        .arg("load")
        .run()
}

fn snapshot(dir: &Dir, session: &str) -> Value {
    let bytes = dir.read(format!("state/session-snapshots/{session}.json"));
    serde_json::from_slice(&bytes).expect("snapshot is valid JSON")
}

fn texts(snap: &Value, section: &str) -> Vec<String> {
    snap["notes"][section]
        .as_array()
        .unwrap_or_else(|| panic!("no {section} in {snap}"))
        .iter()
        .map(|i| i["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn save_in_one_session_load_in_another() {
    let dir = Dir::new();
    let saved = save(&dir, "session-A", NOTES_A).success();
    assert!(
        saved
            .stdout_str()
            .contains("session-snapshots/session-A.json"),
        "save says where it wrote\n{}",
        saved.report()
    );
    let loaded = load(&dir, "session-B").success();
    let md = loaded.stdout_str();
    for fact in [
        "# jkz session snapshot: session-A",
        "store snapshots as JSON, keyed by session id",
        "the lock file is a sibling",
        "wire the loader",
        "parser done, 12 tests green",
    ] {
        assert!(md.contains(fact), "missing {fact:?}\n{}", loaded.report());
    }
    // Reading order: next steps, decisions, gotchas, completed work.
    let at = |s: &str| md.find(s).unwrap();
    assert!(at("## Next steps") < at("## Decisions"));
    assert!(at("## Decisions") < at("## Gotchas"));
    assert!(at("## Gotchas") < at("## Completed work"));

    // B saves too: each session now loads the other's, not its own.
    save(
        &dir,
        "session-B",
        "## Decisions\n- B decided to use a queue\n",
    )
    .success();
    assert!(load(&dir, "session-B")
        .success()
        .stdout_str()
        .contains("snapshot: session-A"));
    assert!(load(&dir, "session-A")
        .success()
        .stdout_str()
        .contains("B decided to use a queue"));
    // Named explicitly, one's own snapshot loads.
    let own = dir
        .cmd("jkz-session")
        .env("JKZ_STATE_DIR", dir.join("state"))
        .args(["--session", "session-B", "load", "--json"])
        .run()
        .success();
    let v: Value = serde_json::from_slice(own.stdout()).unwrap();
    assert_eq!(v["session_id"], "session-B");
}

#[test]
fn load_prefers_the_most_recent_other_session() {
    let dir = Dir::new();
    save(&dir, "old", "## Decisions\n- old fact\n").success();
    std::thread::sleep(std::time::Duration::from_millis(20));
    save(&dir, "newer", "## Decisions\n- newer fact\n").success();
    std::thread::sleep(std::time::Duration::from_millis(20));
    save(&dir, "me", "## Decisions\n- my own fact\n").success();
    let md = load(&dir, "me").success().stdout_str();
    assert!(md.contains("newer fact") && !md.contains("old fact") && !md.contains("my own"));
}

#[test]
fn load_falls_back_to_the_current_session_when_alone() {
    let dir = Dir::new();
    save(&dir, "only", "## Gotchas\n- mind the gap\n").success();
    let md = load(&dir, "only").success().stdout_str();
    assert!(md.contains("mind the gap"), "{md}");
}

#[test]
fn load_with_nothing_saved_says_so_and_succeeds() {
    let dir = Dir::new();
    let run = load(&dir, "s1").success();
    assert!(
        run.stdout_str()
            .contains("No saved jkz session snapshot to load"),
        "{}",
        run.report()
    );
    // A snapshot only the PreCompact hook wrote (never saved) is not loaded.
    dir.write(
        "state/session-snapshots/other.json",
        r#"{"session_id":"other","compactions":2}"#,
    );
    let run = load(&dir, "s1").success();
    assert!(run.stdout_str().contains("No saved jkz session snapshot"));
    // A named session that does not exist: said on stdout, still exit 0.
    let run = dir
        .cmd("jkz-session")
        .env("JKZ_STATE_DIR", dir.join("state"))
        .args(["--session", "ghost", "load"])
        .run()
        .success();
    assert!(
        run.stdout_str().contains("No snapshot for session ghost"),
        "{}",
        run.report()
    );
}

#[test]
fn save_keeps_what_the_pre_compact_hook_recorded_and_accumulates() {
    let dir = Dir::new();
    dir.write(
        "state/session-snapshots/s.json",
        r#"{"session_id":"s","compaction_count":3,"last_pre_compact":"state/pre-compact-1.json"}"#,
    );
    save(
        &dir,
        "s",
        "## Decisions\n- first\n## Next steps\n- old plan\n",
    )
    .success();
    save(
        &dir,
        "s",
        "## Decisions\n- second\n## Next steps\n- new plan\n",
    )
    .success();
    let snap = snapshot(&dir, "s");
    assert_eq!(snap["compaction_count"], 3);
    assert_eq!(snap["last_pre_compact"], "state/pre-compact-1.json");
    assert_eq!(snap["saves"], 2);
    assert_eq!(texts(&snap, "decisions"), ["second", "first"]);
    assert_eq!(texts(&snap, "next_steps"), ["new plan"]);
}

#[test]
fn save_accepts_json_and_a_file() {
    let dir = Dir::new();
    dir.write(
        "notes.json",
        r#"{"decisions": ["json decision"], "next_steps": "one step"}"#,
    );
    dir.cmd("jkz-session")
        .env("JKZ_STATE_DIR", dir.join("state"))
        .args(["--session", "j", "save", "notes.json"])
        .run()
        .success();
    let snap = snapshot(&dir, "j");
    assert_eq!(texts(&snap, "decisions"), ["json decision"]);
    assert_eq!(texts(&snap, "next_steps"), ["one step"]);
}

#[test]
fn save_records_git_state_and_pipeline_status() {
    let dir = Dir::new();
    let git = |args: &[&str]| util::git(dir.path(), args);
    git(&["init", "-q", "-b", "feature-x"]);
    dir.write(".gitignore", "/state/\n");
    git(&["add", ".gitignore"]);
    git(&["commit", "-q", "-m", "a"]);
    dir.write("b.txt", "untracked");
    dir.write(
        "state/pipeline/42.json",
        r#"{"42": {"current_phase": "building", "pr_number": "7", "review_passed": "true", "qa_passed": "false", "failure_context": "test_total expected 10, got 9"}, "lastActivity": "2025-01-01T00:00:00Z"}"#,
    );
    save(&dir, "g", "## Decisions\n- d\n").success();
    let snap = snapshot(&dir, "g");
    assert_eq!(snap["git"]["branch"], "feature-x");
    assert_eq!(snap["git"]["dirty_count"], 1);
    assert_eq!(snap["git"]["dirty"], json!(["b.txt"]));
    assert_eq!(snap["pipeline"][0]["issue"], "42");
    assert_eq!(snap["pipeline"][0]["current_phase"], "building");
    assert_eq!(snap["pipeline"][0]["pr_number"], 7);
    assert_eq!(snap["pipeline"][0]["verdict"], "FAIL");
    let md = load(&dir, "other").success().stdout_str();
    assert!(md.contains("branch `feature-x`"), "{md}");
    assert!(
        md.contains("issue 42: phase `building`, PR #7, verdict FAIL"),
        "{md}"
    );
    assert!(
        md.contains("  - failure: test_total expected 10, got 9"),
        "{md}"
    );
}

#[test]
fn concurrent_saves_into_different_sessions() {
    let dir = Dir::new();
    std::thread::scope(|s| {
        for i in 0..16 {
            let dir = &dir;
            s.spawn(move || {
                save(
                    dir,
                    &format!("s{i}"),
                    &format!("## Decisions\n- decision {i}\n"),
                )
                .success();
            });
        }
    });
    for i in 0..16 {
        let snap = snapshot(&dir, &format!("s{i}"));
        assert_eq!(texts(&snap, "decisions"), [format!("decision {i}")]);
    }
    let leftovers: Vec<_> = dir
        .files()
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn concurrent_saves_into_one_session_all_merge() {
    let dir = Dir::new();
    std::thread::scope(|s| {
        for i in 0..16 {
            let dir = &dir;
            s.spawn(move || {
                let notes = format!(
                    "## Decisions\n- decision {i}\n## Next steps\n- step {i}a\n- step {i}b\n"
                );
                save(dir, "shared", &notes).success();
            });
        }
    });
    let snap = snapshot(&dir, "shared");
    assert_eq!(snap["saves"], 16);
    let mut decisions = texts(&snap, "decisions");
    decisions.sort();
    let mut expected: Vec<String> = (0..16).map(|i| format!("decision {i}")).collect();
    expected.sort();
    assert_eq!(decisions, expected, "every save's decisions landed");
    // Next steps are replaced by each save: the last writer's, whole.
    let steps = texts(&snap, "next_steps");
    assert_eq!(steps.len(), 2, "{steps:?}");
    let i = steps[0]
        .strip_prefix("step ")
        .and_then(|r| r.strip_suffix('a'))
        .expect("a step");
    assert_eq!(steps[1], format!("step {i}b"));
}

#[test]
fn hostile_session_ids_are_refused_and_write_nothing() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    let long = "x".repeat(129);
    for bad in [
        "../escape",
        "a/b",
        "..",
        ".",
        "a b",
        "nul\u{1}x",
        long.as_str(),
        "é",
    ] {
        for via_env in [false, true] {
            let mut cmd = dir
                .cmd("jkz-session")
                .env("JKZ_STATE_DIR", dir.join("state"));
            cmd = if via_env {
                cmd.env("CLAUDE_SESSION_ID", bad).arg("save")
            } else {
                cmd.args(["--session", bad, "save"])
            };
            let run = cmd.stdin("## Decisions\n- x\n").run().expect_code(2);
            assert!(
                run.stderr_str().contains("invalid session id"),
                "{}",
                run.report()
            );
        }
    }
    assert!(dir.files().is_empty(), "{:?}", dir.files());
    assert!(!dir.path().parent().unwrap().join("escape.json").exists());
}

#[test]
fn save_refuses_input_without_sections_and_unprepared_projects() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    let run = save(&dir, "s", "just prose, no headings\n").expect_code(2);
    assert!(
        run.stderr_str().contains("## Decisions"),
        "{}",
        run.report()
    );
    // No explicit state dir and no state/ in the project: refuse, create nothing.
    let bare = Dir::new();
    let run = bare
        .cmd("jkz-session")
        .args(["--session", "s", "save"])
        .stdin("## Decisions\n- x\n")
        .run()
        .expect_code(1);
    assert!(run.stderr_str().contains("jkz install"), "{}", run.report());
    assert!(bare.files().is_empty());
}

#[test]
fn list_shows_sessions_newest_first() {
    let dir = Dir::new();
    save(&dir, "first", "## Completed work\n- built the thing\n").success();
    std::thread::sleep(std::time::Duration::from_millis(20));
    save(&dir, "second", "## Decisions\n- chose the other thing\n").success();
    let out = dir
        .cmd("jkz-session")
        .env("JKZ_STATE_DIR", dir.join("state"))
        .env("CLAUDE_SESSION_ID", "first")
        .arg("list")
        .run()
        .success()
        .stdout_str();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].contains("second") && lines[0].contains("chose the other thing"));
    assert!(lines[1].starts_with("* first") && lines[1].contains("built the thing"));
}

/// A `git.head` of `"a€€€€€"` in a session record: `load` cut it to 12
/// bytes inside a character and panicked (exit 101).
#[test]
fn a_multibyte_git_head_in_a_record_loads() {
    let dir = Dir::new();
    save(&dir, "session-A", NOTES_A).success();
    let mut record = snapshot(&dir, "session-A");
    record["git"] = json!({"branch": "main", "head": "a€€€€€", "dirty_count": 0});
    dir.write("state/session-snapshots/session-A.json", record.to_string());
    let run = load(&dir, "session-B").success();
    assert!(
        run.stdout_str().contains("branch `main` at a€€€"),
        "{}",
        run.report()
    );
}
