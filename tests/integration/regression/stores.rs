//! Regression tests: the stores, tried adversarially. Each test is named
//! after what broke and replays the input that broke it: repository files
//! that are not files, a state directory git config named that was not
//! one, a segment of the event log dropped by name, an append that waited
//! on another process's lock, a team schema that had drifted.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::registry::{Project, T};
use crate::util::{git, Cmd, Dir, Run};

/// How long a hook may take here: far inside the harness's kill deadline,
/// so a hang shows as this assertion, not as the harness killing it.
const PROMPT: Duration = Duration::from_secs(5);

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Runs `cmd`, killed by the harness after 30 s; asserts it exited 0
/// within [`PROMPT`].
fn promptly(cmd: Cmd) -> Run {
    let started = Instant::now();
    let run = cmd.deadline(Duration::from_secs(30)).run().success();
    assert!(
        started.elapsed() < PROMPT,
        "took {:?}\n{}",
        started.elapsed(),
        run.report()
    );
    run
}

#[test]
fn git_head_as_a_fifo_hung_session_start_and_user_prompt_submit() {
    let p = Project::new();
    git(p.dir.path(), &["init", "-q", "-b", "main"]);
    let head = p.dir.join(".git/HEAD");
    std::fs::remove_file(&head).unwrap();
    // No writer ever opens it: a plain read of it waits forever.
    mkfifo(&head);
    for (name, extra) in [
        ("SessionStart", json!({"source": "startup"})),
        ("UserPromptSubmit", json!({"prompt": "go on"})),
    ] {
        promptly(
            p.cmd("jkz-chat")
                .env("JKZ_TEST_NOW", T.to_string())
                .stdin(p.event(name, "chat-a", extra).to_string()),
        );
    }
    // Registered all the same, its branch unknown.
    let chats = p.chats(T);
    assert_eq!(chats.len(), 1, "{chats:?}");
    assert_eq!(chats[0]["session_id"], "chat-a", "{chats:?}");
    assert_eq!(chats[0]["branch"], Value::Null, "{chats:?}");
}

#[test]
fn dot_git_linked_to_dev_zero_grew_session_start_to_gigabytes() {
    if std::fs::metadata("/proc/self/io").is_err() {
        crate::util::cannot_run("no /proc/self/io: the bytes a process read cannot be counted");
        return;
    }
    let dir = Dir::new();
    std::os::unix::fs::symlink("/dev/zero", dir.join(".git")).unwrap();
    // Named, and outside that directory (whose layout cannot be read).
    let elsewhere = Dir::new();
    let state = elsewhere.join("state");
    let event = elsewhere.write(
        "start.json",
        json!({
            "session_id": "chat-a",
            "transcript_path": "/dev/null",
            "cwd": dir.path(),
            "hook_event_name": "SessionStart",
            "source": "startup",
        })
        .to_string(),
    );
    // The hook under a shell that then prints the bytes read by it and its
    // reaped child (`rchar`): every byte of /dev/zero read counts, however
    // the read ends. 512 MiB of address space caps the damage meanwhile.
    let script = "ulimit -v 524288; \"$0\" < \"$1\"; code=$?; cat /proc/$$/io; exit $code";
    let started = Instant::now();
    let out = crate::util::scrubbed("sh", dir.path())
        .args(["-c", script])
        .arg(crate::util::bin("jkz-chat"))
        .arg(&event)
        .env("JKZ_STATE_DIR", &state)
        .env("JKZ_TEST_NOW", T.to_string())
        .output()
        .unwrap();
    assert!(started.elapsed() < PROMPT, "took {:?}", started.elapsed());
    assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let read: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no rchar in {stdout}"));
    assert!(read < 16 << 20, "the hook read {read} bytes\n{stdout}");
    let chats = Cmd::new("jkz", dir.path())
        .args(["chats", "--json"])
        .env("JKZ_STATE_DIR", &state)
        .env("JKZ_TEST_NOW", T.to_string())
        .run()
        .success();
    let chats: Vec<Value> = serde_json::from_str(&chats.stdout_str()).unwrap();
    assert_eq!(chats.len(), 1, "{chats:?}");
    assert_eq!(chats[0]["branch"], Value::Null, "{chats:?}");
}

/// A repository whose git config says `jkz.stateDir` is `value`.
fn attached_to(value: &str) -> Dir {
    let dir = Dir::new();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["config", "jkz.stateDir", value]);
    dir
}

#[test]
fn git_config_state_dir_of_the_file_system_root_was_taken() {
    let db = Path::new("/chat.db");
    if db.exists() {
        crate::util::cannot_run("/chat.db exists already: whether jkz made one cannot be told");
        return;
    }
    let dir = attached_to("/");
    let doctor = Cmd::new("jkz", dir.path())
        .arg("doctor")
        .run()
        .expect_code(1);
    let out = doctor.stdout_str();
    let state_line = out
        .lines()
        .find(|l| l.contains("state:"))
        .unwrap_or_else(|| panic!("{}", doctor.report()));
    assert!(
        state_line.starts_with("FAIL")
            && state_line.contains("jkz.stateDir")
            && state_line.contains("names /, which is the file system's root"),
        "{}",
        doctor.report()
    );
    assert!(!out.contains("ok   state: /"), "{}", doctor.report());
    // One line per problem, not one per file of the file system.
    assert!(out.lines().count() < 40, "{}", doctor.report());

    let event = json!({
        "session_id": "chat-a",
        "transcript_path": "/dev/null",
        "cwd": dir.path(),
        "hook_event_name": "SessionStart",
        "source": "startup",
    });
    let run = promptly(
        Cmd::new("jkz-chat", dir.path())
            .env("CLAUDE_PROJECT_DIR", dir.path())
            .env("JKZ_TEST_NOW", T.to_string())
            .stdin(event.to_string()),
    );
    run.one_line("jkz-chat", "the file system's root");
    assert!(!db.exists(), "jkz-chat made /chat.db\n{}", run.report());
    let state = Cmd::new("jkz", dir.path())
        .args(["state", "set", "42", "current_phase", "plan"])
        .run();
    assert_ne!(state.code(), Some(0), "{}", state.report());
    assert!(
        state.stderr_str().contains("the file system's root"),
        "{}",
        state.report()
    );
    assert!(!Path::new("/pipeline").exists(), "{}", state.report());
    assert!(!Path::new("/events").exists(), "{}", state.report());
}

#[test]
fn state_dir_flag_or_env_of_the_file_system_root_was_taken() {
    let dir = Dir::new();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    for (flag, env) in [(Some("/"), None), (None, Some("/"))] {
        let mut cmd =
            Cmd::new("jkz", dir.path()).args(["state", "set", "42", "current_phase", "plan"]);
        if let Some(flag) = flag {
            cmd = cmd.args(["--state-dir", flag]);
        }
        if let Some(env) = env {
            cmd = cmd.env("JKZ_STATE_DIR", env);
        }
        let run = cmd.run().expect_code(2);
        assert!(
            run.stderr_str().contains("names /, the file system's root"),
            "{}",
            run.report()
        );
        assert!(!Path::new("/pipeline").exists(), "{}", run.report());
    }
    let lock = Cmd::new("jkz", dir.path())
        .args(["lock", "acquire", "db", "main", "--state-dir", "/usr"])
        .run();
    assert_ne!(lock.code(), Some(0), "{}", lock.report());
    assert!(
        lock.stderr_str().contains("the system directory /usr"),
        "{}",
        lock.report()
    );
    assert!(!Path::new("/usr/locks").exists(), "{}", lock.report());
}

#[test]
fn jkz_attach_took_over_a_directory_that_was_not_a_state_root() {
    let ours = Dir::new();
    git(ours.path(), &["init", "-q", "-b", "main"]);
    let theirs = Dir::new();
    git(theirs.path(), &["init", "-q", "-b", "main"]);
    // Their state/ is an application's data directory, not jkz's.
    theirs.write("state/accounts.csv", "id,name\n");
    let run = Cmd::new("jkz", ours.path())
        .arg("attach")
        .arg(theirs.path())
        .run()
        .expect_code(1);
    assert!(
        run.stderr_str().contains("\"accounts.csv\"")
            && run.stderr_str().contains("not a jkz state directory"),
        "{}",
        run.report()
    );
    let config = std::fs::read_to_string(ours.join(".git/config")).unwrap();
    assert!(!config.contains("stateDir"), "{config}");
    // A system directory named in the config: refused by every tool.
    let dir = attached_to("/etc");
    let run = Cmd::new("jkz", dir.path()).args(["state", "list"]).run();
    assert_ne!(run.code(), Some(0), "{}", run.report());
    assert!(
        run.stderr_str().contains("the system directory /etc"),
        "{}",
        run.report()
    );
}

/// Every event `jkz events --json` shows in `dir`'s state directory, with
/// the environment `env`.
fn events(dir: &Dir, env: &[(&str, &str)]) -> Vec<Value> {
    let mut cmd = dir.cmd("jkz").args(["events", "--json"]);
    for (k, v) in env {
        cmd = cmd.env(k, v);
    }
    let run = cmd.run().success();
    run.stdout_str()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{}", run.report())))
        .collect()
}

/// The issues of `events`' `phase.changed` events, in order.
fn phase_issues(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "phase.changed")
        .map(|e| e["issue"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The length a gzip file says it holds (its trailer's ISIZE).
fn gzip_length(path: &Path) -> u64 {
    let bytes = std::fs::read(path).unwrap();
    let tail: [u8; 4] = bytes[bytes.len() - 4..].try_into().unwrap();
    u64::from(u32::from_le_bytes(tail))
}

#[test]
fn a_late_writers_segment_made_rebuild_drop_a_closed_segments_events() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    // The writers' clock, fixed (JKZ_TEST_LOG_NOW, honoured by the debug
    // builds the tests run): the first writes on 9 March.
    let set = |issue: &str, at: &str| {
        dir.cmd("jkz")
            .args(["state", "set", issue, "current_phase", "plan"])
            .env("JKZ_TEST_LOG_NOW", at)
            .run()
            .success()
    };
    set("42", "2026-03-09T10:00:00Z");
    let open = dir.join("state/events/20260309-0000.jsonl");
    let closed = dir.join("state/events/20260309-0000.jsonl.gz");
    // Idle for a day: the next reader closes it.
    crate::util::age(&open, crate::util::DAY);
    assert_eq!(phase_issues(&events(&dir, &[])), ["42"]);
    assert!(closed.exists() && !open.exists());
    // A writer whose clock is a day behind: a new open segment under the
    // closed one's name, and (same shape, same length) its length.
    set("43", "2026-03-09T11:00:00Z");
    assert_eq!(
        std::fs::metadata(&open).unwrap().len(),
        gzip_length(&closed),
        "the case that broke: the same name and length"
    );
    let both = ["42", "43"];
    assert_eq!(phase_issues(&events(&dir, &[])), both, "caught up");
    let rebuilt = dir.cmd("jkz").args(["events", "rebuild"]).run().success();
    assert!(
        rebuilt.stdout_str().contains(": 2 events"),
        "{}",
        rebuilt.report()
    );
    assert_eq!(phase_issues(&events(&dir, &[])), both, "rebuilt");
    // And the metrics, derived from the index, count both.
    let metrics = dir
        .cmd("jkz")
        .args(["metrics", "--json", "--since", "2026-03-01T00:00:00Z"])
        .env("JKZ_TEST_LOG_NOW", "2026-03-10T00:00:00Z")
        .run()
        .success();
    let report: Value = serde_json::from_str(&metrics.stdout_str()).unwrap();
    assert_eq!(report["events"]["phase.changed"], 2, "{}", metrics.report());
    let issues: Vec<&str> = report["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["issue"].as_str().unwrap())
        .collect();
    assert_eq!(issues, both, "{}", metrics.report());
}

/// A child holding an exclusive `flock` on `path` until dropped.
struct HeldLock(std::process::Child);

impl HeldLock {
    /// `flock -x PATH`, holding it while its shell waits on stdin; `None`
    /// where flock(1) is not installed.
    fn take(path: &Path) -> Option<HeldLock> {
        use std::io::BufRead;
        let mut child = Command::new("flock")
            .arg("-x")
            .arg(path)
            .args(["sh", "-c", "echo held; read _"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .ok()?;
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "held\n", "flock did not take the lock");
        Some(HeldLock(child))
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        drop(self.0.stdin.take()); // `read` ends, the lock goes with it
        let _ = self.0.wait();
    }
}

#[test]
fn a_held_flock_on_todays_segment_blocked_state_set_and_session_start() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    // One writer a minute, so the events' ids sort as they were written.
    let set = |phase: &str, minute: u32| {
        promptly(
            dir.cmd("jkz")
                .args(["state", "set", "42", "current_phase", phase])
                .env("JKZ_TEST_LOG_NOW", format!("2026-03-09T10:{minute:02}:00Z")),
        )
    };
    set("plan", 0);
    // Today's segment, as the writer's clock has it.
    let segments: Vec<_> = std::fs::read_dir(dir.join("state/events"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(segments.len(), 1, "{segments:?}");
    let segment = segments[0].clone();
    let before = std::fs::read(&segment).unwrap();
    let Some(held) = HeldLock::take(&segment) else {
        crate::util::cannot_run("flock(1) is not installed");
        return;
    };
    // Both answer at once, their events spooled, the segment untouched.
    set("build", 1);
    let start = json!({
        "session_id": "sess-1",
        "transcript_path": "/dev/null",
        "cwd": dir.path(),
        "hook_event_name": "SessionStart",
        "source": "compact",
    });
    promptly(
        dir.cmd("jkz-session-start")
            .env("CLAUDE_PROJECT_DIR", dir.path())
            .env("JKZ_TEST_LOG_NOW", "2026-03-09T10:02:00Z")
            .stdin(start.to_string()),
    );
    assert_eq!(std::fs::read(&segment).unwrap(), before);
    let pending = dir.join("state/events/pending");
    assert_eq!(std::fs::read_dir(&pending).unwrap().count(), 2);
    // A reader while it is still held waits for nothing either, and reads
    // the spooled events where they are: the change to "build" is jkz's,
    // not one made behind its back (no second, "direct" event for it).
    let kinds = |all: &[Value]| -> Vec<String> {
        all.iter()
            .map(|e| format!("{} {}", e["type"], e["payload"]["to"]))
            .collect()
    };
    let want = [
        "\"phase.changed\" \"plan\"",
        "\"phase.changed\" \"build\"",
        "\"session.started\" null",
    ];
    let started = Instant::now();
    assert_eq!(kinds(&events(&dir, &[])), want);
    assert!(started.elapsed() < PROMPT);
    assert_eq!(std::fs::read(&segment).unwrap(), before);
    assert_eq!(std::fs::read_dir(&pending).unwrap().count(), 2);
    drop(held);
    // Released: the next reader appends them to the segment, once.
    assert_eq!(kinds(&events(&dir, &[])), want);
    assert_eq!(std::fs::read_dir(&pending).unwrap().count(), 0);
    let log = String::from_utf8(std::fs::read(&segment).unwrap()).unwrap();
    assert_eq!(log.lines().count(), 3, "{log}");
    let rebuilt = dir.cmd("jkz").args(["events", "rebuild"]).run().success();
    assert!(
        rebuilt.stdout_str().contains(": 3 events"),
        "{}",
        rebuilt.report()
    );
    // So does the next writer, when no reader came first.
    let held = HeldLock::take(&segment).unwrap();
    set("review", 3);
    drop(held);
    set("done", 4);
    let log = String::from_utf8(std::fs::read(&segment).unwrap()).unwrap();
    let review = log.find("\"to\":\"review\"").expect("the spooled line");
    let done = log.find("\"to\":\"done\"").expect("the next writer's line");
    assert!(review < done, "{log}");
    let mut want = want.to_vec();
    want.extend(["\"phase.changed\" \"review\"", "\"phase.changed\" \"done\""]);
    assert_eq!(kinds(&events(&dir, &[])), want);
}

/// The lines of `jkz doctor`'s report about the registry.
/// `jkz doctor`'s checks of the registry (its notes on the local replica
/// and each machine left out: [`registry_notes`]).
fn registry_lines(p: &Project) -> Vec<String> {
    let doctor = p.jkz(&["doctor"], T);
    doctor
        .stdout_str()
        .lines()
        .filter(|l| l.contains("registry:") && !l.starts_with("note"))
        .map(str::to_string)
        .collect()
}

/// `jkz doctor`'s notes on the registry.
fn registry_notes(p: &Project) -> Vec<String> {
    let doctor = p.jkz(&["doctor"], T);
    doctor
        .stdout_str()
        .lines()
        .filter(|l| l.starts_with("note registry:"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_renamed_column_of_jkz_claims_left_migrate_up_to_date_and_doctor_ok() {
    let Some(server) = crate::postgres::shared() else {
        return;
    };
    let db = server.database();
    let mut p = Project::new();
    p.env = vec![
        ("JKZ_REGISTRY_URL".into(), server.url(&db)),
        ("PGPASSWORD".into(), crate::postgres::PASSWORD.into()),
        ("PGSSLMODE".into(), "prefer".into()),
    ];
    // The first writer makes the tables; they are the schema, column for
    // column (this holds the expected schema to the migrations).
    p.jkz(&["claim", "42", "--session", "chat-a"], T).success();
    let run = p.jkz(&["registry", "migrate"], T).success();
    assert!(
        run.stdout_str()
            .contains("(up to date; every table and column checked)"),
        "{}",
        run.report()
    );
    let lines = registry_lines(&p);
    assert!(
        lines.len() == 1 && lines[0].starts_with("ok   registry: PostgreSQL"),
        "{lines:?}"
    );
    let notes = registry_notes(&p);
    assert!(
        notes[0].starts_with("note registry: this machine's replica")
            && notes[0].contains("refreshed")
            && notes.iter().any(|l| l.contains("1 chat(s), claims 42")),
        "{notes:?}"
    );

    server
        .admin(&db)
        .batch_execute("ALTER TABLE jkz_claims RENAME COLUMN session_id TO owner_session")
        .unwrap();
    // What that does: no claim can be made (nor enforced).
    let claim = p.jkz(&["claim", "43", "--session", "chat-a"], T);
    assert_ne!(claim.code(), Some(0), "{}", claim.report());

    let run = p.jkz(&["registry", "migrate"], T).expect_code(1);
    let out = run.stdout_str();
    assert!(!out.contains("up to date"), "{}", run.report());
    assert!(
        out.contains("differs jkz_claims.session_id: column session_id (text) is missing")
            && out.contains("\"owner_session\" (text) is not jkz's: very likely it, renamed")
            && out.contains("ALTER TABLE jkz_claims RENAME COLUMN \"owner_session\" TO session_id"),
        "{}",
        run.report()
    );
    assert!(
        run.stderr_str().contains("jkz registry migrate --repair"),
        "{}",
        run.report()
    );
    let lines = registry_lines(&p);
    assert!(
        lines.iter().any(
            |l| l.starts_with("FAIL registry: table jkz_claims.session_id")
                && l.contains("renamed")
        ),
        "{lines:?}"
    );

    // Repaired where safe: renamed back, the claims it held kept.
    let run = p.jkz(&["registry", "migrate", "--repair"], T).success();
    assert!(
        run.stdout_str().contains("repaired jkz_claims.session_id")
            && run
                .stdout_str()
                .contains("(up to date; every table and column checked)"),
        "{}",
        run.report()
    );
    p.jkz(&["claim", "43", "--session", "chat-a"], T).success();
    p.jkz(&["claim", "42", "--session", "chat-b"], T)
        .expect_code(3);
    let lines = registry_lines(&p);
    assert!(
        lines.len() == 1 && lines[0].starts_with("ok   registry:"),
        "{lines:?}"
    );

    // What is not safe to do unasked is shown, not done.
    server
        .admin(&db)
        .batch_execute("ALTER TABLE jkz_claims ALTER COLUMN acquired TYPE text")
        .unwrap();
    let run = p
        .jkz(&["registry", "migrate", "--repair"], T)
        .expect_code(1);
    assert!(
        run.stdout_str().contains(
            "differs jkz_claims.acquired: column acquired is text, not bigint; repair by hand: ALTER TABLE jkz_claims ALTER COLUMN acquired TYPE bigint USING acquired::bigint"
        ),
        "{}",
        run.report()
    );
    let ty: String = server
        .admin(&db)
        .query_one(
            "SELECT data_type FROM information_schema.columns WHERE table_name = 'jkz_claims' AND column_name = 'acquired'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(ty, "text", "left as it was");
}
