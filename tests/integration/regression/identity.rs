//! Regression tests: a chat is who its process tree says. Inside chat B (a
//! command run under B's client), the session variables and `--session`
//! let B act as chat A: release A's claim, write A's issue, or `--force`
//! over it once the variable was unset. Each test is named after what
//! broke and replays the input that broke it, under each client's process
//! name (Claude Code's `claude`, Codex CLI's `codex`, Gemini CLI's `node`
//! running `gemini.js`).
//!
//! A client is faithfully stood in for by a copy of `sh` with the client's
//! process name: it runs `jkz-chat`'s `SessionStart` as the client would
//! (so the registry records it, pid and start time, for chat B), then the
//! command under test as a child, with `CLAUDE_CODE_SESSION_ID=chat-b` in
//! its environment as Claude Code's Bash tool sets it.

use std::path::PathBuf;
use std::process::Output;

use serde_json::{json, Value};

use crate::registry::{Project, T};
use crate::util::{bin, scrubbed};

/// A client as the kernel names its process.
#[derive(Clone, Copy, Debug)]
enum Client {
    Claude,
    Codex,
    Gemini,
}

const CLIENTS: [Client; 3] = [Client::Claude, Client::Codex, Client::Gemini];

impl Client {
    /// The stand-in's program and the script it runs: Claude Code and
    /// Codex CLI are native binaries of their name; Gemini CLI is `node`
    /// running its bundle's `gemini.js`.
    fn program(self, p: &Project) -> (PathBuf, PathBuf) {
        let dir = p.dir.join(format!("clients/{self:?}"));
        std::fs::create_dir_all(dir.join("bundle")).unwrap();
        let (name, script) = match self {
            Client::Claude => ("claude", dir.join("session.sh")),
            Client::Codex => ("codex", dir.join("session.sh")),
            Client::Gemini => ("node", dir.join("bundle/gemini.js")),
        };
        let program = dir.join(name);
        if !program.exists() {
            std::fs::copy("/bin/sh", &program).unwrap();
        }
        (program, script)
    }
}

/// A project where live chat `chat-a` holds issue 42 (its pipeline file
/// says `building`).
fn claimed_by_a() -> Project {
    claimed_by_a_in(Project::new())
}

/// The same in `p` (with its environment: a team registry).
fn claimed_by_a_in(p: Project) -> Project {
    p.hook("SessionStart", "chat-a", json!({"source": "startup"}), T);
    p.jkz(&["claim", "42", "--session", "chat-a"], T).success();
    p.dir.write(
        "state/pipeline/42.json",
        json!({"42": {"current_phase": "building"}}).to_string(),
    );
    p
}

/// Runs `command` inside chat B: a stand-in for `client` registers chat-b
/// through `jkz-chat`'s SessionStart, then runs `command` as its child;
/// returns the command's output (its status is the command's).
fn in_chat_b(p: &Project, client: Client, command: &str) -> Output {
    let (program, script) = client.program(p);
    let start = p.dir.write(
        "start-b.json",
        p.event("SessionStart", "chat-b", json!({"source": "startup"}))
            .to_string(),
    );
    std::fs::write(
        &script,
        format!("\"$JKZ_CHAT\" < \"$START\" || exit 90\n{command}\nexit $?\n"),
    )
    .unwrap();
    let out = scrubbed(&program, p.dir.path())
        .envs(p.env.iter().map(|(k, v)| (k, v)))
        .arg(&script)
        .env("JKZ_CHAT", bin("jkz-chat"))
        .env("JKZ", bin("jkz"))
        .env("START", &start)
        .env("CLAUDE_CODE_SESSION_ID", "chat-b")
        .env("JKZ_TEST_NOW", (T + 10).to_string())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(90), "SessionStart failed: {out:?}");
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The claims of `session`, as `jkz chats` lists them.
fn claims_of(p: &Project, session: &str) -> Value {
    let chats = p.chats(T + 10);
    chats
        .iter()
        .find(|c| c["session_id"] == session)
        .map(|c| c["claims"].clone())
        .unwrap_or_else(|| panic!("no chat {session}: {chats:?}"))
}

fn phase(p: &Project) -> Value {
    let doc: Value = serde_json::from_slice(&p.dir.read("state/pipeline/42.json")).unwrap();
    doc["42"]["current_phase"].clone()
}

fn needs_proc() -> bool {
    if std::fs::metadata("/proc/self/stat").is_err() {
        crate::util::cannot_run("no /proc here: a process tree cannot be read");
        return false;
    }
    true
}

#[test]
fn env_u_session_variable_released_another_chats_claim() {
    if !needs_proc() {
        return;
    }
    for client in CLIENTS {
        release_as_another_chat_is_refused(&claimed_by_a(), client);
    }
}

/// The same with the registry in PostgreSQL (team mode): the chats and
/// their clients are read from the server.
#[test]
fn env_u_session_variable_released_another_chats_claim_in_team_mode() {
    if !needs_proc() {
        return;
    }
    let Some(server) = crate::postgres::shared() else {
        return;
    };
    for client in CLIENTS {
        let mut p = Project::new();
        p.env = vec![
            ("JKZ_REGISTRY_URL".into(), server.url(&server.database())),
            ("PGPASSWORD".into(), crate::postgres::PASSWORD.into()),
            ("PGSSLMODE".into(), "prefer".into()),
        ];
        let p = claimed_by_a_in(p);
        release_as_another_chat_is_refused(&p, client);
        assert!(
            !p.dir.join("state/chat.db").exists(),
            "the team registry was used"
        );
    }
}

/// Inside chat B, `env -u CLAUDE_CODE_SESSION_ID jkz release 42 --session
/// chat-a` is refused, and B's own commands need no variable.
fn release_as_another_chat_is_refused(p: &Project, client: Client) {
    let out = in_chat_b(
        p,
        client,
        "env -u CLAUDE_CODE_SESSION_ID \"$JKZ\" release 42 --session chat-a",
    );
    assert_eq!(out.status.code(), Some(3), "{client:?}: {out:?}");
    let err = stderr(&out);
    assert!(
        err.contains("run inside chat chat-b (its client, pid")
            && err.contains("--session may name only that chat, not chat-a"),
        "{client:?}: {err}"
    );
    assert_eq!(claims_of(p, "chat-a")[0]["issue"], 42, "{client:?}");
    // The chat's own commands need no variable: the tree names it.
    let out = in_chat_b(p, client, "env -u CLAUDE_CODE_SESSION_ID \"$JKZ\" claim 43");
    assert!(out.status.success(), "{client:?}: {out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("claimed issue 43 for chat chat-b"),
        "{client:?}: {out:?}"
    );
}

#[test]
fn claude_session_id_of_another_chat_wrote_its_issue() {
    if !needs_proc() {
        return;
    }
    for client in CLIENTS {
        let p = claimed_by_a();
        let out = in_chat_b(
            &p,
            client,
            "CLAUDE_SESSION_ID=chat-a \"$JKZ\" state set 42 current_phase done",
        );
        assert_eq!(out.status.code(), Some(3), "{client:?}: {out:?}");
        assert!(
            stderr(&out).contains("claimed by live chat chat-a"),
            "{client:?}: {}",
            stderr(&out)
        );
        assert_eq!(phase(&p), "building", "{client:?}");
        // Nor by naming it with --session.
        let out = in_chat_b(
            &p,
            client,
            "CLAUDE_SESSION_ID=chat-a \"$JKZ\" claim 42 --session chat-a",
        );
        assert_eq!(out.status.code(), Some(3), "{client:?}: {out:?}");
        assert_eq!(claims_of(&p, "chat-a")[0]["issue"], 42, "{client:?}");
    }
}

#[test]
fn force_worked_once_the_session_variable_was_unset() {
    if !needs_proc() {
        return;
    }
    for client in CLIENTS {
        let p = claimed_by_a();
        for command in [
            "env -u CLAUDE_CODE_SESSION_ID \"$JKZ\" state set --force 42 current_phase forced",
            "\"$JKZ\" state set --force 42 current_phase forced",
            // Even on an issue nobody holds: --force is not a chat's.
            "env -u CLAUDE_CODE_SESSION_ID \"$JKZ\" state set --force 44 current_phase forced",
        ] {
            let out = in_chat_b(&p, client, command);
            assert_eq!(out.status.code(), Some(3), "{client:?} {command}: {out:?}");
            let err = stderr(&out);
            assert!(
                err.contains("--force is for a person at a terminal")
                    && err.contains("this runs inside chat chat-b (its client, pid"),
                "{client:?} {command}: {err}"
            );
        }
        assert_eq!(phase(&p), "building", "{client:?}");
        assert!(!p.dir.join("state/pipeline/44.json").exists());
        // A person at a terminal (outside every chat's tree) still may.
        p.jkz(
            &["state", "set", "--force", "42", "current_phase", "forced"],
            T + 10,
        )
        .success();
        assert_eq!(phase(&p), "forced");
    }
}

#[test]
fn forged_session_end_from_another_chat_released_its_claims() {
    if !needs_proc() {
        return;
    }
    for client in CLIENTS {
        let p = claimed_by_a();
        let forged = p.dir.write(
            "end-a.json",
            p.event("SessionEnd", "chat-a", json!({"reason": "exit"}))
                .to_string(),
        );
        let out = in_chat_b(
            &p,
            client,
            &format!("\"$JKZ_CHAT\" < '{}'", forged.display()),
        );
        assert!(out.status.success(), "{client:?}: {out:?}");
        assert!(
            stderr(&out).contains("chat chat-a is live")
                && stderr(&out).contains("comes from inside chat chat-b: ignored"),
            "{client:?}: {}",
            stderr(&out)
        );
        assert_eq!(claims_of(&p, "chat-a")[0]["issue"], 42, "{client:?}");
    }
}

#[test]
fn forged_session_start_moved_another_chats_client() {
    if !needs_proc() {
        return;
    }
    for client in CLIENTS {
        let p = claimed_by_a();
        // A SessionStart for chat A from inside chat B would record B's
        // client (or a stand-in B runs) as A's, and B's tree would then be
        // A's.
        let forged = p.dir.write(
            "start-a.json",
            p.event("SessionStart", "chat-a", json!({"source": "resume"}))
                .to_string(),
        );
        let (program, _) = client.program(&p);
        let command = format!(
            "\"$JKZ_CHAT\" < '{}'; env -u CLAUDE_CODE_SESSION_ID \"$JKZ\" release 42",
            forged.display()
        );
        let out = in_chat_b(&p, client, &command);
        assert_eq!(out.status.code(), Some(3), "{client:?}: {out:?}");
        assert!(
            stderr(&out).contains("comes from inside chat chat-b: ignored"),
            "{client:?}: {}",
            stderr(&out)
        );
        // Through a second stand-in below B's, as a chat could start one.
        let nested = format!(
            "'{}' -c '\"$JKZ_CHAT\" < \"$0\"; env -u CLAUDE_CODE_SESSION_ID \"$JKZ\" release 42; exit $?' '{}'",
            program.display(),
            forged.display()
        );
        let out = in_chat_b(&p, client, &nested);
        assert_eq!(out.status.code(), Some(3), "{client:?}: {out:?}");
        assert_eq!(claims_of(&p, "chat-a")[0]["issue"], 42, "{client:?}");
        let chats = p.chats(T + 10);
        let a = chats.iter().find(|c| c["session_id"] == "chat-a").unwrap();
        assert_eq!(
            a["pid"],
            Value::Null,
            "{client:?}: chat A got a client: {chats:?}"
        );
    }
}

/// Inside chat B, a pipeline script's ways of naming its session name no
/// other chat: `JKZ_SESSION=chat-a` is not B's word (the tree is: B writes
/// as B, refused while A holds 42), and `state set --session chat-a` is
/// refused as `claim --session` is.
#[test]
fn jkz_session_or_state_set_session_let_a_chat_write_as_another() {
    if !needs_proc() {
        return;
    }
    for client in CLIENTS {
        let p = claimed_by_a();
        for command in [
            "JKZ_SESSION=chat-a \"$JKZ\" state set 42 current_phase done",
            "env -u CLAUDE_CODE_SESSION_ID JKZ_SESSION=chat-a \"$JKZ\" state set 42 current_phase done",
        ] {
            let out = in_chat_b(&p, client, command);
            assert_eq!(out.status.code(), Some(3), "{client:?} {command}: {out:?}");
            assert!(
                stderr(&out).contains("claimed by live chat chat-a"),
                "{client:?} {command}: {}",
                stderr(&out)
            );
        }
        let out = in_chat_b(
            &p,
            client,
            "\"$JKZ\" state set 42 current_phase done --session chat-a",
        );
        assert_eq!(out.status.code(), Some(3), "{client:?}: {out:?}");
        assert!(
            stderr(&out).contains("--session may name only that chat, not chat-a"),
            "{client:?}: {}",
            stderr(&out)
        );
        assert_eq!(phase(&p), "building", "{client:?}");
        // Outside every chat, the stated session stands.
        p.cmd("jkz")
            .env("JKZ_SESSION", "chat-a")
            .env("JKZ_TEST_NOW", (T + 10).to_string())
            .args(["state", "set", "42", "current_phase", "done"])
            .run()
            .success();
        assert_eq!(phase(&p), "done", "{client:?}");
    }
}
