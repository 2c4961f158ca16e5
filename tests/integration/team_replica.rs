//! Team mode's local replica (`state/registry-replica.db`) on a real
//! PostgreSQL: two machines (two state directories, one database). The
//! guard answers from the replica while it is under 2 s old, asks the
//! server past that, and fails open when the server is away past the
//! bound; writes are decided by the server whatever the replica says.
//! The clock is `JKZ_TEST_NOW` except where the 2 s bound itself is the
//! point, on the real clock.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::postgres::{self, Server};
use crate::registry::T;
use crate::team::{deny_reason, failed_open, quiet, Backend, Machine};
use crate::util::{bin, scrubbed, Run};

/// Two machines on a fresh database of the shared server; `None` to skip.
fn two_machines() -> Option<(Machine, Machine)> {
    let server = postgres::shared()?;
    let url = server.url(&server.database());
    Some((
        Machine::new("machine-a", Backend::Team(url.clone())),
        Machine::new("machine-b", Backend::Team(url)),
    ))
}

/// An edit of issue `n`'s pipeline file on machine `m` by `session`.
fn edit_pipeline(m: &Machine, session: &str, n: &str, now: i64) -> Run {
    m.edit(session, m.dir.join(format!("state/pipeline/{n}.json")), now)
}

/// `jkz-chat` on machine `m` with `event`, as the client runs it.
fn hook(m: &Machine, event: serde_json::Value) -> Run {
    m.cmd("jkz-chat").stdin(event.to_string()).run().success()
}

fn passes(run: &Run) {
    assert!(run.stdout().is_empty(), "{}", run.report());
}

#[test]
fn team_replica_the_guard_reads_it_under_two_seconds_old_and_the_server_past_that() {
    let Some((a, b)) = two_machines() else { return };
    quiet(&a.hook("SessionStart", "chat-a", json!({"source": "startup"}), T));
    quiet(&b.hook("SessionStart", "chat-b", json!({"source": "startup"}), T));
    a.jkz(&["claim", "42", "--session", "chat-a"], T).success();
    // B's chat is active: a hook a second later refreshes B's copy (hooks
    // leave a copy under a second old as it is), which now holds the claim.
    quiet(&b.hook("PostToolUse", "chat-b", json!({}), T + 1));
    assert!(b.dir.join("state/registry-replica.db").is_file());
    assert!(
        !b.dir.join("state/chat.db").exists(),
        "never the local registry"
    );
    let why = deny_reason(&edit_pipeline(&b, "chat-b", "42", T + 1));
    assert!(why.contains("chat-a on machine-a"), "{why}");
    // Released on A: B's copy, refreshed at T + 1, still answers at T + 2
    // (the claim is gone from the server, not from the copy: that is the
    // bound) …
    a.jkz(&["release", "42", "--session", "chat-a"], T + 1)
        .success();
    deny_reason(&edit_pipeline(&b, "chat-b", "42", T + 1));
    deny_reason(&edit_pipeline(&b, "chat-b", "42", T + 2));
    // … and at 2 s old B's guard asks the server, which refreshes the copy.
    passes(&edit_pipeline(&b, "chat-b", "42", T + 3));
    passes(&edit_pipeline(&b, "chat-b", "42", T + 3));
    // A new claim on A just after B's copy was refreshed: seen by B's
    // guard 2 s after that refresh at the latest.
    a.jkz(&["claim", "42", "--session", "chat-a"], T + 3)
        .success();
    passes(&edit_pipeline(&b, "chat-b", "42", T + 4));
    deny_reason(&edit_pipeline(&b, "chat-b", "42", T + 5));
    // Writes never read the copy: once B claims, A's claim and A's write
    // are refused by the server at once, though A's copy (refreshed by
    // A's release, before B's claim) still says the issue is free.
    a.jkz(&["release", "42", "--session", "chat-a"], T + 5)
        .success();
    b.jkz(&["claim", "42", "--session", "chat-b"], T + 5)
        .success();
    a.jkz(&["claim", "42", "--session", "chat-a"], T + 5)
        .expect_code(3);
    a.cmd("jkz")
        .args(["state", "set", "42", "current_phase", "building"])
        .env("JKZ_TEST_NOW", (T + 5).to_string())
        .env("CLAUDE_SESSION_ID", "chat-a")
        .run()
        .expect_code(3);
}

#[test]
fn team_replica_a_server_gone_the_guard_answers_from_a_fresh_replica_then_fails_open() {
    let Some(server) = Server::start() else {
        return;
    };
    let url = server.url(&server.database());
    let a = Machine::new("machine-a", Backend::Team(url.clone()));
    let b = Machine::new("machine-b", Backend::Team(url));
    quiet(&a.hook("SessionStart", "chat-a", json!({"source": "startup"}), T));
    a.jkz(&["claim", "42", "--session", "chat-a"], T).success();
    quiet(&b.hook("UserPromptSubmit", "chat-b", json!({"prompt": "go"}), T));

    server.down();
    // Fresh (under 2 s): the replica answers, the server is not needed.
    let run = edit_pipeline(&b, "chat-b", "42", T + 1);
    let why = deny_reason(&run);
    assert!(why.contains("chat-a on machine-a"), "{why}");
    assert!(run.stderr_str().is_empty(), "{}", run.report());
    passes(&edit_pipeline(&b, "chat-b", "43", T + 1));
    // Past the bound: the server is asked, is away, and the hook fails
    // open as without a replica.
    let err = failed_open(&edit_pipeline(&b, "chat-b", "42", T + 2));
    assert!(err.contains("registry unavailable"), "{err}");
    // A hook that could not refresh it left it as it was: still stale.
    let err = failed_open(&b.hook("PostToolUse", "chat-b", json!({}), T + 2));
    assert!(err.contains("registry unavailable"), "{err}");
    failed_open(&edit_pipeline(&b, "chat-b", "42", T + 2));

    server.up();
    deny_reason(&edit_pipeline(&b, "chat-b", "42", T + 3));
    server.down();
}

#[test]
fn team_replica_a_claim_racing_replica_refreshes_never_has_two_holders() {
    let Some((a, b)) = two_machines() else { return };
    a.jkz(&["registry", "migrate"], T).success();
    for (m, chat) in [(&a, "chat-a"), (&b, "chat-b")] {
        quiet(&m.hook("SessionStart", chat, json!({"source": "startup"}), T));
    }
    for round in 0..6 {
        let issue = (100 + round).to_string();
        // Both machines claim at once, while B's heartbeats and guard
        // refresh B's replica around them.
        let mut racers: Vec<(&str, std::process::Child)> = Vec::new();
        for (m, chat) in [(&a, "chat-a"), (&b, "chat-b")] {
            let mut c = scrubbed(bin("jkz"), m.dir.path());
            c.args(["claim", &issue, "--session", chat])
                .envs(m.envs())
                .env("JKZ_TEST_NOW", T.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            racers.push((chat, c.spawn().unwrap()));
        }
        let refreshers: Vec<std::process::Child> = (0..4)
            .map(|i| {
                let event = if i % 2 == 0 {
                    b.event("PostToolUse", "chat-b", json!({}))
                } else {
                    b.event(
                        "PreToolUse",
                        "chat-b",
                        json!({"tool_name": "Edit", "tool_input": {
                            "file_path": b.dir.join(format!("state/pipeline/{issue}.json")),
                            "old_string": "a", "new_string": "b"}}),
                    )
                };
                let mut c = scrubbed(bin("jkz-chat"), b.dir.path());
                c.envs(b.envs())
                    .env("JKZ_TEST_NOW", T.to_string())
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped());
                let mut child = c.spawn().unwrap();
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(event.to_string().as_bytes())
                    .unwrap();
                child
            })
            .collect();
        let mut winners = Vec::new();
        for (chat, child) in racers {
            let out = child.wait_with_output().unwrap();
            match out.status.code() {
                Some(0) => winners.push(chat),
                Some(3) => {}
                other => panic!(
                    "{chat}: exit {other:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ),
            }
        }
        for child in refreshers {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success());
        }
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        let (winner, loser) = match winners[0] {
            "chat-a" => ((&a, "chat-a"), (&b, "chat-b")),
            _ => ((&b, "chat-b"), (&a, "chat-a")),
        };
        // The server holds one claim, the winner's, and each machine's
        // guard (its copy refreshed by its own claim) agrees.
        let holders: Vec<String> = a
            .chats(T)
            .iter()
            .filter(|c| {
                c["claims"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k["issue"] == json!(100 + round))
            })
            .map(|c| c["session_id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(holders, vec![winner.1.to_string()], "round {round}");
        let why = deny_reason(&edit_pipeline(loser.0, loser.1, &issue, T));
        assert!(why.contains(winner.1), "round {round}: {why}");
        passes(&edit_pipeline(winner.0, winner.1, &issue, T));
    }
}

#[test]
fn team_replica_a_claim_on_one_machine_is_refused_on_another_within_two_seconds() {
    // The real clock: the bound itself is what is tested.
    let Some((a, b)) = two_machines() else { return };
    hook(
        &a,
        a.event("SessionStart", "chat-a", json!({"source": "startup"})),
    );
    hook(
        &b,
        b.event("SessionStart", "chat-b", json!({"source": "startup"})),
    );
    let edit = b.event(
        "PreToolUse",
        "chat-b",
        json!({"tool_name": "Edit", "tool_input": {
            "file_path": b.dir.join("state/pipeline/42.json"),
            "old_string": "a", "new_string": "b"}}),
    );
    // B's chat is active: its heartbeat keeps B's replica fresh.
    hook(&b, b.event("PostToolUse", "chat-b", json!({})));
    passes(&hook(&b, edit.clone()));
    a.cmd("jkz")
        .args(["claim", "42", "--session", "chat-a"])
        .run()
        .success();
    let claimed = Instant::now();
    loop {
        let started = Instant::now();
        let run = hook(&b, edit.clone());
        if !run.stdout().is_empty() {
            let why = deny_reason(&run);
            assert!(why.contains("chat-a on machine-a"), "{why}");
            eprintln!(
                "refused on B {:?} after the claim on A",
                started.duration_since(claimed)
            );
            break;
        }
        assert!(
            started.duration_since(claimed) < Duration::from_secs(2),
            "B's guard, started {:?} after A's claim, let the edit through",
            started.duration_since(claimed)
        );
        // B's chat goes on working: a tool call's heartbeat now and then.
        hook(&b, b.event("PostToolUse", "chat-b", json!({})));
    }
}

/// The team-wide view: on machine B, `jkz chats` (table and JSON), `jkz
/// doctor` and the observer's `/api/now` name the machine each chat and
/// claim is on, and how fresh B's replica is.
#[test]
fn team_replica_chats_doctor_and_the_observer_show_each_machine_and_the_replicas_freshness() {
    let Some((a, b)) = two_machines() else { return };
    hook(
        &a,
        a.event("SessionStart", "chat-a", json!({"source": "startup"})),
    );
    a.cmd("jkz")
        .args(["claim", "42", "--session", "chat-a"])
        .run()
        .success();
    hook(
        &b,
        b.event("SessionStart", "chat-b", json!({"source": "startup"})),
    );
    // A tool call on B: its heartbeat refreshes B's replica.
    hook(&b, b.event("PostToolUse", "chat-b", json!({})));

    let table = b.cmd("jkz").arg("chats").run().success().stdout_str();
    let row = table
        .lines()
        .find(|l| l.starts_with("chat-a "))
        .unwrap_or_else(|| panic!("no row for chat-a:\n{table}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert!(
        cells.contains(&"machine-a") && cells.contains(&"42"),
        "{row}"
    );
    let replica_line = table.lines().last().unwrap_or_default();
    assert!(
        replica_line.starts_with("team registry; this machine's replica (registry-replica.db): ")
            && replica_line.ends_with(", before this listing")
            && !replica_line.contains("none yet"),
        "{table}"
    );

    let listed: serde_json::Value = serde_json::from_str(
        &b.cmd("jkz")
            .args(["chats", "--json"])
            .run()
            .success()
            .stdout_str(),
    )
    .unwrap();
    let chat_a = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["session_id"] == "chat-a")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(chat_a["host"], "machine-a", "{chat_a}");
    assert_eq!(chat_a["claims"][0]["issue"], 42, "{chat_a}");
    assert_eq!(chat_a["claims"][0]["host"], "machine-a", "{chat_a}");

    let doctor = b.cmd("jkz").arg("doctor").run().stdout_str();
    assert!(
        doctor
            .lines()
            .any(|l| l.contains("registry: this machine's replica (") && !l.contains("none yet")),
        "{doctor}"
    );
    assert!(
        doctor
            .lines()
            .any(|l| l.contains("registry: machine machine-a: 1 chat(s), claims 42")),
        "{doctor}"
    );

    let envs = b.envs();
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let ui = crate::ui::Server::start_with(&b.dir.join("state"), &envs);
    let now = ui.json("/api/now");
    let registry = &now["registry"];
    assert_eq!(registry["backend"]["kind"], "team", "{registry}");
    let replica = &registry["backend"]["replica"];
    assert!(
        replica["age_ms"].as_i64().is_some_and(|ms| ms >= 0)
            && replica["fresh"].is_boolean()
            && replica["refreshed"].is_string()
            && replica["text"].is_string(),
        "{replica}"
    );
    let claim = registry["claims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["session_id"] == "chat-a")
        .unwrap_or_else(|| panic!("{registry}"));
    assert_eq!(claim["host"], "machine-a", "{registry}");
}
