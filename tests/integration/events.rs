//! The event log (`state/events/`), its index, `jkz events`, `jkz metrics`
//! and `jkz slo check`: each source of events, direct writes reconciled,
//! concurrent appenders, a crash mid-append, rebuilds, metrics on a
//! scripted history, the Prometheus exposition, SLO exit codes, bad input.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::util::{scrubbed, Cmd, Dir};

/// `jkz` with `--state-dir st`.
fn jkz(dir: &Dir) -> Cmd {
    dir.cmd("jkz").args(["--state-dir", "st"])
}

/// Every event `jkz events --json` shows, with the filter `args`.
fn events(dir: &Dir, args: &[&str]) -> Vec<Value> {
    let run = jkz(dir)
        .args(["events", "--json"])
        .args(args)
        .run()
        .success();
    run.stdout_str()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{}", run.report())))
        .collect()
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

/// The segments of the log, by name.
fn segments(dir: &Dir) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir.join("st/events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.to_string_lossy().ends_with(".jsonl") || p.to_string_lossy().ends_with(".jsonl.gz")
        })
        .collect();
    out.sort();
    out
}

/// Today's first segment.
fn today_segment(dir: &Dir) -> PathBuf {
    dir.join(format!(
        "st/events/{}-0000.jsonl",
        Utc::now().format("%Y%m%d")
    ))
}

#[test]
fn state_set_logs_phase_and_field_changes_and_nothing_for_a_same_value() {
    let dir = Dir::new();
    for (field, value) in [
        ("current_phase", "plan"),
        ("current_phase", "building"),
        ("current_phase", "building"),
        ("review_fix_count", "1"),
        ("lastActivity", "x"),
    ] {
        jkz(&dir)
            .args(["state", "set", "42", field, value])
            .run()
            .success();
    }
    let log = events(&dir, &["--issue", "42"]);
    assert_eq!(
        kinds(&log),
        ["phase.changed", "phase.changed", "state.changed"]
    );
    assert_eq!(log[0]["payload"], json!({"from": null, "to": "plan"}));
    assert_eq!(log[1]["payload"], json!({"from": "plan", "to": "building"}));
    assert_eq!(
        log[2]["payload"],
        json!({"field": "review_fix_count", "from": null, "to": "1"})
    );
    // Ids sort like time and are unique; every line has its members.
    let ids: Vec<&str> = log.iter().map(|e| e["id"].as_str().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, ids);
    for e in &log {
        assert_eq!(e["issue"], "42");
        assert!(DateTime::parse_from_rfc3339(e["timestamp"].as_str().unwrap()).is_ok());
    }
    // From a chat, the session is recorded.
    jkz(&dir)
        .env("CLAUDE_CODE_SESSION_ID", "chat-1")
        .args(["state", "set", "43", "current_phase", "qa"])
        .run()
        .success();
    assert_eq!(events(&dir, &["--issue", "43"])[0]["session"], "chat-1");
    // The table for people.
    let table = jkz(&dir)
        .args(["events", "--issue", "42"])
        .run()
        .success()
        .stdout_str();
    assert!(table.starts_with("TIME (UTC)"), "{table}");
    assert!(table.contains("plan → building"), "{table}");
    assert_eq!(table.lines().count(), 4, "{table}");
}

#[test]
fn jkz_run_logs_agent_finished_and_the_verdict() {
    let dir = Dir::new();
    let script = "echo 'the review'; echo '<!-- jkz:verdict-json {\"verdict\":\"FAIL\"} -->'";
    jkz(&dir)
        .args([
            "run",
            "--role",
            "judge",
            "--issue",
            "7",
            "--iteration",
            "2",
            "--",
            "sh",
            "-c",
            script,
        ])
        .run()
        .success();
    let log = events(&dir, &["--issue", "7"]);
    assert_eq!(kinds(&log), ["agent.finished", "verdict.recorded"]);
    let p = &log[0]["payload"];
    assert_eq!(
        (
            p["role"].as_str(),
            p["status"].as_str(),
            p["iteration"].as_u64()
        ),
        (Some("judge"), Some("ok"), Some(2))
    );
    assert!(p["duration_ms"].is_u64());
    let record = p["record"].as_str().unwrap();
    assert!(
        dir.join(format!("st/deliberations/{record}.json")).exists(),
        "{record}"
    );
    assert_eq!(log[1]["payload"]["verdict"], "FAIL");
    assert_eq!(log[1]["payload"]["record"], record);
}

#[test]
fn locks_circuits_and_claims_log_their_changes() {
    let dir = Dir::new();
    jkz(&dir)
        .args(["lock", "acquire", "pipeline", "5", "--owner", "a"])
        .run()
        .success();
    // Renewal by the same owner is not an event.
    jkz(&dir)
        .args(["lock", "acquire", "pipeline", "5", "--owner", "a"])
        .run()
        .success();
    jkz(&dir)
        .args(["lock", "release", "pipeline", "5", "--owner", "a"])
        .run()
        .success();
    jkz(&dir)
        .args([
            "lock", "acquire", "worktree", "w", "--owner", "a", "--ttl", "0",
        ])
        .run()
        .success();
    jkz(&dir)
        .args(["lock", "acquire", "worktree", "w", "--owner", "b"])
        .run()
        .success();
    let locks = events(&dir, &[]);
    assert_eq!(
        kinds(&locks),
        [
            "lock.acquired",
            "lock.released",
            "lock.acquired",
            "lock.reclaimed"
        ]
    );
    assert_eq!(locks[0]["issue"], "5", "a pipeline lock names its issue");
    assert_eq!(locks[3]["payload"]["previous_owner"], "a");
    assert!(locks[3].get("issue").is_none());

    for _ in 0..2 {
        jkz(&dir)
            .args([
                "run",
                "--service",
                "svc",
                "--failure-threshold",
                "2",
                "--",
                "false",
            ])
            .run();
    }
    jkz(&dir).args(["circuit", "reset", "svc"]).run().success();
    let circuits = events(&dir, &["--type", "circuit.opened"]);
    assert_eq!(circuits.len(), 1);
    assert_eq!(circuits[0]["payload"]["service"], "svc");
    assert_eq!(events(&dir, &["--type", "circuit.closed"]).len(), 1);

    jkz(&dir)
        .args(["claim", "9", "--session", "chat-a"])
        .run()
        .success();
    jkz(&dir)
        .args(["release", "9", "--session", "chat-a"])
        .run()
        .success();
    let claims = events(&dir, &["--issue", "9"]);
    assert_eq!(kinds(&claims), ["claim.taken", "claim.released"]);
    assert!(claims.iter().all(|c| c["session"] == "chat-a"));
}

fn hook_event(dir: &Dir, extra: Value) -> Vec<u8> {
    let mut e = json!({
        "session_id": "sess-1",
        "transcript_path": dir.join("t.jsonl"),
        "cwd": dir.path(),
        "trigger": "auto",
    });
    for (k, v) in extra.as_object().unwrap() {
        e[k] = v.clone();
    }
    serde_json::to_vec(&e).unwrap()
}

#[test]
fn the_hooks_log_compactions_session_starts_and_guarded_output() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    dir.cmd("jkz-pre-compact")
        .env("CLAUDE_PROJECT_DIR", dir.path())
        .stdin(hook_event(&dir, json!({"hook_event_name": "PreCompact"})))
        .run()
        .success();
    dir.cmd("jkz-session-start")
        .env("CLAUDE_PROJECT_DIR", dir.path())
        .stdin(hook_event(
            &dir,
            json!({"hook_event_name": "SessionStart", "source": "compact"}),
        ))
        .run()
        .success();
    let big: String = (0..4000)
        .map(|i| format!("line {i} of a long test run\n"))
        .collect();
    let tool = json!({
        "session_id": "sess-1", "cwd": dir.path(), "hook_event_name": "PostToolUse",
        "tool_name": "Bash", "tool_input": {"command": "npm test"},
        "tool_response": {"stdout": big, "stderr": "", "interrupted": false, "isImage": false},
    });
    let run = dir
        .cmd("jkz-post-tool-use")
        .env("CLAUDE_PROJECT_DIR", dir.path())
        .env("JKZ_TOOL_OUTPUT_BYTES", "8000")
        .stdin(serde_json::to_vec(&tool).unwrap())
        .run()
        .success();
    assert!(run.stderr_str().is_empty(), "{}", run.report());
    let log = {
        let run = dir
            .cmd("jkz")
            .args(["--state-dir", "state", "events", "--json"])
            .run()
            .success();
        run.stdout_str()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        kinds(&log),
        [
            "session.compacted",
            "session.started",
            "tool_output.guarded"
        ]
    );
    assert_eq!(log[0]["session"], "sess-1");
    assert_eq!(log[0]["payload"]["trigger"], "auto");
    assert!(log[0]["payload"]["snapshot"]
        .as_str()
        .unwrap()
        .starts_with("pre-compact-"));
    assert_eq!(log[1]["payload"]["source"], "compact");
    assert_eq!(log[2]["payload"]["tool"], "Bash");
    assert!(
        log[2]["payload"]["bytes_out"].as_u64().unwrap()
            < log[2]["payload"]["bytes_in"].as_u64().unwrap()
    );
}

#[test]
fn a_project_that_did_not_opt_in_gets_no_log() {
    let dir = Dir::new();
    dir.cmd("jkz-pre-compact")
        .env("CLAUDE_PROJECT_DIR", dir.path())
        .stdin(hook_event(&dir, json!({"hook_event_name": "PreCompact"})))
        .run()
        .success();
    assert!(!dir.join("state").exists());
}

#[test]
fn a_direct_write_becomes_one_event_when_jkz_next_looks() {
    let dir = Dir::new();
    jkz(&dir)
        .args(["state", "set", "12", "current_phase", "building"])
        .run()
        .success();
    // A pipeline script writes the file itself.
    let before = Utc::now();
    dir.write(
        "st/pipeline/12.json",
        r#"{"12": {"current_phase": "review", "review_passed": "false", "review_fix_count": "1"}}"#,
    );
    dir.write(
        "st/pipeline/13.json",
        r#"{"13": {"current_phase": "plan"}}"#,
    );
    let log = events(&dir, &[]);
    assert_eq!(
        log.iter()
            .map(|e| (e["issue"].as_str().unwrap(), e["type"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        [
            ("12", "phase.changed"),
            ("12", "phase.changed"),
            ("12", "state.changed"),
            ("12", "state.changed"),
            ("13", "phase.changed"),
        ]
    );
    let direct = &log[1];
    assert_eq!(
        direct["payload"],
        json!({"from": "building", "to": "review", "direct": true})
    );
    let seen = DateTime::parse_from_rfc3339(direct["timestamp"].as_str().unwrap()).unwrap();
    assert!(seen >= before, "stamped when seen");
    assert_eq!(log[2]["payload"]["field"], "review_passed");
    // Looking again logs nothing more; jkz's own writes are never taken for direct ones.
    assert_eq!(events(&dir, &[]).len(), 5);
    jkz(&dir)
        .args(["state", "set", "12", "current_phase", "qa"])
        .run()
        .success();
    let log = events(&dir, &["--issue", "12"]);
    assert_eq!(log.len(), 5);
    assert!(log[4]["payload"].get("direct").is_none());
    // Nor after the index is rebuilt.
    jkz(&dir).args(["events", "rebuild"]).run().success();
    assert_eq!(events(&dir, &[]).len(), 6);
}

#[test]
fn a_reader_of_one_issue_reconciles_that_issues_file_only() {
    let dir = Dir::new();
    dir.write("st/pipeline/3.json", r#"{"3": {"current_phase": "plan"}}"#);
    dir.write("st/pipeline/5.json", r#"{"5": {"current_phase": "qa"}}"#);
    assert_eq!(events(&dir, &["--issue", "3"]).len(), 1);
    let log = events(&dir, &["--type", "phase.changed"]);
    assert_eq!(
        log.len(),
        2,
        "issue 5's change, seen by the next reader of all"
    );
    assert!(log[0]["id"].as_str() < log[1]["id"].as_str());
    assert_eq!(log[1]["issue"], "5");
}

#[test]
fn readers_reconciling_while_jkz_writes_never_take_its_writes_for_direct_ones() {
    let dir = Dir::new();
    jkz(&dir)
        .args(["state", "set", "1", "current_phase", "p0"])
        .run()
        .success();
    let writers: Vec<_> = (1..=4)
        .map(|issue| {
            let script = format!(
                "for i in $(seq 1 15); do \"$0\" --state-dir st state set {issue} current_phase \"p$i\" || exit 1; done"
            );
            scrubbed("sh", dir.path())
                .args(["-c", &script])
                .arg(crate::util::bin("jkz"))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            scrubbed("sh", dir.path())
                .args(["-c", "for i in $(seq 1 15); do \"$0\" --state-dir st events > /dev/null || exit 1; done"])
                .arg(crate::util::bin("jkz"))
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in writers.into_iter().chain(readers) {
        assert!(c.wait().unwrap().success());
    }
    let log = events(&dir, &[]);
    assert_eq!(log.len(), 1 + 4 * 15);
    assert!(
        log.iter().all(|e| e["payload"].get("direct").is_none()),
        "{log:#?}"
    );
}

#[test]
fn thirty_two_concurrent_appenders_lose_nothing_and_never_interleave() {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("st/pipeline")).unwrap();
    const WRITERS: usize = 32;
    const EACH: usize = 8;
    // Long values (tens of KB a line), so that any interleaving shows.
    let children: Vec<_> = (0..WRITERS)
        .map(|w| {
            let value = format!("{}", char::from(b'a' + (w % 26) as u8)).repeat(20_000 + w * 200);
            let script = format!(
                "for i in $(seq 1 {EACH}); do \"$0\" --state-dir st state set {issue} notes \"$1$i\" || exit 1; done",
                issue = w + 1
            );
            scrubbed("sh", dir.path())
                .args(["-c", &script])
                .arg(crate::util::bin("jkz"))
                .arg(&value)
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let mut lines = 0;
    let mut per_issue = std::collections::HashMap::<String, usize>::new();
    for seg in segments(&dir) {
        let text = std::fs::read_to_string(&seg).unwrap();
        assert!(text.ends_with('\n'));
        for line in text.lines() {
            let e: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{e}: {}", &line[..200.min(line.len())]));
            let to = e["payload"]["to"].as_str().unwrap();
            let w: usize = e["issue"].as_str().unwrap().parse::<usize>().unwrap() - 1;
            // Exactly what writer w set: its letter, its length, a run number.
            let c = char::from(b'a' + (w % 26) as u8);
            let letters = to.trim_end_matches(|c: char| c.is_ascii_digit());
            assert!(letters.len() == 20_000 + w * 200 && letters.chars().all(|x| x == c));
            let run: usize = to[letters.len()..].parse().unwrap();
            assert!((1..=EACH).contains(&run));
            *per_issue
                .entry(e["issue"].as_str().unwrap().to_string())
                .or_default() += 1;
            lines += 1;
        }
    }
    assert_eq!(lines, WRITERS * EACH);
    assert!(per_issue.values().all(|&n| n == EACH));
    assert_eq!(events(&dir, &[]).len(), WRITERS * EACH);
}

#[test]
fn a_line_torn_by_a_crash_is_skipped_with_one_warning_and_loses_only_itself() {
    let dir = Dir::new();
    jkz(&dir)
        .args(["state", "set", "1", "current_phase", "plan"])
        .run()
        .success();
    // A field reconciliation does not track, so the lost line stays lost.
    jkz(&dir)
        .args(["state", "set", "1", "notes", "a long note"])
        .run()
        .success();
    // A crash mid-append: the last line is cut short.
    let seg = today_segment(&dir);
    let text = std::fs::read(&seg).unwrap();
    std::fs::write(&seg, &text[..text.len() - 30]).unwrap();
    let run = jkz(&dir).args(["events", "--json"]).run().success();
    assert_eq!(run.stdout_str().lines().count(), 1, "{}", run.report());
    let warning = run.stderr_str();
    assert_eq!(warning.lines().count(), 1, "{}", run.report());
    assert!(
        warning.contains("not a whole line")
            && warning.contains(&*seg.file_name().unwrap().to_string_lossy()),
        "{warning}"
    );
    // The next append is glued behind the torn line: recovered, the torn one skipped.
    jkz(&dir)
        .args(["state", "set", "1", "current_phase", "qa"])
        .run()
        .success();
    let run = jkz(&dir).args(["events", "--json"]).run().success();
    let log: Vec<Value> = run
        .stdout_str()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        log.iter()
            .map(|e| e["payload"]["to"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["plan", "qa"]
    );
    assert_eq!(run.stderr_str().lines().count(), 1, "{}", run.report());
    assert!(
        run.stderr_str().contains("skipped 1 line"),
        "{}",
        run.report()
    );
    // Warned once: the index has it.
    let run = jkz(&dir).args(["events", "--json"]).run().success();
    assert_eq!(run.stderr_str(), "", "{}", run.report());
}

/// The index's events and derived fields, as rows.
fn index_rows(dir: &Dir) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let conn = rusqlite::Connection::open(dir.join("st/events/index.db")).unwrap();
    let rows = |sql: &str| -> Vec<Vec<String>> {
        let mut stmt = conn.prepare(sql).unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| {
            (0..n)
                .map(|i| r.get::<_, Option<String>>(i).map(|v| v.unwrap_or_default()))
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    };
    (
        rows("SELECT id, type, ts, issue, session, line FROM events ORDER BY id"),
        rows("SELECT issue, field, value, id FROM fields ORDER BY issue, field"),
    )
}

#[test]
fn an_index_rebuilt_from_the_log_equals_the_one_kept_live() {
    let dir = Dir::new();
    for (issue, phase) in [
        ("1", "plan"),
        ("2", "plan"),
        ("1", "building"),
        ("1", "done"),
        ("2", "failed"),
    ] {
        jkz(&dir)
            .args(["state", "set", issue, "current_phase", phase])
            .run()
            .success();
        // Read between writes, so the index is kept up to date piece by piece.
        jkz(&dir).args(["events", "--issue", issue]).run().success();
    }
    jkz(&dir)
        .args(["state", "set", "2", "qa_fix_count", "3"])
        .run()
        .success();
    dir.write(
        "st/pipeline/3.json",
        r#"{"3": {"current_phase": "review"}}"#,
    );
    jkz(&dir)
        .args(["lock", "acquire", "pipeline", "1", "--owner", "x"])
        .run()
        .success();
    jkz(&dir).args(["events"]).run().success();
    let live = index_rows(&dir);
    assert_eq!(live.0.len(), 8);
    let run = jkz(&dir).args(["events", "rebuild"]).run().success();
    assert!(run.stdout_str().contains("8 events"), "{}", run.report());
    assert_eq!(index_rows(&dir), live);
    // Deleted, it comes back the same on the next read.
    std::fs::remove_file(dir.join("st/events/index.db")).unwrap();
    jkz(&dir).args(["events"]).run().success();
    assert_eq!(index_rows(&dir), live);
}

/// One event line at `at` (ids sortable by that time, as jkz writes them).
fn line(
    n: &mut u32,
    at: DateTime<Utc>,
    kind: &str,
    issue: Option<&str>,
    session: Option<&str>,
    payload: Value,
) -> String {
    *n += 1;
    let mut e = json!({
        "id": format!("{:013x}-00000001-{:04x}", at.timestamp_micros(), n),
        "type": kind,
        "timestamp": at.to_rfc3339(),
        "payload": payload,
    });
    if let Some(i) = issue {
        e["issue"] = json!(i);
    }
    if let Some(s) = session {
        e["session"] = json!(s);
    }
    format!("{e}\n")
}

/// A scripted history of four issues over the last nine days, written to
/// the log as jkz would have.
fn scripted_history(dir: &Dir) -> DateTime<Utc> {
    let now = Utc::now();
    let h = |hours: i64| now - chrono::Duration::hours(hours);
    let mut n = 0;
    let mut text = String::new();
    let mut add = |at, kind: &str, issue: Option<&str>, session: Option<&str>, payload: Value| {
        text.push_str(&line(&mut n, at, kind, issue, session, payload));
    };
    let phase = |from: Option<&str>, to: &str| json!({"from": from, "to": to});
    let field = |f: &str, to: &str| json!({"field": f, "from": null, "to": to});
    // Issue 1: plan 2h, building 2h, review 1h, done 45h ago; fixes 1 + 1.
    add(h(50), "phase.changed", Some("1"), None, phase(None, "plan"));
    add(h(49), "claim.taken", Some("1"), Some("s1"), json!({}));
    add(
        h(48),
        "phase.changed",
        Some("1"),
        None,
        phase(Some("plan"), "building"),
    );
    add(
        h(47),
        "session.compacted",
        None,
        Some("s1"),
        json!({"trigger": "auto"}),
    );
    add(
        h(46),
        "phase.changed",
        Some("1"),
        None,
        phase(Some("building"), "review"),
    );
    add(
        h(46),
        "agent.finished",
        Some("1"),
        None,
        json!({"role": "builder", "status": "ok", "duration_ms": 60_000, "tokens": {"input_tokens": 100, "output_tokens": 20}}),
    );
    add(
        h(46),
        "state.changed",
        Some("1"),
        None,
        field("review_fix_count", "1"),
    );
    add(
        h(46),
        "state.changed",
        Some("1"),
        None,
        field("qa_fix_count", "1"),
    );
    add(
        h(46),
        "state.changed",
        Some("1"),
        None,
        field("plan_iterations", "1"),
    );
    add(
        h(45),
        "phase.changed",
        Some("1"),
        None,
        phase(Some("review"), "done"),
    );
    add(h(45), "claim.released", Some("1"), Some("s1"), json!({}));
    add(
        h(44),
        "session.compacted",
        None,
        Some("s1"),
        json!({"trigger": "auto"}),
    );
    // Issue 2: plan 1h, building 9h, failed 30h ago; fixes 3 + 2.
    add(h(40), "phase.changed", Some("2"), None, phase(None, "plan"));
    add(
        h(39),
        "phase.changed",
        Some("2"),
        None,
        phase(Some("plan"), "building"),
    );
    add(
        h(35),
        "agent.finished",
        Some("2"),
        None,
        json!({"role": "builder", "status": "failed", "duration_ms": 30_000}),
    );
    add(
        h(31),
        "state.changed",
        Some("2"),
        None,
        field("review_fix_count", "3"),
    );
    add(
        h(31),
        "state.changed",
        Some("2"),
        None,
        json!({"field": "qa_fix_count", "from": null, "to": "2", "direct": true}),
    );
    add(
        h(31),
        "state.changed",
        Some("2"),
        None,
        field("plan_iterations", "3"),
    );
    add(
        h(30),
        "phase.changed",
        Some("2"),
        None,
        phase(Some("building"), "failed"),
    );
    // Issue 3: plan 10h, building 5h, done 5h ago; no fixes.
    add(h(20), "phase.changed", Some("3"), None, phase(None, "plan"));
    add(
        h(10),
        "phase.changed",
        Some("3"),
        None,
        phase(Some("plan"), "building"),
    );
    add(
        h(6),
        "agent.finished",
        Some("3"),
        None,
        json!({"role": "judge", "status": "ok", "duration_ms": 10_000}),
    );
    add(
        h(6),
        "state.changed",
        Some("3"),
        None,
        field("review_fix_count", "0"),
    );
    add(
        h(6),
        "state.changed",
        Some("3"),
        None,
        field("plan_iterations", "2"),
    );
    add(
        h(5),
        "phase.changed",
        Some("3"),
        None,
        phase(Some("building"), "done"),
    );
    // Issue 4: long before the window.
    add(
        h(9 * 24),
        "phase.changed",
        Some("4"),
        None,
        phase(None, "plan"),
    );
    add(
        h(8 * 24),
        "phase.changed",
        Some("4"),
        None,
        phase(Some("plan"), "done"),
    );
    // A compaction of a chat that held no claim.
    add(
        h(1),
        "session.compacted",
        None,
        Some("s9"),
        json!({"trigger": "manual"}),
    );
    dir.write(
        format!("st/events/{}-0000.jsonl", now.format("%Y%m%d")),
        text,
    );
    now
}

#[test]
fn metrics_on_a_scripted_history() {
    let dir = Dir::new();
    scripted_history(&dir);
    let run = jkz(&dir).args(["metrics", "--json"]).run().success();
    let m: Value = serde_json::from_slice(run.stdout()).unwrap();
    assert_eq!(
        (m["completed"].as_u64(), m["failed"].as_u64()),
        (Some(2), Some(1))
    );
    assert!((m["completion_rate"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9);
    // Fix iterations of issues 1, 2, 3: 2, 5, 0.
    assert_eq!(m["fix_iterations"]["count"], 3);
    assert_eq!(
        (
            m["fix_iterations"]["p50"].as_f64(),
            m["fix_iterations"]["p90"].as_f64()
        ),
        (Some(2.0), Some(5.0))
    );
    assert_eq!(
        (
            m["plan_iterations"]["p50"].as_f64(),
            m["plan_iterations"]["p90"].as_f64()
        ),
        (Some(2.0), Some(3.0))
    );
    let phase = |name: &str| {
        m["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["phase"] == name)
            .unwrap()["seconds"]
            .clone()
    };
    let hours = |v: &Value| v.as_f64().unwrap() / 3600.0;
    let plan = phase("plan");
    assert_eq!(plan["count"], 3);
    assert_eq!((hours(&plan["p50"]), hours(&plan["p90"])), (2.0, 10.0));
    let building = phase("building");
    assert_eq!(
        (hours(&building["p50"]), hours(&building["p90"])),
        (5.0, 9.0)
    );
    assert_eq!(hours(&phase("review")["p50"]), 1.0);
    let role = |name: &str| {
        m["roles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["role"] == name)
            .unwrap()
            .clone()
    };
    let builder = role("builder");
    assert_eq!(
        (builder["runs"].as_u64(), builder["failed"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        (
            builder["seconds"]["p50"].as_f64(),
            builder["seconds"]["p90"].as_f64()
        ),
        (Some(30.0), Some(60.0))
    );
    assert_eq!(
        (
            builder["tokens_in"].as_i64(),
            builder["tokens_out"].as_i64()
        ),
        (Some(100), Some(20))
    );
    assert_eq!(role("judge")["runs"], 1);
    assert_eq!(m["compactions"], 3);
    let issue = |n: &str| {
        m["issues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["issue"] == n)
            .cloned()
    };
    assert_eq!(
        issue("1").unwrap()["compactions"],
        1,
        "only while its chat held the claim"
    );
    assert!(issue("4").is_none(), "issue 4 was not active in the window");
    assert_eq!(
        m["days"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["completed"].as_u64().unwrap())
            .sum::<u64>(),
        2
    );

    // One issue, and a window that reaches issue 4.
    let run = jkz(&dir)
        .args(["metrics", "--json", "--issue", "1"])
        .run()
        .success();
    let one: Value = serde_json::from_slice(run.stdout()).unwrap();
    let i = &one["issues"][0];
    assert_eq!(
        (i["fix_iterations"].as_i64(), i["plan_iterations"].as_i64()),
        (Some(2), Some(1))
    );
    assert_eq!(i["outcome"], "completed");
    assert_eq!(hours(&i["phase_seconds"]["building"]), 2.0);
    let run = jkz(&dir)
        .args(["metrics", "--json", "--since", "10d"])
        .run()
        .success();
    let wide: Value = serde_json::from_slice(run.stdout()).unwrap();
    assert_eq!(wide["completed"], 3);
    // The table for people.
    let table = jkz(&dir).args(["metrics"]).run().success().stdout_str();
    assert!(table.contains("66.7% (2 completed, 1 failed)"), "{table}");
    assert!(table.contains("building"), "{table}");
    // metrics.db is derived: deleted or damaged, it comes back the same.
    for damage in [None, Some(&b"garbage, not a database at all........"[..])] {
        std::fs::remove_file(dir.join("st/metrics.db")).unwrap();
        if let Some(bytes) = damage {
            dir.write("st/metrics.db", bytes);
        }
        let run = jkz(&dir).args(["metrics", "--json"]).run().success();
        let again: Value = serde_json::from_slice(run.stdout()).unwrap();
        assert_eq!(again["phases"], m["phases"], "{}", run.report());
        assert_eq!(again["completion_rate"], m["completion_rate"]);
        assert_eq!(
            run.stderr_str().lines().count(),
            usize::from(damage.is_some()),
            "{}",
            run.report()
        );
    }
}

#[test]
fn prometheus_exposition_parses_with_a_real_parser() {
    let dir = Dir::new();
    scripted_history(&dir);
    let run = jkz(&dir)
        .args(["metrics", "--format", "prometheus"])
        .run()
        .success();
    let text = run.stdout_str();
    // Every line is a HELP, a TYPE or a sample: nothing the parser would drop.
    for l in text.lines() {
        let info = prometheus_parse::LineInfo::parse(l);
        assert!(
            matches!(
                info,
                prometheus_parse::LineInfo::Doc { .. }
                    | prometheus_parse::LineInfo::Type { .. }
                    | prometheus_parse::LineInfo::Sample { .. }
            ),
            "not exposition format: {l:?}"
        );
    }
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let value = |metric: &str, labels: &[(&str, &str)]| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .unwrap_or_else(|| panic!("no {metric} {labels:?} in\n{text}"))
            .value
            .clone()
    };
    use prometheus_parse::Value as V;
    assert_eq!(
        value("jkz_issues", &[("outcome", "completed")]),
        V::Gauge(2.0)
    );
    match value("jkz_completion_rate", &[]) {
        V::Gauge(r) => assert!((r - 2.0 / 3.0).abs() < 1e-9),
        other => panic!("{other:?}"),
    }
    match value("jkz_phase_duration_seconds", &[("phase", "building")]) {
        V::Summary(q) => {
            assert_eq!(
                q.iter().map(|c| (c.quantile, c.count)).collect::<Vec<_>>(),
                [(0.5, 18_000.0), (0.9, 32_400.0)]
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        value("jkz_phase_duration_seconds_count", &[("phase", "building")]),
        V::Untyped(3.0)
    );
    assert_eq!(
        value("jkz_issue_fix_iterations", &[("issue", "2")]),
        V::Gauge(5.0)
    );
    assert_eq!(
        value(
            "jkz_agent_invocations",
            &[("role", "builder"), ("status", "failed")]
        ),
        V::Gauge(1.0)
    );
    assert_eq!(
        value("jkz_events_total", &[("type", "phase.changed")]),
        V::Counter(12.0)
    );
    // Every family is documented and typed, and named jkz_….
    for s in &scrape.samples {
        assert!(s.metric.starts_with("jkz_"), "{}", s.metric);
    }
    for family in [
        "jkz_issues",
        "jkz_completion_rate",
        "jkz_phase_duration_seconds",
        "jkz_events_total",
    ] {
        assert!(scrape.docs.contains_key(family), "{family}");
        assert!(text.contains(&format!("# TYPE {family} ")), "{family}");
    }
    // --json and --format are one or the other.
    jkz(&dir)
        .args(["metrics", "--json", "--format", "prometheus"])
        .run()
        .expect_code(2);
}

#[test]
fn slo_check_exits_0_when_met_1_when_violated_2_on_a_bad_file() {
    let dir = Dir::new();
    scripted_history(&dir);
    // No jkz.toml: the defaults (completion rate 80%: violated at 66.7%).
    let run = jkz(&dir).args(["slo", "check"]).run().expect_code(1);
    assert!(
        run.stdout_str().contains("the defaults"),
        "{}",
        run.report()
    );
    dir.write(
        "jkz.toml",
        "[slo]\nwindow = \"7d\"\ncompletion_rate_min = 0.6\nfix_iterations_p90_max = 5\n[slo.phase_p90_max]\nbuilding = \"10h\"\nreview = \"2h\"\n",
    );
    let run = jkz(&dir).args(["slo", "check"]).run().expect_code(0);
    let out = run.stdout_str();
    for key in [
        "slo.completion_rate_min",
        "slo.fix_iterations_p90_max",
        "slo.phase_p90_max.building",
    ] {
        let row = out
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("{key}\n{out}"));
        assert!(row.ends_with(" met"), "{row}");
    }
    dir.write("jkz.toml", "[slo]\ncompletion_rate_min = 0.7\n[slo.phase_p90_max]\nbuilding = \"8h\"\nnever = \"1m\"\n");
    let run = jkz(&dir).args(["slo", "check"]).run().expect_code(1);
    let out = run.stdout_str();
    let row = |key: &str| {
        out.lines()
            .find(|l| l.starts_with(key))
            .unwrap()
            .to_string()
    };
    assert!(
        row("slo.completion_rate_min ").contains("66.7%")
            && row("slo.completion_rate_min ").ends_with("violated"),
        "{out}"
    );
    assert!(
        row("slo.phase_p90_max.building").contains("9h 0m")
            && row("slo.phase_p90_max.building").ends_with("violated"),
        "{out}"
    );
    assert!(row("slo.phase_p90_max.never").ends_with("no data"), "{out}");
    // A bad file: exit 2, naming the key and why.
    for (text, key) in [
        ("[slo]\nwindow = \"a week\"\n", "slo.window"),
        (
            "[slo]\ncompletion_rate_min = 80\n",
            "slo.completion_rate_min",
        ),
        (
            "[slo]\ncompletion_rat_min = 0.8\n",
            "slo.completion_rat_min",
        ),
        (
            "[slo.phase_p90_max]\nbuilding = 30\n",
            "slo.phase_p90_max.building",
        ),
    ] {
        dir.write("jkz.toml", text);
        let run = jkz(&dir).args(["slo", "check"]).run().expect_code(2);
        run.one_line("jkz slo", &format!("jkz.toml: {key}: "));
    }
    dir.write("jkz.toml", "[slo\nbroken");
    jkz(&dir)
        .args(["slo", "check"])
        .run()
        .expect_code(2)
        .one_line("jkz slo", "not valid TOML");
    std::fs::remove_file(dir.join("jkz.toml")).unwrap();
    std::fs::create_dir(dir.join("jkz.toml")).unwrap();
    jkz(&dir)
        .args(["slo", "check"])
        .run()
        .expect_code(2)
        .one_line("jkz slo", "unreadable");
}

#[test]
fn gc_never_removes_a_segment() {
    let dir = Dir::new();
    jkz(&dir)
        .args(["state", "set", "1", "current_phase", "plan"])
        .run()
        .success();
    let old = dir.write("st/events/20200101-0000.jsonl.gz", b"");
    let open_old = dir.write(
        "st/events/20200102-0000.jsonl",
        line(&mut 0, Utc::now(), "x.y", None, None, json!({})),
    );
    for p in [&old, &open_old] {
        let f = std::fs::File::options().write(true).open(p).unwrap();
        f.set_modified(std::time::SystemTime::now() - Duration::from_secs(400 * 86_400))
            .unwrap();
    }
    let before = segments(&dir);
    jkz(&dir).args(["gc"]).run().success();
    assert_eq!(segments(&dir), before);
}

#[test]
fn a_closed_day_is_compressed_line_for_line() {
    let dir = Dir::new();
    let day = Utc::now() - chrono::Duration::days(3);
    let text: String = (0..50)
        .map(|i| line(&mut (i + 1), day, "x.y", Some("5"), None, json!({"i": i})))
        .collect();
    let name = format!("st/events/{}-0000.jsonl", day.format("%Y%m%d"));
    let path = dir.write(&name, &text);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
    let first = events(&dir, &[]);
    assert_eq!(first.len(), 50);
    assert!(!path.exists());
    let gz = dir.join(format!("{name}.gz"));
    let mut plain = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap()),
        &mut plain,
    )
    .unwrap();
    assert_eq!(plain, text);
    // The index knew it all: the same, and the same after a rebuild.
    assert_eq!(events(&dir, &[]), first);
    jkz(&dir).args(["events", "rebuild"]).run().success();
    assert_eq!(events(&dir, &[]), first);
}

#[test]
fn filters_by_issue_type_and_time() {
    let dir = Dir::new();
    let now = Utc::now();
    let mut n = 0;
    let text = [
        line(
            &mut n,
            now - chrono::Duration::hours(5),
            "phase.changed",
            Some("1"),
            None,
            json!({"to": "a"}),
        ),
        line(
            &mut n,
            now - chrono::Duration::hours(3),
            "state.changed",
            Some("1"),
            None,
            json!({"field": "x"}),
        ),
        line(
            &mut n,
            now - chrono::Duration::hours(1),
            "phase.changed",
            Some("2"),
            None,
            json!({"to": "b"}),
        ),
    ]
    .concat();
    dir.write(
        format!("st/events/{}-0000.jsonl", now.format("%Y%m%d")),
        text,
    );
    assert_eq!(events(&dir, &["--issue", "1"]).len(), 2);
    assert_eq!(events(&dir, &["--type", "phase.changed"]).len(), 2);
    assert_eq!(events(&dir, &["--since", "4h"]).len(), 2);
    assert_eq!(
        events(&dir, &["--since", "2h", "--type", "phase.changed"]).len(),
        1
    );
    let since = (now - chrono::Duration::hours(4)).to_rfc3339();
    assert_eq!(events(&dir, &["--since", &since, "--issue", "1"]).len(), 1);
    jkz(&dir)
        .args(["events", "--since", "yesterday"])
        .run()
        .expect_code(2)
        .one_line("jkz events", "--since");
    jkz(&dir)
        .args(["events", "--issue", "x"])
        .run()
        .expect_code(2);
    // Without a state directory: said, exit 4.
    let bare = Dir::new();
    bare.cmd("jkz")
        .env("CLAUDE_PROJECT_DIR", bare.path())
        .args(["events"])
        .run()
        .expect_code(4)
        .one_line("jkz events", "no state directory");
}

#[test]
fn follow_streams_new_events() {
    let dir = Dir::new();
    jkz(&dir)
        .args(["state", "set", "1", "current_phase", "plan"])
        .run()
        .success();
    let mut child = scrubbed(crate::util::bin("jkz"), dir.path())
        .args(["--state-dir", "st", "events", "--json", "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.contains("\"to\":\"plan\""), "{first}");
    jkz(&dir)
        .args(["state", "set", "1", "current_phase", "building"])
        .run()
        .success();
    // A direct write shows too.
    dir.write("st/pipeline/2.json", r#"{"2": {"current_phase": "qa"}}"#);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..2 {
            let mut l = String::new();
            out.read_line(&mut l).unwrap();
            tx.send(l).unwrap();
        }
    });
    let a = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("a new event within 20 s");
    let b = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the direct write within 20 s");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(a.contains("\"to\":\"building\""), "{a}");
    assert!(b.contains("\"direct\":true"), "{b}");
}

#[test]
fn bad_segments_and_bad_indexes_never_crash_or_hang() {
    let dir = Dir::new();
    jkz(&dir)
        .args(["state", "set", "1", "current_phase", "plan"])
        .run()
        .success();
    let ev = dir.join("st/events");
    // Garbage, binary, a huge line, a half line, a clock that went backwards.
    let mut junk = b"\x00\x01\xffgarbage\n{\"id\": 3}\n[1,2,3]\n".to_vec();
    junk.extend(std::iter::repeat_n(b'x', 3 << 20));
    junk.push(b'\n');
    let past = Utc::now() - chrono::Duration::days(400);
    junk.extend(line(&mut 0, past, "odd.past", Some("1"), None, json!({})).as_bytes());
    junk.extend(b"{\"id\":\"half");
    std::fs::write(ev.join("20200101-0000.jsonl"), &junk).unwrap();
    // A segment that is a link, one that is a FIFO, a gzip that is not one.
    std::os::unix::fs::symlink("/etc/passwd", ev.join("20200102-0000.jsonl")).unwrap();
    assert!(std::process::Command::new("mkfifo")
        .arg(ev.join("20200103-0000.jsonl"))
        .status()
        .unwrap()
        .success());
    std::fs::write(
        ev.join("20200104-0000.jsonl.gz"),
        b"\x1f\x8bnot really gzip",
    )
    .unwrap();
    let started = Instant::now();
    let run = jkz(&dir).args(["events", "--json"]).run().success();
    assert!(started.elapsed() < Duration::from_secs(60), "does not hang");
    let kinds: Vec<String> = run
        .stdout_str()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds, ["odd.past", "phase.changed"], "{}", run.report());
    let err = run.stderr_str();
    for what in [
        "20200101-0000.jsonl: skipped 4 lines",
        "20200102-0000.jsonl",
        "20200103-0000.jsonl",
        "20200104-0000.jsonl.gz",
    ] {
        assert_eq!(
            err.lines().filter(|l| l.contains(what)).count(),
            1,
            "{what}\n{err}"
        );
    }
    assert!(!err.contains("/etc/passwd:"), "{err}");
    // The log is never rewritten.
    assert_eq!(std::fs::read(ev.join("20200101-0000.jsonl")).unwrap(), junk);
    // An index from a newer jkz, then a damaged one: rebuilt, with one warning.
    {
        let conn = rusqlite::Connection::open(ev.join("index.db")).unwrap();
        conn.pragma_update(None, "user_version", 999).unwrap();
    }
    let run = jkz(&dir)
        .args(["events", "--json", "--issue", "1"])
        .run()
        .success();
    assert_eq!(run.stdout_str().lines().count(), 2);
    assert!(
        run.stderr_str().contains("another version of jkz"),
        "{}",
        run.report()
    );
    std::fs::write(ev.join("index.db"), vec![0x5a; 8192]).unwrap();
    let _ = std::fs::remove_file(ev.join("index.db-wal"));
    let run = jkz(&dir)
        .args(["events", "--json", "--issue", "1"])
        .run()
        .success();
    assert_eq!(run.stdout_str().lines().count(), 2, "{}", run.report());
    assert!(
        run.stderr_str().contains("rebuilding it from the log"),
        "{}",
        run.report()
    );
    // Metrics on top of all that: fine.
    jkz(&dir).args(["metrics"]).run().success();
    jkz(&dir).args(["slo", "check"]).run();
    let _ = Path::new("");
    let _ = std::io::stdout().flush();
}
