//! Team mode on a real PostgreSQL ([`crate::postgres`]): two "machines" —
//! two project checkouts, each with its own `state/`, and `JKZ_HOST` naming
//! the machine — share one database through `JKZ_REGISTRY_URL`. The core
//! registry, lock and circuit scenarios run against both backends (the
//! local files and the database) and must answer the same.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::postgres::{self, Server, PASSWORD};
use crate::registry::{Project, T};
use crate::util::{bin, scrubbed, Cmd, Dir, Run};

/// Where a machine's registry, locks and circuits live.
#[derive(Clone)]
pub(crate) enum Backend {
    Local,
    Team(String),
}

/// One machine: a project ([`Project`]: a checkout with `state/` and a
/// worktree `wt/42`) whose every command runs with the machine's host
/// name and the backend it uses.
pub(crate) struct Machine {
    project: Project,
    host: &'static str,
}

impl std::ops::Deref for Machine {
    type Target = Project;

    fn deref(&self) -> &Project {
        &self.project
    }
}

impl Machine {
    pub(crate) fn new(host: &'static str, backend: Backend) -> Machine {
        let mut project = Project::new();
        project.env = vec![
            ("JKZ_HOST".to_string(), host.to_string()),
            ("PGPASSWORD".into(), PASSWORD.into()),
            ("PGSSLMODE".into(), "prefer".into()),
        ];
        if let Backend::Team(url) = backend {
            project.env.push(("JKZ_REGISTRY_URL".into(), url));
        }
        Machine { project, host }
    }

    /// Extra environment (a shorter lock wait, another password).
    fn with_env(mut self, key: &str, value: &str) -> Machine {
        self.project.env.push((key.into(), value.into()));
        self
    }

    pub(crate) fn envs(&self) -> Vec<(String, String)> {
        self.env.clone()
    }

    /// `jkz` as a child process, for racing.
    pub(crate) fn spawn(&self, args: &[&str]) -> Child {
        let mut c = scrubbed(bin("jkz"), self.dir.path());
        c.args(args)
            .envs(self.envs())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.spawn().unwrap()
    }
}

/// A fresh team database on the shared server, as a URL; `None` to skip.
fn team_url() -> Option<String> {
    let server = postgres::shared()?;
    Some(server.url(&server.database()))
}

pub(crate) fn deny_reason(run: &Run) -> String {
    let v: Value = serde_json::from_str(&run.stdout_str())
        .unwrap_or_else(|_| panic!("expected a refusal\n{}", run.report()));
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_string()
}

pub(crate) fn quiet(run: &Run) {
    assert!(run.stdout().is_empty(), "{}", run.report());
    assert!(run.stderr_str().is_empty(), "{}", run.report());
}

/// A hook that failed open: exit 0, no answer, one line on stderr.
pub(crate) fn failed_open(run: &Run) -> String {
    assert!(run.stdout().is_empty(), "{}", run.report());
    let err = run.stderr_str();
    assert_eq!(err.trim_end().lines().count(), 1, "{}", run.report());
    err
}

// ---------------------------------------------------------------------
// The core scenarios, on either backend.

/// A chat registers, beats, goes stale after five minutes; its live claim
/// refuses another chat's edit and write; once stale it is taken over.
fn claims_hold_while_live_and_are_taken_once_stale(m: &Machine) {
    quiet(&m.hook("SessionStart", "chat-a", json!({"source": "startup"}), T));
    let chats = m.chats(T);
    assert_eq!(chats.len(), 1, "{chats:?}");
    assert_eq!(chats[0]["state"], "live");
    let wt = m.dir.join("wt/42");
    m.claim_worktree("42", &wt, "chat-a", T).success();
    let why = deny_reason(&m.edit("chat-b", wt.join("src/a.rs"), T + 10));
    assert!(why.contains("chat chat-a"), "{why}");
    assert!(m
        .edit("chat-b", m.dir.join("src/b.rs"), T + 10)
        .stdout()
        .is_empty());
    let refused = m
        .jkz(&["claim", "42", "--session", "chat-b", "--take"], T + 10)
        .expect_code(3);
    assert!(
        refused.stderr_str().contains("held by live chat chat-a"),
        "{}",
        refused.report()
    );
    m.cmd("jkz")
        .args(["state", "set", "42", "current_phase", "building"])
        .env("JKZ_TEST_NOW", (T + 10).to_string())
        .env("CLAUDE_SESSION_ID", "chat-b")
        .run()
        .expect_code(3);
    // Five minutes of silence: stale; the edit passes, --take takes it.
    assert_eq!(m.chats(T + 300)[0]["state"], "stale");
    assert!(m
        .edit("chat-b", wt.join("src/a.rs"), T + 300)
        .stdout()
        .is_empty());
    let taken = m
        .jkz(&["claim", "42", "--session", "chat-b", "--take"], T + 300)
        .success();
    assert!(
        taken
            .stdout_str()
            .contains("took issue 42 over from stale chat chat-a"),
        "{}",
        taken.report()
    );
    m.jkz(&["release", "42", "--session", "chat-a"], T + 300)
        .expect_code(3);
    m.jkz(&["release", "42", "--session", "chat-b"], T + 300)
        .success();
    quiet(&m.hook("SessionEnd", "chat-a", json!({"reason": "exit"}), T + 400));
    let left: Vec<Value> = m.chats(T + 400);
    assert!(left.iter().all(|c| c["session_id"] != "chat-a"), "{left:?}");
}

/// A lock is held against a stranger, renewed by its owner, refused to a
/// stranger's release, reclaimed once expired.
fn locks_hold_renew_and_expire(m: &Machine) {
    let run = m
        .jkz(
            &["lock", "acquire", "pipeline", "42", "--owner", "alice"],
            T,
        )
        .success();
    assert!(
        run.stdout_str()
            .starts_with("acquired pipeline-42 for alice"),
        "{}",
        run.report()
    );
    let busy = m
        .jkz(&["lock", "acquire", "pipeline", "42", "--owner", "bob"], T)
        .expect_code(3);
    assert!(
        busy.stdout_str().contains("is held by alice"),
        "{}",
        busy.report()
    );
    assert!(busy.stdout_str().contains(m.host), "{}", busy.report());
    m.jkz(
        &["lock", "acquire", "pipeline", "42", "--owner", "alice"],
        T,
    )
    .success()
    .stdout_str()
    .starts_with("renewed")
    .then_some(())
    .expect("renewed");
    m.jkz(&["lock", "release", "pipeline", "42", "--owner", "bob"], T)
        .expect_code(3);
    let listed: Vec<Value> =
        serde_json::from_str(&m.jkz(&["lock", "list", "--json"], T).success().stdout_str())
            .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0]["owner"].clone(), listed[0]["host"].clone()),
        (json!("alice"), json!(m.host))
    );
    assert_eq!(listed[0]["state"], "held");
    m.jkz(
        &["lock", "release", "pipeline", "42", "--owner", "alice"],
        T,
    )
    .success();
    let again = m
        .jkz(
            &["lock", "release", "pipeline", "42", "--owner", "alice"],
            T,
        )
        .success();
    assert!(
        again.stdout_str().contains("was not held"),
        "{}",
        again.report()
    );
    // An expired lock goes to the next acquirer.
    m.jkz(
        &[
            "lock", "acquire", "worktree", "w1", "--owner", "old", "--ttl", "0",
        ],
        T,
    )
    .success();
    let listed = m.jkz(&["lock", "list"], T).success().stdout_str();
    assert!(listed.contains("expired"), "{listed}");
    m.jkz(&["lock", "acquire", "worktree", "w1", "--owner", "next"], T)
        .success();
}

/// Three failures open a circuit: `jkz run --service` short-circuits with
/// 75 until a reset.
fn circuits_open_after_three_failures(m: &Machine) {
    for _ in 0..3 {
        m.jkz(
            &[
                "run",
                "--service",
                "codex",
                "--role",
                "judge",
                "--",
                "false",
            ],
            T,
        )
        .expect_code(1);
    }
    let status: Vec<Value> = serde_json::from_str(
        &m.jkz(&["circuit", "status", "--json"], T)
            .success()
            .stdout_str(),
    )
    .unwrap();
    assert_eq!(status[0]["state"], "open", "{status:?}");
    m.jkz(
        &["run", "--service", "codex", "--role", "judge", "--", "true"],
        T,
    )
    .expect_code(75);
    m.jkz(&["circuit", "reset", "codex"], T).success();
    m.jkz(
        &["run", "--service", "codex", "--role", "judge", "--", "true"],
        T,
    )
    .success();
}

#[test]
fn claims_hold_while_live_and_are_taken_once_stale_local() {
    claims_hold_while_live_and_are_taken_once_stale(&Machine::new("machine-a", Backend::Local));
}

#[test]
fn claims_hold_while_live_and_are_taken_once_stale_team() {
    let Some(url) = team_url() else { return };
    let m = Machine::new("machine-a", Backend::Team(url));
    claims_hold_while_live_and_are_taken_once_stale(&m);
    // Nothing of it went to the local files.
    assert!(!m.dir.join("state/chat.db").exists());
}

#[test]
fn locks_hold_renew_and_expire_local() {
    locks_hold_renew_and_expire(&Machine::new("machine-a", Backend::Local));
}

#[test]
fn locks_hold_renew_and_expire_team() {
    let Some(url) = team_url() else { return };
    let m = Machine::new("machine-a", Backend::Team(url));
    locks_hold_renew_and_expire(&m);
    assert!(!m.dir.join("state/locks/pipeline-42.json").exists());
}

#[test]
fn circuits_open_after_three_failures_local() {
    circuits_open_after_three_failures(&Machine::new("machine-a", Backend::Local));
}

#[test]
fn circuits_open_after_three_failures_team() {
    let Some(url) = team_url() else { return };
    let m = Machine::new("machine-a", Backend::Team(url));
    circuits_open_after_three_failures(&m);
    assert!(!m.dir.join("state/circuit/codex.json").exists());
}

// ---------------------------------------------------------------------
// Two machines, one database.

#[test]
fn two_machines_see_each_others_chats_and_a_claim_is_refused_across_them() {
    let Some(url) = team_url() else { return };
    let a = Machine::new("machine-a", Backend::Team(url.clone()));
    let b = Machine::new("machine-b", Backend::Team(url));
    quiet(&a.hook("SessionStart", "chat-a", json!({"source": "startup"}), T));
    quiet(&b.hook("SessionStart", "chat-b", json!({"source": "startup"}), T));
    let wt = a.dir.join("wt/42");
    a.claim_worktree("42", &wt, "chat-a", T).success();
    // Each machine sees both chats, with their hosts.
    let seen = b.chats(T + 1);
    let hosts: Vec<(String, String)> = seen
        .iter()
        .map(|c| {
            (
                c["session_id"].as_str().unwrap().into(),
                c["host"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        hosts.contains(&("chat-a".into(), "machine-a".into())),
        "{seen:?}"
    );
    assert!(
        hosts.contains(&("chat-b".into(), "machine-b".into())),
        "{seen:?}"
    );
    let claim = &seen.iter().find(|c| c["session_id"] == "chat-a").unwrap()["claims"][0];
    assert_eq!(
        (claim["issue"].clone(), claim["host"].clone()),
        (json!(42), json!("machine-a"))
    );
    let table = b.jkz(&["chats"], T + 1).success().stdout_str();
    assert!(
        table.contains("machine-a") && table.contains("machine-b"),
        "{table}"
    );
    // Machine B's chat may not claim it, write it, or edit A's worktree.
    let refused = b
        .jkz(&["claim", "42", "--session", "chat-b"], T + 2)
        .expect_code(3);
    assert!(
        refused
            .stderr_str()
            .contains("live chat chat-a on machine-a"),
        "{}",
        refused.report()
    );
    b.cmd("jkz")
        .args(["state", "set", "42", "current_phase", "building"])
        .env("JKZ_TEST_NOW", (T + 2).to_string())
        .env("CLAUDE_SESSION_ID", "chat-b")
        .run()
        .expect_code(3);
    let why = deny_reason(&b.edit("chat-b", wt.join("src/a.rs"), T + 2));
    assert!(why.contains("chat-a on machine-a"), "{why}");
    // A's own chat passes; B's own issue is B's.
    assert!(a
        .edit("chat-a", wt.join("src/a.rs"), T + 2)
        .stdout()
        .is_empty());
    b.jkz(&["claim", "43", "--session", "chat-b"], T + 2)
        .success();
    a.jkz(&["claim", "43", "--session", "chat-a"], T + 2)
        .expect_code(3);
    // A pid is judged only on its own host: B never takes A's client for dead.
    assert_eq!(
        b.chats(T + 3)
            .iter()
            .filter(|c| c["state"] == "live")
            .count(),
        2
    );
}

#[test]
fn thirty_two_acquirers_on_two_machines_one_winner() {
    let Some(url) = team_url() else { return };
    let a = Machine::new("machine-a", Backend::Team(url.clone()));
    let b = Machine::new("machine-b", Backend::Team(url));
    // The schema exists before the race (the first writer creates it; a
    // race on creating it is its own test below).
    a.jkz(&["registry", "migrate"], T).success();
    let racers: Vec<(usize, Child)> = (0..32)
        .map(|i| {
            let m = if i % 2 == 0 { &a } else { &b };
            let owner = format!("racer-{i}");
            (
                i,
                m.spawn(&["lock", "acquire", "pipeline", "1", "--owner", &owner]),
            )
        })
        .collect();
    let mut winners = Vec::new();
    for (i, child) in racers {
        let out = child.wait_with_output().unwrap();
        match out.status.code() {
            Some(0) => winners.push(i),
            Some(3) => {}
            other => panic!(
                "racer {i}: exit {other:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    let listed: Vec<Value> =
        serde_json::from_str(&b.jkz(&["lock", "list", "--json"], T).success().stdout_str())
            .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["owner"], format!("racer-{}", winners[0]));
    let host = if winners[0] % 2 == 0 {
        "machine-a"
    } else {
        "machine-b"
    };
    assert_eq!(listed[0]["host"], host);
}

#[test]
fn thirty_two_waiting_acquirers_on_two_machines_hold_the_lock_one_at_a_time() {
    let Some(url) = team_url() else { return };
    let a = Machine::new("machine-a", Backend::Team(url.clone()));
    let b = Machine::new("machine-b", Backend::Team(url));
    // A fresh database: the racers also race to create the schema.
    let counter = a.dir.join("inside");
    std::fs::write(&counter, "").unwrap();
    let racers: Vec<Child> = (0..32)
        .map(|i| {
            let m = if i % 2 == 0 { &a } else { &b };
            let script = format!(
                "j='{jkz}'; \"$j\" lock acquire pipeline 1 --owner racer-{i} --wait 120 >/dev/null || exit 9; \
                 echo in >> '{c}'; n=$(wc -l < '{c}'); echo out >> '{c}'; \
                 \"$j\" lock release pipeline 1 --owner racer-{i} >/dev/null || exit 8",
                jkz = bin("jkz").display(),
                c = counter.display(),
            );
            let mut c = scrubbed("sh", m.dir.path());
            c.args(["-c", &script])
                .envs(m.envs())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for child in racers {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Strictly alternating: nobody entered while another was inside.
    let log = std::fs::read_to_string(&counter).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 64);
    for pair in lines.chunks(2) {
        assert_eq!(pair, ["in", "out"], "{log}");
    }
    let listed = a.jkz(&["lock", "list", "--json"], T).success().stdout_str();
    assert_eq!(listed.trim(), "[]");
}

#[test]
fn expiry_and_stale_takeover_work_across_machines_as_locally() {
    let Some(url) = team_url() else { return };
    let a = Machine::new("machine-a", Backend::Team(url.clone()));
    let b = Machine::new("machine-b", Backend::Team(url));
    // A lock whose holder (a script on machine A) has exited: machine A
    // knows the pid is gone and reclaims it; machine B cannot judge another
    // machine's pid, so only the TTL frees it there.
    let script = format!(
        "'{}' lock acquire worktree w1 --owner gone --ttl 3600",
        bin("jkz").display()
    );
    let mut c = scrubbed("sh", a.dir.path());
    c.args(["-c", &script]).envs(a.envs());
    assert!(c.status().unwrap().success());
    b.jkz(&["lock", "acquire", "worktree", "w1", "--owner", "b"], T)
        .expect_code(3);
    let listed = a.jkz(&["lock", "list"], T).success().stdout_str();
    assert!(listed.contains("owner gone"), "{listed}");
    a.jkz(&["lock", "acquire", "worktree", "w1", "--owner", "a"], T)
        .success();
    // A TTL ends a lock everywhere.
    a.jkz(
        &[
            "lock", "acquire", "pipeline", "9", "--owner", "a", "--ttl", "0",
        ],
        T,
    )
    .success();
    b.jkz(&["lock", "acquire", "pipeline", "9", "--owner", "b"], T)
        .success();
    // A chat silent for five minutes on A is taken over from B.
    quiet(&a.hook("SessionStart", "chat-a", json!({"source": "startup"}), T));
    a.jkz(&["claim", "7", "--session", "chat-a"], T).success();
    b.jkz(&["claim", "7", "--session", "chat-b", "--take"], T + 299)
        .expect_code(3);
    let taken = b
        .jkz(&["claim", "7", "--session", "chat-b", "--take"], T + 300)
        .success();
    assert!(
        taken.stdout_str().contains("from stale chat chat-a"),
        "{}",
        taken.report()
    );
    // And a circuit opened on A short-circuits B.
    for _ in 0..3 {
        a.jkz(
            &[
                "run",
                "--service",
                "gemini",
                "--role",
                "judge",
                "--",
                "false",
            ],
            T,
        )
        .expect_code(1);
    }
    b.jkz(
        &[
            "run",
            "--service",
            "gemini",
            "--role",
            "judge",
            "--",
            "true",
        ],
        T,
    )
    .expect_code(75);
}

#[test]
fn the_database_stopped_mid_run_hooks_fail_open_and_restarted_claims_and_locks_are_there() {
    let Some(server) = Server::start() else {
        return;
    };
    let url = server.url(&server.database());
    let a = Machine::new("machine-a", Backend::Team(url.clone()));
    let b = Machine::new("machine-b", Backend::Team(url)).with_env("JKZ_LOCK_WAIT_MS", "1000");
    quiet(&a.hook("SessionStart", "chat-a", json!({"source": "startup"}), T));
    let wt = a.dir.join("wt/42");
    a.claim_worktree("42", &wt, "chat-a", T).success();
    a.jkz(
        &["lock", "acquire", "pipeline", "42", "--owner", "alice"],
        T,
    )
    .success();
    deny_reason(&b.edit("chat-b", wt.join("src/a.rs"), T + 1));

    server.down();
    // The guard's refresh at T + 1 is fresh at T + 2: it answers from the
    // replica; past the bound it fails open like every other hook.
    deny_reason(&b.edit("chat-b", wt.join("src/a.rs"), T + 2));
    for event in [
        "PreToolUse",
        "UserPromptSubmit",
        "SessionStart",
        "SessionEnd",
    ] {
        let started = Instant::now();
        let run = match event {
            "PreToolUse" => b.edit("chat-b", wt.join("src/a.rs"), T + 4),
            _ => b.hook(event, "chat-b", json!({}), T + 4),
        };
        let err = failed_open(&run);
        assert!(err.contains("registry unavailable"), "{event}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{event}: {:?}",
            started.elapsed()
        );
    }
    for args in [
        &["claim", "43", "--session", "chat-b"][..],
        &["chats"][..],
        &["lock", "acquire", "pipeline", "43", "--owner", "bob"][..],
        &["lock", "list"][..],
        &["circuit", "status"][..],
    ] {
        let started = Instant::now();
        let run = b.jkz(args, T + 2).expect_code(1);
        assert!(
            run.stderr_str()
                .contains("team registry postgres://postgres@127.0.0.1"),
            "{}",
            run.report()
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{args:?}: {:?}",
            started.elapsed()
        );
    }
    // Nothing fell back to the local files.
    assert!(!b.dir.join("state/chat.db").exists());
    assert!(!b.dir.join("state/locks").exists());

    server.up();
    deny_reason(&b.edit("chat-b", wt.join("src/a.rs"), T + 3));
    b.jkz(&["claim", "42", "--session", "chat-b"], T + 3)
        .expect_code(3);
    let busy = b
        .jkz(
            &["lock", "acquire", "pipeline", "42", "--owner", "bob"],
            T + 3,
        )
        .expect_code(3);
    assert!(
        busy.stdout_str().contains("held by alice"),
        "{}",
        busy.report()
    );
    server.down();
}

// ---------------------------------------------------------------------
// Bad input: clear errors, bounded time, nothing written elsewhere.

#[test]
fn a_malformed_url_is_a_clear_error_and_hooks_fail_open() {
    for url in [
        "mysql://u:hunter2@h/d",
        "postgres://u:hunter2@h:port/d",
        "postgres://u:hunter2@h/d?sslmode=verify-everything",
    ] {
        let m = Machine::new("machine-a", Backend::Team(url.into()));
        let run = m.jkz(&["chats"], T).expect_code(1);
        let err = run.stderr_str();
        assert!(err.contains("JKZ_REGISTRY_URL"), "{}", run.report());
        assert!(!err.contains("hunter2"), "{}", run.report());
        let err = failed_open(&m.hook("SessionStart", "chat-a", json!({}), T));
        assert!(
            err.contains("JKZ_REGISTRY_URL") && !err.contains("hunter2"),
            "{err}"
        );
        assert!(!m.dir.join("state/chat.db").exists());
    }
}

#[test]
fn a_wrong_password_is_named_and_never_shown() {
    let Some(url) = team_url() else { return };
    let m =
        Machine::new("machine-a", Backend::Team(url.clone())).with_env("PGPASSWORD", "wrong-pw");
    let run = m
        .jkz(&["claim", "42", "--session", "chat-a"], T)
        .expect_code(1);
    let err = run.stderr_str();
    assert!(
        err.contains("password authentication failed"),
        "{}",
        run.report()
    );
    assert!(err.contains("PGPASSWORD or ~/.pgpass"), "{}", run.report());
    assert!(!err.contains("wrong-pw"), "{}", run.report());
    failed_open(&m.hook("SessionStart", "chat-a", json!({}), T));
    // A password in the URL itself (the environment may hold one) is masked.
    let with_pw = url.replace("postgres@", "postgres:wrong-pw@");
    let m = Machine::new("machine-a", Backend::Team(with_pw));
    let run = m.jkz(&["chats"], T).expect_code(1);
    assert!(
        run.stderr_str().contains("postgres:***@"),
        "{}",
        run.report()
    );
    assert!(!run.stderr_str().contains("wrong-pw"), "{}", run.report());
    // The password file works as libpq's does.
    let m = Machine::new("machine-a", Backend::Team(url));
    let pgpass = m
        .dir
        .write("pgpass", format!("*:*:*:postgres:{PASSWORD}\n"));
    std::fs::set_permissions(&pgpass, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let mut cmd = Cmd::new("jkz", m.dir.path());
    for (k, v) in m.envs() {
        if k != "PGPASSWORD" {
            cmd = cmd.env(&k, v);
        }
    }
    cmd.env("PGPASSFILE", &pgpass).arg("chats").run().success();
}

#[test]
fn a_newer_schema_is_refused_an_older_one_migrated_a_dropped_table_repaired() {
    let Some(server) = postgres::shared() else {
        return;
    };
    let db = server.database();
    let m = Machine::new("machine-a", Backend::Team(server.url(&db)));
    // None yet: the first writer creates it; migrate then finds it current.
    m.jkz(&["claim", "42", "--session", "chat-a"], T).success();
    let run = m.jkz(&["registry", "migrate"], T).success();
    assert!(
        run.stdout_str().contains("schema version 2 (up to date"),
        "{}",
        run.report()
    );
    // A dropped table: a clear error, then `jkz registry migrate` repairs it.
    server
        .admin(&db)
        .batch_execute("DROP TABLE jkz_locks")
        .unwrap();
    let run = m
        .jkz(&["lock", "acquire", "pipeline", "1", "--owner", "a"], T)
        .expect_code(1);
    assert!(
        run.stderr_str().contains("jkz registry migrate"),
        "{}",
        run.report()
    );
    m.jkz(&["registry", "migrate"], T).success();
    m.jkz(&["lock", "acquire", "pipeline", "1", "--owner", "a"], T)
        .success();
    // Claims survived the repair.
    m.jkz(&["claim", "42", "--session", "chat-b"], T)
        .expect_code(3);
    // A newer schema: refused by commands, hooks and migrate alike.
    server
        .admin(&db)
        .batch_execute("UPDATE jkz_schema SET version = 99")
        .unwrap();
    for args in [
        &["chats"][..],
        &["registry", "migrate"][..],
        &["lock", "list"][..],
    ] {
        let run = m.jkz(args, T).expect_code(1);
        assert!(
            run.stderr_str()
                .contains("schema is version 99, newer than this jkz knows (2)"),
            "{}",
            run.report()
        );
    }
    let err = failed_open(&m.hook("SessionStart", "chat-c", json!({}), T));
    assert!(err.contains("newer than this jkz knows"), "{err}");
    let version: i32 = server
        .admin(&db)
        .query_one("SELECT version FROM jkz_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, 99, "never downgraded");
    // An older one (version 0: tables of no known version) is migrated.
    server
        .admin(&db)
        .batch_execute("UPDATE jkz_schema SET version = 0")
        .unwrap();
    let run = m.jkz(&["registry", "migrate"], T).success();
    assert!(
        run.stdout_str().contains("tables created"),
        "{}",
        run.report()
    );
    m.jkz(&["claim", "42", "--session", "chat-b"], T)
        .expect_code(3);
    // Version 1 (before the claims' change counter) gains it on first use,
    // and the replica follows the claims again.
    server
        .admin(&db)
        .batch_execute(
            "DROP TABLE jkz_changes; DROP FUNCTION jkz_claims_changed() CASCADE;
             UPDATE jkz_schema SET version = 1",
        )
        .unwrap();
    let counted = || -> i64 {
        server
            .admin(&db)
            .query_one("SELECT version FROM jkz_changes", &[])
            .unwrap()
            .get(0)
    };
    m.jkz(&["release", "42", "--session", "chat-a"], T + 1)
        .success();
    let after_release = counted();
    assert!(after_release >= 1, "the release was counted");
    m.jkz(&["claim", "42", "--session", "chat-b"], T + 1)
        .success();
    let changes = counted();
    assert!(changes > after_release, "the claim was counted");
}

#[test]
fn a_connection_that_hangs_is_given_up_on_in_bounded_time() {
    // A listener that accepts (the kernel does) and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("postgres://postgres@127.0.0.1:{port}/jkz");
    let m = Machine::new("machine-a", Backend::Team(url)).with_env("JKZ_LOCK_WAIT_MS", "1000");
    let started = Instant::now();
    let err = failed_open(&m.hook("SessionStart", "chat-a", json!({}), T));
    assert!(err.contains("no answer within"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let wt = m.dir.join("wt/42");
    let started = Instant::now();
    failed_open(&m.edit("chat-b", wt.join("a.rs"), T));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let started = Instant::now();
    let run = m
        .jkz(&["claim", "42", "--session", "chat-a"], T)
        .expect_code(1);
    assert!(
        run.stderr_str().contains("no answer within"),
        "{}",
        run.report()
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    drop(listener);
}

#[test]
fn install_records_the_url_without_a_password_and_doctor_reports_the_registry() {
    let Some(server) = postgres::shared() else {
        return;
    };
    let url = server.url(&server.database());
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project")).unwrap();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .arg(dir.join("project"))
        .status()
        .unwrap();
    assert!(git.success());
    let git_config = || String::from_utf8(dir.read("project/.git/config")).unwrap();
    let config_before = git_config();
    let bin_dir = bin("jkz").parent().unwrap().to_path_buf();
    let jkz = |args: &[&str]| {
        dir.cmd("jkz")
            .env("HOME", dir.join("home"))
            .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
            .env("PGPASSWORD", PASSWORD)
            .args(args)
            .args(["--project", &dir.join("project").display().to_string()])
            .run()
    };
    let secret = url.replace("postgres@", "postgres:hunter2@");
    let run = jkz(&["install", "--registry", &secret]).expect_code(2);
    assert!(run.stderr_str().contains("PGPASSWORD"), "{}", run.report());
    assert!(!run.stderr_str().contains("hunter2"), "{}", run.report());
    assert_eq!(git_config(), config_before);
    assert!(
        !dir.join("project/.claude").exists(),
        "refused before any change"
    );
    jkz(&["install", "--registry", "mysql://x"]).expect_code(2);
    let run = jkz(&["install", "--registry", &url]).success();
    assert!(
        run.stdout_str().contains("team registry"),
        "{}",
        run.report()
    );
    // In the repository's own git config, never in a committed file.
    assert!(!dir.join("project/jkz.toml").exists());
    let config = git_config();
    assert!(config.contains(&format!("registryUrl = {url}")), "{config}");
    // The project now uses the team registry, with no variable set.
    let claimed = dir
        .cmd("jkz")
        .env("PGPASSWORD", PASSWORD)
        .args([
            "--state-dir",
            &dir.join("project/state").display().to_string(),
        ])
        .args(["claim", "42", "--session", "chat-a"])
        .run()
        .success();
    assert!(
        claimed.stdout_str().contains("claimed issue 42"),
        "{}",
        claimed.report()
    );
    let other = Machine::new("machine-b", Backend::Team(url.clone()));
    other
        .jkz(&["claim", "42", "--session", "chat-b"], T)
        .expect_code(3);
    let doctor = jkz(&["doctor"]);
    let line = doctor
        .stdout_str()
        .lines()
        .find(|l| l.contains("registry:"))
        .unwrap_or_else(|| panic!("{}", doctor.report()))
        .to_string();
    assert!(line.starts_with("ok"), "{line}");
    assert!(line.contains(&format!("PostgreSQL {url}")), "{line}");
    assert!(
        line.contains("schema version 2") && line.contains("round trip"),
        "{line}"
    );
    // A password from the environment is masked.
    let doctor = dir
        .cmd("jkz")
        .env("HOME", dir.join("home"))
        .env(
            "JKZ_REGISTRY_URL",
            url.replace("postgres@", &format!("postgres:{PASSWORD}@")),
        )
        .args([
            "doctor",
            "--project",
            &dir.join("project").display().to_string(),
        ])
        .run();
    let out = doctor.stdout_str();
    assert!(
        out.contains("postgres:***@") && !out.contains(PASSWORD),
        "{out}"
    );
    // Down: doctor fails the check.
    let doctor = dir
        .cmd("jkz")
        .env("HOME", dir.join("home"))
        .env(
            "JKZ_REGISTRY_URL",
            format!("postgres://postgres@127.0.0.1:{}/x", postgres::free_port()),
        )
        .args([
            "doctor",
            "--project",
            &dir.join("project").display().to_string(),
        ])
        .run()
        .expect_code(1);
    assert!(
        doctor.stdout_str().contains("FAIL registry: team registry"),
        "{}",
        doctor.report()
    );
}

#[test]
fn the_observer_shows_the_team_registry_chats_locks_and_circuits() {
    let Some(url) = team_url() else { return };
    let a = Machine::new("machine-a", Backend::Team(url.clone()));
    let b = Machine::new("machine-b", Backend::Team(url.clone()));
    quiet(&a.hook(
        "SessionStart",
        "chat-a",
        json!({"source": "startup"}),
        crate::registry::T,
    ));
    a.jkz(&["claim", "42", "--session", "chat-a"], T).success();
    a.jkz(
        &[
            "lock",
            "acquire",
            "pipeline",
            "42",
            "--owner",
            "alice",
            "--ttl",
            "999999999",
        ],
        T,
    )
    .success();
    for _ in 0..3 {
        a.jkz(
            &[
                "run",
                "--service",
                "codex",
                "--role",
                "judge",
                "--",
                "false",
            ],
            T,
        )
        .expect_code(1);
    }
    let server = crate::ui::Server::start_with(
        &b.dir.join("state"),
        &[
            ("JKZ_REGISTRY_URL", url.as_str()),
            ("PGPASSWORD", PASSWORD),
            ("JKZ_TEST_NOW", &T.to_string()),
        ],
    );
    let now = server.json("/api/now");
    assert_eq!(now["registry"]["backend"]["kind"], "team", "{now}");
    assert_eq!(now["registry"]["error"], Value::Null, "{now}");
    let chats = now["registry"]["chats"].as_array().unwrap();
    assert_eq!(chats.len(), 1, "{now}");
    assert_eq!(chats[0]["host"], "machine-a");
    assert_eq!(now["registry"]["claims"][0]["host"], "machine-a", "{now}");
    assert_eq!(now["locks"][0]["owner"], "alice", "{now}");
    assert_eq!(now["circuits"][0]["state"], "open", "{now}");
    // It wrote nothing there.
    assert!(!b.dir.join("state/chat.db").exists());
}
