//! The cross-chat registry on the real binaries: `jkz-chat` for every event,
//! `jkz claim`/`release`/`chats`, with the clock fixed by `JKZ_TEST_NOW`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::{bin, Cmd, Dir, Immutable, Run};

pub(crate) const T: i64 = 1_800_000_000;

/// A project with `state/` and a worktree `wt/42` (the regression tests
/// of the registry and team mode's machines use it too).
pub(crate) struct Project {
    pub(crate) dir: Dir,
    /// Set for every command run in it (team mode's URL, the host name).
    pub(crate) env: Vec<(String, String)>,
}

impl Project {
    pub(crate) fn new() -> Project {
        let dir = Dir::new();
        std::fs::create_dir(dir.join("state")).unwrap();
        std::fs::create_dir_all(dir.join("wt/42/src")).unwrap();
        Project {
            dir,
            env: Vec::new(),
        }
    }

    /// The binary `name`, run in the project with its environment.
    pub(crate) fn cmd(&self, name: &str) -> Cmd {
        let mut cmd = self.dir.cmd(name);
        for (k, v) in &self.env {
            cmd = cmd.env(k, v);
        }
        cmd
    }

    pub(crate) fn event(&self, name: &str, session: &str, extra: Value) -> Value {
        let mut e = json!({
            "session_id": session,
            "transcript_path": "/dev/null",
            "cwd": self.dir.path(),
            "hook_event_name": name,
        });
        for (k, v) in extra.as_object().unwrap() {
            e[k] = v.clone();
        }
        e
    }

    pub(crate) fn hook(&self, name: &str, session: &str, extra: Value, now: i64) -> Run {
        self.cmd("jkz-chat")
            .env("JKZ_TEST_NOW", now.to_string())
            .stdin(self.event(name, session, extra).to_string())
            .run()
            .success()
    }

    pub(crate) fn edit(&self, session: &str, file: PathBuf, now: i64) -> Run {
        self.hook(
            "PreToolUse",
            session,
            json!({"tool_name": "Edit", "tool_input": {"file_path": file, "old_string": "a", "new_string": "b"}}),
            now,
        )
    }

    pub(crate) fn jkz(&self, args: &[&str], now: i64) -> Run {
        self.cmd("jkz")
            .args(args)
            .env("JKZ_TEST_NOW", now.to_string())
            .run()
    }

    /// `jkz claim ISSUE --worktree WORKTREE --session SESSION` at `now`.
    pub(crate) fn claim_worktree(
        &self,
        issue: &str,
        worktree: &Path,
        session: &str,
        now: i64,
    ) -> Run {
        let worktree = worktree.to_str().unwrap();
        let args = ["claim", issue, "--worktree", worktree, "--session", session];
        self.jkz(&args, now)
    }

    pub(crate) fn chats(&self, now: i64) -> Vec<Value> {
        let run = self.jkz(&["chats", "--json"], now).success();
        serde_json::from_str::<Vec<Value>>(&run.stdout_str())
            .unwrap_or_else(|_| panic!("{}", run.report()))
    }
}

pub(crate) fn quiet(run: &Run) {
    assert!(
        run.stdout().is_empty(),
        "expected no output\n{}",
        run.report()
    );
    assert!(
        run.stderr_str().is_empty(),
        "expected no stderr\n{}",
        run.report()
    );
}

#[test]
fn a_chat_registers_beats_and_goes_stale_after_five_minutes() {
    let p = Project::new();
    quiet(&p.hook("SessionStart", "chat-a", json!({"source": "startup"}), T));
    let chats = p.chats(T);
    assert_eq!(chats.len(), 1);
    assert_eq!(chats[0]["session_id"], "chat-a");
    assert_eq!(chats[0]["state"], "live");
    assert_eq!(chats[0]["cwd"], p.dir.path().display().to_string());
    // Within 30 s a heartbeat is not written; after, it is.
    quiet(&p.hook(
        "UserPromptSubmit",
        "chat-a",
        json!({"prompt": "go"}),
        T + 10,
    ));
    assert_eq!(
        p.chats(T + 10)[0]["last_heartbeat"],
        p.chats(T)[0]["started"]
    );
    quiet(&p.hook(
        "PostToolUse",
        "chat-a",
        json!({"tool_name": "Read"}),
        T + 40,
    ));
    let beat = p.chats(T + 40)[0]["last_heartbeat"].clone();
    assert_ne!(beat, p.chats(T)[0]["started"]);
    assert_eq!(p.chats(T + 40 + 299)[0]["state"], "live");
    assert_eq!(p.chats(T + 40 + 300)[0]["state"], "stale");
    let table = p.jkz(&["chats"], T + 40 + 300).success().stdout_str();
    assert!(table.starts_with("SESSION"), "{table}");
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["SESSION", "STATE", "SEEN", "HOST", "BRANCH", "CLAIMS", "WORKTREE"]
    );
    // The local registry knows a chat's host only with its client's pid.
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        row,
        ["chat-a", "stale", "5m", "ago", "-", "-", "-", "-"],
        "{table}"
    );
    quiet(&p.hook("SessionEnd", "chat-a", json!({"reason": "exit"}), T + 400));
    assert!(p.chats(T + 400).is_empty());
}

#[test]
fn claim_release_and_take_over_from_a_stale_chat() {
    let p = Project::new();
    p.hook("SessionStart", "chat-a", json!({}), T);
    let wt = p.dir.join("wt/42").display().to_string();
    let run = p
        .jkz(
            &["claim", "42", "--worktree", &wt, "--session", "chat-a"],
            T,
        )
        .success();
    assert!(
        run.stdout_str().contains("claimed issue 42 with worktree"),
        "{}",
        run.report()
    );
    // Another live chat cannot take it, --take or not.
    let run = p
        .jkz(&["claim", "42", "--take", "--session", "chat-b"], T + 60)
        .expect_code(3);
    assert!(
        run.stderr_str().contains("held by live chat chat-a"),
        "{}",
        run.report()
    );
    // Nor the worktree, under another issue.
    let run = p
        .jkz(
            &["claim", "43", "--worktree", &wt, "--session", "chat-b"],
            T + 60,
        )
        .expect_code(3);
    assert!(
        run.stderr_str().contains("belongs to issue 42"),
        "{}",
        run.report()
    );
    // Stale: without --take still refused, and the message says how.
    let run = p
        .jkz(&["claim", "42", "--session", "chat-b"], T + 300)
        .expect_code(3);
    assert!(
        run.stderr_str().contains("`jkz claim 42 --take`"),
        "{}",
        run.report()
    );
    // The chat's own Bash tool names it through CLAUDE_CODE_SESSION_ID.
    let run = p
        .dir
        .cmd("jkz")
        .args(["claim", "42", "--take"])
        .env("CLAUDE_CODE_SESSION_ID", "chat-b")
        .env("JKZ_TEST_NOW", (T + 300).to_string())
        .run()
        .success();
    assert!(
        run.stdout_str()
            .contains("took issue 42 over from stale chat chat-a"),
        "{}",
        run.report()
    );
    p.jkz(&["release", "42", "--session", "chat-a"], T + 301)
        .expect_code(3);
    let run = p
        .jkz(&["release", "42", "--session", "chat-b"], T + 301)
        .success();
    assert_eq!(run.stdout_str(), "released issue 42\n");
    p.jkz(&["release", "42", "--session", "chat-b"], T + 301)
        .success();
    // Outside a chat and without --session: a usage error.
    p.jkz(&["claim", "44"], T).expect_code(2);
}

#[test]
fn an_edit_in_another_live_chats_worktree_is_denied_with_the_reason() {
    let p = Project::new();
    p.hook("SessionStart", "chat-a", json!({}), T);
    p.hook("SessionStart", "chat-b", json!({}), T);
    let wt = p.dir.join("wt/42");
    p.claim_worktree("42", &wt, "chat-a", T).success();
    let run = p.edit("chat-b", wt.join("src/lib.rs"), T + 20);
    let answer: Value =
        serde_json::from_slice(run.stdout()).unwrap_or_else(|_| panic!("{}", run.report()));
    let out = &answer["hookSpecificOutput"];
    assert_eq!(out["hookEventName"], "PreToolUse");
    assert_eq!(out["permissionDecision"], "deny");
    let why = out["permissionDecisionReason"].as_str().unwrap();
    assert!(why.contains("chat chat-a"), "{why}");
    assert!(why.contains("since 2027-01-15T08:00:00Z"), "{why}");
    assert!(why.contains("`jkz claim 42 --take`"), "{why}");
    // Its own chat edits freely; elsewhere and other tools pass untouched.
    quiet(&p.edit("chat-a", wt.join("src/lib.rs"), T + 20));
    quiet(&p.edit("chat-b", p.dir.join("README.md"), T + 20));
    quiet(&p.hook(
        "PreToolUse",
        "chat-b",
        json!({"tool_name": "Read", "tool_input": {"file_path": wt.join("src/lib.rs")}}),
        T + 20,
    ));
    // Writing the issue's pipeline state: the file, and `jkz state set`.
    let run = p.hook(
        "PreToolUse",
        "chat-b",
        json!({"tool_name": "Write", "tool_input": {"file_path": p.dir.join("state/pipeline/42.json"), "content": "{}"}}),
        T + 20,
    );
    assert!(run.stdout_str().contains("\"deny\""), "{}", run.report());
    let run = p.hook(
        "PreToolUse",
        "chat-b",
        json!({"tool_name": "Bash", "tool_input": {"command": "jkz state set 42 current_phase done"}}),
        T + 20,
    );
    assert!(run.stdout_str().contains("\"deny\""), "{}", run.report());
    quiet(&p.hook(
        "PreToolUse",
        "chat-b",
        json!({"tool_name": "Bash", "tool_input": {"command": "jkz state get 42 current_phase"}}),
        T + 20,
    ));
    // Stale: the claim stops nobody.
    quiet(&p.edit("chat-b", wt.join("src/lib.rs"), T + 300));
    // Gone: SessionEnd released it.
    p.hook("SessionEnd", "chat-a", json!({}), T + 30);
    quiet(&p.edit("chat-b", wt.join("src/lib.rs"), T + 31));
}

#[test]
fn jkz_state_set_from_a_chat_claims_the_issue_when_free() {
    let p = Project::new();
    let set = |session: &str| {
        p.dir
            .cmd("jkz")
            .args(["state", "set", "42", "current_phase", "building"])
            .env("CLAUDE_CODE_SESSION_ID", session)
            .env("JKZ_TEST_NOW", T.to_string())
            .run()
    };
    quiet(&set("chat-a").success());
    let chats = p.chats(T);
    assert_eq!(chats[0]["claims"][0]["issue"], 42, "{chats:?}");
    // Another chat's write is refused by the writer itself (issue 23: it
    // used to warn and write); the claim stays chat-a's.
    let run = set("chat-b").expect_code(3);
    assert!(
        run.stderr_str().contains("claimed by live chat chat-a"),
        "{}",
        run.report()
    );
    let chats = p.chats(T);
    assert_eq!(chats.len(), 1, "{chats:?}");
    assert_eq!(chats[0]["session_id"], "chat-a");
}

#[test]
fn thirty_two_concurrent_hooks_lose_no_heartbeat() {
    let p = Project::new();
    let spawn_all = |name: &str, now: i64| {
        let children: Vec<_> = (0..32)
            .map(|i| {
                let mut child = std::process::Command::new(bin("jkz-chat"))
                    .current_dir(p.dir.path())
                    .env_remove("JKZ_STATE_DIR")
                    .env_remove("CLAUDE_PROJECT_DIR")
                    .env("JKZ_TEST_NOW", now.to_string())
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                let input = p.event(name, &format!("chat-{i:02}"), json!({}));
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(input.to_string().as_bytes())
                    .unwrap();
                child
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success());
            assert!(
                out.stderr.is_empty(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    };
    // 32 chats start at once on a registry that does not exist yet…
    spawn_all("SessionStart", T);
    assert_eq!(p.chats(T).len(), 32);
    // …then all beat at once.
    spawn_all("UserPromptSubmit", T + 100);
    let chats = p.chats(T + 100);
    assert_eq!(chats.len(), 32);
    for c in &chats {
        assert_eq!(c["last_heartbeat"], "2027-01-15T08:01:40Z", "{c}");
    }
}

#[test]
fn a_corrupt_chat_db_is_rebuilt_empty_and_said_so() {
    let p = Project::new();
    p.dir
        .write("state/chat.db", "this is not a database\n".repeat(500));
    let run = p.hook("SessionStart", "chat-a", json!({}), T);
    assert!(run.stdout().is_empty());
    let err = run.stderr_str();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("rebuilt empty"), "{err}");
    assert!(p.dir.join("state/chat.db.corrupt").is_file());
    assert_eq!(p.chats(T)[0]["session_id"], "chat-a");
}

#[test]
fn a_read_only_state_directory_never_breaks_a_hook() {
    let p = Project::new();
    let Some(_guard) = Immutable::set(&p.dir.join("state")) else {
        crate::util::cannot_run("chattr +i is not supported here: read-only state/ not tested");
        return;
    };
    assert!(std::fs::write(p.dir.join("state/probe"), "x").is_err());
    let run = p.hook("SessionStart", "chat-a", json!({}), T);
    assert!(run.stdout().is_empty());
    assert_eq!(run.stderr_str().lines().count(), 1, "{}", run.report());
    assert!(run.stderr_str().contains("chat.db"), "{}", run.report());
    // No registry: the edit passes, silently (nothing is claimed).
    quiet(&p.edit("chat-a", p.dir.join("wt/42/src/a.rs"), T));
    p.jkz(&["claim", "42", "--session", "chat-a"], T)
        .expect_code(1);
}

#[test]
fn a_project_without_state_is_left_alone() {
    let dir = Dir::new();
    let run = dir
        .cmd("jkz-chat")
        .stdin(
            json!({"session_id": "s", "cwd": dir.path(), "hook_event_name": "SessionStart"})
                .to_string(),
        )
        .run()
        .success();
    quiet(&run);
    assert!(dir.files().is_empty(), "{:?}", dir.files());
}
