//! Regression tests: a pipeline script (outside every chat) claims its issue
//! as a session of its own and writes as it. The registry page's example
//! failed as written: `jkz claim` needed `--session`, and with
//! `--session pipeline-44` the script's own `jkz state set 44 …` was
//! refused (exit 3, "claimed by live chat pipeline-44"); the chats such a
//! script made stayed `stale` forever.

use std::path::Path;

use serde_json::{json, Value};

use crate::registry::{Project, T};
use crate::util::{bin, git, scrubbed, Dir};

/// The `sh` blocks of a Markdown page, in order.
fn sh_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim_start() == "```sh" => current = Some(String::new()),
            None => {}
            Some(_) if line.trim_start() == "```" => blocks.extend(current.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    blocks
}

/// The registry page's pipeline-script example, as the page has it.
fn documented_pipeline_script() -> String {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/registry.md"))
            .expect("docs/registry.md");
    sh_blocks(&page)
        .into_iter()
        .find(|b| b.contains("JKZ_SESSION") && b.contains("jkz release"))
        .expect("docs/registry.md has the pipeline-script example")
}

fn path_with_jkz() -> String {
    format!("{}:/usr/bin:/bin", bin("jkz").parent().unwrap().display())
}

/// A repository with jkz installed and a linked worktree `wt-44`.
fn repository_with_a_worktree() -> Dir {
    let dir = Dir::new();
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "start"]);
    git(&repo, &["worktree", "add", "-q", "-b", "i44", "../wt-44"]);
    let run = scrubbed(bin("jkz"), &repo)
        .env("HOME", dir.join("home"))
        .env("PATH", path_with_jkz())
        .args(["install", "--project", "."])
        .output()
        .unwrap();
    assert!(run.status.success(), "jkz install: {run:?}");
    dir
}

/// Runs the documented example with `sh -e`, as a script would.
fn run_example(dir: &Dir) -> std::process::Output {
    scrubbed("sh", &dir.join("repo"))
        .arg("-ec")
        .arg(documented_pipeline_script())
        .env("ISSUE", "44")
        .env("WORKTREE", dir.join("wt-44"))
        .env("HOME", dir.join("home"))
        .env("PATH", path_with_jkz())
        .output()
        .unwrap()
}

fn jkz_in(dir: &Dir, args: &[&str]) -> std::process::Output {
    scrubbed(bin("jkz"), &dir.join("repo"))
        .env("PATH", path_with_jkz())
        .args(args)
        .output()
        .unwrap()
}

fn chats_in(dir: &Dir) -> Vec<Value> {
    let out = jkz_in(dir, &["chats", "--json"]);
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn phase_44(dir: &Dir) -> Value {
    let doc: Value =
        serde_json::from_slice(&std::fs::read(dir.join("repo/state/pipeline/44.json")).unwrap())
            .unwrap();
    doc["44"]["current_phase"].clone()
}

#[test]
fn the_registry_pages_pipeline_script_failed_as_written() {
    let dir = repository_with_a_worktree();
    let out = run_example(&dir);
    let shown = format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        documented_pipeline_script(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{:?}: {shown}", out.status);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("for chat pipeline-44"),
        "{shown}"
    );
    assert_eq!(phase_44(&dir), "planning", "{shown}");
    // Released at the end: the session holds nothing.
    let chats = chats_in(&dir);
    let session = chats
        .iter()
        .find(|c| c["session_id"] == "pipeline-44")
        .unwrap_or_else(|| panic!("{chats:?}"));
    assert_eq!(session["claims"], json!([]), "{chats:?}");

    // While another live chat holds the issue, the script stops at the
    // claim with its exit code, 3, and writes nothing.
    let other = json!({
        "session_id": "chat-x", "transcript_path": "/dev/null",
        "cwd": dir.join("repo"), "hook_event_name": "SessionStart", "source": "startup",
    });
    let hook = scrubbed(bin("jkz-chat"), &dir.join("repo"))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(other.to_string().as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(hook.status.success(), "{hook:?}");
    let claim = jkz_in(&dir, &["claim", "44", "--session", "chat-x"]);
    assert!(claim.status.success(), "{claim:?}");
    let out = run_example(&dir);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("held by live chat chat-x"),
        "{out:?}"
    );
    assert_eq!(phase_44(&dir), "planning");
}

#[test]
fn a_pipeline_script_could_not_write_as_the_session_it_claimed_as() {
    let p = Project::new();
    p.jkz(&["claim", "44", "--session", "pipeline-44"], T)
        .success();
    // A write that names no session is a person's: refused while the
    // script's session is live, as before.
    let run = p.jkz(&["state", "set", "44", "current_phase", "planning"], T + 1);
    assert_eq!(run.code(), Some(3), "{}", run.report());
    assert!(!p.dir.join("state/pipeline/44.json").exists());
    // As the session it claimed as: --session, or JKZ_SESSION.
    let run = p
        .jkz(
            &[
                "state",
                "set",
                "44",
                "current_phase",
                "planning",
                "--session",
                "pipeline-44",
            ],
            T + 2,
        )
        .success();
    assert_eq!(run.stderr_str(), "", "{}", run.report());
    p.cmd("jkz")
        .env("JKZ_SESSION", "pipeline-44")
        .env("JKZ_TEST_NOW", (T + 3).to_string())
        .args(["state", "set", "44", "current_phase", "building"])
        .run()
        .success();
    let doc: Value = serde_json::from_slice(&p.dir.read("state/pipeline/44.json")).unwrap();
    assert_eq!(doc["44"]["current_phase"], "building");
    // Another session is still refused, naming the holder.
    let run = p.jkz(
        &[
            "state",
            "set",
            "44",
            "current_phase",
            "done",
            "--session",
            "pipeline-other",
        ],
        T + 4,
    );
    assert_eq!(run.code(), Some(3), "{}", run.report());
    assert!(
        run.stderr_str()
            .contains("claimed by live chat pipeline-44"),
        "{}",
        run.report()
    );
    // --session and JKZ_SESSION naming two sessions: refused, as a chat's
    // --session may only repeat the chat.
    let run = p
        .cmd("jkz")
        .env("JKZ_SESSION", "pipeline-44")
        .env("JKZ_TEST_NOW", (T + 5).to_string())
        .args([
            "state",
            "set",
            "44",
            "current_phase",
            "done",
            "--session",
            "pipeline-other",
        ])
        .run();
    assert_eq!(run.code(), Some(3), "{}", run.report());
    // A write as the session claims a free issue for it.
    p.cmd("jkz")
        .env("JKZ_SESSION", "pipeline-44")
        .env("JKZ_TEST_NOW", (T + 6).to_string())
        .args(["state", "set", "45", "current_phase", "planning"])
        .run()
        .success();
    let chats = p.chats(T + 7);
    let issues: Vec<&Value> = chats
        .iter()
        .find(|c| c["session_id"] == "pipeline-44")
        .map(|c| {
            c["claims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| &k["issue"])
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(issues, [&json!(44), &json!(45)], "{chats:?}");
    // From a terminal, with no session at all, jkz claim says how to name one.
    let run = p.jkz(&["claim", "46"], T + 8);
    assert_eq!(run.code(), Some(2), "{}", run.report());
    assert!(run.stderr_str().contains("JKZ_SESSION"), "{}", run.report());
}

#[test]
fn chats_made_by_claim_session_stayed_stale_forever() {
    stale_sessions_are_forgotten(&Project::new());
}

/// The same with the registry in PostgreSQL (team mode).
#[test]
fn chats_made_by_claim_session_stayed_stale_forever_in_team_mode() {
    let Some(server) = crate::postgres::shared() else {
        return;
    };
    let mut p = Project::new();
    p.env = vec![
        ("JKZ_REGISTRY_URL".into(), server.url(&server.database())),
        ("PGPASSWORD".into(), crate::postgres::PASSWORD.into()),
        ("PGSSLMODE".into(), "prefer".into()),
    ];
    stale_sessions_are_forgotten(&p);
    assert!(
        !p.dir.join("state/chat.db").exists(),
        "the team registry was used"
    );
}

fn stale_sessions_are_forgotten(p: &Project) {
    p.jkz(&["claim", "44", "--session", "pipeline-44"], T)
        .success();
    p.jkz(&["release", "44", "--session", "pipeline-44"], T + 1)
        .success();
    // A script that died holding its claim: kept, its claim is what
    // `jkz claim --take` acts on.
    p.jkz(&["claim", "45", "--session", "pipeline-45"], T)
        .success();
    let later = T + 1 + jkz::registry::STALE_AFTER;
    let states: Vec<(Value, Value)> = p
        .chats(later)
        .iter()
        .map(|c| (c["session_id"].clone(), c["state"].clone()))
        .collect();
    assert_eq!(
        states,
        [
            (json!("pipeline-44"), json!("stale")),
            (json!("pipeline-45"), json!("stale"))
        ]
    );
    // Still live: kept.
    let run = p.jkz(&["chats", "prune"], T + 2).success();
    assert!(
        run.stdout_str().contains("forgot 0 chat(s)"),
        "{}",
        run.report()
    );

    let run = p.jkz(&["chats", "prune", "--dry-run"], later).success();
    assert!(
        run.stdout_str()
            .contains("would forget chat pipeline-44 (silent for 5m"),
        "{}",
        run.report()
    );
    assert!(
        !run.stdout_str().contains("pipeline-45"),
        "{}",
        run.report()
    );
    assert_eq!(p.chats(later).len(), 2);

    let run = p.jkz(&["gc"], later).success();
    assert!(
        run.stdout_str()
            .contains("forgot chat pipeline-44 in the registry"),
        "{}",
        run.report()
    );
    assert!(
        !run.stdout_str().contains("pipeline-45"),
        "{}",
        run.report()
    );
    let chats = p.chats(later);
    assert_eq!(chats.len(), 1, "{chats:?}");
    assert_eq!(chats[0]["session_id"], "pipeline-45");
    assert_eq!(chats[0]["claims"][0]["issue"], 45);

    // Once released, `jkz chats prune` forgets it too.
    p.jkz(&["release", "45", "--session", "pipeline-45"], later)
        .success();
    let run = p
        .jkz(&["chats", "prune"], later + jkz::registry::STALE_AFTER)
        .success();
    assert!(
        run.stdout_str().contains("forgot chat pipeline-45"),
        "{}",
        run.report()
    );
    assert!(p.chats(later + jkz::registry::STALE_AFTER).is_empty());
}

#[test]
fn state_set_session_logged_its_events_without_the_session() {
    let p = Project::new();
    p.jkz(&["claim", "44", "--session", "pipeline-44"], T)
        .success();
    p.jkz(
        &[
            "state",
            "set",
            "44",
            "current_phase",
            "planning",
            "--session",
            "pipeline-44",
        ],
        T + 1,
    )
    .success();
    let run = p
        .jkz(&["events", "--issue", "44", "--json"], T + 2)
        .success();
    let events: Vec<Value> = run
        .stdout_str()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one event per line"))
        .collect();
    let changes: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "phase.changed")
        .collect();
    assert_eq!(changes.len(), 1, "{}", run.report());
    assert_eq!(changes[0]["session"], "pipeline-44", "{}", run.report());
    let claims: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"].as_str().is_some_and(|t| t.contains("claim")))
        .collect();
    assert!(!claims.is_empty(), "the claim is logged: {}", run.report());
    for claim in claims {
        assert_eq!(claim["session"], "pipeline-44", "{}", run.report());
    }
}
