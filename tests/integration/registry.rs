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

/// A project (a git checkout with `state/` ignored) where live chat
/// `chat-a` holds issue 42 with the worktree `wt/42`, and chat `chat-b` is
/// live too.
pub(crate) fn claimed_checkout() -> Project {
    let p = Project::new();
    std::fs::create_dir(p.dir.join(".git")).unwrap();
    p.dir.write(".gitignore", "state/\n");
    p.hook("SessionStart", "chat-a", json!({"source": "startup"}), T);
    p.hook("SessionStart", "chat-b", json!({"source": "startup"}), T);
    let wt = p.dir.join("wt/42");
    p.claim_worktree("42", &wt, "chat-a", T).success();
    p.dir.write(
        "state/pipeline/42.json",
        json!({"42": {"current_phase": "building"}}).to_string(),
    );
    p.dir.write("wt/42/src/lib.rs", "");
    p
}

/// The three clients' PreToolUse calls of their shell tool, as each sends
/// them: Claude Code's `Bash`, Codex CLI's `Bash` (its events carry a
/// `turn_id`), Gemini CLI's `BeforeTool` for `run_shell_command`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Client {
    Claude,
    Codex,
    Gemini,
}

pub(crate) const CLIENTS: [Client; 3] = [Client::Claude, Client::Codex, Client::Gemini];

/// What the hook answered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Pass,
    Deny(String),
    Ask(String),
}

pub(crate) fn shell(p: &Project, client: Client, session: &str, command: &str) -> Run {
    let (event, extra) = match client {
        Client::Claude => (
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": command}}),
        ),
        Client::Codex => (
            "PreToolUse",
            json!({"tool_name": "Bash", "turn_id": "turn-1", "model": "gpt-5",
                   "tool_input": {"command": command}}),
        ),
        Client::Gemini => (
            "BeforeTool",
            json!({"tool_name": "run_shell_command", "timestamp": "2027-01-15T08:00:00Z",
                   "tool_input": {"command": command, "description": "x"}}),
        ),
    };
    let mut cmd = p
        .cmd("jkz-chat")
        .env("JKZ_TEST_NOW", (T + 10).to_string())
        // Codex's output guard would answer an allowed call with a rewrite.
        .env("JKZ_CODEX_GUARD", "0")
        .env("JKZ_BASH_WRAP", "0")
        .stdin(p.event(event, session, extra).to_string());
    if let Client::Gemini = client {
        cmd = cmd.env("GEMINI_PROJECT_DIR", p.dir.path());
    }
    cmd.run().success()
}

/// The answer, read in the client's own shape.
pub(crate) fn answer(client: Client, run: &Run) -> Answer {
    if run.stdout().is_empty() {
        return Answer::Pass;
    }
    let v: Value = serde_json::from_slice(run.stdout())
        .unwrap_or_else(|_| panic!("not JSON\n{}", run.report()));
    let (decision, reason) = match client {
        Client::Claude | Client::Codex => {
            let out = &v["hookSpecificOutput"];
            assert_eq!(out["hookEventName"], "PreToolUse", "{}", run.report());
            (
                out["permissionDecision"].clone(),
                out["permissionDecisionReason"].clone(),
            )
        }
        Client::Gemini => (v["decision"].clone(), v["reason"].clone()),
    };
    let reason = reason
        .as_str()
        .unwrap_or_else(|| panic!("no reason\n{}", run.report()))
        .to_string();
    assert!(!reason.trim().is_empty(), "{}", run.report());
    match decision.as_str() {
        Some("deny") => Answer::Deny(reason),
        Some("ask") => Answer::Ask(reason),
        _ => panic!("unexpected answer\n{}", run.report()),
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

#[test]
fn read_only_commands_are_never_refused() {
    let p = claimed_checkout();
    let alone = Project::new();
    for command in [
        "cat state/pipeline/42.json",
        "head -c 100 state/chat.db | xxd | tail -2",
        "grep -rn current_phase state/ wt/42/src",
        "rg claims wt/42",
        "git log --oneline -5 && git diff HEAD~1 -- wt/42 && git status --short",
        "git show HEAD:state/pipeline/42.json; git stash list; git stash show -p",
        "git -C wt/42 log -1; git -C wt/42 diff",
        "git clean -n -dX",
        "sqlite3 state/chat.db 'SELECT * FROM claims'",
        "sqlite3 -readonly state/chat.db 'DELETE FROM claims'",
        "sqlite3 -json state/memory.db 'select count(*) from patterns; .tables'",
        "ls -la state state/pipeline wt/42",
        "find state -name '*.json'",
        "find . -path ./target -prune -o -name '*.rs' -print | xargs grep -l claim",
        "jq .42.current_phase state/pipeline/42.json",
        "jkz state get 42 current_phase; jkz chats; jkz events --issue 42",
        "awk '{print $1}' state/pipeline/42.json; sed -n 1p state/pipeline/42.json",
        "tar -tzf /tmp/a.tgz; unzip -l /tmp/a.zip",
        "python3 -c \"import json; print(json.load(open('state/pipeline/42.json')))\"",
        "f=state/pipeline/42.json; wc -c \"$f\"; diff \"$f\" /dev/null",
        "for f in state/pipeline/*.json; do jq . \"$f\"; done",
        "cp state/pipeline/42.json /tmp/jkz-copy.json",
        "echo $(cat state/pipeline/42.json) | head -1",
        "cargo test 2>&1 | tail -5",
        "vim -R state/pipeline/42.json",
    ] {
        for project in [&p, &alone] {
            for client in CLIENTS {
                let run = shell(project, client, "chat-b", command);
                assert_eq!(answer(client, &run), Answer::Pass, "{client:?} {command}");
            }
        }
    }
}

#[test]
fn the_state_directory_is_guarded_whoever_holds_a_claim() {
    // Nobody holds anything: a project with state/ and no registry yet.
    let p = Project::new();
    std::fs::create_dir(p.dir.join(".git")).unwrap();
    p.dir.write("state/memory.db", "");
    let state = p.dir.join("state").display().to_string();
    let parent = format!(
        "rm -rf ../{}",
        p.dir.path().file_name().unwrap().to_str().unwrap()
    );
    for (command, instead) in [
        ("rm -rf state", "rm -rf build target"),
        ("rm -rf .", "rm -rf build target"),
        ("rm -rf *", "rm -rf build target"),
        (parent.as_str(), "rm -rf build target"),
        ("mv state /tmp/elsewhere", "rm -rf build target"),
        ("git stash -a", "git stash --include-untracked"),
        (
            "git stash push --all -m wip",
            "git stash --include-untracked",
        ),
        ("find . -delete", "-prune"),
        ("find . -type f -name '*.db' -delete", "-prune"),
        ("rsync -a --delete /tmp/empty/ ./", "--exclude=/state/"),
        ("echo '' > state/memory.db", "sqlite3 -readonly"),
        ("cp /dev/null state/cr-history.db", "sqlite3 -readonly"),
        (": > state/metrics.db", "sqlite3 -readonly"),
        ("truncate -s0 state/chat.db", "sqlite3 -readonly"),
        ("rm -f state/chat.db-wal", "rm -rf build target"),
        ("rm -rf state/events", "rm -rf build target"),
        ("gzip state/memory.db", "rm -rf build target"),
    ] {
        for client in CLIENTS {
            let run = shell(&p, client, "chat-b", command);
            let Answer::Deny(why) = answer(client, &run) else {
                panic!("{client:?} {command}\n{}", run.report());
            };
            assert!(why.contains(&state), "{command}: {why}");
            assert!(why.contains(instead), "{command}: {why}");
        }
    }
    // The same done so that the state directory stays passes.
    for command in [
        "find . -path ./state -prune -o -name '*.o' -delete",
        "git stash -u",
        "rm -rf target build",
        "rsync -a --delete --exclude=/state/ /tmp/empty/ ./",
        "sqlite3 state/memory.db 'DELETE FROM patterns'",
        "rm -rf state/pipeline/43.json state/context-offload",
        "cp state/memory.db /tmp/memory-backup.db",
    ] {
        let run = shell(&p, Client::Claude, "chat-b", command);
        assert_eq!(answer(Client::Claude, &run), Answer::Pass, "{command}");
    }
}

#[test]
fn guard_refusals_and_questions_are_events_in_the_log_and_the_timeline() {
    let p = claimed_checkout();
    let denied = shell(
        &p,
        Client::Claude,
        "chat-b",
        "echo x > state/pipeline/42.json",
    );
    assert!(matches!(answer(Client::Claude, &denied), Answer::Deny(_)));
    let asked = shell(&p, Client::Gemini, "chat-b", "bash ./deploy.sh");
    assert!(matches!(answer(Client::Gemini, &asked), Answer::Ask(_)));
    // Codex has no ask: a refusal, logged as one.
    let refused = shell(&p, Client::Codex, "chat-b", "bash ./deploy.sh");
    assert!(matches!(answer(Client::Codex, &refused), Answer::Deny(_)));
    let run = p.jkz(&["events", "--json"], T + 10).success();
    let events: Vec<Value> = run
        .stdout_str()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["type"].as_str().is_some_and(|t| t.starts_with("guard.")))
        .collect();
    let shapes: Vec<(String, String, String)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["payload"]["client"].as_str().unwrap().to_string(),
                e["payload"]["tool"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let shape = |t: &str, c: &str, tool: &str| (t.to_string(), c.to_string(), tool.to_string());
    assert_eq!(
        shapes,
        [
            shape("guard.denied", "claude", "Bash"),
            shape("guard.asked", "gemini", "run_shell_command"),
            shape("guard.denied", "codex", "Bash"),
        ],
        "{}",
        run.report()
    );
    for e in &events {
        assert_eq!(e["payload"]["chat"], "chat-b", "{e}");
        assert_eq!(e["session"], "chat-b", "{e}");
        assert_eq!(e["payload"]["owner"], "chat-a", "{e}");
        assert_eq!(e["issue"], "42", "{e}");
    }
    assert_eq!(events[0]["payload"]["target"], "issue 42's pipeline state");
    assert!(
        events[1]["payload"]["target"]
            .as_str()
            .unwrap()
            .contains("deploy.sh"),
        "{}",
        events[1]
    );
    // The table of issue 42 shows them, and so does the observer's
    // timeline, which reads the same log.
    let table = p
        .jkz(&["events", "--issue", "42"], T + 10)
        .success()
        .stdout_str();
    assert!(
        table.contains("guard.denied")
            && table.contains("guard.asked")
            && table.contains("chat-b (claude Bash): issue 42's pipeline state, claimed by chat-a"),
        "{table}"
    );
    let server = crate::ui::Server::start(&p.dir.join("state"));
    let timeline = server.json("/api/timeline/42");
    let kinds: Vec<&str> = timeline["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|t| t.starts_with("guard."))
        .collect();
    assert_eq!(kinds.len(), 3, "{timeline}");
    assert!(kinds.contains(&"guard.asked"), "{timeline}");
}
