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
use crate::util::{Cmd, Dir, Run};

/// How long a hook may take here: far inside the harness's kill deadline,
/// so a hang shows as this assertion, not as the harness killing it.
const PROMPT: Duration = Duration::from_secs(5);

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git is needed for this test");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

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
    let dir = Dir::new();
    std::os::unix::fs::symlink("/dev/zero", dir.join(".git")).unwrap();
    // Named, and outside that directory (whose layout cannot be read).
    let elsewhere = Dir::new();
    let state = elsewhere.join("state");
    let event = json!({
        "session_id": "chat-a",
        "transcript_path": "/dev/null",
        "cwd": dir.path(),
        "hook_event_name": "SessionStart",
        "source": "startup",
    });
    // 512 MiB of address space: a hook needs a few dozen; reading
    // /dev/zero to its end needs all there is, and is stopped by this.
    let run = promptly(
        Cmd::under_sh("ulimit -v 524288;", "jkz-chat", dir.path())
            .env("JKZ_STATE_DIR", &state)
            .env("JKZ_TEST_NOW", T.to_string())
            .stdin(event.to_string()),
    );
    assert!(
        run.stdout().is_empty() && run.stderr_str().is_empty(),
        "{}",
        run.report()
    );
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
