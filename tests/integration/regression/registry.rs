//! Regression tests: registry (issue 23, items 5–10). Each test is named
//! after what broke and replays the input that broke it.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::registry::{quiet, Project, T};
use crate::util::Run;

/// A project where live chat `chat-a` (started, then beating) holds issue
/// 42 with the worktree `wt/42`, and chat `chat-b` is live too.
fn claimed() -> Project {
    let p = Project::new();
    p.hook("SessionStart", "chat-a", json!({"source": "startup"}), T);
    p.hook("SessionStart", "chat-b", json!({"source": "startup"}), T);
    let wt = p.dir.join("wt/42");
    p.claim_worktree("42", &wt, "chat-a", T).success();
    p.dir.write(
        "state/pipeline/42.json",
        json!({"42": {"current_phase": "building"}}).to_string(),
    );
    p
}

/// `jkz state set 42 current_phase done` with the environment `env`.
fn state_set(p: &Project, env: &[(&str, &str)], extra: &[&str]) -> Run {
    let mut cmd = p
        .dir
        .cmd("jkz")
        .args(["state", "set"])
        .args(extra.iter().copied())
        .args(["42", "current_phase", "done"])
        .env("JKZ_TEST_NOW", (T + 10).to_string());
    for (k, v) in env {
        cmd = cmd.env(k, *v);
    }
    cmd.run()
}

fn phase(p: &Project) -> Value {
    let doc: Value = serde_json::from_slice(&p.dir.read("state/pipeline/42.json")).unwrap();
    doc["42"]["current_phase"].clone()
}

/// The PreToolUse answer of `jkz-chat` for chat-b's Bash `command`.
fn bash(p: &Project, session: &str, command: &str) -> Run {
    p.hook(
        "PreToolUse",
        session,
        json!({"tool_name": "Bash", "tool_input": {"command": command}}),
        T + 10,
    )
}

fn denied(run: &Run) -> String {
    let answer: Value = serde_json::from_slice(run.stdout())
        .unwrap_or_else(|_| panic!("expected a refusal\n{}", run.report()));
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"],
        "deny",
        "{}",
        run.report()
    );
    answer["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn state_set_from_another_chat_is_refused_by_the_writer() {
    let p = claimed();
    // Chat B's Bash tool (either session variable): refused, nothing written.
    for var in ["CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID"] {
        let run = state_set(&p, &[(var, "chat-b")], &[]).expect_code(3);
        let err = run.stderr_str();
        assert!(
            err.contains("claimed by live chat chat-a")
                && err.contains(&format!("cwd {}", p.dir.path().display()))
                && err.contains("not written"),
            "{}",
            run.report()
        );
        assert_eq!(phase(&p), "building");
    }
    // --force is for people, not for a chat.
    let run = state_set(&p, &[("CLAUDE_CODE_SESSION_ID", "chat-b")], &["--force"]).expect_code(3);
    assert!(
        run.stderr_str().contains("--force is for a person"),
        "{}",
        run.report()
    );
    assert_eq!(phase(&p), "building");
    // A person at a terminal is refused too, and told how to override.
    let run = state_set(&p, &[], &[]).expect_code(3);
    assert!(run.stderr_str().contains("--force"), "{}", run.report());
    assert_eq!(phase(&p), "building");
    // Chat A's own claim is fine.
    quiet(&state_set(&p, &[("CLAUDE_CODE_SESSION_ID", "chat-a")], &[]).success());
    assert_eq!(phase(&p), "done");
    // The person's override is never silent: it names whose claim it was.
    let run = p
        .dir
        .cmd("jkz")
        .args(["state", "set", "--force", "42", "current_phase", "forced"])
        .env("JKZ_TEST_NOW", (T + 10).to_string())
        .run()
        .success();
    run.one_line(
        "jkz state set",
        "--force: writing issue 42 over the claim of live chat chat-a",
    );
    assert_eq!(phase(&p), "forced");
    // The claim stays chat-a's.
    let chats = p.chats(T + 10);
    let a = chats.iter().find(|c| c["session_id"] == "chat-a").unwrap();
    assert_eq!(a["claims"][0]["issue"], 42, "{chats:?}");
}

#[test]
fn hook_refuses_ordinary_spellings_of_a_claimed_write() {
    let p = claimed();
    for command in [
        "jkz state set \"42\" current_phase done",
        "jkz state set -- 42 current_phase done",
        "jkz state --state-dir state set 42 current_phase done",
        "jkz --state-dir=state state set 042 current_phase done",
        "sh -c 'jkz state set 42 current_phase done'",
        "bash -lc \"jkz state set 42 current_phase done\"",
        "echo {} > state/pipeline/./42.json",
        "cd state/pipeline && echo {} > 42.json",
        "echo {} | tee state/pipeline/42.json",
        "cp /tmp/x state/pipeline/42.json",
        "mv /tmp/x state/pipeline/42.json",
        "mv state/pipeline/42.json /tmp/x",
        "rm -rf state/pipeline",
        "rm -rf state",
        "rm -f state/pipeline/*.json",
        "python3 -c \"open('state/pipeline/42.json','w')\"",
        "sed -i s/building/done/ state/pipeline/42.json",
        // The registry itself.
        "rm -f state/chat.db",
        "rm -f state/chat.db*",
        ": > state/chat.db-wal",
        "sqlite3 state/chat.db 'DELETE FROM claims'",
    ] {
        let why = denied(&bash(&p, "chat-b", command));
        assert!(why.contains("chat chat-a"), "{command}: {why}");
    }
    // Chat A writes its own issue freely.
    quiet(&bash(&p, "chat-a", "echo {} > state/pipeline/./42.json"));
    quiet(&bash(
        &p,
        "chat-a",
        "jkz state set -- 42 current_phase done",
    ));
}

#[test]
fn read_only_copy_of_a_claimed_file_is_allowed() {
    let p = claimed();
    for command in [
        "cp state/pipeline/42.json /tmp/bak",
        "cat state/pipeline/42.json",
        "jq .42 state/pipeline/42.json > /tmp/view.json",
        "jkz state get 42 current_phase",
        "python3 -c \"print(open('state/pipeline/42.json').read())\"",
        "sqlite3 state/chat.db 'SELECT * FROM claims'",
        "rm -f state/pipeline/43.json",
        "rm -rf target *.o",
    ] {
        quiet(&bash(&p, "chat-b", command));
    }
}

#[test]
fn chat_cannot_release_another_chats_claim() {
    let p = claimed();
    let from_chat_b = |args: &[&str]| {
        p.dir
            .cmd("jkz")
            .args(args.iter().copied())
            .env("CLAUDE_CODE_SESSION_ID", "chat-b")
            .env("JKZ_TEST_NOW", (T + 10).to_string())
            .run()
    };
    let run = from_chat_b(&["release", "42", "--session", "chat-a"]).expect_code(3);
    assert!(
        run.stderr_str()
            .contains("--session may name only that chat"),
        "{}",
        run.report()
    );
    // Nor claim in another chat's name.
    from_chat_b(&["claim", "43", "--session", "chat-a"]).expect_code(3);
    // Naming itself is fine.
    from_chat_b(&["claim", "43", "--session", "chat-b"]).success();
    let chats = p.chats(T + 10);
    let a = chats.iter().find(|c| c["session_id"] == "chat-a").unwrap();
    assert_eq!(a["claims"][0]["issue"], 42, "{chats:?}");
    // A person at a terminal may release any chat's claim.
    p.jkz(&["release", "42", "--session", "chat-a"], T + 10)
        .success();
    let chats = p.chats(T + 10);
    let a = chats.iter().find(|c| c["session_id"] == "chat-a").unwrap();
    assert_eq!(a["claims"], json!([]), "{chats:?}");
}

#[test]
fn nested_worktree_claims_are_refused() {
    let p = claimed();
    std::fs::create_dir_all(p.dir.join("wt/4")).unwrap();
    let claim_b = |issue: &str, wt: &Path| {
        p.jkz(
            &[
                "claim",
                issue,
                "--worktree",
                wt.to_str().unwrap(),
                "--session",
                "chat-b",
            ],
            T + 10,
        )
    };
    // A parent and a child of chat-a's worktree.
    for (wt, how) in [
        (p.dir.join("wt"), "contains worktree"),
        (p.dir.join("wt/42/src"), "lies inside worktree"),
        (p.dir.join("wt/42/src/../.."), "contains worktree"),
    ] {
        let run = claim_b("43", &wt).expect_code(3);
        assert!(
            run.stderr_str().contains(how) && run.stderr_str().contains("chat-a"),
            "{}",
            run.report()
        );
    }
    // Chat A still edits in its own worktree.
    quiet(&p.edit("chat-a", p.dir.join("wt/42/src/lib.rs"), T + 10));
    // A sibling sharing a prefix is not inside: wt/4 beside wt/42.
    claim_b("44", &p.dir.join("wt/4")).success();
}

#[test]
fn dangling_symlink_into_a_claimed_worktree_is_refused() {
    let p = claimed();
    let link = |name: &str, target: &Path| {
        std::os::unix::fs::symlink(target, p.dir.join(name)).unwrap();
        p.dir.join(name)
    };
    // Targets that do not exist yet, directly and through a chain.
    let direct = link("notes.md", &p.dir.join("wt/42/src/new.rs"));
    let first = link("first", &p.dir.join("wt/42/missing/deep.rs"));
    let chained = link("chained.md", &first);
    let pipeline = link(
        "plan.json",
        &p.dir.join("state/pipeline/42-compact-plan.json"),
    );
    for file in [&direct, &chained] {
        let why = denied(&p.edit("chat-b", file.clone(), T + 10));
        assert!(why.contains("lies in worktree"), "{why}");
    }
    let run = p.hook(
        "PreToolUse",
        "chat-b",
        json!({"tool_name": "Write", "tool_input": {"file_path": pipeline, "content": "{}"}}),
        T + 10,
    );
    assert!(denied(&run).contains("issue 42's pipeline state"));
    // A dangling link elsewhere passes.
    let elsewhere = link("elsewhere.md", &p.dir.join("other/new.rs"));
    quiet(&p.edit("chat-b", elsewhere, T + 10));
}

#[test]
fn chat_with_a_dead_pid_is_stale_at_once() {
    if std::fs::metadata("/proc/self/stat").is_err() {
        crate::util::cannot_run("no /proc here: a dead client cannot be told");
        return;
    }
    let p = Project::new();
    // A client named claude: a copy of sh runs the SessionStart hook and
    // exits (the `; exit` keeps sh from exec'ing the hook in its place).
    let fake = p.dir.join("bin/claude-fake");
    std::fs::create_dir_all(fake.parent().unwrap()).unwrap();
    std::fs::copy("/bin/sh", &fake).unwrap();
    let input = p.dir.write(
        "start.json",
        p.event("SessionStart", "chat-a", json!({"source": "startup"}))
            .to_string(),
    );
    let out = crate::util::scrubbed(&fake, p.dir.path())
        .arg("-c")
        .arg("\"$0\" < \"$1\"; exit 0")
        .arg(crate::util::bin("jkz-chat"))
        .arg(&input)
        .env("JKZ_TEST_NOW", T.to_string())
        .output()
        .unwrap();
    assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
    p.jkz(&["claim", "42", "--session", "chat-a"], T).success();
    // Its heartbeat is fresh, but its client is gone: stale at once.
    let chats = p.chats(T + 1);
    assert!(
        chats[0]["pid"].is_i64(),
        "the client's pid was recorded: {chats:?}"
    );
    assert_eq!(chats[0]["state"], "stale", "{chats:?}");
    // So its claim stops nobody, and can be taken over now.
    p.dir.write("wt/42/src/lib.rs", "");
    quiet(&p.hook(
        "PreToolUse",
        "chat-b",
        json!({"tool_name": "Bash", "tool_input": {"command": "jkz state set 42 a b"}}),
        T + 1,
    ));
    p.jkz(&["claim", "42", "--take", "--session", "chat-b"], T + 1)
        .success();
}

#[test]
fn registry_uses_claude_session_id() {
    let p = Project::new();
    // jkz claim from a shell that names the chat by CLAUDE_SESSION_ID.
    let run = p
        .dir
        .cmd("jkz")
        .args(["claim", "42"])
        .env("CLAUDE_SESSION_ID", "chat-a")
        .env("JKZ_TEST_NOW", T.to_string())
        .run()
        .success();
    assert!(
        run.stdout_str().contains("for chat chat-a"),
        "{}",
        run.report()
    );
    // The hook falls back to the same variables when the event names no session.
    let event = |name: &str, extra: Value| {
        let mut e = json!({"cwd": p.dir.path(), "hook_event_name": name});
        for (k, v) in extra.as_object().unwrap() {
            e[k] = v.clone();
        }
        p.dir
            .cmd("jkz-chat")
            .env("CLAUDE_SESSION_ID", "chat-b")
            .env("JKZ_TEST_NOW", T.to_string())
            .stdin(e.to_string())
            .run()
            .success()
    };
    quiet(&event("SessionStart", json!({"source": "startup"})));
    let chats = p.chats(T);
    assert!(
        chats.iter().any(|c| c["session_id"] == "chat-b"),
        "{chats:?}"
    );
    let run = event(
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "jkz state set 42 a b"}}),
    );
    assert!(denied(&run).contains("chat chat-a"));
}

#[test]
fn a_hook_waits_for_a_busy_registry_no_longer_than_its_deadline() {
    let p = Project::new();
    p.hook("SessionStart", "chat-a", json!({}), T);
    // Another writer holds the registry's write lock throughout.
    let held = rusqlite::Connection::open(p.dir.join("state/chat.db")).unwrap();
    held.execute_batch("BEGIN IMMEDIATE").unwrap();
    let started = Instant::now();
    let run = p
        .dir
        .cmd("jkz-chat")
        .env("JKZ_TEST_NOW", T.to_string())
        .stdin(p.event("SessionStart", "chat-b", json!({})).to_string())
        .run()
        .success();
    let took = started.elapsed();
    held.execute_batch("ROLLBACK").unwrap();
    // The hook's budget is 2 s; the registry's own wait was 10 s.
    assert!(
        took < Duration::from_secs(6),
        "took {took:?}\n{}",
        run.report()
    );
    run.one_line("jkz-chat", "registry unavailable");
}

#[test]
fn a_typo_in_jkz_toml_turned_off_claim_enforcement() {
    // An unquoted SLO value made the registry's backend an error, and the
    // writers and the hook then let every call through.
    let p = claimed();
    p.dir.write("jkz.toml", "[slo]\nwindow = 7d\n");
    let reason = denied(&bash(&p, "chat-b", "jkz state set 42 current_phase done"));
    assert!(reason.contains("chat-a"), "{reason}");
    state_set(&p, &[("CLAUDE_CODE_SESSION_ID", "chat-b")], &[]).expect_code(3);
    assert_eq!(phase(&p), "building");
}

#[test]
fn a_committed_jkz_toml_chose_where_pgpassword_was_sent() {
    // A URL in a committed file (a branch checked out for review) decided
    // which server every hook sent PGPASSWORD to. Only the environment and
    // the repository's own git config choose the team registry now.
    let p = claimed();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    p.dir.write(
        "jkz.toml",
        format!("[registry]\nurl = \"postgres://ci@127.0.0.1:{port}/jkz\"\n"),
    );
    let run = p
        .dir
        .cmd("jkz")
        .args(["chats", "--json"])
        .env("PGPASSWORD", "my-real-db-password")
        .env("JKZ_TEST_NOW", (T + 10).to_string())
        .run()
        .success();
    assert!(run.stdout_str().contains("chat-a"), "{}", run.report());
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a connection reached the server the committed file named"
    );
}
